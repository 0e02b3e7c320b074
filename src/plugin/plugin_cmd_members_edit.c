/*
 * `kubectl stateful members remove|replace stc/NAME MEMBER...`: the members
 * a user names (docs/statefulcluster.md). remove adds them to
 * spec.removeMembers and lowers spec.replicas by as many, in one patch, so
 * exactly they go; replace adds them to the annotation
 * stateful-operator.io/replace-members, which the operator answers by
 * replacing each by a new identity with new claims, then takes the name
 * out. Both check first that each name is a member (status.members) and
 * that an operator runs, and patch with the resourceVersion read, so a
 * change made meanwhile is never overwritten (read again, a few times).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_output.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* Reads and patches this often when the StatefulCluster keeps changing under us (409). */
#define ATTEMPTS 3

/* A retention policy as the operator reads it: Delete, else Retain. */
static const char *policy(const json_t *stc, const char *key)
{
	const char *v = kube_obj_str(json_object_get(json_object_get(stc, "spec"), "persistentVolumeClaimRetentionPolicy"),
				     key);
	return v && !strcmp(v, "Delete") ? "Delete" : "Retain";
}

/* 0 when every name asked for is in stc's status.members; else says which is not and the members. */
static int check_members(struct plugin_session *s, const json_t *stc)
{
	const json_t *members = json_object_get(json_object_get(stc, "status"), "members");
	for (int i = 0; i < s->args->nmember_names; i++) {
		const char *name = s->args->member_names[i];
		if (kube_array_find(members, "identity", name))
			continue;
		struct strbuf list = STRBUF_INIT;
		size_t k;
		const json_t *m;
		json_array_foreach(members, k, m)
			strbuf_appendf(&list, "%s%s", k ? ", " : "", kube_obj_str(m, "identity"));
		plugin_error("%s is not a member of stc/%s (members: %s)", name, s->args->name,
			     list.len ? list.buf : "none yet");
		strbuf_release(&list);
		return PLUGIN_EXIT_USAGE;
	}
	return 0;
}

/* remove: spec.removeMembers with the names added, spec.replicas lowered by as many as were not listed. New object. */
static json_t *remove_patch(const struct plugin_args *a, const json_t *stc)
{
	const json_t *spec = json_object_get(stc, "spec");
	json_t *list = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(spec, "removeMembers"), i, v)
		json_array_append(list, v);
	long long replicas = kube_obj_int(spec, "replicas", NULL, 1);
	for (int k = 0; k < a->nmember_names; k++) {
		bool listed = false;
		json_array_foreach(list, i, v)
			listed |= json_is_string(v) && !strcmp(json_string_value(v), a->member_names[k]);
		if (listed)
			continue; /* asked for already: replicas was lowered for it then */
		json_array_append_new(list, json_string(a->member_names[k]));
		replicas--;
	}
	return json_pack("{s:{s:s?}, s:{s:I, s:o}}", "metadata", "resourceVersion",
			 kube_obj_str(stc, "metadata.resourceVersion"), "spec", "replicas",
			 (json_int_t)(replicas < 0 ? 0 : replicas), "removeMembers", list);
}

/* replace: the replace-members annotation with the names added. New object. */
static json_t *replace_patch(const struct plugin_args *a, const json_t *stc)
{
	struct strbuf value = STRBUF_INIT;
	const char *have = kube_obj_annotation(stc, ANNOTATION_CLUSTER_REPLACE);
	if (have && *have)
		strbuf_appendf(&value, "%s", have);
	for (int k = 0; k < a->nmember_names; k++)
		strbuf_appendf(&value, "%s%s", value.len ? "," : "", a->member_names[k]);
	json_t *patch = json_pack("{s:{s:s?, s:{s:s}}}", "metadata", "resourceVersion",
				  kube_obj_str(stc, "metadata.resourceVersion"), "annotations",
				  ANNOTATION_CLUSTER_REPLACE, value.buf);
	strbuf_release(&value);
	return patch;
}

/* What was asked, as -o says: the StatefulCluster as patched (borrowed), its name, or a sentence. */
static int print_result(struct plugin_session *s, json_t *stc)
{
	const struct plugin_args *a = s->args;
	struct plugin_format f = plugin_format_of(a);
	if (f.output == PLUGIN_OUT_NAME) {
		printf("%s/%s\n", plugin_kind_resource("stc"), a->name);
		return PLUGIN_EXIT_OK;
	}
	if (plugin_format_is_doc(&f)) {
		/* kubectl leaves managedFields out of what it prints */
		json_object_del(json_object_get(stc, "metadata"), "managedFields");
		char *text = NULL, *err = NULL;
		int rc = plugin_format_doc(stc, &f, &text, &err);
		return plugin_print_rendered(rc, text, err);
	}
	struct strbuf names = STRBUF_INIT;
	for (int k = 0; k < a->nmember_names; k++)
		strbuf_appendf(&names, "%s%s", k ? ", " : "", a->member_names[k]);
	bool one = a->nmember_names == 1;
	if (a->members_op == PLUGIN_MEMBERS_REMOVE)
		printf("stc/%s: %s %s removed (spec.removeMembers), replicas now %lld; %s claims are %s "
		       "(whenScaled: %s)\n",
		       a->name, one ? "member" : "members", names.buf,
		       kube_obj_int(json_object_get(stc, "spec"), "replicas", NULL, 1), one ? "its" : "their",
		       strcmp(policy(stc, "whenScaled"), "Delete") ? "kept" : "deleted", policy(stc, "whenScaled"));
	else
		printf("stc/%s: replacement of %s asked for (annotation %s): each gets a new identity with new "
		       "claims, at most maxUnavailable at a time; the old claims are %s (whenReplaced: %s)\n",
		       a->name, names.buf, ANNOTATION_CLUSTER_REPLACE,
		       strcmp(policy(stc, "whenReplaced"), "Delete") ? "kept" : "deleted", policy(stc, "whenReplaced"));
	printf("Follow it with: kubectl stateful members stc/%s\n", a->name);
	strbuf_release(&names);
	return PLUGIN_EXIT_OK;
}

int plugin_cmd_members_edit(struct plugin_session *s)
{
	const struct plugin_args *a = s->args;
	int code = plugin_require_operator(s);
	for (int attempt = 1; !code; attempt++) {
		json_t *stc = plugin_get(s, &KUBE_STATEFULCLUSTERS, a->name, &code);
		if (!stc)
			break;
		code = check_members(s, stc);
		json_t *patch = NULL, *out = NULL;
		struct kube_error err;
		memset(&err, 0, sizeof(err));
		bool done = code != 0;
		if (!code) {
			patch = a->members_op == PLUGIN_MEMBERS_REMOVE ? remove_patch(a, stc) : replace_patch(a, stc);
			if (kube_patch(s->client, &KUBE_STATEFULCLUSTERS, s->ns, a->name, NULL, KUBE_PATCH_MERGE, patch, &out,
				       &err) == 0) {
				code = print_result(s, out);
				done = true;
			} else if (err.code != 409 || attempt == ATTEMPTS) {
				plugin_error("patching stc/%s: %s", a->name, err.message);
				code = PLUGIN_EXIT_FAILED;
				done = true;
			}
		}
		json_decref(out);
		json_decref(patch);
		json_decref(stc);
		if (done)
			break;
	}
	return code;
}
