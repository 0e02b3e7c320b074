/*
 * The Pod cache's trim (controllers/pod_fields.h) on a pod as the API server
 * sends it: every field a controller reads is still there with the same
 * value, the large never-read ones are gone, and the pod is at least 4x
 * smaller.
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
#include "controllers/autoresize/usage_source.h"
#include "controllers/contract.h"
#include "controllers/pod_fields.h"
#include "controllers/set_index.h"
#include "runtime/manager.h"
#include "loopback.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* tests/fixtures/pods/replica.json: a StatefulSet's replica, one container Running, one terminated. */
static json_t *replica(void)
{
	json_error_t e;
	json_t *pod = json_load_file(SOP_POD_FIXTURES_DIR "/replica.json", 0, &e);
	if (!pod)
		fail_msg("%s: %s", SOP_POD_FIXTURES_DIR "/replica.json", e.text);
	return pod;
}

/* A path: keys, and "[n]" for an array's item n; at most 6 steps. */
struct path {
	const char *step[6];
};

static const json_t *at(const json_t *v, const struct path *p)
{
	for (size_t i = 0; i < NITEMS(p->step) && p->step[i] && v; i++)
		v = p->step[i][0] == '[' ? json_array_get(v, strtoul(p->step[i] + 1, NULL, 10))
					 : json_object_get(v, p->step[i]);
	return v;
}

static void path_text(const struct path *p, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < NITEMS(p->step) && p->step[i]; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "." : "", p->step[i]);
}

/* What the controllers read (pod_fields.c names who): the same value before and after. */
static const struct path kept[] = {
	{{"apiVersion"}},
	{{"kind"}},
	{{"metadata", "name"}},
	{{"metadata", "namespace"}},
	{{"metadata", "uid"}},
	{{"metadata", "resourceVersion"}},
	{{"metadata", "creationTimestamp"}},
	{{"metadata", "labels"}},
	{{"metadata", "ownerReferences"}},
	{{"spec", "nodeName"}},
	{{"spec", "volumes", "[0]"}}, /* the claim's: name and persistentVolumeClaim */
	{{"spec", "volumes", "[0]", "persistentVolumeClaim", "claimName"}},
	{{"spec", "volumes", "[1]", "name"}},
	{{"spec", "volumes", "[2]", "name"}},
	{{"status", "phase"}},
	{{"status", "startTime"}},
	{{"status", "hostIP"}},
	{{"status", "containerStatuses", "[0]", "name"}},
	{{"status", "containerStatuses", "[0]", "state"}},
	{{"status", "containerStatuses", "[0]", "ready"}},
	{{"status", "containerStatuses", "[0]", "restartCount"}},
	{{"status", "containerStatuses", "[1]", "name"}},
	{{"status", "containerStatuses", "[1]", "state"}},
	{{"status", "containerStatuses", "[1]", "state", "terminated", "message"}},
	{{"status", "containerStatuses", "[1]", "state", "terminated", "finishedAt"}},
	{{"status", "containerStatuses", "[1]", "state", "terminated", "exitCode"}},
};

/* Never read, and most of the pod: present before, gone after. */
static const struct path dropped[] = {
	{{"metadata", "annotations", "kubectl.kubernetes.io/default-container"}},
	{{"metadata", "annotations", "prometheus.io/scrape"}},
	{{"spec", "containers"}},
	{{"spec", "tolerations"}},
	{{"spec", "securityContext"}},
	{{"spec", "serviceAccountName"}},
	{{"spec", "hostname"}},
	{{"spec", "volumes", "[1]", "configMap"}},
	{{"spec", "volumes", "[2]", "projected"}}, /* the service-account token's */
	{{"status", "conditions", "[1]"}}, /* Initialized: only Ready stays, alone */
	{{"status", "podIP"}},
	{{"status", "podIPs"}},
	{{"status", "hostIPs"}},
	{{"status", "qosClass"}},
	{{"status", "containerStatuses", "[0]", "image"}},
	{{"status", "containerStatuses", "[0]", "imageID"}},
	{{"status", "containerStatuses", "[0]", "containerID"}},
	{{"status", "containerStatuses", "[0]", "volumeMounts"}},
	{{"status", "containerStatuses", "[0]", "allocatedResources"}},
	{{"status", "containerStatuses", "[0]", "user"}},
	{{"status", "containerStatuses", "[1]", "lastState"}},
};

