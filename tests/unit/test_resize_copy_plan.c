/*
 * The copy planner (resize_copy_plan.c), reached through resize_plan().
 *
 * The planner is pure: cluster objects in, one step out. These tests keep a
 * small cluster in memory and a simulator that plays the API server and the
 * controllers that answer each step: the garbage collector (orphaning),
 * the StatefulSet controller (pods, adoption, claims from the template),
 * the PV controller (binding, Released, reclaiming), the Job controller
 * and the PVC protection controller. The API server's answers happen at
 * once; the controllers only work while the planner waits (ACTION_WAIT),
 * so the planner sees the in-between states a real cluster shows.
 *
 * The simulator also knows what each volume holds (w->data: PV -> "data of
 * web-N"), which the cluster does not: a copy Job copies it, and a PV that
 * is reclaimed while it holds the only copy of something fails the test at
 * once. Every run checks, at every step:
 *   - the same inputs give the same step (the planner decides, it does not
 *     count), and a performed step is never asked for again unchanged;
 *   - SPEC invariant 1: a claim is deleted only when its PV is Retained or
 *     holds no only copy (strictly Retained in the successful cycles);
 *   - rolling mode: at most one replica is down at any time;
 *   - a full/delta copy Job runs only while its replica is down.
 * A test that tries many cases (every abort point) lists all that failed,
 * with the steps of the first; otherwise a failure prints the steps so far.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_state.h"
#include "sim.h"
#include "state_fixture.h"
#include "terminal_scan.h"
#include "util/duration.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define NS "ns"
#define NOW "2026-11-21T12:00:00Z"
#define NOW_MS 1795262400000LL
#define STS_UID "uid-web-1"
#define IMAGE "registry.example/rsync:1"
#define MAX_STEPS 400
#define TEN_MINUTES_MS (10L * 60 * 1000)

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- reading and changing objects ---- */

static void remove_named(json_t *list, const char *name)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		if (sim_streq(kube_obj_str(json_array_get(list, i), "metadata.name"), name)) {
			json_array_remove(list, i);
			return;
		}
	}
}

/* Sets obj's only condition. */
static void set_condition(json_t *obj, const char *type, bool is_true, const char *reason, const char *message)
{
	json_t *status = json_object_get(obj, "status");
	if (!json_is_object(status)) {
		status = json_object();
		json_object_set_new(obj, "status", status);
	}
	json_object_set_new(status, "conditions",
			    json_pack("[{s:s, s:s, s:s, s:s}]", "type", type, "status", is_true ? "True" : "False", "reason", reason,
				      "message", message));
}

/* ---- builders: the smallest objects that look like the cluster's ---- */

static json_t *sts_obj(int replicas, const char *size, const char *cls)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{}},"
			 " s:{s:i, s:s, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}},"
			 " s:[{s:{s:s}, s:{s:[s], s:s, s:{s:{s:s}}}}]}}",
			 "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata", "name", "web", "namespace", NS,
			 "uid", STS_UID, "annotations", "spec", "replicas", replicas, "serviceName", "web",
			 "selector", "matchLabels", "app", "web", "template", "metadata", "labels", "app", "web",
			 "spec", "containers", "name", "web", "image", "nginx", "volumeClaimTemplates", "metadata",
			 "name", "data", "spec", "accessModes", "ReadWriteOnce", "storageClassName", cls,
			 "resources", "requests", "storage", size);
}

static const json_t *data_template(const json_t *sts)
{
	return json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
}

/* A claim as the user or the StatefulSet controller makes it: Pending until something binds it. */
static json_t *pvc_obj(const char *name, const char *uid, const char *size, const char *cls)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:{s:[s], s:s, s:{s:{s:s}}}, s:{s:s}}",
			 "apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata", "name", name,
			 "namespace", NS, "uid", uid, "labels", "app", "web", "spec", "accessModes", "ReadWriteOnce",
			 "storageClassName", cls, "resources", "requests", "storage", size, "status", "phase",
			 "Pending");
}

static json_t *pv_obj(const char *name, const char *size, const char *cls, const char *policy)
{
	char uid[128];
	snprintf(uid, sizeof(uid), "uid-%s", name);
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}, s:[s], s:s, s:s}, s:{s:s}}", "apiVersion", "v1",
			 "kind", "PersistentVolume", "metadata", "name", name, "uid", uid, "spec", "capacity",
			 "storage", size, "accessModes", "ReadWriteOnce", "storageClassName", cls,
			 "persistentVolumeReclaimPolicy", policy, "status", "phase", "Available");
}

/* What the PV controller writes when it binds a claim to a volume. */
static void bind(json_t *pvc, json_t *pv)
{
	json_object_set_new(json_object_get(pvc, "spec"), "volumeName",
			    json_string(kube_obj_str(pv, "metadata.name")));
	json_object_set_new(pvc, "status",
			    json_pack("{s:s, s:{s:s}}", "phase", "Bound", "capacity", "storage",
				      kube_obj_str(pv, "spec.capacity.storage")));
	json_object_set_new(json_object_get(pv, "spec"), "claimRef",
			    json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "PersistentVolumeClaim",
				      "namespace", NS, "name", kube_obj_str(pvc, "metadata.name"), "uid",
				      kube_obj_str(pvc, "metadata.uid")));
	json_object_set_new(json_object_get(pv, "status"), "phase", json_string("Bound"));
}

static json_t *pod_obj(const char *name, const char *uid, bool ready, const char *owner_uid, const char *claim)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}, s:[]}, s:{s:[{s:s, s:{s:s}}]},"
			      " s:{s:s, s:[{s:s, s:s}]}}",
			      "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", NS, "uid", uid,
			      "labels", "app", "web", "ownerReferences", "spec", "volumes", "name", "data",
			      "persistentVolumeClaim", "claimName", claim, "status", "phase", "Running", "conditions",
			      "type", "Ready", "status", ready ? "True" : "False");
	if (owner_uid)
		json_array_append_new(json_object_get(json_object_get(p, "metadata"), "ownerReferences"),
				      json_pack("{s:s, s:s, s:s, s:s, s:b}", "apiVersion", "apps/v1", "kind",
						"StatefulSet", "name", "web", "uid", owner_uid, "controller", 1));
	return p;
}

static json_t *classes(void)
{
	return json_pack("[{s:{s:s, s:{s:s}}, s:b, s:s}, {s:{s:s}, s:b, s:s}]", "metadata", "name", "expandable",
			 "annotations", "storageclass.kubernetes.io/is-default-class", "true", "allowVolumeExpansion",
			 1, "reclaimPolicy", "Delete", "metadata", "name", "fixed", "allowVolumeExpansion", 0,
			 "reclaimPolicy", "Delete");
}

/* ---- the world ---- */

struct world {
	json_t *sts, *backup, *pvcs, *pods, *classes, *pvs, *jobs;
	json_t *data; /* PV name -> what it holds: the simulator's knowledge, not the cluster's */
	int replicas;
	int64_t clock;
	char now[32];
	int serial;
	long long fail_ordinal; /* the copy Job of this replica fails; -1: none fails */
	const char *fail_message; /* what its pod's termination message says; NULL: a verification failure */
	bool strict_retain;     /* every claim deleted sits on a Retained PV (successful cycles) */
	bool double_apply;      /* every step performed twice: a crash after the call, a stale cache */
	bool offline;           /* all replicas may be down at once */
	bool hold_ready;        /* pods the StatefulSet controller starts do not get Ready */
	struct action a; /* the step last planned */
	/* what was seen */
	struct sim_trace trace;
	int iterations;
	int max_down;
	int recreates, template_changes, last_new_template;
	int recreated_at; /* the step of the last re-create */
	int copies;
	int passes[3]; /* copy passes observed: precopy, full, delta */
	int conflicts;
	int empty_claims;
	json_t *log;     /* "Name object[ -> volumeName]" of every step performed */
	json_t *events;  /* "Type Reason: message" */
	json_t *stopped; /* pods the planner deleted, in order */
	json_t *deleted; /* "pvc/<name>" of every claim deleted */
	struct sim_steps steps; /* fingerprints: this step, replanned, the one before */
	json_t *state_seen;     /* see state_now() */
};

/* Adds to the steps so far, formatted like printf. */
#define trace(w, ...) sim_trace_add(&(w)->trace, __VA_ARGS__)
/* Fails the test, printing every step so far. */
#define world_fail(w, ...) sim_fail((w)->trace.text, __VA_ARGS__)

static void set_clock(struct world *w, int64_t t)
{
	w->clock = t;
	sim_rfc3339((long long)t * 1000, w->now, sizeof(w->now));
}

static char *next_name(struct world *w, const char *prefix)
{
	return xasprintf("%s-%d", prefix, ++w->serial);
}

/*
 * A StatefulSet web with replicas replicas, template data 1Gi on class
 * "fixed"; each claim data-web-N Bound to pv-old-N (reclaim policy policy)
 * holding "data of web-N"; each pod Ready and owned.
 */
static void world_release(struct world *w);

static void world_init(struct world *w, int replicas, const char *policy)
{
	world_release(w); /* a test may run several worlds, one after the other */
	w->replicas = replicas;
	w->sts = sts_obj(replicas, "1Gi", "fixed");
	w->pvcs = json_array();
	w->pods = json_array();
	w->pvs = json_array();
	w->jobs = json_array();
	w->classes = classes();
	w->data = json_object();
	w->log = json_array();
	w->events = json_array();
	w->stopped = json_array();
	w->deleted = json_array();
	w->fail_ordinal = -1;
	set_clock(w, rfc3339_seconds(NOW));
	for (int i = 0; i < replicas; i++) {
		char claim[64], uid[64], pv_name[64], pod_name[64], pod_uid[64], what[64];
		snprintf(claim, sizeof(claim), "data-web-%d", i);
		snprintf(uid, sizeof(uid), "pvc-uid-%d", i);
		snprintf(pv_name, sizeof(pv_name), "pv-old-%d", i);
		snprintf(pod_name, sizeof(pod_name), "web-%d", i);
		snprintf(pod_uid, sizeof(pod_uid), "pod-uid-%d", i);
		snprintf(what, sizeof(what), "data of web-%d", i);
		json_t *pvc = pvc_obj(claim, uid, "1Gi", "fixed");
		json_t *pv = pv_obj(pv_name, "1Gi", "fixed", policy);
		bind(pvc, pv);
		json_array_append_new(w->pvcs, pvc);
		json_array_append_new(w->pvs, pv);
		json_object_set_new(w->data, pv_name, json_string(what));
		json_array_append_new(w->pods, pod_obj(pod_name, pod_uid, true, STS_UID, claim));
	}
}

static void world_release(struct world *w)
{
	action_release(&w->a);
	json_decref(w->sts);
	json_decref(w->backup);
	json_decref(w->pvcs);
	json_decref(w->pods);
	json_decref(w->classes);
	json_decref(w->pvs);
	json_decref(w->jobs);
	json_decref(w->data);
	json_decref(w->log);
	json_decref(w->events);
	json_decref(w->stopped);
	json_decref(w->deleted);
	json_decref(w->state_seen);
	sim_steps_release(&w->steps);
	sim_trace_release(&w->trace);
	memset(w, 0, sizeof(*w));
}

/*
 * What a test owns, freed by the teardown even after a failure: its world
 * (first, so a test may take *state as its world) and what it collects over
 * several runs.
 */
struct fixture {
	struct world w;
	char *failures;    /* one line per failed case */
	char *first_trace; /* the steps of the first failed case */
};

static int fixture_setup(void **state)
{
	*state = xcalloc(1, sizeof(struct fixture));
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	world_release(&f->w);
	free(f->failures);
	free(f->first_trace);
	free(f);
	return 0;
}

/* Notes a failed case (what, new string: taken) and goes on with the next. */
static void note_failure(struct fixture *f, char *what)
{
	char *more = xasprintf("%s  %s\n", f->failures ? f->failures : "", what);
	free(f->failures);
	f->failures = more;
	if (!f->first_trace)
		f->first_trace = xstrdup(f->w.trace.text ? f->w.trace.text : "");
	free(what);
}

/* Fails with every case noted, if any. */
static void expect_no_failures(struct fixture *f, const char *title)
{
	if (!f->failures)
		return;
	fprintf(stderr, "---- steps of the first failure ----\n%s---- end ----\n%s:\n%s", f->first_trace, title,
		f->failures);
	fail_msg("%s (listed above)", title);
}

static void plan_into(const struct world *w, struct action *a)
{
	json_t *pods = sim_cached_pods(w->pods);
	struct resize_inputs in = {w->sts, w->backup, w->pvcs, pods, w->classes, w->pvs, w->jobs, IMAGE, NULL};
	resize_plan(&in, (long long)w->clock * 1000, a);
	json_decref(pods);
}

static void plan(struct world *w)
{
	action_release(&w->a);
	plan_into(w, &w->a);
}

/* The resize state where the planner reads it: the StatefulSet, or its backup while it is gone. New reference. */
static json_t *current_state(const struct world *w)
{
	const char *text = sim_annotation(w->sts ? w->sts : w->backup, ANNOTATION_RESIZE_STATE);
	return text ? json_loads(text, 0, NULL) : NULL;
}

/* The same, kept by the world until the next call or its release: borrowed. */
static const json_t *state_now(struct world *w)
{
	json_decref(w->state_seen);
	w->state_seen = current_state(w);
	return w->state_seen;
}

static const char *batch_step_of(const json_t *st)
{
	return json_string_value(json_object_get(json_object_get(st, "batch"), "step"));
}

/* ---- the data the volumes hold ---- */

static const char *data_of(const struct world *w, const char *pv)
{
	return pv ? json_string_value(json_object_get(w->data, pv)) : NULL;
}

/* True when PV pv holds something no other PV holds. */
static bool only_copy(const struct world *w, const char *pv)
{
	const char *mine = data_of(w, pv);
	if (!mine)
		return false;
	size_t i;
	json_t *o;
	json_array_foreach(w->pvs, i, o) {
		const char *name = kube_obj_str(o, "metadata.name");
		if (!sim_streq(name, pv) && sim_streq(data_of(w, name), mine))
			return false;
	}
	return true;
}

