/*
 * In-place resize on the real control plane (the test bed's resizer plays
 * the CSI external-resizer): volumes grow without pod restarts, the
 * StatefulSet is re-created with the new template size and equals the
 * original in every other field; the vshn-style trigger works; bad input
 * is refused with a Warning Event and changes nothing.
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

#define SET "web"

/* A StatefulSet with templates data and logs (1Gi each) of class cls (NULL: default). */
static json_t *statefulset(int replicas, const char *data_size, const char *cls)
{
	json_t *s = it_json(
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"" SET "\","
		"\"labels\":{\"team\":\"storage\"},\"annotations\":{\"note\":\"kept\"}},"
		"\"spec\":{\"replicas\":%d,\"podManagementPolicy\":\"Parallel\",\"serviceName\":\"" SET "\","
		"\"selector\":{\"matchLabels\":{\"app\":\"" SET "\"}},\"template\":{\"metadata\":{\"labels\":"
		"{\"app\":\"" SET "\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}},"
		"\"volumeClaimTemplates\":["
		"{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
		"\"resources\":{\"requests\":{\"storage\":\"%s\"}}}},"
		"{\"metadata\":{\"name\":\"logs\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
		"\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]}}",
		replicas, data_size);
	if (cls) {
		json_t *vcts = json_object_get(json_object_get(s, "spec"), "volumeClaimTemplates");
		for (size_t i = 0; i < json_array_size(vcts); i++)
			json_object_set_new(json_object_get(json_array_get(vcts, i), "spec"), "storageClassName",
					    json_string(cls));
	}
	return s;
}

