#include "controllers/set_index.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/claim_names.h"
#include "controllers/contract.h"
#include "util/xalloc.h"

struct values {
	const char *ns;
	char **v;
	size_t n;
};

static void add(void *ctx, const char *name)
{
	struct values *vs = ctx;
	char *value = xasprintf("%s/%s", vs->ns, name);
	for (size_t i = 0; i < vs->n; i++) {
		if (!strcmp(vs->v[i], value)) {
			free(value);
			return;
		}
	}
	vs->v = xrealloc(vs->v, (vs->n + 1) * sizeof(char *));
	vs->v[vs->n++] = value;
}

static void add_copy_of(struct values *vs, const json_t *obj)
{
	const char *of = kube_obj_label(obj, LABEL_COPY_OF);
	if (of)
		add(vs, of);
}

/* Every workload claim (ns/claim) may belong to, into vs. */
static void add_claim(struct values *vs, const char *claim)
{
	if (!claim)
		return;
	claim_statefulset_candidates(claim, add, vs);
	size_t len = strlen(claim), suffix = strlen(TEMP_SUFFIX);
	if (len > suffix && !strcmp(claim + len - suffix, TEMP_SUFFIX)) {
		char *base = xstrndup(claim, len - suffix);
		claim_statefulset_candidates(base, add, vs);
		free(base);
	}
}

size_t set_index_pod(const json_t *obj, char ***values)
{
	struct values vs = {kube_obj_str(obj, "metadata.namespace"), NULL, 0};
	const char *name = kube_obj_str(obj, "metadata.name");
	if (!vs.ns || !name)
		return 0;
	const char *dash = strrchr(name, '-');
	bool ordinal = dash && dash > name && dash[1];
	for (const char *p = dash ? dash + 1 : NULL; ordinal && *p; p++)
		ordinal = isdigit((unsigned char)*p);
	if (ordinal) {
		char *workload = xstrndup(name, (size_t)(dash - name));
		add(&vs, workload);
		free(workload);
	}
	add_copy_of(&vs, obj);
	*values = vs.v;
	return vs.n;
}

size_t set_index_claim(const json_t *obj, char ***values)
{
	struct values vs = {kube_obj_str(obj, "metadata.namespace"), NULL, 0};
	if (!vs.ns)
		return 0;
	add_claim(&vs, kube_obj_str(obj, "metadata.name"));
	add_copy_of(&vs, obj);
	*values = vs.v;
	return vs.n;
}

size_t set_index_volume(const json_t *obj, char ***values)
{
	struct values vs = {kube_obj_str(obj, "spec.claimRef.namespace"), NULL, 0};
	if (!vs.ns)
		return 0;
	add_claim(&vs, kube_obj_str(obj, "spec.claimRef.name"));
	*values = vs.v;
	return vs.n;
}

void set_index_ensure(struct store *s, store_index_fn fn)
{
	if (!store_has_index(s, SET_INDEX))
		store_add_index(s, SET_INDEX, fn);
}
