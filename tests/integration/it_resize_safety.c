/*
 * In-place resize when things go wrong or get delicate: kill -9 of the
 * operator right after each kind of step, then a restart, must end in a
 * completed resize with exactly one StatefulSet and every claim intact; a
 * StatefulSet whose retention policy deletes claims loses none; a volume
 * that needs its file system grown offline gets its pod restarted, one pod
 * at a time, each Ready before the next, and no other pod restarts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/resize/resize_plan.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "db"

static json_t *statefulset(int replicas, const char *policy)
{
	json_t *s = it_json(
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"" SET "\"},"
		"\"spec\":{\"replicas\":%d,\"podManagementPolicy\":\"Parallel\",\"serviceName\":\"" SET "\","
		"\"selector\":{\"matchLabels\":{\"app\":\"" SET "\"}},\"template\":{\"metadata\":{\"labels\":"
		"{\"app\":\"" SET "\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}},"
		"\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":"
		"[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]}}",
		replicas);
	if (policy)
		json_object_set_new(json_object_get(s, "spec"), "persistentVolumeClaimRetentionPolicy",
				    json_pack("{s:s, s:s}", "whenDeleted", policy, "whenScaled", policy));
	return s;
}

static bool str_is(const char *str, const char *want)
{
	return str && !strcmp(str, want);
}

/* Ready pods in ns; *pods_out (may be NULL) receives the pod list. */
static int count_ready(struct kube_client *c, const char *ns, json_t **pods_out)
{
	json_t *pods = NULL;
	struct kube_error err;
	if (kube_list_all(c, &KUBE_PODS, ns, NULL, 0, &pods, NULL, &err) < 0)
		return -1;
	int ready = 0;
	size_t i;
	json_t *o;
	json_array_foreach(pods, i, o) ready += kube_obj_condition(o, "Ready", NULL) &&
						!kube_obj_str(o, "metadata.deletionTimestamp");
	if (pods_out)
		*pods_out = pods;
	else
		json_decref(pods);
	return ready;
}

