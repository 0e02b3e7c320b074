/*
 * The scale-down cleanup planner (scaledown_plan.c).
 *
 * The planner is pure: cluster objects and the clock in, one step out.
 * These tests keep one StatefulSet, its claims and the pods of its
 * namespace in memory, with a simulator that plays the API server (each
 * step is answered at once, with its preconditions: 409 for a name that is
 * taken, nothing for a UID that does not match) and the controllers that
 * answer: the kubelet (cleanup pods start once their claims are there, then
 * succeed, fail with "disk busy" (or what the test says) or hang; deleted pods
 * go), the StatefulSet controller (pods and claims for in-range ordinals
 * when the name is free; out-of-range pods deleted, highest first for
 * OrderedReady), PVC protection and the garbage collector (which also takes
 * the claims whenDeleted: Delete made the StatefulSet's, unless another owner
 * holds them). A claim is the set's when it is named for it and carries its
 * selector's matchLabels, as the StatefulSet controller makes them. The
 * controllers only work while the planner waits or rests, and the clock
 * only moves then, so the planner sees the in-between states a real
 * cluster shows.
 *
 * Every run checks, at every step:
 *   - the same inputs give the same step, and a step performed is never
 *     asked for again unchanged;
 *   - a claim is deleted only while a cleanup pod of its ordinal has
 *     Succeeded on its own (not on the SIGTERM of its deletion: finished
 *     before the deletion was asked for) and names that claim with that
 *     UID (cleanup-claims);
 *   - a cleanup pod is created only for an orphaned claim set, from the
 *     template, mounting exactly its live claims, owned (not controlled) by
 *     the StatefulSet, never while it has stateful-operator.io/ignore: "true";
 *   - a claim is disowned only while the StatefulSet is being deleted, with
 *     its resourceVersion as precondition, other owners kept;
 *   - OrderedReady: never two cleanup pods at once, highest ordinal first;
 *     Parallel: never more than scaledown-parallelism, a set waiting to
 *     retry holding its place;
 *   - a running cleanup pod is deleted only past its timeout; the
 *     StatefulSet's own pods are stopped only while it is being deleted;
 *     the finalizer goes only when no cleanup pod is left.
 * A failure prints the steps so far.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/label_selector.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "sim.h"
#include "state_fixture.h"
#include "terminal_scan.h"
#include "util/duration.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define NS "ns"
#define START "2026-11-21T12:00:00Z"
#define MAX_STEPS 1000
#define OTHER_FINALIZER "example.com/keep"
#define FAIL_MESSAGE "disk busy"
#define STARTED_TOTAL "stateful_operator_cleanups_started_total"
#define SUCCEEDED_TOTAL "stateful_operator_cleanups_succeeded_total"
#define FAILED_TOTAL "stateful_operator_cleanups_failed_total"
#define GIVEN_UP_TOTAL "stateful_operator_cleanups_given_up_total"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* The steps as these tests tell them apart (RecordState and RecordFailure both write the state). */
enum step {
	STEP_NOTHING, STEP_REFUSE, STEP_ADD_FINALIZER, STEP_REMOVE_FINALIZER, STEP_CREATE_POD, STEP_STOP_POD,
	STEP_DELETE_POD, STEP_DELETE_CLAIM, STEP_SET_STATE, STEP_DISOWN_CLAIM, STEP_WAIT, STEP_OTHER,
};

static enum step step_of(const struct action *a)
{
	static const struct {
		const char *what;
		enum step step;
	} named[] = {
		{SCALEDOWN_ADD_FINALIZER, STEP_ADD_FINALIZER}, {SCALEDOWN_REMOVE_FINALIZER, STEP_REMOVE_FINALIZER},
		{SCALEDOWN_CREATE_POD, STEP_CREATE_POD},       {SCALEDOWN_STOP_POD, STEP_STOP_POD},
		{SCALEDOWN_DELETE_POD, STEP_DELETE_POD},       {SCALEDOWN_DELETE_CLAIM, STEP_DELETE_CLAIM},
		{SCALEDOWN_RECORD_STATE, STEP_SET_STATE},      {SCALEDOWN_RECORD_FAILURE, STEP_SET_STATE},
		{SCALEDOWN_DISOWN_CLAIM, STEP_DISOWN_CLAIM},
	};
	switch (a->verb) {
	case ACTION_NOTHING:
		return STEP_NOTHING;
	case ACTION_REFUSE:
		return STEP_REFUSE;
	case ACTION_WAIT:
		return STEP_WAIT;
	default:
		break;
	}
	for (size_t i = 0; i < NITEMS(named); i++)
		if (!strcmp(action_name(a), named[i].what))
			return named[i].step;
	return STEP_OTHER;
}

/* The claims a CreateCleanupPod step's pod names in cleanup-claims (the controller checks them live). New. */
static json_t *claims_of(const struct action *a)
{
	const char *text = kube_obj_annotation(a->body, ANNOTATION_CLEANUP_CLAIMS);
	return text ? json_loads(text, 0, NULL) : NULL;
}

/* What a step writes in annotation key of the StatefulSet (NULL: removes it, or does not write it). */
static const char *writes(const struct action *a, const char *key)
{
	return kube_obj_annotation(a->body, key);
}

/* The finalizers a finalizer step sets. */
static const json_t *finalizers_set(const struct action *a)
{
	return json_object_get(json_object_get(a->body, "metadata"), "finalizers");
}

/* A cleanup template as users write it: labels and annotations of its own, a volume of its own, both claims mounted. */
static const char TEMPLATE[] =
	"{\"metadata\": {\"labels\": {\"app\": \"web-cleanup\", \"team\": \"storage\"},"
	" \"annotations\": {\"example.com/note\": \"keep me\"}},"
	" \"spec\": {\"serviceAccountName\": \"cleaner\", \"volumes\": [{\"name\": \"scratch\", \"emptyDir\": {}}],"
	" \"containers\": [{\"name\": \"cleanup\", \"image\": \"registry.example/cleanup:1\","
	" \"volumeMounts\": [{\"name\": \"data\", \"mountPath\": \"/data\"},"
	" {\"name\": \"wal\", \"mountPath\": \"/wal\"},"
	" {\"name\": \"scratch\", \"mountPath\": \"/tmp\"}]}]}}";

/* The example of the jboss statefulset-scaledown-controller README. */
static const char JBOSS_TEMPLATE[] =
	"{\"metadata\":{\"labels\":{\"app\":\"datastore-cleanup\"}},"
	"\"spec\":{\"containers\":[{\"name\":\"cleanup\",\"image\":\"my-cleanup-container\","
	"\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/var/data\"}]}]}}";

static bool contains_nocase(const char *s, const char *needle)
{
	return s && strcasestr(s, needle);
}

/* ---- reading and changing objects ---- */

/* The object named name in namespace NS (objects of other namespaces are never found). */
static json_t *find(const json_t *list, const char *name)
{
	return sim_find_in(list, NS, name);
}

static const char *phase_of(const json_t *pod)
{
	return kube_obj_str(pod, "status.phase");
}

static bool terminal(const json_t *pod)
{
	return sim_streq(phase_of(pod), "Succeeded") || sim_streq(phase_of(pod), "Failed");
}

static bool has_controller(const json_t *pod)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(sim_meta(pod), "ownerReferences"), i, ref) {
		if (json_is_true(json_object_get(ref, "controller")))
			return true;
	}
	return false;
}

/* Per-ordinal counters kept in a JSON object keyed by the ordinal. */
static int map_get(const json_t *m, int ord)
{
	char k[16];
	snprintf(k, sizeof(k), "%d", ord);
	return (int)json_integer_value(json_object_get(m, k));
}

static void map_set(json_t *m, int ord, int v)
{
	char k[16];
	snprintf(k, sizeof(k), "%d", ord);
	if (v)
		json_object_set_new(m, k, json_integer(v));
	else
		json_object_del(m, k);
}

/* ---- the world ---- */

struct setup {
	const char *name;          /* the StatefulSet; "web" when NULL */
	int replicas;
	int start;                 /* spec.ordinals.start; 0: not set */
	bool parallel;             /* podManagementPolicy Parallel */
	const char *templates[3];  /* claim templates; {"data", "wal"} when the first is NULL */
	const char *pod_template;  /* TEMPLATE when NULL; "" for no annotation */
	bool legacy_key;           /* the template under statefulsets.kubernetes.io/ */
	const char *annotations[3][2];
};

struct world {
	json_t *sts; /* NULL once it is gone */
	json_t *pvcs, *pods;
	json_t *templates; /* the claim template names (kept after the StatefulSet goes) */
	char name[64], uid[96];
	long long now_ms, start_ms;
	int serial;
	/* the test's script */
	json_t *fail_first;     /* ordinal -> how many of its cleanup pods fail */
	const char *fail_message; /* what a failing cleanup pod's termination message says; NULL: FAIL_MESSAGE */
	bool hang;              /* cleanup pods run until stopped */
	bool hold_terminating;  /* deleted pods stay terminating */
	bool double_apply;      /* every step performed twice: a crash before the result is seen */
	long long max_wait_ms;  /* the clock moves at most this much per wait; 0: as requested */
	struct action a; /* the step last planned */
	/* what was seen */
	struct sim_trace trace;
	int iterations, conflicts, max_cleanup_pods;
	json_t *history;    /* every step planned and performed: {t, step, object, type, reason, message} */
	json_t *counts;     /* metric family -> n */
	json_t *created;    /* the ordinals of the cleanup pods created, in order */
	json_t *attempts;   /* ordinal -> cleanup pods created */
	json_t *failures;   /* ordinal -> cleanup pods that ended without success */
	json_t *waiting;    /* ordinal -> 1: failed, a retry is due */
	json_t *pod_attempt; /* pod UID -> its attempt, as the simulator counts */
	json_t *stopped;    /* the StatefulSet's pods stopped, in order */
	json_t *deleted;    /* the claims deleted, in order */
	struct sim_steps steps;
};

/* Adds to the steps so far, formatted like printf. */
#define trace(w, ...) sim_trace_add(&(w)->trace, __VA_ARGS__)
/* Fails the test, printing every step so far. */
#define world_fail(w, ...) sim_fail((w)->trace.text, __VA_ARGS__)

static char *next_uid(struct world *w, const char *prefix)
{
	return xasprintf("%s-%d", prefix, ++w->serial);
}

static void world_release(struct world *w)
{
	action_release(&w->a);
	json_decref(w->sts);
	json_decref(w->pvcs);
	json_decref(w->pods);
	json_decref(w->templates);
	json_decref(w->fail_first);
	json_decref(w->history);
	json_decref(w->counts);
	json_decref(w->created);
	json_decref(w->attempts);
	json_decref(w->failures);
	json_decref(w->waiting);
	json_decref(w->pod_attempt);
	json_decref(w->stopped);
	json_decref(w->deleted);
	sim_trace_release(&w->trace);
	sim_steps_release(&w->steps);
	memset(w, 0, sizeof(*w));
}

static int fixture_setup(void **state)
{
	*state = xcalloc(1, sizeof(struct world));
	return 0;
}

static int fixture_teardown(void **state)
{
	world_release(*state);
	free(*state);
	return 0;
}

static int spec_int(const struct world *w, const char *field)
{
	return (int)json_integer_value(json_object_get(json_object_get(w->sts, "spec"), field));
}

static int ordinals_start(const struct world *w)
{
	return (int)json_integer_value(
		json_object_get(json_object_get(json_object_get(w->sts, "spec"), "ordinals"), "start"));
}

static bool deleting(const struct world *w)
{
	return w->sts && sim_terminating(w->sts);
}

/* Outside [start, start + replicas), or every ordinal while the StatefulSet is being deleted. */
static bool out_of_range(const struct world *w, int ord)
{
	if (!w->sts || deleting(w))
		return true;
	int start = ordinals_start(w);
	return ord < start || ord >= start + spec_int(w, "replicas");
}

static bool parallel(const struct world *w)
{
	return sim_streq(kube_obj_str(w->sts, "spec.podManagementPolicy"), "Parallel");
}

static int pod_ordinal(const struct world *w, const char *pod)
{
	char prefix[80];
	snprintf(prefix, sizeof(prefix), "%s-", w->name);
	return (int)sim_number_after(pod, prefix, 6);
}

/*
 * The ordinal of a claim <template>-<sts>-<ordinal> of namespace NS that
 * carries the selector's matchLabels (app=<sts>), as the StatefulSet
 * controller labels the claims it makes; -1 for another claim, one made by
 * hand under that name included.
 */
static int claim_ordinal(const struct world *w, const json_t *pvc)
{
	if (!sim_streq(kube_obj_str(pvc, "metadata.namespace"), NS) || !sim_streq(sim_label(pvc, "app"), w->name))
		return -1;
	size_t i;
	json_t *t;
	json_array_foreach(w->templates, i, t) {
		char prefix[160];
		snprintf(prefix, sizeof(prefix), "%s-%s-", json_string_value(t), w->name);
		int ord = (int)sim_number_after(kube_obj_str(pvc, "metadata.name"), prefix, 6);
		if (ord >= 0)
			return ord;
	}
	return -1;
}

static bool is_cleanup(const struct world *w, const json_t *pod)
{
	return sim_streq(sim_label(pod, LABEL_CLEANUP_FOR), w->name);
}

static int cleanup_pods(const struct world *w)
{
	int n = 0;
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		n += is_cleanup(w, pod) && sim_streq(kube_obj_str(pod, "metadata.namespace"), NS);
	}
	return n;
}

/* A claim set with a claim not being deleted. */
static bool set_live(const struct world *w, int ord)
{
	size_t i;
	json_t *pvc;
	json_array_foreach(w->pvcs, i, pvc) {
		if (claim_ordinal(w, pvc) == ord && !sim_terminating(pvc))
			return true;
	}
	return false;
}

/* What the StatefulSet asks for, read the way the planner reads it. Returns false when refused or not asked. */
static bool read_request(const struct world *w, struct scaledown_request *req)
{
	struct refusal r;
	memset(req, 0, sizeof(*req));
	bool ok = w->sts && scaledown_request_parse(w->sts, req, &r) == 0 && req->enabled;
	refusal_release(&r);
	if (!ok) {
		scaledown_request_release(req);
		req->timeout_ms = SCALEDOWN_TIMEOUT_DEFAULT_MS;
		req->max_attempts = SCALEDOWN_MAX_ATTEMPTS_DEFAULT;
		req->parallelism = INT_MAX;
	}
	return ok;
}

static int max_attempts(const struct world *w)
{
	struct scaledown_request req;
	read_request(w, &req);
	int n = req.max_attempts;
	scaledown_request_release(&req);
	return n;
}

static bool given_up(const struct world *w, int ord)
{
	return map_get(w->failures, ord) >= max_attempts(w);
}

/* A pod that is neither the StatefulSet's nor a cleanup pod holds the name of ordinal ord. */
static bool held_by_foreign_pod(const struct world *w, int ord)
{
	char name[128];
	snprintf(name, sizeof(name), "%s-%d", w->name, ord);
	const json_t *pod = find(w->pods, name);
	return pod && !is_cleanup(w, pod) && !sim_owned_by(pod, w->uid, true);
}

/*
 * An ordinal above ord whose claim set still waits for cleanup:
 * OrderedReady must finish it first. While the StatefulSet is being
 * deleted, a set whose name a foreign pod holds is left alone (it would
 * hold the deletion forever), so it does not count.
 */
static int higher_pending(const struct world *w, int ord)
{
	size_t i;
	json_t *pvc;
	json_array_foreach(w->pvcs, i, pvc) {
		int k = claim_ordinal(w, pvc);
		if (k > ord && out_of_range(w, k) && set_live(w, k) && !given_up(w, k) &&
		    !(deleting(w) && held_by_foreign_pod(w, k)))
			return k;
	}
	return -1;
}

/* ---- builders ---- */

static json_t *claim_obj(const char *name, const char *ns, const char *uid, const char *app)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[s], s:{s:{s:s}}}, s:{s:s}}", "apiVersion",
			 "v1", "kind", "PersistentVolumeClaim", "metadata", "name", name, "namespace", ns, "uid", uid,
			 "labels", "app", app, "spec", "accessModes", "ReadWriteOnce", "resources", "requests",
			 "storage", "1Gi", "status", "phase", "Bound");
}

