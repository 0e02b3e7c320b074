/*
 * testbed-pvc-resizer's ModifyVolume side (tests/testbed/pvc_modifier.c)
 * against a small fake API server (libmicrohttpd on loopback; the test bed
 * itself is not for unit tests): which objects it writes, through which
 * paths, in which order. The claim's class is written through the status
 * subresource only; the PV takes the class before the claim shows it as
 * current; a PV bound to another claim is never written; a failed or
 * pending modification is written once, not on every look; a PV
 * provisioned without the class its new claim asks for gets it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "loopback.h"
#include "pvc_modifier.h"
#include "pvc_modify_plan.h"
#include "runtime/events.h"
#include "runtime/store.h"
#include "util/xalloc.h"

#define PVC_PATH "/api/v1/namespaces/db/persistentvolumeclaims/data-db-0"
#define PV_PATH "/api/v1/persistentvolumes/pv-1"
#define VAC_PATH "/apis/storage.k8s.io/v1/volumeattributesclasses/"

#define MAX_LOG 32

/* The fake API server: objects by path; PATCH is a merge patch with a resourceVersion precondition. */
struct fake {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	json_t *objects; /* path -> object */
	json_t *events;  /* the Events created (POST .../events) */
	int rv;
	char log[MAX_LOG][160]; /* "METHOD path" of each request */
	int nlog;
};

struct upload {
	char *body;
	size_t len;
};

/* RFC 7386 merge of patch into target. */
static void merge(json_t *target, const json_t *patch)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)patch, k, v) {
		json_t *cur = json_object_get(target, k);
		if (json_is_null(v))
			json_object_del(target, k);
		else if (json_is_object(v) && json_is_object(cur))
			merge(cur, v);
		else
			json_object_set_new(target, k, json_deep_copy(v));
	}
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned int code, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static json_t *status_body(int code, const char *reason)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "status", "Failure",
			 "reason", reason, "code", code);
}

/* Answers one whole request, under the lock. */
static enum MHD_Result serve(struct fake *f, struct MHD_Connection *conn, const char *url, const char *method,
			     const struct upload *up)
{
	if (f->nlog < MAX_LOG)
		snprintf(f->log[f->nlog++], sizeof(f->log[0]), "%s %s", method, url);
	char path[256];
	snprintf(path, sizeof(path), "%s", url);
	size_t n = strlen(path);
	bool status_sub = n > 7 && !strcmp(path + n - 7, "/status");
	if (status_sub)
		path[n - 7] = '\0';
	if (!strcmp(method, "POST") && n > 7 && !strcmp(path + n - 7, "/events")) {
		json_t *ev = json_loadb(up->body ? up->body : "", up->len, 0, NULL);
		if (!ev)
			return answer(conn, 400, status_body(400, "BadRequest"));
		json_array_append(f->events, ev);
		return answer(conn, 201, ev);
	}
	json_t *obj = json_object_get(f->objects, path);
	if (!obj)
		return answer(conn, 404, status_body(404, "NotFound"));
	if (!strcmp(method, "GET"))
		return answer(conn, 200, json_deep_copy(obj));
	if (strcmp(method, "PATCH"))
		return answer(conn, 405, status_body(405, "MethodNotAllowed"));
	json_t *patch = json_loadb(up->body ? up->body : "", up->len, 0, NULL);
	if (!json_is_object(patch)) {
		json_decref(patch);
		return answer(conn, 400, status_body(400, "BadRequest"));
	}
	const char *want = kube_obj_str(patch, "metadata.resourceVersion");
	if (want && strcmp(want, kube_obj_str(obj, "metadata.resourceVersion"))) {
		json_decref(patch);
		return answer(conn, 409, status_body(409, "Conflict"));
	}
	/* The status subresource writes status only; the main resource everything else. */
	if (status_sub) {
		json_t *st = json_object_get(patch, "status");
		if (!json_object_get(obj, "status"))
			json_object_set_new(obj, "status", json_object());
		if (json_is_object(st))
			merge(json_object_get(obj, "status"), st);
	} else {
		json_object_del(patch, "status");
		json_object_del(patch, "metadata");
		merge(obj, patch);
	}
	json_decref(patch);
	char rv[32];
	snprintf(rv, sizeof(rv), "%d", ++f->rv);
	json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(rv));
	return answer(conn, 200, json_deep_copy(obj));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *data, size_t *size, void **con_cls)
{
	(void)version;
	struct fake *f = cls;
	struct upload *up = *con_cls;
	if (!up) {
		*con_cls = xcalloc(1, sizeof(*up));
		return MHD_YES;
	}
	if (*size) {
		up->body = xrealloc(up->body, up->len + *size + 1);
		memcpy(up->body + up->len, data, *size);
		up->len += *size;
		up->body[up->len] = '\0';
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&f->lock);
	enum MHD_Result r = serve(f, conn, url, method, up);
	pthread_mutex_unlock(&f->lock);
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	struct upload *up = *con_cls;
	if (up)
		free(up->body);
	free(up);
	*con_cls = NULL;
}

