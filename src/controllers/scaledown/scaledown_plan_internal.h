/*
 * What the scale-down planner's files share (scaledown_plan.c: the claim
 * sets, scheduling, state, finalizer; scaledown_cleanup_pod.c: one cleanup
 * pod). Private to src/controllers/scaledown.
 */
#ifndef SOP_SCALEDOWN_PLAN_INTERNAL_H
#define SOP_SCALEDOWN_PLAN_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "runtime/action.h"

struct claim {
	const json_t *obj;
	const char *name;
	const char *uid;
	bool terminating;
};

enum set_state {
	SET_IDLE,       /* nothing to do: in range, cleaned, or no claim left */
	SET_CLEANING,   /* our cleanup pod exists */
	SET_RETRY_WAIT, /* a failure recorded; next attempt after retryAt */
	SET_GAVE_UP,    /* max attempts failed: claims kept */
	SET_POD_LEFT,   /* a pod not ours holds the name (being stopped by the StatefulSet, or foreign) */
	SET_STOP,       /* StatefulSet deletion: its own pod must go first */
	SET_STOPPING,   /* ...and is going */
	SET_LEFT_ALONE, /* StatefulSet deletion: a pod it does not control holds the name */
	SET_READY,      /* a cleanup pod may start */
};

struct ordinal {
	long k;
	char key[16];         /* k as a key of the state's "ordinals" */
	struct claim *claims; /* one per volumeClaimTemplate that has a claim */
	int nclaims, nlive;
	const json_t *cleanup; /* our cleanup pod */
	const json_t *other;   /* another pod named <sts>-<k> */
	bool in_range;
	const json_t *entry; /* scaledown-state for k, or NULL */
	int failures;
	enum set_state state;
	bool queued; /* READY or STOP but no free slot */
};

struct plan {
	const struct scaledown_inputs *in;
	const char *ns, *name, *uid;
	struct scaledown_request req;
	bool may_start; /* a valid template: new cleanups may start */
	bool deleting;
	json_t *state;        /* scaledown-state as read (new reference, an object) */
	struct ordinal *ords; /* sorted highest first */
	size_t nords;
	long long deadline_ms; /* the nearest time something is due, or LLONG_MAX */
	char timeout_text[32];
};

/* ---- scaledown_state.c (a leaf) ---- */

/* Something falls due at ms: the plan asks to look again then at the latest. */
void scaledown_due_at(struct plan *p, long long ms);
/* "data-web-2, logs-web-2": the claims of a set, for messages. New string. */
char *scaledown_claim_list(const struct ordinal *o);
/* The pod's phase, "Pending" when it shows none. Borrowed. */
const char *scaledown_pod_phase(const json_t *pod);
/* The attempt a cleanup pod says it is, 0 when it does not. */
int scaledown_pod_attempt(const json_t *pod);
/* What scaledown-status says for state (borrowed): a clause per claim set with news. New string, or NULL. */
char *scaledown_status_text(struct plan *p, const json_t *state);
/* A merge patch (body stolen) of the StatefulSet as the planner saw it: on a newer one it conflicts. */
void scaledown_patch_sts(const struct plan *p, struct action *a, const char *what, json_t *body);
/* Writes state (stolen; NULL: removes it) as scaledown-state, unsealed, and status (stolen) as -status. */
void scaledown_record_state(const struct plan *p, struct action *a, const char *what, json_t *state, char *status);

/* scaledown_cleanup_pod.c: o's cleanup pod under way; true when a step was chosen. */
bool scaledown_act_on_cleanup(struct plan *p, struct ordinal *o, struct action *a);
/* Creates o's cleanup pod. */
void scaledown_start_cleanup(const struct plan *p, const struct ordinal *o, struct action *a);

#endif
