/*
 * The Namespaces and StorageClasses whose policies (autoresize_rule.h)
 * cover workloads without their own, read from the caches: which
 * workloads a poll covers. Cluster scope only: in namespace scope the
 * operator can read neither (no Role grants cluster-scoped objects), and
 * only the workloads' own policies count.
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/autoresize/autoresize_act.h"
#include "controllers/autoresize/autoresize_rule.h"
#include "util/xalloc.h"
#include "webhook/class_lookup.h"

size_t autoresize_index_source(const json_t *obj, char ***values)
{
	if (!autoresize_rule_text(obj))
		return 0;
	*values = xcalloc(1, sizeof(**values));
	(*values)[0] = xstrdup("1");
	return 1;
}

json_t *autoresize_sources(struct store *s)
{
	return s ? store_by_index(s, AUTORESIZE_SOURCE_INDEX, "1") : json_array();
}

json_t *autoresize_class_of(struct autoresize_ctx *ac, const char *name)
{
	if (!ac->classes)
		return NULL;
	if (name && *name)
		return store_get(ac->classes, name);
	json_t *all = store_list(ac->classes);
	json_t *sc = json_incref((json_t *)class_default(all));
	json_decref(all);
	return sc;
}

json_t *autoresize_template_class(struct autoresize_ctx *ac, const json_t *vct)
{
	const json_t *name = json_object_get(json_object_get(vct, "spec"), "storageClassName");
	/* "" asks for no class at all (a pre-made volume): not the default one. */
	if (json_is_string(name) && !*json_string_value(name))
		return NULL;
	return autoresize_class_of(ac, json_string_value(name));
}

json_t *autoresize_namespace_of(struct autoresize_ctx *ac, const char *ns)
{
	return ac->namespaces && ns ? store_get(ac->namespaces, ns) : NULL;
}

/*
 * Whether a namespace's or class's policy grows some template of w (one
 * the workload's own annotation does not rule); each such template's
 * subject "<ns>/<name>/<template>" goes into live.
 */
static bool covered_by_sources(struct autoresize_ctx *ac, const json_t *w, json_t *live)
{
	const char *ns = kube_obj_str(w, "metadata.namespace"), *name = kube_obj_str(w, "metadata.name");
	if (!ns || !name)
		return false;
	json_t *ns_obj = autoresize_namespace_of(ac, ns);
	bool covered = false;
	size_t i;
	const json_t *vct;
	json_array_foreach(json_object_get(json_object_get(w, "spec"), "volumeClaimTemplates"), i, vct) {
		const char *tpl = kube_obj_str(vct, "metadata.name");
		if (!tpl)
			continue;
		char *key = xasprintf(ANNOTATION_AUTORESIZE_PREFIX "%s", tpl);
		json_t *sc = autoresize_template_class(ac, vct);
		struct autoresize_rule r;
		autoresize_rule_resolve(kube_obj_annotation(w, key), autoresize_rule_text(ns_obj), autoresize_rule_text(sc),
					&r);
		if (r.origin != AUTORESIZE_FROM_WORKLOAD && autoresize_rule_active(&r)) {
			covered = true;
			char *subject = xasprintf("%s/%s/%s", ns, name, tpl);
			json_object_set_new(live, subject, json_true());
			free(subject);
		}
		autoresize_rule_release(&r);
		json_decref(sc);
		free(key);
	}
	json_decref(ns_obj);
	return covered;
}

json_t *autoresize_targets(struct autoresize_ctx *ac, struct store *s, json_t *live)
{
	if (!s)
		return json_array();
	json_t *own = store_by_index(s, AUTORESIZE_POLICY_INDEX, "1");
	json_t *namespaces = autoresize_sources(ac->namespaces), *classes = autoresize_sources(ac->classes);
	bool sources = json_array_size(namespaces) || json_array_size(classes);
	json_decref(namespaces);
	json_decref(classes);
	/* No policy but the workloads' own (always so in namespace scope): they alone are read, as before. */
	if (!sources)
		return own;
	json_decref(own);
	json_t *all = store_list(s), *out = json_array();
	size_t i;
	json_t *w;
	json_array_foreach(all, i, w)
		if (covered_by_sources(ac, w, live) || autoresize_has_policy(w))
			json_array_append(out, w);
	json_decref(all);
	return out;
}
