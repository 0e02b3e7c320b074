/*
 * What every step of the StatefulCluster planner writes with or asks of
 * the members: patches of the cluster, the state changed, who goes first
 * and who is down, the replace-members request,
 * which revision a member runs. A leaf of the planner: it calls no other
 * file of src/controllers/cluster but the objects' names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/claim_names.h"
#include "controllers/cluster/cluster_plan_internal.h"
#include "controllers/state_version.h"
#include "util/strbuf.h"

bool cluster_in_array(const json_t *array, const char *s)
{
	size_t i;
	const json_t *v;
	json_array_foreach(array, i, v) {
		if (s && json_string_value(v) && !strcmp(json_string_value(v), s))
			return true;
	}
	return false;
}

void cluster_patch(const struct plan *p, struct action *a, const char *what, json_t *patch)
{
	action_patch(a, what, &KUBE_STATEFULCLUSTERS, p->name, patch);
	action_patch_precondition(a, kube_obj_str(p->c, "metadata.resourceVersion"), NULL);
}

void cluster_set_state(const struct plan *p, struct action *a, const char *what, json_t *st)
{
	state_version_stamp(st); /* every write says which version it is */
	char *text = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", ANNOTATION_CLUSTER_STATE, text);
	cluster_patch(p, a, what, patch);
	a->state = st;
	free(text);
}

json_t *cluster_state_change(const struct plan *p, long drop, const char *why, int add, char *added, size_t len)
{
	long long next = json_integer_value(json_object_get(p->state, "next"));
	json_t *members = json_array();
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(p->state, "members"), i, v) {
		if (json_integer_value(v) != drop)
			json_array_append(members, (json_t *)v);
	}
	json_t *released = json_deep_copy(json_object_get(p->state, "released"));
	if (drop >= 0) {
		char key[24];
		snprintf(key, sizeof(key), "%ld", drop);
		json_object_set_new(released, key, json_string(why));
	}
	size_t off = 0;
	if (added && len)
		added[0] = '\0';
	for (int k = 0; k < add; k++, next++) {
		json_array_append_new(members, json_integer(next));
		if (!added || off >= len)
			continue;
		char *name = set_pod_name(p->name, next);
		off += (size_t)snprintf(added + off, len - off, "%s%s", k ? ", " : "", name);
		free(name);
	}
	json_t *st = json_deep_copy(p->state); /* what else it records stays */
	json_object_set_new(st, "next", json_integer(next));
	json_object_set_new(st, "members", members);
	json_object_set_new(st, "released", released);
	return st;
}

bool cluster_goes_before(const struct identity *id, const struct identity *than)
{
	return !than || (!id->ready && than->ready) || (id->ready == than->ready && id->n > than->n);
}

bool cluster_at_revision(const struct identity *id, const char *rev)
{
	/* Pods carry the revision's name in controller-revision-hash, as StatefulSet pods do. */
	return id->revision && rev && !strcmp(id->revision, rev);
}

bool cluster_member_down(const struct identity *id)
{
	return id->member && (!id->pod || id->going || !id->available || id->node_lost);
}

int cluster_members_down(const struct plan *p)
{
	int down = 0;
	for (size_t i = 0; i < p->nids; i++)
		down += cluster_member_down(&p->ids[i]);
	return down;
}

json_t *cluster_requested_names(const struct plan *p)
{
	const char *s = kube_obj_annotation(p->c, ANNOTATION_CLUSTER_REPLACE);
	if (!s)
		return NULL;
	json_t *names = json_array();
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		while (len && (*s == ' ' || *s == '\t')) {
			s++;
			len--;
		}
		while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		/* Substrings of the API server's (valid UTF-8) text cut at ASCII bytes: valid too. */
		json_array_append_new(names, json_stringn_nocheck(s, len));
		if (!end || json_array_size(names) > CLUSTER_MAX_REQUESTED)
			break;
		s = end + 1;
	}
	return names;
}

void cluster_set_request(struct action *a, const char *value)
{
	json_t *ann = json_object_get(json_object_get(a->body, "metadata"), "annotations");
	json_t *v = value ? json_string(value) : NULL;
	json_object_set_new(ann, ANNOTATION_CLUSTER_REPLACE, v ? v : json_null());
}

void cluster_forget_request(const struct plan *p, struct action *a, const struct identity *id)
{
	json_t *names = cluster_requested_names(p);
	if (!names)
		return;
	struct strbuf rest = STRBUF_INIT;
	bool named = false;
	size_t i;
	const json_t *v;
	json_array_foreach(names, i, v) {
		const char *name = json_string_value(v);
		if (!strcmp(name, id->name))
			named = true;
		else if (*name)
			strbuf_appendf(&rest, "%s%s", rest.len ? "," : "", name);
	}
	if (named)
		cluster_set_request(a, rest.len ? rest.buf : NULL);
	strbuf_release(&rest);
	json_decref(names);
}
