/*
 * Resize by copy on the test bed (copy Jobs succeed or fail through kwok):
 * rolling on the non-expandable class with at most one replica down at any
 * sampled moment, every claim name kept and bound to a new PV of the target
 * size, old PVs Retained until the end and then deleted; offline mode;
 * shrink; StorageClass change; abort half-way; a failed copy; a StatefulSet
 * whose retention policy deletes claims.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "controllers/resize/resize_plan.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "db"

static bool str_is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

static json_t *statefulset(int replicas, const char *size, const char *cls, const char *policy)
{
	json_t *s = it_json(
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"" SET "\"},"
		"\"spec\":{\"replicas\":%d,\"serviceName\":\"" SET "\","
		"\"selector\":{\"matchLabels\":{\"app\":\"" SET "\"}},\"template\":{\"metadata\":{\"labels\":"
		"{\"app\":\"" SET "\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}},"
		"\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\",\"labels\":{\"tier\":\"db\"}},"
		"\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"%s\","
		"\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}]}}",
		replicas, cls, size);
	if (policy)
		json_object_set_new(json_object_get(s, "spec"), "persistentVolumeClaimRetentionPolicy",
				    json_pack("{s:s, s:s}", "whenDeleted", policy, "whenScaled", policy));
	return s;
}

static void create_and_wait(struct kube_client *admin, const char *ns, json_t *sts, int replicas)
{
	struct kube_error err;
	if (kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	it_wait_ready_and_bound(admin, ns, replicas, replicas, 60000);
}

static void annotate(const char *ns, const char *what, const char *kv)
{
	if (it_sh("kubectl annotate --overwrite -n %s %s '%s' >/dev/null", ns, what, kv))
		fail_msg("kubectl annotate %s %s failed", what, kv);
}

/* claim name -> {"uid", "pv"} of the set's claims. New object. */
static json_t *claims_of(struct kube_client *c, const char *ns)
{
	json_t *pvcs = NULL, *out = json_object();
	struct kube_error err;
	if (kube_list_all(c, &KUBE_PVCS, ns, NULL, 0, &pvcs, NULL, &err) < 0)
		fail_msg("list PVCs: %s", err.message);
	size_t i;
	json_t *o;
	json_array_foreach(pvcs, i, o) {
		json_object_set_new(out, kube_obj_str(o, "metadata.name"),
				    json_pack("{s:s, s:s?, s:s?, s:s?}", "uid", kube_obj_str(o, "metadata.uid"), "pv",
					      kube_obj_str(o, "spec.volumeName"), "phase", kube_obj_str(o, "status.phase"),
					      "class", kube_obj_str(o, "spec.storageClassName")));
	}
	json_decref(pvcs);
	return out;
}

static json_t *get(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *name)
{
	json_t *o = NULL;
	struct kube_error err;
	if (kube_get(c, r, ns, name, &o, &err) < 0)
		return NULL;
	return o;
}

/* ---- a sampler: pods and PVs every 100 ms while the resize runs ---- */

struct sampler {
	const char *ns;
	int replicas;
	json_t *old_pvs; /* claim -> old PV name (borrowed by the thread, read-only) */
	atomic_bool stop;
	int max_down;          /* most replicas not Ready at one sample */
	int samples;
	int retained_seen;     /* old PVs seen Released and Retain while not bound */
	char violation[512];   /* an old PV seen without Retain while its claim had left it */
	pthread_t thread;
};