static void drop_pv(struct world *w, const char *why, const char *pv_name)
{
	if (only_copy(w, pv_name))
		world_fail(w, "%s %s, which held the only copy of \"%s\"", why, pv_name, data_of(w, pv_name));
	char *name = xstrdup(pv_name);
	trace(w, "      ~ %s %s\n", why, name);
	json_object_del(w->data, name);
	remove_named(w->pvs, name);
	free(name);
}

/* ---- the controllers (they work while the planner waits) ---- */

/* A pod in any phase mounts claim: here a copy Job's ended pod still holds its claims (sim_pvc_protection's do not). */
static bool claim_in_use(const struct world *w, const char *claim)
{
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		if (sim_mounts(pod, claim))
			return true;
	}
	return false;
}

/* The claim goes; its volume is Released (the PV controller reclaims it by its policy). */
static void remove_claim(struct world *w, const char *claim)
{
	char *name = xstrdup(claim);
	json_t *pvc = sim_find(w->pvcs, name);
	json_t *pv = sim_find(w->pvs, kube_obj_str(pvc, "spec.volumeName"));
	if (pv && sim_streq(kube_obj_str(pv, "spec.claimRef.name"), name))
		json_object_set_new(json_object_get(pv, "status"), "phase", json_string("Released"));
	remove_named(w->pvcs, name);
	json_array_append_new(w->deleted, json_sprintf("pvc/%s", name));
	free(name);
}

static void provision(struct world *w, json_t *pvc)
{
	char *pv_name = next_name(w, "pv-new");
	const char *cls = kube_obj_str(pvc, "spec.storageClassName");
	json_t *pv = pv_obj(pv_name, kube_obj_str(pvc, "spec.resources.requests.storage"), cls ? cls : "expandable",
			    "Delete");
	bind(pvc, pv);
	json_array_append_new(w->pvs, pv);
	trace(w, "      ~ provisioned %s for %s\n", pv_name, kube_obj_str(pvc, "metadata.name"));
	free(pv_name);
}