static void create_and_wait(struct kube_client *admin, const char *ns, json_t *sts, int replicas)
{
	struct kube_error err;
	if (kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	it_wait_ready_and_bound(admin, ns, replicas, 2 * replicas, 60000); /* two templates */
}

static const char *pvc_field(struct kube_client *c, const char *ns, const char *name, const char *path,
			     char *buf, size_t len)
{
	json_t *p = NULL;
	struct kube_error err;
	buf[0] = '\0';
	if (kube_get(c, &KUBE_PVCS, ns, name, &p, &err) == 0) {
		const char *v = kube_obj_str(p, path);
		snprintf(buf, len, "%s", v ? v : "");
	}
	json_decref(p);
	return buf;
}

static void annotate_sts(const char *ns, const char *key, const char *value)
{
	if (it_sh("kubectl annotate --overwrite statefulset -n %s " SET " '%s=%s' >/dev/null", ns, key, value))
		fail_msg("kubectl annotate %s failed", key);
}

static struct daemon operator_start(void)
{
	struct daemon d;
	daemon_start_operator(&d, NULL, true);
	return d;
}


struct resized {
	struct kube_client *c;
	const char *ns;
	const char *old_uid;
};

/* Done: a StatefulSet with a new UID and no resize state. */
static bool recreated_and_done(void *ctx)
{
	struct resized *r = ctx;
	json_t *sts = NULL;
	struct kube_error err;
	if (kube_get(r->c, &KUBE_STATEFULSETS, r->ns, SET, &sts, &err) < 0)
		return false;
	const char *uid = kube_obj_str(sts, "metadata.uid");
	bool done = uid && strcmp(uid, r->old_uid) &&
		    !json_object_get(json_object_get(json_object_get(sts, "metadata"), "annotations"),
				     ANNOTATION_RESIZE_STATE);
	json_decref(sts);
	return done;
}

static json_t *events_with_reason(struct kube_client *c, const char *ns, const char *reason)
{
	char *sel = xasprintf("reason=%s", reason);
	json_t *items = it_events(c, ns, sel);
	free(sel);
	return items;
}

static void test_grows_one_template_in_place_and_recreates_the_set(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-expand");
	json_t *manifest = statefulset(3, "1Gi", NULL);
	create_and_wait(admin, ns, manifest, 3);
	annotate_sts(ns, "resize.stateful-operator.io/data", "2Gi");

	json_t *before = NULL, *pods_before = NULL;
	struct kube_error err;
	assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, SET, &before, &err), 0);
	assert_int_equal(kube_list_all(admin, &KUBE_PODS, ns, NULL, 0, &pods_before, NULL, &err), 0);
	char *old_uid = xstrdup(kube_obj_str(before, "metadata.uid"));

	struct daemon d = operator_start();
	struct resized r = {admin, ns, old_uid};
	if (!it_wait(recreated_and_done, &r, 90000)) {
		char *log = daemon_log(&d);
		fail_msg("resize did not complete in 90 s; operator log:\n%s", log);
	}

	char buf[64];
	for (int i = 0; i < 3; i++) {
		char name[32];
		snprintf(name, sizeof(name), "data-" SET "-%d", i);
		assert_string_equal(pvc_field(admin, ns, name, "status.capacity.storage", buf, sizeof(buf)), "2Gi");
		snprintf(name, sizeof(name), "logs-" SET "-%d", i);
		assert_string_equal(pvc_field(admin, ns, name, "spec.resources.requests.storage", buf, sizeof(buf)),
				    "1Gi");
		assert_string_equal(pvc_field(admin, ns, name, "status.capacity.storage", buf, sizeof(buf)), "1Gi");
	}

	/* No pod restarted; the new StatefulSet owns the same pods. */
	json_t *after = NULL, *pods_after = NULL;
	assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, SET, &after, &err), 0);
	assert_int_equal(kube_list_all(admin, &KUBE_PODS, ns, NULL, 0, &pods_after, NULL, &err), 0);
	assert_int_equal(json_array_size(pods_after), 3);
	size_t i;
	json_t *p;
	json_array_foreach(pods_after, i, p) {
		bool same = false;
		size_t j;
		json_t *q;
		json_array_foreach(pods_before, j, q) same |= !strcmp(kube_obj_str(p, "metadata.uid"),
								     kube_obj_str(q, "metadata.uid"));
		if (!same)
			fail_msg("pod %s was restarted", kube_obj_str(p, "metadata.name"));
		const json_t *owner = json_array_get(json_object_get(json_object_get(p, "metadata"),
								     "ownerReferences"),
						     0);
		assert_string_equal(kube_obj_str(owner, "uid"), kube_obj_str(after, "metadata.uid"));
	}

	/*
	 * Field by field: the re-created set is the original but for the data
	 * template's size; each field owner the original had owns the same
	 * fields again (a create alone would make the operator own them all).
	 */
	json_t *want = resize_saved_copy(before);
	json_t *got = resize_saved_copy(after);
	json_t *owners_before = json_object_get(json_object_get(want, "metadata"), "managedFields");
	json_t *owners_after = json_object_get(json_object_get(got, "metadata"), "managedFields");
	assert_true(json_array_size(owners_before) > 0);
	json_array_foreach(owners_before, i, p) {
		bool kept = false;
		size_t j;
		json_t *q;
		json_array_foreach(owners_after, j, q) kept |=
			!strcmp(kube_obj_str(p, "manager"), kube_obj_str(q, "manager")) &&
			json_equal(json_object_get(p, "fieldsV1"), json_object_get(q, "fieldsV1"));
		if (!kept && strcmp(kube_obj_str(p, "manager"), "stateful-operator"))
			fail_msg("field manager %s lost its fields in the re-create", kube_obj_str(p, "manager"));
	}
	json_object_del(json_object_get(want, "metadata"), "managedFields");
	json_object_del(json_object_get(got, "metadata"), "managedFields");
	json_object_set_new(json_object_get(json_object_get(json_object_get(json_array_get(
								    json_object_get(json_object_get(want, "spec"),
										    "volumeClaimTemplates"),
								    0),
							    "spec"),
					    "resources"),
			    "requests"),
			    "storage", json_string("2Gi"));
	if (!json_equal(want, got)) {
		char *a = json_dumps(want, JSON_SORT_KEYS | JSON_INDENT(1));
		char *b = json_dumps(got, JSON_SORT_KEYS | JSON_INDENT(1));
		fail_msg("re-created StatefulSet differs from the original:\n--- want\n%s\n--- got\n%s", a, b);
	}

	/* The saved copy is gone, and the Events tell the story. */
	assert_int_equal(kube_get(admin, &KUBE_CONFIGMAPS, ns, SET BACKUP_SUFFIX, NULL, &err), KUBE_EHTTP);
	assert_int_equal(err.code, 404);
	json_t *started = events_with_reason(admin, ns, "ResizeStarted");
	json_t *completed = events_with_reason(admin, ns, "ResizeCompleted");
	assert_int_equal(json_array_size(started), 1);
	assert_int_equal(json_array_size(completed), 1);

	daemon_stop_operator(&d);
	json_decref(started);
	json_decref(completed);
	json_decref(want);
	json_decref(got);
	json_decref(after);
	json_decref(pods_after);
	json_decref(before);
	json_decref(pods_before);
	json_decref(manifest);
	free(old_uid);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

struct refusal_case {
	const char *key;
	const char *value;
	const char *strategy;    /* or NULL */
	const char *cls;         /* the templates' StorageClass, or NULL */
	bool no_templates;
	const char *reason;
};

