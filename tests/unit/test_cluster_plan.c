/*
 * The StatefulCluster planner (cluster_plan.c).
 *
 * The planner is pure: the StatefulCluster, its namespace's pods, claims,
 * ControllerRevisions, the nodes and the clock in, one step out. These
 * tests keep one StatefulCluster in memory with a simulator that plays the
 * API server (UIDs, resourceVersions, 409 for a name that is taken or a
 * resourceVersion that moved, a UID precondition on every delete, a status
 * subresource) and the controllers that answer: the scheduler (a pod goes
 * to the Ready node with the fewest pods), the kubelet (Pending -> Running
 * once its claims are there, Ready a configurable time after it started;
 * the test can make a pod Failed, Evicted or stop being Ready), the node
 * lifecycle controller (pods of a NotReady node stop being Ready; their
 * kubelet does nothing, so only a forced delete removes them), the garbage
 * collector (pods, claims and revisions whose owners are all gone) and PVC
 * protection (a deleted claim goes once no running pod mounts it). The API
 * server answers each step at once; the controllers only work while the
 * planner waits or rests, and the clock only moves then (to the planner's
 * requeue, the kubelet's next change, or a second after a change). The
 * planner gets deleted_uids as the controller keeps them (pods it deleted
 * that its cache does not show going yet); one test makes the cache lag.
 *
 * Every run checks, at every step:
 *   - the same inputs give the same step, and a step performed is never
 *     asked for again unchanged;
 *   - identities: the state's "next" never decreases; an identity that
 *     left the members never comes back; a new member's name was never
 *     used by a pod or a claim before;
 *   - a pod is created only for a member, after its claims, in the shape
 *     users rely on (hostname, subdomain, labels, owner, volumes, the
 *     revision it should run); a claim only for a member;
 *   - a member is replaced only when it failed (pod Failed, its node lost
 *     for nodeLostAfterSeconds, not Ready past unhealthyAfterSeconds and
 *     the start-up grace); scale-down takes members not Ready first, then
 *     the newest; a claim is deleted only when the policy of the way its
 *     member left says Delete and no pod of that name is left;
 *   - a pod deleted for an update leaves at most maxUnavailable members
 *     unavailable (counted on the real world), and at most maxUnavailable
 *     members taken down for the update (also on a lagging cache);
 *   - a member dropped from the state by someone else's hand (an older copy
 *     of the annotation) comes back only by RecoverMember, with a live pod;
 *   - the planner never touches a pod it does not control, nor a claim or
 *     revision that is not its own or is in use.
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
#include "controllers/cluster/cluster_plan.h"
#include "sim.h"
#include "state_fixture.h"
#include "terminal_scan.h"
#include "util/duration.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define NS "ns"
#define NAME "coder"
#define CLUSTER_UID "uid-stc-coder"
#define OTHER_OWNER_UID "uid-keeper"
#define START "2026-11-21T12:00:00Z"
#define MAX_STEPS 4000
#define REPLACEMENTS_TOTAL "stateful_operator_cluster_member_replacements_total"
#define SELECTOR_STRING "app=coder,enge.me/statefulcluster=coder"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The seed's own example (the 2019 stateful-cluster-operator README), with
 * its apiVersion changed to ours: a selector of two labels, a template
 * without labels, one claim template "data".
 */
static const char SEED[] =
	"{\"apiVersion\": \"stateful-operator.io/v1alpha1\", \"kind\": \"StatefulCluster\","
	" \"metadata\": {\"name\": \"coder\"},"
	" \"spec\": {\"replicas\": 3,"
	"  \"selector\": {\"matchLabels\": {\"app\": \"coder\", \"enge.me/statefulcluster\": \"coder\"}},"
	"  \"template\": {\"spec\": {\"containers\": [{\"args\": [\"--allow-http\", \"--no-auth\", \"--host\", \"0.0.0.0\"],"
	"   \"image\": \"codercom/code-server\", \"name\": \"coder-stateful\","
	"   \"ports\": [{\"containerPort\": 8443, \"name\": \"https\"}],"
	"   \"volumeMounts\": [{\"mountPath\": \"/home/coder/project\", \"name\": \"data\"}]}]}},"
	"  \"volumeClaimTemplates\": [{\"metadata\": {\"name\": \"data\"},"
	"   \"spec\": {\"accessModes\": [\"ReadWriteOnce\"], \"resources\": {\"requests\": {\"storage\": \"1Gi\"}}}}]}}";

/* What most tests add to the seed: a headless service, a volume and an annotation of the user's. */
static const char USUAL[] =
	"{\"serviceName\": \"coder\","
	" \"template\": {\"metadata\": {\"annotations\": {\"example.com/note\": \"keep me\"}},"
	"  \"spec\": {\"volumes\": [{\"name\": \"settings\", \"configMap\": {\"name\": \"coder-settings\"}}]}}}";

/* ---- the steps, as the tests tell them apart ---- */

enum step {
	STEP_UNKNOWN,
	STEP_NOTHING,
	STEP_REFUSE,
	STEP_SET_STATE,
	STEP_CREATE_REVISION,
	STEP_DELETE_REVISION,
	STEP_CREATE_CLAIM,
	STEP_PATCH_CLAIM,
	STEP_DELETE_CLAIM,
	STEP_CREATE_POD,
	STEP_DELETE_POD,
	STEP_UPDATE_STATUS,
	STEP_WAIT,
};

/* The step an action is, by its verb and the object it writes; STEP_UNKNOWN for one the planner never makes. */
static enum step step_of(const struct action *a)
{
	const struct kube_resource *r = a->resource;
	switch (a->verb) {
	case ACTION_NOTHING:
		return STEP_NOTHING;
	case ACTION_REFUSE:
		return STEP_REFUSE;
	case ACTION_WAIT:
		return STEP_WAIT;
	case ACTION_CREATE:
		return r == &KUBE_PODS ? STEP_CREATE_POD : r == &KUBE_PVCS ? STEP_CREATE_CLAIM :
		       r == &KUBE_CONTROLLERREVISIONS ? STEP_CREATE_REVISION : STEP_UNKNOWN;
	case ACTION_DELETE:
		return r == &KUBE_PODS ? STEP_DELETE_POD : r == &KUBE_PVCS ? STEP_DELETE_CLAIM :
		       r == &KUBE_CONTROLLERREVISIONS ? STEP_DELETE_REVISION : STEP_UNKNOWN;
	case ACTION_PATCH:
		if (r == &KUBE_PVCS && !a->subresource)
			return STEP_PATCH_CLAIM;
		if (r != &KUBE_STATEFULCLUSTERS || !sim_streq(a->name, NAME))
			return STEP_UNKNOWN;
		return !a->subresource ? STEP_SET_STATE : sim_streq(a->subresource, "status") ? STEP_UPDATE_STATUS :
										 STEP_UNKNOWN;
	case ACTION_OWN:
		break;
	}
	return STEP_UNKNOWN;
}

/* What the step writes: the state a SET_STATE writes, the status an UPDATE_STATUS writes, else the body. */
static const json_t *step_body(const struct action *a)
{
	switch (step_of(a)) {
	case STEP_SET_STATE:
		return a->state;
	case STEP_UPDATE_STATUS:
		return json_object_get(a->body, "status");
	default:
		return a->body;
	}
}

/* Our own short names, so the tests do not depend on the log names. */
static const char *step_id(enum step s)
{
	switch (s) {
	case STEP_NOTHING:
		return "NOTHING";
	case STEP_REFUSE:
		return "REFUSE";
	case STEP_SET_STATE:
		return "SET_STATE";
	case STEP_CREATE_REVISION:
		return "CREATE_REVISION";
	case STEP_DELETE_REVISION:
		return "DELETE_REVISION";
	case STEP_CREATE_CLAIM:
		return "CREATE_CLAIM";
	case STEP_PATCH_CLAIM:
		return "PATCH_CLAIM";
	case STEP_DELETE_CLAIM:
		return "DELETE_CLAIM";
	case STEP_CREATE_POD:
		return "CREATE_POD";
	case STEP_DELETE_POD:
		return "DELETE_POD";
	case STEP_UPDATE_STATUS:
		return "UPDATE_STATUS";
	case STEP_WAIT:
		return "WAIT";
	case STEP_UNKNOWN:
		break;
	}
	return "?";
}

static bool resting(enum step s)
{
	return s == STEP_WAIT || s == STEP_NOTHING || s == STEP_REFUSE;
}

/* ---- reading and changing objects ---- */

static bool controlled(const json_t *obj)
{
	return sim_owned_by(obj, CLUSTER_UID, true);
}

static bool int_in_array(const json_t *arr, long n)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		if (json_is_integer(e) && json_integer_value(e) == n)
			return true;
	}
	return false;
}

static const json_t *condition(const json_t *obj, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c) {
		if (sim_streq(kube_obj_str(c, "type"), type))
			return c;
	}
	return NULL;
}

static const char *condition_status(const json_t *obj, const char *type)
{
	return kube_obj_str(condition(obj, type), "status");
}

/* Sets condition type of obj to status, moving lastTransitionTime only when it changes. */
static void set_condition(json_t *obj, const char *type, bool status, long long ms)
{
	json_t *st = json_object_get(obj, "status");
	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(obj, "status", st);
	}
	json_t *conds = json_object_get(st, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(st, "conditions", conds);
	}
	json_t *c = (json_t *)condition(obj, type);
	const char *want = status ? "True" : "False";
	if (c && sim_streq(kube_obj_str(c, "status"), want))
		return;
	if (!c) {
		c = json_pack("{s:s}", "type", type);
		json_array_append_new(conds, c);
	}
	char ts[32];
	sim_rfc3339(ms, ts, sizeof(ts));
	json_object_set_new(c, "status", json_string(want));
	json_object_set_new(c, "lastTransitionTime", json_string(ts));
}

static long pod_identity(const char *name)
{
	return sim_number_after(name, NAME "-", 9);
}

/* ---- the world ---- */

struct world {
	json_t *cluster; /* NULL once it is gone */
	json_t *pods, *pvcs, *revisions, *nodes;
	long long now_ms, start_ms;
	int serial;
	long long rv;
	/* the kubelet's script */
	long long start_delay_ms, ready_delay_ms;
	json_t *ready_after;  /* pod name -> ms from its start to Ready */
	json_t *held;         /* pod UID -> true: not Ready until released */
	json_t *alive_owners; /* UIDs of owners other than the cluster that exist */
	bool double_apply;    /* every step performed twice: a crash before the result is seen */
	bool hold_terminating; /* the kubelet keeps deleted pods terminating (it has not finished them yet) */
	int lag;              /* the planner sees the pods as they were this many steps ago */
	long long max_wait_ms; /* the clock moves at most this much per wait; 0: as requested */
	json_t *snapshots;    /* lag: the pods before each of the last steps, oldest first */
	bool view_stale;      /* the last plan saw pods that differ from the world's */
	json_t *deleted_uids; /* pods the controller deleted that its cache has not shown going */
	char planned_rv[32];  /* the cluster's resourceVersion the step was planned from */
	struct action a;
	/* what was seen */
	struct sim_trace trace;
	int iterations, conflicts;
	json_t *history;     /* every step: {t, step, what, object, force, type, reason, message, requeue} */
	json_t *counts;      /* metric family -> n */
	json_t *pod_names;   /* pod name -> pods of that name created */
	json_t *claim_uids;  /* claim name -> the UID it was first created with */
	json_t *ever;        /* identity -> true: it was a member once */
	json_t *left;        /* identity -> how it left: "Replaced", "Scaled", "Dropped" */
	long long max_next;  /* the highest "next" the state ever showed */
	bool track_down;
	int max_down;        /* most members unavailable at once while tracking */
	json_t *updating;    /* identity -> UID of the pod deleted for an update, until its successor is available */
	int first_ready_pods; /* controlled pods there when a pod first became Ready; -1 before */
	struct sim_steps steps;
};

/* Adds to the steps so far, formatted like printf. */
#define trace(w, ...) sim_trace_add(&(w)->trace, __VA_ARGS__)
/* Fails the test, printing every step so far. */
#define world_fail(w, ...) sim_fail((w)->trace.text, __VA_ARGS__)

static void world_release(struct world *w)
{
	action_release(&w->a);
	json_decref(w->cluster);
	json_decref(w->pods);
	json_decref(w->pvcs);
	json_decref(w->revisions);
	json_decref(w->nodes);
	json_decref(w->ready_after);
	json_decref(w->held);
	json_decref(w->alive_owners);
	json_decref(w->snapshots);
	json_decref(w->deleted_uids);
	json_decref(w->history);
	json_decref(w->counts);
	json_decref(w->pod_names);
	json_decref(w->claim_uids);
	json_decref(w->ever);
	json_decref(w->left);
	json_decref(w->updating);
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

static void bump(struct world *w, json_t *obj)
{
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", ++w->rv);
	json_object_set_new(sim_meta(obj), "resourceVersion", json_string(rv));
}

/* What the API server fills in on create. */
static void stamp(struct world *w, json_t *obj, const char *kind)
{
	char uid[64], ts[32];
	snprintf(uid, sizeof(uid), "uid-%s-%d", kind, ++w->serial);
	sim_rfc3339(w->now_ms, ts, sizeof(ts));
	if (!json_is_object(sim_meta(obj)))
		json_object_set_new(obj, "metadata", json_object());
	json_object_set_new(sim_meta(obj), "uid", json_string(uid));
	json_object_set_new(sim_meta(obj), "namespace", json_string(NS));
	json_object_set_new(sim_meta(obj), "creationTimestamp", json_string(ts));
	bump(w, obj);
}

static json_t *spec(const struct world *w)
{
	return json_object_get(w->cluster, "spec");
}

static const json_t *at(const json_t *obj, const char *path)
{
	const json_t *v = obj;
	char *copy = xstrdup(path), *save = NULL;
	for (char *part = strtok_r(copy, ".", &save); part && v; part = strtok_r(NULL, ".", &save))
		v = json_object_get(v, part);
	free(copy);
	return v;
}

static long long spec_int(const struct world *w, const char *path, long long dflt)
{
	const json_t *v = at(spec(w), path);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const char *spec_str(const struct world *w, const char *path)
{
	return json_string_value(at(spec(w), path));
}

static const char *policy(const struct world *w, const char *key)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(spec(w), "persistentVolumeClaimRetentionPolicy"), key));
	return sim_streq(v, "Delete") ? "Delete" : "Retain";
}

static int replicas(const struct world *w)
{
	return (int)spec_int(w, "replicas", 1);
}

/* maxUnavailable as the CRD documents it: an integer, or a percentage of replicas rounded down; at least 1. */
static int max_unavailable(const struct world *w)
{
	const json_t *v = at(spec(w), "updateStrategy.rollingUpdate.maxUnavailable");
	long long n = 1;
	if (json_is_integer(v))
		n = json_integer_value(v);
	else if (json_is_string(v))
		n = replicas(w) * atoll(json_string_value(v)) / 100;
	return n < 1 ? 1 : (int)n;
}

static bool on_delete(const struct world *w)
{
	return sim_streq(spec_str(w, "updateStrategy.type"), "OnDelete");
}

/* The claim template names (the seed's "data" once the cluster is gone). */
static json_t *vct_names(const struct world *w)
{
	json_t *names = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(spec(w), "volumeClaimTemplates"), i, t) {
		json_array_append_new(names, json_string(kube_obj_str(t, "metadata.name")));
	}
	if (!w->cluster)
		json_array_append_new(names, json_string("data"));
	return names;
}

/* The identity of a claim <template>-coder-<n>, or -1. */
static long claim_identity(const struct world *w, const char *claim)
{
	json_t *names = vct_names(w);
	long n = -1;
	size_t i;
	json_t *t;
	json_array_foreach(names, i, t) {
		char prefix[128];
		snprintf(prefix, sizeof(prefix), "%s-%s-", json_string_value(t), NAME);
		if (n < 0)
			n = sim_number_after(claim, prefix, 9);
	}
	json_decref(names);
	return n;
}

/* The state annotation, parsed (new reference), or NULL. */
static json_t *state_of(const struct world *w)
{
	const char *text = w->cluster ? sim_annotation(w->cluster, ANNOTATION_CLUSTER_STATE) : NULL;
	return text ? json_loads(text, 0, NULL) : NULL;
}

static bool is_member(const struct world *w, long n)
{
	json_t *st = state_of(w);
	bool yes = int_in_array(json_object_get(st, "members"), n);
	json_decref(st);
	return yes;
}

static json_t *pod_of(const struct world *w, long n)
{
	char name[64];
	snprintf(name, sizeof(name), "%s-%ld", NAME, n);
	return sim_find(w->pods, name);
}

static bool pod_ready(const json_t *pod)
{
	return pod && !sim_terminating(pod) && sim_streq(condition_status(pod, "Ready"), "True");
}

static bool pod_available(const struct world *w, const json_t *pod)
{
	if (!pod_ready(pod))
		return false;
	long long since = sim_time_ms(kube_obj_str(condition(pod, "Ready"), "lastTransitionTime"));
	return since >= 0 && since + spec_int(w, "minReadySeconds", 0) * 1000 <= w->now_ms;
}

/* Members whose pod is missing, going, not Ready or not yet available: the real world, not the cache. */
static int down_now(const struct world *w)
{
	json_t *st = state_of(w);
	int down = 0;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(st, "members"), i, m) {
		const json_t *pod = pod_of(w, (long)json_integer_value(m));
		if (!pod || !controlled(pod) || !pod_available(w, pod))
			down++;
	}
	json_decref(st);
	return down;
}

static const json_t *node_named(const struct world *w, const char *name)
{
	return name ? sim_find(w->nodes, name) : NULL;
}

static bool node_ready(const struct world *w, const char *name)
{
	return sim_streq(condition_status(node_named(w, name), "Ready"), "True");
}

/*
 * Whether member n counts as failed, as SPEC section "cluster" says: its
 * pod Failed (or evicted), its node gone or not Ready for
 * nodeLostAfterSeconds, or not Ready for unhealthyAfterSeconds counted from
 * when it stopped being Ready and never from before the start-up grace.
 */
static bool member_failed(const struct world *w, long n)
{
	const json_t *pod = pod_of(w, n);
	if (!pod || !controlled(pod))
		return false;
	if (sim_streq(kube_obj_str(pod, "status.phase"), "Failed"))
		return true;
	const char *node = kube_obj_str(pod, "spec.nodeName");
	if (node) {
		const json_t *nd = node_named(w, node);
		if (!nd)
			return true;
		if (!node_ready(w, node)) {
			long long since = sim_time_ms(kube_obj_str(condition(nd, "Ready"), "lastTransitionTime"));
			if (since + spec_int(w, "replacement.nodeLostAfterSeconds", CLUSTER_DEFAULT_NODE_LOST_S) * 1000 <=
			    w->now_ms)
				return true;
		}
	}
	if (pod_ready(pod) || sim_terminating(pod))
		return false;
	long long started = sim_time_ms(kube_obj_str(pod, "status.startTime"));
	if (started < 0)
		started = sim_time_ms(kube_obj_str(pod, "metadata.creationTimestamp"));
	long long from = started + spec_int(w, "replacement.startupGraceSeconds", CLUSTER_DEFAULT_STARTUP_GRACE_S) * 1000;
	long long since = sim_time_ms(kube_obj_str(condition(pod, "Ready"), "lastTransitionTime"));
	if (since > from)
		from = since;
	return from + spec_int(w, "replacement.unhealthyAfterSeconds", CLUSTER_DEFAULT_UNHEALTHY_S) * 1000 <= w->now_ms;
}