/* The copy script's pass ("precopy", "full", "delta"): its first argument after $0. */
static const char *job_pass(const json_t *job)
{
	const json_t *containers = json_object_get(
		json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec"), "containers");
	return json_string_value(json_array_get(json_object_get(json_array_get(containers, 0), "command"), 4));
}

static const json_t *job_volumes(const json_t *job)
{
	return json_object_get(json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec"),
			       "volumes");
}

/*
 * The Job controller: a running copy Job ends. It succeeds, copying what
 * each source claim <claim> holds to <claim>-copy (the names SPEC gives),
 * unless it copies a volume of replica w->fail_ordinal: then it fails the
 * way a failed verification does. A full or delta pass that finds its
 * replica running fails the test.
 */
static void finish_jobs(struct world *w)
{
	size_t i, k;
	json_t *job, *vol;
	json_array_foreach(w->jobs, i, job) {
		if (kube_obj_condition(job, "Complete", NULL) || kube_obj_condition(job, "Failed", NULL))
			continue;
		const char *name = kube_obj_str(job, "metadata.name");
		const char *pass = job_pass(job);
		bool failed = false;
		int pairs = 0;
		json_array_foreach(job_volumes(job), k, vol) {
			const char *source = kube_obj_str(vol, "persistentVolumeClaim.claimName");
			size_t n = source ? strlen(source) : 0;
			if (!source || (n > 5 && !strcmp(source + n - 5, "-copy")))
				continue;
			char target[128], pod_name[128];
			snprintf(target, sizeof(target), "%s-copy", source);
			snprintf(pod_name, sizeof(pod_name), "%s", source + strlen("data-")); /* data-web-N: web-N */
			if (!sim_streq(pass, "precopy") && sim_find(w->pods, pod_name))
				world_fail(w, "Job %s (pass %s) copied while %s was running", name, pass, pod_name);
			const json_t *src = sim_find(w->pvcs, source);
			const json_t *dst = sim_find(w->pvcs, target);
			if (!sim_streq(kube_obj_str(src, "status.phase"), "Bound") ||
			    !sim_streq(kube_obj_str(dst, "status.phase"), "Bound"))
				world_fail(w, "Job %s copies %s to %s, which are not both Bound", name, source, target);
			pairs++;
			char fail_pod[32];
			snprintf(fail_pod, sizeof(fail_pod), "web-%lld", w->fail_ordinal);
			failed |= sim_streq(pod_name, fail_pod);
			const char *what = data_of(w, kube_obj_str(src, "spec.volumeName"));
			if (!failed && what)
				json_object_set_new(w->data, kube_obj_str(dst, "spec.volumeName"), json_string(what));
		}
		if (!pairs)
			world_fail(w, "Job %s copies no claim to its -copy claim", name);
		if (failed)
			set_condition(job, "Failed", true, "BackoffLimitExceeded", "BackoffLimitExceeded");
		else
			set_condition(job, "Complete", true, "Completed", "");
		/* 90 s of copying: what the pass histogram must see. */
		json_object_set_new(json_object_get(job, "status"), "startTime", json_string("2026-11-28T10:00:00Z"));
		if (!failed)
			json_object_set_new(json_object_get(job, "status"), "completionTime",
					    json_string("2026-11-28T10:01:30Z"));

		size_t p;
		json_t *pod;
		json_array_foreach(w->pods, p, pod) {
			if (!sim_streq(sim_label(pod, "job-name"), name))
				continue;
			json_object_set_new(pod, "status",
					    json_pack("{s:s, s:[{s:s, s:{s:{s:i, s:s}}}]}", "phase",
						      failed ? "Failed" : "Succeeded", "containerStatuses", "name",
						      "copy", "state", "terminated", "exitCode", failed ? 1 : 0,
						      "message",
						      failed ? (w->fail_message ? w->fail_message
										: "SOP-RESULT fail verification found differences")
							     : "SOP-RESULT ok"));
		}
		trace(w, "      ~ Job %s %s\n", name, failed ? "failed" : "completed");
	}
}

/* The garbage collector: pods of deleted Jobs go (background propagation). */
static void collect_job_pods(struct world *w)
{
	for (size_t i = 0; i < json_array_size(w->pods);) {
		const char *job = sim_label(json_array_get(w->pods, i), "job-name");
		if (job && !sim_find(w->jobs, job)) {
			trace(w, "      ~ pod of Job %s collected\n", job);
			json_array_remove(w->pods, i);
		} else {
			i++;
		}
	}
}

/* The PVC protection controller: a deleted claim goes once no pod uses it. */
static void release_claims(struct world *w)
{
	for (size_t i = 0; i < json_array_size(w->pvcs);) {
		const json_t *pvc = json_array_get(w->pvcs, i);
		const char *name = kube_obj_str(pvc, "metadata.name");
		if (sim_terminating(pvc) && !claim_in_use(w, name)) {
			trace(w, "      ~ claim %s finally goes\n", name);
			remove_claim(w, name);
		} else {
			i++;
		}
	}
}

/* The PV controller: phases, reclaiming, binding pre-bound claims, provisioning. */
static void pv_controller(struct world *w)
{
	for (size_t i = 0; i < json_array_size(w->pvs);) {
		json_t *pv = json_array_get(w->pvs, i);
		const char *claim = kube_obj_str(pv, "spec.claimRef.name");
		const char *uid = kube_obj_str(pv, "spec.claimRef.uid");
		const json_t *pvc = sim_find(w->pvcs, claim);
		/* As kube-controller-manager's syncVolume: reserved (no uid) is Available, whoever has the name. */
		if (claim && uid && (!pvc || !sim_streq(kube_obj_str(pvc, "metadata.uid"), uid)))
			json_object_set_new(json_object_get(pv, "status"), "phase", json_string("Released"));
		else if (!claim || !uid)
			json_object_set_new(json_object_get(pv, "status"), "phase", json_string("Available"));
		if (sim_streq(kube_obj_str(pv, "status.phase"), "Released") &&
		    sim_streq(kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy"), "Delete")) {
			drop_pv(w, "the PV controller reclaimed", kube_obj_str(pv, "metadata.name"));
			continue;
		}
		i++;
	}
	size_t i;
	json_t *pvc;
	json_array_foreach(w->pvcs, i, pvc) {
		if (!sim_streq(kube_obj_str(pvc, "status.phase"), "Pending") || sim_terminating(pvc))
			continue;
		const char *vol = kube_obj_str(pvc, "spec.volumeName");
		if (!vol) {
			provision(w, pvc);
			continue;
		}
		json_t *pv = sim_find(w->pvs, vol);
		const char *ref_uid = kube_obj_str(pv, "spec.claimRef.uid");
		/* A pre-bound claim binds only to a volume reserved for it, big enough, of its class. */
		if (pv && sim_streq(kube_obj_str(pv, "spec.claimRef.name"), kube_obj_str(pvc, "metadata.name")) &&
		    (!ref_uid || sim_streq(ref_uid, kube_obj_str(pvc, "metadata.uid"))) &&
		    sim_streq(kube_obj_str(pv, "spec.storageClassName"), kube_obj_str(pvc, "spec.storageClassName")) &&
		    sim_streq(kube_obj_str(pv, "spec.capacity.storage"), kube_obj_str(pvc, "spec.resources.requests.storage"))) {
			trace(w, "      ~ %s bound to %s\n", kube_obj_str(pvc, "metadata.name"), vol);
			bind(pvc, pv); /* vol is freed here */
		}
	}
}

/* The StatefulSet controller: missing claims from the template, missing pods, adoption, readiness. */
static void statefulset_controller(struct world *w)
{
	if (!w->sts || sim_terminating(w->sts))
		return;
	const char *uid = kube_obj_str(w->sts, "metadata.uid");
	long long replicas = json_integer_value(json_object_get(json_object_get(w->sts, "spec"), "replicas"));
	for (long long ord = 0; ord < replicas; ord++) {
		char pod_name[64], claim[64];
		snprintf(pod_name, sizeof(pod_name), "web-%lld", ord);
		snprintf(claim, sizeof(claim), "data-web-%lld", ord);
		json_t *pod = sim_find(w->pods, pod_name);
		json_t *pvc = sim_find(w->pvcs, claim);
		if (!pod) {
			if (!pvc) {
				/* What a StatefulSet does for a missing claim: a new, empty one. */
				char *pvc_uid = next_name(w, "pvc-uid-empty");
				pvc = pvc_obj(claim, pvc_uid, kube_obj_str(data_template(w->sts), "spec.resources.requests.storage"),
					      kube_obj_str(data_template(w->sts), "spec.storageClassName"));
				json_array_append_new(w->pvcs, pvc);
				provision(w, pvc);
				w->empty_claims++;
				trace(w, "      !! the StatefulSet controller created an empty claim %s\n", claim);
				free(pvc_uid);
			}
			char *pod_uid = next_name(w, "pod-uid");
			pod = pod_obj(pod_name, pod_uid, sim_streq(kube_obj_str(pvc, "status.phase"), "Bound") && !w->hold_ready,
				      uid, claim);
			json_array_append_new(w->pods, pod);
			trace(w, "      ~ pod %s created\n", pod_name);
			free(pod_uid);
			continue;
		}
		if (!json_array_size(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"))) {
			json_array_append_new(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"),
					      json_pack("{s:s, s:s, s:s, s:s, s:b}", "apiVersion", "apps/v1", "kind",
							"StatefulSet", "name", "web", "uid", uid, "controller", 1));
			trace(w, "      ~ pod %s adopted\n", pod_name);
		}
		if (sim_streq(kube_obj_str(pvc, "status.phase"), "Bound") && !w->hold_ready)
			set_condition(pod, "Ready", true, "", "");
	}
}

static void tick(struct world *w)
{
	finish_jobs(w);
	collect_job_pods(w);
	release_claims(w);
	pv_controller(w);
	statefulset_controller(w);
	pv_controller(w);
}

/* The controllers go on after the planner is done: what they do not clear by then is left for good. */
static void settle(struct world *w)
{
	for (int i = 0; i < 3; i++)
		tick(w);
}

/* ---- the API server: performing a step ---- */

/* SPEC invariant 1, checked at the moment the planner deletes a claim. */
static void check_claim_deletion(struct world *w, const json_t *pvc)
{
	const char *claim = kube_obj_str(pvc, "metadata.name");
	const char *vol = kube_obj_str(pvc, "spec.volumeName");
	const char *policy = kube_obj_str(sim_find(w->pvs, vol), "spec.persistentVolumeReclaimPolicy");
	if (w->strict_retain && !sim_streq(policy, "Retain"))
		world_fail(w, "invariant 1: claim %s deleted while its PV %s has reclaim policy %s", claim,
			   sim_or_dash(vol), sim_or_dash(policy));
	if (!sim_streq(policy, "Retain") && only_copy(w, vol))
		world_fail(w, "invariant 1: claim %s deleted while its PV %s (policy %s) holds the only copy of \"%s\"",
			   claim, vol, sim_or_dash(policy), data_of(w, vol));
}

static void write_state(struct world *w, const struct action *a)
{
	json_t *target = w->sts ? w->sts : w->backup;
	if (!target)
		world_fail(w, "%s with neither StatefulSet nor backup", action_name(a));
	char *text = resize_state_text(a->state); /* as the controller writes it */
	sim_annotate(target, ANNOTATION_RESIZE_STATE, text);
	sim_annotate(target, ANNOTATION_RESIZE_STATUS, a->status);
	free(text);
}

static void save(struct world *w, const struct action *a)
{
	if (!w->sts)
		world_fail(w, "Save without a StatefulSet");
	if (w->backup) {
		w->conflicts++;
		trace(w, "      409 the backup exists\n");
		return;
	}
	json_t *saved = resize_saved_copy(w->sts);
	char *st = resize_state_text(a->state);
	sim_annotate(saved, ANNOTATION_RESIZE_STATE, st);
	char *text = json_dumps(saved, JSON_COMPACT);
	w->backup = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
			      "ConfigMap", "metadata", "name", "web" BACKUP_SUFFIX, "namespace", NS, "uid", "uid-backup",
			      "labels", LABEL_SAVED_STATEFULSET, "web", "annotations", ANNOTATION_RESIZE_STATE, st,
			      "data", BACKUP_KEY, text);
	free(text);
	free(st);
	json_decref(saved);
}

static void orphan_delete(struct world *w, const struct action *a)
{
	if (!sim_precondition_met(w->sts, a->uid, &w->trace, &w->conflicts))
		return;
	json_decref(w->sts);
	w->sts = NULL;
	/* The garbage collector orphans the pods: they keep running, owned by nobody. */
	size_t i;
	json_t *pod;
	json_array_foreach(w->pods, i, pod) {
		if (!sim_label(pod, "job-name"))
			json_object_set_new(json_object_get(pod, "metadata"), "ownerReferences", json_array());
	}
}

static void recreate(struct world *w, const struct action *a)
{
	if (w->sts) {
		w->conflicts++;
		trace(w, "      409 the StatefulSet exists\n");
		return;
	}
	if (!w->backup)
		world_fail(w, "Recreate without a backup");
	json_t *saved = json_loads(json_string_value(json_object_get(json_object_get(w->backup, "data"), BACKUP_KEY)),
				   0, NULL);
	if (!saved)
		world_fail(w, "the backup holds no StatefulSet");
	/* The body carries the state, and an abort asked on the backup (it stays asked). */
	json_t *sts = json_deep_copy(a->body);
	int new_template = !json_equal(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"),
				       json_object_get(json_object_get(saved, "spec"), "volumeClaimTemplates"));
	json_decref(saved);
	char *text = resize_state_text(a->state); /* as the controller writes it */
	bool carried = sim_streq(sim_annotation(sts, ANNOTATION_RESIZE_STATE), text);
	free(text);
	if (!carried)
		world_fail(w, "Recreate without its state");
	char *uid = next_name(w, "uid-web-new");
	json_object_set_new(json_object_get(sts, "metadata"), "uid", json_string(uid));
	free(uid);
	w->sts = sts;
	w->recreates++;
	w->recreated_at = w->iterations;
	w->template_changes += new_template;
	w->last_new_template = new_template;
}

static json_t *list_of(struct world *w, const struct kube_resource *r)
{
	return r == &KUBE_PVCS ? w->pvcs : r == &KUBE_PODS ? w->pods : r == &KUBE_JOBS ? w->jobs
			     : r == &KUBE_PVS  ? w->pvs
					       : NULL;
}

static void create(struct world *w, const struct action *a)
{
	json_t *list = list_of(w, a->resource);
	const char *name = kube_obj_str(a->body, "metadata.name");
	if (!list || (a->resource != &KUBE_PVCS && a->resource != &KUBE_JOBS))
		world_fail(w, "%s: unexpected resource", action_name(a));
	if (!sim_streq(name, a->name) || !sim_streq(kube_obj_str(a->body, "metadata.namespace"), NS))
		world_fail(w, "%s: body names %s/%s, the step %s", action_name(a),
			   sim_or_dash(kube_obj_str(a->body, "metadata.namespace")), name, a->name);
	if (sim_find(list, name)) {
		w->conflicts++;
		trace(w, "      409 %s exists\n", name);
		return;
	}
	json_t *obj = json_deep_copy(a->body);
	char *uid = next_name(w, a->resource == &KUBE_PVCS ? "pvc-uid" : "job-uid");
	json_object_set_new(json_object_get(obj, "metadata"), "uid", json_string(uid));
	free(uid);
	json_array_append_new(list, obj);
	if (a->resource == &KUBE_PVCS) {
		json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending"));
		/* A fresh claim is provisioned at once; a pre-bound one waits for the PV controller. */
		if (!kube_obj_str(obj, "spec.volumeName"))
			provision(w, obj);
		return;
	}
	/* A Job starts one pod that mounts its claims; it runs until the cluster works (tick). */
	json_object_set_new(obj, "status", json_object());
	json_t *tmpl = json_object_get(json_object_get(obj, "spec"), "template");
	json_t *labels = json_deep_copy(json_object_get(json_object_get(tmpl, "metadata"), "labels"));
	if (!json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	json_object_set_new(labels, "job-name", json_string(name));
	char *pod_name = xasprintf("%s-x1", name);
	json_array_append_new(w->pods, json_pack("{s:{s:s, s:s, s:s, s:o}, s:O, s:{s:s}}", "metadata", "name", pod_name,
						 "namespace", NS, "uid", pod_name, "labels", labels, "spec",
						 json_object_get(tmpl, "spec"), "status", "phase", "Running"));
	free(pod_name);
}

static void delete(struct world *w, const struct action *a)
{
	json_t *list = list_of(w, a->resource);
	if (!list)
		world_fail(w, "%s: unexpected resource", action_name(a));
	json_t *obj = sim_find(list, a->name);
	if (!sim_precondition_met(obj, a->uid[0] ? a->uid : NULL, &w->trace, &w->conflicts))
		return;
	if (a->resource == &KUBE_PVCS) {
		check_claim_deletion(w, obj);
		if (sim_terminating(obj))
			return;
		if (claim_in_use(w, a->name)) {
			json_object_set_new(json_object_get(obj, "metadata"), "deletionTimestamp", json_string(w->now));
			trace(w, "      in use: kept until its pods go\n");
		} else {
			remove_claim(w, a->name);
		}
	} else if (a->resource == &KUBE_PVS) {
		drop_pv(w, "deleted", a->name);
	} else {
		if (a->resource == &KUBE_PODS)
			json_array_append_new(w->stopped, json_string(a->name));
		remove_named(list, a->name);
	}
}

static void patch(struct world *w, const struct action *a)
{
	if (a->resource == &KUBE_PVCS && sim_streq(action_name(a), "PatchClaimMetadata")) {
		/* The desired templates' labels and annotations (resize_desired.c). */
		json_t *pvc = sim_find(w->pvcs, a->name);
		if (sim_precondition_met(pvc, kube_obj_str(a->body, "metadata.uid"), &w->trace, &w->conflicts))
			sim_merge_patch(pvc, a->body);
		return;
	}
	if (a->resource != &KUBE_PVS || a->patch_type != KUBE_PATCH_MERGE)
		world_fail(w, "%s: only merge patches of PVs are expected", action_name(a));
	json_t *pv = sim_find(w->pvs, a->name);
	if (!pv) {
		trace(w, "      404\n");
		return;
	}
	sim_merge_patch(pv, a->body);
}

/* The object a step names, as the log shows it: none for the steps on the StatefulSet or its backup. */
static const char *object_of(const struct action *a)
{
	return a->resource == &KUBE_STATEFULSETS || a->resource == &KUBE_CONFIGMAPS ? "" : a->name;
}

static void apply(struct world *w, const struct action *a)
{
	const char *step = action_name(a);
	if (a->verb == ACTION_WAIT) {
		tick(w);
	} else if (sim_streq(step, "SetState")) {
		write_state(w, a);
	} else if (sim_streq(step, "Save")) {
		save(w, a);
	} else if (sim_streq(step, "OrphanDelete")) {
		orphan_delete(w, a);
	} else if (sim_streq(step, "Recreate")) {
		recreate(w, a);
	} else if (sim_streq(step, "DeleteBackup")) {
		if (!a->uid[0])
			world_fail(w, "DeleteBackup without a UID precondition: a repeat could take a newer backup");
		if (!sim_precondition_met(w->backup, a->uid, &w->trace, &w->conflicts))
			return;
		json_decref(w->backup);
		w->backup = NULL;
	} else if (sim_streq(step, "Finish")) {
		if (!w->sts)
			world_fail(w, "Finish without a StatefulSet");
		sim_annotate(w->sts, ANNOTATION_RESIZE_STATE, NULL);
		sim_annotate(w->sts, ANNOTATION_RESIZE_STATUS, NULL);
	} else if (a->verb == ACTION_CREATE) {
		create(w, a);
	} else if (a->verb == ACTION_DELETE) {
		delete(w, a);
	} else if (a->verb == ACTION_PATCH) {
		patch(w, a);
	} else {
		world_fail(w, "step %s is not one of the copy cycle's", action_name(a));
	}
}

/* What the step adds to metric family (0: nothing). */
static long long counted(const struct action *a, const char *family)
{
	for (int i = 0; i < ACTION_MAX_COUNTS; i++)
		if (sim_streq(a->counts[i].family, family))
			return a->counts[i].by;
	return 0;
}

/* ---- running the planner against the world ---- */

/* One line per step, enough to compare two steps. New string. */
static char *fingerprint(const struct action *a)
{
	char *body = a->body ? json_dumps(a->body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *state = a->state ? json_dumps(a->state, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char *f = xasprintf("%s|%s|%s|%d|%s|%s|%ld|%s:%lld|%s:%lld|%s|%s|%s|%s|%s", action_verb_name(a->verb),
			    action_name(a), a->name, a->patch_type, a->uid, a->propagation ? a->propagation : "",
			    a->requeue_ms, sim_or_dash(a->counts[0].family), a->counts[0].by,
			    sim_or_dash(a->counts[1].family), a->counts[1].by,
			    a->event_reason ? a->event_reason : "", a->event_message ? a->event_message : "",
			    a->status ? a->status : "", body ? body : "", state ? state : "");
	free(body);
	free(state);
	return f;
}

static int pods_down(const struct world *w)
{
	int down = 0;
	for (int i = 0; i < w->replicas; i++) {
		char name[32];
		snprintf(name, sizeof(name), "web-%d", i);
		const json_t *pod = sim_find(w->pods, name);
		if (!pod || !kube_obj_condition(pod, "Ready", NULL))
			down++;
	}
	return down;
}

static void trace_step(struct world *w)
{
	const struct action *a = &w->a;
	json_t *st = a->state ? json_incref(a->state) : NULL;
	const char *vol = a->body ? kube_obj_str(a->body, "spec.volumeName") : NULL;
	trace(w, "%3d %-8s %-22s %-18s %s%s%s%s%s\n", w->iterations, action_verb_name(a->verb), action_name(a),
	      object_of(a), st ? json_string_value(json_object_get(st, "phase")) : "",
	      st && batch_step_of(st) ? "/" : "", st && batch_step_of(st) ? batch_step_of(st) : "",
	      vol ? " -> " : "", vol ? vol : "");
	json_decref(st);
}

typedef bool (*stop_fn)(const struct world *w, const void *arg);

/*
 * Plans and performs steps until the resize ends (FINISH, performed), rests
 * (NOTHING), or stop says so (checked before each step is performed; the
 * step is left in w->a). Returns true when stopped by stop.
 */
static bool run(struct world *w, stop_fn stop, const void *arg)
{
	sim_steps_restart(&w->steps);
	for (int i = 0; i < MAX_STEPS; i++) {
		plan(w);
		/* The same inputs give the same step. */
		struct action again;
		plan_into(w, &again);
		sim_steps_note(&w->steps, &w->trace, fingerprint(&w->a), fingerprint(&again));
		action_release(&again);
		/* A step performed changes the world: asking for it again unchanged means no progress. */
		if (w->a.verb != ACTION_WAIT && sim_steps_repeated(&w->steps))
			world_fail(w, "step %s %s asked for again after it was performed", action_name(&w->a),
				   object_of(&w->a));
		if (stop && stop(w, arg))
			return true;
		w->iterations++;
		trace_step(w);
		if (w->a.event_reason)
			json_array_append_new(w->events, json_sprintf("%s %s: %s", w->a.event_type, w->a.event_reason,
								      w->a.event_message));
		if (w->a.verb == ACTION_NOTHING)
			return false;
		const char *vol = w->a.body ? kube_obj_str(w->a.body, "spec.volumeName") : NULL;
		json_array_append_new(w->log, json_sprintf("%s %s%s%s", action_name(&w->a), object_of(&w->a),
							   vol ? " -> " : "", vol ? vol : ""));
		w->copies += (int)counted(&w->a, "stateful_operator_copies_verified_total");
		if (w->a.observed.family) {
			const char *pass = w->a.observed.label;
			int k = sim_streq(pass, "precopy") ? 0 : sim_streq(pass, "full") ? 1 : sim_streq(pass, "delta") ? 2 : -1;
			if (k < 0 || w->a.observed.v != 90 ||
			    !sim_streq(w->a.observed.family, "stateful_operator_copy_pass_duration_seconds"))
				world_fail(w, "observed %s{pass=%s} %g, want a copy pass of 90 s", w->a.observed.family,
					   sim_or_dash(pass), w->a.observed.v);
			else
				w->passes[k]++;
		}
		apply(w, &w->a);
		if (w->double_apply && w->a.verb != ACTION_WAIT)
			apply(w, &w->a);
		int down = pods_down(w);
		if (down > w->max_down)
			w->max_down = down;
		if (!w->offline && down > 1)
			world_fail(w, "rolling mode: %d replicas down at once", down);
		if (sim_streq(action_name(&w->a), "Finish"))
			return false;
	}
	world_fail(w, "no end after %d steps", MAX_STEPS);
	return false;
}

static bool logged(const struct world *w, const char *entry)
{
	size_t i;
	json_t *e;
	json_array_foreach(w->log, i, e) {
		if (sim_streq(json_string_value(e), entry))
			return true;
	}
	return false;
}

/* The index of entry in the log at or after from, or -1. */
static int log_index(const struct world *w, const char *entry, int from)
{
	for (size_t i = (size_t)from; i < json_array_size(w->log); i++)
		if (sim_streq(json_string_value(json_array_get(w->log, i)), entry))
			return (int)i;
	return -1;
}

static bool event_seen(const struct world *w, const char *prefix, const char *needle)
{
	size_t i;
	json_t *e;
	json_array_foreach(w->events, i, e) {
		const char *s = json_string_value(e);
		if (!strncmp(s, prefix, strlen(prefix)) && (!needle || strstr(s, needle)))
			return true;
	}
	return false;
}

/*
 * What every run must leave behind, however it ended: each claim
 * data-web-N Bound, holding "data of web-N", with the size and class
 * given; no copy claim, Job, Job pod or backup; every PV in use and with
 * its own reclaim policy; every pod Ready and owned by the StatefulSet.
 */
static void expect_settled(struct world *w, const char *size, const char *cls)
{
	settle(w);
	if (!w->sts)
		world_fail(w, "no StatefulSet at the end");
	if (w->backup)
		world_fail(w, "the backup ConfigMap is left");
	if (json_array_size(w->jobs))
		world_fail(w, "a Job is left: %s", kube_obj_str(json_array_get(w->jobs, 0), "metadata.name"));
	if (w->empty_claims)
		world_fail(w, "the StatefulSet controller had to create %d empty claim(s)", w->empty_claims);
	const char *uid = kube_obj_str(w->sts, "metadata.uid");
	size_t i;
	json_t *o;
	json_array_foreach(w->pvcs, i, o) {
		const char *name = kube_obj_str(o, "metadata.name");
		if (strlen(name) > 5 && !strcmp(name + strlen(name) - 5, "-copy"))
			world_fail(w, "copy claim %s is left", name);
	}
	json_array_foreach(w->pods, i, o) {
		if (sim_label(o, "job-name"))
			world_fail(w, "pod %s of a copy Job is left", sim_or_dash(kube_obj_str(o, "metadata.name")));
		if (!sim_owned_by(o, uid, false) || !kube_obj_condition(o, "Ready", NULL))
			world_fail(w, "pod %s is not Ready and owned by the StatefulSet", sim_or_dash(kube_obj_str(o, "metadata.name")));
	}
	for (int n = 0; n < w->replicas; n++) {
		char claim[32], what[32];
		snprintf(claim, sizeof(claim), "data-web-%d", n);
		snprintf(what, sizeof(what), "data of web-%d", n);
		const json_t *pvc = sim_find(w->pvcs, claim);
		const char *vol = kube_obj_str(pvc, "spec.volumeName");
		const json_t *pv = sim_find(w->pvs, vol);
		if (!pvc || !sim_streq(kube_obj_str(pvc, "status.phase"), "Bound") || !pv)
			world_fail(w, "%s is not Bound to an existing volume", claim);
		if (!sim_streq(data_of(w, vol), what))
			world_fail(w, "%s is on %s, which holds \"%s\", not \"%s\"", claim, vol,
				   sim_or_dash(data_of(w, vol)), what);
		if (!sim_streq(kube_obj_str(pv, "spec.capacity.storage"), size) ||
		    !sim_streq(kube_obj_str(pvc, "spec.resources.requests.storage"), size) ||
		    !sim_streq(kube_obj_str(pv, "spec.storageClassName"), cls))
			world_fail(w, "%s: %s of class %s on %s (%s, class %s); want %s of class %s", claim,
				   sim_or_dash(kube_obj_str(pvc, "spec.resources.requests.storage")),
				   sim_or_dash(kube_obj_str(pvc, "spec.storageClassName")), vol, sim_or_dash(kube_obj_str(pv, "spec.capacity.storage")),
				   sim_or_dash(kube_obj_str(pv, "spec.storageClassName")), size, cls);
	}
	json_array_foreach(w->pvs, i, o) {
		const char *name = kube_obj_str(o, "metadata.name");
		if (!sim_streq(kube_obj_str(o, "status.phase"), "Bound"))
			world_fail(w, "PV %s is left %s (claimRef %s)", name, sim_or_dash(kube_obj_str(o, "status.phase")),
				   sim_or_dash(kube_obj_str(o, "spec.claimRef.name")));
		if (sim_annotation(o, ANNOTATION_RECLAIM_POLICY) ||
		    !sim_streq(kube_obj_str(o, "spec.persistentVolumeReclaimPolicy"), "Delete"))
			world_fail(w, "PV %s keeps policy %s (annotation %s)", name,
				   sim_or_dash(kube_obj_str(o, "spec.persistentVolumeReclaimPolicy")),
				   sim_or_dash(sim_annotation(o, ANNOTATION_RECLAIM_POLICY)));
	}
	if (json_array_size(w->pvs) != (size_t)w->replicas)
		world_fail(w, "%zu PVs for %d claims", json_array_size(w->pvs), w->replicas);
}

static const char *template_size(const struct world *w)
{
	return kube_obj_str(data_template(w->sts), "spec.resources.requests.storage");
}

static const char *template_class(const struct world *w)
{
	return kube_obj_str(data_template(w->sts), "spec.storageClassName");
}

/* ---- 1. starting ---- */

struct start_case {
	const char *label;
	const char *template_size, *template_class;
	const char *annotations[6][2]; /* key, value */
	/* want: */
	const char *strategy;
	const char *target;
	const char *cls;
	bool offline, precopy;
	long long timeout, keep;
	const char *image;
	const char *ordinals; /* JSON */
	bool no_claim_2;      /* data-web-2 does not exist */
};

static const struct start_case starts[] = {
	{"grow on a class that cannot expand", "1Gi", "fixed", {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}},
	 "copy", "2Gi", "fixed", false, false, 21600, 0, IMAGE, "[2,1,0]", false},
	{"offline", "1Gi", "fixed", {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_COPY_MODE, "offline"}},
	 "copy", "2Gi", "fixed", true, false, 21600, 0, IMAGE, "[2,1,0]", false},
	{"class change, same size", "1Gi", "fixed", {{CLASS_ANNOTATION_PREFIX "data", "expandable"}}, "copy", "1Gi",
	 "expandable", false, false, 21600, 0, IMAGE, "[2,1,0]", false},
	{"strategy copy on an expandable class", "1Gi", "expandable",
	 {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_STRATEGY, "copy"}}, "copy", "2Gi", "expandable",
	 false, false, 21600, 0, IMAGE, "[2,1,0]", false},
	{"shrink by copy", "2Gi", "expandable",
	 {{RESIZE_ANNOTATION_PREFIX "data", "1Gi"}, {ANNOTATION_STRATEGY, "copy"}, {ANNOTATION_ALLOW_SHRINK, "true"}},
	 "copy", "1Gi", "expandable", false, false, 21600, 0, IMAGE, "[2,1,0]", false},
	{"the copy settings", "1Gi", "fixed",
	 {{RESIZE_ANNOTATION_PREFIX "data", "3Gi"},
	  {ANNOTATION_PRECOPY, "true"},
	  {ANNOTATION_COPY_TIMEOUT, "30m"},
	  {ANNOTATION_KEEP_OLD_VOLUMES, "1h"},
	  {ANNOTATION_COPY_IMAGE, "mirror.example/rsync:2"}},
	 "copy", "3Gi", "fixed", false, true, 1800, 3600, "mirror.example/rsync:2", "[2,1,0]", false},
	{"a replica without a claim is not copied", "1Gi", "fixed", {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}}, "copy",
	 "2Gi", "fixed", false, false, 21600, 0, IMAGE, "[1,0]", true},
	/* The contrast: growing on a class that can expand is no copy. */
	{"grow on an expandable class (auto)", "1Gi", "expandable", {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}},
	 "expand", "2Gi", NULL, false, false, 0, 0, NULL, NULL, false},
};

