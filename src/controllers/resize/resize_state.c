#include "controllers/resize/resize_state.h"

#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_plan_internal.h"

bool resize_state_recreating(const json_t *sts)
{
	const char *text = kube_obj_annotation(sts, ANNOTATION_RESIZE_STATE);
	json_t *st = text ? json_loads(text, 0, NULL) : NULL;
	const char *phase = json_string_value(json_object_get(st, "phase"));
	const char *uid = json_string_value(json_object_get(st, "statefulSetUID"));
	const char *own = kube_obj_str(sts, "metadata.uid");
	bool yes = phase && uid && own && !strcmp(uid, own) &&
		   (!strcmp(phase, PHASE_SAVING) || !strcmp(phase, PHASE_RECREATING) || !strcmp(phase, PHASE_COPYING));
	json_decref(st);
	return yes;
}