/* s is one of the strings of arr. */
static bool str_in_array(const json_t *arr, const char *s)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v) {
		if (sim_streq(json_string_value(v), s))
			return true;
	}
	return false;
}

/* The pod name is in spec.removeMembers. */
static bool removal_named(const struct world *w, const char *pod)
{
	return str_in_array(json_object_get(spec(w), "removeMembers"), pod);
}

/* The pod name is one of the names of the replace-members annotation (comma-separated, spaces around). */
static bool replace_requested(const struct world *w, const char *pod)
{
	const char *text = sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE);
	if (!text)
		return false;
	char *copy = xstrdup(text), *save = NULL;
	bool found = false;
	for (char *t = strtok_r(copy, ",", &save); t && !found; t = strtok_r(NULL, ",", &save)) {
		t += strspn(t, " \t");
		size_t len = strlen(t);
		while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
			t[--len] = '\0';
		found = sim_streq(t, pod);
	}
	free(copy);
	return found;
}

/* The controlled revision holding tmpl, or NULL. */
static const json_t *revision_of_template(const struct world *w, const json_t *tmpl)
{
	size_t i;
	json_t *r;
	json_array_foreach(w->revisions, i, r) {
		if (controlled(r) && json_equal(json_object_get(json_object_get(r, "data"), "template"), tmpl))
			return r;
	}
	return NULL;
}

static const char *update_revision(const struct world *w)
{
	return kube_obj_str(revision_of_template(w, json_object_get(spec(w), "template")), "metadata.name");
}

/* The current revision: the state's (it survives a status wipe), else the status's. */
static const char *current_revision(const struct world *w)
{
	json_t *st = state_of(w);
	const char *cur = json_string_value(json_object_get(st, "currentRevision"));
	const json_t *r = cur ? sim_find(w->revisions, cur) : NULL;
	json_decref(st);
	if (r)
		return kube_obj_str(r, "metadata.name"); /* borrowed from the revision, not the parsed state */
	return kube_obj_str(w->cluster, "status.currentRevision");
}

/* The revision member n should run: the current one when ranked below partition, else the update one. */
static const char *target_revision(const struct world *w, long n)
{
	const char *update = update_revision(w);
	if (on_delete(w))
		return update;
	json_t *st = state_of(w);
	int rank = 0;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(st, "members"), i, m) {
		rank += json_integer_value(m) < n;
	}
	json_decref(st);
	const char *current = current_revision(w);
	if (rank < spec_int(w, "updateStrategy.rollingUpdate.partition", 0) && current && sim_find(w->revisions, current))
		return current;
	return update;
}

static json_t *cluster_obj(struct world *w, const char *extra, const char *more)
{
	json_error_t err;
	json_t *c = json_loads(SEED, 0, &err);
	if (!c)
		fail_msg("SEED: %s", err.text);
	const char *patches[] = {extra, more};
	for (size_t i = 0; i < NITEMS(patches); i++) {
		if (!patches[i])
			continue;
		json_t *p = json_loads(patches[i], 0, &err);
		if (!p)
			fail_msg("spec %s: %s", patches[i], err.text);
		sim_merge_patch(json_object_get(c, "spec"), p);
		json_decref(p);
	}
	char ts[32];
	sim_rfc3339(w->now_ms, ts, sizeof(ts));
	json_object_set_new(sim_meta(c), "namespace", json_string(NS));
	json_object_set_new(sim_meta(c), "uid", json_string(CLUSTER_UID));
	json_object_set_new(sim_meta(c), "generation", json_integer(1));
	json_object_set_new(sim_meta(c), "creationTimestamp", json_string(ts));
	bump(w, c);
	return c;
}

static json_t *node_obj(const char *name, const char *since)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:s, s:s}]}}", "apiVersion", "v1", "kind", "Node",
			 "metadata", "name", name, "uid", name, "status", "conditions", "type", "Ready", "status",
			 "True", "lastTransitionTime", since);
}

/* Objects of the namespace that are not the cluster's: the planner must leave them alone. */
static void add_decoys(struct world *w)
{
	static const char *const claims[] = {"data-coder-01", "data-coder-x", "logs-coder-1", "data-coder-db-0"};
	for (size_t i = 0; i < NITEMS(claims); i++) {
		json_t *pvc = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
					"PersistentVolumeClaim", "metadata", "name", claims[i], "status", "phase", "Bound");
		stamp(w, pvc, "decoy");
		json_array_append_new(w->pvcs, pvc);
	}
	static const char *const pods[] = {"coder-db-0", "coder-01"};
	for (size_t i = 0; i < NITEMS(pods); i++) {
		json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]},"
					" s:{s:[{s:s, s:s}]}, s:{s:s}}",
					"apiVersion", "v1", "kind", "Pod", "metadata", "name", pods[i], "labels", "app",
					"coder", "ownerReferences", "apiVersion", "apps/v1", "kind", "StatefulSet", "name",
					"coder-db", "uid", "uid-sts-coder-db", "controller", 1, "spec", "containers", "name",
					"db", "image", "postgres", "status", "phase", "Running");
		stamp(w, pod, "decoy");
		json_array_append_new(w->pods, pod);
	}
}

static void expect_decoys(struct world *w)
{
	int n = 0;
	size_t i;
	json_t *o;
	json_array_foreach(w->pvcs, i, o) {
		n += sim_contains(kube_obj_str(o, "metadata.uid"), "uid-decoy-") && !sim_terminating(o);
	}
	json_array_foreach(w->pods, i, o) {
		n += sim_contains(kube_obj_str(o, "metadata.uid"), "uid-decoy-") && !sim_terminating(o);
	}
	if (n != 6)
		world_fail(w, "only %d of the 6 objects that are not the cluster's are left untouched", n);
}

/* A StatefulCluster, the seed's example with extra and more merged into its spec, on three Ready nodes. */
static void world_init(struct world *w, const char *extra, const char *more)
{
	world_release(w);
	w->start_ms = w->now_ms = rfc3339_seconds(START) * 1000;
	w->rv = 100;
	w->start_delay_ms = 1000;
	w->ready_delay_ms = 2000;
	w->first_ready_pods = -1;
	w->cluster = cluster_obj(w, extra, more);
	w->pods = json_array();
	w->pvcs = json_array();
	w->revisions = json_array();
	w->nodes = json_array();
	static const char *const nodes[] = {"node-a", "node-b", "node-c"};
	for (size_t i = 0; i < NITEMS(nodes); i++)
		json_array_append_new(w->nodes, node_obj(nodes[i], "2026-11-21T00:00:00Z"));
	w->ready_after = json_object();
	w->held = json_object();
	w->alive_owners = json_pack("[s]", "uid-sts-coder-db");
	w->deleted_uids = json_array();
	w->history = json_array();
	w->counts = json_object();
	w->pod_names = json_object();
	w->claim_uids = json_object();
	w->ever = json_object();
	w->left = json_object();
	w->updating = json_object();
	add_decoys(w);
}

/* The user edits the spec (a merge patch): generation and resourceVersion move. */
static void spec_patch(struct world *w, const char *patch_text)
{
	json_error_t err;
	json_t *p = json_loads(patch_text, 0, &err);
	if (!p)
		fail_msg("patch %s: %s", patch_text, err.text);
	sim_merge_patch(spec(w), p);
	json_decref(p);
	json_object_set_new(sim_meta(w->cluster), "generation",
			    json_integer(json_integer_value(json_object_get(sim_meta(w->cluster), "generation")) + 1));
	bump(w, w->cluster);
	trace(w, "    (spec patched: %s)\n", patch_text);
}

static void scale_to(struct world *w, int n)
{
	char p[64];
	snprintf(p, sizeof(p), "{\"replicas\": %d}", n);
	spec_patch(w, p);
}

/* A new image: a template change. */
static void set_image(struct world *w, const char *image)
{
	json_object_set_new(json_array_get(json_object_get(json_object_get(json_object_get(spec(w), "template"),
									    "spec"),
							    "containers"),
					   0),
			    "image", json_string(image));
	json_object_set_new(sim_meta(w->cluster), "generation",
			    json_integer(json_integer_value(json_object_get(sim_meta(w->cluster), "generation")) + 1));
	bump(w, w->cluster);
	trace(w, "    (image %s)\n", image);
}

static void wipe_state(struct world *w)
{
	json_object_del(json_object_get(sim_meta(w->cluster), "annotations"), ANNOTATION_CLUSTER_STATE);
	bump(w, w->cluster);
	trace(w, "    (state annotation removed)\n");
}

static void wipe_status(struct world *w)
{
	json_object_del(w->cluster, "status");
	bump(w, w->cluster);
	trace(w, "    (status wiped)\n");
}

/* ---- the test's hands ---- */

static json_t *must_pod(struct world *w, const char *name)
{
	json_t *pod = sim_find(w->pods, name);
	if (!pod)
		world_fail(w, "no pod %s", name);
	return pod;
}

static void pod_fail(struct world *w, const char *name, const char *reason, const char *message)
{
	json_t *pod = must_pod(w, name);
	json_t *st = json_object_get(pod, "status");
	json_object_set_new(st, "phase", json_string("Failed"));
	if (reason)
		json_object_set_new(st, "reason", json_string(reason));
	json_object_set_new(st, "message", json_string(message));
	set_condition(pod, "Ready", false, w->now_ms);
	bump(w, pod);
	trace(w, "    (pod %s %s)\n", name, reason ? reason : "Failed");
}

/* The pod stops being Ready (and stays so until released). */
static void pod_unready(struct world *w, const char *name)
{
	json_t *pod = must_pod(w, name);
	json_object_set_new(w->held, kube_obj_str(pod, "metadata.uid"), json_true());
	set_condition(pod, "Ready", false, w->now_ms);
	bump(w, pod);
	trace(w, "    (pod %s not Ready)\n", name);
}

static void node_set(struct world *w, const char *name, bool ready)
{
	json_t *node = sim_find(w->nodes, name);
	set_condition(node, "Ready", ready, w->now_ms);
	trace(w, "    (node %s %s)\n", name, ready ? "Ready" : "NotReady");
}

/* The user asks for members to be rebuilt (kubectl stateful members replace, or kubectl annotate). */
static void request_replace(struct world *w, const char *names)
{
	sim_annotate(w->cluster, ANNOTATION_CLUSTER_REPLACE, names);
	bump(w, w->cluster);
	trace(w, "    (annotated %s=%s)\n", ANNOTATION_CLUSTER_REPLACE, names);
}

/* The user deletes a pod (kubectl delete pod). */
static void user_delete_pod(struct world *w, const char *name)
{
	json_t *pod = must_pod(w, name);
	sim_mark_deleted(pod, w->now_ms);
	trace(w, "    (user deleted pod %s)\n", name);
}

/* ---- the controllers (they work while the planner waits) ---- */

static bool pod_on_ready_node(const struct world *w, const json_t *pod)
{
	return node_ready(w, kube_obj_str(pod, "spec.nodeName"));
}

/* When the kubelet starts this pod (LLONG_MAX: not by the clock). */
static long long start_due(const struct world *w, const json_t *pod)
{
	if (sim_terminating(pod) || !sim_streq(kube_obj_str(pod, "status.phase"), "Pending") ||
	    !pod_on_ready_node(w, pod) || !sim_claims_there(w->pvcs, NULL, pod))
		return LLONG_MAX;
	return sim_time_ms(kube_obj_str(pod, "metadata.creationTimestamp")) + w->start_delay_ms;
}

/* When the kubelet makes this pod Ready (LLONG_MAX: not by the clock). */
static long long ready_due(const struct world *w, const json_t *pod)
{
	if (sim_terminating(pod) || !sim_streq(kube_obj_str(pod, "status.phase"), "Running") || !pod_on_ready_node(w, pod) ||
	    pod_ready(pod) || json_is_true(json_object_get(w->held, kube_obj_str(pod, "metadata.uid"))))
		return LLONG_MAX;
	const json_t *d = json_object_get(w->ready_after, kube_obj_str(pod, "metadata.name"));
	long long delay = json_is_integer(d) ? json_integer_value(d) : w->ready_delay_ms;
	return sim_time_ms(kube_obj_str(pod, "status.startTime")) + delay;
}

static long long kubelet_due(const struct world *w)
{
	long long due = LLONG_MAX;
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		long long s = start_due(w, pod), r = ready_due(w, pod);
		if (s < due)
			due = s;
		if (r < due)
			due = r;
	}
	return due;
}

static int pods_on(const struct world *w, const char *node)
{
	int n = 0;
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		n += sim_streq(kube_obj_str(pod, "spec.nodeName"), node) && !sim_terminating(pod);
	}
	return n;
}

static int controlled_pods(const struct world *w)
{
	int n = 0;
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		n += controlled(pod) && !sim_terminating(pod);
	}
	return n;
}

static void scheduler(struct world *w)
{
	size_t i, k;
	json_t *pod, *node;
	json_array_foreach(w->pods, i, pod) {
		if (sim_terminating(pod) || kube_obj_str(pod, "spec.nodeName") ||
		    !sim_streq(kube_obj_str(pod, "status.phase"), "Pending"))
			continue;
		const char *best = NULL;
		json_array_foreach(w->nodes, k, node) {
			const char *n = kube_obj_str(node, "metadata.name");
			if (node_ready(w, n) && (!best || pods_on(w, n) < pods_on(w, best)))
				best = n;
		}
		if (best) {
			json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(best));
			trace(w, "      ~ pod %s scheduled to %s\n", kube_obj_str(pod, "metadata.name"), best);
		}
	}
}

/* The node lifecycle controller: pods of a node that is not Ready are not Ready either. */
static void node_lifecycle(struct world *w)
{
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		const char *node = kube_obj_str(pod, "spec.nodeName");
		if (node && !node_ready(w, node) && pod_ready(pod)) {
			set_condition(pod, "Ready", false, w->now_ms);
			trace(w, "      ~ pod %s not Ready (node %s)\n", kube_obj_str(pod, "metadata.name"), node);
		}
	}
}

static void kubelet(struct world *w)
{
	for (size_t i = 0; i < json_array_size(w->pods);) {
		json_t *pod = json_array_get(w->pods, i);
		const char *name = kube_obj_str(pod, "metadata.name");
		if (sim_terminating(pod) && pod_on_ready_node(w, pod) && !w->hold_terminating) {
			trace(w, "      ~ pod %s is gone\n", name);
			json_array_remove(w->pods, i);
			continue;
		}
		i++;
		if (start_due(w, pod) <= w->now_ms) {
			char ts[32];
			sim_rfc3339(w->now_ms, ts, sizeof(ts));
			json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Running"));
			json_object_set_new(json_object_get(pod, "status"), "startTime", json_string(ts));
			set_condition(pod, "Ready", false, w->now_ms);
			trace(w, "      ~ pod %s running on %s\n", name, kube_obj_str(pod, "spec.nodeName"));
		}
		if (ready_due(w, pod) <= w->now_ms) {
			if (w->first_ready_pods < 0)
				w->first_ready_pods = controlled_pods(w);
			set_condition(pod, "Ready", true, w->now_ms);
			trace(w, "      ~ pod %s Ready\n", name);
		}
	}
}

static bool owner_alive(const struct world *w, const char *uid)
{
	return (w->cluster && sim_streq(uid, CLUSTER_UID)) || sim_in_array(w->alive_owners, uid);
}

/* Owned, and no owner is left. */
static bool orphaned(const struct world *w, const json_t *obj)
{
	const json_t *refs = json_object_get(sim_meta(obj), "ownerReferences");
	if (!json_array_size(refs))
		return false;
	size_t i;
	json_t *ref;
	json_array_foreach(refs, i, ref) {
		if (owner_alive(w, kube_obj_str(ref, "uid")))
			return false;
	}
	return true;
}

static void garbage_collector(struct world *w)
{
	size_t i;
	json_t *o;
	json_array_foreach(w->pods, i, o) {
		if (orphaned(w, o) && !sim_terminating(o)) {
			sim_mark_deleted(o, w->now_ms);
			trace(w, "      ~ pod %s collected\n", kube_obj_str(o, "metadata.name"));
		}
	}
	json_array_foreach(w->pvcs, i, o) {
		if (orphaned(w, o) && !sim_terminating(o)) {
			sim_mark_deleted(o, w->now_ms);
			trace(w, "      ~ claim %s collected\n", kube_obj_str(o, "metadata.name"));
		}
	}
	for (i = 0; i < json_array_size(w->revisions);) {
		o = json_array_get(w->revisions, i);
		if (orphaned(w, o)) {
			trace(w, "      ~ revision %s collected\n", kube_obj_str(o, "metadata.name"));
			json_array_remove(w->revisions, i);
			continue;
		}
		i++;
	}
}

/* PVC protection: a deleted claim goes once no pod that has not ended mounts it. */
static void pvc_protection(struct world *w)
{
	sim_pvc_protection(w->pvcs, NULL, w->pods, &w->trace);
}

/* ---- invariants ---- */

/*
 * The identities as the state shows them: next never decreases, an
 * identity that left never comes back, a new member's name was never used.
 * why: how members that leave now leave.
 */
static void check_identities(struct world *w, const char *why)
{
	json_t *st = state_of(w);
	if (!st)
		return;
	json_t *next = json_object_get(st, "next");
	json_t *members = json_object_get(st, "members");
	if (!json_is_integer(next) || !json_is_array(members))
		world_fail(w, "the state annotation is not {next, members}: %s",
			   sim_or_dash(sim_annotation(w->cluster, ANNOTATION_CLUSTER_STATE)));
	long long nx = json_integer_value(next);
	if (nx < w->max_next)
		world_fail(w, "the state's next went from %lld down to %lld", w->max_next, nx);
	size_t i;
	json_t *m;
	json_array_foreach(members, i, m) {
		long n = (long)json_integer_value(m);
		char key[24], pod[64];
		snprintf(key, sizeof(key), "%ld", n);
		snprintf(pod, sizeof(pod), "%s-%ld", NAME, n);
		if (n >= nx)
			world_fail(w, "member %s at or past next %lld", pod, nx);
		if (json_object_get(w->left, key))
			world_fail(w, "identity %s is a member again after it left (%s)", pod,
				   json_string_value(json_object_get(w->left, key)));
		if (json_object_get(w->ever, key))
			continue;
		if (n < w->max_next)
			world_fail(w, "new member %s below next %lld: an identity handed out again", pod, w->max_next);
		if (json_object_get(w->pod_names, pod))
			world_fail(w, "new member %s: a pod of that name was created before", pod);
		const char *claim;
		json_t *uid;
		json_object_foreach(w->claim_uids, claim, uid) {
			if (claim_identity(w, claim) == n)
				world_fail(w, "new member %s: its claim %s was created before", pod, claim);
		}
		json_object_set_new(w->ever, key, json_true());
	}
	const char *key;
	json_t *v;
	json_object_foreach(w->ever, key, v) {
		if (!int_in_array(members, atol(key)) && !json_object_get(w->left, key))
			json_object_set_new(w->left, key, json_string(why));
	}
	w->max_next = nx;
	json_decref(st);
}

/* Members taken down for an update are back once a new pod of theirs is available. */
static void prune_updating(struct world *w)
{
	const char *key;
	json_t *uid, *tmp;
	json_object_foreach_safe(w->updating, tmp, key, uid) {
		const json_t *pod = pod_of(w, atol(key));
		if (!is_member(w, atol(key)) ||
		    (pod && !sim_streq(kube_obj_str(pod, "metadata.uid"), json_string_value(uid)) && pod_available(w, pod)))
			json_object_del(w->updating, key);
	}
}