static void test_start(void **state)
{
	struct world *w = *state;
	for (size_t i = 0; i < NITEMS(starts); i++) {
		const struct start_case *c = &starts[i];
		world_init(w, 3, "Delete");
		json_decref(w->sts);
		w->sts = sts_obj(3, c->template_size, c->template_class);
		for (size_t k = 0; k < NITEMS(c->annotations) && c->annotations[k][0]; k++)
			sim_annotate(w->sts, c->annotations[k][0], c->annotations[k][1]);
		if (c->no_claim_2)
			remove_named(w->pvcs, "data-web-2");
		plan(w);
		const json_t *st = w->a.state;
		if (!sim_streq(action_name(&w->a), "SetState") || !st)
			fail_msg("%s: step %s (%s: %s)", c->label, action_name(&w->a),
				 w->a.event_reason ? w->a.event_reason : "-", w->a.event_message ? w->a.event_message : "-");
		assert_string_equal(json_string_value(json_object_get(st, "strategy")), c->strategy);
		assert_string_equal(kube_obj_str(st, "targets.data"), c->target);
		assert_int_equal(json_object_size(json_object_get(st, "targets")), 1);
		assert_string_equal(kube_obj_str(st, "statefulSetUID"), STS_UID);
		assert_string_equal(kube_obj_str(st, "started"), NOW);
		assert_string_equal(w->a.event_type, "Normal");
		assert_string_equal(w->a.event_reason, "ResizeStarted");
		if (!strcmp(c->strategy, "expand")) {
			assert_string_equal(kube_obj_str(st, "phase"), "Expanding");
			world_release(w);
			continue;
		}
		assert_string_equal(kube_obj_str(st, "phase"), "Copying");
		assert_string_equal(kube_obj_str(st, "classes.data"), c->cls);
		assert_int_equal(json_object_size(json_object_get(st, "classes")), 1);
		assert_string_equal(kube_obj_str(st, "mode"), c->offline ? "offline" : "rolling");
		assert_int_equal(json_is_true(json_object_get(st, "offline")), c->offline);
		assert_int_equal(json_is_true(json_object_get(st, "precopy")), c->precopy);
		assert_int_equal(json_integer_value(json_object_get(st, "timeoutSeconds")), c->timeout);
		assert_int_equal(json_integer_value(json_object_get(st, "keepOldSeconds")), c->keep);
		assert_string_equal(kube_obj_str(st, "image"), c->image);
		json_t *want = json_loads(c->ordinals, 0, NULL);
		if (!json_equal(want, json_object_get(st, "ordinals")))
			fail_msg("%s: ordinals are not %s", c->label, c->ordinals);
		json_decref(want);
		assert_null(json_object_get(st, "batch")); /* nothing chosen yet: the next step does */
		assert_true(sim_contains(w->a.event_message, c->offline ? "offline" : "rolling"));
		/* Nothing else is touched by the start. */
		assert_null(w->a.body);
		world_release(w);
	}
}

/* ---- 2. the whole cycle ---- */

static bool cleaning_waits_for_keep(const struct world *w, const void *arg)
{
	(void)arg;
	json_t *st = current_state(w);
	bool yes = w->a.verb == ACTION_WAIT && sim_streq(kube_obj_str(st, "phase"), "Cleaning");
	json_decref(st);
	return yes;
}

struct cycle_case {
	const char *label;
	int replicas;
	const char *annotations[4][2];
	const char *old_policy; /* the original PVs' */
	bool offline;
	const char *size, *cls; /* what the claims end up as */
};

static const struct cycle_case cycles[] = {
	{"rolling", 2, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}}, "Delete", false, "2Gi", "fixed"},
	{"offline", 2, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_COPY_MODE, "offline"}}, "Delete", true,
	 "2Gi", "fixed"},
	{"rolling with precopy", 2, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_PRECOPY, "true"}}, "Delete",
	 false, "2Gi", "fixed"},
	{"class change", 2, {{CLASS_ANNOTATION_PREFIX "data", "expandable"}}, "Delete", false, "1Gi", "expandable"},
	/* Old PVs the user Retains: their objects are deleted at the end, the storage stays. */
	{"old volumes Retained by the user", 2, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}}, "Retain", false, "2Gi",
	 "fixed"},
	{"three replicas", 3, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}}, "Delete", false, "2Gi", "fixed"},
	{"offline, three replicas", 3, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_COPY_MODE, "offline"}},
	 "Delete", true, "2Gi", "fixed"},
	/* GitOps: the webhook recorded a template with another class and a new label (resize_desired.c). */
	{"desired templates: class and labels", 2,
	 {{ANNOTATION_DESIRED_TEMPLATES, "[{\"metadata\":{\"labels\":{\"tier\":\"db\"},\"name\":\"data\"},"
					 "\"spec\":{\"storageClassName\":\"expandable\"}}]"}},
	 "Delete", false, "1Gi", "expandable"},
};

static void start_cycle(struct world *w, const struct cycle_case *c)
{
	world_init(w, c->replicas, c->old_policy);
	for (size_t k = 0; k < NITEMS(c->annotations) && c->annotations[k][0]; k++)
		sim_annotate(w->sts, c->annotations[k][0], c->annotations[k][1]);
	w->offline = c->offline;
}