/* The StatefulSet's pod of ordinal ord, mounting its claims. */
static json_t *own_pod(struct world *w, int ord, const char *uid)
{
	char name[128], ts[32];
	snprintf(name, sizeof(name), "%s-%d", w->name, ord);
	sim_rfc3339(w->now_ms, ts, sizeof(ts));
	json_t *vols = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(w->templates, i, t) {
		char claim[160];
		snprintf(claim, sizeof(claim), "%s-%s", json_string_value(t), name);
		json_array_append_new(vols, json_pack("{s:s, s:{s:s}}", "name", json_string_value(t),
						      "persistentVolumeClaim", "claimName", claim));
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
			 " s:{s:[{s:s, s:s}], s:o}, s:{s:s}}",
			 "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", NS, "uid", uid,
			 "creationTimestamp", ts, "labels", "app", w->name, "statefulset.kubernetes.io/pod-name", name,
			 "ownerReferences", "apiVersion", "apps/v1", "kind", "StatefulSet", "name", w->name, "uid",
			 w->uid, "controller", 1, "blockOwnerDeletion", 1, "spec", "containers", "name", "main",
			 "image", "nginx", "volumes", vols, "status", "phase", "Running");
}

/* A pod of someone else's (labels app=tools), mounting the claims given (NULL-terminated). */
static json_t *foreign_pod(struct world *w, const char *name, const char *const *claims)
{
	char ts[32];
	sim_rfc3339(w->now_ms, ts, sizeof(ts));
	json_t *vols = json_array();
	for (int i = 0; claims && claims[i]; i++)
		json_array_append_new(vols, json_pack("{s:s, s:{s:s}}", "name", claims[i], "persistentVolumeClaim",
						      "claimName", claims[i]));
	char *uid = xasprintf("uid-%s", name);
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:[{s:s, s:s}], s:o}, s:{s:s}}",
			      "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", NS, "uid", uid,
			      "creationTimestamp", ts, "labels", "app", "tools", "spec", "containers", "name", "tools",
			      "image", "busybox", "volumes", vols, "status", "phase", "Running");
	free(uid);
	return p;
}

static json_t *sts_obj(const struct setup *s, const char *name, const json_t *templates)
{
	json_t *vcts = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(templates, i, t) {
		json_array_append_new(vcts, json_pack("{s:{s:s}, s:{s:[s], s:{s:{s:s}}}}", "metadata", "name",
						      json_string_value(t), "spec", "accessModes", "ReadWriteOnce",
						      "resources", "requests", "storage", "1Gi"));
	}
	char uid[96];
	snprintf(uid, sizeof(uid), "uid-sts-%s", name);
	json_t *sts = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{}, s:[]},"
				" s:{s:i, s:s, s:s, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}}, s:o}}",
				"apiVersion", "apps/v1", "kind", "StatefulSet", "metadata", "name", name, "namespace",
				NS, "uid", uid, "resourceVersion", "1", "annotations", "finalizers", "spec", "replicas",
				s->replicas, "podManagementPolicy", s->parallel ? "Parallel" : "OrderedReady",
				"serviceName", name, "selector", "matchLabels", "app", name, "template", "metadata",
				"labels", "app", name, "spec", "containers", "name", "main", "image", "nginx",
				"volumeClaimTemplates", vcts);
	if (s->start)
		json_object_set_new(json_object_get(sts, "spec"), "ordinals", json_pack("{s:i}", "start", s->start));
	const char *tmpl = s->pod_template ? s->pod_template : TEMPLATE;
	if (*tmpl)
		sim_annotate(sts, s->legacy_key ? ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY : ANNOTATION_SCALEDOWN_TEMPLATE,
			 tmpl);
	for (size_t k = 0; k < NITEMS(s->annotations) && s->annotations[k][0]; k++)
		sim_annotate(sts, s->annotations[k][0], s->annotations[k][1]);
	return sts;
}

static void add_claim(struct world *w, const char *name, const char *ns, const char *uid)
{
	json_t *pvc = claim_obj(name, ns, uid, w->name);
	json_object_set_new(sim_meta(pvc), "resourceVersion", json_string("1"));
	json_array_append_new(w->pvcs, pvc);
}

/* The claim set of ordinal ord, named and with UIDs the tests know: uid-<claim>. */
static void add_claim_set(struct world *w, int ord)
{
	size_t i;
	json_t *t;
	json_array_foreach(w->templates, i, t) {
		char claim[160], uid[200];
		snprintf(claim, sizeof(claim), "%s-%s-%d", json_string_value(t), w->name, ord);
		snprintf(uid, sizeof(uid), "uid-%s", claim);
		add_claim(w, claim, NS, uid);
	}
}

/*
 * A StatefulSet at rest: replicas pods, each with its claim set, named
 * and numbered from s->start; and claims that are not its: of another
 * namespace, of a StatefulSet <name>-2, of no template, a misspelt ordinal.
 */
static void world_init(struct world *w, const struct setup *s)
{
	world_release(w);
	snprintf(w->name, sizeof(w->name), "%s", s->name ? s->name : "web");
	snprintf(w->uid, sizeof(w->uid), "uid-sts-%s", w->name);
	w->templates = json_array();
	for (size_t i = 0; i < NITEMS(s->templates) && s->templates[i]; i++)
		json_array_append_new(w->templates, json_string(s->templates[i]));
	if (!json_array_size(w->templates)) {
		json_array_append_new(w->templates, json_string("data"));
		json_array_append_new(w->templates, json_string("wal"));
	}
	w->sts = sts_obj(s, w->name, w->templates);
	w->pvcs = json_array();
	w->pods = json_array();
	w->fail_first = json_object();
	w->history = json_array();
	w->counts = json_object();
	w->created = json_array();
	w->attempts = json_object();
	w->failures = json_object();
	w->waiting = json_object();
	w->pod_attempt = json_object();
	w->stopped = json_array();
	w->deleted = json_array();
	w->start_ms = w->now_ms = rfc3339_seconds(START) * 1000;
	for (int k = s->start; k < s->start + s->replicas; k++) {
		char uid[96];
		add_claim_set(w, k);
		snprintf(uid, sizeof(uid), "uid-%s-%d", w->name, k);
		json_array_append_new(w->pods, own_pod(w, k, uid));
	}
	const char *t0 = json_string_value(json_array_get(w->templates, 0));
	int last = s->start + s->replicas - 1;
	char decoy[200];
	snprintf(decoy, sizeof(decoy), "%s-%s-%d", t0, w->name, last);
	add_claim(w, decoy, "other", "uid-decoy-other-namespace");
	snprintf(decoy, sizeof(decoy), "%s-%s-%d-0", t0, w->name, last);
	add_claim(w, decoy, NS, "uid-decoy-other-sts");
	snprintf(decoy, sizeof(decoy), "other-%s-%d", w->name, last);
	add_claim(w, decoy, NS, "uid-decoy-no-template");
	snprintf(decoy, sizeof(decoy), "%s-%s-0%d", t0, w->name, last);
	add_claim(w, decoy, NS, "uid-decoy-misspelt");
}

static const char *const DECOY_UIDS[] = {"uid-decoy-other-namespace", "uid-decoy-other-sts", "uid-decoy-no-template",
					 "uid-decoy-misspelt"};

static void bump_version(struct world *w)
{
	char rv[32];
	snprintf(rv, sizeof(rv), "%d", atoi(sim_or_dash(kube_obj_str(w->sts, "metadata.resourceVersion"))) + 1);
	json_object_set_new(sim_meta(w->sts), "resourceVersion", json_string(rv));
}

static void scale(struct world *w, int replicas)
{
	json_object_set_new(json_object_get(w->sts, "spec"), "replicas", json_integer(replicas));
	bump_version(w);
	trace(w, "    (scaled to %d)\n", replicas);
}

static void sts_annotate(struct world *w, const char *key, const char *value)
{
	sim_annotate(w->sts, key, value);
	bump_version(w);
	trace(w, "    (annotation %s %s)\n", key, value ? "set" : "removed");
}

static void set_finalizers(struct world *w, json_t *list)
{
	json_object_set_new(sim_meta(w->sts), "finalizers", list);
	bump_version(w);
}

static void mark_deleted(struct world *w)
{
	sim_mark_deleted(w->sts, w->now_ms);
	json_object_set_new(sim_meta(w->sts), "deletionGracePeriodSeconds", json_integer(0));
	bump_version(w);
	trace(w, "    (StatefulSet deleted)\n");
}

static const json_t *finalizers(const struct world *w)
{
	return json_object_get(sim_meta(w->sts), "finalizers");
}

static bool has_finalizer(const struct world *w, const char *f)
{
	return sim_in_array(finalizers(w), f);
}

static void set_pod_status(json_t *pod, const char *phase, const char *message)
{
	json_object_set_new(pod, "status",
			    json_pack("{s:s, s:[{s:s, s:{s:{s:i, s:s, s:s}}}]}", "phase", phase, "containerStatuses",
				      "name", "cleanup", "state", "terminated", "exitCode", sim_streq(phase, "Failed"),
				      "reason", sim_streq(phase, "Failed") ? "Error" : "Completed", "message", message));
}

/* The containers of pod ended at ms (state.terminated.finishedAt), as the kubelet reports it. */
static void set_finished_at(json_t *pod, long long ms)
{
	char ts[32];
	sim_rfc3339(ms, ts, sizeof(ts));
	size_t i;
	json_t *cs;
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
		json_object_set_new(json_object_get(json_object_get(cs, "state"), "terminated"), "finishedAt",
				    json_string(ts));
	}
}

/* When the deletion of pod was asked for: its deletionTimestamp less its grace period; -1 when not deleted. */
static long long deletion_asked_ms(const json_t *pod)
{
	long long deadline = sim_time_ms(kube_obj_str(pod, "metadata.deletionTimestamp"));
	if (deadline < 0)
		return -1;
	return deadline - json_integer_value(json_object_get(sim_meta(pod), "deletionGracePeriodSeconds")) * 1000;
}

/*
 * The pod ended Succeeded on its own: it is not being deleted, or every
 * container had finished before its deletion was asked for. A cleanup
 * deleted while it ran gets SIGTERM and may exit 0 half-way: that ends
 * Succeeded too, and is no success.
 */
static bool succeeded_on_its_own(const json_t *pod)
{
	if (!sim_streq(phase_of(pod), "Succeeded"))
		return false;
	if (!sim_terminating(pod))
		return true;
	long long asked = deletion_asked_ms(pod);
	size_t i;
	json_t *cs;
	size_t n = 0;
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs) {
		long long f = sim_time_ms(kube_obj_str(cs, "state.terminated.finishedAt"));
		if (f < 0 || f >= asked)
			return false;
		n++;
	}
	return n > 0;
}

/* A graceful delete as the API server records it: deletionTimestamp is when the grace ends. */
static void delete_gracefully(json_t *pod, long long now_ms, int grace_s)
{
	sim_mark_deleted(pod, now_ms + grace_s * 1000LL);
	json_object_set_new(sim_meta(pod), "deletionGracePeriodSeconds", json_integer(grace_s));
}

/* ---- the controllers (they work while the planner waits) ---- */

/* The kubelet: deleted pods go; a cleanup pod starts once its claims are there, then ends as the script says. */
static void kubelet(struct world *w)
{
	for (size_t i = 0; i < json_array_size(w->pods);) {
		json_t *pod = json_array_get(w->pods, i);
		const char *name = kube_obj_str(pod, "metadata.name");
		if (sim_terminating(pod)) {
			if (!w->hold_terminating) {
				trace(w, "      ~ pod %s is gone\n", name);
				json_array_remove(w->pods, i);
				continue;
			}
			i++;
			continue;
		}
		i++;
		if (!is_cleanup(w, pod))
			continue;
		if (sim_streq(phase_of(pod), "Pending")) {
			if (sim_claims_there(w->pvcs, NS, pod)) {
				json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Running"));
				trace(w, "      ~ cleanup pod %s running\n", name);
			}
		} else if (sim_streq(phase_of(pod), "Running") && !w->hang) {
			int attempt = (int)json_integer_value(
				json_object_get(w->pod_attempt, kube_obj_str(pod, "metadata.uid")));
			bool fail = attempt <= map_get(w->fail_first, pod_ordinal(w, name));
			set_pod_status(pod, fail ? "Failed" : "Succeeded",
				       fail ? (w->fail_message ? w->fail_message : FAIL_MESSAGE) : "handed off");
			set_finished_at(pod, w->now_ms);
			trace(w, "      ~ cleanup pod %s %s\n", name, fail ? "failed" : "succeeded");
		}
	}
}

/* The PVC protection controller: a deleted claim goes once no running pod mounts it. */
static void pvc_protection(struct world *w)
{
	sim_pvc_protection(w->pvcs, NS, w->pods, &w->trace);
}

/*
 * The StatefulSet controller: in-range pods (and their missing claims)
 * where the name is free; out-of-range pods deleted, all at once for
 * Parallel, highest first and one at a time for OrderedReady. Nothing
 * while the StatefulSet is being deleted.
 */
static void statefulset_controller(struct world *w)
{
	if (!w->sts || deleting(w))
		return;
	const json_t *selector = json_object_get(json_object_get(w->sts, "spec"), "selector");
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		if (!has_controller(pod) && label_selector_matches(selector, json_object_get(sim_meta(pod), "labels")))
			world_fail(w, "the StatefulSet would adopt pod %s (and delete it)",
				   kube_obj_str(pod, "metadata.name"));
	}
	int start = ordinals_start(w), replicas = spec_int(w, "replicas");
	for (int k = start; k < start + replicas; k++) {
		char name[128];
		snprintf(name, sizeof(name), "%s-%d", w->name, k);
		if (find(w->pods, name))
			continue;
		size_t t;
		json_t *tmpl;
		json_array_foreach(w->templates, t, tmpl) {
			char claim[200];
			snprintf(claim, sizeof(claim), "%s-%s", json_string_value(tmpl), name);
			if (!find(w->pvcs, claim)) {
				char *uid = next_uid(w, "uid-new-claim");
				add_claim(w, claim, NS, uid);
				trace(w, "      ~ claim %s created (empty)\n", claim);
				free(uid);
			}
		}
		char *uid = next_uid(w, "uid-new-pod");
		json_array_append_new(w->pods, own_pod(w, k, uid));
		trace(w, "      ~ pod %s created\n", name);
		free(uid);
	}
	json_t *highest = NULL;
	int highest_ord = -1;
	bool one_terminating = false;
	json_array_foreach(w->pods, i, pod) {
		if (!sim_owned_by(pod, w->uid, true))
			continue;
		int k = pod_ordinal(w, kube_obj_str(pod, "metadata.name"));
		if (sim_terminating(pod)) {
			one_terminating = true;
			continue;
		}
		if (k >= start && k < start + replicas)
			continue;
		if (parallel(w)) {
			sim_mark_deleted(pod, w->now_ms);
			trace(w, "      ~ pod %s deleted (scale-down)\n", kube_obj_str(pod, "metadata.name"));
		} else if (k > highest_ord) {
			highest = pod;
			highest_ord = k;
		}
	}
	if (highest && !one_terminating) {
		sim_mark_deleted(highest, w->now_ms);
		trace(w, "      ~ pod %s deleted (scale-down)\n", kube_obj_str(highest, "metadata.name"));
	}
}

/* How many cleanup pods may be there at once, a set waiting to retry counting as one. */
static void check_limits(struct world *w)
{
	if (!w->sts)
		return;
	int pods = cleanup_pods(w);
	if (pods > w->max_cleanup_pods)
		w->max_cleanup_pods = pods;
	int waiting = 0;
	const char *k;
	json_t *v;
	json_object_foreach(w->waiting, k, v) {
		char pod[128];
		snprintf(pod, sizeof(pod), "%s-%s", w->name, k);
		const json_t *p = find(w->pods, pod);
		waiting += out_of_range(w, atoi(k)) && !(p && is_cleanup(w, p));
	}
	struct scaledown_request req;
	bool asked = read_request(w, &req);
	int limit = parallel(w) ? req.parallelism : 1;
	scaledown_request_release(&req);
	if (asked && pods + waiting > limit)
		world_fail(w, "%d cleanup pod(s) and %d set(s) waiting to retry; at most %d at once (%s)", pods,
			   waiting, limit, parallel(w) ? "Parallel" : "OrderedReady");
}

static void tick(struct world *w)
{
	kubelet(w);
	pvc_protection(w);
	statefulset_controller(w);
	check_limits(w);
}

/* ---- the API server: performing a step ---- */

