/*
 * What `kubectl stateful uninstall` finds (plugin_uninstall.h): the
 * StatefulSets that hold our finalizer, the work in flight that holds the
 * command back (a cleanup pod, a resize short of an end, a backup
 * ConfigMap), and the JSON patch that removes our entries only, each
 * behind a test of that entry.
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
#include "plugin/plugin_uninstall.h"
#include "sim.h"


/* StatefulSet shop/name with finalizers (a JSON array's text) and, when phase is given, a resize in that phase. */
static json_t *sts(const char *name, const char *finalizers, const char *phase, bool deleting)
{
	json_t *o = json_pack("{s:s, s:{s:s, s:s, s:o}}", "kind", "StatefulSet", "metadata", "name", name, "namespace",
			      "shop", "finalizers", sim_json(finalizers));
	if (phase) {
		json_t *st = json_pack("{s:s, s:s, s:s}", "phase", phase, "strategy", "copy", "started",
				       "2025-11-24T15:55:00Z");
		char *text = json_dumps(st, JSON_COMPACT);
		json_object_set_new(json_object_get(o, "metadata"), "annotations",
				    json_pack("{s:s}", ANNOTATION_RESIZE_STATE, text));
		free(text);
		json_decref(st);
	}
	if (deleting)
		json_object_set_new(json_object_get(o, "metadata"), "deletionTimestamp",
				    json_string("2025-11-24T16:00:00Z"));
	return o;
}

/* The row of shop/name, or NULL. */
static const json_t *row(const json_t *rows, const char *name)
{
	size_t i;
	const json_t *r;
	json_array_foreach(rows, i, r)
		if (!strcmp(kube_obj_str(r, "namespace"), "shop") && !strcmp(kube_obj_str(r, "name"), name))
			return r;
	return NULL;
}

static void test_scan(void **state)
{
	(void)state;
	json_t *sets = json_array();
	json_array_append_new(sets, sts("held", "[\"other.io/x\",\"" FINALIZER_SCALEDOWN "\"]", NULL, false));
	json_array_append_new(sets, sts("gone", "[\"" FINALIZER_SCALEDOWN "\"]", NULL, true));
	json_array_append_new(sets, sts("plain", "[]", NULL, false));
	json_array_append_new(sets, sts("copying", "[]", "Copying", false));
	json_t *failed = sts("failed", "[\"" FINALIZER_SCALEDOWN "\"]", "Failed", false);
	json_object_set_new(failed, "spec", sim_json("{\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":\"Delete\"}}"));
	json_array_append_new(sets, failed);
	json_array_append_new(sets, sts("cleaning", "[]", "Cleaning", false));
	json_array_append_new(sets, sts("newer", "[]", "Teleporting", false));
	json_array_append_new(sets, sts("cleaned", "[\"" FINALIZER_SCALEDOWN "\"]", NULL, false));
	json_t *backups = sim_json("[{\"metadata\":{\"namespace\":\"shop\",\"name\":\"away-sts-backup\",\"labels\":{\""
				LABEL_SAVED_STATEFULSET "\":\"away\"}}}]");
	json_t *pods = sim_json("[{\"metadata\":{\"namespace\":\"shop\",\"name\":\"cleaned-3\",\"labels\":{\"" LABEL_CLEANUP_FOR
			     "\":\"cleaned\"}},\"status\":{\"phase\":\"Running\"}}]");
	json_t *rows = uninstall_scan(sets, backups, pods);

	/* held, gone, copying, failed, newer, cleaned, away: not plain, not cleaning (an end, with old volumes). */
	assert_int_equal(json_array_size(rows), 7);
	assert_null(row(rows, "plain"));
	assert_null(row(rows, "cleaning"));
	assert_true(json_is_true(json_object_get(row(rows, "held"), "finalizer")));
	assert_false(json_is_true(json_object_get(row(rows, "held"), "terminating")));
	assert_null(json_object_get(row(rows, "held"), "blockers"));
	assert_true(json_is_true(json_object_get(row(rows, "gone"), "terminating")));
	assert_false(json_is_true(json_object_get(row(rows, "gone"), "claimsDeleted")));
	assert_true(json_is_true(json_object_get(row(rows, "failed"), "claimsDeleted")));
	assert_null(json_object_get(row(rows, "gone"), "blockers")); /* stuck in Terminating: what the command is for */
	assert_null(json_object_get(row(rows, "failed"), "blockers"));

	const json_t *b = json_array_get(json_object_get(row(rows, "copying"), "blockers"), 0);
	assert_non_null(strstr(kube_obj_str(b, "what"), "resize is in flight (phase Copying)"));
	assert_non_null(strstr(kube_obj_str(b, "finish"), "kubectl stateful abort sts/copying -n shop"));
	assert_false(json_is_true(json_object_get(row(rows, "copying"), "finalizer")));
	assert_non_null(json_object_get(row(rows, "newer"), "blockers")); /* a phase it does not know */

	b = json_array_get(json_object_get(row(rows, "away"), "blockers"), 0);
	assert_non_null(strstr(kube_obj_str(b, "what"), "ConfigMap away-sts-backup holds it (the set is gone"));

	const json_t *r = row(rows, "cleaned");
	assert_true(json_is_true(json_object_get(r, "finalizer")));
	b = json_array_get(json_object_get(r, "blockers"), 0);
	assert_non_null(strstr(kube_obj_str(b, "what"), "scale-down cleanup runs: pod cleaned-3 (Running)"));
	assert_non_null(strstr(kube_obj_str(b, "finish"), "kubectl delete pod cleaned-3 -n shop"));

	assert_int_equal(uninstall_blocked(rows), 4); /* copying, newer, away, cleaned */
	json_decref(rows);
	json_decref(pods);
	json_decref(backups);
	json_decref(sets);

	rows = uninstall_scan(NULL, NULL, NULL);
	assert_int_equal(json_array_size(rows), 0);
	assert_int_equal(uninstall_blocked(rows), 0);
	json_decref(rows);
}