static void test_kept_fields_keep_their_values(void **state)
{
	(void)state;
	json_t *pod = replica(), *trimmed = json_deep_copy(pod);
	pod_fields_keep(trimmed);
	char name[256];
	for (size_t i = 0; i < NITEMS(kept); i++) {
		path_text(&kept[i], name, sizeof(name));
		const json_t *was = at(pod, &kept[i]), *is = at(trimmed, &kept[i]);
		if (!was)
			fail_msg("%s: not in the fixture", name);
		if (!is || !json_equal(was, is))
			fail_msg("%s: %s after the trim", name, is ? "changed" : "gone");
	}
	/* Of the conditions, Ready whole. */
	const json_t *ready = kube_array_find(at(pod, &(struct path){{"status", "conditions"}}), "type", "Ready");
	const json_t *conditions = at(trimmed, &(struct path){{"status", "conditions"}});
	assert_int_equal(json_array_size(conditions), 1);
	assert_true(json_equal(json_array_get(conditions, 0), ready));
	/* metadata whole but for the annotations (none read on a replica). */
	json_t *meta = json_deep_copy(json_object_get(pod, "metadata"));
	json_object_set_new(meta, "annotations", json_object());
	assert_true(json_equal(meta, json_object_get(trimmed, "metadata")));
	json_decref(meta);
	json_decref(trimmed);
	json_decref(pod);
}

static void test_unread_fields_are_gone(void **state)
{
	(void)state;
	json_t *pod = replica(), *trimmed = json_deep_copy(pod);
	pod_fields_keep(trimmed);
	char name[256];
	for (size_t i = 0; i < NITEMS(dropped); i++) {
		path_text(&dropped[i], name, sizeof(name));
		if (!at(pod, &dropped[i]))
			fail_msg("%s: not in the fixture", name);
		if (at(trimmed, &dropped[i]))
			fail_msg("%s: still there", name);
	}
	/* Only the claim's volume keeps a body. */
	assert_int_equal(json_object_size(at(trimmed, &(struct path){{"spec", "volumes", "[2]"}})), 1);
	json_decref(trimmed);
	json_decref(pod);
}

/* What the readers compute from the pod is the same from the trimmed one. */
static void test_readers_see_the_same(void **state)
{
	(void)state;
	json_t *pod = replica();
	/* Terminating and Ready: kube_pod_ready reads both. */
	json_object_set_new(json_object_get(pod, "metadata"), "deletionTimestamp", json_string("2026-11-28T23:00:00Z"));
	json_object_set_new(json_object_get(pod, "metadata"), "deletionGracePeriodSeconds", json_integer(30));
	json_object_set_new(json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 2), "status",
			    json_string("True"));
	json_t *trimmed = json_deep_copy(pod);
	pod_fields_keep(trimmed);
	assert_true(kube_obj_terminating(trimmed));
	assert_int_equal(kube_obj_int(trimmed, "metadata", "deletionGracePeriodSeconds", 0), 30);
	assert_true(kube_obj_condition(trimmed, "Ready", NULL));
	assert_true(kube_obj_controlled_by(trimmed, "0b8e4f52-1d6a-4c39-9e27-5a3f8c1d7e60"));

	/* autoresize: which node may speak for which claim. */
	json_t *before = json_object(), *after = json_object();
	usage_mounts_add_pod(before, pod);
	usage_mounts_add_pod(after, trimmed);
	assert_true(json_equal(before, after));
	assert_non_null(json_object_get(json_object_get(after, "shop/data-db-1"), "worker-3"));
	json_decref(before);
	json_decref(after);

	/* The workload index. */
	char **v1 = NULL, **v2 = NULL;
	size_t n1 = set_index_pod(pod, &v1), n2 = set_index_pod(trimmed, &v2);
	assert_int_equal(n1, n2);
	assert_int_equal(n1, 1);
	assert_string_equal(v1[0], v2[0]);
	for (size_t i = 0; i < n1; i++) {
		free(v1[i]);
		free(v2[i]);
	}
	free(v1);
	free(v2);
	json_decref(trimmed);
	json_decref(pod);
}

static void test_at_least_four_times_smaller(void **state)
{
	(void)state;
	json_t *pod = replica(), *trimmed = json_deep_copy(pod);
	pod_fields_keep(trimmed);
	char *a = json_dumps(pod, JSON_COMPACT), *b = json_dumps(trimmed, JSON_COMPACT);
	size_t la = strlen(a), lb = strlen(b);
	print_message("compact JSON: %zu -> %zu bytes (%.1fx)\n", la, lb, (double)la / (double)lb);
	assert_true(lb * 4 <= la);
	free(a);
	free(b);
	json_decref(trimmed);
	json_decref(pod);
}

/* A failed pod's reason and message (cluster, scale-down) stay. */
static void test_failure_kept(void **state)
{
	(void)state;
	json_t *pod = json_pack("{s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}}", "metadata", "name", "db-0", "namespace", "x",
				"status", "phase", "Failed", "reason", "Evicted", "message",
				"The node was low on resource: ephemeral-storage.", "qosClass", "BestEffort");
	pod_fields_keep(pod);
	assert_string_equal(kube_obj_str(pod, "status.reason"), "Evicted");
	assert_string_equal(kube_obj_str(pod, "status.message"), "The node was low on resource: ephemeral-storage.");
	assert_string_equal(kube_obj_str(pod, "status.phase"), "Failed");
	assert_null(kube_obj_str(pod, "status.qosClass"));
	json_decref(pod);
}