/* What the modifier under test sees as the resizer's delay. */
static long test_delay = 0;

static long delay_of(void *ctx, const json_t *pvc)
{
	(void)ctx;
	(void)pvc;
	return test_delay;
}

struct env {
	struct fake f;
	struct kube_client *client;
	struct store *pvs, *vacs;
	struct pvc_modifier m;
};

/* A claim of spec class spec (current slow) bound to pv-1, whose claimRef has uid pv_claim_uid. */
static void env_start(struct env *e, const char *spec, const char *pv_claim_uid)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->f.lock, NULL);
	e->f.rv = 10;
	e->f.objects = json_object();
	e->f.events = json_array();
	json_object_set_new(e->f.objects, PVC_PATH,
			    json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s, s:[{s:s, s:s}]}}",
				      "apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata", "namespace",
				      "db", "name", "data-db-0", "uid", "claim-uid",
				      "resourceVersion", "1", "spec", "volumeName", "pv-1",
				      "volumeAttributesClassName", spec, "status", "phase", "Bound",
				      "currentVolumeAttributesClassName", "slow", "conditions", "type", "Resizing",
				      "status", "True"));
	json_object_set_new(e->f.objects, PV_PATH,
			    json_pack("{s:{s:s, s:s}, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s}}}", "metadata", "name",
				      "pv-1", "resourceVersion", "2", "spec", "volumeAttributesClassName", "slow",
				      "claimRef", "namespace", "db", "name", "data-db-0", "uid", pv_claim_uid, "csi",
				      "driver", "testbed", "volumeHandle", "pv-1"));
	json_object_set_new(e->f.objects, VAC_PATH "fast",
			    json_pack("{s:{s:s, s:s}, s:s, s:{s:s}}", "metadata", "name", "fast", "resourceVersion",
				      "3", "driverName", "testbed", "parameters", "iops", "6000"));
	json_object_set_new(e->f.objects, VAC_PATH "bad",
			    json_pack("{s:{s:s, s:s}, s:s, s:{s:s}}", "metadata", "name", "bad", "resourceVersion",
				      "4", "driverName", "testbed", "parameters", MODIFY_FAIL_PARAMETER, "true"));
	e->f.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				       on_request, &e->f, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				       MHD_OPTION_END);
	assert_non_null(e->f.daemon);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(e->f.daemon, MHD_DAEMON_INFO_BIND_PORT);
	struct kube_client_options o = {.max_retries = -1};
	e->client = loopback_client(info->port, &o);
	/* Empty caches: the modifier reads what it needs from the server. */
	e->pvs = store_new();
	e->vacs = store_new();
	e->m.client = e->client;
	e->m.pvs = e->pvs;
	e->m.vacs = e->vacs;
	e->m.delay_ms = delay_of;
	e->m.events = event_recorder_new(e->client, "external-resizer", "test");
	pvc_modifier_init(&e->m);
	test_delay = 0;
}

static void env_stop(struct env *e)
{
	pvc_modifier_release(&e->m);
	event_recorder_free(e->m.events);
	json_decref(e->f.events);
	kube_client_free(e->client);
	MHD_stop_daemon(e->f.daemon);
	store_free(e->pvs);
	store_free(e->vacs);
	json_decref(e->f.objects);
	pthread_mutex_destroy(&e->f.lock);
}

static const json_t *object(struct env *e, const char *path)
{
	return json_object_get(e->f.objects, path);
}

/* The index of the first request "METHOD path" at or after from, or -1. */
static int logged(struct env *e, const char *request, int from)
{
	for (int i = from; i < e->f.nlog; i++)
		if (!strcmp(e->f.log[i], request))
			return i;
	return -1;
}

/* The Event of reason recorded on the claim, or NULL. */
static const json_t *event(struct env *e, const char *reason)
{
	size_t i;
	const json_t *ev;
	json_array_foreach(e->f.events, i, ev)
		if (!strcmp(kube_obj_str(ev, "reason"), reason) &&
		    !strcmp(kube_obj_str(ev, "involvedObject.name"), "data-db-0"))
			return ev;
	return NULL;
}

static int patches(struct env *e)
{
	int n = 0;
	for (int i = 0; i < e->f.nlog; i++)
		n += !strncmp(e->f.log[i], "PATCH ", 6);
	return n;
}