static void check_world(struct world *w)
{
	if (!w->cluster)
		return;
	check_identities(w, "Dropped");
	prune_updating(w);
	if (w->track_down) {
		int d = down_now(w);
		if (d > w->max_down)
			w->max_down = d;
	}
}

static void tick(struct world *w)
{
	scheduler(w);
	node_lifecycle(w);
	kubelet(w);
	garbage_collector(w);
	pvc_protection(w);
	check_world(w);
}

/* ---- the API server: performing a step ---- */

static void check_owner_ref(struct world *w, const json_t *ref, bool controller, const char *what)
{
	if (!sim_streq(kube_obj_str(ref, "apiVersion"), CLUSTER_API_VERSION) || !sim_streq(kube_obj_str(ref, "kind"), CLUSTER_KIND) ||
	    !sim_streq(kube_obj_str(ref, "name"), NAME) || !sim_streq(kube_obj_str(ref, "uid"), CLUSTER_UID) ||
	    json_is_true(json_object_get(ref, "controller")) != controller)
		world_fail(w, "%s: the owner reference is not a %s reference to the StatefulCluster", what,
			   controller ? "controller" : "non-controller");
}

/* What a member's pod must look like, and what must be there before it. */
static void check_pod_body(struct world *w, const struct action *a)
{
	const json_t *body = a->body;
	const char *name = kube_obj_str(body, "metadata.name");
	long n = pod_identity(name);
	if (!sim_streq(name, a->name) || n < 0 || (kube_obj_str(body, "metadata.namespace") &&
						 !sim_streq(kube_obj_str(body, "metadata.namespace"), NS)))
		world_fail(w, "CREATE_POD %s: the body names %s", a->name, sim_or_dash(name));
	if (!is_member(w, n))
		world_fail(w, "pod %s created for an identity that is not a member", name);
	const json_t *ps = json_object_get(body, "spec");
	if (!sim_streq(kube_obj_str(body, "spec.hostname"), name))
		world_fail(w, "pod %s: hostname %s", name, sim_or_dash(kube_obj_str(body, "spec.hostname")));
	const char *service = spec_str(w, "serviceName");
	if (service ? !sim_streq(kube_obj_str(body, "spec.subdomain"), service) : kube_obj_str(body, "spec.subdomain") != NULL)
		world_fail(w, "pod %s: subdomain %s, serviceName %s", name, sim_or_dash(kube_obj_str(body, "spec.subdomain")),
			   sim_or_dash(service));
	/* Labels: the template's, the selector's, the revision; the selector selects it. */
	const json_t *labels = json_object_get(sim_meta(body), "labels");
	const json_t *tmpl = json_object_get(spec(w), "template");
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(sim_meta(tmpl), "labels"), k, v) {
		if (!sim_streq(sim_label(body, k), json_string_value(v)))
			world_fail(w, "pod %s lost the template's label %s", name, k);
	}
	json_object_foreach(json_object_get(json_object_get(spec(w), "selector"), "matchLabels"), k, v) {
		if (!sim_streq(sim_label(body, k), json_string_value(v)))
			world_fail(w, "pod %s lacks the selector's label %s=%s", name, k, json_string_value(v));
	}
	if (!label_selector_matches(json_object_get(spec(w), "selector"), labels))
		world_fail(w, "pod %s is not selected by spec.selector", name);
	json_object_foreach(json_object_get(sim_meta(tmpl), "annotations"), k, v) {
		if (!sim_streq(sim_annotation(body, k), json_string_value(v)))
			world_fail(w, "pod %s lost the template's annotation %s", name, k);
	}
	const char *rev = sim_label(body, LABEL_REVISION_HASH);
	const json_t *robj = rev ? sim_find(w->revisions, rev) : NULL;
	if (!robj || !controlled(robj))
		world_fail(w, "pod %s: label %s=%s names no revision of the cluster", name, LABEL_REVISION_HASH, sim_or_dash(rev));
	const char *want = target_revision(w, n);
	if (!sim_streq(rev, want))
		world_fail(w, "pod %s made at revision %s, want %s", name, rev, sim_or_dash(want));
	const json_t *rt = json_object_get(json_object_get(robj, "data"), "template");
	if (!json_equal(json_object_get(json_object_get(rt, "spec"), "containers"), json_object_get(ps, "containers")))
		world_fail(w, "pod %s: containers differ from revision %s", name, rev);
	/* Controlled by the cluster, and nothing else. */
	const json_t *refs = json_object_get(sim_meta(body), "ownerReferences");
	if (json_array_size(refs) != 1)
		world_fail(w, "pod %s: %zu owner references", name, json_array_size(refs));
	check_owner_ref(w, json_array_get(refs, 0), true, name);
	/* The template's volumes kept, one per claim template, the claims there first. */
	const json_t *vols = json_object_get(ps, "volumes");
	size_t i, j;
	json_t *tv, *bv;
	json_array_foreach(json_object_get(json_object_get(rt, "spec"), "volumes"), i, tv) {
		bool found = false;
		json_array_foreach(vols, j, bv) {
			found |= json_equal(tv, bv);
		}
		if (!found)
			world_fail(w, "pod %s lost the template's volume %s", name, sim_or_dash(kube_obj_str(tv, "name")));
	}
	json_t *names = vct_names(w);
	json_array_foreach(names, i, tv) {
		char claim[128];
		snprintf(claim, sizeof(claim), "%s-%s", json_string_value(tv), name);
		bool found = false;
		json_array_foreach(vols, j, bv) {
			found |= sim_streq(kube_obj_str(bv, "name"), json_string_value(tv)) &&
				 sim_streq(kube_obj_str(bv, "persistentVolumeClaim.claimName"), claim);
		}
		const json_t *pvc = sim_find(w->pvcs, claim);
		if (!found || !pvc || sim_terminating(pvc)) {
			json_decref(names);
			world_fail(w, "pod %s: volume %s -> claim %s %s", name, json_string_value(tv), claim,
				   !found ? "missing" : !pvc ? "not created first" : "being deleted");
		}
	}
	json_decref(names);
}

static void create_pod(struct world *w, const struct action *a)
{
	if (sim_find(w->pods, kube_obj_str(a->body, "metadata.name"))) {
		w->conflicts++;
		trace(w, "      409 pod %s exists\n", a->name);
		return;
	}
	check_pod_body(w, a);
	json_t *pod = json_deep_copy(a->body);
	stamp(w, pod, "pod");
	json_object_set_new(pod, "status", json_pack("{s:s}", "phase", "Pending"));
	json_array_append_new(w->pods, pod);
	sim_count(w->pod_names, a->name);
}

static void create_claim(struct world *w, const struct action *a)
{
	const json_t *body = a->body;
	const char *name = kube_obj_str(body, "metadata.name");
	if (sim_find(w->pvcs, name)) {
		w->conflicts++;
		trace(w, "      409 claim %s exists\n", name);
		return;
	}
	long n = claim_identity(w, name);
	if (!sim_streq(name, a->name) || n < 0)
		world_fail(w, "CREATE_CLAIM %s: the body names %s", a->name, sim_or_dash(name));
	if (!is_member(w, n))
		world_fail(w, "claim %s created for an identity that is not a member", name);
	const json_t *vct = NULL;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(spec(w), "volumeClaimTemplates"), i, t) {
		char want[128];
		snprintf(want, sizeof(want), "%s-%s-%ld", kube_obj_str(t, "metadata.name"), NAME, n);
		if (sim_streq(want, name))
			vct = t;
	}
	if (!vct || !json_equal(json_object_get(vct, "spec"), json_object_get(body, "spec")))
		world_fail(w, "claim %s: spec differs from its claim template", name);
	const json_t *refs = json_object_get(sim_meta(body), "ownerReferences");
	if (sim_streq(policy(w, "whenDeleted"), "Delete")) {
		if (json_array_size(refs) != 1)
			world_fail(w, "claim %s (whenDeleted Delete): %zu owner references", name, json_array_size(refs));
		check_owner_ref(w, json_array_get(refs, 0), false, name);
	} else if (json_array_size(refs)) {
		world_fail(w, "claim %s (whenDeleted Retain) owned by the StatefulCluster", name);
	}
	json_t *pvc = json_deep_copy(body);
	stamp(w, pvc, "claim");
	json_object_set_new(pvc, "status", json_pack("{s:s}", "phase", "Bound"));
	if (!json_object_get(w->claim_uids, name))
		json_object_set_new(w->claim_uids, name, json_string(kube_obj_str(pvc, "metadata.uid")));
	json_array_append_new(w->pvcs, pvc);
}

/* The object named a->name when its UID matches: NULL (a 404 or a 409, traced) otherwise. */
static json_t *by_uid(struct world *w, json_t *list, const struct action *a)
{
	json_t *obj = sim_find(list, a->name);
	if (obj && !a->uid[0])
		world_fail(w, "%s %s without a UID precondition", step_id(step_of(a)), a->name);
	return sim_precondition_met(obj, a->uid, &w->trace, &w->conflicts) ? obj : NULL;
}

static void delete_pod(struct world *w, const struct action *a)
{
	json_t *pod = by_uid(w, w->pods, a);
	if (!pod)
		return;
	if (!controlled(pod))
		world_fail(w, "DELETE_POD %s, which the cluster does not control", a->name);
	long n = pod_identity(a->name);
	if (sim_streq(a->what, "UpdateMember")) {
		if (!is_member(w, n))
			world_fail(w, "UpdateMember %s: not a member", a->name);
		if (on_delete(w))
			world_fail(w, "UpdateMember %s with updateStrategy OnDelete", a->name);
		if (sim_streq(sim_label(pod, LABEL_REVISION_HASH), target_revision(w, n)))
			world_fail(w, "UpdateMember %s: it already runs revision %s", a->name, target_revision(w, n));
	} else if (sim_streq(a->what, "DeleteFormerMember")) {
		if (is_member(w, n))
			world_fail(w, "DeleteFormerMember %s: still a member", a->name);
	} else {
		world_fail(w, "DELETE_POD %s for %s", a->name, sim_or_dash(a->what));
	}
	char uid[64];
	snprintf(uid, sizeof(uid), "%s", kube_obj_str(pod, "metadata.uid"));
	bool was_available = pod_available(w, pod);
	if (!sim_in_array(w->deleted_uids, uid))
		json_array_append_new(w->deleted_uids, json_string(uid));
	if (a->force) {
		trace(w, "      pod %s gone (forced)\n", a->name);
		sim_remove(w->pods, pod);
	} else if (!sim_terminating(pod)) {
		sim_mark_deleted(pod, w->now_ms);
		bump(w, pod);
	}
	if (sim_streq(a->what, "UpdateMember")) {
		prune_updating(w);
		/* Taken down while it served: one more member down for the update. */
		char key[24];
		snprintf(key, sizeof(key), "%ld", n);
		if (was_available || json_object_get(w->updating, key))
			json_object_set_new(w->updating, key, json_string(uid));
		if ((int)json_object_size(w->updating) > max_unavailable(w))
			world_fail(w, "pod %s deleted for an update: %zu members down for the update, maxUnavailable %d",
				   a->name, json_object_size(w->updating), max_unavailable(w));
		/* On a fresh cache the planner knows every member's state: none beyond maxUnavailable. */
		if (!w->lag && down_now(w) > max_unavailable(w))
			world_fail(w, "pod %s deleted for an update: %d members unavailable, maxUnavailable %d",
				   a->name, down_now(w), max_unavailable(w));
	}
}

static void delete_claim(struct world *w, const struct action *a)
{
	json_t *pvc = by_uid(w, w->pvcs, a);
	if (!pvc)
		return;
	long n = claim_identity(w, a->name);
	char key[24];
	snprintf(key, sizeof(key), "%ld", n);
	if (n < 0 || !sim_streq(json_string_value(json_object_get(w->claim_uids, a->name)), a->uid))
		world_fail(w, "claim %s deleted: not a claim the cluster made", a->name);
	if (is_member(w, n))
		world_fail(w, "claim %s of a member deleted", a->name);
	if (pod_of(w, n))
		world_fail(w, "claim %s deleted while pod %s-%ld is still there", a->name, NAME, n);
	const char *why = json_string_value(json_object_get(w->left, key));
	const char *pol = sim_streq(why, "Replaced") ? policy(w, "whenReplaced") :
			  sim_streq(why, "Scaled")   ? policy(w, "whenScaled") :
						   "none";
	if (!sim_streq(pol, "Delete"))
		world_fail(w, "claim %s deleted: its member left as %s, whose policy is %s", a->name, sim_or_dash(why), pol);
	if (sim_terminating(pvc))
		return;
	sim_mark_deleted(pvc, w->now_ms);
	bump(w, pvc);
	pvc_protection(w);
}

static void patch_claim(struct world *w, const struct action *a)
{
	json_t *pvc = sim_find(w->pvcs, a->name);
	if (!pvc) {
		trace(w, "      404\n");
		return;
	}
	if (claim_identity(w, a->name) < 0 || !json_object_get(w->claim_uids, a->name))
		world_fail(w, "PATCH_CLAIM %s: not a claim the cluster made", a->name);
	const char *want_rv = kube_obj_str(a->body, "metadata.resourceVersion");
	if (!want_rv)
		world_fail(w, "PATCH_CLAIM %s without a resourceVersion precondition", a->name);
	if (!sim_streq(want_rv, kube_obj_str(pvc, "metadata.resourceVersion"))) {
		w->conflicts++;
		trace(w, "      409 resourceVersion\n");
		return;
	}
	json_t *others_before = json_array();
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(sim_meta(pvc), "ownerReferences"), i, ref) {
		if (!sim_streq(kube_obj_str(ref, "uid"), CLUSTER_UID))
			json_array_append(others_before, ref);
	}
	json_t *patch = json_deep_copy(a->body);
	json_object_del(sim_meta(patch), "resourceVersion");
	sim_merge_patch(pvc, patch);
	json_decref(patch);
	bump(w, pvc);
	json_t *others_after = json_array();
	int ours = 0;
	json_array_foreach(json_object_get(sim_meta(pvc), "ownerReferences"), i, ref) {
		if (!sim_streq(kube_obj_str(ref, "uid"), CLUSTER_UID)) {
			json_array_append(others_after, ref);
		} else {
			ours++;
			check_owner_ref(w, ref, false, a->name);
		}
	}
	bool same = json_equal(others_before, others_after);
	json_decref(others_before);
	json_decref(others_after);
	if (!same)
		world_fail(w, "PATCH_CLAIM %s dropped or changed another owner's reference", a->name);
	if (ours != (sim_streq(policy(w, "whenDeleted"), "Delete") ? 1 : 0))
		world_fail(w, "claim %s has %d references to the cluster, whenDeleted %s", a->name, ours,
			   policy(w, "whenDeleted"));
}

static void create_revision(struct world *w, const struct action *a)
{
	const json_t *body = a->body;
	const char *name = kube_obj_str(body, "metadata.name");
	if (sim_find(w->revisions, name)) {
		w->conflicts++;
		trace(w, "      409 revision %s exists\n", name);
		return;
	}
	const char *hash = name && !strncmp(name, NAME "-", strlen(NAME) + 1) ? name + strlen(NAME) + 1 : "";
	if (!sim_streq(name, a->name) || strlen(hash) != 10 || strspn(hash, "0123456789abcdef") != 10)
		world_fail(w, "CREATE_REVISION %s: not named %s-<hash>", sim_or_dash(name), NAME);
	if (!json_equal(json_object_get(json_object_get(body, "data"), "template"), json_object_get(spec(w), "template")))
		world_fail(w, "revision %s does not hold spec.template", name);
	long long max = 0;
	size_t i;
	json_t *r;
	json_array_foreach(w->revisions, i, r) {
		if (controlled(r) && json_integer_value(json_object_get(r, "revision")) > max)
			max = json_integer_value(json_object_get(r, "revision"));
	}
	if (json_integer_value(json_object_get(body, "revision")) != max + 1)
		world_fail(w, "revision %s numbered %lld, want %lld", name,
			   (long long)json_integer_value(json_object_get(body, "revision")), max + 1);
	const json_t *refs = json_object_get(sim_meta(body), "ownerReferences");
	if (json_array_size(refs) != 1)
		world_fail(w, "revision %s: %zu owner references", name, json_array_size(refs));
	check_owner_ref(w, json_array_get(refs, 0), true, name);
	json_t *obj = json_deep_copy(body);
	stamp(w, obj, "rev");
	json_array_append_new(w->revisions, obj);
}

static void delete_revision(struct world *w, const struct action *a)
{
	json_t *r = by_uid(w, w->revisions, a);
	if (!r)
		return;
	if (!controlled(r))
		world_fail(w, "revision %s deleted: not the cluster's", a->name);
	if (sim_streq(a->name, update_revision(w)) || sim_streq(a->name, current_revision(w)))
		world_fail(w, "revision %s deleted while it is the current or update revision", a->name);
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		if (sim_streq(sim_label(pod, LABEL_REVISION_HASH), a->name))
			world_fail(w, "revision %s deleted while pod %s runs it", a->name,
				   kube_obj_str(pod, "metadata.name"));
	}
	trace(w, "      revision %s gone\n", a->name);
	sim_remove(w->revisions, r);
}

/* The checks of a state change: who leaves and why, who comes. */
static void check_state_change(struct world *w, const json_t *before, const struct action *a)
{
	const json_t *was = json_object_get(before, "members");
	const json_t *now = json_object_get(a->state, "members");
	size_t i;
	json_t *m;
	json_array_foreach(was, i, m) {
		long n = (long)json_integer_value(m);
		if (int_in_array(now, n))
			continue;
		char pod[64];
		snprintf(pod, sizeof(pod), "%s-%ld", NAME, n);
		if (sim_streq(a->what, "ReplaceMember")) {
			bool failed = member_failed(w, n), asked = replace_requested(w, pod);
			if (!failed && !asked)
				world_fail(w, "member %s replaced, but it has not failed and no one asked for it", pod);
			/* Asked for: as an update, never more than maxUnavailable members down (the real world). */
			int down = down_now(w) - !pod_available(w, pod_of(w, n)) + 1;
			if (!failed && down > max_unavailable(w))
				world_fail(w, "member %s replaced on request with %d members down after, maxUnavailable %d", pod,
					   down, max_unavailable(w));
			if (json_array_size(now) != json_array_size(was))
				world_fail(w, "ReplaceMember %s: %zu members before, %zu after", pod, json_array_size(was),
					   json_array_size(now));
			if (!sim_contains(a->event_message, pod))
				world_fail(w, "ReplaceMember %s: the event does not name it", pod);
		} else if (sim_streq(a->what, "RemoveMember") && removal_named(w, pod)) {
			/* Named in spec.removeMembers: it goes whatever the order and replicas say. */
			if (!sim_contains(a->event_message, pod))
				world_fail(w, "RemoveMember %s: the event does not name it", pod);
		} else if (sim_streq(a->what, "RemoveMember")) {
			size_t j;
			json_t *named;
			json_array_foreach(was, j, named) {
				char other[64];
				snprintf(other, sizeof(other), "%s-%lld", NAME, (long long)json_integer_value(named));
				if (removal_named(w, other))
					world_fail(w, "scale-down took %s while %s, named in spec.removeMembers, is a member", pod,
						   other);
			}
			if ((long)json_array_size(now) < replicas(w))
				world_fail(w, "RemoveMember %s: %zu members left, replicas %d", pod, json_array_size(now),
					   replicas(w));
			bool ready = pod_ready(pod_of(w, n));
			size_t k;
			json_t *o;
			json_array_foreach(was, k, o) {
				long other = (long)json_integer_value(o);
				bool oready = pod_ready(pod_of(w, other));
				if (other == n)
					continue;
				if (ready && !oready)
					world_fail(w, "scale-down took %s (Ready) before %s-%ld (not Ready)", pod, NAME, other);
				if (ready == oready && other > n)
					world_fail(w, "scale-down took %s before the newer %s-%ld", pod, NAME, other);
			}
		} else if (!sim_streq(a->what, "RebuildState")) {
			world_fail(w, "member %s dropped by %s", pod, sim_or_dash(a->what));
		}
	}
	if (!sim_streq(a->what, "RecoverMember"))
		return;
	/* Taken back in: a live pod of the cluster's, an identity that never left by the planner's hand. */
	int added = 0;
	json_array_foreach(now, i, m) {
		long n = (long)json_integer_value(m);
		if (int_in_array(was, n))
			continue;
		added++;
		char key[24];
		snprintf(key, sizeof(key), "%ld", n);
		const json_t *pod = pod_of(w, n);
		const char *why = json_string_value(json_object_get(w->left, key));
		if (!pod || !controlled(pod) || sim_terminating(pod))
			world_fail(w, "RecoverMember %s-%ld: no live pod of the cluster's", NAME, n);
		if (why && !sim_streq(why, "Dropped"))
			world_fail(w, "RecoverMember %s-%ld: it left as %s", NAME, n, why);
		if (!sim_contains(a->event_message, kube_obj_str(pod, "metadata.name")))
			world_fail(w, "RecoverMember %s-%ld: the event does not name it", NAME, n);
	}
	if (added != 1 || json_array_size(now) != json_array_size(was) + 1)
		world_fail(w, "RecoverMember: %zu members before, %zu after", json_array_size(was), json_array_size(now));
}