static void check_finalizer_body(struct world *w, const json_t *body, bool ours)
{
	if (!json_is_array(body))
		world_fail(w, "finalizers body is not an array");
	json_t *want = json_array();
	size_t i;
	json_t *f;
	json_array_foreach(finalizers(w), i, f) {
		if (!sim_streq(json_string_value(f), FINALIZER_SCALEDOWN))
			json_array_append(want, f);
	}
	if (ours)
		json_array_append_new(want, json_string(FINALIZER_SCALEDOWN));
	bool same = json_array_size(want) == json_array_size(body);
	json_array_foreach(want, i, f) {
		same &= sim_in_array(body, json_string_value(f));
	}
	char *have = json_dumps(body, JSON_COMPACT), *wanted = json_dumps(want, JSON_COMPACT);
	json_decref(want);
	if (!same) {
		trace(w, "      finalizers %s, want %s\n", have, wanted);
		free(have);
		free(wanted);
		world_fail(w, "%s finalizer: the body does not keep the others", ours ? "adding the" : "removing the");
	}
	free(have);
	free(wanted);
}

/* The StatefulSet goes: the garbage collector orphans (orphan finalizer) or deletes its dependents. */
static void sts_gone(struct world *w)
{
	bool orphan = sim_in_array(finalizers(w), "orphan");
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		if (is_cleanup(w, pod) && !orphan)
			world_fail(w, "the finalizer went while cleanup pod %s is there",
				   kube_obj_str(pod, "metadata.name"));
	}
	for (size_t k = 0; k < json_array_size(w->pods);) {
		pod = json_array_get(w->pods, k);
		json_t *refs = json_object_get(sim_meta(pod), "ownerReferences");
		bool owned = false;
		size_t r;
		json_t *ref;
		json_array_foreach(refs, r, ref) {
			owned |= sim_streq(kube_obj_str(ref, "uid"), w->uid);
		}
		if (owned && orphan) {
			json_object_set_new(sim_meta(pod), "ownerReferences", json_array());
		} else if (owned) {
			trace(w, "      ~ pod %s collected\n", kube_obj_str(pod, "metadata.name"));
			json_array_remove(w->pods, k);
			continue;
		}
		k++;
	}
	/*
	 * Claims: whenDeleted Delete made the StatefulSet their owner. Orphaned,
	 * the reference comes off; otherwise a claim no other owner holds is
	 * collected (any other owner counts as alive).
	 */
	json_t *pvc;
	json_array_foreach(w->pvcs, i, pvc) {
		json_t *rest = json_array();
		size_t r;
		json_t *ref;
		json_array_foreach(json_object_get(sim_meta(pvc), "ownerReferences"), r, ref) {
			if (!sim_streq(kube_obj_str(ref, "uid"), w->uid))
				json_array_append(rest, ref);
		}
		bool owned = sim_owned_by(pvc, w->uid, false);
		if (owned && orphan) {
			json_object_set(sim_meta(pvc), "ownerReferences", rest);
		} else if (owned && !json_array_size(rest) && !sim_terminating(pvc)) {
			trace(w, "      ~ claim %s collected\n", kube_obj_str(pvc, "metadata.name"));
			sim_mark_deleted(pvc, w->now_ms);
		}
		json_decref(rest);
	}
	pvc_protection(w);
	json_decref(w->sts);
	w->sts = NULL;
	trace(w, "      ~ the StatefulSet is gone\n");
}

static void set_finalizers_step(struct world *w, const struct action *a, bool add)
{
	if (!w->sts) {
		trace(w, "      404\n");
		return;
	}
	if (add && deleting(w))
		world_fail(w, "ADD_FINALIZER on a StatefulSet being deleted (the API server forbids it)");
	check_finalizer_body(w, finalizers_set(a), add);
	if (json_equal(finalizers(w), finalizers_set(a)))
		return;
	set_finalizers(w, json_deep_copy(finalizers_set(a)));
	if (!deleting(w))
		return;
	/* The garbage collector's own finalizer: it orphans the dependents, then lets go. */
	json_t *rest = json_array();
	size_t i;
	json_t *f;
	json_array_foreach(finalizers(w), i, f) {
		if (!sim_streq(json_string_value(f), "orphan"))
			json_array_append(rest, f);
	}
	if (!json_array_size(rest))
		sts_gone(w);
	json_decref(rest);
}

/* The checks a cleanup pod body must pass when it is created. */
static void check_cleanup_pod(struct world *w, const struct action *a, int ord)
{
	const json_t *body = a->body;
	const char *name = kube_obj_str(body, "metadata.name");
	const char *ns = kube_obj_str(body, "metadata.namespace");
	if (!sim_streq(name, a->name) || ord < 0 || (ns && strcmp(ns, NS)))
		world_fail(w, "CREATE_POD %s: body names %s/%s", a->name, sim_or_dash(ns), sim_or_dash(name));
	if (!out_of_range(w, ord))
		world_fail(w, "cleanup pod %s for an ordinal in range", name);
	if (sim_streq(sim_annotation(w->sts, ANNOTATION_IGNORE), "true"))
		world_fail(w, "cleanup pod %s created while the StatefulSet has %s: \"true\"", name, ANNOTATION_IGNORE);
	if (!sim_streq(sim_label(body, LABEL_CLEANUP_FOR), w->name))
		world_fail(w, "cleanup pod %s without label %s=%s", name, LABEL_CLEANUP_FOR, w->name);
	char want[32];
	snprintf(want, sizeof(want), "%d", ord);
	if (!sim_streq(sim_annotation(body, ANNOTATION_CLEANUP_ORDINAL), want))
		world_fail(w, "cleanup pod %s: %s is %s", name, ANNOTATION_CLEANUP_ORDINAL,
			   sim_or_dash(sim_annotation(body, ANNOTATION_CLEANUP_ORDINAL)));
	snprintf(want, sizeof(want), "%d", map_get(w->attempts, ord) + 1);
	if (!sim_streq(sim_annotation(body, ANNOTATION_CLEANUP_ATTEMPT), want))
		world_fail(w, "cleanup pod %s: %s is %s, want %s", name, ANNOTATION_CLEANUP_ATTEMPT,
			   sim_or_dash(sim_annotation(body, ANNOTATION_CLEANUP_ATTEMPT)), want);
	/* The claims it mounts: exactly the live claims of its ordinal, by UID, named in the annotation. */
	json_t *named = sim_annotation(body, ANNOTATION_CLEANUP_CLAIMS) ?
				json_loads(sim_annotation(body, ANNOTATION_CLEANUP_CLAIMS), 0, NULL) :
				NULL;
	json_t *claims = claims_of(a);
	bool same = json_is_object(claims) && json_equal(named, claims);
	json_decref(named);
	if (!same)
		world_fail(w, "cleanup pod %s: annotation %s is %s, the step's claims differ", name,
			   ANNOTATION_CLEANUP_CLAIMS, sim_or_dash(sim_annotation(body, ANNOTATION_CLEANUP_CLAIMS)));
	const char *claim;
	json_t *uid;
	json_object_foreach(claims, claim, uid) {
		const json_t *pvc = find(w->pvcs, claim);
		if (!pvc || sim_terminating(pvc) || !sim_streq(kube_obj_str(pvc, "metadata.uid"), json_string_value(uid)) ||
		    claim_ordinal(w, pvc) != ord)
			world_fail(w, "cleanup pod %s mounts claim %s (uid %s), not a live claim of ordinal %d",
				   name, claim, sim_or_dash(json_string_value(uid)), ord);
	}
	size_t i;
	json_t *t;
	json_array_foreach(w->templates, i, t) {
		char cn[200];
		snprintf(cn, sizeof(cn), "%s-%s-%d", json_string_value(t), w->name, ord);
		const json_t *pvc = find(w->pvcs, cn);
		if (pvc && !sim_terminating(pvc) && claim_ordinal(w, pvc) == ord && !json_object_get(claims, cn))
			world_fail(w, "cleanup pod %s leaves out claim %s", name, cn);
		if (!json_object_get(claims, cn))
			continue;
		bool found = false;
		size_t k;
		json_t *v;
		json_array_foreach(json_object_get(json_object_get(body, "spec"), "volumes"), k, v) {
			found |= sim_streq(kube_obj_str(v, "name"), json_string_value(t)) &&
				 sim_streq(kube_obj_str(v, "persistentVolumeClaim.claimName"), cn);
		}
		if (!found)
			world_fail(w, "cleanup pod %s: no volume %s with claimName %s", name, json_string_value(t), cn);
	}
	/*
	 * Owned by the StatefulSet, so it goes with it; not controlled, so the
	 * StatefulSet does not count it. Not owned while the set is being deleted:
	 * a foreground deletion would have the garbage collector delete it mid-run.
	 */
	const json_t *refs = json_object_get(sim_meta(body), "ownerReferences");
	const json_t *ref = json_array_get(refs, 0);
	if (kube_obj_str(w->sts, "metadata.deletionTimestamp")) {
		if (json_array_size(refs) != 0)
			world_fail(w, "cleanup pod %s: owned by the StatefulSet being deleted", name);
	} else if (json_array_size(refs) != 1 || !sim_streq(kube_obj_str(ref, "kind"), "StatefulSet") ||
	    !sim_streq(kube_obj_str(ref, "apiVersion"), "apps/v1") || !sim_streq(kube_obj_str(ref, "name"), w->name) ||
	    !sim_streq(kube_obj_str(ref, "uid"), w->uid) || json_is_true(json_object_get(ref, "controller")))
		world_fail(w, "cleanup pod %s: ownerReferences are not one non-controller reference to the StatefulSet",
			   name);
	if (!sim_streq(kube_obj_str(body, "spec.restartPolicy"), "Never"))
		world_fail(w, "cleanup pod %s: restartPolicy %s", name,
			   sim_or_dash(kube_obj_str(body, "spec.restartPolicy")));
	/* What the user wrote comes through. */
	struct scaledown_request req;
	if (read_request(w, &req)) {
		const json_t *tm = json_object_get(req.pod_template, "metadata");
		const char *key;
		json_t *val;
		json_object_foreach(json_object_get(tm, "labels"), key, val) {
			if (!sim_streq(sim_label(body, key), json_string_value(val)))
				world_fail(w, "cleanup pod %s lost the template's label %s", name, key);
		}
		json_object_foreach(json_object_get(tm, "annotations"), key, val) {
			if (!sim_streq(sim_annotation(body, key), json_string_value(val)))
				world_fail(w, "cleanup pod %s lost the template's annotation %s", name, key);
		}
		const json_t *ts = json_object_get(req.pod_template, "spec");
		const json_t *bs = json_object_get(body, "spec");
		if (!json_equal(json_object_get(ts, "containers"), json_object_get(bs, "containers")))
			world_fail(w, "cleanup pod %s: containers differ from the template's", name);
		json_array_foreach(json_object_get(ts, "volumes"), i, t) {
			bool found = false;
			size_t k;
			json_t *v;
			json_array_foreach(json_object_get(bs, "volumes"), k, v) {
				found |= json_equal(v, t);
			}
			if (!found)
				world_fail(w, "cleanup pod %s lost the template's volume %s", name,
					   sim_or_dash(kube_obj_str(t, "name")));
		}
	}
	scaledown_request_release(&req);
	json_decref(claims);
	if (!parallel(w)) {
		int k = higher_pending(w, ord);
		if (k >= 0)
			world_fail(w, "OrderedReady: cleanup of ordinal %d while ordinal %d still waits", ord, k);
	}
}

static void create_pod(struct world *w, const struct action *a)
{
	if (!w->sts)
		world_fail(w, "CREATE_POD without a StatefulSet");
	int ord = pod_ordinal(w, a->name);
	if (find(w->pods, a->name)) {
		w->conflicts++;
		trace(w, "      409 pod %s exists\n", a->name);
		return;
	}
	check_cleanup_pod(w, a, ord);
	json_t *pod = json_deep_copy(a->body);
	char *uid = next_uid(w, "uid-cleanup");
	char ts[32];
	sim_rfc3339(w->now_ms, ts, sizeof(ts));
	json_object_set_new(sim_meta(pod), "uid", json_string(uid));
	json_object_set_new(sim_meta(pod), "namespace", json_string(NS));
	json_object_set_new(sim_meta(pod), "creationTimestamp", json_string(ts));
	json_object_set_new(pod, "status", json_pack("{s:s}", "phase", "Pending"));
	json_array_append_new(w->pods, pod);
	map_set(w->attempts, ord, map_get(w->attempts, ord) + 1);
	json_object_set_new(w->pod_attempt, uid, json_integer(map_get(w->attempts, ord)));
	map_set(w->waiting, ord, 0);
	json_array_append_new(w->created, json_integer(ord));
	free(uid);
}

/* The object named a->name, when its UID matches: NULL (a 404 or a 409, traced) otherwise. */
static json_t *by_uid(struct world *w, json_t *list, const struct action *a)
{
	json_t *obj = find(list, a->name);
	if (obj && !a->uid[0])
		world_fail(w, "%s %s without a UID precondition", action_name(a), a->name);
	return sim_precondition_met(obj, a->uid, &w->trace, &w->conflicts) ? obj : NULL;
}

/* A pod deleted: a terminal one goes at once, a running one terminates (30 s of grace; the kubelet removes it). */
static void delete_pod_object(struct world *w, json_t *pod)
{
	if (sim_terminating(pod))
		return;
	if (terminal(pod)) {
		sim_remove(w->pods, pod);
		return;
	}
	delete_gracefully(pod, w->now_ms, 30);
}

static void stop_pod(struct world *w, const struct action *a)
{
	json_t *pod = by_uid(w, w->pods, a);
	if (!pod)
		return;
	if (!deleting(w))
		world_fail(w, "STOP_POD %s while the StatefulSet is not being deleted", a->name);
	if (!sim_owned_by(pod, w->uid, true) || is_cleanup(w, pod))
		world_fail(w, "STOP_POD %s, which is not the StatefulSet's own pod", a->name);
	int ord = pod_ordinal(w, a->name);
	if (!parallel(w) && !sim_terminating(pod)) {
		int k = higher_pending(w, ord);
		if (k >= 0 || cleanup_pods(w))
			world_fail(w, "OrderedReady: %s stopped while ordinal %d still waits (%d cleanup pod(s))",
				   a->name, k, cleanup_pods(w));
	}
	if (!sim_terminating(pod))
		json_array_append_new(w->stopped, json_string(a->name));
	delete_pod_object(w, pod);
}

static void delete_pod(struct world *w, const struct action *a)
{
	json_t *pod = by_uid(w, w->pods, a);
	if (!pod)
		return;
	if (!is_cleanup(w, pod))
		world_fail(w, "DELETE_POD %s, which is not a cleanup pod", a->name);
	if (!terminal(pod) && !sim_terminating(pod)) {
		struct scaledown_request req;
		read_request(w, &req);
		long long created = rfc3339_seconds(kube_obj_str(pod, "metadata.creationTimestamp")) * 1000;
		long long timeout = req.timeout_ms;
		scaledown_request_release(&req);
		if (w->now_ms - created < timeout)
			world_fail(w, "cleanup pod %s deleted while %s, %llds into a %llds timeout", a->name,
				   sim_or_dash(phase_of(pod)), (w->now_ms - created) / 1000, timeout / 1000);
	}
	if (!sim_terminating(pod) && !sim_streq(phase_of(pod), "Succeeded")) {
		/* A failure (or a timeout): a retry follows unless the attempts are spent or the ordinal is back. */
		int ord = pod_ordinal(w, a->name);
		map_set(w->failures, ord, map_get(w->failures, ord) + 1);
		if (!given_up(w, ord) && out_of_range(w, ord))
			map_set(w->waiting, ord, 1);
	}
	delete_pod_object(w, pod);
}

/* The invariant: a claim goes only once a cleanup pod of its ordinal succeeded, naming it by UID. */
static void check_claim_deletion(struct world *w, const json_t *pvc, const struct action *a)
{
	const char *claim = a->name;
	int ord = claim_ordinal(w, pvc);
	if (ord < 0)
		world_fail(w, "claim %s deleted: it is not a claim of the StatefulSet", claim);
	char pod_name[128];
	snprintf(pod_name, sizeof(pod_name), "%s-%d", w->name, ord);
	const json_t *pod = find(w->pods, pod_name);
	if (!pod || !is_cleanup(w, pod) || !sim_streq(phase_of(pod), "Succeeded"))
		world_fail(w, "claim %s deleted without a Succeeded cleanup pod %s (%s)", claim, pod_name,
			   pod ? sim_or_dash(phase_of(pod)) : "none");
	if (!succeeded_on_its_own(pod))
		world_fail(w, "claim %s deleted after cleanup pod %s ended Succeeded on the SIGTERM of its deletion "
			   "(it was cut short)", claim, pod_name);
	json_t *named = json_loads(sim_or_dash(sim_annotation(pod, ANNOTATION_CLEANUP_CLAIMS)), 0, NULL);
	bool ok = sim_streq(json_string_value(json_object_get(named, claim)), a->uid);
	json_decref(named);
	if (!ok || !sim_mounts(pod, claim))
		world_fail(w, "claim %s (uid %s) deleted, but cleanup pod %s does not name and mount it with that uid",
			   claim, a->uid, pod_name);
}

