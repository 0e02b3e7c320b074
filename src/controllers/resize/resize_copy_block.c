/*
 * What a copy cannot do with a volume in volumeMode Block. Such a volume
 * holds a device's bytes, not files: the copy Job gets both claims as
 * devices and copies the old device's bytes whole into the first bytes of
 * the new one (copy_script.sh), while the replica is stopped. So a copy
 * into a smaller device, or a precopy (a first pass while the workload
 * writes, then only the difference), cannot be carried out: refused before
 * anything changes.
 */
#include "controllers/resize/resize_internal.h"

#include <stdlib.h>

#include "client/kube_object.h"
#include "util/xalloc.h"

/* The size claim pvc has: its capacity once bound, else its request. Borrowed; NULL when it says none. */
static const char *claim_size(const json_t *pvc)
{
	const char *cap = kube_obj_str(pvc, "status.capacity.storage");
	return cap ? cap : kube_obj_str(pvc, "spec.resources.requests.storage");
}

/*
 * Why template tmpl (copied to size) cannot be copied, or NULL: its
 * template or a claim of it is Block. *reason names the refusal.
 */
static char *block_refusal(const struct resize_inputs *in, const struct resize_request *req, const char *tmpl,
			   const char *size, const char **reason)
{
	const char *name = kube_obj_str(in->sts, "metadata.name");
	const char *ns = kube_obj_str(in->sts, "metadata.namespace");
	const json_t *t = resize_template(in->sts, tmpl);
	bool block = streq(kube_obj_str(t, "spec.volumeMode"), "Block");
	struct quantity want;
	bool sized = quantity_parse(size, &want, NULL) == 0;
	/* What is larger than size: the template's request, or else the first claim found. */
	char *larger = NULL;
	const char *has = kube_obj_str(t, "spec.resources.requests.storage");
	if (sized && plan_cmp_size(has, &want) > 0)
		larger = xstrdup("the template's request");
	long long start, replicas = plan_replicas(in->sts, &start);
	for (long long ord = start; ord < start + replicas; ord++) {
		char *x = resize_claim_name(tmpl, name, ord);
		const json_t *pvc = kube_list_find(in->pvcs, ns, x);
		if (pvc && streq(kube_obj_str(pvc, "spec.volumeMode"), "Block")) {
			block = true;
			if (!larger && sized && plan_cmp_size(claim_size(pvc), &want) > 0) {
				larger = xasprintf("claim %s", x);
				has = claim_size(pvc);
			}
		}
		free(x);
	}
	char *why = NULL;
	if (block && req->precopy) {
		*reason = "ResizeBlockPrecopy";
		why = xasprintf("volumeClaimTemplate %s has volumeMode Block: its volumes are copied as whole devices "
				"while their replica is stopped, so there is no first copy while it runs; remove "
				"annotation " ANNOTATION_PRECOPY " (or set it to \"false\") to resize by copy",
				tmpl);
	} else if (block && larger) {
		*reason = "ResizeBlockShrink";
		why = xasprintf("volumeClaimTemplate %s has volumeMode Block: a copy moves the device's bytes, so the "
				"new volume must be at least as large as the old one, and %s is smaller than %s (%s); "
				"ask for %s or more (to shrink a Block volume, move the data with the application's own "
				"tools)",
				tmpl, size, larger, has, has);
	}
	free(larger);
	return why;
}

char *copy_block_refusal(const struct resize_inputs *in, const struct resize_request *req, const json_t *targets,
			 const char **reason)
{
	const char *tmpl;
	json_t *size;
	json_object_foreach((json_t *)targets, tmpl, size) {
		char *why = block_refusal(in, req, tmpl, json_string_value(size), reason);
		if (why)
			return why;
	}
	return NULL;
}
