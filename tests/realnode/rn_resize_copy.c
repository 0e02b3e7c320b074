/*
 * Resize by copy on the real node, with real bytes: a 3-replica StatefulSet
 * whose pods hold known data (random files, hard links, xattrs, ACLs, a
 * sparse file, a fifo, odd names, owners and modes) and keep writing during
 * the precopy is moved, rolling, from 64Mi ext4 volumes of a class that
 * cannot expand to 128Mi ones. Every replica's tree after its restart must
 * be exactly what it held when its pod stopped (manifests written inside the
 * pods), df must show the new size, and the old volumes must be gone,
 * backing files included. Prints the figures the README quotes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/resize/resize_plan.h"
#include "itest.h"
#include "realnode.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "db"
#define REPLICAS 3
#define DATA_MB 32

/* When (it_now_ms) the first record of name whose path equals value (NULL: is set) arrived; -1 when none. */
static double first_ms(const json_t *records, const char *name, const char *path, const char *value)
{
	size_t i;
	const json_t *r;
	json_array_foreach(records, i, r) {
		const json_t *o = json_object_get(r, "object");
		const char *n = kube_obj_str(o, "metadata.name");
		const char *v = kube_obj_str(o, path);
		if (n && !strcmp(n, name) && v && (!value || !strcmp(v, value)))
			return json_number_value(json_object_get(r, "at_ms"));
	}
	return -1;
}

static bool pv_gone(struct rn_test *t, const char *pv)
{
	json_t *o = it_get(t->admin, &KUBE_PVS, NULL, pv);
	json_decref(o);
	return !o && !rn_backing_file_exists(pv);
}

struct pv_ctx {
	struct rn_test *t;
	char *pvs[REPLICAS];
};

static bool old_pvs_gone(void *ctx)
{
	struct pv_ctx *p = ctx;
	for (int k = 0; k < REPLICAS; k++)
		if (!pv_gone(p->t, p->pvs[k]))
			return false;
	return true;
}