static void delete_claim(struct world *w, const struct action *a)
{
	json_t *pvc = by_uid(w, w->pvcs, a);
	if (!pvc)
		return;
	check_claim_deletion(w, pvc, a);
	if (sim_terminating(pvc))
		return;
	json_array_append_new(w->deleted, json_string(a->name));
	sim_mark_deleted(pvc, w->now_ms);
	pvc_protection(w); /* goes at once unless a running pod mounts it */
}

static void set_state(struct world *w, const struct action *a)
{
	if (!w->sts)
		world_fail(w, "SET_STATE without a StatefulSet");
	json_t *before = json_deep_copy(json_object_get(sim_meta(w->sts), "annotations"));
	sim_annotate(w->sts, ANNOTATION_SCALEDOWN_STATE, writes(a, ANNOTATION_SCALEDOWN_STATE));
	sim_annotate(w->sts, ANNOTATION_SCALEDOWN_STATUS, writes(a, ANNOTATION_SCALEDOWN_STATUS));
	if (!json_equal(before, json_object_get(sim_meta(w->sts), "annotations")))
		bump_version(w);
	json_decref(before);
}

/*
 * Only on deletion, only a claim of the set, with the claim's
 * resourceVersion as precondition (409 when it moved), and only the set's
 * own owner reference comes off: the others stay, the claim stays.
 */
static void disown_claim(struct world *w, const struct action *a)
{
	json_t *pvc = find(w->pvcs, a->name);
	if (!pvc) {
		trace(w, "      404\n");
		return;
	}
	if (!w->sts || !sim_terminating(w->sts))
		world_fail(w, "claim %s disowned while the StatefulSet is not being deleted", a->name);
	if (claim_ordinal(w, pvc) < 0)
		world_fail(w, "DISOWN_CLAIM %s: not a claim of the StatefulSet", a->name);
	const char *rv = kube_obj_str(a->body, "metadata.resourceVersion");
	if (!rv)
		world_fail(w, "DISOWN_CLAIM %s without a resourceVersion precondition", a->name);
	if (!sim_streq(rv, kube_obj_str(pvc, "metadata.resourceVersion"))) {
		w->conflicts++;
		trace(w, "      409 resourceVersion\n");
		return;
	}
	const json_t *refs = json_object_get(json_object_get(a->body, "metadata"), "ownerReferences");
	if (!json_is_array(refs))
		world_fail(w, "DISOWN_CLAIM %s: the body has no ownerReferences list", a->name);
	json_t *others = json_array();
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(sim_meta(pvc), "ownerReferences"), i, ref) {
		if (!sim_streq(kube_obj_str(ref, "uid"), w->uid))
			json_array_append(others, ref);
	}
	bool same = json_equal(others, refs);
	json_decref(others);
	if (!same)
		world_fail(w, "DISOWN_CLAIM %s: the body's ownerReferences are not the claim's without the StatefulSet's",
			   a->name);
	json_object_set(sim_meta(pvc), "ownerReferences", (json_t *)refs);
	char next[32];
	snprintf(next, sizeof(next), "%d", atoi(rv) + 1);
	json_object_set_new(sim_meta(pvc), "resourceVersion", json_string(next));
}

/*
 * Each step is one call of the kind its name says, with the answers the
 * controller has always given: 404 and 409 mean the cluster moved on (a
 * StatefulSet's pod found gone by the live check before the delete is
 * done; a patch of the set is preconditioned on the resourceVersion the
 * planner saw).
 */
static void check_call(struct world *w, const struct action *a)
{
	static const struct {
		enum step step;
		enum action_verb verb;
		const struct kube_resource *resource;
		unsigned answers;
	} calls[] = {
		{STEP_ADD_FINALIZER, ACTION_PATCH, &KUBE_STATEFULSETS, ACTION_STALE_409},
		{STEP_REMOVE_FINALIZER, ACTION_PATCH, &KUBE_STATEFULSETS, ACTION_STALE_409},
		{STEP_SET_STATE, ACTION_PATCH, &KUBE_STATEFULSETS, ACTION_STALE_409},
		{STEP_CREATE_POD, ACTION_CREATE, &KUBE_PODS, ACTION_STALE_409},
		{STEP_STOP_POD, ACTION_DELETE, &KUBE_PODS, ACTION_STALE_404 | ACTION_STALE_409},
		{STEP_DELETE_POD, ACTION_DELETE, &KUBE_PODS, ACTION_STALE_404 | ACTION_STALE_409},
		{STEP_DELETE_CLAIM, ACTION_DELETE, &KUBE_PVCS, ACTION_STALE_404 | ACTION_STALE_409},
		{STEP_DISOWN_CLAIM, ACTION_PATCH, &KUBE_PVCS, ACTION_STALE_404 | ACTION_STALE_409},
	};
	for (size_t i = 0; i < NITEMS(calls); i++) {
		if (calls[i].step != step_of(a))
			continue;
		if (a->verb != calls[i].verb || a->resource != calls[i].resource || a->answers != calls[i].answers)
			world_fail(w, "%s %s: %s of %s answering %#x", action_name(a), a->name, action_verb_name(a->verb),
				   a->resource ? a->resource->plural : "-", a->answers);
		if (a->resource == &KUBE_STATEFULSETS &&
		    !sim_streq(kube_obj_str(a->body, "metadata.resourceVersion"),
			       kube_obj_str(w->sts, "metadata.resourceVersion")))
			world_fail(w, "%s without the StatefulSet's resourceVersion as precondition", action_name(a));
	}
}

static void apply(struct world *w, const struct action *a)
{
	switch (step_of(a)) {
	case STEP_ADD_FINALIZER:
		set_finalizers_step(w, a, true);
		break;
	case STEP_REMOVE_FINALIZER:
		set_finalizers_step(w, a, false);
		break;
	case STEP_CREATE_POD:
		create_pod(w, a);
		break;
	case STEP_STOP_POD:
		stop_pod(w, a);
		break;
	case STEP_DELETE_POD:
		delete_pod(w, a);
		break;
	case STEP_DELETE_CLAIM:
		delete_claim(w, a);
		break;
	case STEP_SET_STATE:
		set_state(w, a);
		break;
	case STEP_DISOWN_CLAIM:
		disown_claim(w, a);
		break;
	case STEP_NOTHING:
	case STEP_REFUSE:
	case STEP_WAIT:
		break;
	default:
		world_fail(w, "unknown step %s", action_name(a));
	}
	check_limits(w);
}

/* ---- running the planner against the world ---- */

/* Our own short names, so the tests do not depend on the log names. */
static const char *step_id(enum step s)
{
	switch (s) {
	case STEP_NOTHING:
		return "NOTHING";
	case STEP_REFUSE:
		return "REFUSE";
	case STEP_ADD_FINALIZER:
		return "ADD_FINALIZER";
	case STEP_REMOVE_FINALIZER:
		return "REMOVE_FINALIZER";
	case STEP_CREATE_POD:
		return "CREATE_POD";
	case STEP_STOP_POD:
		return "STOP_POD";
	case STEP_DELETE_POD:
		return "DELETE_POD";
	case STEP_DELETE_CLAIM:
		return "DELETE_CLAIM";
	case STEP_SET_STATE:
		return "SET_STATE";
	case STEP_DISOWN_CLAIM:
		return "DISOWN_CLAIM";
	case STEP_WAIT:
		return "WAIT";
	case STEP_OTHER:
		break;
	}
	return "?";
}

static bool resting(enum step s)
{
	return s == STEP_WAIT || s == STEP_NOTHING || s == STEP_REFUSE;
}

/* One line per step, enough to compare two steps. New string. */
static char *fingerprint(const struct action *a)
{
	char *body = a->body ? json_dumps(a->body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *f = xasprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%ld", step_id(step_of(a)), action_name(a),
			    a->name, a->uid, sim_or_dash(body),
			    sim_or_dash(a->event_type), sim_or_dash(a->event_reason), sim_or_dash(a->event_message),
			    sim_or_dash(a->counts[0].family), a->requeue_ms);
	free(body);
	return f;
}

static void plan_into(const struct world *w, struct action *a)
{
	json_t *pods = sim_cached_pods(w->pods);
	struct scaledown_inputs in = {w->sts, w->pvcs, pods, w->now_ms};
	scaledown_plan(&in, a);
	json_decref(pods);
}

/* Plans into w->a; the same inputs must give the same step. */
static void plan(struct world *w)
{
	action_release(&w->a);
	plan_into(w, &w->a);
	struct action again;
	plan_into(w, &again);
	sim_steps_note(&w->steps, &w->trace, fingerprint(&w->a), fingerprint(&again));
	action_release(&again);
	sim_check_event(&w->trace, w->a.event_type, w->a.event_reason, w->a.event_message);
}

static void trace_step(struct world *w)
{
	const struct action *a = &w->a;
	trace(w, "%3d t=%-8.3f %-16s %-14s", w->iterations, (double)(w->now_ms - w->start_ms) / 1000,
	      action_name(a), a->name);
	if (a->event_reason)
		trace(w, " %s %s: %s", sim_or_dash(a->event_type), a->event_reason, sim_or_dash(a->event_message));
	if (a->requeue_ms)
		trace(w, " (requeue %ld ms)", a->requeue_ms);
	if (step_of(a) == STEP_SET_STATE)
		trace(w, " status \"%s\"", sim_or_dash(writes(a, ANNOTATION_SCALEDOWN_STATUS)));
	trace(w, "\n");
}

/* Performs w->a as the reconciler does: its Event and count, then the step (twice when asked). */
static void perform(struct world *w)
{
	const struct action *a = &w->a;
	w->iterations++;
	trace_step(w);
	json_array_append_new(w->history,
			      json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:s?, s:I}", "t", (json_int_t)w->now_ms, "step",
					step_id(step_of(a)), "object", a->name, "type", a->event_type, "reason",
					a->event_reason, "message", a->event_message, "requeue",
					(json_int_t)a->requeue_ms));
	for (int i = 0; i < ACTION_MAX_COUNTS; i++)
		if (a->counts[i].family)
			sim_count(w->counts, a->counts[i].family);
	check_call(w, a);
	apply(w, a);
	if (w->double_apply && !resting(step_of(a)))
		apply(w, a);
}

/* Plans, performing first the status updates (SET_STATE without an Event) the planner asks for. */
static void plan_past_status(struct world *w)
{
	for (int i = 0; i < 5; i++) {
		plan(w);
		if (step_of(&w->a) != STEP_SET_STATE || w->a.event_reason)
			return;
		perform(w);
	}
	world_fail(w, "status updates without end");
}

/* The world as the API server holds it. New string. */
static char *world_dump(const struct world *w)
{
	const json_t *objs[] = {w->sts, w->pvcs, w->pods};
	return sim_dump(objs, NITEMS(objs));
}

typedef bool (*stop_fn)(const struct world *w, const void *arg);

enum run_end { RUN_SETTLED, RUN_GONE, RUN_STOPPED };

/*
 * Plans and performs steps until the StatefulSet is gone, the world rests
 * (the planner has nothing to do, no deadline, and the controllers change
 * nothing more), or stop says so (checked before each step is performed;
 * the step is left in w->a). While the planner waits or rests the
 * controllers work: when they change something, the planner hears of it a
 * second later (a watch event); when not, the clock moves on to its
 * requeue_ms (1 s without one). The controllers do nothing by the clock
 * alone, so nothing is missed by the jump.
 */
static enum run_end run(struct world *w, stop_fn stop, const void *arg)
{
	sim_steps_restart(&w->steps);
	for (int i = 0; i < MAX_STEPS; i++) {
		if (!w->sts)
			return RUN_GONE;
		plan(w);
		if (!resting(step_of(&w->a)) && sim_steps_repeated(&w->steps))
			world_fail(w, "step %s %s asked for again after it was performed", step_id(step_of(&w->a)),
				   w->a.name);
		if (stop && stop(w, arg))
			return RUN_STOPPED;
		perform(w);
		if (!resting(step_of(&w->a)))
			continue;
		char *before = world_dump(w);
		tick(w);
		char *after = world_dump(w);
		bool changed = strcmp(before, after);
		free(before);
		free(after);
		long long dt = w->a.requeue_ms > 0 ? w->a.requeue_ms : 1000;
		if (changed && dt > 1000)
			dt = 1000;
		if (w->max_wait_ms && dt > w->max_wait_ms)
			dt = w->max_wait_ms;
		w->now_ms += dt;
		if (step_of(&w->a) != STEP_WAIT && !w->a.requeue_ms && !changed)
			return RUN_SETTLED;
	}
	world_fail(w, "no end after %d steps", MAX_STEPS);
	return RUN_SETTLED;
}

static void run_to(struct world *w, enum run_end want)
{
	enum run_end end = run(w, NULL, NULL);
	if (end != want)
		world_fail(w, "the run ended %s, want %s", end == RUN_GONE ? "with the StatefulSet gone" : "at rest",
			   want == RUN_GONE ? "the StatefulSet gone" : "at rest");
}

/* Stops: */
static bool after_steps(const struct world *w, const void *arg)
{
	return w->iterations >= *(const int *)arg;
}

static bool asks_for(const struct world *w, const void *arg)
{
	return step_of(&w->a) == *(const enum step *)arg;
}

static bool cleanup_in_phase(const struct world *w, const char *pod_name, const char *phase)
{
	const json_t *pod = find(w->pods, pod_name);
	return pod && is_cleanup(w, pod) && sim_streq(phase_of(pod), phase) && !sim_terminating(pod);
}

static bool cleanup_running(const struct world *w, const void *arg)
{
	return cleanup_in_phase(w, arg, "Running");
}

static bool cleanup_failed(const struct world *w, const void *arg)
{
	return cleanup_in_phase(w, arg, "Failed");
}

/* ---- what was seen ---- */

/* The times of the history entries of step (and reason, when not NULL), in order: at most n. */
static int times_of(const struct world *w, const char *step, const char *reason, long long *t, int n)
{
	int k = 0;
	size_t i;
	json_t *e;
	json_array_foreach(w->history, i, e) {
		if (sim_streq(kube_obj_str(e, "step"), step) && (!reason || sim_streq(kube_obj_str(e, "reason"), reason)) &&
		    k < n)
			t[k++] = json_integer_value(json_object_get(e, "t"));
	}
	return k;
}

/*
 * attempts cleanup pods were created and as many failures recorded
 * (CleanupFailed); attempt i + 2 started waits[i] (to a second more) after
 * failure i + 1 was recorded.
 */
static void expect_retry_waits(struct world *w, int attempts, const long *waits)
{
	long long created[10], failed[10];
	assert_int_equal(times_of(w, "CREATE_POD", NULL, created, (int)NITEMS(created)), attempts);
	assert_int_equal(times_of(w, "SET_STATE", "CleanupFailed", failed, (int)NITEMS(failed)), attempts);
	for (int i = 0; i + 1 < attempts; i++) {
		long long gap = created[i + 1] - failed[i];
		if (gap < waits[i] || gap > waits[i] + 1000)
			world_fail(w, "attempt %d started %lld ms after failure %d (seen at %.3f s), want %ld", i + 2,
				   gap, i + 1, (double)(failed[i] - w->start_ms) / 1000, waits[i]);
	}
}

/* The ordinals created, as text: "[2,1]". New string. */
static char *created_list(const struct world *w)
{
	return json_dumps(w->created, JSON_COMPACT);
}

static void expect_created(struct world *w, const char *want)
{
	char *have = created_list(w);
	if (strcmp(have, want)) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cleanup pods created for ordinals %s, want %s", have, want);
		free(have);
		world_fail(w, "%s", msg);
	}
	free(have);
}

/* Claim claim is there, not being deleted, with its first UID (uid-<claim>). */
static void expect_claim_kept(struct world *w, const char *claim)
{
	const json_t *pvc = find(w->pvcs, claim);
	char uid[200];
	snprintf(uid, sizeof(uid), "uid-%s", claim);
	if (!pvc || sim_terminating(pvc) || !sim_streq(kube_obj_str(pvc, "metadata.uid"), uid))
		world_fail(w, "claim %s was not kept (%s)", claim,
			   !pvc ? "gone" : sim_terminating(pvc) ? "being deleted" : "another UID");
}

static void expect_claim_gone(struct world *w, const char *claim)
{
	const json_t *pvc = find(w->pvcs, claim);
	char uid[256];
	snprintf(uid, sizeof(uid), "uid-%s", claim);
	if (pvc && sim_streq(kube_obj_str(pvc, "metadata.uid"), uid))
		world_fail(w, "claim %s (uid %s) is still there", claim, uid);
}

