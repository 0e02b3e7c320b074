/*
 * `kubectl stateful status [sts/NAME|stc/NAME]`: one table of what the
 * operator is doing or has left to say in the namespace (or all of them
 * with -A), or about one object.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/autoresize/autoresize_policy.h"
#include "controllers/autoresize/autoresize_rule.h"
#include "plugin/plugin_autoresize.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_session.h"
#include "util/clock.h"
#include "util/xalloc.h"

/*
 * What the autoresize rows need, read once per command: the claims of
 * each namespace (their usage is what the operator published on them:
 * no nodes/proxy, no kubelet) and the StorageClasses.
 */
struct autoresize_reads {
	json_t *claims;     /* ns -> PVC list */
	json_t *classes;    /* list, or NULL until read (empty when the user cannot read them) */
	json_t *namespaces; /* ns -> Namespace, or null when the user cannot read it */
};

/* The list of r in ns, read once (cache: ns -> list). Borrowed. */
static const json_t *list_once(struct plugin_session *s, json_t *cache, const struct kube_resource *r, const char *ns)
{
	json_t *list = json_object_get(cache, ns);
	if (!list) {
		struct kube_error err;
		if (kube_list_all(s->client, r, ns, NULL, 0, &list, NULL, &err) < 0)
			list = json_array();
		json_object_set_new(cache, ns, list);
	}
	return list;
}

/* Namespace ns, read once (a GET; null when the user may not read it: its policy is then not shown). Borrowed. */
static const json_t *namespace_once(struct plugin_session *s, json_t *cache, const char *ns)
{
	json_t *obj = json_object_get(cache, ns);
	if (!obj) {
		struct kube_error err;
		json_t *got = NULL;
		if (kube_get(s->client, &KUBE_NAMESPACES, NULL, ns, &got, &err) < 0)
			got = json_null();
		json_object_set_new(cache, ns, got);
		obj = got;
	}
	return json_is_object(obj) ? obj : NULL;
}

/* Some StorageClass in r's list, or namespace ns, carries a policy (autoresize_rule.h). */
static bool sources_policy(struct plugin_session *s, struct autoresize_reads *r, const char *ns)
{
	if (autoresize_rule_text(namespace_once(s, r->namespaces, ns)))
		return true;
	size_t i;
	const json_t *sc;
	json_array_foreach(r->classes, i, sc)
		if (autoresize_rule_text(sc))
			return true;
	return false;
}

static void autoresize_rows(struct plugin_session *s, struct autoresize_reads *r, const char *kind, const json_t *w,
			    const json_t *events, json_t *rows)
{
	const char *ns = kube_obj_str(w, "metadata.namespace");
	if (!ns || !kube_obj_str(w, "metadata.name"))
		return;
	if (!r->classes) {
		struct kube_error err;
		if (kube_list_all(s->client, &KUBE_STORAGECLASSES, NULL, NULL, 0, &r->classes, NULL, &err) < 0)
			r->classes = json_array();
	}
	/* A workload under no policy costs no claim list. */
	if (!autoresize_has_policy(w) && !sources_policy(s, r, ns))
		return;
	status_autoresize_rows(rows, kind, w, list_once(s, r->claims, &KUBE_PVCS, ns), r->classes,
			       namespace_once(s, r->namespaces, ns), events, clock_wall_ms());
}

static void autoresize_reads_release(struct autoresize_reads *r)
{
	json_decref(r->claims);
	json_decref(r->classes);
	json_decref(r->namespaces);
}

/* Rows of every StatefulSet (and of backups whose set is gone mid-resize) of ns (NULL: all). */
static int sts_rows(struct plugin_session *s, const char *ns, const json_t *events, struct autoresize_reads *ar,
		    json_t *rows)
{
	json_t *sets = NULL, *backups = NULL;
	struct kube_error err;
	if (kube_list_all(s->client, &KUBE_STATEFULSETS, ns, NULL, 0, &sets, NULL, &err) < 0) {
		plugin_error("listing StatefulSets: %s", err.message);
		return PLUGIN_EXIT_FAILED;
	}
	if (kube_list_all(s->client, &KUBE_CONFIGMAPS, ns, LABEL_SAVED_STATEFULSET, 0, &backups, NULL, &err) < 0)
		backups = json_array();
	long long now = (long long)time(NULL);
	size_t i;
	json_t *obj;
	json_array_foreach(sets, i, obj) {
		struct resize_view v;
		resize_view_read(obj, &v);
		const char *name = kube_obj_str(obj, "metadata.name");
		plugin_read_copy_progress(s, kube_obj_str(obj, "metadata.namespace"), name, &v, NULL, 0);
		status_sts_rows(rows, kube_obj_str(obj, "metadata.namespace"), name, obj, &v, events, now, false);
		resize_view_release(&v);
		autoresize_rows(s, ar, "sts", obj, events, rows);
	}
	json_array_foreach(backups, i, obj) {
		const char *set = kube_obj_label(obj, LABEL_SAVED_STATEFULSET);
		const char *bns = kube_obj_str(obj, "metadata.namespace");
		if (!set || kube_list_find(sets, bns, set))
			continue;
		/* Mid-copy the set is gone: this is when its copy pods run. */
		struct resize_view v;
		resize_view_read(obj, &v);
		plugin_read_copy_progress(s, bns, set, &v, NULL, 0);
		status_sts_rows(rows, bns, set, NULL, &v, events, now, false);
		resize_view_release(&v);
	}
	json_decref(sets);
	json_decref(backups);
	return 0;
}