static void check_cycle(struct world *w, const struct cycle_case *c)
{
	if (!sim_streq(action_name(&w->a), "Finish"))
		world_fail(w, "%s: ended with %s", c->label, action_name(&w->a));
	if (!event_seen(w, "Normal ResizeStarted", NULL) || !event_seen(w, "Normal ResizeCompleted", NULL))
		world_fail(w, "%s: ResizeStarted and ResizeCompleted Events expected", c->label);
	if (event_seen(w, "Warning", NULL))
		world_fail(w, "%s: a Warning Event in a resize that went well", c->label);
	expect_settled(w, c->size, c->cls);
	assert_null(sim_annotation(w->sts, ANNOTATION_RESIZE_STATE));
	/* The template carries the new size and class; only the last re-create changed it. */
	assert_string_equal(template_size(w), c->size);
	assert_string_equal(template_class(w), c->cls);
	assert_int_equal(w->recreates, c->offline ? 1 : c->replicas);
	assert_int_equal(w->template_changes, 1);
	assert_int_equal(w->last_new_template, 1);
	/* Each replica's copy counted once, after its Job succeeded. */
	assert_int_equal(w->copies, c->replicas);
	/* With precopy, a first pass while web-1 still runs, before it is stopped (the Jobs check the rest). */
	bool precopy = false;
	for (size_t k = 0; k < NITEMS(c->annotations) && c->annotations[k][0]; k++)
		precopy |= sim_streq(c->annotations[k][0], ANNOTATION_PRECOPY);
	int first = log_index(w, "CreatePrecopyJob web-1-precopy", 0);
	if (precopy != (first >= 0) || (precopy && log_index(w, "StopPod web-1", 0) < first))
		world_fail(w, "%s: precopy Job at step %d", c->label, first);
	/* One pass observed per batch and pass: a batch per replica when rolling, one offline. */
	int batches = c->offline ? 1 : (int)c->replicas;
	assert_int_equal(w->passes[0], precopy ? batches : 0);
	assert_int_equal(w->passes[1], precopy ? 0 : batches);
	assert_int_equal(w->passes[2], precopy ? batches : 0);

	/* Rolling: one replica down at a time, highest ordinal first; offline: all together. */
	assert_int_equal(w->max_down, c->offline ? c->replicas : 1);
	assert_int_equal(json_array_size(w->stopped), c->replicas);
	for (int n = 0; n < c->replicas; n++) {
		char want[32];
		snprintf(want, sizeof(want), "web-%d", c->replicas - 1 - n);
		assert_string_equal(json_string_value(json_array_get(w->stopped, (size_t)n)), want);
	}
	/* The old volumes went, and only at the end. */
	for (int n = 0; n < c->replicas; n++) {
		char pv[32];
		snprintf(pv, sizeof(pv), "pv-old-%d", n);
		assert_null(sim_find(w->pvs, pv));
	}
	/* Desired templates: carried out (the claims keep their labels through the swap), then dropped. */
	assert_null(sim_annotation(w->sts, ANNOTATION_DESIRED_TEMPLATES));
	for (size_t k = 0; k < NITEMS(c->annotations) && c->annotations[k][0]; k++) {
		if (!sim_streq(c->annotations[k][0], ANNOTATION_DESIRED_TEMPLATES))
			continue;
		assert_string_equal(kube_obj_str(data_template(w->sts), "metadata.labels.tier"), "db");
		for (int n = 0; n < c->replicas; n++) {
			char claim[32];
			snprintf(claim, sizeof(claim), "data-web-%d", n);
			assert_string_equal(sim_label(sim_find(w->pvcs, claim), "tier"), "db");
			assert_string_equal(sim_label(sim_find(w->pvcs, claim), "app"), "web");
		}
	}
	/* Once finished, the request is met: nothing starts again. */
	plan(w);
	if (w->a.verb != ACTION_NOTHING)
		world_fail(w, "%s: after the end the planner asks for %s", c->label, action_name(&w->a));
}

static void test_cycle(void **state)
{
	struct world *w = *state;
	for (size_t i = 0; i < NITEMS(cycles); i++) {
		const struct cycle_case *c = &cycles[i];
		start_cycle(w, c);
		w->strict_retain = true;
		run(w, NULL, NULL);
		check_cycle(w, c);
		world_release(w);
	}
}

/* The rebinding, step by step, for one replica: the order SPEC section "resize" gives. */
static void test_swap_order(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	w->strict_retain = true;
	run(w, NULL, NULL);
	/* The volume data-web-1 ends on: the one provisioned for data-web-1-copy. */
	const char *pv = kube_obj_str(sim_find(w->pvcs, "data-web-1"), "spec.volumeName");
	assert_non_null(pv);
	assert_true(strncmp(pv, "pv-new-", 7) == 0);
	static const struct {
		const char *step;
		bool on_new_pv; /* the step's object is the new PV */
	} order[] = {
		{"CreateNewClaim data-web-1-copy", false},
		{"StopPod web-1", false},
		{"CreateCopyJob web-1-copy", false},
		{"DeleteCopyJob web-1-copy", false}, /* its pod holds both claims */
		{"RetainVolume ", true},             /* both PVs Retained before any claim goes */
		{"RetainVolume pv-old-1", false},
		{"DeleteNewClaim data-web-1-copy", false},
		{"DeleteClaim data-web-1", false},
		{"PrebindVolume ", true}, /* reserved for the name, so nothing else takes it */
		{"CreateClaim data-web-1 -> ", true},
		{"RestoreReclaimPolicy ", true},
		{"Recreate ", false},
		{"StopPod web-0", false}, /* the next replica only then */
	};
	int at = 0;
	for (size_t i = 0; i < NITEMS(order); i++) {
		char entry[128];
		snprintf(entry, sizeof(entry), "%s%s", order[i].step, order[i].on_new_pv ? pv : "");
		int next = log_index(w, entry, at);
		if (next < 0)
			world_fail(w, "\"%s\" not found after step %d", entry, at);
		at = next + 1;
	}
	world_release(w);
}

/* Stops at the first step named arg. */
static bool asks_for(const struct world *w, const void *arg)
{
	return sim_streq(action_name(&w->a), arg);
}

/* The copy Job as created: what it mounts, its image, its limits. */
static void test_copy_job_shape(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	assert_true(run(w, asks_for, "CreateCopyJob"));
	const json_t *job = w->a.body;
	assert_string_equal(w->a.name, "web-1-copy");
	assert_string_equal(sim_label(job, LABEL_COPY_OF), "web");
	assert_string_equal(sim_annotation(job, ANNOTATION_RESIZE_STARTED), NOW);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "spec"), "activeDeadlineSeconds")),
			 21600);
	const json_t *pod_spec =
		json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
	const json_t *container = json_array_get(json_object_get(pod_spec, "containers"), 0);
	assert_string_equal(kube_obj_str(container, "image"), IMAGE);
	assert_string_equal(kube_obj_str(pod_spec, "restartPolicy"), "Never");
	assert_string_equal(job_pass(job), "full");
	/* Root whatever the image's USER: every file must be read and its owner kept. */
	const json_t *sc = json_object_get(container, "securityContext");
	assert_int_equal(json_integer_value(json_object_get(sc, "runAsUser")), 0);
	assert_int_equal(json_integer_value(json_object_get(sc, "runAsGroup")), 0);
	assert_null(json_object_get(pod_spec, "tolerations")); /* the set has none */
	/* It mounts exactly two claims: the original read-only, the new one writable. */
	size_t i, claims = 0;
	json_t *vol;
	json_array_foreach(json_object_get(pod_spec, "volumes"), i, vol) {
		const json_t *src = json_object_get(vol, "persistentVolumeClaim");
		const char *claim = kube_obj_str(vol, "persistentVolumeClaim.claimName");
		if (!src)
			continue;
		claims++;
		if (sim_streq(claim, "data-web-1"))
			assert_true(json_is_true(json_object_get(src, "readOnly")));
		else if (sim_streq(claim, "data-web-1-copy"))
			assert_false(json_is_true(json_object_get(src, "readOnly")));
		else
			fail_msg("the Job mounts claim %s", claim ? claim : "-");
	}
	assert_int_equal(claims, 2);
	/* The new claim it writes to: the target size and class, marked as the operator's. */
	const json_t *temp = sim_find(w->pvcs, "data-web-1-copy");
	assert_non_null(temp);
	assert_string_equal(kube_obj_str(temp, "spec.resources.requests.storage"), "2Gi");
	assert_string_equal(kube_obj_str(temp, "spec.storageClassName"), "fixed");
	assert_string_equal(sim_label(temp, LABEL_COPY_OF), "web");
	world_release(w);
}

/*
 * Volumes bound to a tainted (dedicated) node are copied on that node: every
 * copy Job takes the workload's tolerations, also those made while the
 * StatefulSet is orphan-deleted (they come from the state, not the set).
 */
static bool copy_job_without_toleration(const struct world *w, const void *arg)
{
	(void)arg;
	if (!w->a.body || !sim_streq(action_name(&w->a), "CreateCopyJob"))
		return false;
	const json_t *pod_spec =
		json_object_get(json_object_get(json_object_get(w->a.body, "spec"), "template"), "spec");
	const json_t *tol = json_array_get(json_object_get(pod_spec, "tolerations"), 0);
	return !sim_streq(kube_obj_str(tol, "key"), "dedicated");
}

static void test_copy_jobs_take_the_sets_tolerations(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	json_object_set_new(json_object_get(json_object_get(json_object_get(w->sts, "spec"), "template"), "spec"),
			    "tolerations",
			    json_pack("[{s:s, s:s, s:s}]", "key", "dedicated", "operator", "Exists", "effect", "NoSchedule"));
	if (run(w, copy_job_without_toleration, NULL))
		world_fail(w, "copy Job %s lacks the set's toleration (StatefulSet %s)", w->a.name,
			   w->sts ? "present" : "orphan-deleted");
	size_t i, jobs = 0;
	json_t *line;
	json_array_foreach(w->log, i, line) jobs += !strncmp(json_string_value(line), "CreateCopyJob", 13);
	assert_true(jobs >= 2);
	world_release(w);
}

/*
 * A re-created claim that stays Pending although its PV is reserved for it
 * (the PV controller looked while its cache showed the old binding) is
 * touched after a few seconds, so the PV controller looks again at once
 * rather than at its next resync.
 */
static void test_pending_rebound_claim_is_nudged(void **state)
{
	(void)state;
	json_t *st = json_pack(
		"{s:s, s:s, s:{s:s}, s:{s:s}, s:s, s:[i], s:[], s:{s:[i], s:s, s:[{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:[s]}]}}",
		"phase", "Copying", "strategy", "copy", "targets", "data", "2Gi", "classes", "data", "fixed", "started",
		NOW, "ordinals", 0, "done", "batch", "ordinals", 0, "step", "Swap", "volumes", "claim", "data-web-0",
		"template", "data", "ordinal", 0, "oldPV", "pv-old-0", "newPV", "pv-new-0", "newClaimUID", "uid-y",
		"size", "1Gi", "accessModes", "ReadWriteOnce");
	char *text = json_dumps(st, JSON_COMPACT);
	json_t *saved = json_pack("{s:{s:s, s:s}}", "metadata", "name", "web", "namespace", "ns");
	char *saved_text = json_dumps(saved, JSON_COMPACT);
	json_t *backup = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "metadata", "name", "web-sts-backup",
				   "namespace", "ns", "annotations", ANNOTATION_RESIZE_STATE, text, "data", BACKUP_KEY,
				   saved_text);
	json_t *pvs = json_pack("[{s:{s:s, s:{s:s}}, s:{s:s, s:{s:s, s:s}}, s:{s:s}}]", "metadata", "name", "pv-new-0",
				"annotations", ANNOTATION_RECLAIM_POLICY, "Delete", "spec",
				"persistentVolumeReclaimPolicy", "Retain", "claimRef", "namespace", "ns", "name",
				"data-web-0", "status", "phase", "Available");
	const char *times[] = {"2026-11-21T11:59:50Z", NOW};
	for (int k = 0; k < 2; k++) {
		json_t *pvcs = json_pack("[{s:{s:s, s:s, s:s, s:s}, s:{s:s}, s:{s:s}}]", "metadata", "name", "data-web-0",
					 "namespace", "ns", "uid", "uid-x", "creationTimestamp", times[k], "spec",
					 "volumeName", "pv-new-0", "status", "phase", "Pending");
		json_t *empty = json_array();
		struct resize_inputs in = {NULL, backup, pvcs, empty, NULL, pvs, empty, IMAGE, NULL};
		struct action a;
		resize_plan(&in, NOW_MS, &a);
		if (k == 0 && (a.verb != ACTION_PATCH || strcmp(action_name(&a), "NudgeBinding") ||
			       strcmp(a.name, "data-web-0")))
			fail_msg("a claim Pending for 10 s: want NudgeBinding data-web-0, have %s %s",
				 action_name(&a), a.name);
		/* Guarded by the claim's UID: a repeat after a lost answer touches the same claim only. */
		if (k == 0)
			assert_string_equal(kube_obj_str(a.body, "metadata.uid"), "uid-x");
		if (k == 1 && a.verb != ACTION_WAIT)
			fail_msg("a claim created just now: want Wait, have %s", action_name(&a));
		action_release(&a);
		json_decref(empty);
		json_decref(pvcs);
	}
	json_decref(pvs);
	json_decref(backup);
	free(saved_text);
	json_decref(saved);
	free(text);
	json_decref(st);
}

/*
 * Node affinity: a copy Job runs where the source volume is (a node-bound
 * PV's own nodeAffinity); a precopy Job runs on the running pod's node
 * (ReadWriteOnce lets a second pod on that node mount the volume).
 */
static void test_copy_job_runs_where_the_volume_is(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	json_t *required = json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms", "matchExpressions", "key",
				     "kubernetes.io/hostname", "operator", "In", "values", "node-a");
	json_object_set_new(json_object_get(sim_find(w->pvs, "pv-old-1"), "spec"), "nodeAffinity",
			    json_pack("{s:O}", "required", required));
	assert_true(run(w, asks_for, "CreateCopyJob"));
	const json_t *affinity = json_object_get(
		json_object_get(json_object_get(json_object_get(w->a.body, "spec"), "template"), "spec"), "affinity");
	if (!json_equal(json_object_get(json_object_get(affinity, "nodeAffinity"),
					"requiredDuringSchedulingIgnoredDuringExecution"),
			required))
		fail_msg("the copy Job is not pinned to the source volume's node");
	json_decref(required);
	world_release(w);

	start_cycle(w, &cycles[2]); /* precopy */
	json_t *pod = sim_find(w->pods, "web-1");
	if (!json_object_get(pod, "spec"))
		json_object_set_new(pod, "spec", json_object());
	json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string("node-b"));
	assert_true(run(w, asks_for, "CreatePrecopyJob"));
	affinity = json_object_get(
		json_object_get(json_object_get(json_object_get(w->a.body, "spec"), "template"), "spec"), "affinity");
	const json_t *term = json_array_get(
		json_object_get(json_object_get(json_object_get(affinity, "nodeAffinity"),
						"requiredDuringSchedulingIgnoredDuringExecution"),
				"nodeSelectorTerms"),
		0);
	const json_t *field = json_array_get(json_object_get(term, "matchFields"), 0);
	assert_string_equal(kube_obj_str(field, "key"), "metadata.name");
	assert_string_equal(json_string_value(json_array_get(json_object_get(field, "values"), 0)), "node-b");
	world_release(w);
}

/* ---- volumes in volumeMode Block ---- */

/* The template and every claim in volumeMode Block (the claims the StatefulSet made from it). */
static void make_block(struct world *w)
{
	json_object_set_new(json_object_get((json_t *)data_template(w->sts), "spec"), "volumeMode",
			    json_string("Block"));
	size_t i;
	json_t *pvc;
	json_array_foreach(w->pvcs, i, pvc) json_object_set_new(json_object_get(pvc, "spec"), "volumeMode",
								  json_string("Block"));
}