/* Every claim of ordinal ord kept, or every one gone. */
static void expect_set(struct world *w, int ord, bool kept)
{
	size_t i;
	json_t *t;
	json_array_foreach(w->templates, i, t) {
		char claim[200];
		snprintf(claim, sizeof(claim), "%s-%s-%d", json_string_value(t), w->name, ord);
		if (kept)
			expect_claim_kept(w, claim);
		else
			expect_claim_gone(w, claim);
	}
}

static void expect_decoys(struct world *w)
{
	for (size_t i = 0; i < NITEMS(DECOY_UIDS); i++) {
		bool found = false;
		size_t k;
		json_t *pvc;
		json_array_foreach(w->pvcs, k, pvc) {
			found |= sim_streq(kube_obj_str(pvc, "metadata.uid"), DECOY_UIDS[i]) && !sim_terminating(pvc);
		}
		if (!found)
			world_fail(w, "the claim with uid %s, not the StatefulSet's, was touched", DECOY_UIDS[i]);
	}
}

static void expect_no_cleanup_pod(struct world *w)
{
	if (cleanup_pods(w))
		world_fail(w, "%d cleanup pod(s) left", cleanup_pods(w));
}

/* The StatefulSet's own pods are exactly those of ordinals [from, to), controlled. */
static void expect_own_pods(struct world *w, int from, int to)
{
	for (int k = from; k < to; k++) {
		char name[128];
		snprintf(name, sizeof(name), "%s-%d", w->name, k);
		const json_t *pod = find(w->pods, name);
		if (!pod || !sim_owned_by(pod, w->uid, true) || sim_terminating(pod))
			world_fail(w, "pod %s is not the StatefulSet's running pod", name);
	}
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		int k = pod_ordinal(w, kube_obj_str(pod, "metadata.name"));
		if (sim_owned_by(pod, w->uid, true) && (k < from || k >= to))
			world_fail(w, "pod %s is left", kube_obj_str(pod, "metadata.name"));
	}
}

/*
 * An in-range pod evicted: the planner sees its name free before the
 * StatefulSet controller makes it again, and must not take it for a claim
 * set to clean (the run checks every cleanup pod's ordinal).
 */
static void evict_and_back(struct world *w, int ord)
{
	char name[128];
	snprintf(name, sizeof(name), "%s-%d", w->name, ord);
	sim_remove(w->pods, find(w->pods, name));
	trace(w, "    (pod %s evicted)\n", name);
	size_t created = json_array_size(w->created);
	run_to(w, RUN_SETTLED);
	if (json_array_size(w->created) != created)
		world_fail(w, "a cleanup pod after pod %s was evicted", name);
	expect_set(w, ord, true);
}

/* A StatefulSet at rest with our finalizer added: the first thing the planner does. */
static void start_world(struct world *w, const struct setup *s)
{
	world_init(w, s);
	run_to(w, RUN_SETTLED);
	if (!has_finalizer(w, FINALIZER_SCALEDOWN) || sim_seen_count(w->history, "ADD_FINALIZER", 0) != 1)
		world_fail(w, "the finalizer was not added");
	if (json_array_size(w->created) || json_array_size(w->deleted))
		world_fail(w, "a StatefulSet at rest had cleanup");
}

/* ---- 0. names and backoff ---- */

static void test_step_names_and_backoff(void **state)
{
	(void)state;
	/* The names logs and SOP_TEST_CRASH_AFTER know the steps by. */
	static const char *const steps[] = {
		SCALEDOWN_ADD_FINALIZER, SCALEDOWN_REMOVE_FINALIZER, SCALEDOWN_CREATE_POD,  SCALEDOWN_STOP_POD,
		SCALEDOWN_DELETE_POD,    SCALEDOWN_DELETE_CLAIM,     SCALEDOWN_RECORD_STATE, SCALEDOWN_RECORD_FAILURE,
		SCALEDOWN_DISOWN_CLAIM,
	};
	for (size_t i = 0; i < NITEMS(steps); i++) {
		const char *n = steps[i];
		assert_non_null(n);
		assert_true(*n);
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(n, steps[k]);
	}
	assert_string_equal(SCALEDOWN_CREATE_POD, "CreateCleanupPod");
	assert_string_equal(SCALEDOWN_DISOWN_CLAIM, "DisownClaim");
	assert_string_equal(action_verb_name(ACTION_WAIT), "Wait");

	static const struct {
		int failures;
		long ms;
	} backoff[] = {{1, 5000},   {2, 10000},  {3, 20000},  {4, 40000},     {5, 80000},     {6, 160000},
		       {7, 300000}, {8, 300000}, {31, 300000}, {64, 300000}, {1000, 300000}, {INT_MAX, 300000}};
	for (size_t i = 0; i < NITEMS(backoff); i++) {
		if (scaledown_backoff_ms(backoff[i].failures) != backoff[i].ms)
			fail_msg("scaledown_backoff_ms(%d) = %ld, want %ld", backoff[i].failures,
				 scaledown_backoff_ms(backoff[i].failures), backoff[i].ms);
	}
	for (int n = 2; n < 200; n++) {
		long b = scaledown_backoff_ms(n);
		assert_true(b >= scaledown_backoff_ms(n - 1) && b <= SCALEDOWN_BACKOFF_MAX_MS);
	}
	assert_int_equal(scaledown_backoff_ms(1), SCALEDOWN_BACKOFF_BASE_MS);
}

/*
 * Nothing to look at: a StatefulSet without claims or pods (the finalizer
 * comes and goes all the same), and one that is gone.
 */
static void test_nothing_there(void **state)
{
	struct world *w = *state;
	world_init(w, &(struct setup){.replicas = 0});
	json_array_clear(w->pvcs);
	run_to(w, RUN_SETTLED);
	assert_true(has_finalizer(w, FINALIZER_SCALEDOWN));
	mark_deleted(w);
	run_to(w, RUN_GONE);
	assert_int_equal(json_array_size(w->created), 0);
	struct scaledown_inputs in = {NULL, w->pvcs, w->pods, w->now_ms};
	struct action a;
	scaledown_plan(&in, &a);
	assert_int_equal(step_of(&a), STEP_NOTHING);
	action_release(&a);
}

/*
 * A set that asks nothing (no template, state or finalizer of ours) is
 * decided from itself: the controller reads none of its pods or claims. The
 * planner, shown them anyway, agrees there is nothing to do.
 */
static void test_asks_nothing(void **state)
{
	(void)state;
	json_t *sts = json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:i}}", "metadata", "name", "web", "namespace",
				"default", "uid", "u1", "annotations", "example.com/other", "x", "spec", "replicas", 1);
	json_t *pvcs = json_array(), *pods = json_array();
	for (int k = 0; k < 3; k++) {
		char name[32];
		snprintf(name, sizeof(name), "data-web-%d", k);
		json_array_append_new(pvcs, json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "name", name,
						      "namespace", "default", "uid", name, "status", "phase",
						      "Bound"));
	}
	assert_true(scaledown_plan_asks_nothing(sts));
	struct scaledown_inputs in = {sts, pvcs, pods, 1000};
	struct action a;
	scaledown_plan(&in, &a);
	assert_int_equal(step_of(&a), STEP_NOTHING);
	action_release(&a);

	static const char *const asking[] = {ANNOTATION_SCALEDOWN_TEMPLATE, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY,
					     ANNOTATION_SCALEDOWN_STATE};
	for (size_t i = 0; i < sizeof(asking) / sizeof(*asking); i++) {
		json_t *copy = json_deep_copy(sts);
		json_object_set_new(json_object_get(json_object_get(copy, "metadata"), "annotations"), asking[i],
				    json_string("{}"));
		assert_false(scaledown_plan_asks_nothing(copy));
		json_decref(copy);
	}
	json_object_set_new(json_object_get(sts, "metadata"), "finalizers",
			    json_pack("[s]", FINALIZER_SCALEDOWN));
	assert_false(scaledown_plan_asks_nothing(sts));
	assert_false(scaledown_plan_asks_nothing(NULL));
	json_decref(sts);
	json_decref(pvcs);
	json_decref(pods);
}

/* ---- 1. the cycle ---- */

/* The first cleanup pod of 3 -> 1: its shape is what users rely on. */
static void check_first_pod(struct world *w)
{
	const struct action *a = &w->a;
	const json_t *pod = a->body;
	assert_string_equal(a->name, "web-2");
	assert_string_equal(kube_obj_str(pod, "metadata.name"), "web-2");
	assert_string_equal(sim_label(pod, LABEL_CLEANUP_FOR), "web");
	assert_string_equal(sim_label(pod, "app"), "web-cleanup");
	assert_string_equal(sim_label(pod, "team"), "storage");
	assert_string_equal(sim_annotation(pod, "example.com/note"), "keep me");
	assert_string_equal(sim_annotation(pod, ANNOTATION_CLEANUP_ORDINAL), "2");
	assert_string_equal(sim_annotation(pod, ANNOTATION_CLEANUP_ATTEMPT), "1");
	json_t *want = json_pack("{s:s, s:s}", "data-web-2", "uid-data-web-2", "wal-web-2", "uid-wal-web-2");
	json_t *named = json_loads(sim_annotation(pod, ANNOTATION_CLEANUP_CLAIMS), 0, NULL);
	json_t *claims = claims_of(a);
	bool same = json_equal(want, named) && json_equal(want, claims);
	json_decref(claims);
	json_decref(named);
	json_decref(want);
	if (!same)
		world_fail(w, "claims of the first cleanup pod: %s",
			   sim_or_dash(sim_annotation(pod, ANNOTATION_CLEANUP_CLAIMS)));
	const json_t *ref = json_array_get(json_object_get(sim_meta(pod), "ownerReferences"), 0);
	assert_string_equal(kube_obj_str(ref, "kind"), "StatefulSet");
	assert_string_equal(kube_obj_str(ref, "uid"), "uid-sts-web");
	assert_false(json_is_true(json_object_get(ref, "controller")));
	const json_t *spec = json_object_get(pod, "spec");
	assert_string_equal(kube_obj_str(pod, "spec.restartPolicy"), "Never");
	assert_string_equal(kube_obj_str(pod, "spec.serviceAccountName"), "cleaner");
	const json_t *vols = json_object_get(spec, "volumes");
	assert_int_equal(json_array_size(vols), 3);
	static const char *const pairs[][2] = {{"data", "data-web-2"}, {"wal", "wal-web-2"}};
	for (size_t i = 0; i < NITEMS(pairs); i++) {
		bool found = false;
		size_t k;
		json_t *v;
		json_array_foreach(vols, k, v) {
			found |= sim_streq(kube_obj_str(v, "name"), pairs[i][0]) &&
				 sim_streq(kube_obj_str(v, "persistentVolumeClaim.claimName"), pairs[i][1]);
		}
		if (!found)
			world_fail(w, "the cleanup pod has no volume %s -> %s", pairs[i][0], pairs[i][1]);
	}
	const json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
	assert_string_equal(kube_obj_str(c, "image"), "registry.example/cleanup:1");
	assert_int_equal(json_array_size(json_object_get(c, "volumeMounts")), 3);
	assert_string_equal(a->event_reason, "CleanupStarted");
	assert_string_equal(a->event_type, "Normal");
	assert_string_equal(a->counts[0].family, STARTED_TOTAL);
}

static void test_scale_down_ordered(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3});
	scale(w, 1);
	static const enum step create = STEP_CREATE_POD;
	if (run(w, asks_for, &create) != RUN_STOPPED)
		world_fail(w, "no cleanup pod");
	check_first_pod(w);
	/* Nothing before the StatefulSet let go of the name. */
	if (find(w->pods, "web-2"))
		world_fail(w, "a cleanup pod asked for while pod web-2 is there");
	run_to(w, RUN_SETTLED);

	expect_created(w, "[2,1]");
	for (int k = 2; k >= 1; k--) {
		char pod[16], data[32], wal[32], next[16];
		snprintf(pod, sizeof(pod), "web-%d", k);
		snprintf(data, sizeof(data), "data-web-%d", k);
		snprintf(wal, sizeof(wal), "wal-web-%d", k);
		snprintf(next, sizeof(next), "web-%d", k - 1);
		int created = sim_seen_at(w->history, "CREATE_POD", pod, 0);
		int d1 = sim_seen_at(w->history, "DELETE_CLAIM", data, 0), d2 = sim_seen_at(w->history, "DELETE_CLAIM", wal, 0);
		int gone = sim_seen_at(w->history, "DELETE_POD", pod, 0);
		if (created < 0 || d1 < created || d2 < created || gone < d1 || gone < d2)
			world_fail(w, "%s: create %d, claims %d %d, pod deleted %d: want claims after, pod last", pod,
				   created, d1, d2, gone);
		if (k == 2 && sim_seen_at(w->history, "CREATE_POD", next, 0) < gone)
			world_fail(w, "web-1 was started before web-2 was done");
		expect_set(w, k, false);
	}
	expect_set(w, 0, true);
	expect_decoys(w);
	expect_own_pods(w, 0, 1);
	expect_no_cleanup_pod(w);
	assert_int_equal(json_array_size(w->deleted), 4);
	evict_and_back(w, 0);
	expect_own_pods(w, 0, 1);
	assert_int_equal(sim_events(w->history, "Normal", "CleanupStarted", NULL), 2);
	assert_int_equal(sim_events(w->history, "Normal", "CleanupSucceeded", NULL), 2);
	assert_int_equal(sim_events(w->history, "Normal", "CleanupSucceeded", "web-2"), 1);
	assert_int_equal(sim_events(w->history, "Warning", "CleanupFailed", NULL), 0);
	assert_int_equal(sim_counted(w->counts, STARTED_TOTAL), 2);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 2);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 0);
	assert_int_equal(w->conflicts, 0);
	assert_int_equal(w->max_cleanup_pods, 1);
	assert_true(has_finalizer(w, FINALIZER_SCALEDOWN));
}

/* Ordinals from spec.ordinals.start: 5, 6, 7 down to 5 alone. */
static void test_ordinals_start(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3, .start = 5});
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	expect_created(w, "[7,6]");
	expect_set(w, 7, false);
	expect_set(w, 6, false);
	expect_set(w, 5, true);
	expect_own_pods(w, 5, 6);
	expect_decoys(w);
	expect_no_cleanup_pod(w);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 2);
	evict_and_back(w, 5);
	expect_own_pods(w, 5, 6);
	expect_created(w, "[7,6]");
}

/* The jboss example under its legacy key: datastore, template data, 3 -> 2. */
static void test_jboss_legacy_key(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.name = "datastore", .replicas = 3, .templates = {"data"},
				 .pod_template = JBOSS_TEMPLATE, .legacy_key = true});
	scale(w, 2);
	static const enum step create = STEP_CREATE_POD;
	if (run(w, asks_for, &create) != RUN_STOPPED)
		world_fail(w, "no cleanup pod");
	const json_t *pod = w->a.body;
	assert_string_equal(w->a.name, "datastore-2");
	assert_string_equal(sim_label(pod, "app"), "datastore-cleanup");
	assert_string_equal(sim_label(pod, LABEL_CLEANUP_FOR), "datastore");
	const json_t *v = json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 0);
	assert_string_equal(kube_obj_str(v, "name"), "data");
	assert_string_equal(kube_obj_str(v, "persistentVolumeClaim.claimName"), "data-datastore-2");
	const json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
	assert_string_equal(kube_obj_str(c, "image"), "my-cleanup-container");
	assert_string_equal(kube_obj_str(json_array_get(json_object_get(c, "volumeMounts"), 0), "mountPath"),
			    "/var/data");
	run_to(w, RUN_SETTLED);
	expect_created(w, "[2]");
	expect_claim_gone(w, "data-datastore-2");
	expect_claim_kept(w, "data-datastore-1");
	expect_claim_kept(w, "data-datastore-0");
	expect_own_pods(w, 0, 2);
	expect_decoys(w);
	expect_no_cleanup_pod(w);
}

static void test_parallel(void **state)
{
	struct world *w = *state;
	static const struct {
		const char *parallelism; /* NULL: unbounded */
		int most;
	} cases[] = {{"2", 2}, {NULL, 3}, {"1", 1}};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		struct setup s = {.replicas = 4, .parallel = true};
		if (cases[i].parallelism) {
			s.annotations[0][0] = ANNOTATION_SCALEDOWN_PARALLELISM;
			s.annotations[0][1] = cases[i].parallelism;
		}
		start_world(w, &s);
		scale(w, 1);
		run_to(w, RUN_SETTLED);
		if (w->max_cleanup_pods != cases[i].most)
			world_fail(w, "parallelism %s: at most %d cleanup pods at once, want %d",
				   sim_or_dash(cases[i].parallelism), w->max_cleanup_pods, cases[i].most);
		assert_int_equal(json_array_size(w->created), 3);
		for (int k = 1; k <= 3; k++)
			expect_set(w, k, false);
		expect_set(w, 0, true);
		expect_own_pods(w, 0, 1);
		expect_decoys(w);
		expect_no_cleanup_pod(w);
		assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 3);
		world_release(w);
	}
}

