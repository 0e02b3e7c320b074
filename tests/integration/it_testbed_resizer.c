/*
 * The test bed's volume resizer (tests/testbed/pvc-resizer.c, started by
 * scripts/local-cluster up) against the real control plane: online
 * expansion, offline expansion finished only by a new pod, simulated
 * failure and what the API server then allows (KEP-1790), the slow mode
 * switched through the ConfigMap, and a class that cannot expand at all.
 * The tests run in order on shared PVCs; each wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/quantity.h"
#include "itest.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define ANN_MODE "testbed.stateful-operator.io/resize-mode"
#define CONFIG_NAMESPACE "kube-system"
#define CONFIG_NAME "testbed-pvc-resizer"
#define BIND_TIMEOUT_MS 60000
#define RESIZE_TIMEOUT_MS 10000
#define FS_PENDING_MESSAGE \
	"Waiting for user to (re-)start a pod to finish file system resize of volume on node."
#define FAIL_MESSAGE "testbed: simulated expansion failure (resize mode fail)"

static struct kube_client *admin;
static char *ns;

/* ---- PVCs ---- */

static void pvc_create(const char *name, const char *cls, const char *size)
{
	json_t *pvc = it_json("{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\","
			      "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
			      "\"storageClassName\":\"%s\",\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}",
			      name, cls, size);
	struct kube_error err;
	if (kube_create(admin, &KUBE_PVCS, ns, pvc, NULL, &err) < 0)
		fail_msg("create pvc %s: %s", name, err.message);
	json_decref(pvc);
}

static json_t *pvc_get(const char *name)
{
	json_t *pvc = NULL;
	struct kube_error err;
	if (kube_get(admin, &KUBE_PVCS, ns, name, &pvc, &err) < 0)
		fail_msg("get pvc %s: %s", name, err.message);
	return pvc;
}

/* Merge-patches the request; returns kube_patch's result and fills *err. */
static int pvc_request(const char *name, const char *size, struct kube_error *err)
{
	json_t *patch = it_json("{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}", size);
	int rc = kube_patch(admin, &KUBE_PVCS, ns, name, NULL, KUBE_PATCH_MERGE, patch, NULL, err);
	json_decref(patch);
	return rc;
}

static void pvc_grow(const char *name, const char *size)
{
	struct kube_error err;
	if (pvc_request(name, size, &err) < 0)
		fail_msg("pvc %s: request %s: %ld %s", name, size, err.code, err.message);
}