/*
 * A Block volume is copied as a device: the new claim is Block, and the copy
 * Job gets both claims as volumeDevices at the paths it hands the script
 * (a mount of a Block claim would never start). The swap and the re-create
 * keep the mode: the claims end Block, on their new volumes.
 */
static void test_block_copy(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	make_block(w);
	assert_true(run(w, asks_for, "CreateNewClaim"));
	assert_string_equal(kube_obj_str(w->a.body, "spec.volumeMode"), "Block");
	assert_true(run(w, asks_for, "CreateCopyJob"));
	const json_t *pod_spec =
		json_object_get(json_object_get(json_object_get(w->a.body, "spec"), "template"), "spec");
	const json_t *container = json_array_get(json_object_get(pod_spec, "containers"), 0);
	const json_t *command = json_object_get(container, "command");
	/* sh -c SCRIPT $0 PASS TARGET-BYTES SRC DST: the pass a device pair takes, and the paths. */
	assert_string_equal(json_string_value(json_array_get(command, 4)), "full");
	assert_string_equal(json_string_value(json_array_get(command, 6)), "/stateful-operator/source/data");
	assert_string_equal(json_string_value(json_array_get(command, 7)), "/stateful-operator/target/data");
	json_t *want = json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "source-0", "devicePath",
				 "/stateful-operator/source/data", "name", "target-0", "devicePath",
				 "/stateful-operator/target/data");
	if (!json_equal(json_object_get(container, "volumeDevices"), want)) {
		char *have = json_dumps(json_object_get(container, "volumeDevices"), JSON_COMPACT);
		fail_msg("volumeDevices: %s", have ? have : "none");
	}
	json_decref(want);
	/* Nothing of the claims is mounted: only the script's /tmp. */
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(container, "volumeMounts"), i, m) {
		if (!sim_streq(kube_obj_str(m, "mountPath"), "/tmp"))
			fail_msg("a Block claim is mounted at %s", kube_obj_str(m, "mountPath"));
	}
	const json_t *vols = json_object_get(pod_spec, "volumes");
	assert_string_equal(kube_obj_str(json_array_get(vols, 0), "persistentVolumeClaim.claimName"), "data-web-1");
	assert_true(json_is_true(json_object_get(json_object_get(json_array_get(vols, 0), "persistentVolumeClaim"),
						 "readOnly")));
	assert_string_equal(kube_obj_str(json_array_get(vols, 1), "persistentVolumeClaim.claimName"),
			    "data-web-1-copy");
	run(w, NULL, NULL);
	check_cycle(w, &cycles[0]);
	for (int n = 0; n < w->replicas; n++) {
		char claim[32];
		snprintf(claim, sizeof(claim), "data-web-%d", n);
		assert_string_equal(kube_obj_str(sim_find(w->pvcs, claim), "spec.volumeMode"), "Block");
	}
	assert_string_equal(kube_obj_str(data_template(w->sts), "spec.volumeMode"), "Block");
	world_release(w);
}

struct block_case {
	const char *label;
	const char *template_size;
	const char *claim_capacity; /* data-web-1's status.capacity; NULL: 1Gi like the others */
	const char *annotations[4][2];
	/* want: */
	const char *reason; /* NULL: the copy starts */
	const char *says[2];
};

static const struct block_case block_cases[] = {
	{"shrink", "2Gi", "2Gi",
	 {{RESIZE_ANNOTATION_PREFIX "data", "1Gi"}, {ANNOTATION_STRATEGY, "copy"}, {ANNOTATION_ALLOW_SHRINK, "true"}},
	 "ResizeBlockShrink", {"the template's request (2Gi)", "ask for 2Gi or more"}},
	/* A claim grown on its own past the new size: its device would not fit either. */
	{"a claim larger than the new size", "1Gi", "3Gi", {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}},
	 "ResizeBlockShrink", {"claim data-web-1 (3Gi)", "ask for 3Gi or more"}},
	{"precopy", "1Gi", NULL, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_PRECOPY, "true"}},
	 "ResizeBlockPrecopy", {"remove annotation " ANNOTATION_PRECOPY, "volumeMode Block"}},
	/* What a device copy can do starts. */
	{"grow", "1Gi", NULL, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}}, NULL, {NULL, NULL}},
	{"class change, same size", "1Gi", NULL, {{CLASS_ANNOTATION_PREFIX "data", "expandable"}}, NULL, {NULL, NULL}},
	{"offline", "1Gi", NULL, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_COPY_MODE, "offline"}}, NULL,
	 {NULL, NULL}},
	{"precopy \"false\"", "1Gi", NULL, {{RESIZE_ANNOTATION_PREFIX "data", "2Gi"}, {ANNOTATION_PRECOPY, "false"}},
	 NULL, {NULL, NULL}},
};

/* What a copy cannot do with a device is refused before anything changes, saying what to ask instead. */
static void test_block_refusals(void **state)
{
	struct world *w = *state;
	for (size_t i = 0; i < NITEMS(block_cases); i++) {
		const struct block_case *c = &block_cases[i];
		world_init(w, 3, "Delete");
		json_decref(w->sts);
		w->sts = sts_obj(3, c->template_size, "fixed");
		make_block(w);
		json_t *pvc = sim_find(w->pvcs, "data-web-1");
		if (c->claim_capacity)
			json_object_set_new(json_object_get(json_object_get(pvc, "status"), "capacity"), "storage",
					    json_string(c->claim_capacity));
		for (size_t k = 0; k < NITEMS(c->annotations) && c->annotations[k][0]; k++)
			sim_annotate(w->sts, c->annotations[k][0], c->annotations[k][1]);
		plan(w);
		if (!c->reason) {
			if (!sim_streq(action_name(&w->a), "SetState") ||
			    !sim_streq(kube_obj_str(w->a.state, "strategy"), "copy"))
				fail_msg("%s: want the copy to start, have %s (%s: %s)", c->label, action_name(&w->a),
					 sim_or_dash(w->a.event_reason), sim_or_dash(w->a.event_message));
			world_release(w);
			continue;
		}
		if (w->a.verb != ACTION_REFUSE || !sim_streq(w->a.event_reason, c->reason))
			fail_msg("%s: want a %s refusal, have %s (%s: %s)", c->label, c->reason, action_name(&w->a),
				 sim_or_dash(w->a.event_reason), sim_or_dash(w->a.event_message));
		assert_string_equal(w->a.event_type, "Warning");
		for (size_t k = 0; k < NITEMS(c->says) && c->says[k]; k++)
			if (!sim_contains(w->a.event_message, c->says[k]))
				fail_msg("%s: the message lacks \"%s\": %s", c->label, c->says[k], w->a.event_message);
		/* Nothing changes: no state, no object. */
		assert_null(w->a.state);
		assert_null(w->a.body);
		world_release(w);
	}
}

/*
 * Rolling means every replica Ready before the next one goes down: a
 * replica that is not Ready at the start holds the first batch back, and a
 * re-created replica that does not get Ready holds the batch open (backup
 * kept, state in Ready, the next replica untouched).
 */
static bool waiting_after_recreate(const struct world *w, const void *arg)
{
	(void)arg;
	return w->recreates == 1 && w->iterations >= w->recreated_at + 5;
}

static void test_rolling_waits_for_ready(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	set_condition(sim_find(w->pods, "web-0"), "Ready", false, "", "");
	plan(w);
	assert_string_equal(action_name(&w->a), "SetState"); /* the start is only recorded */
	apply(w, &w->a);
	plan(w);
	if (w->a.verb != ACTION_WAIT || !sim_contains(w->a.status, "web-0"))
		world_fail(w, "web-0 is not Ready, yet the planner asks for %s", action_name(&w->a));
	set_condition(sim_find(w->pods, "web-0"), "Ready", true, "", "");
	plan(w);
	json_t *one = json_pack("[i]", 1);
	bool ok = sim_streq(action_name(&w->a), "SetState") &&
		  json_equal(json_object_get(json_object_get(w->a.state, "batch"), "ordinals"), one);
	json_decref(one);
	if (!ok)
		world_fail(w, "web-0 Ready: want the batch [1], have %s", action_name(&w->a));
	world_release(w);

	start_cycle(w, &cycles[0]);
	w->hold_ready = true;
	assert_true(run(w, waiting_after_recreate, NULL));
	const json_t *st = state_now(w);
	if (w->a.verb != ACTION_WAIT || !sim_streq(batch_step_of(st), "Ready") || !w->backup || sim_in_array(w->stopped, "web-0"))
		world_fail(w, "web-1 is not Ready after the re-create, yet the planner asks for %s (step %s)",
			   action_name(&w->a), sim_or_dash(batch_step_of(st)));
	w->hold_ready = false;
	run(w, NULL, NULL);
	check_cycle(w, &cycles[0]);
	world_release(w);
}

/* A new claim left by an earlier resize (the label, another start time) is replaced, not reused. */
static void test_stale_copy_claim_is_replaced(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	json_t *pvc = pvc_obj("data-web-1-copy", "pvc-uid-stale", "2Gi", "fixed");
	json_object_set_new(json_object_get(json_object_get(pvc, "metadata"), "labels"), LABEL_COPY_OF, json_string("web"));
	sim_annotate(pvc, ANNOTATION_RESIZE_STARTED, "2026-01-01T00:00:00Z");
	json_t *pv = pv_obj("pv-stale", "2Gi", "fixed", "Delete");
	bind(pvc, pv);
	json_array_append_new(w->pvcs, pvc);
	json_array_append_new(w->pvs, pv);
	json_object_set_new(w->data, "pv-stale", json_string("data of web-1")); /* an old copy */
	run(w, NULL, NULL);
	assert_true(logged(w, "DeleteStaleClaim data-web-1-copy"));
	assert_true(log_index(w, "DeleteStaleClaim data-web-1-copy", 0) < log_index(w, "CreateNewClaim data-web-1-copy", 0));
	check_cycle(w, &cycles[0]);
	world_release(w);
}

/* SPEC: the old PV is kept "Retained, labelled" until the resize has completed (and keep-old-volumes passed). */
static void test_old_volumes_are_labelled(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	sim_annotate(w->sts, ANNOTATION_KEEP_OLD_VOLUMES, "1h");
	assert_true(run(w, cleaning_waits_for_keep, NULL));
	for (int n = 0; n < 2; n++) {
		char pv[32];
		snprintf(pv, sizeof(pv), "pv-old-%d", n);
		const json_t *old = sim_find(w->pvs, pv);
		if (!sim_streq(sim_label(old, LABEL_OLD_VOLUME), "web"))
			world_fail(w, "kept old volume %s has no label %s=web", pv, LABEL_OLD_VOLUME);
	}
	world_release(w);
}

/* ---- 3. a copy that fails verification ---- */

static bool restore_recorded(const struct world *w, const void *arg)
{
	(void)arg;
	return sim_streq(action_name(&w->a), "SetState") && json_object_get(json_object_get(w->a.state, "batch"), "restore");
}

static void test_failed_copy_restores_the_replica(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	w->fail_ordinal = 1;
	assert_true(run(w, restore_recorded, NULL));
	const char *why = kube_obj_str(w->a.state, "batch.restore");
	if (!sim_contains(why, "web-1-copy") || !sim_contains(why, "BackoffLimitExceeded") ||
	    !sim_contains(why, "SOP-RESULT fail verification found differences"))
		world_fail(w, "batch.restore says: %s", why);
	assert_true(json_is_true(json_object_get(json_object_get(w->a.state, "batch"), "failed")));
	assert_string_equal(w->a.event_type, "Warning");
	assert_string_equal(w->a.event_reason, "CopyFailed");

	run(w, NULL, NULL);
	/* It rests in Failed: reported, nothing more to do until the user changes the request. */
	if (w->a.verb != ACTION_NOTHING)
		world_fail(w, "ended with %s", action_name(&w->a));
	const json_t *st = state_now(w);
	assert_string_equal(kube_obj_str(st, "phase"), "Failed");
	assert_true(sim_contains(kube_obj_str(st, "message"), "verification found differences"));
	assert_null(json_object_get(st, "batch"));
	if (!event_seen(w, "Warning ResizeFailed", "verification found differences"))
		world_fail(w, "no Warning ResizeFailed Event naming the difference");
	assert_true(logged(w, "DeleteCopyJob web-1-copy"));
	assert_true(logged(w, "DeleteNewClaim data-web-1-copy"));
	/* The StatefulSet came back as it was. */
	assert_int_equal(w->recreates, 1);
	assert_int_equal(w->template_changes, 0);
	assert_string_equal(template_size(w), "1Gi");
	/* The original claim was never deleted: same uid, same volume, its data. */
	assert_false(sim_in_array(w->deleted, "pvc/data-web-1"));
	assert_string_equal(kube_obj_str(sim_find(w->pvcs, "data-web-1"), "metadata.uid"), "pvc-uid-1");
	assert_string_equal(kube_obj_str(sim_find(w->pvcs, "data-web-1"), "spec.volumeName"), "pv-old-1");
	/* Invariant 2: a copy counts only once verified. */
	assert_int_equal(w->copies, 0);
	/* Only web-1 was ever taken down. */
	assert_int_equal(json_array_size(w->stopped), 1);
	expect_settled(w, "1Gi", "fixed");

	/* Still Failed on the next look; a new request starts over. */
	plan(w);
	assert_int_equal(w->a.verb, ACTION_NOTHING);
	sim_annotate(w->sts, RESIZE_ANNOTATION_PREFIX "data", "3Gi");
	plan(w);
	assert_string_equal(action_name(&w->a), "Finish");
	assert_string_equal(w->a.event_reason, "ResizeReset");
	world_release(w);
}

/*
 * A copy pod's termination message is whatever its container wrote (the
 * volume's contents may steer rsync's errors): escape sequences (issue 27)
 * and the kubelet's 4 KiB. The restore reason, the Events, the Failed
 * state's message and resize-status quote it as one clean line, bounded,
 * its words kept.
 */