/* ---- 2. failures ---- */

/*
 * The failure of each attempt is recorded (CleanupFailed with the pod's
 * message, counted once) before the pod goes; the claims stay; the next
 * attempt waits scaledown_backoff_ms(failures); after max-attempts no
 * more, and scaledown-status says so. A failed pod seen twice before the
 * record is visible gives the same step, and performing it twice counts
 * the failure once: the waits stay 5 s, 10 s.
 */
static void test_failure_backoff_and_give_up(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 2});
	map_set(w->fail_first, 1, 99);
	scale(w, 1);
	if (run(w, cleanup_failed, "web-1") != RUN_STOPPED)
		world_fail(w, "the cleanup pod never failed");
	plan_past_status(w);
	if (step_of(&w->a) != STEP_SET_STATE || !sim_streq(w->a.event_reason, "CleanupFailed") ||
	    !sim_streq(w->a.event_type, "Warning") || !sim_contains(w->a.event_message, FAIL_MESSAGE) ||
	    !sim_streq(w->a.counts[0].family, FAILED_TOTAL))
		world_fail(w, "a failed cleanup pod: want SET_STATE, Warning CleanupFailed with \"%s\"; have %s",
			   FAIL_MESSAGE, w->steps.seen);
	assert_string_equal(action_name(&w->a), "RecordFailure"); /* what SOP_TEST_CRASH_AFTER names */
	/* Asked twice before the write is seen: the same step, performed twice. */
	struct action again;
	plan_into(w, &again);
	char *f = fingerprint(&again);
	action_release(&again);
	if (strcmp(f, w->steps.seen))
		world_fail(w, "asked again: %s", f);
	free(f);
	w->double_apply = true;
	perform(w);
	w->double_apply = false;
	plan_past_status(w);
	if (step_of(&w->a) != STEP_DELETE_POD || !sim_streq(w->a.name, "web-1") ||
	    !sim_streq(w->a.uid, kube_obj_str(find(w->pods, "web-1"), "metadata.uid")))
		world_fail(w, "after the failure is recorded: %s, want DELETE_POD web-1 by its uid", w->steps.seen);
	run_to(w, RUN_SETTLED);

	expect_created(w, "[1,1,1]");
	static const long waits[] = {5000, 10000};
	expect_retry_waits(w, 3, waits);
	/* Each failure recorded before its pod went. */
	int from = 0;
	for (int i = 0; i < 3; i++) {
		int rec = -1;
		for (size_t k = (size_t)from; k < json_array_size(w->history) && rec < 0; k++)
			if (sim_streq(kube_obj_str(json_array_get(w->history, k), "reason"), "CleanupFailed"))
				rec = (int)k;
		int del = sim_seen_at(w->history, "DELETE_POD", "web-1", from);
		if (rec < 0 || del < rec)
			world_fail(w, "failure %d: recorded at %d, pod deleted at %d", i + 1, rec, del);
		from = del + 1;
	}
	assert_int_equal(sim_events(w->history, "Warning", "CleanupFailed", FAIL_MESSAGE), 3);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 3);
	assert_int_equal(sim_counted(w->counts, STARTED_TOTAL), 3);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 0);
	assert_int_equal(sim_counted(w->counts, GIVEN_UP_TOTAL), 1); /* the third, not the first two */
	assert_int_equal(sim_seen_count(w->history, "DELETE_CLAIM", 0), 0);
	expect_set(w, 1, true);
	expect_no_cleanup_pod(w);
	const char *status = sim_annotation(w->sts, ANNOTATION_SCALEDOWN_STATUS);
	if (!sim_contains(status, FAIL_MESSAGE) && !contains_nocase(status, "fail"))
		world_fail(w, "scaledown-status after giving up: %s", sim_or_dash(status));
	/* Later on, still nothing. */
	w->now_ms += 24L * 3600 * 1000;
	plan_past_status(w);
	if (step_of(&w->a) != STEP_NOTHING)
		world_fail(w, "a day after giving up: %s", w->steps.seen);
}

/*
 * The cleanup image is the user's: its termination message may hold
 * escape sequences (issue 27: ESC ] title BEL, ESC [2J, U+009B) and run
 * to the kubelet's 4 KiB. What the operator records from it (the
 * CleanupFailed Event, the state's message, scaledown-status) is one
 * clean line, the message bounded, its words kept.
 */
static void test_failure_message_recorded_clean(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 2});
	char *said = terminal_dirty_text("drain ");
	w->fail_message = said;
	map_set(w->fail_first, 1, 99);
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	assert_int_equal(sim_events(w->history, "Warning", "CleanupFailed", "drain "), 3);
	terminal_expect_safe_messages(w->history, 1024);
	const char *status = sim_annotation(w->sts, ANNOTATION_SCALEDOWN_STATUS);
	assert_non_null(status);
	terminal_expect_safe("scaledown-status", status, false);
	json_t *st = json_loads(sim_annotation(w->sts, ANNOTATION_SCALEDOWN_STATE), 0, NULL);
	const char *recorded = kube_obj_str(json_object_get(json_object_get(st, "ordinals"), "1"), "message");
	assert_non_null(recorded);
	terminal_expect_safe("scaledown-state's message", recorded, false);
	if (!strstr(recorded, "drain ") || !strstr(recorded, "2J") || strlen(recorded) > 600)
		world_fail(w, "recorded message (%zu bytes): %.80s...", strlen(recorded), recorded);
	json_decref(st);
	w->fail_message = NULL;
	free(said);
}

/*
 * The wait is never shorter than the backoff, whatever the clock reads
 * when the failure is seen (here always half past some second).
 */
static void test_backoff_is_never_short(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 2});
	w->now_ms += 500;
	map_set(w->fail_first, 1, 99);
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	static const long waits[] = {5000, 10000};
	expect_retry_waits(w, 3, waits);
}

/* Backoff doubles from 5 s and stops growing at 5 min. */
static void test_backoff_grows_and_caps(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 2, .annotations = {{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "9"}}});
	map_set(w->fail_first, 1, 99);
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	static const long waits[] = {5000, 10000, 20000, 40000, 80000, 160000, 300000, 300000};
	expect_retry_waits(w, 9, waits);
	expect_set(w, 1, true);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 9);
}

static void test_max_attempts_and_recovery(void **state)
{
	struct world *w = *state;
	static const struct {
		const char *max; /* NULL: default 3 */
		int fail_first;
		const char *created;
		bool cleaned;
	} cases[] = {
		{"1", 99, "[1]", false},
		{"5", 99, "[1,1,1,1,1]", false},
		{NULL, 1, "[1,1]", true},
		{NULL, 2, "[1,1,1]", true},
		{"2", 2, "[1,1]", false},
	};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		struct setup s = {.replicas = 2};
		if (cases[i].max) {
			s.annotations[0][0] = ANNOTATION_SCALEDOWN_MAX_ATTEMPTS;
			s.annotations[0][1] = cases[i].max;
		}
		start_world(w, &s);
		map_set(w->fail_first, 1, cases[i].fail_first);
		scale(w, 1);
		run_to(w, RUN_SETTLED);
		expect_created(w, cases[i].created);
		expect_set(w, 1, !cases[i].cleaned);
		expect_set(w, 0, true);
		expect_no_cleanup_pod(w);
		int tried = (int)json_array_size(w->created);
		int failures = cases[i].fail_first < tried ? cases[i].fail_first : tried;
		assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), failures);
		assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), cases[i].cleaned);
		/* Given up exactly once when the last attempt failed; never when a retry cleaned it. */
		assert_int_equal(sim_counted(w->counts, GIVEN_UP_TOTAL), !cases[i].cleaned);
		world_release(w);
	}
}

/*
 * OrderedReady: while ordinal 2 fails and waits to retry, ordinal 1 waits
 * too (checked at every step); once 2 is given up, 1 is cleaned.
 */
static void test_ordered_gives_up_then_goes_on(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3, .annotations = {{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "2"}}});
	map_set(w->fail_first, 2, 99);
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	expect_created(w, "[2,2,1]");
	expect_set(w, 2, true);
	expect_set(w, 1, false);
	expect_no_cleanup_pod(w);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 2);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 1);
	assert_int_equal(sim_counted(w->counts, GIVEN_UP_TOTAL), 1);
}

/*
 * Parallel by 2, 5 -> 1: ordinal 4 fails once while 3 succeeds; while 4
 * waits to retry it holds one of the two places (checked at every step).
 */
static void test_parallel_retry_holds_its_place(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 5, .parallel = true,
				 .annotations = {{ANNOTATION_SCALEDOWN_PARALLELISM, "2"}}});
	map_set(w->fail_first, 4, 1);
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	assert_int_equal(json_array_size(w->created), 5);
	assert_int_equal(w->max_cleanup_pods, 2);
	for (int k = 1; k <= 4; k++)
		expect_set(w, k, false);
	expect_no_cleanup_pod(w);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 1);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 4);
}

/* scaledown-timeout 1m: a running pod is waited on until then, and failed after. */
static void test_timeout(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 2, .annotations = {{ANNOTATION_SCALEDOWN_TIMEOUT, "1m"}}});
	w->hang = true;
	scale(w, 1);
	if (run(w, cleanup_running, "web-1") != RUN_STOPPED)
		world_fail(w, "the cleanup pod never ran");
	const json_t *pod = find(w->pods, "web-1");
	long long created = rfc3339_seconds(kube_obj_str(pod, "metadata.creationTimestamp")) * 1000;
	static const long long after[] = {0, 1000, 30000, 59000};
	for (size_t i = 0; i < NITEMS(after); i++) {
		w->now_ms = created + after[i];
		plan_past_status(w);
		long left = (long)(60000 - after[i]);
		if (step_of(&w->a) != STEP_WAIT || w->a.requeue_ms <= 0 || w->a.requeue_ms > left)
			world_fail(w, "%llds into a 1m timeout: %s, want WAIT with 0 < requeue <= %ld ms",
				   after[i] / 1000, w->steps.seen, left);
	}
	w->now_ms = created + 61000;
	plan_past_status(w);
	if (step_of(&w->a) != STEP_SET_STATE || !sim_streq(w->a.event_reason, "CleanupFailed") ||
	    !sim_streq(w->a.counts[0].family, FAILED_TOTAL) ||
	    !(contains_nocase(w->a.event_message, "timeout") || contains_nocase(w->a.event_message, "timed out") ||
	      sim_contains(w->a.event_message, "1m")))
		world_fail(w, "61s into a 1m timeout: %s, want SET_STATE with CleanupFailed naming the timeout",
			   w->steps.seen);
	perform(w);
	plan_past_status(w);
	if (step_of(&w->a) != STEP_DELETE_POD || !sim_streq(w->a.uid, kube_obj_str(pod, "metadata.uid")))
		world_fail(w, "after a timeout is recorded: %s, want DELETE_POD web-1", w->steps.seen);
	/* The next attempt succeeds. */
	w->hang = false;
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1,1]");
	expect_set(w, 1, false);
	expect_no_cleanup_pod(w);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 1);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 1);
}

/* The cleanup pod's containers end in phase at ms (exit 0 for Succeeded), as the kubelet reports it. */
static void pod_ends(struct world *w, json_t *pod, const char *phase, long long ms)
{
	set_pod_status(pod, phase, sim_streq(phase, "Failed") ? FAIL_MESSAGE : "handed off");
	set_finished_at(pod, ms);
	trace(w, "    (cleanup pod %s %s, finished %+.0f s after its deletion was asked for)\n",
	      kube_obj_str(pod, "metadata.name"), phase,
	      sim_terminating(pod) ? (double)(ms - deletion_asked_ms(pod)) / 1000 : 0.0);
}

/*
 * A cleanup pod deleted while it runs gets SIGTERM, and a cleanup that
 * exits 0 on it ends Succeeded half-way: no success, the claims stay.
 *   (a) Past its timeout: the failure is recorded, the pod deleted; it
 *       then exits 0. Its claims are not deleted, no CleanupSucceeded; the
 *       retry cleans them.
 *   (b) Deleted by someone else while it ran, then Succeeded (finishedAt
 *       after the deletion was asked for), claims still there: a failed
 *       attempt ("stopped (deleted) before it finished"), claims kept.
 *   (c) Succeeded on its own, then deleted by someone else before the
 *       planner got to it (finishedAt before the deletion was asked for),
 *       claims still there: the claims are deleted, no failure counted.
 *       (The old planner did this too: (c) guards the fix from going too far.)
 */
static void test_cleanup_cut_short(void **state)
{
	struct world *w = *state;
	/* (a) */
	start_world(w, &(struct setup){.replicas = 2, .annotations = {{ANNOTATION_SCALEDOWN_TIMEOUT, "1m"}}});
	w->hang = true;
	scale(w, 1);
	static const enum step del = STEP_DELETE_POD;
	if (run(w, asks_for, &del) != RUN_STOPPED)
		world_fail(w, "the cleanup pod past its timeout was never deleted");
	int rec = sim_seen_at(w->history, "SET_STATE", NULL, 0);
	while (rec >= 0 && !sim_streq(kube_obj_str(json_array_get(w->history, (size_t)rec), "reason"), "CleanupFailed"))
		rec = sim_seen_at(w->history, "SET_STATE", NULL, rec + 1);
	if (rec < 0 || !sim_contains(kube_obj_str(json_array_get(w->history, (size_t)rec), "message"), "1m"))
		world_fail(w, "the timeout was not recorded (SET_STATE RecordFailure, CleanupFailed) before DELETE_POD");
	w->hold_terminating = true;
	perform(w); /* DELETE_POD: SIGTERM, 30 s of grace */
	json_t *pod = find(w->pods, "web-1");
	if (!pod || !sim_terminating(pod))
		world_fail(w, "the cleanup pod is not terminating after DELETE_POD");
	w->now_ms += 2000;
	pod_ends(w, pod, "Succeeded", w->now_ms);
	run_to(w, RUN_SETTLED);
	assert_int_equal(sim_seen_count(w->history, "DELETE_CLAIM", 0), 0);
	assert_int_equal(sim_events(w->history, NULL, "CleanupSucceeded", NULL), 0);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 0);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 1);
	expect_set(w, 1, true);
	/* The pod goes; the retry cleans the claims. */
	w->hold_terminating = false;
	w->hang = false;
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1,1]");
	expect_set(w, 1, false);
	expect_no_cleanup_pod(w);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 1);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 1);
	assert_int_equal(sim_events(w->history, "Normal", "CleanupSucceeded", NULL), 1);
	if (sim_seen_at(w->history, "DELETE_CLAIM", NULL, 0) < sim_seen_at(w->history, "CREATE_POD", "web-1", rec))
		world_fail(w, "claims deleted before the second cleanup pod was created");
	world_release(w);

	/* (b) */
	start_world(w, &(struct setup){.replicas = 2});
	w->hang = true;
	scale(w, 1);
	if (run(w, cleanup_running, "web-1") != RUN_STOPPED)
		world_fail(w, "the cleanup pod never ran");
	w->hold_terminating = true;
	pod = find(w->pods, "web-1");
	delete_gracefully(pod, w->now_ms, 30);
	trace(w, "    (cleanup pod web-1 deleted by someone else)\n");
	w->now_ms += 2000;
	pod_ends(w, pod, "Succeeded", w->now_ms);
	plan_past_status(w);
	if (step_of(&w->a) != STEP_SET_STATE || !sim_streq(action_name(&w->a), "RecordFailure") ||
	    !sim_streq(w->a.event_type, "Warning") || !sim_streq(w->a.event_reason, "CleanupFailed") ||
	    !sim_streq(w->a.counts[0].family, FAILED_TOTAL) ||
	    !(contains_nocase(w->a.event_message, "stopped") || contains_nocase(w->a.event_message, "before it finished")))
		world_fail(w, "a cleanup pod deleted while it ran, then Succeeded: %s, want SET_STATE RecordFailure with "
			   "a Warning CleanupFailed saying it was stopped before it finished", w->steps.seen);
	run_to(w, RUN_SETTLED);
	assert_int_equal(sim_seen_count(w->history, "DELETE_CLAIM", 0), 0);
	assert_int_equal(sim_events(w->history, NULL, "CleanupSucceeded", NULL), 0);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 1);
	expect_set(w, 1, true);
	w->hold_terminating = false;
	w->hang = false;
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1,1]");
	expect_set(w, 1, false);
	expect_no_cleanup_pod(w);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 1);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 1);
	world_release(w);

	/* (c) */
	start_world(w, &(struct setup){.replicas = 2});
	w->hang = true;
	scale(w, 1);
	if (run(w, cleanup_running, "web-1") != RUN_STOPPED)
		world_fail(w, "the cleanup pod never ran");
	w->hold_terminating = true;
	pod = find(w->pods, "web-1");
	long long finished = w->now_ms;
	w->now_ms += 5000;
	delete_gracefully(pod, w->now_ms, 30);
	trace(w, "    (cleanup pod web-1 deleted by someone else)\n");
	pod_ends(w, pod, "Succeeded", finished);
	run_to(w, RUN_SETTLED);
	expect_set(w, 1, false);
	assert_int_equal(sim_seen_count(w->history, "DELETE_CLAIM", 0), 2);
	assert_int_equal(sim_events(w->history, NULL, "CleanupFailed", NULL), 0);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 0);
	w->hold_terminating = false;
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1]");
	expect_no_cleanup_pod(w);
	expect_set(w, 0, true);
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 0);
}