/* A tenant's phase text reaches the terminal clean. */
static void test_scan_sanitizes(void **state)
{
	(void)state;
	json_t *sets = json_array();
	json_array_append_new(sets, sts("evil", "[]", "\x1b]0;owned\x07", false));
	json_t *rows = uninstall_scan(sets, NULL, NULL);
	const json_t *b = json_array_get(json_object_get(row(rows, "evil"), "blockers"), 0);
	assert_null(strchr(kube_obj_str(b, "what"), '\x1b'));
	assert_null(strchr(kube_obj_str(b, "what"), '\x07'));
	json_decref(rows);
	json_decref(sets);
}

static void test_patch(void **state)
{
	(void)state;
	json_t *o = sts("web", "[\"" FINALIZER_SCALEDOWN "\",\"other.io/x\",\"" FINALIZER_SCALEDOWN "\"]", NULL, false);
	json_t *p = uninstall_finalizer_patch(o, FINALIZER_SCALEDOWN);
	json_t *want = sim_json("[{\"op\":\"test\",\"path\":\"/metadata/finalizers/2\",\"value\":\"" FINALIZER_SCALEDOWN "\"},"
			     "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/2\"},"
			     "{\"op\":\"test\",\"path\":\"/metadata/finalizers/0\",\"value\":\"" FINALIZER_SCALEDOWN "\"},"
			     "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]");
	if (!json_equal(p, want)) {
		char *got = json_dumps(p, JSON_COMPACT);
		fail_msg("patch: %s", got);
	}
	json_decref(want);
	json_decref(p);
	json_decref(o);

	o = sts("web", "[\"other.io/x\"]", NULL, false);
	assert_null(uninstall_finalizer_patch(o, FINALIZER_SCALEDOWN));
	json_decref(o);
	o = json_pack("{s:{s:s}}", "metadata", "name", "bare");
	assert_null(uninstall_finalizer_patch(o, FINALIZER_SCALEDOWN));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_scan_sanitizes),
		cmocka_unit_test(test_patch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