static void create_and_wait(struct kube_client *admin, const char *ns, json_t *sts, int replicas)
{
	struct kube_error err;
	if (kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	it_wait_ready_and_bound(admin, ns, replicas, replicas, 60000);
}


/* The claims of the set: name -> uid. New object. */
static json_t *claim_uids(struct kube_client *c, const char *ns)
{
	json_t *pvcs = NULL, *out = json_object();
	struct kube_error err;
	if (kube_list_all(c, &KUBE_PVCS, ns, NULL, 0, &pvcs, NULL, &err) < 0)
		fail_msg("list PVCs: %s", err.message);
	size_t i;
	json_t *o;
	json_array_foreach(pvcs, i, o) json_object_set_new(out, kube_obj_str(o, "metadata.name"),
							   json_string(kube_obj_str(o, "metadata.uid")));
	json_decref(pvcs);
	return out;
}

struct done_ctx {
	struct kube_client *c;
	const char *ns;
	int replicas;
};

/* Completed: one StatefulSet, template 2Gi, no state, every claim 2Gi. */
static bool resize_done(void *ctx)
{
	struct done_ctx *dc = ctx;
	json_t *sts = NULL;
	struct kube_error err;
	if (kube_get(dc->c, &KUBE_STATEFULSETS, dc->ns, SET, &sts, &err) < 0)
		return false;
	const char *tmpl = kube_obj_str(json_array_get(json_object_get(json_object_get(sts, "spec"),
								       "volumeClaimTemplates"),
						       0),
					"spec.resources.requests.storage");
	bool done = tmpl && !strcmp(tmpl, "2Gi") &&
		    !json_object_get(json_object_get(json_object_get(sts, "metadata"), "annotations"),
				     ANNOTATION_RESIZE_STATE);
	json_decref(sts);
	for (int i = 0; done && i < dc->replicas; i++) {
		char name[32];
		snprintf(name, sizeof(name), "data-" SET "-%d", i);
		json_t *p = NULL;
		done = kube_get(dc->c, &KUBE_PVCS, dc->ns, name, &p, &err) == 0 &&
		       str_is(kube_obj_str(p, "status.capacity.storage"), "2Gi");
		json_decref(p);
	}
	return done;
}

/* kill -9 right after each kind of step, then a restart: the resize completes, nothing is lost. */
static void test_crash_after_every_step_resumes(void **state)
{
	(void)state;
	/* Every step of a two-replica resize, in order (SetState: start, Saving, Recreating). */
	static const char *const steps[] = {"SetState#1", "PatchPVC#1", "PatchPVC#2", "SetState#2",
					    "Save",       "SetState#3", "OrphanDelete", "Recreate",
					    "RestoreFieldManagers", "DeleteBackup", "Finish"};
	struct kube_client *admin = it_admin_client();
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		char *ns = it_namespace_new(admin, "it-crash");
		json_t *manifest = statefulset(2, NULL);
		create_and_wait(admin, ns, manifest, 2);
		json_t *claims = claim_uids(admin, ns);
		if (it_sh("kubectl annotate statefulset -n %s " SET " resize.stateful-operator.io/data=2Gi >/dev/null",
			  ns))
			fail_msg("annotate failed");

		struct daemon d = daemon_start_operator_crashing(steps[k]);
		int rc = daemon_wait_exit(&d, 60000);
		if (rc != 128 + SIGKILL) {
			char *log = daemon_log(&d);
			fail_msg("step %s: the operator did not kill itself (exit %d); log:\n%s", steps[k], rc, log);
		}
		daemon_cleanup(&d);

		d = daemon_start_operator_crashing(NULL);
		struct done_ctx dc = {admin, ns, 2};
		if (!it_wait(resize_done, &dc, 90000)) {
			char *log = daemon_log(&d);
			fail_msg("after a crash at %s the resize did not complete; log:\n%s", steps[k], log);
		}
		printf("# kill -9 after %s: resumed and completed\n", steps[k]);
		daemon_stop_operator(&d);

		/* Exactly one StatefulSet; every claim the same object as before. */
		json_t *all = NULL;
		struct kube_error err;
		assert_int_equal(kube_list_all(admin, &KUBE_STATEFULSETS, ns, NULL, 0, &all, NULL, &err), 0);
		assert_int_equal(json_array_size(all), 1);
		json_t *now = claim_uids(admin, ns);
		assert_true(json_equal(claims, now));
		assert_int_equal(kube_get(admin, &KUBE_CONFIGMAPS, ns, SET BACKUP_SUFFIX, NULL, &err), KUBE_EHTTP);
		json_decref(now);
		json_decref(all);
		json_decref(claims);
		json_decref(manifest);
		it_namespace_delete(admin, ns);
		free(ns);
	}
	kube_client_free(admin);
}

