/*
 * Volumes in volumeMode Block on the real node: the test bed's provisioner
 * hands a pod a loop device as the volume (no file system), and the
 * workload (workload.sh with DEVICE) writes random bytes at several offsets
 * of it, and reports their checksums, the first 64Mi's checksum and the
 * device's size at every start and stop.
 *   - resize by copy (a class that cannot expand, 64Mi -> 128Mi): the
 *     replica comes back on a new, larger device holding the same bytes at
 *     every offset and over the old size;
 *   - in-place growth (a class that can expand): the running pod keeps
 *     running and sees the larger device, its bytes unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "realnode.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "blk"
#define DEVICE "/dev/data"
#define OLD_BYTES (64LL << 20)
#define NEW_BYTES (128LL << 20)

/* The workload set of one replica on a 64Mi Block volume of class cls. New object. */
static json_t *block_set(const struct rn_test *t, const char *cls)
{
	json_t *sts = rn_workload_set(t, SET, 1, cls, "64Mi", 0);
	json_t *spec = json_object_get(sts, "spec");
	json_t *tmpl = json_array_get(json_object_get(spec, "volumeClaimTemplates"), 0);
	json_object_set_new(json_object_get(tmpl, "spec"), "volumeMode", json_string("Block"));
	json_t *c = json_array_get(
		json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "containers"), 0);
	/* The claim as a device, not a mount. */
	json_t *mounts = json_object_get(c, "volumeMounts");
	for (size_t i = 0; i < json_array_size(mounts); i++) {
		if (!strcmp(kube_obj_str(json_array_get(mounts, i), "name"), "data")) {
			json_array_remove(mounts, i);
			break;
		}
	}
	json_object_set_new(c, "volumeDevices", json_pack("[{s:s, s:s}]", "name", "data", "devicePath", DEVICE));
	char *offsets = xasprintf("0 1048575 %lld %lld", (10LL << 20) + 123, OLD_BYTES - 4096);
	char *first = xasprintf("%lld", OLD_BYTES);
	json_t *env = json_object_get(c, "env");
	json_array_append_new(env, json_pack("{s:s, s:s}", "name", "DEVICE", "value", DEVICE));
	json_array_append_new(env, json_pack("{s:s, s:s}", "name", "OFFSETS", "value", offsets));
	json_array_append_new(env, json_pack("{s:s, s:s}", "name", "HASH_BYTES", "value", first));
	free(first);
	free(offsets);
	return sts;
}

/* The report's line starting with key (new string, without its newline), or NULL. */
static char *line_of(const char *report, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, n)) {
			size_t len = strcspn(p, "\n");
			return xstrndup(p, len);
		}
	}
	return NULL;
}

/* The bytes at every offset and over the first 64Mi are the same in both reports; the device has size bytes. */
static void expect_same_bytes(const char *before, const char *after, long long size, const char *what)
{
	int ats = 0;
	for (const char *p = before; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, "at ", 3) && strncmp(p, "first ", 6))
			continue;
		char *want = xstrndup(p, strcspn(p, "\n"));
		char *key = xstrndup(want, (size_t)(strrchr(want, ' ') - want));
		char *have = line_of(after, key);
		if (!have || strcmp(have, want))
			fail_msg("%s: \"%s\" before, \"%s\" after", what, want, have ? have : "(none)");
		ats += !strncmp(p, "at ", 3);
		free(have);
		free(key);
		free(want);
	}
	if (ats != 4)
		fail_msg("%s: %d offsets reported, not 4:\n%s", what, ats, before);
	char *line = line_of(after, "size ");
	char want[64];
	snprintf(want, sizeof(want), "size %lld", size);
	if (!line || strcmp(line, want))
		fail_msg("%s: the device has \"%s\", want \"%s\"", what, line ? line : "(none)", want);
	free(line);
}

/* The one replica on a Block volume of class cls, Ready and reported; its pod's UID (new string). */
static char *start_block_set(struct rn_test *t, const char *cls)
{
	json_t *sts = block_set(t, cls);
	rn_create_workload(t, sts, 1);
	json_decref(sts);
	return rn_pod_uid(t, SET "-0");
}

static void test_copy_moves_the_devices_bytes(void **state)
{
	struct rn_test *t = *state;
	char *old_uid = start_block_set(t, "local-fixed");
	char *old_pv = rn_claim_volume(t, "data-" SET "-0");
	rn_start_operator(t);
	double t0 = it_now_ms();
	rn_annotate(t, "statefulset/" SET, "resize.stateful-operator.io/data=128Mi");
	rn_wait_resize(t, SET, RN_WAIT_MS, NULL);
	double took = it_now_ms() - t0;
	rn_wait_workload(t, SET, 1);
	char *uid = rn_pod_uid(t, SET "-0");
	assert_string_not_equal(uid, old_uid);
	char *before = rn_wait_report(t, old_uid, "stop", 1000);
	char *after = rn_wait_report(t, uid, "start", 1000);
	expect_same_bytes(before, after, NEW_BYTES, SET "-0 after the copy");
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-" SET "-0");
	assert_string_equal(kube_obj_str(pvc, "spec.volumeMode"), "Block");
	assert_string_equal(kube_obj_str(pvc, "status.capacity.storage"), "128Mi");
	assert_string_not_equal(kube_obj_str(pvc, "spec.volumeName"), old_pv);
	json_decref(pvc);
	printf("[ figures ] resize by copy of a 64Mi Block volume to 128Mi: %.1f s from the annotation to the end\n",
	       took / 1000);
	free(after);
	free(before);
	free(uid);
	free(old_pv);
	free(old_uid);
}

/* blockdev --getsize64 of the device inside the running pod. */
static long long device_bytes_in_pod(struct rn_test *t)
{
	char *out = it_sh_output("kubectl exec -n %s " SET "-0 -- blockdev --getsize64 " DEVICE, t->ns);
	long long n = out ? atoll(out) : -1;
	free(out);
	return n;
}

static void test_in_place_growth_of_a_device(void **state)
{
	struct rn_test *t = *state;
	char *uid = start_block_set(t, "local-expandable");
	assert_int_equal(device_bytes_in_pod(t), OLD_BYTES);
	rn_start_operator(t);
	struct rn_sampler sampler;
	rn_sampler_start(&sampler, t->ns, SET, 1);
	rn_annotate(t, "statefulset/" SET, "resize.stateful-operator.io/data=128Mi");
	rn_wait_resize(t, SET, RN_WAIT_MS, &sampler);
	assert_int_equal(sampler.max_down, 0); /* never restarted, never unready */
	char *now = rn_pod_uid(t, SET "-0");
	assert_string_equal(now, uid);
	assert_int_equal(device_bytes_in_pod(t), NEW_BYTES);
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-" SET "-0");
	assert_string_equal(kube_obj_str(pvc, "status.capacity.storage"), "128Mi");
	json_decref(pvc);
	/* The same bytes: the pod's report when it stops now. */
	char *before = rn_wait_report(t, uid, "start", 1000);
	it_sh("kubectl delete pod -n %s " SET "-0 --wait=true >/dev/null", t->ns);
	char *after = rn_wait_report(t, uid, "stop", 30000);
	expect_same_bytes(before, after, NEW_BYTES, SET "-0 grown in place");
	free(after);
	free(before);
	free(now);
	free(uid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_copy_moves_the_devices_bytes, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_in_place_growth_of_a_device, rn_setup, rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
