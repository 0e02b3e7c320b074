/*
 * Steps the scale-down integration tests share (it_scaledown.c and
 * it_scaledown_faults.c): a per-test fixture holding the namespace, the
 * StatefulSet, its claims' UIDs, the recorders and the operator, with a
 * teardown that removes them whatever happened; StatefulSets whose cleanup
 * pods kwok ends as told; waits on the operator's progress; checks on
 * claims. Failures abort the test through cmocka's fail_msg. Test-only;
 * call from the test's thread.
 */
#ifndef SOP_IT_SCALEDOWN_STEPS_H
#define SOP_IT_SCALEDOWN_STEPS_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

/* How long one step may take, and how often the waits ask the API server. */
#define SD_WAIT_MS 60000L
#define SD_POLL_MS 100L

/* One test's world. sd_setup makes it, sd_teardown frees all it holds. */
struct sd_test {
	struct kube_client *admin;
	char *ns;                          /* the test's namespace; NULL until made */
	json_t *sts;                       /* the StatefulSet manifest sd_begin created */
	json_t *uids;                      /* claim name -> UID once the set was ready */
	struct it_recorder *pods, *pvcs;   /* running recorders, or NULL */
	json_t *pod_records, *pvc_records; /* what they recorded, once stopped */
	struct daemon d;                   /* the operator; d.pid is 0 when none runs */
};

/* A condition's context: one object of the test, by name. */
struct sd_named {
	struct sd_test *t;
	const char *name;
};

/* s is not NULL and equals want. */
bool sd_str_is(const char *s, const char *want);

/* ---- the fixture ---- */

/* cmocka setup: *state becomes a new struct sd_test with an admin client. Returns 0. */
int sd_setup(void **state);
/*
 * cmocka teardown, whatever the test did: kills an operator left running,
 * stops the recorders, takes the scale-down finalizer off the namespace's
 * StatefulSets (no operator is left to) and deletes the namespace, then
 * frees the fixture. Returns 0.
 */
int sd_teardown(void **state);

/* A cmocka test entry with the fixture above; needs <cmocka.h>. */
#define sd_unit_test(f) cmocka_unit_test_setup_teardown(f, sd_setup, sd_teardown)

/* Creates the test's namespace prefix-<random> (t->ns). */
void sd_namespace_new(struct sd_test *t, const char *prefix);
/* Creates sts (borrowed) in t->ns; an error fails the test. */
void sd_create_set(struct sd_test *t, const json_t *sts);
/*
 * The namespace (sd_namespace_new), then sts created (t->sts takes it)
 * with pods Ready and claims Bound within SD_WAIT_MS, then t->uids.
 */
void sd_begin(struct sd_test *t, const char *prefix, json_t *sts, int pods, int claims);
/*
 * sd_begin, then pods and claims recorded (sd_record), the operator
 * started and its finalizer on sts (sd_operator_start), and sts scaled to
 * replicas.
 */
void sd_begin_scaled(struct sd_test *t, const char *prefix, json_t *sts, int pods, int claims, int replicas);
/* Starts recording t->ns's pods (t->pods) and, when claims is true, its claims (t->pvcs). */
void sd_record(struct sd_test *t, bool claims);
/* Stops the recorders started: their records in t->pod_records and t->pvc_records. */
void sd_stop_recording(struct sd_test *t);
/* The lives (it_lives) of the cleanup pods for set in t->pod_records: a new array; asserts there were n. */
json_t *sd_cleanup_lives(const struct sd_test *t, const char *set, size_t n);

/*
 * Starts an operator whose caches have synced (t->d); when set is not
 * NULL, waits until it has put its finalizer on the StatefulSet set
 * (fails the test with the log after SD_WAIT_MS).
 */
void sd_operator_start(struct sd_test *t, const char *set);
/* Stops t's operator: asserts that it exits 0 within 10 s. */
void sd_operator_stop(struct sd_test *t);
/* Runs an operator that kills itself right after step; fails the test unless it dies of SIGKILL. */
void sd_operator_run_until_crash(struct sd_test *t, const char *step);

/* Shows what the cluster holds in ns (StatefulSets, pods, claims, Events, annotations) on stderr. */
void sd_show_namespace(const char *ns);
/*
 * Fails the test with a printf-built message and t's operator log, after
 * showing t's namespace. A macro so that cmocka names the caller's line;
 * needs <cmocka.h>.
 */
#define sd_fail_with_log(t, ...)                                        \
	do {                                                            \
		sd_show_namespace((t)->ns);                             \
		char *log_ = daemon_log(&(t)->d);                       \
		char *what_ = xasprintf(__VA_ARGS__);                   \
		fail_msg("%s; operator log:\n%s", what_, log_);         \
	} while (0)

/* ---- StatefulSets ---- */

/*
 * StatefulSet name (see it_statefulset) with a cleanup template that
 * mounts every claim and that kwok ends with outcome after delay, with
 * message. Its pods are labelled app=<name>-cleanup, which the set's
 * selector does not match. New object.
 */
json_t *sd_cleaned_statefulset(const char *name, int replicas, const char *policy, const char *claims,
			       const char *outcome, const char *delay, const char *message);
/* Sets spec.replicas of the StatefulSet name. */
void sd_scale(struct sd_test *t, const char *name, int replicas);
/* The scaledown-status annotation of the StatefulSet set now (new string), or NULL. */
char *sd_status(const struct sd_test *t, const char *set);
/* How many cleanup pods for set there are now. */
int sd_cleanup_pods(const struct sd_test *t, const char *set);
/*
 * Waits until the cleanup is over: no cleanup pod for set, each claim in
 * claims (NULL-terminated) gone or being deleted, set there without a
 * scaledown-status, and at least succeeded CleanupSucceeded Events. Fails
 * the test with the log after SD_WAIT_MS.
 */
void sd_wait_cleanup_over(struct sd_test *t, const char *set, const char *const *claims, int succeeded);
/* Condition (struct sd_named): the pod is gone. */
bool sd_pod_gone(void *ctx);

/* ---- claims ---- */

/* The claim <tmpl>-<set>-<ordinal> (new string). */
char *sd_claim_name(const char *tmpl, const char *set, int ordinal);
/* Claim name -> UID of every claim in t->ns: a new object. */
json_t *sd_claim_uids(const struct sd_test *t);
/* The claim is gone or being deleted. */
bool sd_claim_gone_or_deleting(const struct sd_test *t, const char *name);
/* Asserts each claim in names (NULL-terminated) is the object of t->uids (same UID) and not being deleted. */
void sd_expect_claims_kept(const struct sd_test *t, const char *const *names);

#endif