static void test_modification_ends_with_pv_then_claim_status(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "fast", "claim-uid");
	long requeue = -1;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_int_equal(requeue, 0);
	const json_t *pvc = object(&e, PVC_PATH);
	assert_string_equal(kube_obj_str(pvc, "status.currentVolumeAttributesClassName"), "fast");
	assert_null(json_object_get(json_object_get(pvc, "status"), "modifyVolumeStatus"));
	assert_true(kube_obj_condition(pvc, "Resizing", NULL)); /* not ours: kept */
	assert_false(kube_obj_condition(pvc, MODIFY_CONDITION_MODIFYING, NULL));
	assert_string_equal(kube_obj_str(object(&e, PV_PATH), "spec.volumeAttributesClassName"), "fast");
	/* InProgress first, then the PV, then the claim's current class; the claim only through /status. */
	int start = logged(&e, "PATCH " PVC_PATH "/status", 0);
	int pv = logged(&e, "PATCH " PV_PATH, 0);
	int finish = logged(&e, "PATCH " PVC_PATH "/status", start + 1);
	assert_true(start >= 0 && pv > start && finish > pv);
	assert_int_equal(logged(&e, "PATCH " PVC_PATH, 0), -1);
	assert_int_equal(patches(&e), 3);
	assert_non_null(event(&e, "VolumeModify"));
	assert_string_equal(kube_obj_str(event(&e, "VolumeModifySuccessful"), "type"), "Normal");

	/* Done: a second look writes nothing. */
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_int_equal(patches(&e), 3);
	env_stop(&e);
}

/* A hostPath or local volume cannot carry the class (the API server wants spec.csi): the claim alone does. */
static void test_volume_without_csi_keeps_the_class_on_the_claim(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "fast", "claim-uid");
	json_object_del(json_object_get(object(&e, PV_PATH), "spec"), "csi");
	long requeue = -1;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_string_equal(kube_obj_str(object(&e, PVC_PATH), "status.currentVolumeAttributesClassName"), "fast");
	assert_string_equal(kube_obj_str(object(&e, PV_PATH), "spec.volumeAttributesClassName"), "slow");
	assert_int_equal(logged(&e, "PATCH " PV_PATH, 0), -1);
	env_stop(&e);
}

static void test_delay_leaves_it_in_progress(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "fast", "claim-uid");
	test_delay = 60000;
	long requeue = 0;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_true(requeue > 50000 && requeue <= 60000);
	const json_t *pvc = object(&e, PVC_PATH);
	assert_string_equal(kube_obj_str(pvc, "status.modifyVolumeStatus.status"), "InProgress");
	assert_string_equal(kube_obj_str(pvc, "status.modifyVolumeStatus.targetVolumeAttributesClassName"), "fast");
	assert_string_equal(kube_obj_str(pvc, "status.currentVolumeAttributesClassName"), "slow");
	assert_true(kube_obj_condition(pvc, MODIFY_CONDITION_MODIFYING, NULL));
	assert_string_equal(kube_obj_str(object(&e, PV_PATH), "spec.volumeAttributesClassName"), "slow");
	env_stop(&e);
}

static void test_failing_class_is_infeasible_once(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "bad", "claim-uid");
	long requeue = 0;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	const json_t *pvc = object(&e, PVC_PATH);
	assert_string_equal(kube_obj_str(pvc, "status.modifyVolumeStatus.status"), "Infeasible");
	assert_string_equal(kube_obj_str(pvc, "status.modifyVolumeStatus.targetVolumeAttributesClassName"), "bad");
	assert_string_equal(kube_obj_str(pvc, "status.currentVolumeAttributesClassName"), "slow");
	assert_true(kube_obj_condition(pvc, MODIFY_CONDITION_ERROR, NULL));
	assert_string_equal(kube_obj_str(event(&e, "VolumeModifyFailed"), "type"), "Warning");
	assert_null(event(&e, "VolumeModifySuccessful"));
	assert_string_equal(kube_obj_str(object(&e, PV_PATH), "spec.volumeAttributesClassName"), "slow");
	assert_int_equal(logged(&e, "PATCH " PV_PATH, 0), -1);
	int n = patches(&e);
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_int_equal(patches(&e), n);
	env_stop(&e);
}