static void pvc_mode(const char *name, const char *mode)
{
	json_t *patch = it_json("{\"metadata\":{\"annotations\":{\"" ANN_MODE "\":\"%s\"}}}", mode);
	struct kube_error err;
	if (kube_patch(admin, &KUBE_PVCS, ns, name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0)
		fail_msg("pvc %s: annotate %s: %s", name, mode, err.message);
	json_decref(patch);
}

static bool size_is(const char *got, const char *want)
{
	struct quantity a, b;
	return got && quantity_parse(got, &a, NULL) == 0 && quantity_parse(want, &b, NULL) == 0 &&
	       quantity_cmp(&a, &b) == 0;
}

/* The condition of type (borrowed) or NULL. */
static json_t *condition(const json_t *pvc, const char *type)
{
	json_t *conds = json_object_get(json_object_get(pvc, "status"), "conditions");
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

/* What a PVC should show; NULL fields are not checked. */
struct expect {
	const char *phase;
	const char *capacity;   /* status.capacity.storage */
	const char *allocated;  /* status.allocatedResources.storage */
	const char *status;     /* allocatedResourceStatuses.storage; "" = absent */
	const char *condition;  /* a condition of this type with status True; "" = no resize condition */
};

/*
 * The conditions of a resize; others are not the resizer's (Kubernetes 1.37
 * adds "Unused", whether a pod references the claim) and are not checked.
 */
static const char *const resize_conditions[] = {"Resizing", "FileSystemResizePending", "ControllerResizeError",
						"NodeResizeError"};

static bool pvc_matches(const json_t *pvc, const struct expect *e)
{
	const char *phase = kube_obj_str(pvc, "status.phase");
	if (e->phase && (!phase || strcmp(phase, e->phase)))
		return false;
	if (e->capacity && !size_is(kube_obj_str(pvc, "status.capacity.storage"), e->capacity))
		return false;
	if (e->allocated && !size_is(kube_obj_str(pvc, "status.allocatedResources.storage"), e->allocated))
		return false;
	if (e->status) {
		const char *s = kube_obj_str(pvc, "status.allocatedResourceStatuses.storage");
		if (*e->status ? !s || strcmp(s, e->status) : s != NULL)
			return false;
	}
	if (e->condition) {
		if (!*e->condition) {
			for (size_t k = 0; k < sizeof(resize_conditions) / sizeof(*resize_conditions); k++)
				if (condition(pvc, resize_conditions[k]))
					return false;
		} else {
			const json_t *c = condition(pvc, e->condition);
			const char *s = c ? json_string_value(json_object_get(c, "status")) : NULL;
			if (!s || strcmp(s, "True"))
				return false;
		}
	}
	return true;
}

struct wait_pvc {
	const char *name;
	const struct expect *e;
	json_t *last;
};

static bool pvc_reached(void *ctx)
{
	struct wait_pvc *w = ctx;
	json_decref(w->last);
	w->last = pvc_get(w->name);
	return pvc_matches(w->last, w->e);
}

/* Waits until the PVC matches e; returns it (new reference) or fails with what it showed. */
static json_t *wait_pvc(const char *name, const struct expect *e, long timeout_ms)
{
	struct wait_pvc w = {name, e, NULL};
	if (!it_wait(pvc_reached, &w, timeout_ms)) {
		char *status = json_dumps(json_object_get(w.last, "status"), JSON_COMPACT);
		fail_msg("pvc %s: not as expected after %ld ms; status: %s", name, timeout_ms, status);
	}
	return w.last;
}

/* Fails unless the PVC matches e now. */
static void check_pvc(const char *name, const struct expect *e, const char *when)
{
	json_t *pvc = pvc_get(name);
	if (!pvc_matches(pvc, e)) {
		char *status = json_dumps(json_object_get(pvc, "status"), JSON_COMPACT);
		fail_msg("pvc %s %s: status %s", name, when, status);
	}
	json_decref(pvc);
}

static void check_pv_capacity(const char *claim, const char *want)
{
	json_t *pvc = pvc_get(claim);
	json_t *pv = NULL;
	struct kube_error err;
	const char *volume = kube_obj_str(pvc, "spec.volumeName");
	assert_non_null(volume);
	if (kube_get(admin, &KUBE_PVS, NULL, volume, &pv, &err) < 0)
		fail_msg("get pv %s: %s", volume, err.message);
	const char *cap = kube_obj_str(pv, "spec.capacity.storage");
	if (!size_is(cap, want))
		fail_msg("pv %s of %s: capacity %s, want %s", volume, claim, cap ? cap : "(none)", want);
	json_decref(pv);
	json_decref(pvc);
}

static void wait_bound(const char *name)
{
	struct expect e = {.phase = "Bound"};
	json_decref(wait_pvc(name, &e, BIND_TIMEOUT_MS));
}

/* ---- Pods ---- */

struct wait_pod {
	const char *name;
	bool gone;
};

static bool pod_state(void *ctx)
{
	struct wait_pod *w = ctx;
	json_t *pod = NULL;
	struct kube_error err;
	if (kube_get(admin, &KUBE_PODS, ns, w->name, &pod, &err) < 0)
		return w->gone && err.code == 404;
	bool ready = false;
	const char *phase = kube_obj_str(pod, "status.phase");
	json_t *conds = json_object_get(json_object_get(pod, "status"), "conditions");
	size_t i;
	json_t *c;
	json_array_foreach(conds, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && s && !strcmp(t, "Ready") && !strcmp(s, "True"))
			ready = true;
	}
	bool running = phase && !strcmp(phase, "Running");
	json_decref(pod);
	return !w->gone && ready && running;
}

/* A bare pod on the kwok node mounting claim; returns its UID (new string) once Running and Ready. */
static char *pod_start(const char *name, const char *claim)
{
	json_t *pod = it_json("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
			      "\"spec\":{\"nodeName\":\"kwok-node-0\",\"restartPolicy\":\"Always\","
			      "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
			      "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"}]}],"
			      "\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"%s\"}}]}}",
			      name, claim);
	json_t *out = NULL;
	struct kube_error err;
	if (kube_create(admin, &KUBE_PODS, ns, pod, &out, &err) < 0)
		fail_msg("create pod %s: %s", name, err.message);
	char *uid = xstrdup(kube_obj_str(out, "metadata.uid"));
	json_decref(out);
	json_decref(pod);
	struct wait_pod w = {name, false};
	if (!it_wait(pod_state, &w, 30000))
		fail_msg("pod %s: not Running and Ready within 30 s", name);
	return uid;
}

