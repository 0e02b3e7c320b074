/*
 * What the planner unit tests that play a simulated cluster share
 * (test_cluster_plan.c, test_scaledown_plan.c, test_resize_copy_plan.c):
 * reading and changing Kubernetes objects held as JSON, lists of them, the
 * clock, the steps taken so far (printed when a test fails), the history
 * of steps performed and the "every step twice" harness. Each test keeps
 * its own world (objects, controllers, invariants); these helpers know
 * nothing of it.
 *
 * Strings and objects handed out are borrowed from their container unless
 * a comment says "new". Failures end the test through cmocka's fail_msg.
 * Not thread-safe: the tests are single-threaded.
 */
#ifndef SOP_TEST_SIM_H
#define SOP_TEST_SIM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdbool.h>

/* ---- strings ---- */

/* The JSON document text (a test's fixture): a new reference; a text that does not parse fails the test. */
json_t *sim_json(const char *text);

/* a and b are both there and equal. */
bool sim_streq(const char *a, const char *b);
/* s is there and holds needle. */
bool sim_contains(const char *s, const char *needle);
/* s, or "-" when it is missing: for messages. */
const char *sim_or_dash(const char *s);

/* ---- what a failure prints ---- */

/* The steps a simulation took, one line each, as text that grows. */
struct sim_trace {
	char *text; /* NULL before the first line; owned */
	size_t len;
};