static void set_state(struct world *w, const struct action *a)
{
	if (!w->cluster)
		world_fail(w, "SET_STATE without a cluster");
	const char *text = kube_obj_annotation(a->body, ANNOTATION_CLUSTER_STATE);
	char *state = json_dumps(a->state, JSON_COMPACT | JSON_SORT_KEYS);
	bool same = json_is_object(a->state) && sim_streq(text, state);
	free(state);
	if (!same)
		world_fail(w, "SET_STATE without a state, or a patch that does not write it");
	if (!sim_streq(kube_obj_str(w->cluster, "metadata.resourceVersion"), w->planned_rv)) {
		w->conflicts++;
		trace(w, "      409 resourceVersion\n");
		return;
	}
	json_t *before = state_of(w);
	check_state_change(w, before, a);
	if (sim_streq(a->what, "RecoverMember")) {
		/* Dropped from the state by someone else's hand, not by the planner: it may come back. */
		size_t i;
		json_t *m;
		json_array_foreach(json_object_get(a->state, "members"), i, m) {
			char key[24];
			snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(m));
			if (sim_streq(json_string_value(json_object_get(w->left, key)), "Dropped"))
				json_object_del(w->left, key);
		}
	}
	if (!sim_streq(sim_annotation(w->cluster, ANNOTATION_CLUSTER_STATE), text)) {
		sim_annotate(w->cluster, ANNOTATION_CLUSTER_STATE, text);
		bump(w, w->cluster);
	}
	/* The same patch may take names out of the replace-members annotation (null: removes it). */
	const json_t *req = json_object_get(json_object_get(json_object_get(a->body, "metadata"), "annotations"),
					    ANNOTATION_CLUSTER_REPLACE);
	if (json_is_null(req) && sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE)) {
		json_object_del(json_object_get(sim_meta(w->cluster), "annotations"), ANNOTATION_CLUSTER_REPLACE);
		bump(w, w->cluster);
	} else if (json_is_string(req) && !sim_streq(sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE),
						      json_string_value(req))) {
		sim_annotate(w->cluster, ANNOTATION_CLUSTER_REPLACE, json_string_value(req));
		bump(w, w->cluster);
	} else if (req && !json_is_null(req)) {
		world_fail(w, "SET_STATE writes %s as neither a string nor null", ANNOTATION_CLUSTER_REPLACE);
	}
	json_decref(before);
	check_identities(w, sim_streq(a->what, "ReplaceMember") ? "Replaced" :
			    sim_streq(a->what, "RemoveMember")  ? "Scaled" :
							      "Dropped");
}

static void update_status(struct world *w, const struct action *a)
{
	if (!w->cluster)
		world_fail(w, "UPDATE_STATUS without a cluster");
	const json_t *body = step_body(a);
	if (!json_is_object(body))
		world_fail(w, "UPDATE_STATUS without a body");
	if (json_integer_value(json_object_get(body, "observedGeneration")) !=
	    json_integer_value(json_object_get(sim_meta(w->cluster), "generation")))
		world_fail(w, "status observedGeneration %lld, generation %lld",
			   (long long)json_integer_value(json_object_get(body, "observedGeneration")),
			   (long long)json_integer_value(json_object_get(sim_meta(w->cluster), "generation")));
	json_t *before = json_deep_copy(json_object_get(w->cluster, "status"));
	json_t *st = json_object_get(w->cluster, "status");
	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(w->cluster, "status", st);
	}
	sim_merge_patch(st, body);
	if (!json_equal(before, st))
		bump(w, w->cluster);
	json_decref(before);
}

static void apply(struct world *w, const struct action *a)
{
	switch (step_of(a)) {
	case STEP_SET_STATE:
		set_state(w, a);
		break;
	case STEP_CREATE_REVISION:
		create_revision(w, a);
		break;
	case STEP_DELETE_REVISION:
		delete_revision(w, a);
		break;
	case STEP_CREATE_CLAIM:
		create_claim(w, a);
		break;
	case STEP_PATCH_CLAIM:
		patch_claim(w, a);
		break;
	case STEP_DELETE_CLAIM:
		delete_claim(w, a);
		break;
	case STEP_CREATE_POD:
		create_pod(w, a);
		break;
	case STEP_DELETE_POD:
		delete_pod(w, a);
		break;
	case STEP_UPDATE_STATUS:
		update_status(w, a);
		break;
	case STEP_NOTHING:
	case STEP_REFUSE:
	case STEP_WAIT:
		break;
	default:
		world_fail(w, "unknown step %d", (int)step_of(a));
	}
	check_world(w);
}

/* ---- running the planner against the world ---- */

/* One line per step, enough to compare two steps. New string. */
static char *fingerprint(const struct action *a)
{
	char *body = step_body(a) ? json_dumps(step_body(a), JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *f = xasprintf("%s|%s|%s|%s|%s|%d|%s|%s|%s|%s|%ld", step_id(step_of(a)), action_name(a), a->name,
			    a->uid, sim_or_dash(body), a->force, sim_or_dash(a->event_type), sim_or_dash(a->event_reason),
			    sim_or_dash(a->event_message), sim_or_dash(a->counts[0].family), a->requeue_ms);
	free(body);
	return f;
}

static const json_t *pods_seen(const struct world *w)
{
	return w->lag && json_array_size(w->snapshots) ? json_array_get(w->snapshots, 0) : w->pods;
}

/* The controller forgets a deleted pod's UID once its cache shows the pod going or gone. */
static void prune_deleted_uids(struct world *w)
{
	for (size_t i = 0; i < json_array_size(w->deleted_uids);) {
		const json_t *pod = sim_find_uid(pods_seen(w), json_string_value(json_array_get(w->deleted_uids, i)));
		if (!pod || sim_terminating(pod)) {
			json_array_remove(w->deleted_uids, i);
			continue;
		}
		i++;
	}
}

static void plan_into(const struct world *w, struct action *a)
{
	struct cluster_inputs in = {
		.cluster = w->cluster,
		.pods = pods_seen(w),
		.pvcs = w->pvcs,
		.revisions = w->revisions,
		.nodes = w->nodes,
		.now_ms = w->now_ms,
		.create_error = NULL,
		.deleted_uids = w->deleted_uids,
	};
	cluster_plan(&in, a);
}

/* Plans into w->a; the same inputs must give the same step. */
static void plan(struct world *w)
{
	prune_deleted_uids(w);
	action_release(&w->a);
	snprintf(w->planned_rv, sizeof(w->planned_rv), "%s", sim_or_dash(kube_obj_str(w->cluster, "metadata.resourceVersion")));
	w->view_stale = !json_equal(pods_seen(w), w->pods);
	plan_into(w, &w->a);
	struct action again;
	plan_into(w, &again);
	sim_steps_note(&w->steps, &w->trace, fingerprint(&w->a), fingerprint(&again));
	action_release(&again);
	const struct action *a = &w->a;
	sim_check_event(&w->trace, a->event_type, a->event_reason, a->event_message);
	if (step_of(a) == STEP_REFUSE && !sim_streq(a->event_type, "Warning"))
		world_fail(w, "a refusal without a Warning event");
	bool needs_body = step_of(a) == STEP_SET_STATE || step_of(a) == STEP_CREATE_REVISION ||
			  step_of(a) == STEP_CREATE_CLAIM || step_of(a) == STEP_PATCH_CLAIM ||
			  step_of(a) == STEP_CREATE_POD || step_of(a) == STEP_UPDATE_STATUS;
	if (needs_body != (step_body(a) != NULL))
		world_fail(w, "%s %s %s a body", step_id(step_of(a)), a->name, step_body(a) ? "with" : "without");
	if (step_of(a) == STEP_WAIT && a->requeue_ms <= 0)
		world_fail(w, "WAIT without requeue_ms");
	/* A 404 or 409 answer to any step: the cluster moved on since the planner looked. */
	if (!resting(step_of(a)) && a->answers != (ACTION_STALE_404 | ACTION_STALE_409))
		world_fail(w, "%s %s: answers %u, want 404 and 409 as stale", step_id(step_of(a)), a->name, a->answers);
	bool of_cluster = step_of(a) == STEP_SET_STATE || step_of(a) == STEP_UPDATE_STATUS;
	if (of_cluster && !sim_streq(kube_obj_str(a->body, "metadata.resourceVersion"), w->planned_rv))
		world_fail(w, "%s without the resourceVersion it was planned from", step_id(step_of(a)));
}

static void trace_step(struct world *w)
{
	const struct action *a = &w->a;
	trace(w, "%3d t=%-7.0f %-18s %-16s", w->iterations, (double)(w->now_ms - w->start_ms) / 1000,
	      action_name(a), a->name);
	if (a->force)
		trace(w, " (force)");
	if (a->event_reason)
		trace(w, " %s %s: %s", sim_or_dash(a->event_type), a->event_reason, sim_or_dash(a->event_message));
	if (a->requeue_ms)
		trace(w, " (requeue %ld ms)", a->requeue_ms);
	if (step_of(a) == STEP_SET_STATE || step_of(a) == STEP_PATCH_CLAIM) {
		char *body = json_dumps(step_body(a), JSON_COMPACT | JSON_SORT_KEYS);
		trace(w, " %s", body);
		free(body);
	}
	trace(w, "\n");
}

/* Performs w->a as the reconciler does: its Event and count, then the step (twice when asked). */
static void perform(struct world *w)
{
	const struct action *a = &w->a;
	w->iterations++;
	trace_step(w);
	json_array_append_new(w->history,
			      json_pack("{s:I, s:s, s:s, s:s, s:b, s:s?, s:s?, s:s?, s:I}", "t", (json_int_t)w->now_ms,
					"step", step_id(step_of(a)), "what", action_name(a), "object", a->name,
					"force", a->force, "type", a->event_type, "reason", a->event_reason, "message",
					a->event_message, "requeue", (json_int_t)a->requeue_ms));
	for (int i = 0; i < ACTION_MAX_COUNTS; i++)
		for (long long n = 0; a->counts[i].family && n < a->counts[i].by; n++)
			sim_count(w->counts, a->counts[i].family);
	if (w->lag) {
		if (!w->snapshots)
			w->snapshots = json_array();
		json_array_append_new(w->snapshots, json_deep_copy(w->pods));
		while ((int)json_array_size(w->snapshots) > w->lag)
			json_array_remove(w->snapshots, 0);
	}
	apply(w, a);
	if (w->double_apply && !resting(step_of(a)))
		apply(w, a);
}

/* The world as the API server holds it. New string. */
static char *world_dump(const struct world *w)
{
	const json_t *objs[] = {w->cluster, w->pods, w->pvcs, w->revisions};
	return sim_dump(objs, NITEMS(objs));
}

typedef bool (*stop_fn)(const struct world *w, const void *arg);

enum run_end { RUN_SETTLED, RUN_GONE, RUN_STOPPED };

/*
 * Plans and performs steps until the cluster is gone, the world rests (the
 * planner has nothing to do and no deadline, the controllers change
 * nothing and the kubelet has nothing due), or stop says so (checked
 * before each step is performed; the step is left in w->a). While the
 * planner waits or rests the controllers work; the clock then moves to
 * the planner's requeue or the kubelet's next change, whichever is first,
 * and at most a second when something changed (a watch event).
 */
static enum run_end run(struct world *w, stop_fn stop, const void *arg)
{
	sim_steps_restart(&w->steps);
	for (int i = 0; i < MAX_STEPS; i++) {
		if (!w->cluster)
			return RUN_GONE;
		plan(w);
		if (!w->lag && !resting(step_of(&w->a)) && sim_steps_repeated(&w->steps))
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
		bool changed = strcmp(before, after) != 0;
		free(before);
		free(after);
		/* A lagging cache catches up, and its watch event brings the planner back. */
		if (w->view_stale)
			changed = true;
		long long dt = w->a.requeue_ms > 0 ? w->a.requeue_ms : LLONG_MAX;
		long long due = kubelet_due(w);
		if (due != LLONG_MAX && due - w->now_ms < dt)
			dt = due - w->now_ms;
		if (changed && dt > 1000)
			dt = 1000;
		if (dt == LLONG_MAX)
			return RUN_SETTLED;
		if (dt < 1)
			dt = 1;
		if (w->max_wait_ms && dt > w->max_wait_ms)
			dt = w->max_wait_ms;
		w->now_ms += dt;
	}
	world_fail(w, "no end after %d steps", MAX_STEPS);
	return RUN_SETTLED;
}

static const char *status_field(const struct world *w, const char *field);

/* What the status says when the world rests: it matches the world. */
static void check_status_at_rest(struct world *w)
{
	const json_t *st = json_object_get(w->cluster, "status");
	json_t *state = state_of(w);
	long long members = (long long)json_array_size(json_object_get(state, "members"));
	long long pods = 0, ready = 0, available = 0, updated = 0;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(state, "members"), i, m) {
		const json_t *pod = pod_of(w, (long)json_integer_value(m));
		if (!pod || !controlled(pod))
			continue;
		pods++;
		ready += pod_ready(pod);
		available += pod_available(w, pod);
		updated += sim_streq(sim_label(pod, LABEL_REVISION_HASH), update_revision(w));
	}
	json_decref(state);
	struct {
		const char *field;
		long long want;
	} counts[] = {{"replicas", pods},
		      {"readyReplicas", ready},
		      {"availableReplicas", available},
		      {"updatedReplicas", updated},
		      {"observedGeneration", json_integer_value(json_object_get(sim_meta(w->cluster), "generation"))}};
	for (size_t k = 0; k < NITEMS(counts); k++) {
		const json_t *v = json_object_get(st, counts[k].field);
		if (!json_is_integer(v) || json_integer_value(v) != counts[k].want)
			world_fail(w, "at rest: status.%s is %s, want %lld", counts[k].field,
				   json_is_integer(v) ? "wrong" : "missing", counts[k].want);
	}
	if ((long long)json_array_size(json_object_get(st, "members")) != members)
		world_fail(w, "at rest: status.members lists %zu, the state %lld", json_array_size(json_object_get(st, "members")),
			   members);
	if (!sim_streq(status_field(w, "updateRevision"), update_revision(w)))
		world_fail(w, "at rest: status.updateRevision %s, want %s", sim_or_dash(status_field(w, "updateRevision")),
			   sim_or_dash(update_revision(w)));
	if (!sim_streq(status_field(w, "selector"), SELECTOR_STRING) &&
	    json_object_size(json_object_get(json_object_get(spec(w), "selector"), "matchLabels")) == 2 &&
	    !json_object_get(json_object_get(spec(w), "selector"), "matchExpressions"))
		world_fail(w, "at rest: status.selector %s", sim_or_dash(status_field(w, "selector")));
}

static void run_to(struct world *w, enum run_end want)
{
	enum run_end end = run(w, NULL, NULL);
	if (end != want)
		world_fail(w, "the run ended %s, want %s", end == RUN_GONE ? "with the cluster gone" : "at rest",
			   want == RUN_GONE ? "the cluster gone" : "at rest");
	if (end == RUN_SETTLED && step_of(&w->a) != STEP_REFUSE)
		check_status_at_rest(w);
}

static void settle(struct world *w)
{
	run_to(w, RUN_SETTLED);
}

/* The controllers alone, while no operator runs (the cluster is gone). */
static void controllers_alone(struct world *w, int seconds)
{
	for (int i = 0; i < seconds; i++) {
		tick(w);
		w->now_ms += 1000;
	}
}

/* Stops: */
static bool asks_for_what(const struct world *w, const void *arg)
{
	return sim_streq(action_name(&w->a), arg) || sim_streq(step_id(step_of(&w->a)), arg);
}

static void run_until(struct world *w, stop_fn stop, const void *arg, const char *what)
{
	if (run(w, stop, arg) != RUN_STOPPED)
		world_fail(w, "the run ended before %s", what);
}

/* ---- what was seen ---- */

static long long seen_time(const struct world *w, int index)
{
	return json_integer_value(json_object_get(json_array_get(w->history, (size_t)index), "t"));
}

static const char *status_field(const struct world *w, const char *field)
{
	return json_string_value(json_object_get(json_object_get(w->cluster, "status"), field));
}