static int stc_rows(struct plugin_session *s, const char *ns, const json_t *events, struct autoresize_reads *ar,
		    json_t *rows)
{
	json_t *items = NULL;
	struct kube_error err;
	/* No CRD installed: no StatefulClusters to show. */
	if (kube_list_all(s->client, &KUBE_STATEFULCLUSTERS, ns, NULL, 0, &items, NULL, &err) < 0)
		return 0;
	long long now = (long long)time(NULL);
	size_t i;
	const json_t *stc;
	json_array_foreach(items, i, stc) {
		status_stc_row(rows, stc, events, now);
		autoresize_rows(s, ar, "stc", stc, events, rows);
	}
	json_decref(items);
	return 0;
}

static int one_object(struct plugin_session *s, const json_t *events, struct autoresize_reads *ar, json_t *rows)
{
	const struct plugin_args *a = s->args;
	int code = 0;
	if (a->kind == PLUGIN_KIND_STC) {
		json_t *stc = plugin_get(s, &KUBE_STATEFULCLUSTERS, a->name, &code);
		if (!stc)
			return code;
		status_stc_row(rows, stc, events, (long long)time(NULL));
		autoresize_rows(s, ar, "stc", stc, events, rows);
		json_decref(stc);
		return 0;
	}
	json_t *holder = NULL;
	struct resize_view v;
	code = plugin_open_resize(s, a->name, &v, &holder);
	if (code)
		return code;
	plugin_read_copy_progress(s, s->ns, a->name, &v, NULL, 0);
	const char *kind = kube_obj_str(holder, "kind");
	const json_t *sts = kind && !strcmp(kind, "StatefulSet") ? holder : NULL;
	/* Idle is said only when no policy rules any template either (its own, its namespace's, its class's). */
	json_t *auto_rows = json_array();
	if (sts)
		autoresize_rows(s, ar, "sts", sts, events, auto_rows);
	status_sts_rows(rows, s->ns, a->name, sts, &v, events, (long long)time(NULL), !json_array_size(auto_rows));
	resize_view_release(&v);
	json_array_extend(rows, auto_rows);
	json_decref(auto_rows);
	json_decref(holder);
	return 0;
}

int plugin_cmd_status(struct plugin_session *s)
{
	const struct plugin_args *a = s->args;
	const char *ns = a->all_namespaces ? NULL : s->ns;
	json_t *rows = json_array();
	json_t *events = plugin_events(s, ns);
	struct autoresize_reads ar = {.claims = json_object(), .namespaces = json_object()};
	int rc = a->kind != PLUGIN_KIND_NONE ? one_object(s, events, &ar, rows) : sts_rows(s, ns, events, &ar, rows);
	if (!rc && a->kind == PLUGIN_KIND_NONE)
		rc = stc_rows(s, ns, events, &ar, rows);
	autoresize_reads_release(&ar);
	struct plugin_format f = plugin_format_of(a);
	bool table = f.output == PLUGIN_OUT_TABLE || f.output == PLUGIN_OUT_WIDE;
	if (!rc && table) {
		/* Who leads, beside the table (stderr: the table stays what scripts read). */
		plugin_show_operator(s);
		if (!json_array_size(rows)) {
			if (ns)
				fprintf(stderr, "Nothing under way in namespace %s.\n", ns);
			else
				fprintf(stderr, "Nothing under way in any namespace.\n");
		}
	}
	if (!rc && (!table || json_array_size(rows))) {
		char *text = NULL, *err = NULL;
		int r = status_render(rows, &f, a->all_namespaces, &text, &err);
		rc = plugin_print_rendered(r, text, err);
	}
	json_decref(events);
	json_decref(rows);
	return rc;
}
