#include "controllers/resize/resize_internal.h"

#include <stdio.h>

#include "controllers/claim_names.h"
#include "client/kube_object.h"

struct candidate_match {
	const char *sts;
	bool found;
};

static void match_candidate(void *ctx, const char *sts)
{
	struct candidate_match *m = ctx;
	m->found |= !strcmp(m->sts, sts);
}

const char *resize_volume_claim_of_set(const json_t *pv, const char *ns, const char *sts)
{
	const char *claim = kube_obj_str(pv, "spec.claimRef.name");
	if (!claim || !streq(kube_obj_str(pv, "spec.claimRef.namespace"), ns))
		return NULL;
	char name[512];
	size_t len = strlen(claim);
	size_t suffix = strlen(TEMP_SUFFIX);
	if (len >= sizeof(name))
		return NULL;
	memcpy(name, claim, len + 1);
	if (len > suffix && !strcmp(name + len - suffix, TEMP_SUFFIX))
		name[len - suffix] = '\0';
	struct candidate_match m = {sts, false};
	claim_statefulset_candidates(name, match_candidate, &m);
	return m.found ? claim : NULL;
}

bool resize_volume_owned(const json_t *pv, const json_t *claim, const char *ns, const char *sts, const char **why)
{
	char owner[600];
	snprintf(owner, sizeof(owner), "%s/%s", ns, sts);
	if (streq(kube_obj_annotation(pv, ANNOTATION_TAKEN_FOR), owner))
		return true;
	const char *name = resize_volume_claim_of_set(pv, ns, sts);
	const char *ref_uid = kube_obj_str(pv, "spec.claimRef.uid");
	if (!name) {
		*why = "it is neither bound to a claim of this StatefulSet nor taken over for it";
		return false;
	}
	if (!claim || !streq(kube_obj_str(claim, "metadata.name"), name) ||
	    !streq(kube_obj_str(claim, "metadata.namespace"), ns)) {
		*why = "the claim it names does not exist";
		return false;
	}
	if (!ref_uid || !streq(kube_obj_str(claim, "metadata.uid"), ref_uid)) {
		*why = "it names a claim of that name with another UID";
		return false;
	}
	if (!streq(kube_obj_str(claim, "spec.volumeName"), kube_obj_str(pv, "metadata.name"))) {
		*why = "the claim it names is not bound to it";
		return false;
	}
	return true;
}