/* ---- 3. scale-up while cleaning ---- */

static void test_scale_up_during_cleanup(void **state)
{
	struct world *w = *state;
	for (int succeed = 0; succeed < 2; succeed++) {
		start_world(w, &(struct setup){.replicas = 3});
		w->hang = true;
		scale(w, 1);
		if (run(w, cleanup_running, "web-2") != RUN_STOPPED)
			world_fail(w, "the cleanup pod never ran");
		const char *cleanup_uid = kube_obj_str(find(w->pods, "web-2"), "metadata.uid");
		char *uid = xstrdup(cleanup_uid);
		scale(w, 3);
		/* The pod is left to run: a few rounds, the clock moving slowly. */
		w->max_wait_ms = 1000;
		int steps = w->iterations + 10;
		if (run(w, after_steps, &steps) == RUN_GONE)
			world_fail(w, "the StatefulSet went");
		json_t *pod = find(w->pods, "web-2");
		if (!pod || !sim_streq(kube_obj_str(pod, "metadata.uid"), uid) || sim_terminating(pod))
			world_fail(w, "the running cleanup pod was deleted after the scale-up");
		expect_own_pods(w, 0, 2);
		expect_set(w, 2, true);
		set_pod_status(pod, succeed ? "Succeeded" : "Failed", succeed ? "handed off" : FAIL_MESSAGE);
		trace(w, "    (cleanup pod web-2 %s)\n", succeed ? "succeeded" : "failed");
		w->max_wait_ms = 0;
		run_to(w, RUN_SETTLED);
		expect_created(w, "[2]");
		if (sim_seen_at(w->history, "DELETE_POD", "web-2", 0) < 0)
			world_fail(w, "the cleanup pod was not deleted");
		if (succeed) {
			/* The data was handed off: the claims go, the StatefulSet makes new ones. */
			expect_set(w, 2, false);
			assert_true(find(w->pvcs, "data-web-2") && find(w->pvcs, "wal-web-2"));
			assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 1);
		} else {
			expect_set(w, 2, true);
			assert_int_equal(sim_seen_count(w->history, "DELETE_CLAIM", 0), 0);
		}
		expect_set(w, 1, true);
		expect_own_pods(w, 0, 3);
		expect_no_cleanup_pod(w);
		expect_decoys(w);
		free(uid);
		world_release(w);
	}
}

/* ---- 4. StatefulSet deletion ---- */

static void test_statefulset_deletion(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3});
	json_array_append_new(w->pods, foreign_pod(w, "debug", NULL));
	mark_deleted(w);
	run_to(w, RUN_GONE);
	char *stopped = json_dumps(w->stopped, JSON_COMPACT);
	bool ok = sim_streq(stopped, "[\"web-2\",\"web-1\",\"web-0\"]");
	if (!ok) {
		trace(w, "stopped: %s\n", stopped);
		free(stopped);
		world_fail(w, "the StatefulSet's pods were not stopped highest first");
	}
	free(stopped);
	expect_created(w, "[2,1,0]");
	for (int k = 2; k >= 0; k--) {
		char pod[16], higher[16];
		snprintf(pod, sizeof(pod), "web-%d", k);
		snprintf(higher, sizeof(higher), "web-%d", k + 1);
		int stop = sim_seen_at(w->history, "STOP_POD", pod, 0), create = sim_seen_at(w->history, "CREATE_POD", pod, 0);
		if (stop < 0 || create < stop)
			world_fail(w, "%s: stopped at %d, cleanup created at %d", pod, stop, create);
		if (k < 2 && stop < sim_seen_at(w->history, "DELETE_POD", higher, 0))
			world_fail(w, "%s stopped before the cleanup of %s was done", pod, higher);
		expect_set(w, k, false);
	}
	int last = (int)json_array_size(w->history) - 1;
	if (!sim_streq(kube_obj_str(json_array_get(w->history, last), "step"), "REMOVE_FINALIZER"))
		world_fail(w, "the last step was not REMOVE_FINALIZER");
	assert_non_null(find(w->pods, "debug"));
	assert_int_equal(json_array_size(w->pods), 1);
	expect_decoys(w);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 3);
	assert_int_equal(w->conflicts, 0);
}

static void test_statefulset_deletion_parallel(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 4, .parallel = true,
				 .annotations = {{ANNOTATION_SCALEDOWN_PARALLELISM, "2"}}});
	mark_deleted(w);
	run_to(w, RUN_GONE);
	assert_int_equal(json_array_size(w->created), 4);
	assert_int_equal(json_array_size(w->stopped), 4);
	for (int k = 0; k < 4; k++)
		expect_set(w, k, false);
	assert_int_equal(json_array_size(w->pods), 0);
	assert_true(w->max_cleanup_pods <= 2);
	expect_decoys(w);
}

/*
 * A pod named like an ordinal (web-3) that the StatefulSet does not
 * control (a Job's) is never stopped, and the claims of that ordinal,
 * never cleaned, are kept. The others are cleaned as usual; the set held
 * by the Job's pod does not hold the deletion forever: the StatefulSet
 * goes with a Warning naming the ordinal whose claims were kept.
 */
static void test_deletion_never_stops_foreign_pods(void **state)
{
	struct world *w = *state;
	world_init(w, &(struct setup){.replicas = 3});
	add_claim_set(w, 3);
	json_t *job_pod = foreign_pod(w, "web-3", NULL);
	json_object_set_new(sim_meta(job_pod), "ownerReferences",
			    json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "batch/v1", "kind", "Job", "name",
				      "backup", "uid", "uid-job", "controller", 1));
	json_array_append_new(w->pods, job_pod);
	run_to(w, RUN_SETTLED);
	assert_int_equal(json_array_size(w->created), 0);
	mark_deleted(w);
	run_to(w, RUN_GONE);
	const json_t *pod = find(w->pods, "web-3");
	if (sim_in_array(w->stopped, "web-3") || !pod || sim_terminating(pod))
		world_fail(w, "the Job's pod web-3 was stopped");
	expect_set(w, 3, true);
	expect_created(w, "[2,1,0]");
	for (int k = 0; k < 3; k++)
		expect_set(w, k, false);
	const json_t *last = json_array_get(w->history, json_array_size(w->history) - 1);
	if (!sim_streq(kube_obj_str(last, "step"), "REMOVE_FINALIZER") || !sim_streq(kube_obj_str(last, "type"), "Warning") ||
	    !sim_contains(kube_obj_str(last, "message"), "3"))
		world_fail(w, "the finalizer went without a Warning naming ordinal 3, whose claims were kept");
	expect_decoys(w);
}

/* The StatefulSet's claims (whenDeleted Delete): an owner reference to it each, as its controller sets them. */
static void own_claims(struct world *w)
{
	json_object_set_new(json_object_get(w->sts, "spec"), "persistentVolumeClaimRetentionPolicy",
			    json_pack("{s:s, s:s}", "whenDeleted", "Delete", "whenScaled", "Retain"));
	bump_version(w);
	size_t i;
	json_t *pvc;
	json_array_foreach(w->pvcs, i, pvc) {
		if (claim_ordinal(w, pvc) < 0)
			continue;
		json_t *refs = json_object_get(sim_meta(pvc), "ownerReferences");
		if (!json_is_array(refs)) {
			refs = json_array();
			json_object_set_new(sim_meta(pvc), "ownerReferences", refs);
		}
		json_array_append_new(refs, json_pack("{s:s, s:s, s:s, s:s, s:b}", "apiVersion", "apps/v1", "kind",
						      "StatefulSet", "name", w->name, "uid", w->uid,
						      "blockOwnerDeletion", 1));
	}
	trace(w, "    (whenDeleted Delete: the claims are owned by the StatefulSet)\n");
}

/*
 * whenDeleted Delete: the claims are owned by the StatefulSet, so the
 * garbage collector would take the claims whose cleanup was given up along
 * with the set. Before the finalizer goes, each kept claim loses the set's
 * owner reference (DISOWN_CLAIM, the claim's resourceVersion as
 * precondition, other owners kept); the kept claims are never deleted.
 */
static void test_deletion_disowns_kept_claims(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3, .annotations = {{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "2"}}});
	own_claims(w);
	/* Someone else owns data-web-1 too. */
	json_array_append_new(json_object_get(sim_meta(find(w->pvcs, "data-web-1")), "ownerReferences"),
			      json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "ConfigMap", "name",
					"keeper", "uid", "uid-keeper"));
	map_set(w->fail_first, 1, 99);
	mark_deleted(w);
	run_to(w, RUN_GONE);
	expect_created(w, "[2,1,1,0]");
	expect_set(w, 2, false);
	expect_set(w, 0, false);
	/* Ordinal 1 given up: its claims outlive the StatefulSet, the garbage collector done. */
	expect_set(w, 1, true);
	static const char *const kept[] = {"data-web-1", "wal-web-1"};
	int finalizer = sim_seen_at(w->history, "REMOVE_FINALIZER", NULL, 0);
	for (size_t i = 0; i < NITEMS(kept); i++) {
		const json_t *pvc = find(w->pvcs, kept[i]);
		if (sim_owned_by(pvc, w->uid, false))
			world_fail(w, "claim %s kept, still owned by the StatefulSet that is gone", kept[i]);
		int at = sim_seen_at(w->history, "DISOWN_CLAIM", kept[i], 0);
		if (at < 0 || at > finalizer)
			world_fail(w, "claim %s: DISOWN_CLAIM at %d, REMOVE_FINALIZER at %d: want it disowned first",
				   kept[i], at, finalizer);
		if (sim_seen_at(w->history, "DELETE_CLAIM", kept[i], 0) >= 0)
			world_fail(w, "claim %s, whose cleanup was given up, was deleted", kept[i]);
	}
	assert_true(sim_owned_by(find(w->pvcs, "data-web-1"), "uid-keeper", false));
	assert_int_equal(sim_seen_count(w->history, "DISOWN_CLAIM", 0), 2);
	const json_t *last = json_array_get(w->history, json_array_size(w->history) - 1);
	if (!sim_streq(kube_obj_str(last, "step"), "REMOVE_FINALIZER") ||
	    !sim_streq(kube_obj_str(last, "reason"), "CleanupIncomplete") || !sim_contains(kube_obj_str(last, "message"), "1"))
		world_fail(w, "the last step is not REMOVE_FINALIZER with a Warning CleanupIncomplete naming ordinal 1");
	assert_int_equal(sim_counted(w->counts, FAILED_TOTAL), 2);
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 2);
	expect_decoys(w);
}

/* Deletions that orphan clean nothing: the finalizer is removed at once. */
static void test_orphan_deletion(void **state)
{
	struct world *w = *state;
	static const char *const how[] = {"--cascade=orphan", "resize re-create", "pods already orphaned"};
	for (int h = 0; h < 3; h++) {
		start_world(w, &(struct setup){.replicas = 3});
		scale(w, 1); /* even claim sets a scale-down left stay */
		if (h == 1) {
			char *st = xasprintf("{\"phase\":\"Recreating\",\"statefulSetUID\":\"%s\"}", w->uid);
			sts_annotate(w, ANNOTATION_RESIZE_STATE, st);
			free(st);
		} else if (h == 0) {
			set_finalizers(w, json_pack("[s, s]", "orphan", FINALIZER_SCALEDOWN));
		} else {
			/* The garbage collector took the owner references and then the orphan finalizer. */
			size_t i;
			json_t *pod;
			json_array_foreach(w->pods, i, pod) json_object_del(sim_meta(pod), "ownerReferences");
		}
		mark_deleted(w);
		plan_past_status(w);
		if (step_of(&w->a) != STEP_REMOVE_FINALIZER)
			world_fail(w, "%s: %s, want REMOVE_FINALIZER", how[h], w->steps.seen);
		run_to(w, RUN_GONE);
		assert_int_equal(json_array_size(w->created), 0);
		assert_int_equal(json_array_size(w->stopped), 0);
		assert_int_equal(sim_seen_count(w->history, "DELETE_CLAIM", 0), 0);
		for (int k = 0; k < 3; k++)
			expect_set(w, k, true);
		if (h == 0)
			assert_int_equal(json_array_size(w->pods), 3); /* orphaned, running on */
		world_release(w);
	}
	/* A resize that failed long ago left its state: a plain deletion still cleans up. */
	start_world(w, &(struct setup){.replicas = 3});
	char *st = xasprintf("{\"phase\":\"Failed\",\"statefulSetUID\":\"%s\"}", w->uid);
	sts_annotate(w, ANNOTATION_RESIZE_STATE, st);
	free(st);
	mark_deleted(w);
	plan_past_status(w);
	if (step_of(&w->a) != STEP_STOP_POD)
		world_fail(w, "deletion with a failed resize's state: %s, want STOP_POD", w->steps.seen);
	world_release(w);
}

/* ---- 5. the finalizer ---- */

static void test_finalizer(void **state)
{
	struct world *w = *state;
	/* No template: no finalizer, no cleanup. */
	world_init(w, &(struct setup){.replicas = 3, .pod_template = ""});
	run_to(w, RUN_SETTLED);
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	assert_int_equal(sim_seen_count(w->history, "ADD_FINALIZER", 0), 0);
	assert_int_equal(json_array_size(finalizers(w)), 0);
	assert_int_equal(json_array_size(w->created), 0);
	for (int k = 0; k < 3; k++)
		expect_set(w, k, true);

	/* A template: ours is added, next to the others. */
	world_init(w, &(struct setup){.replicas = 3});
	set_finalizers(w, json_pack("[s]", OTHER_FINALIZER));
	plan_past_status(w);
	if (step_of(&w->a) != STEP_ADD_FINALIZER)
		world_fail(w, "with a template: %s, want ADD_FINALIZER", w->steps.seen);
	perform(w); /* checks the body keeps the other */
	assert_true(has_finalizer(w, FINALIZER_SCALEDOWN) && has_finalizer(w, OTHER_FINALIZER));
	run_to(w, RUN_SETTLED);

	/* The template removed, no cleanup pod: ours goes, the other stays. */
	sts_annotate(w, ANNOTATION_SCALEDOWN_TEMPLATE, NULL);
	plan_past_status(w);
	if (step_of(&w->a) != STEP_REMOVE_FINALIZER)
		world_fail(w, "template removed: %s, want REMOVE_FINALIZER", w->steps.seen);
	perform(w);
	assert_false(has_finalizer(w, FINALIZER_SCALEDOWN));
	assert_true(has_finalizer(w, OTHER_FINALIZER));
	run_to(w, RUN_SETTLED);
	assert_false(has_finalizer(w, FINALIZER_SCALEDOWN));
	world_release(w);

	/* The template removed while a cleanup pod runs: ours stays while the pod is there. */
	start_world(w, &(struct setup){.replicas = 2});
	w->hang = true;
	scale(w, 1);
	if (run(w, cleanup_running, "web-1") != RUN_STOPPED)
		world_fail(w, "the cleanup pod never ran");
	sts_annotate(w, ANNOTATION_SCALEDOWN_TEMPLATE, NULL);
	w->max_wait_ms = 1000;
	for (int i = 0; i < 10; i++) {
		plan_past_status(w);
		if (step_of(&w->a) == STEP_REMOVE_FINALIZER && cleanup_pods(w))
			world_fail(w, "the finalizer removed while cleanup pod web-1 is there");
		perform(w);
		if (resting(step_of(&w->a))) {
			tick(w);
			w->now_ms += 1000;
		}
	}
	w->hang = false;
	w->max_wait_ms = 0;
	run_to(w, RUN_SETTLED);
	expect_no_cleanup_pod(w);
	assert_false(has_finalizer(w, FINALIZER_SCALEDOWN));
}