static void sample_once(struct sampler *s, struct kube_client *c)
{
	json_t *pods = NULL, *pvs = NULL;
	struct kube_error err;
	if (kube_list_all(c, &KUBE_PODS, s->ns, NULL, 0, &pods, NULL, &err) < 0 ||
	    kube_list_all(c, &KUBE_PVS, NULL, NULL, 0, &pvs, NULL, &err) < 0) {
		json_decref(pods);
		return;
	}
	int down = 0;
	for (int k = 0; k < s->replicas; k++) {
		char name[32];
		snprintf(name, sizeof(name), SET "-%d", k);
		bool ready = false;
		size_t i;
		json_t *p;
		json_array_foreach(pods, i, p) if (str_is(kube_obj_str(p, "metadata.name"), name)) ready =
			kube_obj_condition(p, "Ready", NULL) && !kube_obj_str(p, "metadata.deletionTimestamp");
		down += !ready;
	}
	if (down > s->max_down)
		s->max_down = down;
	const char *claim;
	json_t *pv_name;
	json_object_foreach(s->old_pvs, claim, pv_name) {
		size_t i;
		json_t *pv;
		json_array_foreach(pvs, i, pv) {
			if (!str_is(kube_obj_str(pv, "metadata.name"), json_string_value(pv_name)))
				continue;
			const char *phase = kube_obj_str(pv, "status.phase");
			const char *policy = kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy");
			bool left = !str_is(phase, "Bound");
			if (left && str_is(policy, "Retain"))
				s->retained_seen++;
			/* Cleaning restores Delete once the copy is over; before that, Retain. */
			if (left && !str_is(policy, "Retain") && !s->violation[0] &&
			    !json_object_get(json_object_get(json_object_get(pv, "metadata"), "annotations"),
					     ANNOTATION_RECLAIM_POLICY) &&
			    !str_is(phase, "Released"))
				snprintf(s->violation, sizeof(s->violation), "old PV %s of %s is %s with policy %s",
					 json_string_value(pv_name), claim, phase ? phase : "?", policy ? policy : "?");
		}
	}
	s->samples++;
	json_decref(pods);
	json_decref(pvs);
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	struct kube_client *c = it_admin_client();
	while (!atomic_load(&s->stop)) {
		sample_once(s, c);
		it_sleep_ms(100);
	}
	kube_client_free(c);
	return NULL;
}

static void sampler_start(struct sampler *s, const char *ns, int replicas, json_t *old_pvs)
{
	memset(s, 0, sizeof(*s));
	s->ns = ns;
	s->replicas = replicas;
	s->old_pvs = old_pvs;
	if (pthread_create(&s->thread, NULL, sampler_main, s))
		fail_msg("pthread_create");
}

static void sampler_stop(struct sampler *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
}

/* ---- waiting for the end ---- */

struct done_ctx {
	struct kube_client *c;
	const char *ns;
};

/* The resize is over: no state annotation on the StatefulSet, no saved copy. */
static bool resize_over(void *ctx)
{
	struct done_ctx *dc = ctx;
	json_t *sts = get(dc->c, &KUBE_STATEFULSETS, dc->ns, SET);
	json_t *cm = get(dc->c, &KUBE_CONFIGMAPS, dc->ns, SET BACKUP_SUFFIX);
	bool over = sts && !cm &&
		    !json_object_get(json_object_get(json_object_get(sts, "metadata"), "annotations"),
				     ANNOTATION_RESIZE_STATE);
	json_decref(cm);
	json_decref(sts);
	return over;
}

static const char *state_phase(struct kube_client *c, const char *ns, char *buf, size_t len)
{
	json_t *sts = get(c, &KUBE_STATEFULSETS, ns, SET);
	const char *text = json_string_value(
		json_object_get(json_object_get(json_object_get(sts, "metadata"), "annotations"), ANNOTATION_RESIZE_STATE));
	json_t *st = text ? json_loads(text, 0, NULL) : NULL;
	snprintf(buf, len, "%s", st ? json_string_value(json_object_get(st, "phase")) : "");
	json_decref(st);
	json_decref(sts);
	return buf;
}

static bool resize_started(void *ctx)
{
	struct done_ctx *dc = ctx;
	json_t *ev = it_events(dc->c, dc->ns, "reason=ResizeStarted");
	bool started = json_array_size(ev) > 0;
	json_decref(ev);
	return started;
}