static long long status_int(const struct world *w, const char *field)
{
	const json_t *v = json_object_get(json_object_get(w->cluster, "status"), field);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static const char *status_condition(const struct world *w, const char *type)
{
	return condition_status(w->cluster, type);
}

/* The members as the state lists them, as text "[0,1,2]". */
static void expect_members(struct world *w, const char *want)
{
	json_t *st = state_of(w);
	char *have = json_dumps(json_object_get(st, "members"), JSON_COMPACT);
	json_decref(st);
	if (!sim_streq(have, want)) {
		char msg[256];
		snprintf(msg, sizeof(msg), "members %s, want %s", sim_or_dash(have), want);
		free(have);
		world_fail(w, "%s", msg);
	}
	free(have);
}

static long long state_next(const struct world *w)
{
	json_t *st = state_of(w);
	long long n = json_integer_value(json_object_get(st, "next"));
	json_decref(st);
	return n;
}

/* Member pods: exactly the identities given (-1 ends), controlled, running, Ready. */
static void expect_ready_pods(struct world *w, const long *ids)
{
	int want = 0;
	for (; ids[want] >= 0; want++) {
		const json_t *pod = pod_of(w, ids[want]);
		if (!pod || !controlled(pod) || !pod_ready(pod))
			world_fail(w, "pod %s-%ld is not a Ready member pod", NAME, ids[want]);
	}
	if (controlled_pods(w) != want)
		world_fail(w, "%d member pods, want %d", controlled_pods(w), want);
}

/* The claim is there, not being deleted, with the UID it was created with. */
static void expect_claim_kept(struct world *w, const char *claim)
{
	const json_t *pvc = sim_find(w->pvcs, claim);
	const char *uid = json_string_value(json_object_get(w->claim_uids, claim));
	if (!pvc || sim_terminating(pvc) || !uid || !sim_streq(kube_obj_str(pvc, "metadata.uid"), uid))
		world_fail(w, "claim %s was not kept (%s)", claim,
			   !pvc ? "gone" : sim_terminating(pvc) ? "being deleted" : "another UID");
}

static void expect_claim_gone(struct world *w, const char *claim)
{
	if (sim_find(w->pvcs, claim))
		world_fail(w, "claim %s is still there", claim);
}

/* The verbs' names, which steps without a name of their own show (Nothing, Refuse, Wait). */
static void check_step_names(void)
{
	for (int v = ACTION_NOTHING; v <= ACTION_OWN; v++) {
		const char *n = action_verb_name((enum action_verb)v);
		assert_non_null(n);
		assert_true(*n);
		for (int k = ACTION_NOTHING; k < v; k++)
			assert_string_not_equal(n, action_verb_name((enum action_verb)k));
	}
}

/* A cluster at rest: its members up and Ready. */
static void start_world(struct world *w, const char *extra, const char *more)
{
	world_init(w, extra, more);
	settle(w);
	if (controlled_pods(w) != replicas(w))
		world_fail(w, "%d member pods at rest, want %d", controlled_pods(w), replicas(w));
}

static const char *pod_revision(struct world *w, const char *name)
{
	return sim_label(must_pod(w, name), LABEL_REVISION_HASH);
}

/* ---- 0. names ---- */

static void test_names_and_selector_string(void **state)
{
	(void)state;
	check_step_names();
	static const struct {
		const char *selector;
		const char *want;
	} cases[] = {
		{"{\"matchLabels\": {\"app\": \"coder\", \"enge.me/statefulcluster\": \"coder\"}}", SELECTOR_STRING},
		{"{\"matchLabels\": {\"a\": \"b\"},"
		 " \"matchExpressions\": [{\"key\": \"c\", \"operator\": \"In\", \"values\": [\"d\", \"e\"]}]}",
		 "a=b,c in (d,e)"},
		{"{\"matchExpressions\": [{\"key\": \"c\", \"operator\": \"NotIn\", \"values\": [\"d\"]},"
		 " {\"key\": \"k\", \"operator\": \"Exists\"}, {\"key\": \"x\", \"operator\": \"DoesNotExist\"}]}",
		 "c notin (d),k,!x"},
		{"{\"matchExpressions\": [{\"key\": \"c\", \"operator\": \"Near\", \"values\": [\"d\"]}]}", NULL},
	};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		json_t *sel = json_loads(cases[i].selector, 0, NULL);
		assert_non_null(sel);
		char *s = cluster_selector_string(sel);
		if (cases[i].want ? !sim_streq(s, cases[i].want) : s != NULL)
			fail_msg("selector %s: \"%s\", want \"%s\"", cases[i].selector, sim_or_dash(s), sim_or_dash(cases[i].want));
		free(s);
		json_decref(sel);
	}
	assert_null(cluster_selector_string(NULL));

	/* A cluster that is gone, or being deleted: nothing (the garbage collector takes its objects). */
	struct world w = {0};
	world_init(&w, USUAL, NULL);
	struct cluster_inputs in = {.cluster = NULL, .pods = w.pods, .pvcs = w.pvcs, .revisions = w.revisions,
				    .nodes = w.nodes, .now_ms = w.now_ms};
	struct action a;
	cluster_plan(&in, &a);
	assert_int_equal(step_of(&a), STEP_NOTHING);
	action_release(&a);
	json_object_set_new(sim_meta(w.cluster), "deletionTimestamp", json_string(START));
	in.cluster = w.cluster;
	cluster_plan(&in, &a);
	assert_int_equal(step_of(&a), STEP_NOTHING);
	action_release(&a);
	world_release(&w);
}

/* ---- 1. members start in parallel, in the shape users rely on ---- */

static bool status_replicas_3(const struct world *w, const void *arg)
{
	(void)arg;
	return status_int(w, "replicas") == 3;
}

static bool status_ready_3(const struct world *w, const void *arg)
{
	(void)arg;
	return status_int(w, "readyReplicas") == 3;
}

static void expect_conditions(struct world *w, const char *available, const char *progressing, const char *failure)
{
	if (!sim_streq(status_condition(w, "Available"), available) ||
	    !sim_streq(status_condition(w, "Progressing"), progressing) ||
	    !sim_streq(status_condition(w, "ReplicaFailure"), failure))
		world_fail(w, "conditions Available %s, Progressing %s, ReplicaFailure %s; want %s, %s, %s",
			   sim_or_dash(status_condition(w, "Available")), sim_or_dash(status_condition(w, "Progressing")),
			   sim_or_dash(status_condition(w, "ReplicaFailure")), available, progressing, failure);
}

static void expect_status_counts(struct world *w, long long rep, long long ready, long long avail, long long upd)
{
	if (status_int(w, "replicas") != rep || status_int(w, "readyReplicas") != ready ||
	    status_int(w, "availableReplicas") != avail || status_int(w, "updatedReplicas") != upd)
		world_fail(w, "status replicas/ready/available/updated %lld/%lld/%lld/%lld, want %lld/%lld/%lld/%lld",
			   status_int(w, "replicas"), status_int(w, "readyReplicas"), status_int(w, "availableReplicas"),
			   status_int(w, "updatedReplicas"), rep, ready, avail, upd);
}

/* The member pod coder-<n> as users see it. */
static void check_member_pod(struct world *w, long n, const char *subdomain)
{
	char name[32], claim[48];
	snprintf(name, sizeof(name), "%s-%ld", NAME, n);
	snprintf(claim, sizeof(claim), "data-%s", name);
	const json_t *pod = must_pod(w, name);
	assert_string_equal(kube_obj_str(pod, "spec.hostname"), name);
	if (subdomain)
		assert_string_equal(kube_obj_str(pod, "spec.subdomain"), subdomain);
	else
		assert_null(kube_obj_str(pod, "spec.subdomain"));
	assert_string_equal(sim_label(pod, "app"), "coder");
	assert_string_equal(sim_label(pod, "enge.me/statefulcluster"), "coder");
	assert_string_equal(sim_label(pod, LABEL_REVISION_HASH), status_field(w, "updateRevision"));
	const json_t *ref = json_array_get(json_object_get(sim_meta(pod), "ownerReferences"), 0);
	assert_string_equal(kube_obj_str(ref, "kind"), "StatefulCluster");
	assert_string_equal(kube_obj_str(ref, "uid"), CLUSTER_UID);
	assert_true(json_is_true(json_object_get(ref, "controller")));
	bool data = false, settings = false;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		data |= sim_streq(kube_obj_str(v, "name"), "data") && sim_streq(kube_obj_str(v, "persistentVolumeClaim.claimName"), claim);
		settings |= sim_streq(kube_obj_str(v, "name"), "settings") && sim_streq(kube_obj_str(v, "configMap.name"), "coder-settings");
	}
	if (!data)
		world_fail(w, "pod %s does not mount claim %s as volume data", name, claim);
	if (subdomain && !settings)
		world_fail(w, "pod %s lost the user's volume settings", name);
	if (subdomain)
		assert_string_equal(sim_annotation(pod, "example.com/note"), "keep me");
	expect_claim_kept(w, claim);
	if (sim_seen_at(w->history, "CREATE_CLAIM", claim, 0) > sim_seen_at(w->history, "CREATE_POD", name, 0))
		world_fail(w, "claim %s created after pod %s", claim, name);
}

static void test_three_members_in_parallel(void **state)
{
	struct world *w = *state;
	world_init(w, USUAL, "{\"minReadySeconds\": 10}");
	w->ready_delay_ms = 5000;
	run_until(w, status_replicas_3, NULL, "the status shows 3 pods");
	/* All three pods exist, none is Ready: counted as such. */
	expect_status_counts(w, 3, 0, 0, 3);
	expect_conditions(w, "False", "True", "False");
	assert_int_equal(status_int(w, "observedGeneration"), 1);
	assert_string_equal(status_field(w, "selector"), SELECTOR_STRING);
	assert_non_null(status_field(w, "updateRevision"));
	assert_string_equal(status_field(w, "currentRevision"), status_field(w, "updateRevision"));
	assert_int_equal(json_array_size(json_object_get(json_object_get(w->cluster, "status"), "members")), 3);
	const json_t *m0 = json_array_get(json_object_get(json_object_get(w->cluster, "status"), "members"), 0);
	assert_string_equal(kube_obj_str(m0, "identity"), "coder-0");
	assert_string_equal(kube_obj_str(m0, "pod"), "coder-0");
	assert_false(json_is_true(json_object_get(m0, "ready")));
	/* Created at the same moment, not one after another. */
	long long t0 = seen_time(w, sim_seen_at(w->history, "CREATE_POD", "coder-0", 0));
	for (int k = 1; k < 3; k++) {
		char name[32];
		snprintf(name, sizeof(name), "coder-%d", k);
		if (seen_time(w, sim_seen_at(w->history, "CREATE_POD", name, 0)) != t0)
			world_fail(w, "pod %s created later than coder-0", name);
	}

	run_until(w, status_ready_3, NULL, "the status shows 3 Ready");
	/* Ready, not yet available for minReadySeconds. */
	expect_status_counts(w, 3, 3, 0, 3);
	expect_conditions(w, "False", "False", "False");
	long long ready_at = sim_time_ms(kube_obj_str(condition(must_pod(w, "coder-2"), "Ready"), "lastTransitionTime"));

	settle(w);
	expect_status_counts(w, 3, 3, 3, 3);
	expect_conditions(w, "True", "False", "False");
	int avail = -1;
	for (size_t i = 0; i < json_array_size(w->history); i++) {
		const json_t *e = json_array_get(w->history, i);
		if (sim_streq(kube_obj_str(e, "step"), "UPDATE_STATUS") && json_integer_value(json_object_get(e, "t")) >= ready_at)
			avail = (int)i;
	}
	if (avail < 0 || seen_time(w, avail) != ready_at + 10000)
		world_fail(w, "availableReplicas updated at %+lld ms after Ready, want 10 s (minReadySeconds)",
			   avail < 0 ? -1 : seen_time(w, avail) - ready_at);
	if (w->first_ready_pods != 3)
		world_fail(w, "%d pods existed when the first became Ready, want all 3", w->first_ready_pods);
	for (long n = 0; n < 3; n++)
		check_member_pod(w, n, "coder");
	expect_members(w, "[0,1,2]");
	assert_int_equal(state_next(w), 3);
	assert_int_equal(json_array_size(w->revisions), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(w->revisions, 0), "revision")), 1);
	assert_int_equal(sim_events(w->history, "Normal", "MembersAdded", "coder-0, coder-1, coder-2"), 1);
	assert_int_equal(w->conflicts, 0);
	expect_decoys(w);
	/* At rest, nothing more: the same step every time. */
	w->now_ms += 3600 * 1000;
	plan(w);
	if (step_of(&w->a) != STEP_NOTHING)
		world_fail(w, "an hour later: %s", w->steps.seen);
}

/* The seed's example as it was published (no serviceName): it works. */
static void test_seed_example_as_published(void **state)
{
	struct world *w = *state;
	start_world(w, NULL, NULL);
	static const long ids[] = {0, 1, 2, -1};
	expect_ready_pods(w, ids);
	for (long n = 0; n < 3; n++)
		check_member_pod(w, n, NULL);
	expect_status_counts(w, 3, 3, 3, 3);
	expect_conditions(w, "True", "False", "False");
}

/* Template labels and annotations come through (with the selector's labels the template lacks). */
static void test_template_labels_and_annotations(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL,
		    "{\"template\": {\"metadata\": {\"labels\": {\"app\": \"coder\", \"tier\": \"ide\"},"
		    " \"annotations\": {\"prometheus.io/scrape\": \"true\"}}}}");
	for (long n = 0; n < 3; n++) {
		char name[32];
		snprintf(name, sizeof(name), "coder-%ld", n);
		const json_t *pod = must_pod(w, name);
		assert_string_equal(sim_label(pod, "tier"), "ide");
		assert_string_equal(sim_label(pod, "app"), "coder");
		assert_string_equal(sim_label(pod, "enge.me/statefulcluster"), "coder");
		assert_string_equal(sim_annotation(pod, "prometheus.io/scrape"), "true");
		assert_string_equal(sim_annotation(pod, "example.com/note"), "keep me");
		check_member_pod(w, n, "coder");
	}
}

/* ---- 2. replacement ---- */

static void replace_failed_pod(struct world *w, const char *when, const char *reason)
{
	char extra[128];
	snprintf(extra, sizeof(extra), "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"%s\"}}", when);
	start_world(w, USUAL, extra);
	const char *old_uid = kube_obj_str(must_pod(w, "coder-1"), "metadata.uid");
	char *uid = xstrdup(old_uid);
	long long t = w->now_ms;
	pod_fail(w, "coder-1", reason, reason ? "The node was low on resource: memory." : "exit code 1");
	settle(w);
	expect_members(w, "[0,2,3]");
	assert_int_equal(state_next(w), 4);
	static const long ids[] = {0, 2, 3, -1};
	expect_ready_pods(w, ids);
	check_member_pod(w, 3, "coder");
	int at = sim_seen_at(w->history, "ReplaceMember", NULL, 0);
	if (at < 0 || seen_time(w, at) != t)
		world_fail(w, "the failed member was not replaced at once");
	assert_int_equal(sim_events(w->history, "Warning", "MemberReplaced", "coder-1"), 1);
	assert_int_equal(sim_events(w->history, "Warning", "MemberReplaced", "coder-3"), 1);
	if (reason)
		assert_int_equal(sim_events(w->history, "Warning", "MemberReplaced", "evicted"), 1);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 1);
	/* The failed pod deleted (not forced: its node is fine), by UID. */
	int del = sim_seen_at(w->history, "DeleteFormerMember", "coder-1", 0);
	if (del < 0 || json_is_true(json_object_get(json_array_get(w->history, (size_t)del), "force")))
		world_fail(w, "the failed pod coder-1 was not deleted gracefully");
	if (sim_find_uid(w->pods, uid))
		world_fail(w, "the failed pod is still there");
	free(uid);
	if (sim_streq(when, "Delete"))
		expect_claim_gone(w, "data-coder-1");
	else
		expect_claim_kept(w, "data-coder-1");
	json_t *st = state_of(w);
	assert_int_equal(json_object_size(json_object_get(st, "released")), 0);
	json_decref(st);
	expect_status_counts(w, 3, 3, 3, 3);
	expect_conditions(w, "True", "False", "False");
	expect_decoys(w);
}

/*
 * A failed pod's status.message (the kubelet's words, or anyone's who may
 * write pod status) with escape sequences (issue 27), at 4 KiB: the
 * MemberReplaced Event quotes it as one clean line, bounded, its words
 * kept.
 */
static void test_failed_pod_message_recorded_clean(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"Retain\"}}");
	char *said = terminal_dirty_text("oom ");
	pod_fail(w, "coder-1", NULL, said);
	free(said);
	settle(w);
	assert_int_equal(sim_events(w->history, "Warning", "MemberReplaced", "oom "), 1);
	terminal_expect_safe_messages(w->history, 1024);
}

static void test_replace_failed_retain(void **state)
{
	replace_failed_pod(*state, "Retain", NULL);
}

static void test_replace_failed_delete(void **state)
{
	replace_failed_pod(*state, "Delete", NULL);
}

static void test_replace_evicted(void **state)
{
	replace_failed_pod(*state, "Retain", "Evicted");
}

static const char *node_of(struct world *w, const char *pod)
{
	return kube_obj_str(must_pod(w, pod), "spec.nodeName");
}

static void test_node_lost(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL,
		    "{\"replacement\": {\"nodeLostAfterSeconds\": 120, \"unhealthyAfterSeconds\": 3600,"
		    " \"startupGraceSeconds\": 60}, \"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"Delete\"}}");
	char node[32];
	snprintf(node, sizeof(node), "%s", node_of(w, "coder-1"));
	assert_string_not_equal(node, node_of(w, "coder-0"));
	assert_string_not_equal(node, node_of(w, "coder-2"));
	w->now_ms += 100 * 1000;
	long long t = w->now_ms;
	node_set(w, node, false);
	w->max_wait_ms = 7000; /* look in between too */
	run_until(w, asks_for_what, "ReplaceMember", "coder-1 is replaced");
	if (w->now_ms != t + 120 * 1000)
		world_fail(w, "replaced %+lld s after the node went NotReady, want 120 s (nodeLostAfterSeconds)",
			   (w->now_ms - t) / 1000);
	w->max_wait_ms = 0;
	settle(w);
	expect_members(w, "[0,2,3]");
	int del = sim_seen_at(w->history, "DeleteFormerMember", "coder-1", 0);
	if (del < 0 || !json_is_true(json_object_get(json_array_get(w->history, (size_t)del), "force")))
		world_fail(w, "the pod on the lost node was not force-deleted");
	assert_null(sim_find(w->pods, "coder-1"));
	assert_string_not_equal(node_of(w, "coder-3"), node);
	static const long ids[] = {0, 2, 3, -1};
	expect_ready_pods(w, ids);
	/* whenReplaced Delete: its claim goes once the pod is gone. */
	expect_claim_gone(w, "data-coder-1");
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 1);
	assert_int_equal(sim_events(w->history, "Warning", "MemberReplaced", node), 1);

	/* A node deleted outright: its pods stop being Ready; replaced nodeLostAfterSeconds later, forced. */
	char gone[32];
	snprintf(gone, sizeof(gone), "%s", node_of(w, "coder-2"));
	w->now_ms += 100 * 1000;
	t = w->now_ms;
	sim_remove(w->nodes, sim_find(w->nodes, gone));
	trace(w, "    (node %s deleted)\n", gone);
	int from = (int)json_array_size(w->history);
	w->max_wait_ms = 7000;
	run_until(w, asks_for_what, "ReplaceMember", "coder-2 is replaced");
	if (w->now_ms != t + 120 * 1000)
		world_fail(w, "replaced %+lld s after its node was deleted, want 120 s", (w->now_ms - t) / 1000);
	w->max_wait_ms = 0;
	settle(w);
	expect_members(w, "[0,3,4]");
	del = sim_seen_at(w->history, "DeleteFormerMember", "coder-2", from);
	if (del < 0 || !json_is_true(json_object_get(json_array_get(w->history, (size_t)del), "force")))
		world_fail(w, "the pod of the deleted node was not force-deleted");
	static const long ids2[] = {0, 3, 4, -1};
	expect_ready_pods(w, ids2);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 2);
}

/* The WAIT at or after from whose requeue points at due, or -1. */
static int wait_pointing_at(const struct world *w, long long from, long long due)
{
	for (size_t i = 0; i < json_array_size(w->history); i++) {
		const json_t *e = json_array_get(w->history, i);
		long long t = json_integer_value(json_object_get(e, "t"));
		if (t >= from && sim_streq(kube_obj_str(e, "step"), "WAIT") &&
		    t + json_integer_value(json_object_get(e, "requeue")) == due)
			return (int)i;
	}
	return -1;
}

/*
 * A pod slow to become Ready the first time (Ready after half its start-up
 * grace) is not killed; one that never becomes Ready is replaced after the
 * grace and unhealthyAfterSeconds, not before.
 */
