#include "claim_status.h"

#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "client/kube_resource.h"
#include "util/log.h"

#define COMPONENT "resizer"

json_t *claim_conditions_without(const json_t *pvc, const char *const *types, size_t n)
{
	json_t *out = json_array();
	const json_t *conds = json_object_get(json_object_get(pvc, "status"), "conditions");
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		bool drop = false;
		for (size_t k = 0; t && k < n; k++)
			drop |= !strcmp(t, types[k]);
		if (!drop)
			json_array_append(out, c);
	}
	return out;
}

json_t *claim_conditions_or_null(json_t *conds)
{
	if (json_array_size(conds) > 0)
		return conds;
	json_decref(conds);
	return json_null();
}

void claim_status_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int claim_status_patch(struct kube_client *c, json_t **pvc, const char *resource_version, json_t *status,
		       const char *what)
{
	const char *ns = kube_obj_str(*pvc, "metadata.namespace");
	const char *name = kube_obj_str(*pvc, "metadata.name");
	json_t *patch = json_pack("{s:{s:s}, s:o}", "metadata", "resourceVersion", resource_version, "status", status);
	json_t *out = NULL;
	struct kube_error err;
	int rc = kube_patch(c, &KUBE_PVCS, ns, name, "status", KUBE_PATCH_MERGE, patch, &out, &err);
	json_decref(patch);
	if (rc < 0) {
		if (err.code == 409)
			log_debug(COMPONENT, "%s/%s: changed meanwhile; again", ns, name);
		else
			log_warn(COMPONENT, "%s/%s: patch status (%s): %ld %s", ns, name, what, err.code,
				 err.message);
		return -1;
	}
	json_decref(*pvc);
	*pvc = out;
	return 0;
}