static void test_failed_copy_message_recorded_clean(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	char *said = terminal_dirty_text("SOP-RESULT fail ");
	w->fail_message = said;
	w->fail_ordinal = 1;
	assert_true(run(w, restore_recorded, NULL));
	const char *why = kube_obj_str(w->a.state, "batch.restore");
	terminal_expect_safe("batch.restore", why, false);
	if (!sim_contains(why, "SOP-RESULT fail ") || !sim_contains(why, "2J") || strlen(why) > 700)
		world_fail(w, "batch.restore (%zu bytes): %.100s...", strlen(why), why);
	run(w, NULL, NULL);
	const json_t *st = state_now(w);
	assert_string_equal(kube_obj_str(st, "phase"), "Failed");
	terminal_expect_safe("the Failed state's message", kube_obj_str(st, "message"), false);
	const char *status = sim_annotation(w->sts, ANNOTATION_RESIZE_STATUS);
	assert_non_null(status);
	terminal_expect_safe("resize-status", status, false);
	if (!sim_contains(status, "SOP-RESULT fail ") || strlen(status) > 1024)
		world_fail(w, "resize-status (%zu bytes): %.100s...", strlen(status), status);
	assert_true(event_seen(w, "Warning ResizeFailed", "SOP-RESULT fail "));
	size_t i;
	const json_t *e;
	json_array_foreach(w->events, i, e) {
		terminal_expect_safe("an Event", json_string_value(e), false);
		if (strlen(json_string_value(e)) > 1024 + 40) /* "Type Reason: " before the message */
			world_fail(w, "an Event of %zu bytes", strlen(json_string_value(e)));
	}
	w->fail_message = NULL;
	free(said);
	world_release(w);
}

/*
 * The second replica's copy fails: the first keeps its new volume (its old
 * one stays Retained, as the Event says), the second is back on its own, the
 * template is unchanged, and the resize rests in Failed.
 */
static void test_failed_second_batch_keeps_the_first(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	w->fail_ordinal = 0;
	run(w, NULL, NULL);
	settle(w);
	if (w->a.verb != ACTION_NOTHING)
		world_fail(w, "ended with %s", action_name(&w->a));
	const json_t *st = state_now(w);
	assert_string_equal(kube_obj_str(st, "phase"), "Failed");
	assert_true(sim_contains(kube_obj_str(st, "message"), "web-0-copy"));
	if (!event_seen(w, "Warning ResizeFailed", "replicas copied before keep their new volumes"))
		world_fail(w, "no ResizeFailed Event saying what the first replica keeps");
	assert_int_equal(w->copies, 1);
	assert_int_equal(w->template_changes, 0);
	assert_string_equal(template_size(w), "1Gi");
	const char *v1 = kube_obj_str(sim_find(w->pvcs, "data-web-1"), "spec.volumeName");
	assert_true(strncmp(v1, "pv-new-", 7) == 0);
	assert_string_equal(data_of(w, v1), "data of web-1");
	assert_string_equal(kube_obj_str(sim_find(w->pvs, v1), "spec.capacity.storage"), "2Gi");
	assert_string_equal(kube_obj_str(sim_find(w->pvcs, "data-web-0"), "spec.volumeName"), "pv-old-0");
	assert_string_equal(kube_obj_str(sim_find(w->pvcs, "data-web-0"), "metadata.uid"), "pvc-uid-0");
	assert_string_equal(kube_obj_str(sim_find(w->pvs, "pv-old-0"), "spec.persistentVolumeReclaimPolicy"), "Delete");
	assert_string_equal(kube_obj_str(sim_find(w->pvs, "pv-old-1"), "spec.persistentVolumeReclaimPolicy"), "Retain");
	/* Handed back (finding 9): kept, labelled and named for the user, no longer taken for the set. */
	const json_t *kept = sim_find(w->pvs, "pv-old-1");
	assert_null(sim_annotation(kept, ANNOTATION_TAKEN_FOR));
	assert_string_equal(sim_label(kept, LABEL_OLD_VOLUME), "web");
	assert_string_equal(sim_annotation(kept, ANNOTATION_RECLAIM_POLICY), "Delete");
	if (!event_seen(w, "Normal OldVolumeKept", "pv-old-1"))
		world_fail(w, "no OldVolumeKept Event for pv-old-1");
	assert_null(sim_find(w->pvcs, "data-web-0-copy"));
	assert_int_equal(json_array_size(w->jobs), 0);
	assert_null(w->backup);
	world_release(w);
}

/* ---- 4. abort ---- */

static void ask_abort(struct world *w, bool on_backup)
{
	json_t *target = on_backup ? w->backup : (w->sts ? w->sts : w->backup);
	assert_non_null(target);
	sim_annotate(target, ANNOTATION_ABORT, "true");
	trace(w, "    (abort asked on the %s)\n", target == w->sts ? "StatefulSet" : "backup ConfigMap");
}

static bool copy_job_running(const struct world *w, const void *arg)
{
	(void)arg;
	json_t *st = current_state(w);
	bool yes = sim_streq(batch_step_of(st), "Copy") && sim_find(w->jobs, "web-1-copy") &&
		   !kube_obj_condition(sim_find(w->jobs, "web-1-copy"), "Complete", NULL);
	json_decref(st);
	return yes;
}

static void test_abort_while_copying(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	assert_true(run(w, copy_job_running, NULL));
	assert_null(w->sts); /* the state is on the backup: that is where the user asks */
	ask_abort(w, true);
	plan(w);
	if (!sim_streq(action_name(&w->a), "SetState") || !sim_streq(kube_obj_str(w->a.state, "batch.restore"), "aborted on request"))
		world_fail(w, "abort during Copy: %s", action_name(&w->a));
	assert_false(json_is_true(json_object_get(json_object_get(w->a.state, "batch"), "failed")));
	assert_string_equal(w->a.event_reason, "ResizeAborted");

	run(w, NULL, NULL);
	if (!sim_streq(action_name(&w->a), "Finish") || !event_seen(w, "Warning ResizeAborted", "template is unchanged"))
		world_fail(w, "the abort did not end the resize: %s", action_name(&w->a));
	assert_true(logged(w, "DeleteCopyJob web-1-copy"));
	assert_false(sim_in_array(w->deleted, "pvc/data-web-1"));
	assert_string_equal(kube_obj_str(sim_find(w->pvcs, "data-web-1"), "metadata.uid"), "pvc-uid-1");
	assert_int_equal(w->template_changes, 0);
	assert_string_equal(template_size(w), "1Gi");
	assert_int_equal(w->copies, 0);
	assert_int_equal(json_array_size(w->stopped), 1); /* web-0 was never touched */
	expect_settled(w, "1Gi", "fixed");
	world_release(w);
}

static bool orphan_delete_planned(const struct world *w, const void *arg)
{
	(void)arg;
	return sim_streq(action_name(&w->a), "OrphanDelete");
}

/*
 * An abort asked just as the StatefulSet is orphan-deleted lands on a set
 * in deletion, which still takes patches and then vanishes with whatever
 * was written to it: the abort is carried to the backup and acted on from
 * there once the set is gone.
 */
static void test_abort_on_a_set_in_orphan_deletion(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	assert_true(run(w, orphan_delete_planned, NULL));
	json_t *in_deletion = json_deep_copy(w->sts);
	apply(w, &w->a); /* the pods orphaned */
	/* As the API server has it meanwhile: the set still there, in deletion, and the abort on it. */
	w->sts = in_deletion;
	json_object_set_new(json_object_get(w->sts, "metadata"), "deletionTimestamp", json_string(w->now));
	ask_abort(w, false);
	plan(w);
	if (!sim_streq(action_name(&w->a), "CarryAbort") || w->a.resource != &KUBE_CONFIGMAPS)
		world_fail(w, "abort on a set in deletion: %s", action_name(&w->a));
	assert_string_equal(kube_obj_str(w->a.body, "metadata.uid"), kube_obj_str(w->backup, "metadata.uid"));
	sim_merge_patch(w->backup, w->a.body);
	plan(w);
	assert_int_equal(w->a.verb, ACTION_WAIT); /* carried: nothing written to the set in deletion */
	json_decref(w->sts); /* the garbage collector is done */
	w->sts = NULL;
	plan(w);
	if (!sim_streq(action_name(&w->a), "SetState") ||
	    !sim_streq(kube_obj_str(w->a.state, "batch.restore"), "aborted on request"))
		world_fail(w, "the carried abort was not acted on: %s", action_name(&w->a));
	run(w, NULL, NULL);
	if (!sim_streq(action_name(&w->a), "Finish") || !event_seen(w, "Warning ResizeAborted", NULL))
		world_fail(w, "the carried abort did not end the resize: %s", action_name(&w->a));
	expect_settled(w, "1Gi", "fixed");
	world_release(w);
}

static bool original_claim_gone(const struct world *w, const void *arg)
{
	(void)arg;
	return !sim_find(w->pvcs, "data-web-1");
}

static void test_abort_after_the_original_claim_went(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	assert_true(run(w, original_claim_gone, NULL));
	const json_t *st = state_now(w);
	assert_string_equal(batch_step_of(st), "Swap");
	assert_string_equal(kube_obj_str(sim_find(w->pvs, "pv-old-1"), "spec.persistentVolumeReclaimPolicy"), "Retain");
	int at = (int)json_array_size(w->log);
	ask_abort(w, true);
	run(w, NULL, NULL);
	if (!sim_streq(action_name(&w->a), "Finish"))
		world_fail(w, "ended with %s", action_name(&w->a));
	/* The original name goes back onto the old volume: reserved for it, then claimed. */
	int prebind = log_index(w, "PrebindVolume pv-old-1", at);
	int claim = log_index(w, "CreateClaim data-web-1 -> pv-old-1", at);
	int policy = log_index(w, "RestoreReclaimPolicy pv-old-1", at);
	if (prebind < 0 || claim < prebind || policy < claim)
		world_fail(w, "restore order: prebind %d, claim %d, policy %d", prebind, claim, policy);
	for (size_t i = (size_t)at; i < json_array_size(w->log); i++) {
		const char *e = json_string_value(json_array_get(w->log, i));
		if (!strncmp(e, "CreateClaim data-web-1 -> ", 26) && strcmp(e + 26, "pv-old-1"))
			world_fail(w, "after the abort: %s", e);
	}
	assert_string_equal(kube_obj_str(sim_find(w->pvcs, "data-web-1"), "spec.volumeName"), "pv-old-1");
	assert_int_equal(w->template_changes, 0);
	expect_settled(w, "1Gi", "fixed");
	world_release(w);
}

/*
 * What an abort must leave, whenever it came: each claim data-web-N Bound
 * to a volume holding its data, and nothing else: no copy claim, Job,
 * backup or empty claim, and no PV but those in use, each with its own
 * reclaim policy. NULL, or what is wrong (new string).
 */
static char *abort_leftovers(struct world *w)
{
	settle(w);
	if (!sim_streq(action_name(&w->a), "Finish") && w->a.verb != ACTION_NOTHING)
		return xasprintf("ended with %s", action_name(&w->a));
	for (int n = 0; n < w->replicas; n++) {
		char claim[32], what[32];
		snprintf(claim, sizeof(claim), "data-web-%d", n);
		snprintf(what, sizeof(what), "data of web-%d", n);
		const char *vol = kube_obj_str(sim_find(w->pvcs, claim), "spec.volumeName");
		if (!sim_streq(kube_obj_str(sim_find(w->pvcs, claim), "status.phase"), "Bound") || !sim_streq(data_of(w, vol), what))
			return xasprintf("%s is not Bound to a volume holding its data", claim);
	}
	if (w->empty_claims || w->backup || json_array_size(w->jobs) ||
	    json_array_size(w->pvcs) != (size_t)w->replicas)
		return xasprintf("left %d empty claim(s), %s backup, %zu Job(s), %zu claim(s)", w->empty_claims,
				 w->backup ? "a" : "no", json_array_size(w->jobs), json_array_size(w->pvcs));
	size_t i;
	json_t *o;
	json_array_foreach(w->pvs, i, o) {
		const char *name = kube_obj_str(o, "metadata.name");
		if (!sim_streq(kube_obj_str(o, "status.phase"), "Bound") ||
		    !sim_streq(kube_obj_str(o, "spec.persistentVolumeReclaimPolicy"), "Delete"))
			return xasprintf("PV %s (holding \"%s\") left %s, policy %s, reserved for %s%s", name,
					 sim_or_dash(data_of(w, name)), sim_or_dash(kube_obj_str(o, "status.phase")),
					 sim_or_dash(kube_obj_str(o, "spec.persistentVolumeReclaimPolicy")),
					 sim_or_dash(kube_obj_str(o, "spec.claimRef.name")),
					 kube_obj_str(o, "spec.claimRef.uid") ? "" : " (no uid)");
	}
	return NULL;
}

/*
 * Abort after every step of a rolling resize, asked where the user can
 * (the StatefulSet while it exists, else its backup): the run itself checks
 * invariant 1 and that nothing is lost; at the end each replica is on one
 * volume holding its data and nothing is left over. Every abort point is
 * tried; the failures are listed together.
 */
static bool after_steps(const struct world *w, const void *arg)
{
	return w->iterations >= *(const int *)arg;
}

static void test_abort_at_every_step(void **state)
{
	struct fixture *f = *state;
	struct world *w = &f->w;
	for (int mode = 0; mode < 4; mode++) {
		const struct cycle_case *c = &cycles[mode & 1]; /* rolling, offline */
		bool twice = mode & 2;
		start_cycle(w, c);
		w->double_apply = twice;
		run(w, NULL, NULL);
		int total = w->iterations;
		world_release(w);
		for (int k = 0; k < total; k++) {
			start_cycle(w, c);
			w->double_apply = twice;
			if (!run(w, after_steps, &k))
				world_fail(w, "%s: step %d: the resize ended before", c->label, k);
			ask_abort(w, false);
			run(w, NULL, NULL);
			char *problem = abort_leftovers(w);
			if (problem) {
				note_failure(f, xasprintf("%s%s, abort after step %d: %s", c->label,
							  twice ? " (each step twice)" : "", k, problem));
				free(problem);
			}
			world_release(w);
		}
	}
	expect_no_failures(f, "aborts that left the cluster wrong");
}