static void pod_delete(const char *name)
{
	long zero = 0;
	struct kube_delete_options o = {.grace_period_seconds = &zero};
	struct kube_error err;
	if (kube_delete(admin, &KUBE_PODS, ns, name, &o, &err) < 0)
		fail_msg("delete pod %s: %s", name, err.message);
	struct wait_pod w = {name, true};
	if (!it_wait(pod_state, &w, 30000))
		fail_msg("pod %s: still there 30 s after its deletion", name);
}

/* ---- The mode ConfigMap ---- */

static void config_delete(void)
{
	struct kube_error err;
	if (kube_delete(admin, &KUBE_CONFIGMAPS, CONFIG_NAMESPACE, CONFIG_NAME, NULL, &err) < 0 &&
	    err.code != 404)
		fail_msg("delete configmap %s: %s", CONFIG_NAME, err.message);
}

static void config_set(const char *mode, const char *delay)
{
	config_delete();
	json_t *cm = it_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
			     "\"data\":{\"mode\":\"%s\",\"delay\":\"%s\"}}",
			     CONFIG_NAME, mode, delay);
	struct kube_error err;
	if (kube_create(admin, &KUBE_CONFIGMAPS, CONFIG_NAMESPACE, cm, NULL, &err) < 0)
		fail_msg("create configmap %s: %s", CONFIG_NAME, err.message);
	json_decref(cm);
}

/* ---- Tests ---- */

/* online (the default): 1Gi -> 2Gi completes within seconds; PV and PVC status as the resizer leaves them. */
static void test_online(void **state)
{
	(void)state;
	wait_bound("data");
	pvc_grow("data", "2Gi");
	struct expect done = {.capacity = "2Gi", .allocated = "2Gi", .status = "", .condition = ""};
	json_decref(wait_pvc("data", &done, RESIZE_TIMEOUT_MS));
	check_pv_capacity("data", "2Gi");
}

/*
 * offline: FileSystemResizePending until a pod with another UID mounts the
 * claim and is Ready; the pod that mounted it when the step began does not
 * count, however long it runs.
 */
static void test_offline(void **state)
{
	(void)state;
	char *uid1 = pod_start("app", "data");
	pvc_mode("data", "offline");
	pvc_grow("data", "3Gi");
	struct expect pending = {.capacity = "2Gi", .allocated = "3Gi", .status = "NodeResizePending",
				 .condition = "FileSystemResizePending"};
	json_t *pvc = wait_pvc("data", &pending, RESIZE_TIMEOUT_MS);
	const json_t *c = condition(pvc, "FileSystemResizePending");
	assert_string_equal(json_string_value(json_object_get(c, "message")), FS_PENDING_MESSAGE);
	assert_null(condition(pvc, "Resizing"));
	json_decref(pvc);
	check_pv_capacity("data", "3Gi");

	it_sleep_ms(1500); /* the running pod alone never finishes it */
	check_pvc("data", &pending, "1.5 s later with the same pod");
	pod_delete("app");
	check_pvc("data", &pending, "with no pod");

	char *uid2 = pod_start("app", "data");
	assert_string_not_equal(uid1, uid2);
	struct expect done = {.capacity = "3Gi", .allocated = "3Gi", .status = "", .condition = ""};
	json_decref(wait_pvc("data", &done, RESIZE_TIMEOUT_MS));
	free(uid1);
	free(uid2);
}

/*
 * fail: ControllerResizeError, nothing else changes. Kubernetes 1.34 lets
 * the request be lowered (KEP-1790), but only to above status.capacity:
 * lowering to the capacity itself is refused (422). A lowered request is
 * a new attempt, which fails too while the mode is fail, and completes
 * once the mode is online again.
 */
