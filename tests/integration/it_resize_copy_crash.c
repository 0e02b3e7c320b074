/*
 * Safety invariant 4 for the copy strategy: kill -9 of the operator right
 * after every step of a copy resize, one after the other, each followed by
 * a restart: the resize still completes, with every claim under its name on
 * a new volume, exactly one StatefulSet, and nothing left behind.
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
#include "controllers/state_seal.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "db"

static bool str_is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

static json_t *get(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *name)
{
	json_t *o = NULL;
	struct kube_error err;
	return kube_get(c, r, ns, name, &o, &err) < 0 ? NULL : o;
}

struct done_ctx {
	struct kube_client *c;
	const char *ns;
	const char *old_pv;
};

/* Done: the StatefulSet has the 2Gi template and no state; the claim is Bound to a new 2Gi PV; the old PV is gone. */
static bool copy_done(void *ctx)
{
	struct done_ctx *dc = ctx;
	json_t *sts = get(dc->c, &KUBE_STATEFULSETS, dc->ns, SET);
	json_t *pvc = get(dc->c, &KUBE_PVCS, dc->ns, "data-" SET "-0");
	json_t *old = get(dc->c, &KUBE_PVS, NULL, dc->old_pv);
	const char *tmpl = kube_obj_str(
		json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0),
		"spec.resources.requests.storage");
	bool done = sts && str_is(tmpl, "2Gi") &&
		    !json_object_get(json_object_get(json_object_get(sts, "metadata"), "annotations"),
				     ANNOTATION_RESIZE_STATE) &&
		    str_is(kube_obj_str(pvc, "status.phase"), "Bound") &&
		    !str_is(kube_obj_str(pvc, "spec.volumeName"), dc->old_pv) &&
		    str_is(kube_obj_str(pvc, "status.capacity.storage"), "2Gi") && !old;
	json_decref(old);
	json_decref(pvc);
	json_decref(sts);
	return done;
}