static void test_slow_start_is_not_killed(void **state)
{
	struct world *w = *state;
	world_init(w, USUAL, "{\"replacement\": {\"startupGraceSeconds\": 120, \"unhealthyAfterSeconds\": 10}}");
	json_object_set_new(w->ready_after, "coder-1", json_integer(60 * 1000));
	json_object_set_new(w->ready_after, "coder-2", json_integer(1000LL * 1000 * 1000));
	settle(w);
	int at = sim_seen_at(w->history, "ReplaceMember", NULL, 0);
	if (at < 0)
		world_fail(w, "coder-2, never Ready, was never replaced");
	if (sim_seen_at(w->history, "ReplaceMember", NULL, at + 1) >= 0)
		world_fail(w, "more than one member replaced");
	if (!sim_contains(kube_obj_str(json_array_get(w->history, (size_t)at), "message"), "coder-2"))
		world_fail(w, "the member replaced is not coder-2");
	/* coder-2 started 1 s after its creation at START: replaced 120 s + 10 s later, not before. */
	long long started = w->start_ms + 1000;
	if (seen_time(w, at) != started + 130 * 1000)
		world_fail(w, "coder-2 replaced %+lld s after it started, want 130 s", (seen_time(w, at) - started) / 1000);
	if (wait_pointing_at(w, started, started + 130 * 1000) < 0)
		world_fail(w, "no WAIT pointed at the time coder-2 falls due");
	expect_members(w, "[0,1,3]");
	static const long ids[] = {0, 1, 3, -1};
	json_object_del(w->ready_after, "coder-3");
	expect_ready_pods(w, ids);
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-1")), 1);
}

/*
 * A member that was Ready and stopped being Ready is replaced
 * unhealthyAfterSeconds later, not earlier; within its start-up grace
 * the count starts when the grace ends.
 */
static void test_unhealthy_after_ready(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"replacement\": {\"startupGraceSeconds\": 60, \"unhealthyAfterSeconds\": 30}}");
	long long started = sim_time_ms(kube_obj_str(must_pod(w, "coder-0"), "status.startTime"));
	w->now_ms += 100 * 1000;
	long long t = w->now_ms;
	pod_unready(w, "coder-0");
	run_until(w, asks_for_what, "ReplaceMember", "coder-0 is replaced");
	if (w->now_ms != t + 30 * 1000)
		world_fail(w, "replaced %+lld s after it stopped being Ready, want 30 s", (w->now_ms - t) / 1000);
	if (wait_pointing_at(w, t, t + 30 * 1000) < 0)
		world_fail(w, "no WAIT pointed at the time coder-0 falls due");
	settle(w);
	expect_members(w, "[1,2,3]");
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 1);

	/* Within the grace: not Ready 5 s after it started; the count starts when the grace ends. */
	start_world(w, USUAL, "{\"replacement\": {\"startupGraceSeconds\": 60, \"unhealthyAfterSeconds\": 30}}");
	started = sim_time_ms(kube_obj_str(must_pod(w, "coder-1"), "status.startTime"));
	w->now_ms = started + 5000;
	pod_unready(w, "coder-1");
	w->max_wait_ms = 10000;
	run_until(w, asks_for_what, "ReplaceMember", "coder-1 is replaced");
	if (w->now_ms != started + 90 * 1000)
		world_fail(w, "replaced %+lld s after it started, want 90 s (grace 60 s + 30 s)",
			   (w->now_ms - started) / 1000);
	w->max_wait_ms = 0;
	settle(w);
	expect_members(w, "[0,2,3]");
}

/*
 * A member's pod deleted by the user (kubectl delete pod) whose container
 * dies of the SIGTERM: the pod reaches phase Failed while it terminates.
 * That is a restart, not a failure of the member: no replacement, no new
 * identity; once the pod is gone the same identity gets a new pod, on its
 * claims (whenReplaced Delete would have deleted them).
 */
static void test_user_deleted_pod_ending_failed_is_restarted(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"Delete\"}}");
	char *uid = xstrdup(kube_obj_str(must_pod(w, "coder-1"), "metadata.uid"));
	w->hold_terminating = true;
	user_delete_pod(w, "coder-1");
	w->now_ms += 1000;
	json_t *pod = must_pod(w, "coder-1");
	char ts[32];
	sim_rfc3339(w->now_ms, ts, sizeof(ts));
	json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Failed"));
	json_object_set_new(json_object_get(pod, "status"), "containerStatuses",
			    json_pack("[{s:s, s:{s:{s:i, s:s, s:s}}}]", "name", "coder-stateful", "state", "terminated",
				      "exitCode", 143, "reason", "Error", "finishedAt", ts));
	set_condition(pod, "Ready", false, w->now_ms);
	bump(w, pod);
	trace(w, "    (pod coder-1 Failed: its container died of the SIGTERM)\n");
	settle(w);
	/* Still terminating, long past unhealthyAfterSeconds: still no replacement. */
	w->now_ms += 30 * 60 * 1000;
	settle(w);
	if (sim_seen_at(w->history, "ReplaceMember", NULL, 0) >= 0 || sim_events(w->history, NULL, "MemberReplaced", NULL))
		world_fail(w, "the member whose pod the user deleted was replaced");
	pod = must_pod(w, "coder-1");
	assert_true(sim_streq(kube_obj_str(pod, "metadata.uid"), uid) && sim_terminating(pod));
	/* The kubelet is done with it: the same identity gets a new pod. */
	w->hold_terminating = false;
	settle(w);
	expect_members(w, "[0,1,2]");
	assert_int_equal(state_next(w), 3);
	static const long ids[] = {0, 1, 2, -1};
	expect_ready_pods(w, ids);
	assert_false(sim_streq(kube_obj_str(must_pod(w, "coder-1"), "metadata.uid"), uid));
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-1")), 2);
	assert_null(json_object_get(w->pod_names, "coder-3"));
	expect_claim_kept(w, "data-coder-1");
	assert_int_equal(sim_events(w->history, NULL, "MemberReplaced", NULL), 0);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 0);
	expect_status_counts(w, 3, 3, 3, 3);
	expect_decoys(w);
	free(uid);
}

/* ---- 3. scaling ---- */

static void scale_down_and_up(struct world *w, const char *when)
{
	char extra[256];
	snprintf(extra, sizeof(extra),
		 "{\"replicas\": 4, \"replacement\": {\"unhealthyAfterSeconds\": 36000},"
		 " \"persistentVolumeClaimRetentionPolicy\": {\"whenScaled\": \"%s\"}}",
		 when);
	start_world(w, USUAL, extra);
	pod_unready(w, "coder-1");
	scale_to(w, 2);
	settle(w);
	expect_members(w, "[0,2]");
	static const long two[] = {0, 2, -1};
	expect_ready_pods(w, two);
	int first = sim_seen_at(w->history, "RemoveMember", NULL, 0);
	int second = sim_seen_at(w->history, "RemoveMember", NULL, first + 1);
	assert_true(first >= 0 && second > first);
	if (!sim_contains(kube_obj_str(json_array_get(w->history, (size_t)first), "message"), "coder-1") ||
	    !sim_contains(kube_obj_str(json_array_get(w->history, (size_t)second), "message"), "coder-3"))
		world_fail(w, "scale-down did not take coder-1 (not Ready) first, then coder-3 (newest)");
	assert_int_equal(sim_events(w->history, "Normal", "MemberRemoved", NULL), 2);
	if (sim_streq(when, "Delete")) {
		expect_claim_gone(w, "data-coder-1");
		expect_claim_gone(w, "data-coder-3");
	} else {
		expect_claim_kept(w, "data-coder-1");
		expect_claim_kept(w, "data-coder-3");
	}
	expect_claim_kept(w, "data-coder-0");
	expect_claim_kept(w, "data-coder-2");
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 0);
	expect_status_counts(w, 2, 2, 2, 2);

	scale_to(w, 4);
	settle(w);
	expect_members(w, "[0,2,4,5]");
	static const long four[] = {0, 2, 4, 5, -1};
	expect_ready_pods(w, four);
	assert_int_equal(state_next(w), 6);
	if (!sim_streq(when, "Delete")) {
		expect_claim_kept(w, "data-coder-1");
		expect_claim_kept(w, "data-coder-3");
	}
	expect_status_counts(w, 4, 4, 4, 4);
	expect_decoys(w);
}

static void test_scale_down_retain_then_up(void **state)
{
	scale_down_and_up(*state, "Retain");
}

static void test_scale_down_delete_then_up(void **state)
{
	scale_down_and_up(*state, "Delete");
}

/* ---- 3b. the members the user names (issue 32) ---- */

/*
 * spec.removeMembers with replicas lowered as much: exactly the members
 * named go (not the newest), their claims as whenScaled says; the entry
 * may stay in the list; identities are never handed out again.
 */
static void remove_named(struct world *w, const char *when)
{
	char extra[256];
	snprintf(extra, sizeof(extra),
		 "{\"replicas\": 4, \"persistentVolumeClaimRetentionPolicy\": {\"whenScaled\": \"%s\"}}", when);
	start_world(w, USUAL, extra);
	/* coder-1 is Ready and not the newest: a plain scale-down would take coder-3. */
	spec_patch(w, "{\"replicas\": 3, \"removeMembers\": [\"coder-1\"]}");
	settle(w);
	expect_members(w, "[0,2,3]");
	static const long three[] = {0, 2, 3, -1};
	expect_ready_pods(w, three);
	assert_int_equal(sim_events(w->history, "Normal", "MemberRemoved", NULL), 1);
	assert_int_equal(sim_events(w->history, "Normal", "MemberRemoved", "coder-1"), 1);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 0);
	assert_int_equal(state_next(w), 4);
	if (sim_streq(when, "Delete"))
		expect_claim_gone(w, "data-coder-1");
	else
		expect_claim_kept(w, "data-coder-1");
	expect_claim_kept(w, "data-coder-3");
	expect_status_counts(w, 3, 3, 3, 3);

	/* The entry stays (a GitOps tool re-applies it): accepted; scaling up takes a new identity. */
	scale_to(w, 4);
	settle(w);
	expect_members(w, "[0,2,3,4]");
	assert_int_equal(sim_events(w->history, "Warning", "InvalidSpec", NULL), 0);
	/* Two more at once, replicas lowered by two: exactly those. */
	spec_patch(w, "{\"replicas\": 2, \"removeMembers\": [\"coder-1\", \"coder-4\", \"coder-0\"]}");
	settle(w);
	expect_members(w, "[2,3]");
	static const long two[] = {2, 3, -1};
	expect_ready_pods(w, two);
	assert_int_equal(sim_events(w->history, "Normal", "MemberRemoved", NULL), 3);
	expect_decoys(w);
}

static void test_remove_named_retain(void **state)
{
	remove_named(*state, "Retain");
}

static void test_remove_named_delete(void **state)
{
	remove_named(*state, "Delete");
}

/* Named without lowering replicas: the member goes and a new identity keeps the count (KubeBlocks' offlineInstances). */
static void test_remove_named_keeps_replicas(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	spec_patch(w, "{\"removeMembers\": [\"coder-0\"]}");
	settle(w);
	expect_members(w, "[1,2,3]");
	static const long ids[] = {1, 2, 3, -1};
	expect_ready_pods(w, ids);
	assert_int_equal(sim_events(w->history, "Normal", "MemberRemoved", "coder-0"), 1);
	assert_int_equal(sim_events(w->history, "Normal", "MembersAdded", "coder-3"), 1);
	expect_claim_kept(w, "data-coder-0");
}

/*
 * A name this cluster never handed out (a typo, another cluster's, not an
 * identity): refused with a Warning naming it, and nothing changes, not
 * even the scale-down applied with it (it would take the wrong member).
 */
static void test_remove_unknown_member_refused(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	static const char *const bad[] = {"coder-3", "coder-9", "other-1", "coder-01", "coder", "coder-1x"};
	for (size_t k = 0; k < NITEMS(bad); k++) {
		char patch[128];
		snprintf(patch, sizeof(patch), "{\"replicas\": 2, \"removeMembers\": [\"coder-1\", \"%s\"]}", bad[k]);
		spec_patch(w, patch);
		settle(w);
		if (step_of(&w->a) != STEP_REFUSE)
			world_fail(w, "removeMembers naming %s: %s, want a refusal", bad[k], w->steps.seen);
		char quoted[64];
		snprintf(quoted, sizeof(quoted), "\"%s\"", bad[k]);
		if (!sim_events(w->history, "Warning", "InvalidSpec", quoted) ||
		    !sim_contains(w->a.event_message, "spec.removeMembers") || !sim_contains(w->a.event_message, quoted))
			world_fail(w, "removeMembers naming %s: no Warning naming it", bad[k]);
		expect_members(w, "[0,1,2]");
		static const long ids[] = {0, 1, 2, -1};
		expect_ready_pods(w, ids);
	}
	assert_int_equal(sim_events(w->history, "Normal", "MemberRemoved", NULL), 0);
	/* Fixed: exactly the member named goes. */
	spec_patch(w, "{\"removeMembers\": [\"coder-1\"]}");
	settle(w);
	expect_members(w, "[0,2]");
	expect_decoys(w);
}

/* The replace-members annotation: the member gets a new identity and new claims, counted and told as a replacement. */
static void replace_requested_member(struct world *w, const char *when)
{
	char extra[128];
	snprintf(extra, sizeof(extra), "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"%s\"}}", when);
	start_world(w, USUAL, extra);
	request_replace(w, "coder-1");
	settle(w);
	expect_members(w, "[0,2,3]");
	static const long ids[] = {0, 2, 3, -1};
	expect_ready_pods(w, ids);
	check_member_pod(w, 3, "coder");
	assert_int_equal(sim_events(w->history, "Normal", "MemberReplaced", "coder-1"), 1);
	assert_int_equal(sim_events(w->history, "Normal", "MemberReplaced", "coder-3"), 1);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 1);
	assert_null(sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE));
	assert_int_equal(state_next(w), 4);
	if (sim_streq(when, "Delete"))
		expect_claim_gone(w, "data-coder-1");
	else
		expect_claim_kept(w, "data-coder-1");
	expect_status_counts(w, 3, 3, 3, 3);
	expect_conditions(w, "True", "False", "False");
	expect_decoys(w);
}

static void test_replace_requested_retain(void **state)
{
	replace_requested_member(*state, "Retain");
}

static void test_replace_requested_delete(void **state)
{
	replace_requested_member(*state, "Delete");
}

/*
 * Two asked for at once with maxUnavailable 1: the second waits (an Event
 * says why) until the first one's successor is available.
 */
static void test_replace_requested_max_unavailable(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	w->ready_delay_ms = 20000;
	w->track_down = true;
	w->max_down = 0;
	request_replace(w, "coder-0, coder-2");
	settle(w);
	expect_members(w, "[1,3,4]");
	static const long ids[] = {1, 3, 4, -1};
	expect_ready_pods(w, ids);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 2);
	assert_int_equal(w->max_down, 1);
	if (sim_events(w->history, "Normal", "ReplaceWaiting", "coder-2") < 1)
		world_fail(w, "no ReplaceWaiting Event while coder-2 waited");
	int first = sim_seen_at(w->history, "ReplaceMember", NULL, 0);
	int second = sim_seen_at(w->history, "ReplaceMember", NULL, first + 1);
	assert_true(first >= 0 && second > first);
	if (seen_time(w, second) - seen_time(w, first) < 20000)
		world_fail(w, "the second replacement did not wait for the first one's successor");
	assert_null(sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE));
}

/* A request naming anything but members: refused with a Warning that names it, removed, nothing replaced. */
static void test_replace_request_refused(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	static const struct {
		const char *value, *named;
	} bad[] = {{"coder-9", "\"coder-9\""},       {"coder-1,coder-7", "\"coder-7\""},
		   {"coder-1,,coder-2", "an empty name"}, {"", "an empty name"},
		   {"bogus", "\"bogus\""},               {"coder-01", "\"coder-01\""}};
	for (size_t k = 0; k < NITEMS(bad); k++) {
		request_replace(w, bad[k].value);
		settle(w);
		if (sim_events(w->history, "Warning", "ReplaceRefused", NULL) != (int)k + 1 ||
		    sim_events(w->history, "Warning", "ReplaceRefused", bad[k].named) < 1)
			world_fail(w, "replace-members \"%s\": no Warning naming %s", bad[k].value, bad[k].named);
		if (sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE))
			world_fail(w, "replace-members \"%s\": the annotation was not removed", bad[k].value);
		expect_members(w, "[0,1,2]");
		static const long ids[] = {0, 1, 2, -1};
		expect_ready_pods(w, ids);
	}
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 0);
	request_replace(w, "coder-2");
	settle(w);
	expect_members(w, "[0,1,3]");
	expect_decoys(w);
}

/* Asked for while it fails: replaced once, as failed; the request goes with it (no refusal follows). */
static void test_replace_request_of_a_failed_member(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	request_replace(w, "coder-1");
	pod_fail(w, "coder-1", NULL, "exit code 1");
	settle(w);
	expect_members(w, "[0,2,3]");
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 1);
	assert_int_equal(sim_events(w->history, "Warning", "ReplaceRefused", NULL), 0);
	assert_null(sim_annotation(w->cluster, ANNOTATION_CLUSTER_REPLACE));
}

/* ---- 4. updates ---- */

/* Members 0..n-1 all at revision rev, with their first claims. */
static void expect_all_at(struct world *w, int n, const char *rev)
{
	for (int k = 0; k < n; k++) {
		char name[32], claim[48];
		snprintf(name, sizeof(name), "coder-%d", k);
		snprintf(claim, sizeof(claim), "data-coder-%d", k);
		if (!sim_streq(pod_revision(w, name), rev))
			world_fail(w, "pod %s at revision %s, want %s", name, sim_or_dash(pod_revision(w, name)), rev);
		expect_claim_kept(w, claim);
	}
}

static void rolling_update(struct world *w, const char *extra, int n, int max)
{
	start_world(w, USUAL, extra);
	char *rev1 = xstrdup(update_revision(w));
	set_image(w, "codercom/code-server:4.0");
	w->track_down = true;
	w->max_down = 0;
	settle(w);
	w->track_down = false;
	const char *rev2 = update_revision(w);
	assert_non_null(rev2);
	assert_string_not_equal(rev1, rev2);
	assert_int_equal(json_integer_value(json_object_get(sim_find(w->revisions, rev2), "revision")), 2);
	assert_non_null(sim_find(w->revisions, rev1));
	expect_all_at(w, n, rev2);
	for (int k = 0; k < n; k++) {
		char name[32];
		snprintf(name, sizeof(name), "coder-%d", k);
		if (json_integer_value(json_object_get(w->pod_names, name)) != 2)
			world_fail(w, "pod %s created %lld times, want 2", name,
				   (long long)json_integer_value(json_object_get(w->pod_names, name)));
	}
	if (w->max_down > max)
		world_fail(w, "%d members unavailable at once, maxUnavailable %d", w->max_down, max);
	if (w->max_down < max)
		world_fail(w, "at most %d members updated at once, maxUnavailable %d allows %d", w->max_down, max, max);
	assert_int_equal(sim_events(w->history, "Normal", "MemberUpdating", NULL), n);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 0);
	assert_int_equal(state_next(w), n);
	assert_string_equal(status_field(w, "currentRevision"), rev2);
	assert_string_equal(status_field(w, "updateRevision"), rev2);
	expect_status_counts(w, n, n, n, n);
	assert_int_equal(status_int(w, "observedGeneration"), json_integer_value(json_object_get(sim_meta(w->cluster), "generation")));
	free(rev1);
}