static void wait_over(struct kube_client *admin, const char *ns, struct daemon *d, long timeout_ms)
{
	struct done_ctx dc = {admin, ns};
	if (!it_wait(resize_started, &dc, 30000)) {
		char *log = daemon_log(d);
		fail_msg("the resize did not start; operator log:\n%s", log);
	}
	if (!it_wait(resize_over, &dc, timeout_ms)) {
		char *log = daemon_log(d);
		it_sh("kubectl get -n %s sts,pods,pvc,jobs,cm -o wide >&2; kubectl get pv >&2; "
		      "kubectl get sts -n %s " SET " -o jsonpath='{.metadata.annotations}' >&2",
		      ns, ns);
		fail_msg("the resize did not end; operator log:\n%s", log);
	}
}

static const char *template_field(const json_t *sts, const char *path)
{
	return kube_obj_str(json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0),
			    path);
}

/* No Job, no claim named *-copy, no saved copy left in ns. */
static void expect_nothing_left(struct kube_client *admin, const char *ns)
{
	json_t *jobs = NULL, *pvcs = NULL;
	struct kube_error err;
	assert_int_equal(kube_list_all(admin, &KUBE_JOBS, ns, NULL, 0, &jobs, NULL, &err), 0);
	assert_int_equal(kube_list_all(admin, &KUBE_PVCS, ns, NULL, 0, &pvcs, NULL, &err), 0);
	size_t i;
	json_t *o;
	json_array_foreach(jobs, i, o) if (!kube_obj_str(o, "metadata.deletionTimestamp"))
		fail_msg("Job %s left behind", kube_obj_str(o, "metadata.name"));
	json_array_foreach(pvcs, i, o) {
		const char *n = kube_obj_str(o, "metadata.name");
		if (strstr(n, "-copy") && !kube_obj_str(o, "metadata.deletionTimestamp"))
			fail_msg("claim %s left behind", n);
	}
	json_decref(pvcs);
	json_decref(jobs);
}

struct gone_ctx {
	struct kube_client *c;
	json_t *names; /* claim -> PV name */
};

static bool pvs_gone(void *ctx)
{
	struct gone_ctx *g = ctx;
	const char *k;
	json_t *v;
	json_object_foreach(g->names, k, v) {
		json_t *pv = get(g->c, &KUBE_PVS, NULL, json_string_value(v));
		json_decref(pv);
		if (pv)
			return false;
	}
	return true;
}

/*
 * After a completed copy resize of claims (the "before" map): each claim
 * has the same name, a new UID, is Bound to a new PV of size and class;
 * each old PV is gone.
 */