/* A cleanup pod's annotations (scale-down reads them) stay; others go, ours that are not read too. */
static void test_cleanup_annotations_kept(void **state)
{
	(void)state;
	json_t *pod = json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "metadata", "annotations",
				ANNOTATION_CLEANUP_CLAIMS, "{\"data-db-3\":\"0b8e4f52\"}", ANNOTATION_CLEANUP_ATTEMPT, "2",
				ANNOTATION_CLEANUP_ORDINAL, "3", ANNOTATION_IGNORE, "true", "sidecar.istio.io/status", "{}");
	pod_fields_keep(pod);
	const json_t *ann = kube_obj_annotations(pod);
	assert_int_equal(json_object_size(ann), 3);
	assert_string_equal(kube_obj_annotation(pod, ANNOTATION_CLEANUP_CLAIMS), "{\"data-db-3\":\"0b8e4f52\"}");
	assert_string_equal(kube_obj_annotation(pod, ANNOTATION_CLEANUP_ATTEMPT), "2");
	assert_string_equal(kube_obj_annotation(pod, ANNOTATION_CLEANUP_ORDINAL), "3");
	json_decref(pod);
}

/*
 * The manager hands the trim to its Pod cache (main.c sets it): a LIST from
 * a canned API server is cached trimmed; another resource's cache is not.
 */
static void test_manager_pod_cache_is_trimmed(void **state)
{
	(void)state;
	json_t *pod = replica();
	json_t *list = json_pack("{s:s, s:s, s:{s:s}, s:[O]}", "kind", "PodList", "apiVersion", "v1", "metadata",
				 "resourceVersion", "4812400", "items", pod);
	char *body = json_dumps(list, JSON_COMPACT);
	struct canned_server *srv = canned_server_start("200 OK", "application/json", body);
	struct kube_client *client = loopback_client(canned_server_port(srv), NULL);
	struct manager *m = manager_new(client, NULL);
	manager_set_transform(m, &KUBE_PODS, pod_fields_keep);
	struct informer *pods = manager_informer(m, &KUBE_PODS);
	struct informer *other = manager_informer(m, &KUBE_CONFIGMAPS);
	assert_int_equal(informer_start(pods), 0);
	assert_int_equal(informer_start(other), 0);
	assert_true(informer_wait_synced(pods, 10000));
	assert_true(informer_wait_synced(other, 10000));

	json_t *cached = store_get(informer_store(pods), "shop/db-1");
	json_t *trimmed = json_deep_copy(pod);
	pod_fields_keep(trimmed);
	assert_non_null(cached);
	assert_true(json_equal(cached, trimmed));
	json_decref(cached);
	cached = store_get(informer_store(other), "shop/db-1");
	assert_non_null(json_object_get(json_object_get(cached, "spec"), "containers"));
	json_decref(cached);

	manager_free(m); /* stops the informers */
	kube_client_free(client);
	canned_server_stop(srv);
	free(body);
	json_decref(trimmed);
	json_decref(list);
	json_decref(pod);
}

/* Odd shapes are trimmed as far as they go, never a crash. */
static void test_odd_shapes(void **state)
{
	(void)state;
	pod_fields_keep(NULL);
	json_t *s = json_string("not a pod");
	pod_fields_keep(s);
	json_decref(s);
	json_t *pod = json_pack("{s:s, s:{s:[s, {s:s, s:i}], s:s}, s:{s:s, s:[i]}, s:[]}", "metadata", "x", "spec",
				"volumes", "odd", "name", "v", "emptyDir", 1, "nodeName", "n", "status",
				"containerStatuses", "odd", "hostIPs", 1, "extra");
	pod_fields_keep(pod);
	assert_string_equal(json_string_value(json_object_get(pod, "metadata")), "x");
	assert_int_equal(json_array_size(json_object_get(json_object_get(pod, "spec"), "volumes")), 2);
	assert_null(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 1),
				    "emptyDir"));
	assert_null(json_object_get(json_object_get(pod, "status"), "hostIPs"));
	assert_null(json_object_get(pod, "extra"));
	json_decref(pod);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_fields_keep_their_values),
		cmocka_unit_test(test_unread_fields_are_gone),
		cmocka_unit_test(test_readers_see_the_same),
		cmocka_unit_test(test_at_least_four_times_smaller),
		cmocka_unit_test(test_failure_kept),
		cmocka_unit_test(test_cleanup_annotations_kept),
		cmocka_unit_test(test_odd_shapes),
		cmocka_unit_test(test_manager_pod_cache_is_trimmed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
