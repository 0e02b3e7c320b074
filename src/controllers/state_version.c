#include "controllers/state_version.h"

#include <stdlib.h>

#include "client/kube_object.h"
#include "runtime/action.h"
#include "util/xalloc.h"

/* s, or "?" when missing: for messages. */
static const char *or_unknown(const char *s)
{
	return s ? s : "?";
}

long long state_version_of(const json_t *state)
{
	const json_t *v = json_object_get(state, STATE_VERSION_KEY);
	if (!v)
		return 1;
	/* 2.0 or "2" are not versions any release writes: refused, not guessed at. */
	return json_is_integer(v) && json_integer_value(v) >= 1 ? json_integer_value(v) : -1;
}

bool state_version_known(const json_t *state)
{
	long long v = state_version_of(state);
	return v >= 1 && v <= STATE_VERSION;
}

void state_version_stamp(json_t *state)
{
	json_object_set_new(state, STATE_VERSION_KEY, json_integer(STATE_VERSION));
}

char *state_version_refusal(const json_t *state, const char *annotation, const char *object)
{
	long long v = state_version_of(state);
	if (v < 0)
		return xasprintf("%s: annotation %s has a \"" STATE_VERSION_KEY "\" that is not a state version (a positive "
				 "integer): no operator wrote it; the operator changes nothing, restore the state an operator "
				 "wrote",
				 object, annotation);
	return xasprintf("%s: annotation %s was written by a newer operator (state version %lld; this operator reads "
			 "up to %d); it changes nothing: upgrade the operator, or roll back only after the newer one "
			 "finished",
			 object, annotation, v, STATE_VERSION);
}

bool state_version_refuse(const json_t *obj, const char *annotation, const char *kind, struct action *a)
{
	json_t *st = kube_obj_annotation_json(obj, annotation);
	bool refused = json_is_object(st) && !state_version_known(st);
	if (refused) {
		char *who = xasprintf("%s %s/%s", kind, or_unknown(kube_obj_str(obj, "metadata.namespace")),
				      or_unknown(kube_obj_str(obj, "metadata.name")));
		char *why = state_version_refusal(st, annotation, who);
		a->verb = ACTION_REFUSE;
		action_event(a, "Warning", STATE_VERSION_REFUSED, "%s", why);
		free(why);
		free(who);
	}
	json_decref(st);
	return refused;
}