static void test_fail(void **state)
{
	(void)state;
	pvc_mode("data", "fail");
	pvc_grow("data", "4Gi");
	struct expect failed = {.capacity = "3Gi", .allocated = "4Gi", .status = "ControllerResizeInfeasible",
				.condition = "ControllerResizeError"};
	json_t *pvc = wait_pvc("data", &failed, RESIZE_TIMEOUT_MS);
	const json_t *c = condition(pvc, "ControllerResizeError");
	assert_string_equal(json_string_value(json_object_get(c, "message")), FAIL_MESSAGE);
	assert_null(condition(pvc, "Resizing"));
	json_decref(pvc);
	check_pv_capacity("data", "3Gi");

	struct kube_error err;
	assert_int_equal(pvc_request("data", "3Gi", &err), KUBE_EHTTP);
	assert_int_equal(err.code, 422);
	assert_string_equal(err.reason, "Invalid");
	assert_non_null(strstr(err.message, "spec.resources.requests.storage: Forbidden: "
					     "field can not be less than status.capacity"));

	assert_int_equal(pvc_request("data", "3584Mi", &err), 0);
	struct expect failed_lower = {.capacity = "3Gi", .allocated = "3584Mi",
				      .status = "ControllerResizeInfeasible", .condition = "ControllerResizeError"};
	json_decref(wait_pvc("data", &failed_lower, RESIZE_TIMEOUT_MS));
	check_pv_capacity("data", "3Gi");

	pvc_mode("data", "online");
	struct expect done = {.capacity = "3584Mi", .allocated = "3584Mi", .status = "", .condition = ""};
	json_decref(wait_pvc("data", &done, RESIZE_TIMEOUT_MS));
	check_pv_capacity("data", "3584Mi");
}

/* slow through the ConfigMap: Resizing shows at once, the capacity only after the delay. */
static void test_configmap_slow(void **state)
{
	(void)state;
	wait_bound("slow");
	config_set("slow", "2s");
	double t0 = it_now_ms();
	pvc_grow("slow", "2Gi");
	struct expect resizing = {.capacity = "1Gi", .allocated = "2Gi", .status = "ControllerResizeInProgress",
				  .condition = "Resizing"};
	json_decref(wait_pvc("slow", &resizing, 1500));
	struct expect done = {.capacity = "2Gi", .allocated = "2Gi", .status = "", .condition = ""};
	json_decref(wait_pvc("slow", &done, RESIZE_TIMEOUT_MS));
	double took = it_now_ms() - t0;
	if (took < 1900)
		fail_msg("slow mode with delay 2s completed after %.0f ms", took);
	check_pv_capacity("slow", "2Gi");

	config_delete(); /* back to online */
	pvc_grow("slow", "3Gi");
	struct expect done3 = {.capacity = "3Gi", .allocated = "3Gi", .status = "", .condition = ""};
	json_decref(wait_pvc("slow", &done3, RESIZE_TIMEOUT_MS));
}

/* A class without allowVolumeExpansion: the API server refuses the bigger request outright. */
static void test_fixed_refused(void **state)
{
	(void)state;
	wait_bound("fixed");
	struct kube_error err;
	assert_int_equal(pvc_request("fixed", "2Gi", &err), KUBE_EHTTP);
	assert_int_equal(err.code, 403);
	assert_string_equal(err.reason, "Forbidden");
	assert_non_null(strstr(err.message, "only dynamically provisioned pvc can be resized and the "
					     "storageclass that provisions the pvc must support resize"));
	json_t *pvc = pvc_get("fixed");
	assert_true(size_is(kube_obj_str(pvc, "spec.resources.requests.storage"), "1Gi"));
	json_decref(pvc);
	struct expect unchanged = {.capacity = "1Gi", .status = "", .condition = ""};
	check_pvc("fixed", &unchanged, "after the refused request");
}

static int setup(void **state)
{
	(void)state;
	admin = it_admin_client();
	ns = it_namespace_new(admin, "it-resizer");
	config_delete(); /* the default mode, whatever a failed earlier run left */
	/* All at once: binding takes a few seconds each. */
	pvc_create("data", "expandable", "1Gi");
	pvc_create("slow", "expandable", "1Gi");
	pvc_create("fixed", "fixed", "1Gi");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	struct kube_error err;
	if (kube_delete(admin, &KUBE_CONFIGMAPS, CONFIG_NAMESPACE, CONFIG_NAME, NULL, &err) < 0 &&
	    err.code != 404)
		fprintf(stderr, "warning: delete configmap %s: %s\n", CONFIG_NAME, err.message);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_online),
		cmocka_unit_test(test_offline),
		cmocka_unit_test(test_fail),
		cmocka_unit_test(test_configmap_slow),
		cmocka_unit_test(test_fixed_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