/*
 * stateful-operator.io/ignore: "true" (the key the resize controller
 * honours too): the user takes the StatefulSet over. No new cleanup pod
 * starts, and the finalizer goes once no cleanup pod runs. A cleanup pod
 * already running is left to end, and the finalizer stays while it is
 * there.
 */
static void test_ignore_annotation(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3});
	sts_annotate(w, ANNOTATION_IGNORE, "true");
	plan_past_status(w);
	if (step_of(&w->a) != STEP_REMOVE_FINALIZER)
		world_fail(w, "ignore \"true\", no cleanup pod: %s, want REMOVE_FINALIZER", w->steps.seen);
	run_to(w, RUN_SETTLED);
	assert_false(has_finalizer(w, FINALIZER_SCALEDOWN));
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	assert_int_equal(json_array_size(w->created), 0);
	for (int k = 0; k < 3; k++)
		expect_set(w, k, true);
	assert_int_equal(sim_seen_count(w->history, "ADD_FINALIZER", 0), 1);
	assert_false(has_finalizer(w, FINALIZER_SCALEDOWN));
	/* Taken back: cleanup as usual. */
	sts_annotate(w, ANNOTATION_IGNORE, NULL);
	run_to(w, RUN_SETTLED);
	expect_created(w, "[2,1]");
	expect_set(w, 2, false);
	expect_set(w, 1, false);
	assert_true(has_finalizer(w, FINALIZER_SCALEDOWN));
	world_release(w);

	/* Set while the cleanup of ordinal 2 runs: the finalizer stays while it is there; ordinal 1 never starts. */
	start_world(w, &(struct setup){.replicas = 3});
	w->hang = true;
	scale(w, 1);
	if (run(w, cleanup_running, "web-2") != RUN_STOPPED)
		world_fail(w, "the cleanup pod never ran");
	sts_annotate(w, ANNOTATION_IGNORE, "true");
	w->max_wait_ms = 1000;
	for (int i = 0; i < 10; i++) {
		plan_past_status(w);
		if (step_of(&w->a) == STEP_REMOVE_FINALIZER && cleanup_pods(w))
			world_fail(w, "the finalizer removed while cleanup pod web-2 is there");
		perform(w);
		if (resting(step_of(&w->a))) {
			tick(w);
			w->now_ms += 1000;
		}
	}
	assert_true(has_finalizer(w, FINALIZER_SCALEDOWN));
	w->hang = false;
	w->max_wait_ms = 0;
	run_to(w, RUN_SETTLED);
	expect_created(w, "[2]");
	expect_set(w, 1, true);
	expect_no_cleanup_pod(w);
	assert_false(has_finalizer(w, FINALIZER_SCALEDOWN));
}

/* ---- 6. refusals ---- */

static void test_refusals(void **state)
{
	struct world *w = *state;
	static const struct {
		const char *what;
		const char *tmpl;
		bool when_scaled_delete;
		const char *reason;
	} cases[] = {
		{"whenScaled Delete", TEMPLATE, true, "ScaledownWhenScaledDelete"},
		{"restartPolicy Always",
		 "{\"spec\": {\"restartPolicy\": \"Always\", \"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}",
		 false, "ScaledownTemplateRestartPolicy"},
		{"not a Pod", "{\"kind\": \"Job\", \"apiVersion\": \"batch/v1\", \"spec\": {\"template\": {}}}", false,
		 "ScaledownTemplateNotAPod"},
		{"no containers", "{\"spec\": {\"containers\": []}}", false, "ScaledownTemplateNoContainers"},
		{"labels the selector matches",
		 "{\"metadata\": {\"labels\": {\"app\": \"web\"}}, \"spec\": {\"containers\": [{\"name\": \"c\", "
		 "\"image\": \"i\"}]}}",
		 false, "ScaledownTemplateMatchesSelector"},
	};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		world_init(w, &(struct setup){.replicas = 3, .pod_template = cases[i].tmpl});
		if (cases[i].when_scaled_delete)
			json_object_set_new(json_object_get(w->sts, "spec"), "persistentVolumeClaimRetentionPolicy",
					    json_pack("{s:s, s:s}", "whenDeleted", "Retain", "whenScaled", "Delete"));
		plan_past_status(w);
		if (step_of(&w->a) != STEP_REFUSE || !sim_streq(w->a.event_type, "Warning") ||
		    !sim_streq(w->a.event_reason, cases[i].reason))
			world_fail(w, "%s: %s, want REFUSE with a Warning %s", cases[i].what, w->steps.seen,
				   cases[i].reason);
		scale(w, 1);
		run_to(w, RUN_SETTLED);
		if (json_array_size(w->created) || sim_seen_count(w->history, "DELETE_CLAIM", 0) || sim_seen_count(w->history, "ADD_FINALIZER", 0))
			world_fail(w, "%s: something was done", cases[i].what);
		for (int k = 0; k < 3; k++)
			expect_set(w, k, true);
		world_release(w);
	}
}

/* ---- 7. waiting for the cluster ---- */

/* The StatefulSet's own web-2, still terminating after the scale-down, holds the name: no cleanup until it goes. */
static void test_own_pod_still_terminating(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3});
	w->hold_terminating = true;
	scale(w, 2);
	run_to(w, RUN_SETTLED);
	const json_t *pod = find(w->pods, "web-2");
	assert_true(pod && sim_terminating(pod) && sim_owned_by(pod, w->uid, true));
	assert_int_equal(json_array_size(w->created), 0);
	w->hold_terminating = false;
	run_to(w, RUN_SETTLED);
	expect_created(w, "[2]");
	expect_set(w, 2, false);
	expect_own_pods(w, 0, 2);
}

/* Claims being deleted are no claim set to clean: nothing is started, not even after a success. */
static void test_terminating_claims(void **state)
{
	struct world *w = *state;
	/* Both being deleted (a reader keeps them): nothing. */
	start_world(w, &(struct setup){.replicas = 2});
	static const char *const both[] = {"data-web-1", "wal-web-1", NULL};
	json_array_append_new(w->pods, foreign_pod(w, "reader", both));
	for (int i = 0; both[i]; i++)
		json_object_set_new(sim_meta(find(w->pvcs, both[i])), "deletionTimestamp", json_string(START));
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	assert_int_equal(json_array_size(w->created), 0);
	world_release(w);

	/* One kept by a reader after a success: deleted, still there; no second cleanup. */
	start_world(w, &(struct setup){.replicas = 2});
	static const char *const one[] = {"data-web-1", NULL};
	json_array_append_new(w->pods, foreign_pod(w, "reader", one));
	scale(w, 1);
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1]");
	const json_t *pvc = find(w->pvcs, "data-web-1");
	assert_true(pvc && sim_terminating(pvc));
	assert_null(find(w->pvcs, "wal-web-1"));
	expect_no_cleanup_pod(w);
	w->now_ms += 3600L * 1000;
	plan_past_status(w);
	if (step_of(&w->a) != STEP_NOTHING)
		world_fail(w, "an hour later: %s", w->steps.seen);
	sim_remove(w->pods, find(w->pods, "reader"));
	run_to(w, RUN_SETTLED);
	assert_null(find(w->pvcs, "data-web-1"));
	expect_created(w, "[1]");
	assert_int_equal(sim_counted(w->counts, SUCCEEDED_TOTAL), 1);
}

/* Claim name is there with UID uid, not being deleted. */
static void expect_uid_kept(struct world *w, const char *name, const char *uid)
{
	const json_t *pvc = find(w->pvcs, name);
	if (!pvc || sim_terminating(pvc) || !sim_streq(kube_obj_str(pvc, "metadata.uid"), uid))
		world_fail(w, "claim %s (uid %s) was not kept", name, uid);
}

/*
 * Claims named like the set's but without its selector's matchLabels
 * (made by hand, a restore) are not the set's: never mounted, never
 * deleted. data-web-2, the only claim named for ordinal 2, gets no cleanup
 * pod; wal-web-1, made by hand in place of the set's, is left out of
 * ordinal 1's cleanup. Not even on deletion.
 */
static void test_claims_without_the_selector_labels(void **state)
{
	struct world *w = *state;
	world_init(w, &(struct setup){.replicas = 2});
	json_array_append_new(w->pvcs, claim_obj("data-web-2", NS, "uid-restored-data-web-2", "restore"));
	sim_remove(w->pvcs, find(w->pvcs, "wal-web-1"));
	json_t *bare = claim_obj("wal-web-1", NS, "uid-restored-wal-web-1", "restore");
	json_object_del(sim_meta(bare), "labels");
	json_array_append_new(w->pvcs, bare);
	run_to(w, RUN_SETTLED);
	assert_true(has_finalizer(w, FINALIZER_SCALEDOWN));
	assert_int_equal(json_array_size(w->created), 0);
	expect_uid_kept(w, "data-web-2", "uid-restored-data-web-2");

	scale(w, 1);
	static const enum step create = STEP_CREATE_POD;
	if (run(w, asks_for, &create) != RUN_STOPPED)
		world_fail(w, "no cleanup pod for ordinal 1");
	json_t *want = json_pack("{s:s}", "data-web-1", "uid-data-web-1");
	json_t *claims = claims_of(&w->a);
	bool same = sim_streq(w->a.name, "web-1") && json_equal(want, claims);
	json_decref(claims);
	json_decref(want);
	if (!same)
		world_fail(w, "the cleanup pod of ordinal 1 does not mount data-web-1 alone: %s", w->steps.seen);
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1]");
	expect_claim_gone(w, "data-web-1");
	expect_uid_kept(w, "wal-web-1", "uid-restored-wal-web-1");
	expect_uid_kept(w, "data-web-2", "uid-restored-data-web-2");
	expect_no_cleanup_pod(w);

	mark_deleted(w);
	run_to(w, RUN_GONE);
	expect_created(w, "[1,0]");
	expect_set(w, 0, false);
	expect_uid_kept(w, "wal-web-1", "uid-restored-wal-web-1");
	expect_uid_kept(w, "data-web-2", "uid-restored-data-web-2");
	const json_t *last = json_array_get(w->history, json_array_size(w->history) - 1);
	if (!sim_streq(kube_obj_str(last, "step"), "REMOVE_FINALIZER") || !sim_streq(kube_obj_str(last, "type"), "Normal"))
		world_fail(w, "the finalizer went with a Warning: claims that are not the set's were taken for its own");
	expect_decoys(w);
}

/* ---- 8. crash safety ---- */

struct scenario {
	const char *label;
	struct setup s;
	int scale_to; /* -1: delete the StatefulSet */
	int fail_ordinal, fail_first;
	bool owned_claims; /* whenDeleted Delete: the claims owned by the StatefulSet */
};

static const struct scenario scenarios[] = {
	{"OrderedReady 3 -> 1", {.replicas = 3}, 1, -1, 0, false},
	{"Parallel 4 -> 1 by 2",
	 {.replicas = 4, .parallel = true, .annotations = {{ANNOTATION_SCALEDOWN_PARALLELISM, "2"}}},
	 1,
	 -1,
	 0,
	 false},
	{"a retry, then success", {.replicas = 2}, 1, 1, 1, false},
	{"given up", {.replicas = 3}, 1, 2, 99, false},
	{"StatefulSet deleted", {.replicas = 3}, -1, -1, 0, false},
	{"StatefulSet deleted, Parallel", {.replicas = 3, .parallel = true}, -1, 1, 1, false},
	{"StatefulSet deleted, one given up, claims owned",
	 {.replicas = 3, .annotations = {{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "1"}}},
	 -1,
	 1,
	 99,
	 true},
};

/* Plays scenario i: the world at the end and what was counted. */
static void play(void *world, size_t i, bool twice, struct sim_play *p)
{
	struct world *w = world;
	const struct scenario *sc = &scenarios[i];
	start_world(w, &sc->s);
	if (sc->owned_claims)
		own_claims(w);
	w->double_apply = twice;
	if (sc->fail_ordinal >= 0)
		map_set(w->fail_first, sc->fail_ordinal, sc->fail_first);
	if (sc->scale_to < 0)
		mark_deleted(w);
	else
		scale(w, sc->scale_to);
	run_to(w, sc->scale_to < 0 ? RUN_GONE : RUN_SETTLED);
	const json_t *objs[] = {w->sts, w->pvcs, w->pods, w->counts, w->created};
	p->label = sc->label;
	p->end = sim_dump(objs, NITEMS(objs));
	p->conflicts = w->conflicts;
	p->steps = w->trace.text;
}

static void release_world(void *world)
{
	world_release(world);
}

static void test_every_step_twice(void **state)
{
	sim_every_step_twice(*state, NITEMS(scenarios), play, release_world);
}

/*
 * A crash right after CREATE_POD: the process starts again on a world that
 * has the pod. The planner goes on from there: the pod is not asked for
 * again, the cleanup ends as it would have.
 */
static void test_create_already_done(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 2});
	scale(w, 1);
	static const enum step create = STEP_CREATE_POD;
	if (run(w, asks_for, &create) != RUN_STOPPED)
		world_fail(w, "no cleanup pod");
	apply(w, &w->a);
	run_to(w, RUN_SETTLED);
	expect_created(w, "[1]");
	assert_int_equal(w->conflicts, 0);
	expect_set(w, 1, false);
	expect_no_cleanup_pod(w);
}

/* ---- the state fixtures: SOP_STATE_FIXTURES_OUT=<dir> (tests/fixtures/state/README.md) ---- */

static void write_fixture(const struct world *w, const char *out, const char *phase)
{
	json_t *objects = json_pack("{s:O, s:O, s:O}", "statefulSet", w->sts, "pvcs", w->pvcs, "pods", w->pods);
	state_fixture_write(out, "scaledown", phase,
			    "scale-down 3 -> 1 replicas, claims data and wal, the first cleanup of ordinal 2 fails: "
			    "written by test_scaledown_plan's simulation",
			    objects, w->now_ms, &w->a);
	json_decref(objects);
}

/* A stop_fn that never stops: writes the world at the phases a fixture is kept of, the first time each comes. */
static bool fixture_phase(const struct world *w, const void *arg)
{
	const json_t *pod = find(w->pods, "web-2");
	bool running = pod && is_cleanup(w, pod) && sim_streq(phase_of(pod), "Running") && !sim_terminating(pod);
	if (running && !sim_annotation(w->sts, ANNOTATION_SCALEDOWN_STATE))
		write_fixture(w, arg, "cleanup-running"); /* the first attempt */
	else if (step_of(&w->a) == STEP_CREATE_POD && sim_annotation(w->sts, ANNOTATION_SCALEDOWN_STATE))
		write_fixture(w, arg, "retry-after-failure"); /* the failure recorded, its backoff over */
	else if (running)
		write_fixture(w, arg, "cleanup-running-after-failure");
	return false;
}

static void test_write_state_fixtures(void **state)
{
	struct world *w = *state;
	start_world(w, &(struct setup){.replicas = 3});
	map_set(w->fail_first, 2, 1);
	scale(w, 1);
	if (run(w, fixture_phase, state_fixture_out()) != RUN_SETTLED)
		world_fail(w, "the scale-down did not come to rest");
	write_fixture(w, state_fixture_out(), "done");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)

int main(void)
{
	if (state_fixture_out()) {
		const struct CMUnitTest write[] = {TEST(test_write_state_fixtures)};
		return cmocka_run_group_tests(write, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		TEST(test_step_names_and_backoff),
		TEST(test_nothing_there),
		TEST(test_asks_nothing),
		TEST(test_scale_down_ordered),
		TEST(test_ordinals_start),
		TEST(test_jboss_legacy_key),
		TEST(test_parallel),
		TEST(test_failure_backoff_and_give_up),
		TEST(test_failure_message_recorded_clean),
		TEST(test_backoff_is_never_short),
		TEST(test_backoff_grows_and_caps),
		TEST(test_max_attempts_and_recovery),
		TEST(test_ordered_gives_up_then_goes_on),
		TEST(test_parallel_retry_holds_its_place),
		TEST(test_timeout),
		TEST(test_cleanup_cut_short),
		TEST(test_scale_up_during_cleanup),
		TEST(test_statefulset_deletion),
		TEST(test_statefulset_deletion_parallel),
		TEST(test_deletion_never_stops_foreign_pods),
		TEST(test_deletion_disowns_kept_claims),
		TEST(test_orphan_deletion),
		TEST(test_finalizer),
		TEST(test_ignore_annotation),
		TEST(test_refusals),
		TEST(test_own_pod_still_terminating),
		TEST(test_terminating_claims),
		TEST(test_claims_without_the_selector_labels),
		TEST(test_every_step_twice),
		TEST(test_create_already_done),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