/* A 1-replica set SET of 1Gi in class "fixed" in ns, Ready and Bound; its claim's PV (new string). */
static char *create_set(struct kube_client *admin, const char *ns)
{
	json_t *manifest = it_json(
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"" SET "\"},"
		"\"spec\":{\"replicas\":1,\"serviceName\":\"" SET "\",\"selector\":{\"matchLabels\":{\"app\":\"" SET "\"}},"
		"\"template\":{\"metadata\":{\"labels\":{\"app\":\"" SET "\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"image\":\"pause\"}]}},\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},\"spec\":{"
		"\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"fixed\",\"resources\":{\"requests\":"
		"{\"storage\":\"1Gi\"}}}}]}}");
	struct kube_error err;
	if (kube_create(admin, &KUBE_STATEFULSETS, ns, manifest, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	json_decref(manifest);
	it_wait_ready_and_bound(admin, ns, 1, 1, 60000);
	json_t *pvc = get(admin, &KUBE_PVCS, ns, "data-" SET "-0");
	char *pv = xstrdup(kube_obj_str(pvc, "spec.volumeName"));
	json_decref(pvc);
	if (it_sh("kubectl annotate statefulset -n %s " SET " resize.stateful-operator.io/data=2Gi >/dev/null", ns))
		fail_msg("annotate failed");
	return pv;
}

static void test_crash_after_every_copy_step_resumes(void **state)
{
	(void)state;
	/*
	 * The steps of a one-replica rolling copy, in the order they happen;
	 * each process dies right after the first such step it performs.
	 */
	static const char *const steps[] = {
		"SetState",             /* the resize starts */
		"SetState",             /* the batch: replica 0 */
		"CreateNewClaim",       /* data-db-0-copy, 2Gi */
		"SetState",             /* -> Stop */
		"Save",                 /* the StatefulSet in db-sts-backup */
		"OrphanDelete",
		"StopPod",
		"SetState",             /* -> Copy (on the ConfigMap) */
		"CreateCopyJob",
		"SetState",             /* verified -> Swap */
		"DeleteCopyJob",
		"RetainVolume",         /* the new PV */
		"RetainVolume",         /* the old PV */
		"DeleteNewClaim",
		"DeleteClaim",
		"PrebindVolume",
		"CreateClaim",          /* data-db-0 on the new PV */
		"RestoreReclaimPolicy", /* the new PV: Delete again */
		"LabelOldVolume",
		"SetState",             /* -> Restart */
		"Recreate",             /* with the new template */
		"DeleteBackup",
		"SetState",             /* replica 0 done */
		"SetState",             /* -> Cleaning */
		"DeleteOldVolume",
		"Finish",
	};
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-copycrash");
	char *old_pv = create_set(admin, ns);
	struct kube_error err;

	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct daemon d = daemon_start_operator_crashing(steps[k]);
		int rc = daemon_wait_exit(&d, 90000);
		if (rc != 128 + SIGKILL) {
			char *log = daemon_log(&d);
			it_sh("kubectl get -n %s sts,pods,pvc,jobs,cm >&2; kubectl get pv >&2", ns);
			fail_msg("step %zu (%s): the operator did not kill itself (exit %d); log:\n%s", k, steps[k], rc,
				 log);
		}
		printf("# kill -9 after %s\n", steps[k]);
		daemon_cleanup(&d);
	}
	struct daemon d = daemon_start_operator_crashing(NULL);
	struct done_ctx dc = {admin, ns, old_pv};
	if (!it_wait(copy_done, &dc, 90000)) {
		char *log = daemon_log(&d);
		fail_msg("after the crashes the copy did not complete; log:\n%s", log);
	}
	daemon_stop_operator(&d);

	/* Exactly one StatefulSet, one claim, no Job, no saved copy. */
	json_t *all = NULL;
	assert_int_equal(kube_list_all(admin, &KUBE_STATEFULSETS, ns, NULL, 0, &all, NULL, &err), 0);
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
	assert_int_equal(kube_list_all(admin, &KUBE_PVCS, ns, NULL, 0, &all, NULL, &err), 0);
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
	assert_int_equal(kube_list_all(admin, &KUBE_JOBS, ns, NULL, 0, &all, NULL, &err), 0);
	assert_int_equal(json_array_size(all), 0);
	json_decref(all);
	assert_null(get(admin, &KUBE_CONFIGMAPS, ns, SET BACKUP_SUFFIX));
	it_wait_ready_and_bound(admin, ns, 1, 1, 30000);

	free(old_pv);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/*
 * A kill between the re-create and the saved copy's record of it (done
 * here by taking the record away after a kill right after Recreate): the
 * set the copy cannot vouch for is deleted with propagationPolicy Orphan
 * and re-created from the saved copy (ResizeRecreateUnconfirmed), and the
 * copy completes as after any other kill.
 */
static void test_crash_before_the_recreate_is_recorded_resumes(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-copyunconfirmed");
	char *old_pv = create_set(admin, ns);
	char *log = NULL;
	if (!daemon_run_operator_until_crash("Recreate", 120000, &log))
		fail_msg("the operator did not re-create the set; log:\n%s", log);
	json_t *made = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_non_null(made);
	char *first_uid = xstrdup(kube_obj_str(made, "metadata.uid"));
	json_decref(made);
	json_t *cm = get(admin, &KUBE_CONFIGMAPS, ns, SET BACKUP_SUFFIX);
	assert_non_null(cm);
	/* The record of the re-create, sealed for the ConfigMap, names the set made. */
	const json_t *ann = json_object_get(json_object_get(cm, "metadata"), "annotations");
	assert_string_equal(json_string_value(json_object_get(ann, ANNOTATION_RECREATED_UID)), first_uid);
	json_decref(cm);
	if (it_sh("kubectl annotate configmap -n %s " SET BACKUP_SUFFIX " " ANNOTATION_RECREATED_UID "- "
		  ANNOTATION_RECREATED_UID STATE_SEAL_SUFFIX "- >/dev/null",
		  ns))
		fail_msg("cannot take the record away");

	struct daemon d = daemon_start_operator_crashing(NULL);
	struct done_ctx dc = {admin, ns, old_pv};
	if (!it_wait(copy_done, &dc, 90000)) {
		char *text = daemon_log(&d);
		fail_msg("after the unrecorded re-create the copy did not complete; log:\n%s", text);
	}
	daemon_stop_operator(&d);
	assert_true(it_event_count(admin, ns, "ResizeRecreateUnconfirmed", SET) >= 1);
	json_t *now = get(admin, &KUBE_STATEFULSETS, ns, SET);
	assert_string_not_equal(kube_obj_str(now, "metadata.uid"), first_uid);
	json_decref(now);
	assert_null(get(admin, &KUBE_CONFIGMAPS, ns, SET BACKUP_SUFFIX));
	it_wait_ready_and_bound(admin, ns, 1, 1, 30000);
	free(first_uid);
	free(old_pv);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_after_every_copy_step_resumes),
		cmocka_unit_test(test_crash_before_the_recreate_is_recorded_resumes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