static bool has_event(void *ctx)
{
	void **args = ctx;
	json_t *evs = events_with_reason(args[0], args[1], args[2]);
	bool found = json_array_size(evs) > 0;
	json_decref(evs);
	return found;
}

/* Each bad input: its Warning Event, and the StatefulSet and its claims as they were. */
static void test_bad_input_is_refused_and_changes_nothing(void **state)
{
	(void)state;
	static const struct refusal_case cases[] = {
		{"resize.stateful-operator.io/data", "20Gb", NULL, NULL, false, "ResizeInvalidSize"},
		{"resize.stateful-operator.io/cache", "2Gi", NULL, NULL, false, "ResizeUnknownTemplate"},
		{"resize.stateful-operator.io/data", "512Mi", NULL, NULL, false, "ResizeShrinkRefused"},
		{"resize.stateful-operator.io/data", "2Gi", "expand", "fixed", false, "ResizeNotExpandable"},
		{"resize.stateful-operator.io/data", "2Gi", NULL, "gold", false, "ResizeStorageClassNotFound"},
		{"resize.stateful-operator.io/data", "2Gi", NULL, NULL, true, "ResizeNoVolumeClaimTemplates"},
	};
	struct kube_client *admin = it_admin_client();
	struct daemon d = operator_start();
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct refusal_case *c = &cases[k];
		char *ns = it_namespace_new(admin, "it-refuse");
		json_t *manifest = statefulset(1, "1Gi", c->cls);
		struct kube_error err;
		if (c->no_templates) {
			json_object_del(json_object_get(manifest, "spec"), "volumeClaimTemplates");
			assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, manifest, NULL, &err), 0);
		} else if (c->cls && !strcmp(c->cls, "gold")) {
			/* No such class: the claims stay Pending; no need to wait for them. */
			assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, manifest, NULL, &err), 0);
		} else {
			create_and_wait(admin, ns, manifest, 1);
		}
		if (c->strategy)
			annotate_sts(ns, ANNOTATION_STRATEGY, c->strategy);
		json_t *before = NULL;
		assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, SET, &before, &err), 0);
		annotate_sts(ns, c->key, c->value);
		void *args[] = {admin, ns, (void *)c->reason};
		if (!it_wait(has_event, args, 15000))
			fail_msg("case %zu: no %s Event within 15 s", k, c->reason);
		json_t *evs = events_with_reason(admin, ns, c->reason);
		assert_string_equal(kube_obj_str(json_array_get(evs, 0), "type"), "Warning");
		printf("# %s: %s\n", c->reason, kube_obj_str(json_array_get(evs, 0), "message"));
		json_decref(evs);
		/* Nothing changed: same UID, no resize state, claims at their size. */
		json_t *after = NULL;
		assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, SET, &after, &err), 0);
		assert_string_equal(kube_obj_str(after, "metadata.uid"), kube_obj_str(before, "metadata.uid"));
		assert_null(json_object_get(json_object_get(json_object_get(after, "metadata"), "annotations"),
					    ANNOTATION_RESIZE_STATE));
		char buf[64];
		if (!c->no_templates)
			assert_string_equal(pvc_field(admin, ns, "data-" SET "-0", "spec.resources.requests.storage",
						      buf, sizeof(buf)),
					    "1Gi");
		json_decref(after);
		json_decref(before);
		json_decref(manifest);
		it_namespace_delete(admin, ns);
		free(ns);
	}
	daemon_stop_operator(&d);
	kube_client_free(admin);
}

/*
 * vshn-compatible trigger: the user orphan-deletes the StatefulSet and
 * applies it again with a bigger template; the PVCs follow.
 */
static void test_reapplied_bigger_template_resizes_the_claims(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-vshn");
	json_t *manifest = statefulset(2, "1Gi", NULL);
	create_and_wait(admin, ns, manifest, 2);
	struct daemon d = operator_start();

	struct kube_error err;
	struct kube_delete_options orphan = {.propagation_policy = "Orphan"};
	assert_int_equal(kube_delete(admin, &KUBE_STATEFULSETS, ns, SET, &orphan, &err), 0);
	for (int i = 0; i < 100 && kube_get(admin, &KUBE_STATEFULSETS, ns, SET, NULL, &err) == 0; i++)
		it_sleep_ms(100);
	json_t *bigger = statefulset(2, "3Gi", NULL);
	assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, bigger, NULL, &err), 0);

	char buf[64];
	bool grown = false;
	for (int i = 0; i < 600 && !grown; i++) {
		grown = !strcmp(pvc_field(admin, ns, "data-" SET "-0", "status.capacity.storage", buf, sizeof(buf)),
				"3Gi") &&
			!strcmp(pvc_field(admin, ns, "data-" SET "-1", "status.capacity.storage", buf, sizeof(buf)),
				"3Gi");
		if (!grown)
			it_sleep_ms(100);
	}
	assert_true(grown);
	assert_string_equal(pvc_field(admin, ns, "logs-" SET "-0", "status.capacity.storage", buf, sizeof(buf)),
			    "1Gi");
	daemon_stop_operator(&d);
	json_decref(bigger);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/*
 * The volume driver refuses one claim (the resizer's fail mode on the
 * highest ordinal, which goes first): a Warning Event and resize-status
 * carry the driver's message, nothing else changes, and the operator asks
 * for the claim's capacity again where the cluster allows it (KEP-1790),
 * reporting the outcome either way.
 */