static void expect_moved(struct kube_client *admin, const char *ns, const json_t *before, const char *size,
			 const char *cls)
{
	json_t *after = claims_of(admin, ns);
	const char *name;
	json_t *b;
	json_object_foreach((json_t *)before, name, b) {
		json_t *a = json_object_get(after, name);
		if (!a)
			fail_msg("claim %s is gone", name);
		if (!str_is(json_string_value(json_object_get(a, "phase")), "Bound"))
			fail_msg("claim %s is not Bound", name);
		const char *old_pv = json_string_value(json_object_get(b, "pv"));
		const char *new_pv = json_string_value(json_object_get(a, "pv"));
		if (str_is(new_pv, old_pv))
			fail_msg("claim %s still on its old PV %s", name, old_pv);
		json_t *pv = get(admin, &KUBE_PVS, NULL, new_pv);
		if (!pv)
			fail_msg("PV %s of %s does not exist", new_pv, name);
		if (!str_is(kube_obj_str(pv, "spec.capacity.storage"), size) ||
		    !str_is(kube_obj_str(pv, "spec.storageClassName"), cls) ||
		    !str_is(kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy"), "Delete"))
			fail_msg("PV %s of %s: capacity %s, class %s, policy %s; want %s, %s, Delete", new_pv, name,
				 kube_obj_str(pv, "spec.capacity.storage"), kube_obj_str(pv, "spec.storageClassName"),
				 kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy"), size, cls);
		json_t *pvc = get(admin, &KUBE_PVCS, ns, name);
		if (!str_is(json_string_value(json_object_get(json_object_get(json_object_get(pvc, "metadata"), "labels"),
							       "tier")),
			    "db"))
			fail_msg("claim %s lost its labels", name);
		json_decref(pvc);
		json_decref(pv);
	}
	json_decref(after);
	/* The old PVs go at the end (reclaimed by the PV controller once their policy is restored). */
	json_t *old = json_object();
	json_object_foreach((json_t *)before, name, b) json_object_set(old, name, json_object_get(b, "pv"));
	struct gone_ctx g = {admin, old};
	if (!it_wait(pvs_gone, &g, 60000))
		fail_msg("old PVs were not deleted at the end");
	json_decref(old);
}

/* The operator of the running test: a test that fails leaves it to the teardown to stop. */
static pid_t running_operator;

static struct daemon operator_start(const char *crash_after)
{
	struct daemon d = daemon_start_operator_crashing(crash_after);
	running_operator = d.pid;
	return d;
}

/* So that a failed test cannot leave a second operator acting during the next ones. */
static int stop_leftover_operator(void **state)
{
	(void)state;
	if (running_operator > 0 && kill(running_operator, 0) == 0) {
		kill(running_operator, SIGKILL);
		waitpid(running_operator, NULL, 0);
	}
	running_operator = 0;
	return 0;
}

static json_t *old_pv_map(const json_t *claims)
{
	json_t *m = json_object();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)claims, k, v) json_object_set(m, k, json_object_get(v, "pv"));
	return m;
}

/* ---- the tests ---- */

static void test_rolling_copy_on_fixed_class(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-copy");
	json_t *manifest = statefulset(3, "1Gi", "fixed", NULL);
	create_and_wait(admin, ns, manifest, 3);
	json_t *before = claims_of(admin, ns);
	json_t *old = old_pv_map(before);
	struct daemon d = operator_start(NULL);
	struct sampler s;
	sampler_start(&s, ns, 3, old);
	double t0 = it_now_ms();
	/* What a copy Job's script leaves as its termination message (kwok plays the Job). */
	annotate(ns, "statefulset/" SET,
		 "stateful-operator.io/copy-pod-annotations={\"testbed.stateful-operator.io/message\": "
		 "\"SOP-PROGRESS bytes=1048576 files=3 totalBytes=1048576 totalFiles=3\\nSOP-RESULT ok\"}");
	annotate(ns, "statefulset/" SET, "resize.stateful-operator.io/data=2Gi");
	wait_over(admin, ns, &d, 240000);
	double took = it_now_ms() - t0;
	sampler_stop(&s);
	printf("# rolling copy of 3 replicas: %.1f s, %d samples, at most %d replica(s) down, old PVs seen "
	       "Retained %d times\n",
	       took / 1000, s.samples, s.max_down, s.retained_seen);
	if (s.max_down > 1)
		fail_msg("%d replicas were down at once (rolling allows 1)", s.max_down);
	assert_int_equal(s.max_down, 1); /* a replica did go down: its data was copied offline */
	if (s.violation[0])
		fail_msg("%s", s.violation);
	assert_true(s.retained_seen > 0);

	json_t *sts = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_non_null(sts);
	assert_string_equal(template_field(sts, "spec.resources.requests.storage"), "2Gi");
	assert_string_equal(template_field(sts, "spec.storageClassName"), "fixed");
	json_decref(sts);
	it_wait_ready_and_bound(admin, ns, 3, 3, 30000);
	expect_moved(admin, ns, before, "2Gi", "fixed");
	expect_nothing_left(admin, ns);
	if (!it_wait_event(admin, ns, "ResizeCompleted", NULL, 30000))
		fail_msg("no ResizeCompleted Event within 30 s of the completed resize");
	json_t *ev = it_events(admin, ns, "reason=ResizeCompleted");
	assert_int_equal(json_array_size(ev), 1);
	json_decref(ev);
	/* Each replica's verified copy, with the totals its Job reported. */
	ev = it_events(admin, ns, "reason=CopyVerified");
	assert_int_equal(json_array_size(ev), 3);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) if (!strstr(kube_obj_str(e, "message"), "(1048576 bytes in 3 files)"))
		fail_msg("CopyVerified without the Job's totals: %s", kube_obj_str(e, "message"));
	json_decref(ev);

	daemon_stop_operator(&d);
	json_decref(old);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

static void test_offline_copy(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-offline");
	json_t *manifest = statefulset(2, "1Gi", "fixed", NULL);
	create_and_wait(admin, ns, manifest, 2);
	json_t *before = claims_of(admin, ns);
	json_t *old = old_pv_map(before);
	struct daemon d = operator_start(NULL);
	struct sampler s;
	sampler_start(&s, ns, 2, old);
	annotate(ns, "statefulset/" SET, "stateful-operator.io/copy-mode=offline");
	annotate(ns, "statefulset/" SET, "resize.stateful-operator.io/data=3Gi");
	wait_over(admin, ns, &d, 180000);
	sampler_stop(&s);
	printf("# offline copy of 2 replicas: at most %d down at once\n", s.max_down);
	assert_int_equal(s.max_down, 2); /* both down together */
	it_wait_ready_and_bound(admin, ns, 2, 2, 30000);
	expect_moved(admin, ns, before, "3Gi", "fixed");
	expect_nothing_left(admin, ns);
	daemon_stop_operator(&d);
	json_decref(old);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

static void test_shrink_with_allow_shrink(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-shrink");
	json_t *manifest = statefulset(2, "2Gi", "expandable", NULL);
	create_and_wait(admin, ns, manifest, 2);
	json_t *before = claims_of(admin, ns);
	struct daemon d = operator_start(NULL);
	annotate(ns, "statefulset/" SET, "stateful-operator.io/resize-strategy=copy");
	annotate(ns, "statefulset/" SET, "stateful-operator.io/allow-shrink=true");
	annotate(ns, "statefulset/" SET, "resize.stateful-operator.io/data=1Gi");
	wait_over(admin, ns, &d, 180000);
	json_t *sts = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_string_equal(template_field(sts, "spec.resources.requests.storage"), "1Gi");
	json_decref(sts);
	it_wait_ready_and_bound(admin, ns, 2, 2, 30000);
	expect_moved(admin, ns, before, "1Gi", "expandable");
	daemon_stop_operator(&d);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/* Also precopy: the first pass runs next to the live pod. */
static void test_class_change_fixed_to_expandable(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-class");
	json_t *manifest = statefulset(2, "1Gi", "fixed", NULL);
	create_and_wait(admin, ns, manifest, 2);
	json_t *before = claims_of(admin, ns);
	struct daemon d = operator_start(NULL);
	annotate(ns, "statefulset/" SET, "stateful-operator.io/precopy=true");
	annotate(ns, "statefulset/" SET, "storage-class.stateful-operator.io/data=expandable");
	wait_over(admin, ns, &d, 180000);
	/* precopy: a first pass while the pod ran, then the delta pass (with verification) once it stopped. */
	json_t *started = it_events(admin, ns, "reason=CopyStarted");
	int precopies = 0, deltas = 0;
	size_t i;
	json_t *e;
	json_array_foreach(started, i, e) {
		const char *m = kube_obj_str(e, "message");
		precopies += m && strstr(m, "(pass precopy)") != NULL;
		deltas += m && strstr(m, "(pass delta)") != NULL;
	}
	json_decref(started);
	assert_int_equal(precopies, 2);
	assert_int_equal(deltas, 2);
	json_t *sts = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_string_equal(template_field(sts, "spec.storageClassName"), "expandable");
	assert_string_equal(template_field(sts, "spec.resources.requests.storage"), "1Gi");
	json_decref(sts);
	it_wait_ready_and_bound(admin, ns, 2, 2, 30000);
	expect_moved(admin, ns, before, "1Gi", "expandable");
	json_t *after = claims_of(admin, ns);
	assert_string_equal(json_string_value(json_object_get(json_object_get(after, "data-" SET "-0"), "class")),
			    "expandable");
	json_decref(after);
	daemon_stop_operator(&d);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

struct job_ctx {
	struct kube_client *c;
	const char *ns;
	const char *name;
};

static bool job_exists(void *ctx)
{
	struct job_ctx *jc = ctx;
	json_t *job = get(jc->c, &KUBE_JOBS, jc->ns, jc->name);
	json_decref(job);
	return job != NULL;
}

/* Abort while replica 1's copy runs (the StatefulSet is gone: abort goes on the saved copy). */
static void test_abort_returns_replica_to_old_volume(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-abort");
	json_t *manifest = statefulset(2, "1Gi", "fixed", NULL);
	create_and_wait(admin, ns, manifest, 2);
	json_t *before = claims_of(admin, ns);
	struct daemon d = operator_start(NULL);
	annotate(ns, "statefulset/" SET,
		 "stateful-operator.io/copy-pod-annotations={\"testbed.stateful-operator.io/delay\": \"3s\"}");
	annotate(ns, "statefulset/" SET, "resize.stateful-operator.io/data=2Gi");
	/* Replica 1 is copied (3 s), then replica 0's copy starts: abort it. */
	struct job_ctx jc = {admin, ns, SET "-0-copy"};
	if (!it_wait(job_exists, &jc, 120000))
		fail_msg("the copy Job of replica 0 never started");
	annotate(ns, "configmap/" SET BACKUP_SUFFIX, "stateful-operator.io/resize-abort=true");
	wait_over(admin, ns, &d, 120000);
	it_wait_ready_and_bound(admin, ns, 2, 2, 30000);

	json_t *after = claims_of(admin, ns);
	/* Replica 0: the same claim object on its old volume; replica 1 had moved and keeps its new one. */
	json_t *b0 = json_object_get(before, "data-" SET "-0"), *a0 = json_object_get(after, "data-" SET "-0");
	assert_string_equal(json_string_value(json_object_get(a0, "pv")), json_string_value(json_object_get(b0, "pv")));
	json_t *b1 = json_object_get(before, "data-" SET "-1"), *a1 = json_object_get(after, "data-" SET "-1");
	assert_string_not_equal(json_string_value(json_object_get(a1, "pv")), json_string_value(json_object_get(b1, "pv")));
	json_t *pv0 = get(admin, &KUBE_PVS, NULL, json_string_value(json_object_get(a0, "pv")));
	assert_string_equal(kube_obj_str(pv0, "spec.persistentVolumeReclaimPolicy"), "Delete");
	json_decref(pv0);
	json_t *sts = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_string_equal(template_field(sts, "spec.resources.requests.storage"), "1Gi"); /* unchanged */
	/* The abort asked on the saved copy stays asked on the StatefulSet: nothing starts again. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(sts, "metadata"),
									       "annotations"),
							       "stateful-operator.io/resize-abort")),
			    "true");
	json_decref(sts);
	it_sleep_ms(3000);
	expect_nothing_left(admin, ns);
	json_t *ev = it_events(admin, ns, "reason=ResizeAborted");
	assert_true(json_array_size(ev) >= 1);
	json_decref(ev);
	ev = it_events(admin, ns, "reason=ResizeStarted");
	assert_int_equal(json_array_size(ev), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 0), "count")), 1);
	json_decref(ev);

	daemon_stop_operator(&d);
	json_decref(after);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

struct failed_ctx {
	struct kube_client *c;
	const char *ns;
};

static bool resize_failed(void *ctx)
{
	struct failed_ctx *fc = ctx;
	char phase[32];
	return !strcmp(state_phase(fc->c, fc->ns, phase, sizeof(phase)), "Failed");
}

/* Invariant 2: the copy counts only after verification passed; a failed Job leaves the original bound. */
static void test_failed_copy_keeps_original(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-copyfail");
	json_t *manifest = statefulset(2, "1Gi", "fixed", NULL);
	create_and_wait(admin, ns, manifest, 2);
	json_t *before = claims_of(admin, ns);
	struct daemon d = operator_start(NULL);
	annotate(ns, "statefulset/" SET,
		 "stateful-operator.io/copy-pod-annotations={\"testbed.stateful-operator.io/outcome\": \"fail\", "
		 "\"testbed.stateful-operator.io/message\": \"SOP-RESULT fail verification found differences\"}");
	annotate(ns, "statefulset/" SET, "resize.stateful-operator.io/data=2Gi");
	struct failed_ctx fc = {admin, ns};
	if (!it_wait(resize_failed, &fc, 180000)) {
		char *log = daemon_log(&d);
		fail_msg("the resize did not fail; log:\n%s", log);
	}
	it_wait_ready_and_bound(admin, ns, 2, 2, 30000);
	/* The very same claim objects, on their original volumes. */
	json_t *after = claims_of(admin, ns);
	assert_true(json_equal(before, after));
	json_t *sts = get(admin, &KUBE_STATEFULSETS, ns, SET);
	const char *status = json_string_value(
		json_object_get(json_object_get(json_object_get(sts, "metadata"), "annotations"), ANNOTATION_RESIZE_STATUS));
	if (!status || !strstr(status, "verification found differences"))
		fail_msg("resize-status does not report the failure: %s", status ? status : "(none)");
	assert_string_equal(template_field(sts, "spec.resources.requests.storage"), "1Gi");
	json_decref(sts);
	if (!it_wait_event(admin, ns, "ResizeFailed", NULL, 30000))
		fail_msg("no ResizeFailed Event within 30 s of the Failed state");
	assert_int_equal(it_event_count(admin, ns, "ResizeFailed", NULL), 1);
	/* The old PVs went back to their own reclaim policy. */
	const char *k;
	json_t *v;
	json_object_foreach(after, k, v) {
		json_t *pv = get(admin, &KUBE_PVS, NULL, json_string_value(json_object_get(v, "pv")));
		assert_string_equal(kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy"), "Delete");
		json_decref(pv);
	}
	json_t *pvcs = NULL;
	struct kube_error err;
	assert_int_equal(kube_list_all(admin, &KUBE_PVCS, ns, NULL, 0, &pvcs, NULL, &err), 0);
	assert_int_equal(json_array_size(pvcs), 2); /* no new claim left */
	json_decref(pvcs);

	daemon_stop_operator(&d);
	json_decref(after);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/* Invariant 3: whenScaled/whenDeleted: Delete; the operator never scales, it orphan-deletes. */
static void test_retention_policy_delete_loses_no_claim(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-copyretain");
	json_t *manifest = statefulset(2, "1Gi", "fixed", "Delete");
	create_and_wait(admin, ns, manifest, 2);
	json_t *before = claims_of(admin, ns);
	struct daemon d = operator_start(NULL);
	annotate(ns, "statefulset/" SET, "resize.stateful-operator.io/data=2Gi");
	wait_over(admin, ns, &d, 180000);
	it_wait_ready_and_bound(admin, ns, 2, 2, 30000);
	expect_moved(admin, ns, before, "2Gi", "fixed");
	json_t *sts = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(sts, "spec"), "replicas")), 2);
	assert_string_equal(kube_obj_str(sts, "spec.persistentVolumeClaimRetentionPolicy.whenScaled"), "Delete");
	json_decref(sts);
	daemon_stop_operator(&d);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rolling_copy_on_fixed_class, stop_leftover_operator),
		cmocka_unit_test_teardown(test_offline_copy, stop_leftover_operator),
		cmocka_unit_test_teardown(test_shrink_with_allow_shrink, stop_leftover_operator),
		cmocka_unit_test_teardown(test_class_change_fixed_to_expandable, stop_leftover_operator),
		cmocka_unit_test_teardown(test_abort_returns_replica_to_old_volume, stop_leftover_operator),
		cmocka_unit_test_teardown(test_failed_copy_keeps_original, stop_leftover_operator),
		cmocka_unit_test_teardown(test_retention_policy_delete_loses_no_claim, stop_leftover_operator),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