static void test_rolling_update(void **state)
{
	rolling_update(*state, NULL, 3, 1);
}

static void test_rolling_update_max_unavailable_2(void **state)
{
	rolling_update(*state, "{\"replicas\": 4, \"updateStrategy\": {\"type\": \"RollingUpdate\","
			       " \"rollingUpdate\": {\"maxUnavailable\": 2}}}",
		       4, 2);
}

static void test_rolling_update_max_unavailable_percent(void **state)
{
	rolling_update(*state, "{\"replicas\": 4, \"minReadySeconds\": 5, \"updateStrategy\": {\"type\": \"RollingUpdate\","
			       " \"rollingUpdate\": {\"maxUnavailable\": \"50%\"}}}",
		       4, 2);
}

/*
 * The controller's cache lags one to three steps behind: a pod it just
 * deleted still looks Ready. The update stays within maxUnavailable (the
 * UID precondition turns a delete of a pod already replaced into a 409).
 * With a member that stops being Ready as the update starts, the cache
 * shows that before it shows the deletion: deleted_uids keeps the planner
 * from taking a second member down.
 */
static void test_rolling_update_lagging_cache(void **state)
{
	struct world *w = *state;
	for (int lag = 1; lag <= 3; lag++) {
		for (int max = 1; max <= 2; max++) {
			for (int flap = 0; flap <= 1; flap++) {
				char extra[128];
				snprintf(extra, sizeof(extra),
					 "{\"replicas\": 4, \"updateStrategy\": {\"rollingUpdate\": {\"maxUnavailable\": %d}}}",
					 max);
				start_world(w, USUAL, extra);
				w->lag = lag;
				w->snapshots = json_array();
				for (int k = 0; k < lag; k++)
					json_array_append_new(w->snapshots, json_deep_copy(w->pods));
				if (flap)
					pod_unready(w, "coder-0");
				set_image(w, "codercom/code-server:4.0");
				w->track_down = true;
				settle(w);
				if (w->max_down > max + flap)
					world_fail(w, "%d members unavailable at once on a cache %d steps behind, maxUnavailable %d",
						   w->max_down, lag, max);
				expect_all_at(w, 4, update_revision(w));
				expect_members(w, "[0,1,2,3]");
			}
		}
	}
}

/*
 * deleted_uids as the header promises: a pod the controller deleted that
 * the cache still shows Ready counts as going. The planner neither deletes
 * it again nor takes a second member down past maxUnavailable.
 */
static void test_deleted_uids_count_as_going(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	set_image(w, "codercom/code-server:4.0");
	run_until(w, asks_for_what, "UpdateMember", "an update deletes a pod");
	assert_string_equal(w->a.name, "coder-2");
	/* Deleted; the cache does not show it yet. */
	json_array_append_new(w->deleted_uids, json_string(w->a.uid));
	for (int i = 0; i < 5; i++) {
		plan(w);
		if (step_of(&w->a) == STEP_DELETE_POD)
			world_fail(w, "with coder-2 deleted (not yet in the cache): %s", w->steps.seen);
		if (resting(step_of(&w->a)))
			break;
		perform(w);
	}
	if (step_of(&w->a) != STEP_NOTHING && step_of(&w->a) != STEP_WAIT)
		world_fail(w, "does not rest: %s", w->steps.seen);
	/* The status shows the member going. */
	const json_t *m2 = json_array_get(json_object_get(json_object_get(w->cluster, "status"), "members"), 2);
	assert_string_equal(kube_obj_str(m2, "identity"), "coder-2");
	assert_false(json_is_true(json_object_get(m2, "ready")));
	assert_int_equal(status_int(w, "readyReplicas"), 2);
	/* Without it, the same cache gets coder-2 deleted (again). */
	json_array_clear(w->deleted_uids);
	plan(w);
	assert_int_equal(step_of(&w->a), STEP_DELETE_POD);
	assert_string_equal(w->a.name, "coder-2");
}

static void test_partition(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"replicas\": 4, \"updateStrategy\": {\"rollingUpdate\": {\"partition\": 2}}}");
	char *rev1 = xstrdup(update_revision(w));
	set_image(w, "codercom/code-server:4.0");
	w->track_down = true;
	settle(w);
	char *rev2 = xstrdup(update_revision(w));
	assert_string_equal(pod_revision(w, "coder-0"), rev1);
	assert_string_equal(pod_revision(w, "coder-1"), rev1);
	assert_string_equal(pod_revision(w, "coder-2"), rev2);
	assert_string_equal(pod_revision(w, "coder-3"), rev2);
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-0")), 1);
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-1")), 1);
	expect_status_counts(w, 4, 4, 4, 2);
	assert_string_equal(status_field(w, "currentRevision"), rev1);
	assert_string_equal(status_field(w, "updateRevision"), rev2);
	if (w->max_down > 1)
		world_fail(w, "%d members unavailable at once", w->max_down);
	/* The partition holds through a status wipe. */
	wipe_status(w);
	settle(w);
	assert_string_equal(pod_revision(w, "coder-0"), rev1);
	assert_string_equal(pod_revision(w, "coder-1"), rev1);
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-0")), 1);
	assert_string_equal(status_field(w, "currentRevision"), rev1);
	expect_status_counts(w, 4, 4, 4, 2);

	spec_patch(w, "{\"updateStrategy\": {\"rollingUpdate\": {\"partition\": 0}}}");
	settle(w);
	expect_all_at(w, 4, rev2);
	expect_status_counts(w, 4, 4, 4, 4);
	assert_string_equal(status_field(w, "currentRevision"), rev2);
	if (w->max_down > 1)
		world_fail(w, "%d members unavailable at once", w->max_down);
	free(rev1);
	free(rev2);
}

static void test_on_delete(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"updateStrategy\": {\"type\": \"OnDelete\"}}");
	char *rev1 = xstrdup(update_revision(w));
	int from = (int)json_array_size(w->history);
	set_image(w, "codercom/code-server:4.0");
	settle(w);
	char *rev2 = xstrdup(update_revision(w));
	assert_string_not_equal(rev1, rev2);
	assert_int_equal(sim_seen_count(w->history, "CREATE_REVISION", from), 1);
	assert_int_equal(sim_seen_count(w->history, "DELETE_POD", from), 0);
	expect_all_at(w, 3, rev1);
	expect_status_counts(w, 3, 3, 3, 0);
	assert_string_equal(status_field(w, "updateRevision"), rev2);
	assert_string_equal(status_field(w, "currentRevision"), rev1);
	/* An hour later, still nothing: the user decides. */
	w->now_ms += 3600 * 1000;
	settle(w);
	expect_all_at(w, 3, rev1);

	user_delete_pod(w, "coder-1");
	settle(w);
	assert_string_equal(pod_revision(w, "coder-1"), rev2);
	assert_string_equal(pod_revision(w, "coder-0"), rev1);
	assert_string_equal(pod_revision(w, "coder-2"), rev1);
	expect_claim_kept(w, "data-coder-1");
	expect_members(w, "[0,1,2]");
	expect_status_counts(w, 3, 3, 3, 1);
	free(rev1);
	free(rev2);
}

/* Found by fuzz/fuzz_cluster_plan.c: a claim listed three times overflowed its member's claims. */
static void test_claim_listed_twice(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, NULL);
	settle(w);
	json_t *claim = json_incref(sim_find(w->pvcs, "data-coder-1"));
	assert_non_null(claim);
	json_array_append_new(w->pvcs, json_deep_copy(claim));
	json_array_append_new(w->pvcs, json_deep_copy(claim));
	json_decref(claim);
	plan(w);
	if (step_of(&w->a) != STEP_NOTHING)
		world_fail(w, "a claim listed three times: %s", w->steps.seen);
}

static bool has_revision(const struct world *w, const char *name)
{
	return sim_find(w->revisions, name) != NULL;
}

static bool one_ready_at_update(const struct world *w, const void *arg)
{
	(void)arg;
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		if (controlled(pod) && pod_ready(pod) && sim_streq(sim_label(pod, LABEL_REVISION_HASH), update_revision(w)))
			return true;
	}
	return false;
}

static void test_revision_history(void **state)
{
	struct world *w = *state;
	char *revs[6] = {0};
	start_world(w, USUAL, "{\"revisionHistoryLimit\": 2}");
	revs[0] = xstrdup(update_revision(w));
	for (int i = 1; i < 6; i++) {
		char image[64];
		snprintf(image, sizeof(image), "codercom/code-server:4.%d", i);
		set_image(w, image);
		settle(w);
		revs[i] = xstrdup(update_revision(w));
		assert_int_equal(json_integer_value(json_object_get(sim_find(w->revisions, revs[i]), "revision")), i + 1);
	}
	/* In use: revs[5]; the two newest unused kept; the older ones pruned, oldest first. */
	for (int i = 0; i < 6; i++)
		if (has_revision(w, revs[i]) != (i >= 3))
			world_fail(w, "revision %d (%s) %s", i, revs[i], i >= 3 ? "was pruned" : "was kept");
	int d0 = sim_seen_at(w->history, "DELETE_REVISION", revs[0], 0), d1 = sim_seen_at(w->history, "DELETE_REVISION", revs[1], 0),
	    d2 = sim_seen_at(w->history, "DELETE_REVISION", revs[2], 0);
	assert_true(d0 >= 0 && d0 < d1 && d1 < d2);
	for (int i = 0; i < 6; i++)
		FREE_AND_NULL(revs[i]);

	/* A revision still in use is kept past the limit: coder-0 stays at the first (partition 1). */
	start_world(w, USUAL, "{\"revisionHistoryLimit\": 1, \"updateStrategy\": {\"rollingUpdate\": {\"partition\": 1}}}");
	revs[0] = xstrdup(update_revision(w));
	for (int i = 1; i < 5; i++) {
		char image[64];
		snprintf(image, sizeof(image), "codercom/code-server:5.%d", i);
		set_image(w, image);
		settle(w);
		revs[i] = xstrdup(update_revision(w));
	}
	assert_string_equal(pod_revision(w, "coder-0"), revs[0]);
	assert_string_equal(pod_revision(w, "coder-1"), revs[4]);
	static const bool kept[] = {true, false, false, true, true};
	for (int i = 0; i < 5; i++)
		if (has_revision(w, revs[i]) != kept[i])
			world_fail(w, "revision %d (%s) %s", i, revs[i], kept[i] ? "was pruned" : "was kept");
	for (int i = 0; i < 5; i++)
		FREE_AND_NULL(revs[i]);

	/* A rollback to the first template: its revision is used again, no new one. */
	start_world(w, USUAL, NULL);
	revs[0] = xstrdup(update_revision(w));
	set_image(w, "codercom/code-server:7.0");
	settle(w);
	set_image(w, "codercom/code-server");
	int from = (int)json_array_size(w->history);
	settle(w);
	assert_string_equal(update_revision(w), revs[0]);
	assert_int_equal(sim_seen_count(w->history, "CREATE_REVISION", from), 0);
	expect_all_at(w, 3, revs[0]);
	assert_string_equal(status_field(w, "currentRevision"), revs[0]);
	FREE_AND_NULL(revs[0]);

	/*
	 * revisionHistoryLimit 0 and the template changed again mid-rollout:
	 * the middle revision is neither current nor update, but a pod runs it.
	 */
	start_world(w, USUAL, "{\"revisionHistoryLimit\": 0}");
	revs[0] = xstrdup(update_revision(w));
	set_image(w, "codercom/code-server:6.1");
	run_until(w, one_ready_at_update, NULL, "a member runs the second revision");
	revs[1] = xstrdup(update_revision(w));
	set_image(w, "codercom/code-server:6.2");
	settle(w);
	revs[2] = xstrdup(update_revision(w));
	expect_all_at(w, 3, revs[2]);
	assert_false(has_revision(w, revs[0]));
	assert_false(has_revision(w, revs[1]));
	assert_int_equal(json_array_size(w->revisions), 1);
	for (int i = 0; i < 3; i++)
		free(revs[i]);
}

/* ---- 5. state lost ---- */

static void test_state_wiped(void **state)
{
	struct world *w = *state;
	/* (a) After a replacement: rebuilt from the pods (the failed one's claims kept). */
	start_world(w, USUAL, NULL);
	pod_fail(w, "coder-1", NULL, "exit code 1");
	settle(w);
	expect_members(w, "[0,2,3]");
	wipe_state(w);
	wipe_status(w);
	settle(w);
	assert_int_equal(sim_events(w->history, "Normal", "StateRebuilt", NULL), 1);
	expect_members(w, "[0,2,3]");
	assert_int_equal(state_next(w), 4);
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-0")), 1);
	scale_to(w, 4);
	settle(w);
	expect_members(w, "[0,2,3,4]");

	/* (b) The highest identity only has claims left (scaled away, whenScaled Retain). */
	start_world(w, USUAL, NULL);
	scale_to(w, 2);
	settle(w);
	expect_members(w, "[0,1]");
	assert_null(sim_find(w->pods, "coder-2"));
	expect_claim_kept(w, "data-coder-2");
	wipe_state(w);
	wipe_status(w);
	settle(w);
	assert_int_equal(state_next(w), 3);
	scale_to(w, 3);
	settle(w);
	expect_members(w, "[0,1,3]");
	static const long b[] = {0, 1, 3, -1};
	expect_ready_pods(w, b);

	/* (c) Nothing left of the highest (whenScaled Delete), the status kept: it remembers. */
	start_world(w, USUAL, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenScaled\": \"Delete\"}}");
	scale_to(w, 2);
	settle(w);
	expect_claim_gone(w, "data-coder-2");
	wipe_state(w);
	settle(w);
	assert_int_equal(state_next(w), 3);
	scale_to(w, 3);
	settle(w);
	expect_members(w, "[0,1,3]");

	/* (d) A state behind what exists (restored from an old backup): next moves past it. */
	start_world(w, USUAL, NULL);
	json_object_set_new(json_object_get(sim_meta(w->cluster), "annotations"), ANNOTATION_CLUSTER_STATE,
			    json_string("{\"members\":[0,1,2],\"next\":1,\"released\":{}}"));
	bump(w, w->cluster);
	settle(w);
	assert_int_equal(state_next(w), 3);
	expect_members(w, "[0,1,2]");
	scale_to(w, 4);
	settle(w);
	expect_members(w, "[0,1,2,3]");

	/* (e) Only the status wiped: written again, nothing else changes. */
	start_world(w, USUAL, NULL);
	int from = (int)json_array_size(w->history);
	wipe_status(w);
	settle(w);
	assert_int_equal(sim_seen_count(w->history, "UPDATE_STATUS", from), 1);
	assert_int_equal(sim_seen_count(w->history, "SET_STATE", from), 0);
	expect_status_counts(w, 3, 3, 3, 3);
}

/*
 * The state lost just as a member fails (whenReplaced Delete): the failed
 * pod is no member of the rebuilt state and a new identity takes its
 * place; the failed member is still a failed member, so it is reported
 * (MemberReplaced, counted) and its claims follow whenReplaced (SPEC
 * "cluster": "the old PVCs follow whenReplaced").
 */
static void test_state_lost_as_a_member_fails(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"Delete\"}}");
	pod_fail(w, "coder-1", NULL, "exit code 1");
	wipe_state(w);
	wipe_status(w);
	settle(w);
	expect_members(w, "[0,2,3]");
	assert_int_equal(state_next(w), 4);
	assert_null(sim_find(w->pods, "coder-1"));
	if (sim_find(w->pvcs, "data-coder-1"))
		world_fail(w, "whenReplaced Delete: claim data-coder-1 of the failed member coder-1 is kept");
	assert_int_equal(sim_events(w->history, "Warning", "MemberReplaced", "coder-1"), 1);
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 1);
}

/* The state annotation replaced by text (an older copy), as a re-applied manifest does. */
static void restore_state(struct world *w, const char *text)
{
	sim_annotate(w->cluster, ANNOTATION_CLUSTER_STATE, text);
	bump(w, w->cluster);
	trace(w, "    (state annotation replaced by an older copy: %s)\n", text);
}

/* The history index of the first RecoverMember, checked: a Warning MemberRecovered naming pod. */
static int expect_recovered(struct world *w, const char *pod, int from)
{
	int at = sim_seen_at(w->history, "RecoverMember", NULL, from);
	if (at < 0)
		world_fail(w, "pod %s was not taken back in as a member (RecoverMember)", pod);
	const json_t *e = json_array_get(w->history, (size_t)at);
	if (!sim_streq(kube_obj_str(e, "step"), "SET_STATE") || !sim_streq(kube_obj_str(e, "type"), "Warning") ||
	    !sim_streq(kube_obj_str(e, "reason"), "MemberRecovered") || !sim_contains(kube_obj_str(e, "message"), pod))
		world_fail(w, "RecoverMember is not a SET_STATE with a Warning MemberRecovered naming %s", pod);
	if (sim_seen_at(w->history, "RecoverMember", NULL, at + 1) >= 0)
		world_fail(w, "more than one RecoverMember");
	return at;
}

/*
 * The state annotation replaced by an older copy that lacks a live member
 * (its pod the cluster's, not terminating, not released): the pod is
 * never deleted as a former member; it is taken back in (RecoverMember,
 * Warning MemberRecovered), then the members are scaled as usual.
 */
static void test_state_replaced_by_an_older_copy(void **state)
{
	struct world *w = *state;
	/* (a) replicas 3 as before: coder-2 is a member again, the identity added meanwhile scaled away. */
	start_world(w, USUAL, "{\"replicas\": 2}");
	char *old = xstrdup(sim_annotation(w->cluster, ANNOTATION_CLUSTER_STATE));
	scale_to(w, 3);
	settle(w);
	expect_members(w, "[0,1,2]");
	char *uid = xstrdup(kube_obj_str(must_pod(w, "coder-2"), "metadata.uid"));
	int from = (int)json_array_size(w->history);
	restore_state(w, old);
	settle(w);
	if (sim_seen_at(w->history, "DeleteFormerMember", "coder-2", from) >= 0)
		world_fail(w, "the live pod coder-2 was deleted as a former member");
	const json_t *pod = must_pod(w, "coder-2");
	assert_true(sim_streq(kube_obj_str(pod, "metadata.uid"), uid) && !sim_terminating(pod));
	expect_recovered(w, "coder-2", from);
	expect_members(w, "[0,1,2]");
	static const long ids[] = {0, 1, 2, -1};
	expect_ready_pods(w, ids);
	assert_int_equal(json_integer_value(json_object_get(w->pod_names, "coder-2")), 1);
	/* An identity added while coder-2 was not listed got neither pod nor claim. */
	assert_null(json_object_get(w->pod_names, "coder-3"));
	assert_null(json_object_get(w->claim_uids, "data-coder-3"));
	assert_int_equal(sim_counted(w->counts, REPLACEMENTS_TOTAL), 0);
	expect_status_counts(w, 3, 3, 3, 3);
	expect_decoys(w);
	FREE_AND_NULL(old);
	FREE_AND_NULL(uid);

	/*
	 * (b) The copy comes with replicas 2 again (whenScaled Delete): taken
	 * back in first, then scaled down as usual: the newest goes, its
	 * claims with it.
	 */
	start_world(w, USUAL, "{\"replicas\": 2, \"persistentVolumeClaimRetentionPolicy\": {\"whenScaled\": \"Delete\"}}");
	old = xstrdup(sim_annotation(w->cluster, ANNOTATION_CLUSTER_STATE));
	scale_to(w, 3);
	settle(w);
	from = (int)json_array_size(w->history);
	restore_state(w, old);
	scale_to(w, 2);
	settle(w);
	int rec = expect_recovered(w, "coder-2", from);
	int removed = sim_seen_at(w->history, "RemoveMember", NULL, from);
	int deleted = sim_seen_at(w->history, "DeleteFormerMember", "coder-2", from);
	if (removed < rec || deleted < removed ||
	    !sim_contains(kube_obj_str(json_array_get(w->history, (size_t)removed), "message"), "coder-2"))
		world_fail(w, "coder-2: recovered at %d, removed at %d, its pod deleted at %d: want recovered, then "
			   "scaled down (MemberRemoved), then its pod deleted", rec, removed, deleted);
	expect_members(w, "[0,1]");
	static const long two[] = {0, 1, -1};
	expect_ready_pods(w, two);
	expect_claim_gone(w, "data-coder-2");
	expect_claim_kept(w, "data-coder-0");
	expect_claim_kept(w, "data-coder-1");
	free(old);
}