static void test_driver_failure_is_reported_and_nothing_else_changes(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-fail");
	json_t *manifest = statefulset(3, "1Gi", NULL);
	create_and_wait(admin, ns, manifest, 3);
	if (it_sh("kubectl annotate pvc -n %s data-" SET "-2 testbed.stateful-operator.io/resize-mode=fail >/dev/null",
		  ns))
		fail_msg("annotate PVC failed");
	json_t *before = NULL;
	struct kube_error err;
	assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, SET, &before, &err), 0);
	struct daemon d = operator_start();
	annotate_sts(ns, "resize.stateful-operator.io/data", "2Gi");

	void *failed[] = {admin, ns, (void *)"ResizeFailed"};
	if (!it_wait(has_event, failed, 30000))
		fail_msg("no ResizeFailed Event within 30 s");
	json_t *evs = events_with_reason(admin, ns, "ResizeFailed");
	const char *msg = kube_obj_str(json_array_get(evs, 0), "message");
	printf("# ResizeFailed: %s\n", msg);
	assert_string_equal(kube_obj_str(json_array_get(evs, 0), "type"), "Warning");
	assert_non_null(strstr(msg, "simulated expansion failure"));
	json_decref(evs);

	/* The lowering attempt is reported, whichever way the cluster decided. */
	void *lowered[] = {admin, ns, (void *)"ResizeRequestLowered"};
	void *not_lowered[] = {admin, ns, (void *)"ResizeRequestNotLowered"};
	double until = it_now_ms() + 30000;
	while (!has_event(lowered) && !has_event(not_lowered) && it_now_ms() < until)
		it_sleep_ms(200);
	json_t *lo = events_with_reason(admin, ns, "ResizeRequestNotLowered");
	if (!json_array_size(lo)) {
		json_decref(lo);
		lo = events_with_reason(admin, ns, "ResizeRequestLowered");
	}
	assert_int_equal(json_array_size(lo), 1);
	printf("# %s: %s\n", kube_obj_str(json_array_get(lo, 0), "reason"),
	       kube_obj_str(json_array_get(lo, 0), "message"));
	json_decref(lo);

	/* resize-status says so; nothing else changed: same StatefulSet, the other claims untouched. */
	json_t *after = NULL;
	assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, SET, &after, &err), 0);
	const char *st = json_string_value(json_object_get(
		json_object_get(json_object_get(after, "metadata"), "annotations"), ANNOTATION_RESIZE_STATUS));
	assert_non_null(st);
	printf("# resize-status: %s\n", st);
	assert_non_null(strstr(st, "Failed"));
	assert_non_null(strstr(st, "simulated expansion failure"));
	assert_string_equal(kube_obj_str(after, "metadata.uid"), kube_obj_str(before, "metadata.uid"));
	char buf[64];
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "data-" SET "-%d", i);
		assert_string_equal(pvc_field(admin, ns, name, "spec.resources.requests.storage", buf, sizeof(buf)),
				    "1Gi");
	}
	assert_string_equal(pvc_field(admin, ns, "data-" SET "-2", "status.capacity.storage", buf, sizeof(buf)),
			    "1Gi");
	assert_int_equal(kube_get(admin, &KUBE_CONFIGMAPS, ns, SET BACKUP_SUFFIX, NULL, &err), KUBE_EHTTP);

	daemon_stop_operator(&d);
	json_decref(after);
	json_decref(before);
	json_decref(manifest);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_one_template_in_place_and_recreates_the_set),
		cmocka_unit_test(test_bad_input_is_refused_and_changes_nothing),
		cmocka_unit_test(test_reapplied_bigger_template_resizes_the_claims),
		cmocka_unit_test(test_driver_failure_is_reported_and_nothing_else_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