static void test_rolling_copy_keeps_every_byte(void **state)
{
	struct rn_test *t = *state;
	struct kube_error err;
	json_t *sts = rn_workload_set(t, SET, REPLICAS, "local-fixed", "64Mi", DATA_MB);
	it_set_annotation(sts, "stateful-operator.io/precopy", "true");
	if (kube_create(t->admin, &KUBE_STATEFULSETS, t->ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	json_decref(sts);
	rn_wait_workload(t, SET, REPLICAS);

	struct pv_ctx old = {t, {0}};
	char *old_uid[REPLICAS];
	for (int k = 0; k < REPLICAS; k++) {
		char pod[64], claim[64];
		snprintf(pod, sizeof(pod), SET "-%d", k);
		snprintf(claim, sizeof(claim), "data-" SET "-%d", k);
		old_uid[k] = rn_pod_uid(t, pod);
		json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
		old.pvs[k] = xstrdup(kube_obj_str(pvc, "spec.volumeName"));
		json_decref(pvc);
		char *df = rn_wait_report(t, old_uid[k], "df", 1000);
		assert_true(rn_df_bytes(df) <= 64LL << 20);
		free(df);
	}

	rn_start_operator(t);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, t->ns);
	struct it_recorder *pvcs = it_recorder_start(&KUBE_PVCS, t->ns);
	struct rn_sampler sampler;
	rn_sampler_start(&sampler, t->ns, SET, REPLICAS);
	double t0 = it_now_ms();
	rn_annotate(t, "statefulset/" SET, "resize.stateful-operator.io/data=128Mi");
	rn_wait_resize(t, SET, RN_WAIT_MS * 2, &sampler);
	double total_ms = it_now_ms() - t0;
	rn_wait_workload(t, SET, REPLICAS);
	json_t *pod_records = it_recorder_stop(pods);
	json_t *pvc_records = it_recorder_stop(pvcs);

	/* Rolling: one replica down at a time. */
	assert_true(sampler.max_down <= 1);

	for (int k = 0; k < REPLICAS; k++) {
		char pod[64], claim[64], what[160];
		snprintf(pod, sizeof(pod), SET "-%d", k);
		snprintf(claim, sizeof(claim), "data-" SET "-%d", k);
		char *uid = rn_pod_uid(t, pod);
		assert_non_null(uid);
		assert_string_not_equal(uid, old_uid[k]);
		char *before = rn_wait_report(t, old_uid[k], "stop", 1000);
		char *after = rn_wait_report(t, uid, "start", 1000);
		snprintf(what, sizeof(what), "%s: tree at its stop vs. after the copy", pod);
		rn_assert_same_tree(before, after, what);
		/* Every byte: the writer's log is in it, grown during the precopy. */
		assert_non_null(strstr(after, "writer.log"));
		char *df = rn_wait_report(t, uid, "df", 1000);
		int64_t size = rn_df_bytes(df);
		if (size <= 100LL << 20 || size > 128LL << 20)
			fail_msg("%s: df shows %lld bytes, not about 128Mi", pod, (long long)size);
		json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
		assert_string_equal(kube_obj_str(pvc, "status.capacity.storage"), "128Mi");
		assert_string_not_equal(kube_obj_str(pvc, "spec.volumeName"), old.pvs[k]);
		/* Figures: the final copy pass, and from the pod's stop to its claim's swap. */
		char copy_pod_prefix[64];
		snprintf(copy_pod_prefix, sizeof(copy_pod_prefix), SET "-%d-copy", k);
		double stop_ms = first_ms(pod_records, pod, "metadata.deletionTimestamp", NULL);
		const char *new_pv = kube_obj_str(pvc, "spec.volumeName");
		double swap_ms = first_ms(pvc_records, claim, "spec.volumeName", new_pv);
		printf("[ figures ] %s: pod stop -> claim on the new volume %.1f s\n", pod,
		       stop_ms > 0 && swap_ms > 0 ? (swap_ms - stop_ms) / 1000 : -1.0);
		json_decref(pvc);
		free(df);
		free(after);
		free(before);
		free(uid);
	}

	/* Copy pods: bytes and time from creation to Succeeded. */
	size_t i;
	const json_t *r;
	json_t *lives = it_lives(pod_records, LABEL_COPY_OF, SET);
	json_array_foreach(lives, i, r) {
		const char *name = json_string_value(json_object_get(r, "name"));
		double added = json_number_value(json_object_get(r, "added_ms"));
		double done = first_ms(pod_records, name, "status.phase", "Succeeded");
		const json_t *statuses = json_object_get(json_object_get(json_object_get(r, "last"), "status"),
							 "containerStatuses");
		const char *term = kube_obj_str(json_array_get(statuses, 0), "state.terminated.message");
		long long bytes = -1;
		const char *p = term ? strstr(term, "totalBytes=") : NULL;
		if (p)
			bytes = atoll(p + strlen("totalBytes="));
		double secs = done > 0 ? (done - added) / 1000 : -1;
		printf("[ figures ] copy pod %s: tree of %lld bytes (apparent: hard links twice, sparse file whole) in %.1f s "
		       "(pod created -> Succeeded) = %.1f MB/s\n",
		       name,
		       bytes, secs, bytes > 0 && secs > 0 ? (double)bytes / 1e6 / secs : -1.0);
	}
	json_decref(lives);
	printf("[ figures ] rolling copy of %d replicas x %d MB: %.1f s in all; replica-seconds not Ready %.1f\n",
	       REPLICAS, DATA_MB, total_ms / 1000, sampler.not_ready_s);

	/* The old volumes: deleted once the resize is over, backing files too. */
	if (!it_wait_every(old_pvs_gone, &old, 60000, 500))
		fail_msg("old PVs or their backing files still there a minute after the resize");
	for (int k = 0; k < REPLICAS; k++) {
		free(old.pvs[k]);
		free(old_uid[k]);
	}
	json_decref(pod_records);
	json_decref(pvc_records);
}

struct phase_ctx {
	struct rn_test *t;
	const char *phase;
};

static bool phase_is(void *ctx)
{
	struct phase_ctx *p = ctx;
	char *phase = rn_resize_phase(p->t, SET);
	bool is = phase && !strcmp(phase, p->phase);
	free(phase);
	return is;
}

/*
 * Replica 0 is back on the volume it had (same PV) and holds what it held
 * when its pod stopped; its claim still asks for size.
 */
static void expect_back_on_its_volume(struct rn_test *t, const char *old_uid, const char *old_pv, const char *size)
{
	rn_wait_workload(t, SET, 1);
	char *uid = rn_pod_uid(t, SET "-0");
	char *pv = rn_claim_volume(t, "data-" SET "-0");
	assert_string_not_equal(uid, old_uid); /* it was stopped for the copy */
	assert_string_equal(pv, old_pv);
	char *before = rn_wait_report(t, old_uid, "stop", 1000);
	char *after = rn_wait_report(t, uid, "start", 1000);
	rn_assert_same_tree(before, after, SET "-0 back on its volume");
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-" SET "-0");
	assert_string_equal(kube_obj_str(pvc, "spec.resources.requests.storage"), size);
	json_decref(pvc);
	json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	const json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	assert_string_equal(kube_obj_str(tmpl, "spec.resources.requests.storage"), size);
	json_decref(sts);
	free(after);
	free(before);
	free(pv);
	free(uid);
}

/*
 * One replica holding data_mb on 64Mi, Ready; the operator started and the
 * annotations (kubectl annotate arguments) set. Its pod UID and PV before (new strings).
 */
static void one_replica_then_annotate(struct rn_test *t, int data_mb, const char *annotations, char **old_uid,
				      char **old_pv)
{
	json_t *sts = rn_workload_set(t, SET, 1, "local-fixed", "64Mi", data_mb);
	rn_create_workload(t, sts, 1);
	json_decref(sts);
	*old_uid = rn_pod_uid(t, SET "-0");
	*old_pv = rn_claim_volume(t, "data-" SET "-0");
	rn_start_operator(t);
	rn_annotate(t, "statefulset/" SET, annotations);
}

/* A shrink below what the volume holds: the copy refuses before writing; the replica keeps its data. */
static void test_shrink_that_does_not_fit_is_refused(void **state)
{
	struct rn_test *t = *state;
	char *old_uid, *old_pv;
	one_replica_then_annotate(t, 32,
				  "stateful-operator.io/allow-shrink=true stateful-operator.io/resize-strategy=copy "
				  "resize.stateful-operator.io/data=16Mi",
				  &old_uid, &old_pv);
	struct phase_ctx p = {t, "Failed"};
	if (!it_wait_every(phase_is, &p, RN_WAIT_MS, 500))
		fail_msg("the shrink did not fail");
	json_t *set = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	const char *status = it_annotation(set, ANNOTATION_RESIZE_STATUS);
	printf("[ info ] resize-status after the shrink: %s\n", status ? status : "(none)");
	if (!status || !strstr(status, "fit"))
		fail_msg("resize-status does not say the data does not fit: %s", status ? status : "(none)");
	json_decref(set);
	expect_back_on_its_volume(t, old_uid, old_pv, "64Mi");
	free(old_pv);
	free(old_uid);
}

struct job_ctx {
	struct rn_test *t;
	const char *name;
};

static bool job_exists(void *ctx)
{
	struct job_ctx *j = ctx;
	json_t *job = it_get(j->t->admin, &KUBE_JOBS, j->t->ns, j->name);
	json_decref(job);
	return job != NULL;
}

/* Abort while the replica's copy runs (the set is gone: the abort goes on its saved copy). */
static void test_abort_mid_copy_returns_the_replica(void **state)
{
	struct rn_test *t = *state;
	char *old_uid, *old_pv;
	one_replica_then_annotate(t, 40, "resize.stateful-operator.io/data=128Mi", &old_uid, &old_pv);
	struct job_ctx j = {t, SET "-0-copy"};
	if (!it_wait_every(job_exists, &j, RN_WAIT_MS, 50))
		fail_msg("the copy Job never started");
	rn_annotate(t, "configmap/" SET BACKUP_SUFFIX, "stateful-operator.io/resize-abort=true");
	rn_wait_resize(t, SET, RN_WAIT_MS, NULL);
	expect_back_on_its_volume(t, old_uid, old_pv, "64Mi");
	free(old_pv);
	free(old_uid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rolling_copy_keeps_every_byte, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_shrink_that_does_not_fit_is_refused, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_abort_mid_copy_returns_the_replica, rn_setup, rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