/* ---- 6. claims and deletion ---- */

static bool claim_owned_by_cluster(const json_t *pvc)
{
	return sim_owned_by(pvc, CLUSTER_UID, false);
}

static void test_when_deleted(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Delete\"}}");
	for (int k = 0; k < 3; k++) {
		char claim[48];
		snprintf(claim, sizeof(claim), "data-coder-%d", k);
		const json_t *pvc = sim_find(w->pvcs, claim);
		assert_true(pvc && claim_owned_by_cluster(pvc));
		assert_false(sim_owned_by(pvc, CLUSTER_UID, true));
	}
	/* Someone else owns data-coder-0 too. */
	json_t *pvc0 = sim_find(w->pvcs, "data-coder-0");
	json_array_append_new(json_object_get(sim_meta(pvc0), "ownerReferences"),
			      json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "ConfigMap", "name",
					"keeper", "uid", OTHER_OWNER_UID));
	json_array_append_new(w->alive_owners, json_string(OTHER_OWNER_UID));
	bump(w, pvc0);

	int from = (int)json_array_size(w->history);
	spec_patch(w, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Retain\"}}");
	settle(w);
	assert_int_equal(sim_seen_count(w->history, "DisownClaim", from), 3);
	for (int k = 0; k < 3; k++) {
		char claim[48];
		snprintf(claim, sizeof(claim), "data-coder-%d", k);
		assert_false(claim_owned_by_cluster(sim_find(w->pvcs, claim)));
		expect_claim_kept(w, claim);
	}
	assert_true(sim_owned_by(sim_find(w->pvcs, "data-coder-0"), OTHER_OWNER_UID, false));

	from = (int)json_array_size(w->history);
	spec_patch(w, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Delete\"}}");
	settle(w);
	assert_int_equal(sim_seen_count(w->history, "OwnClaim", from), 3);
	assert_true(sim_owned_by(sim_find(w->pvcs, "data-coder-0"), OTHER_OWNER_UID, false));
	assert_true(claim_owned_by_cluster(sim_find(w->pvcs, "data-coder-0")));

	/* The cluster deleted: the garbage collector takes its pods, revisions and the claims only it owns. */
	json_decref(w->cluster);
	w->cluster = NULL;
	controllers_alone(w, 5);
	assert_int_equal(controlled_pods(w), 0);
	assert_int_equal(json_array_size(w->revisions), 0);
	expect_claim_gone(w, "data-coder-1");
	expect_claim_gone(w, "data-coder-2");
	expect_claim_kept(w, "data-coder-0");
	expect_decoys(w);

	/* whenDeleted Retain: every claim stays. */
	start_world(w, USUAL, NULL);
	json_decref(w->cluster);
	w->cluster = NULL;
	controllers_alone(w, 5);
	assert_int_equal(controlled_pods(w), 0);
	for (int k = 0; k < 3; k++) {
		char claim[48];
		snprintf(claim, sizeof(claim), "data-coder-%d", k);
		expect_claim_kept(w, claim);
	}
}

/* ---- 7. what is not the cluster's ---- */

static void test_foreign_pod_with_a_member_name(void **state)
{
	struct world *w = *state;
	world_init(w, USUAL, NULL);
	json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:s}]}, s:{s:s}}", "apiVersion", "v1",
				"kind", "Pod", "metadata", "name", "coder-1", "labels", "app", "coder", "spec",
				"nodeName", "node-a", "containers", "name", "debug", "image", "busybox", "status",
				"phase", "Running");
	stamp(w, pod, "foreign");
	set_condition(pod, "Ready", true, w->now_ms);
	json_array_append_new(w->pods, pod);
	char *uid = xstrdup(kube_obj_str(pod, "metadata.uid"));
	settle(w);
	expect_members(w, "[0,1,2]");
	const json_t *p = sim_find(w->pods, "coder-1");
	assert_true(p && sim_streq(kube_obj_str(p, "metadata.uid"), uid) && !sim_terminating(p));
	assert_int_equal(status_int(w, "replicas"), 2);
	assert_string_equal(status_condition(w, "ReplicaFailure"), "True");
	if (!sim_contains(kube_obj_str(condition(w->cluster, "ReplicaFailure"), "message"), "coder-1"))
		world_fail(w, "ReplicaFailure does not name coder-1");
	/* Its owner takes it away: the member gets its pod. */
	sim_remove(w->pods, sim_find(w->pods, "coder-1"));
	settle(w);
	static const long ids[] = {0, 1, 2, -1};
	expect_ready_pods(w, ids);
	assert_string_equal(status_condition(w, "ReplicaFailure"), "False");
	expect_status_counts(w, 3, 3, 3, 3);
	free(uid);
}

/* A claim made by hand (a restore) named name, with labels (JSON, or NULL for none). */
static json_t *claim_by_hand(struct world *w, const char *name, const char *labels)
{
	json_t *pvc = json_pack("{s:s, s:s, s:{s:s}, s:{s:[s], s:{s:{s:s}}}, s:{s:s}}", "apiVersion", "v1", "kind",
				"PersistentVolumeClaim", "metadata", "name", name, "spec", "accessModes",
				"ReadWriteOnce", "resources", "requests", "storage", "1Gi", "status", "phase", "Bound");
	if (labels)
		json_object_set_new(sim_meta(pvc), "labels", json_loads(labels, 0, NULL));
	stamp(w, pvc, "handmade");
	json_array_append_new(w->pvcs, pvc);
	trace(w, "    (claim %s made by hand)\n", name);
	return pvc;
}

/* The claim made by hand is there as it was made: same UID, not being deleted, owned by nothing. */
static void expect_by_hand_untouched(struct world *w, const char *name, const char *uid)
{
	const json_t *pvc = sim_find(w->pvcs, name);
	if (!pvc || sim_terminating(pvc) || !sim_streq(kube_obj_str(pvc, "metadata.uid"), uid) ||
	    json_array_size(json_object_get(sim_meta(pvc), "ownerReferences")))
		world_fail(w, "claim %s, made by hand, was touched", name);
	if (sim_seen_at(w->history, "PATCH_CLAIM", name, 0) >= 0)
		world_fail(w, "claim %s, made by hand, was patched", name);
}

/*
 * A claim named like a member's (data-coder-<n>) without the label
 * stateful-operator.io/cluster=coder was not made by the cluster: it is
 * never counted (next does not move past it, rebuilt or not), never patched
 * (whenDeleted Delete does not own it), never deleted (whenScaled Delete,
 * an identity released but not yet forgotten).
 */
static void test_claims_without_the_cluster_label(void **state)
{
	struct world *w = *state;
	world_init(w, USUAL,
		   "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Delete\", \"whenScaled\": \"Delete\"}}");
	char *uid7 = xstrdup(kube_obj_str(claim_by_hand(w, "data-coder-7", NULL), "metadata.uid"));
	settle(w);
	/* Never ours, but its name is taken: new identities go past it, so no creation can collide. */
	expect_members(w, "[8,9,10]");
	assert_int_equal(state_next(w), 11);
	expect_by_hand_untouched(w, "data-coder-7", uid7);
	scale_to(w, 4);
	settle(w);
	expect_members(w, "[8,9,10,11]");
	assert_int_equal(state_next(w), 12);
	/* The state and status lost: rebuilt from what the cluster made. */
	wipe_state(w);
	wipe_status(w);
	settle(w);
	assert_int_equal(state_next(w), 12);
	expect_members(w, "[8,9,10,11]");
	expect_by_hand_untouched(w, "data-coder-7", uid7);

	/* coder-11 scaled away; a claim of its name made by hand before the identity is forgotten. */
	scale_to(w, 3);
	run_until(w, asks_for_what, "ForgetMember", "coder-11 is forgotten");
	assert_null(sim_find(w->pvcs, "data-coder-11"));
	char *uid3 = xstrdup(kube_obj_str(claim_by_hand(w, "data-coder-11", "{\"app\": \"coder\"}"), "metadata.uid"));
	settle(w);
	expect_members(w, "[8,9,10]");
	expect_by_hand_untouched(w, "data-coder-11", uid3);
	expect_by_hand_untouched(w, "data-coder-7", uid7);
	assert_int_equal(state_next(w), 12);
	expect_decoys(w);
	free(uid3);
	free(uid7);
}

/* ---- 8. refusals ---- */

static void test_invalid_specs(void **state)
{
	struct world *w = *state;
	static const struct {
		const char *label;
		const char *spec;
	} cases[] = {
		{"matchExpressions the template's labels do not satisfy",
		 "{\"selector\": {\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\", \"values\": [\"db\"]}]},"
		 " \"template\": {\"metadata\": {\"labels\": {\"app\": \"coder\", \"enge.me/statefulcluster\": \"coder\","
		 " \"tier\": \"web\"}}}}"},
		{"a template label that contradicts matchLabels", "{\"template\": {\"metadata\": {\"labels\": {\"app\": \"other\"}}}}"},
		{"an empty selector", "{\"selector\": {\"matchLabels\": null}}"},
		{"no selector", "{\"selector\": null}"},
		{"a malformed selector", "{\"selector\": {\"matchExpressions\": [{\"key\": \"k\", \"operator\": \"Near\"}]}}"},
		{"no containers", "{\"template\": {\"spec\": {\"containers\": []}}}"},
		{"no template", "{\"template\": null}"},
	};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		world_init(w, USUAL, cases[i].spec);
		settle(w);
		if (step_of(&w->a) != STEP_REFUSE)
			world_fail(w, "%s: %s, want a refusal", cases[i].label, w->steps.seen);
		if (!sim_streq(w->a.event_type, "Warning") || !w->a.event_reason)
			world_fail(w, "%s: no Warning event", cases[i].label);
		if (controlled_pods(w) || json_array_size(w->revisions) || json_object_size(w->claim_uids) ||
		    sim_annotation(w->cluster, ANNOTATION_CLUSTER_STATE) || json_object_get(w->cluster, "status"))
			world_fail(w, "%s: something was created", cases[i].label);
		expect_decoys(w);
	}
	/* Fixed: it goes ahead. */
	world_init(w, USUAL, cases[0].spec);
	settle(w);
	assert_int_equal(step_of(&w->a), STEP_REFUSE);
	spec_patch(w, "{\"selector\": {\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\", \"values\": [\"web\", \"db\"]}]}}");
	settle(w);
	static const long ids[] = {0, 1, 2, -1};
	expect_ready_pods(w, ids);
	assert_string_equal(status_field(w, "selector"), "app=coder,enge.me/statefulcluster=coder,tier in (web,db)");
}

/* ---- 9. crash safety ---- */

struct scenario {
	const char *label;
	const char *spec;
	void (*script)(struct world *w);
};

static void script_nothing(struct world *w)
{
	(void)w;
}

static void script_fail_one(struct world *w)
{
	pod_fail(w, "coder-1", NULL, "exit code 1");
	settle(w);
	pod_fail(w, "coder-3", "Evicted", "The node was low on resource: memory.");
}

static void script_scale_down_up(struct world *w)
{
	pod_unready(w, "coder-2");
	scale_to(w, 2);
	settle(w);
	scale_to(w, 3);
}

static void script_roll(struct world *w)
{
	set_image(w, "codercom/code-server:4.0");
	settle(w);
	set_image(w, "codercom/code-server:4.1");
}

static void script_node_lost(struct world *w)
{
	w->now_ms += 100 * 1000;
	node_set(w, node_of(w, "coder-1"), false);
}

static void script_owners(struct world *w)
{
	spec_patch(w, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Retain\"}}");
	settle(w);
	spec_patch(w, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Delete\"}}");
}

static void script_wipe(struct world *w)
{
	scale_to(w, 2);
	settle(w);
	wipe_state(w);
	wipe_status(w);
	settle(w);
	scale_to(w, 4);
}

static void script_named(struct world *w)
{
	spec_patch(w, "{\"replicas\": 2, \"removeMembers\": [\"coder-1\"]}");
	settle(w);
	request_replace(w, "coder-0");
}

static const struct scenario scenarios[] = {
	{"start 3", NULL, script_nothing},
	{"replace failed and evicted, whenReplaced Delete",
	 "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"Delete\"}}", script_fail_one},
	{"scale 4 -> 2 -> 3, whenScaled Delete",
	 "{\"replicas\": 4, \"replacement\": {\"unhealthyAfterSeconds\": 36000},"
	 " \"persistentVolumeClaimRetentionPolicy\": {\"whenScaled\": \"Delete\"}}",
	 script_scale_down_up},
	{"two rolling updates, maxUnavailable 2, history 1",
	 "{\"replicas\": 4, \"revisionHistoryLimit\": 1, \"updateStrategy\": {\"rollingUpdate\": {\"maxUnavailable\": 2}}}",
	 script_roll},
	{"node lost", "{\"replacement\": {\"nodeLostAfterSeconds\": 60}}", script_node_lost},
	{"claim owners", "{\"persistentVolumeClaimRetentionPolicy\": {\"whenDeleted\": \"Delete\"}}", script_owners},
	{"state wiped", NULL, script_wipe},
	{"remove and replace named members, whenScaled and whenReplaced Delete",
	 "{\"persistentVolumeClaimRetentionPolicy\": {\"whenScaled\": \"Delete\", \"whenReplaced\": \"Delete\"}}",
	 script_named},
};

/* Plays scenario i: the world at the end and what was counted. */
static void play(void *world, size_t i, bool twice, struct sim_play *p)
{
	struct world *w = world;
	const struct scenario *sc = &scenarios[i];
	world_init(w, USUAL, sc->spec);
	w->double_apply = twice;
	settle(w);
	sc->script(w);
	settle(w);
	const json_t *objs[] = {w->cluster, w->pods, w->pvcs, w->revisions, w->counts, w->pod_names};
	char *end = sim_dump(objs, NITEMS(objs));
	p->label = sc->label;
	p->end = xasprintf("%s\nt=%lld", end, w->now_ms);
	p->conflicts = w->conflicts;
	p->steps = w->trace.text;
	free(end);
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
 * A crash right after CREATE_POD: the process starts again on a world
 * that has the pod (and on a cache that may not show it yet). Nothing is
 * made twice.
 */
static void test_crash_after_create(void **state)
{
	struct world *w = *state;
	world_init(w, USUAL, NULL);
	run_until(w, asks_for_what, "CREATE_POD", "a pod is created");
	apply(w, &w->a);
	settle(w);
	static const long ids[] = {0, 1, 2, -1};
	expect_ready_pods(w, ids);
	for (int k = 0; k < 3; k++) {
		char name[32];
		snprintf(name, sizeof(name), "coder-%d", k);
		assert_int_equal(json_integer_value(json_object_get(w->pod_names, name)), 1);
	}
	assert_int_equal(w->conflicts, 0);
}

/* ---- the state fixtures: SOP_STATE_FIXTURES_OUT=<dir> (tests/fixtures/state/README.md) ---- */

struct fixture_run {
	const char *out, *prefix, *comment;
};

/* A stop_fn that never stops: writes the world before each kind of step, the first time it comes. */
static bool fixture_step(const struct world *w, const void *arg)
{
	const struct fixture_run *r = arg;
	if (w->a.verb == ACTION_NOTHING)
		return false;
	char phase[128];
	snprintf(phase, sizeof(phase), "%s-%s", r->prefix, action_name(&w->a));
	json_t *objects = json_pack("{s:O, s:O, s:O, s:O, s:O*}", "statefulCluster", w->cluster, "pods", w->pods, "pvcs",
				    w->pvcs, "revisions", w->revisions, "nodes", w->nodes);
	state_fixture_write(r->out, "cluster", phase, r->comment, objects, w->now_ms, &w->a);
	json_decref(objects);
	return false;
}

static void test_write_state_fixtures(void **state)
{
	struct world *w = *state;
	start_world(w, USUAL, "{\"persistentVolumeClaimRetentionPolicy\": {\"whenReplaced\": \"Retain\"}}");
	pod_fail(w, "coder-1", NULL, "exit code 1");
	struct fixture_run r = {state_fixture_out(), "replace",
				"StatefulCluster coder, 3 members, coder-1 failed and is replaced (whenReplaced Retain): "
				"written by test_cluster_plan's simulation"};
	if (run(w, fixture_step, &r) != RUN_SETTLED)
		world_fail(w, "the replacement did not come to rest");
	set_image(w, "codercom/code-server:4.0");
	r = (struct fixture_run){state_fixture_out(), "rolling-update",
				 "StatefulCluster coder, 3 members, a new image rolled out (maxUnavailable 1): written "
				 "by test_cluster_plan's simulation"};
	if (run(w, fixture_step, &r) != RUN_SETTLED)
		world_fail(w, "the rolling update did not come to rest");
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)

int main(void)
{
	if (state_fixture_out()) {
		const struct CMUnitTest write[] = {TEST(test_write_state_fixtures)};
		return cmocka_run_group_tests(write, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		TEST(test_names_and_selector_string),
		TEST(test_three_members_in_parallel),
		TEST(test_seed_example_as_published),
		TEST(test_template_labels_and_annotations),
		TEST(test_replace_failed_retain),
		TEST(test_failed_pod_message_recorded_clean),
		TEST(test_replace_failed_delete),
		TEST(test_replace_evicted),
		TEST(test_node_lost),
		TEST(test_slow_start_is_not_killed),
		TEST(test_unhealthy_after_ready),
		TEST(test_user_deleted_pod_ending_failed_is_restarted),
		TEST(test_scale_down_retain_then_up),
		TEST(test_scale_down_delete_then_up),
		TEST(test_remove_named_retain),
		TEST(test_remove_named_delete),
		TEST(test_remove_named_keeps_replicas),
		TEST(test_remove_unknown_member_refused),
		TEST(test_replace_requested_retain),
		TEST(test_replace_requested_delete),
		TEST(test_replace_requested_max_unavailable),
		TEST(test_replace_request_refused),
		TEST(test_replace_request_of_a_failed_member),
		TEST(test_rolling_update),
		TEST(test_rolling_update_max_unavailable_2),
		TEST(test_rolling_update_max_unavailable_percent),
		TEST(test_rolling_update_lagging_cache),
		TEST(test_deleted_uids_count_as_going),
		TEST(test_partition),
		TEST(test_on_delete),
		TEST(test_claim_listed_twice),
		TEST(test_revision_history),
		TEST(test_state_wiped),
		TEST(test_state_lost_as_a_member_fails),
		TEST(test_state_replaced_by_an_older_copy),
		TEST(test_when_deleted),
		TEST(test_foreign_pod_with_a_member_name),
		TEST(test_claims_without_the_cluster_label),
		TEST(test_invalid_specs),
		TEST(test_every_step_twice),
		TEST(test_crash_after_create),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