static void test_missing_class_is_pending(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "gold", "claim-uid");
	long requeue = 0;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_true(logged(&e, "GET " VAC_PATH "gold", 0) >= 0); /* not cached: asked for */
	const json_t *pvc = object(&e, PVC_PATH);
	assert_string_equal(kube_obj_str(pvc, "status.modifyVolumeStatus.status"), "Pending");
	assert_non_null(strstr(kube_obj_str(event(&e, "VolumeModifyFailed"), "message"), "\"gold\""));
	assert_int_equal(patches(&e), 1);
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), 0);
	assert_int_equal(patches(&e), 1);
	env_stop(&e);
}

static void test_pv_of_another_claim_is_left_alone(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "fast", "someone-else");
	long requeue = 0;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), -1);
	assert_int_equal(logged(&e, "PATCH " PV_PATH, 0), -1);
	const json_t *pvc = object(&e, PVC_PATH);
	assert_string_equal(kube_obj_str(pvc, "status.currentVolumeAttributesClassName"), "slow");
	assert_string_equal(kube_obj_str(pvc, "status.modifyVolumeStatus.status"), "InProgress");
	env_stop(&e);
}

static void test_unknown_delay_writes_nothing(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "fast", "claim-uid");
	test_delay = -1; /* the resizer's ConfigMap could not be read */
	long requeue = 0;
	assert_int_equal(pvc_modifier_reconcile(&e.m, "db", "data-db-0", &requeue), -1);
	assert_int_equal(patches(&e), 0);
	env_stop(&e);
}

#define NEW_PVC_PATH "/api/v1/namespaces/db/persistentvolumeclaims/data-db-3"
#define NEW_PV_PATH "/api/v1/persistentvolumes/pvc-u3"

/* A claim created with class cls, not bound yet, and the PV the host-path provisioner made for it. */
static void add_provisioned(struct env *e, const char *cls)
{
	json_object_set_new(e->f.objects, NEW_PVC_PATH,
			    json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:s}, s:{s:s}}", "metadata", "namespace", "db",
				      "name", "data-db-3", "uid", "u3", "resourceVersion", "5", "spec",
				      "volumeAttributesClassName", cls, "status", "phase", "Pending"));
	json_object_set_new(e->f.objects, NEW_PV_PATH,
			    json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s}, s:{s:s, s:s}}}", "metadata", "name",
				      "pvc-u3", "resourceVersion", "6", "annotations", "pv.kubernetes.io/provisioned-by",
				      "testbed", "spec", "claimRef", "namespace", "db", "name", "data-db-3", "uid", "u3",
				      "csi", "driver", "testbed", "volumeHandle", "pvc-u3"));
}

static void test_provisioned_pv_gets_the_class_its_claim_asks_for(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "slow", "claim-uid");
	add_provisioned(&e, "fast");
	assert_int_equal(pvc_modifier_provisioned(&e.m, "pvc-u3"), 0);
	assert_string_equal(kube_obj_str(object(&e, NEW_PV_PATH), "spec.volumeAttributesClassName"), "fast");
	/* The claim is the PV controller's to bind: not written. */
	assert_int_equal(logged(&e, "PATCH " NEW_PVC_PATH, 0), -1);
	assert_int_equal(logged(&e, "PATCH " NEW_PVC_PATH "/status", 0), -1);
	assert_int_equal(patches(&e), 1);
	/* Given: nothing more. */
	assert_int_equal(pvc_modifier_provisioned(&e.m, "pvc-u3"), 0);
	assert_int_equal(patches(&e), 1);
	/* Other PVs (bound, not provisioned for a waiting claim) are left alone. */
	assert_int_equal(pvc_modifier_provisioned(&e.m, "pv-1"), 0);
	assert_int_equal(patches(&e), 1);
	env_stop(&e);
}

static void test_provisioned_pv_waits_for_a_missing_class(void **unused)
{
	(void)unused;
	struct env e;
	env_start(&e, "slow", "claim-uid");
	add_provisioned(&e, "gold");
	assert_int_equal(pvc_modifier_provisioned(&e.m, "pvc-u3"), 0);
	assert_null(kube_obj_str(object(&e, NEW_PV_PATH), "spec.volumeAttributesClassName"));
	assert_int_equal(patches(&e), 0);
	env_stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modification_ends_with_pv_then_claim_status),
		cmocka_unit_test(test_volume_without_csi_keeps_the_class_on_the_claim),
		cmocka_unit_test(test_delay_leaves_it_in_progress),
		cmocka_unit_test(test_failing_class_is_infeasible_once),
		cmocka_unit_test(test_missing_class_is_pending),
		cmocka_unit_test(test_pv_of_another_claim_is_left_alone),
		cmocka_unit_test(test_unknown_delay_writes_nothing),
		cmocka_unit_test(test_provisioned_pv_gets_the_class_its_claim_asks_for),
		cmocka_unit_test(test_provisioned_pv_waits_for_a_missing_class),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
