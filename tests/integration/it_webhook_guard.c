/*
 * The webhook's guard on StatefulSet creates while a resize has the set
 * deleted (issue 27, finding 7), on the real API server with the webhook
 * registered (webhook_steps.h): a ConfigMap <name>-sts-backup that the
 * operator did not seal holds no create back (allowed, with a warning);
 * a user's create carrying the operator's own sealed re-create state,
 * copied from the set it re-created, is denied while the real copy waits;
 * and the operator's own re-create then passes, which shows the guard
 * knows the operator's identity as the API server reports it (the test bed
 * runs the operator with a ServiceAccount token kubeconfig).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/state_seal.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"
#include "webhook_steps.h"

#define GUARD_DENIAL "re-creates it in a moment"
#define FORGED_WARNING "does not carry the operator's seal"

/* Anyone who may create ConfigMaps in the namespace makes one named as the saved copy: the set is created all the same. */
static void test_forged_saved_copy_blocks_no_create(void **state)
{
	struct wh_test *f = *state;
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
			       "metadata", "name", WH_SET BACKUP_SUFFIX, "labels", LABEL_SAVED_STATEFULSET, WH_SET, "data",
			       BACKUP_KEY, "{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"" WH_SET "\"}}");
	struct kube_error err;
	if (kube_create(f->admin, &KUBE_CONFIGMAPS, f->ns, cm, NULL, &err) < 0)
		fail_msg("create ConfigMap: %s", err.message);
	json_decref(cm);
	wh_write_manifest(f, "1Mi", "pause");
	char *out = NULL;
	if (wh_kubectl(f, "create", &out))
		fail_msg("the forged ConfigMap held the create back: %s", out);
	if (!strstr(out, "Warning:") || !strstr(out, FORGED_WARNING))
		fail_msg("no warning about the ConfigMap in: %s", out);
	free(out);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
}

static bool set_gone(void *ctx)
{
	json_t *sts = wh_get_set(ctx);
	json_decref(sts);
	return sts == NULL;
}

/*
 * A copy resize killed right after it re-created the set; the set then
 * deleted (orphan) and created again by a user with every annotation of the
 * operator's (its sealed state included) while the saved copy is there:
 * denied. The operator, started again, re-creates it itself and finishes.
 */
static void test_copied_state_from_another_user_is_denied(void **state)
{
	struct wh_test *f = *state;
	wh_write_manifest(f, "1Mi", "pause");
	wh_create(f);
	/* Learned at start, in the kubeconfig form the test bed runs it with. */
	if (!daemon_wait_log(&f->d, "may create it (the operator's own identity)", 5000))
		fail_msg("the webhook did not learn the operator's identity");
	char *log = daemon_log(&f->d);
	assert_non_null(strstr(log, "only system:serviceaccount:"));
	free(log);
	wh_kill_operator(&f->d);
	if (it_sh("kubectl annotate statefulset -n %s " WH_SET " " CLASS_ANNOTATION_PREFIX "data=fixed >/dev/null", f->ns))
		fail_msg("annotate failed");
	char *crash_log = NULL;
	if (!daemon_run_operator_until_crash("Recreate", 180000, &crash_log))
		fail_msg("the operator did not re-create the set; log:\n%s", crash_log);

	json_t *made = wh_get_set(f);
	assert_non_null(made);
	char *made_uid = xstrdup(kube_obj_str(made, "metadata.uid"));
	assert_non_null(it_annotation(made, ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX));
	if (it_sh("kubectl delete statefulset -n %s " WH_SET " --cascade=orphan --wait=false >/dev/null", f->ns))
		fail_msg("delete failed");
	if (!it_wait(set_gone, f, 30000))
		fail_msg("the set did not go");
	json_t *backup = it_get(f->admin, &KUBE_CONFIGMAPS, f->ns, WH_SET BACKUP_SUFFIX);
	assert_non_null(backup);
	json_decref(backup);

	/* The webhook only: nothing re-creates the set meanwhile. */
	wh_start_operator(&f->d, "scaledown");
	json_t *copy = wh_statefulset("1Mi", "fixed", "pause");
	json_object_set(json_object_get(copy, "metadata"), "annotations",
			json_object_get(json_object_get(made, "metadata"), "annotations"));
	wh_write(f, copy);
	char *out = NULL;
	if (!wh_kubectl(f, "create", &out))
		fail_msg("a user's create with the operator's copied state was let through: %s", out);
	if (!strstr(out, GUARD_DENIAL))
		fail_msg("denied, but not by the guard: %s", out);
	free(out);
	assert_null(wh_get_set(f));

	/* The operator's own re-create passes: it finishes. */
	wh_kill_operator(&f->d);
	wh_start_operator(&f->d, "resize,scaledown,cluster");
	wh_wait_settled(f, made_uid);
	json_t *now = wh_get_set(f);
	assert_string_equal(kube_obj_str(wh_template(now, 0), "spec.storageClassName"), "fixed");
	json_decref(now);
	json_decref(copy);
	json_decref(made);
	free(made_uid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_forged_saved_copy_blocks_no_create, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_copied_state_from_another_user_is_denied, wh_setup, wh_teardown),
	};
	if (getenv("IT_FILTER")) /* run one test by hand: IT_FILTER=test_name */
		cmocka_set_test_filter(getenv("IT_FILTER"));
	return cmocka_run_group_tests(tests, wh_group_setup, wh_group_teardown);
}