/* whenDeleted/whenScaled: Delete would delete claims with the set; the orphan cycle keeps every one. */
static void test_retention_policy_delete_loses_no_claim(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-retain");
	json_t *manifest = statefulset(2, "Delete");
	create_and_wait(admin, ns, manifest, 2);
	json_t *claims = claim_uids(admin, ns);
	if (it_sh("kubectl annotate statefulset -n %s " SET " resize.stateful-operator.io/data=2Gi >/dev/null", ns))
		fail_msg("annotate failed");
	struct daemon d = daemon_start_operator_crashing(NULL);
	struct done_ctx dc = {admin, ns, 2};
	if (!it_wait(resize_done, &dc, 90000)) {
		char *log = daemon_log(&d);
		fail_msg("resize did not complete; log:\n%s", log);
	}
	it_sleep_ms(3000); /* give a garbage collector time to do harm, if it would */
	json_t *now = claim_uids(admin, ns);
	assert_true(json_equal(claims, now));
	daemon_stop_operator(&d);
	json_decref(now);
	json_decref(claims);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/*
 * Offline file system expansion on two of three claims (the resizer holds
 * them in FileSystemResizePending until their pod restarts): exactly those
 * two pods restart, never two at once.
 */
static void test_offline_expansion_restarts_only_those_pods_one_at_a_time(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-offline");
	json_t *manifest = statefulset(3, NULL);
	create_and_wait(admin, ns, manifest, 3);
	for (int i = 0; i < 3; i += 2)
		if (it_sh("kubectl annotate pvc -n %s data-" SET "-%d testbed.stateful-operator.io/resize-mode=offline "
			  ">/dev/null",
			  ns, i))
			fail_msg("annotate PVC failed");
	json_t *pods_before = NULL;
	assert_int_equal(count_ready(admin, ns, &pods_before), 3);
	if (it_sh("kubectl annotate statefulset -n %s " SET " resize.stateful-operator.io/data=2Gi >/dev/null", ns))
		fail_msg("annotate failed");

	struct daemon d = daemon_start_operator_crashing(NULL);
	struct done_ctx dc = {admin, ns, 3};
	int min_ready = 3, samples = 0;
	double until = it_now_ms() + 120000;
	while (!resize_done(&dc)) {
		if (it_now_ms() > until) {
			char *log = daemon_log(&d);
			fail_msg("offline resize did not complete in 120 s; log:\n%s", log);
		}
		int r = count_ready(admin, ns, NULL);
		if (r >= 0 && r < min_ready)
			min_ready = r;
		samples++;
		it_sleep_ms(100);
	}
	printf("# %d samples; fewest Ready pods at any sample: %d of 3\n", samples, min_ready);
	assert_true(min_ready >= 2); /* one pod down at a time, at most */

	json_t *pods_after = NULL;
	assert_int_equal(count_ready(admin, ns, &pods_after), 3);
	/*
	 * One at a time, highest ordinal first: the new db-2 was Ready before
	 * the new db-0 was even created (RFC 3339 UTC times compare as text).
	 */
	const char *ready2 = NULL, *created0 = NULL;
	size_t pi;
	json_t *po;
	json_array_foreach(pods_after, pi, po) {
		const char *n = kube_obj_str(po, "metadata.name");
		if (str_is(n, SET "-0"))
			created0 = kube_obj_str(po, "metadata.creationTimestamp");
		if (str_is(n, SET "-2")) {
			size_t ci;
			json_t *c;
			json_array_foreach(json_object_get(json_object_get(po, "status"), "conditions"), ci, c) if (
				str_is(kube_obj_str(c, "type"), "Ready")) ready2 = kube_obj_str(c, "lastTransitionTime");
		}
	}
	assert_non_null(ready2);
	assert_non_null(created0);
	printf("# new %s-2 Ready at %s; new %s-0 created at %s\n", SET, ready2, SET, created0);
	assert_true(strcmp(ready2, created0) <= 0);
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), SET "-%d", i);
		const char *before = NULL, *after = NULL;
		size_t j;
		json_t *o;
		json_array_foreach(pods_before, j, o) if (!strcmp(kube_obj_str(o, "metadata.name"), name)) before =
			kube_obj_str(o, "metadata.uid");
		json_array_foreach(pods_after, j, o) if (!strcmp(kube_obj_str(o, "metadata.name"), name)) after =
			kube_obj_str(o, "metadata.uid");
		assert_non_null(before);
		assert_non_null(after);
		bool restarted = strcmp(before, after) != 0;
		if (restarted != (i != 1))
			fail_msg("pod %s %s, but its claim %s", name, restarted ? "restarted" : "did not restart",
				 i != 1 ? "needed an offline resize" : "did not");
	}
	daemon_stop_operator(&d);
	json_decref(pods_before);
	json_decref(pods_after);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retention_policy_delete_loses_no_claim),
		cmocka_unit_test(test_offline_expansion_restarts_only_those_pods_one_at_a_time),
		cmocka_unit_test(test_crash_after_every_step_resumes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