/*
 * An abort asked on the backup ConfigMap (the only object there is while
 * the StatefulSet is gone) is honoured like one on the StatefulSet: no
 * further replica is taken down, the resize ends aborted, and it does not
 * start again afterwards.
 */
static bool stateful_set_gone(const struct world *w, const void *arg)
{
	(void)arg;
	return !w->sts && w->backup;
}

static bool restart_recorded(const struct world *w, const void *arg)
{
	(void)arg;
	json_t *st = current_state(w);
	bool yes = !w->sts && sim_streq(batch_step_of(st), "Restart");
	json_decref(st);
	return yes;
}

/* A point of the rolling cycle (cycles[0]) a test stops at. */
struct stop_point {
	const char *when;
	stop_fn stop;
};

static void run_to(struct world *w, const struct stop_point *p)
{
	start_cycle(w, &cycles[0]);
	if (!run(w, p->stop, NULL))
		world_fail(w, "the resize ended before %s", p->when);
}

static void test_abort_on_the_backup_is_not_forgotten(void **state)
{
	struct fixture *f = *state;
	struct world *w = &f->w;
	static const struct stop_point cases[] = {
		{"right after the orphan delete", stateful_set_gone},
		{"when the StatefulSet is about to be re-created", restart_recorded},
	};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		run_to(w, &cases[i]);
		ask_abort(w, true);
		run(w, NULL, NULL);
		char *problem = NULL;
		if (!sim_streq(action_name(&w->a), "Finish") || !event_seen(w, "Warning ResizeAborted", NULL)) {
			problem = xasprintf("ended with %s without a ResizeAborted Event", action_name(&w->a));
		} else if (sim_in_array(w->stopped, "web-0")) {
			problem = xstrdup("web-0 was taken down after the abort");
		} else {
			plan(w);
			if (w->a.verb != ACTION_NOTHING)
				problem = xasprintf("afterwards the planner asks for %s (%s)", action_name(&w->a),
						    w->a.event_reason ? w->a.event_reason : "-");
		}
		if (problem) {
			note_failure(f, xasprintf("abort %s: %s", cases[i].when, problem));
			free(problem);
		}
		world_release(w);
	}
	expect_no_failures(f, "aborts asked on the backup that were not honoured");
}

/*
 * A StatefulSet created from the manifest by someone else while the copy
 * has it deleted (the webhook's create guard not answering, an opt-out, no
 * webhook), mid-Copy or mid-Swap: it carries no resize state, and the
 * backup is the one record of where the replica's data is. The backup is
 * kept and the operator refuses, naming the volumes; once the set is gone
 * again with an abort asked on the backup, the replica is back on its
 * original volume.
 */
static void test_set_created_mid_swap_keeps_the_backup(void **state)
{
	struct fixture *f = *state;
	struct world *w = &f->w;
	static const struct stop_point cases[] = {
		{"while copying", copy_job_running},
		{"after the original claim went", original_claim_gone},
	};
	for (size_t i = 0; i < NITEMS(cases); i++) {
		run_to(w, &cases[i]);
		assert_null(w->sts);
		w->sts = sts_obj(2, "1Gi", "fixed");
		sim_annotate(w->sts, RESIZE_ANNOTATION_PREFIX "data", "2Gi");
		json_object_set_new(json_object_get(w->sts, "metadata"), "uid", json_string("uid-web-foreign"));
		trace(w, "    (the StatefulSet created from the manifest by someone else)\n");
		plan(w);
		char *problem = NULL;
		if (w->a.verb != ACTION_REFUSE || !sim_streq(w->a.event_reason, "ResizeInterrupted") ||
		    !sim_contains(w->a.event_message, "web-sts-backup") ||
		    !sim_contains(w->a.event_message, "data-web-1: original volume pv-old-1") ||
		    !sim_contains(w->a.event_message, ANNOTATION_ABORT)) {
			problem = xasprintf("step %s (%s: %s), not a refusal naming the backup and the volumes",
					    action_name(&w->a), sim_or_dash(w->a.event_reason),
					    sim_or_dash(w->a.event_message));
		} else {
			/* As the refusal says: the abort on the backup, the set orphan-deleted. */
			json_decref(w->sts);
			w->sts = NULL;
			ask_abort(w, true);
			run(w, NULL, NULL);
			problem = abort_leftovers(w);
		}
		if (problem) {
			note_failure(f, xasprintf("a set created %s: %s", cases[i].when, problem));
			free(problem);
		}
		world_release(w);
	}
	expect_no_failures(f, "sets created mid-copy whose backup was not kept");
}

/* ---- 5. a claim in the way ---- */

static void test_foreign_copy_claim_is_never_deleted(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	/* The user's own claim, named like the operator's temporary one, without its label. */
	json_t *pvc = pvc_obj("data-web-1-copy", "pvc-uid-users", "5Gi", "fixed");
	json_t *pv = pv_obj("pv-users", "5Gi", "fixed", "Delete");
	bind(pvc, pv);
	json_array_append_new(w->pvcs, pvc);
	json_array_append_new(w->pvs, pv);
	json_object_set_new(w->data, "pv-users", json_string("the user's own data"));
	run(w, NULL, NULL);
	assert_false(sim_in_array(w->deleted, "pvc/data-web-1-copy"));
	const json_t *still = sim_find(w->pvcs, "data-web-1-copy");
	if (!still || !sim_streq(kube_obj_str(still, "metadata.uid"), "pvc-uid-users"))
		world_fail(w, "the user's claim data-web-1-copy is gone");
	const json_t *st = state_now(w);
	if (!sim_streq(kube_obj_str(st, "phase"), "Failed") || !sim_contains(kube_obj_str(st, "message"), "data-web-1-copy"))
		world_fail(w, "want phase Failed naming data-web-1-copy, have %s: %s", sim_or_dash(kube_obj_str(st, "phase")),
			   sim_or_dash(kube_obj_str(st, "message")));
	assert_int_equal(json_array_size(w->stopped), 0); /* found before anything was stopped */
	world_release(w);
}

/* ---- 6. keeping the old volumes ---- */

static void test_keep_old_volumes(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	sim_annotate(w->sts, ANNOTATION_KEEP_OLD_VOLUMES, "1h");
	w->strict_retain = true;
	assert_true(run(w, cleaning_waits_for_keep, NULL));
	int64_t completed = w->clock;
	const json_t *st = state_now(w);
	assert_int_equal(rfc3339_seconds(kube_obj_str(st, "completed")), completed);
	assert_int_equal(json_integer_value(json_object_get(st, "keepOldSeconds")), 3600);

	/* Kept: Retained, still there. */
	static const struct {
		int64_t after;
		long requeue_ms;
	} waits[] = {{0, TEN_MINUTES_MS}, {10 * 60, TEN_MINUTES_MS}, {55 * 60, 5L * 60 * 1000}, {3599, 1000}};
	for (size_t i = 0; i < NITEMS(waits); i++) {
		set_clock(w, completed + waits[i].after);
		plan(w);
		if (w->a.verb != ACTION_WAIT || w->a.requeue_ms != waits[i].requeue_ms)
			world_fail(w, "%llds after completion: %s, requeue %ld ms, want a wait of %ld ms",
				   (long long)waits[i].after, action_name(&w->a), w->a.requeue_ms,
				   waits[i].requeue_ms);
		for (int n = 0; n < 2; n++) {
			char pv[32];
			snprintf(pv, sizeof(pv), "pv-old-%d", n);
			assert_string_equal(kube_obj_str(sim_find(w->pvs, pv), "spec.persistentVolumeReclaimPolicy"),
					    "Retain");
			assert_string_equal(sim_annotation(sim_find(w->pvs, pv), ANNOTATION_RECLAIM_POLICY), "Delete");
		}
	}
	/* Past it: each old volume gets its own policy back, so its storage goes. */
	set_clock(w, completed + 2 * 3600);
	plan(w);
	if (w->a.verb != ACTION_PATCH || !sim_streq(action_name(&w->a), "DeleteOldVolume") ||
	    w->a.resource != &KUBE_PVS)
		world_fail(w, "2h after completion: %s %s", action_name(&w->a), w->a.name);
	assert_true(sim_streq(w->a.name, "pv-old-1") || sim_streq(w->a.name, "pv-old-0"));
	assert_string_equal(kube_obj_str(w->a.body, "spec.persistentVolumeReclaimPolicy"), "Delete");
	const json_t *ann = json_object_get(json_object_get(w->a.body, "metadata"), "annotations");
	assert_true(json_is_null(json_object_get(ann, ANNOTATION_RECLAIM_POLICY)));
	run(w, NULL, NULL);
	check_cycle(w, &cycles[0]);
	world_release(w);
}

/* ---- 7. crash safety ---- */

/*
 * Every step performed twice, as after a crash right after the API call
 * with a cache that has not seen the result yet: the second CREATE meets
 * 409, the second DELETE 404, and the resize ends the same.
 */
static void test_every_step_twice(void **state)
{
	struct world *w = *state;
	for (size_t i = 0; i < NITEMS(cycles); i++) {
		start_cycle(w, &cycles[i]);
		w->double_apply = true;
		w->strict_retain = true;
		run(w, NULL, NULL);
		check_cycle(w, &cycles[i]);
		assert_true(w->conflicts > 0); /* the repeats did meet what the first call made */
		world_release(w);
	}
}

/*
 * A crash right after a CREATE: the process starts again on a world that
 * has the object. The planner goes on from there (the same CREATE is never
 * asked again, nothing is created twice) to the end.
 */
static void test_create_already_done(void **state)
{
	struct world *w = *state;
	static const char *const creates[] = {"CreateNewClaim", "CreateCopyJob", "CreateClaim"};
	for (size_t i = 0; i < NITEMS(creates); i++) {
		start_cycle(w, &cycles[0]);
		w->strict_retain = true;
		assert_true(run(w, asks_for, creates[i]));
		assert_int_equal(w->a.verb, ACTION_CREATE);
		char entry[600];
		const char *vol = kube_obj_str(w->a.body, "spec.volumeName");
		snprintf(entry, sizeof(entry), "%s %s%s%s", creates[i], w->a.name, vol ? " -> " : "", vol ? vol : "");
		int at = (int)json_array_size(w->log);
		apply(w, &w->a); /* performed; then the process dies before anything else */
		run(w, NULL, NULL);
		if (log_index(w, entry, at) >= 0 || w->conflicts)
			world_fail(w, "after a crash: \"%s\" asked for again", entry);
		check_cycle(w, &cycles[0]);
		world_release(w);
	}
}

/* ---- the state fixtures: SOP_STATE_FIXTURES_OUT=<dir> (tests/fixtures/state/README.md) ---- */

/* The copy cycle's steps a fixture is kept of: the world just before the step, as this release left it. */
static const char *const fixture_phases[][2] = {
	{"CreateNewClaim", "prepare-temp-claim"}, {"StopPod", "stop-replica"},
	{"CreateCopyJob", "copy-job"},           {"DeleteCopyJob", "copy-verified"},
	{"PrebindVolume", "swap-rebind"},        {"Recreate", "recreate-statefulset"},
	{"Finish", "done"},
};

/* A stop_fn that never stops: writes the world of each step in fixture_phases the first time it comes. */
static bool write_fixture(const struct world *w, const void *arg)
{
	for (size_t i = 0; i < NITEMS(fixture_phases); i++) {
		if (!sim_streq(action_name(&w->a), fixture_phases[i][0]))
			continue;
		json_t *objects = json_pack("{s:O*, s:O*, s:O, s:O, s:O, s:O, s:O, s:s}", "statefulSet", w->sts, "backup",
					    w->backup, "pvcs", w->pvcs, "pods", w->pods, "pvs", w->pvs, "jobs", w->jobs,
					    "storageClasses", w->classes, "copyImage", IMAGE);
		state_fixture_write(arg, "resize-copy", fixture_phases[i][1],
				    "resize by copy (rolling, 2 replicas, data 1Gi -> 2Gi): written by "
				    "test_resize_copy_plan's simulation",
				    objects, (long long)w->clock * 1000, &w->a);
		json_decref(objects);
	}
	return false;
}

static void test_write_state_fixtures(void **state)
{
	struct world *w = *state;
	start_cycle(w, &cycles[0]);
	run(w, write_fixture, state_fixture_out());
	check_cycle(w, &cycles[0]);
	world_release(w);
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)

int main(void)
{
	if (state_fixture_out()) {
		const struct CMUnitTest write[] = {TEST(test_write_state_fixtures)};
		return cmocka_run_group_tests(write, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		TEST(test_start),
		TEST(test_cycle),
		TEST(test_swap_order),
		TEST(test_copy_job_shape),
	TEST(test_copy_jobs_take_the_sets_tolerations),
		TEST(test_copy_job_runs_where_the_volume_is),
		TEST(test_block_copy),
		TEST(test_block_refusals),
		TEST(test_pending_rebound_claim_is_nudged),
		TEST(test_rolling_waits_for_ready),
		TEST(test_stale_copy_claim_is_replaced),
		TEST(test_old_volumes_are_labelled),
		TEST(test_failed_copy_restores_the_replica),
		TEST(test_failed_copy_message_recorded_clean),
		TEST(test_failed_second_batch_keeps_the_first),
		TEST(test_abort_while_copying),
		TEST(test_abort_on_a_set_in_orphan_deletion),
		TEST(test_abort_after_the_original_claim_went),
		TEST(test_abort_at_every_step),
		TEST(test_abort_on_the_backup_is_not_forgotten),
		TEST(test_set_created_mid_swap_keeps_the_backup),
		TEST(test_foreign_copy_claim_is_never_deleted),
		TEST(test_keep_old_volumes),
		TEST(test_every_step_twice),
		TEST(test_create_already_done),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