/* Appends to t, formatted like printf. */
void sim_trace_add(struct sim_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees t's text; t can take lines again. */
void sim_trace_release(struct sim_trace *t);
/* Prints steps (NULL: none) to stderr between markers, as a failure shows them. */
void sim_print_steps(const char *steps);

/* Fails the test, printing steps (a string or NULL) first; fail_msg names the caller's line. */
#define sim_fail(steps, ...)            \
	do {                            \
		sim_print_steps(steps); \
		fail_msg(__VA_ARGS__);  \
	} while (0)

/* ---- objects ---- */

/* obj's metadata, or NULL. */
json_t *sim_meta(const json_t *obj);
/* metadata.labels[key] of obj, or NULL. */
const char *sim_label(const json_t *obj, const char *key);
/* metadata.annotations[key] of obj, or NULL. */
const char *sim_annotation(const json_t *obj, const char *key);
/* Sets (value, copied) or removes (NULL) metadata.annotations[key]; obj must have metadata. */
void sim_annotate(json_t *obj, const char *key, const char *value);
/* obj has a deletionTimestamp: it is being deleted. */
bool sim_terminating(const json_t *obj);
/* Sets obj's deletionTimestamp to ms (since the epoch): a graceful delete, as the API server records it. */
void sim_mark_deleted(json_t *obj, long long ms);
/* obj has an owner reference to uid; with controller_only, a controller reference. */
bool sim_owned_by(const json_t *obj, const char *uid, bool controller_only);
/* pod has a volume of claim claim. */
bool sim_mounts(const json_t *pod, const char *claim);
/* Every claim pod mounts is in pvcs (in namespace ns; any when NULL) and not being deleted. */
bool sim_claims_there(const json_t *pvcs, const char *ns, const json_t *pod);
/* RFC 7386 merge patch of target (an object) with patch (copied): what the API server does with merge-patch+json. */
void sim_merge_patch(json_t *target, const json_t *patch);
/*
 * What the API server does with a request that names obj (NULL: none of
 * that name) with UID precondition uid (NULL: none): true when obj is there
 * and its UID matches; otherwise traces "404" or "409 uid precondition"
 * (one more *conflicts) and returns false.
 */
bool sim_precondition_met(const json_t *obj, const char *uid, struct sim_trace *trace, int *conflicts);

/* ---- controllers every world has ---- */

/*
 * The PVC protection controller: the claims of pvcs being deleted (in
 * namespace ns; any when NULL) that no pod of pods that has not ended
 * (Succeeded or Failed) mounts go, each traced.
 */
void sim_pvc_protection(json_t *pvcs, const char *ns, const json_t *pods, struct sim_trace *trace);

/* ---- lists of objects (JSON arrays) ---- */

/* The object of list named name, in any namespace; NULL when none or name is NULL. */
json_t *sim_find(const json_t *list, const char *name);
/* The object of list named name in namespace ns (any when NULL); NULL when none. */
json_t *sim_find_in(const json_t *list, const char *ns, const char *name);
/* The object of list with UID uid; NULL when none or uid is NULL. */
json_t *sim_find_uid(const json_t *list, const char *uid);
/* Removes obj (the same object, not an equal one) from list, dropping the list's reference. */
void sim_remove(json_t *list, const json_t *obj);
/* An element of the array arr is the string s. */
bool sim_in_array(const json_t *arr, const char *s);
/*
 * pods as the operator's Pod cache holds them (controllers/pod_fields.h):
 * a new array of trimmed copies. The planners are given these, so a
 * simulation fails when a planner reads a field the cache drops.
 */
json_t *sim_cached_pods(const json_t *pods);

/* ---- names ---- */

/*
 * n, when s is "<prefix><n>" with n in canonical decimal (no sign, no
 * leading zero) of at most max_digits digits, as the StatefulSet and
 * StatefulCluster name their pods and claims; -1 otherwise.
 */
long sim_number_after(const char *s, const char *prefix, size_t max_digits);

/* ---- the clock ---- */

/* ms (since the epoch) as RFC 3339 in UTC, to the second ("2026-11-21T12:00:00Z"), into buf of n bytes. */
void sim_rfc3339(long long ms, char *buf, size_t n);
/* An RFC 3339 time as ms since the epoch; -1 when s is NULL or not one. */
long long sim_time_ms(const char *s);

/*
 * ---- counters and the history of steps performed ----
 *
 * A history is an array of one object per step performed, with "step"
 * (and optionally "what") naming it, "object", and the Event's "type",
 * "reason" and "message".
 */

/* Adds one to the integer counts[key] (a JSON object; a missing key counts as 0). */
void sim_count(json_t *counts, const char *key);
/* counts[key]; 0 when missing. */
int sim_counted(const json_t *counts, const char *key);
/* The index of the first entry at or after from whose what or step is what, of object (any when NULL); -1 when none. */
int sim_seen_at(const json_t *history, const char *what, const char *object, int from);
/* How many entries at or after from have what or step what. */
int sim_seen_count(const json_t *history, const char *what, int from);
/* How many entries have an Event of reason (and type, when not NULL) whose message holds needle (when not NULL). */
int sim_events(const json_t *history, const char *type, const char *reason, const char *needle);

/* ---- steps planned ---- */

/*
 * The fingerprints (one line each, enough to compare two steps) of the
 * step last planned, of a second plan from the same inputs, and of the
 * step planned before. Owned; freed by sim_steps_release.
 */
struct sim_steps {
	char *seen, *again, *before;
};

/*
 * Takes seen (the step planned) and again (planned again from the same
 * inputs), both new strings; the step seen so far becomes before. The
 * planner decides, it does not count: fails, printing trace, when the two
 * differ.
 */
void sim_steps_note(struct sim_steps *s, const struct sim_trace *trace, char *seen, char *again);
/* The step seen is the one before, unchanged: asked for again after it was performed. */
bool sim_steps_repeated(const struct sim_steps *s);
/* Forgets the step seen, so that the next one is not compared with it (a new run starts). */
void sim_steps_restart(struct sim_steps *s);
/* Frees the fingerprints; s can note steps again. */
void sim_steps_release(struct sim_steps *s);

/* Fails, printing trace, when an Event (reason not NULL) has a type other than Normal or Warning, or no message. */
void sim_check_event(const struct sim_trace *trace, const char *type, const char *reason, const char *message);

/* ---- the world as the API server holds it ---- */

/* The n objects of objs, each as compact JSON with sorted keys ("gone" for NULL), one a line. New string. */
char *sim_dump(const json_t *const *objs, size_t n);

/* ---- crash safety: every step twice ---- */

/* What sim_every_step_twice learns of one play of a scenario. */
struct sim_play {
	const char *label; /* the scenario's name: borrowed, must outlive the test */
	char *end;         /* the world at the end and what was counted: new string, taken */
	int conflicts;     /* the 409s and 404s the play's steps met */
	const char *steps; /* its steps, printed on a failure: borrowed from the world until release */
};

/*
 * Plays each of n scenarios on world once, then with every step performed
 * twice (a crash right after the call, the result not seen yet): both
 * must end the same, and the repeated steps must have met something.
 * play plays scenario i (twice or not) and fills in *p; release empties
 * world after each play.
 */
void sim_every_step_twice(void *world, size_t n, void (*play)(void *world, size_t i, bool twice, struct sim_play *p),
			  void (*release)(void *world));

#endif
