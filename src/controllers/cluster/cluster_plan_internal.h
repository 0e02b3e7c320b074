/*
 * What the StatefulCluster planner's files share: the spec as read, the
 * identities as the cluster shows them, the plan under way, the objects
 * it creates. Pure. Private to src/controllers/cluster.
 */
#ifndef SOP_CLUSTER_PLAN_INTERNAL_H
#define SOP_CLUSTER_PLAN_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/claim_names.h"
#include "controllers/cluster/cluster_plan.h"
#include "runtime/action.h"

/* The spec as read, defaults filled in. */
struct spec {
	long long replicas;
	const json_t *selector;
	const json_t *tmpl;
	const json_t *vcts;
	long long min_ready_ms;
	bool on_delete;
	long long max_unavailable;
	long long partition;
	long long history;
	const char *when_deleted, *when_scaled, *when_replaced;
	long long unhealthy_ms, node_lost_ms, grace_ms;
	const json_t *remove; /* spec.removeMembers: identities that must not be members (array of strings, or NULL) */
};

/* An identity n: its pod, its claims, whether it is a member and how it fares. */
struct identity {
	long n;
	char *name;            /* <cluster>-<n> (new string) */
	const json_t *pod;     /* controlled by the cluster, or NULL */
	const json_t *foreign; /* a pod of that name the cluster does not control */
	const json_t **claims; /* its claims (borrowed from the inputs), at most one per claim template */
	int nclaims;
	bool member;
	const char *released; /* "Scaled" / "Replaced" or NULL */
	/* members with a pod: */
	bool going;   /* being deleted (or deleted by us, the cache may not show it yet) */
	bool ready, available;
	bool node_lost; /* its node is gone or NotReady (even if not yet for long) */
	char *failure;  /* why it counts as failed (new string), or NULL */
	const char *revision;
	int rank; /* among the members by identity, from 0 */
};

/* One planning pass. */
struct plan {
	const struct cluster_inputs *in;
	const json_t *c;
	const char *ns, *name, *uid;
	struct spec s;
	json_t *state; /* the state as it should be read (new reference) */
	bool state_rebuilt;
	struct identity *ids;
	size_t nids;
	long long due_ms; /* the nearest time something falls due */
	long foreign_max; /* the highest identity in a claim name that is not ours, or -1 */
	char hash[11];
	char *update_rev;        /* <name>-<hash> */
	const json_t *update_obj; /* its ControllerRevision, or NULL */
	const char *current_rev;  /* status.currentRevision when that revision still exists, else update_rev */
	/* A replacement asked for (ANNOTATION_CLUSTER_REPLACE) that maxUnavailable holds back, or NULL. */
	const struct identity *replace_held;
	int down; /* with replace_held: members unavailable now */
};

/* ---- cluster_state.c: what every step shares (a leaf) ---- */

/*
 * A merge patch (stolen) of the cluster, with its resourceVersion as
 * precondition: a decision on a stale cache, or a status computed from an
 * older object, conflicts.
 */
void cluster_patch(const struct plan *p, struct action *a, const char *what, json_t *patch);
/* A SetState step named what, writing st (stolen) into the state annotation (the controller seals it). */
void cluster_set_state(const struct plan *p, struct action *a, const char *what, json_t *st);
/*
 * A copy of the state (new reference) with member drop (-1: none) released
 * as why and add new identities, whose names go to added (len bytes; may be NULL).
 */
json_t *cluster_state_change(const struct plan *p, long drop, const char *why, int add, char *added, size_t len);
/* s is one of array's strings. */
bool cluster_in_array(const json_t *array, const char *s);
/* Who goes first (scale-down, rolling update): members not Ready (they serve nothing), then the newest. */
bool cluster_goes_before(const struct identity *id, const struct identity *than);
/* True when the member's pod runs revision rev (its controller-revision-hash label). */
bool cluster_at_revision(const struct identity *id, const char *rev);
/* A member unavailable now: no pod, going, not available, or on a lost node. */
bool cluster_member_down(const struct identity *id);
/* How many members are so. */
int cluster_members_down(const struct plan *p);

/* The most names one replace-members annotation may hold. */
#define CLUSTER_MAX_REQUESTED 64
/*
 * The names of the replace-members annotation (ANNOTATION_CLUSTER_REPLACE),
 * trimmed, empty ones kept as "", at most CLUSTER_MAX_REQUESTED + 1: a new
 * array, or NULL when there is no annotation.
 */
json_t *cluster_requested_names(const struct plan *p);
/* Sets the replace-members annotation in a's patch (a SetState step) to value, or removes it (NULL). */
void cluster_set_request(struct action *a, const char *value);
/*
 * After a SetState step (a) in which member id leaves: its name is taken
 * out of the replace-members annotation in the same patch, so a request
 * never outlives its member.
 */
void cluster_forget_request(const struct plan *p, struct action *a, const struct identity *id);

/*
 * ---- the steps: each returns true when it chose a, false when it has
 * nothing to do ----
 */

/* cluster_members.c: a failed member gets a new identity (or, scaling down, none). */
bool cluster_replace_failed(struct plan *p, struct action *a);
/*
 * Member id leaves for a new identity with new claims (scaling down: for
 * none), its claims following whenReplaced: the SetState step, an Event of
 * type saying "member <id> <cause>; ...", counted as a replacement.
 */
void cluster_replace_member(struct plan *p, struct action *a, const struct identity *id, const char *type,
			    const char *cause);
/* What a retention policy does to a leaving member's claims, for the Events: "deleted" or "kept". */
const char *cluster_claims_fate(const char *policy);

bool cluster_scale(struct plan *p, struct action *a);
/* Identities no longer members: their pods go, then their claims as the policy says. */
bool cluster_release(struct plan *p, struct action *a);
/* Each member's missing claims, then its pod at the revision it should run. */
bool cluster_start_members(struct plan *p, struct action *a);
/* Claims carry an owner reference to the cluster exactly when whenDeleted is Delete. */
bool cluster_fix_claim_owners(struct plan *p, struct action *a);

/*
 * cluster_requests.c: the members the user names. spec.removeMembers (an
 * unknown name refuses the spec; the named members go, claims following
 * whenScaled) and the replace-members annotation (a malformed one is
 * refused and removed; the named members are replaced, maxUnavailable at a
 * time).
 */
bool cluster_refuse_removals(struct plan *p, struct action *a);
bool cluster_remove_named(struct plan *p, struct action *a);
bool cluster_replace_requested(struct plan *p, struct action *a);
/* Nothing else to do while p->replace_held waits for maxUnavailable: an Event on a (resting) saying so. */
void cluster_replace_waiting(const struct plan *p, struct action *a);

/* cluster_update.c */
bool cluster_ensure_revision(struct plan *p, struct action *a);
bool cluster_record_current_revision(struct plan *p, struct action *a);
/* RollingUpdate: replace outdated pods, never more than maxUnavailable members down. */
bool cluster_roll(struct plan *p, struct action *a);
/* Old revisions beyond revisionHistoryLimit go, oldest first; those in use stay. */
bool cluster_prune_revisions(struct plan *p, struct action *a);
/* The cluster's ControllerRevision of that name (borrowed from the inputs), or NULL. */
const json_t *cluster_find_revision(const struct plan *p, const char *name);
/* The revision member id runs at (or should): rank below partition keeps the current one. */
const char *cluster_target_revision(const struct plan *p, const struct identity *id);

/* The status the cluster should show (new reference). */
json_t *cluster_desired_status(const struct plan *p);

/* True when have differs from want in anything want sets. */
bool cluster_status_differs(const json_t *have, const json_t *want);

/*
 * ---- cluster_objects.c: the objects a StatefulCluster creates (its
 * members' pods and claims, named as a StatefulSet's in claim_names.h, and
 * its ControllerRevisions) and how to read their names back ----
 */

/* The ControllerRevision of a template hash: "<cluster>-<hash>". New string. */
char *cluster_revision_name(const char *cluster, const char *hash);

/*
 * Identities come from a counter that only grows, so they may pass the 9
 * digits of an int32 ordinal: names are read with kube_name_number up to this.
 */
#define MAX_IDENTITY_DIGITS 18
/* The identity of a pod name "<cluster>-<n>" (tmpl NULL) or claim name "<tmpl>-<cluster>-<n>", or -1. */
long cluster_identity_of(const char *name, const char *tmpl, const char *cluster);

/* The condition of type in obj's status.conditions (borrowed), or NULL: kube_obj_condition gives no times. */
const json_t *cluster_condition(const json_t *obj, const char *type);

/* The revision hash of a pod template: 10 hex digits of SHA-256 of its canonical JSON. */
void cluster_template_hash(const json_t *tmpl, char out[11]);

/*
 * The labels every member pod (or claim) carries: tmpl's (its template's,
 * or claim template's), the selector's matchLabels (tmpl may leave them
 * out), the cluster and member labels (member may be NULL). New object.
 */
json_t *cluster_pod_labels(const json_t *cluster, const json_t *tmpl, const char *member);

/*
 * Member n's pod at revision (name <cluster>-<hash>) from tmpl (the
 * revision's spec.template): hostname and subdomain, the claims of every
 * volumeClaimTemplate mounted under the template's name, the user's own
 * volumes kept, controlled by the StatefulCluster. New object.
 */
json_t *cluster_member_pod(const json_t *cluster, const json_t *tmpl, long n, const char *revision);

/* Claim <template>-<cluster>-<n> from volumeClaimTemplate vct; owned by the cluster when owned. New object. */
json_t *cluster_member_claim(const json_t *cluster, const json_t *vct, long n, bool owned);

/* The ControllerRevision <cluster>-<hash> holding spec.template, numbered number. New object. */
json_t *cluster_revision(const json_t *cluster, const char *hash, long long number);

/* An owner reference to the cluster (controller or not). New object. */
json_t *cluster_owner_ref(const json_t *cluster, bool controller);

#endif
