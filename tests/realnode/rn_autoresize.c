/*
 * Usage-driven growth on the real node: a pod fills its real xfs volume
 * past the policy's threshold; the operator reads the usage from the
 * kubelet's stats summary, showing the real kubelet a token of
 * ServiceAccount stateful-operator-usage-reader (nodes/stats only, minted
 * by TokenRequest; never the operator's own), and
 * every replica's claim and the template grow by the step, in place: the
 * pods keep running and df inside them shows the new size. Filling on past
 * the new threshold grows again only after the cooldown; at the maximum, a
 * Warning and no growth.
 *
 * The usage source refusing (kubelet-proxy without nodes/proxy): a Warning,
 * nothing changes; once the permission is granted, growth resumes.
 *
 * A policy on the StorageClass grows a set that has none of its own, while
 * the sets with their own keep theirs (scope=claim, recommend-only).
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
#include "client/quantity.h"
#include "itest.h"
#include "realnode.h"
#include "util/duration.h"
#include "util/xalloc.h"

#define SET "db"
#define REPLICAS 2
#define CLASS "local-autoresize" /* xfs, expandable, sizes in steps of 64Mi (scripts/local-cluster) */
#define COOLDOWN_S 45
/* 320Mi xfs holds about 300 MiB; 60 % of it is crossed by the 8 MiB of the workload and 200 MiB more. */
#define POLICY "used=60%, step=64Mi, max=448Mi, cooldown=45s"

static const char *const operator_args[] = {"--autoresize-interval", "5s", NULL};

static void start_operator(struct rn_test *t, const char *source)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--copy-image", RN_OPERATOR_IMAGE,
			      "--autoresize-source", source, operator_args[0], operator_args[1], NULL};
	daemon_start(&t->d, args, NULL);
	if (!daemon_wait_log(&t->d, "all caches synced", 20000))
		fail_msg("operator did not start:\n%s", daemon_log(&t->d));
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static int64_t df_in_pod(struct rn_test *t, const char *pod)
{
	char *out = it_sh_output("kubectl exec -n %s %s -- df -B1 /data | tail -n 1", t->ns, pod);
	int64_t size = rn_df_bytes(out);
	free(out);
	return size;
}

/* df in the pod once it shows more than bytes (the kubelet grows the file system after the volume), or the last seen. */
static int64_t df_when_above(struct rn_test *t, const char *pod, int64_t bytes)
{
	int64_t df = df_in_pod(t, pod);
	for (double deadline = it_now_ms() + 60000; df <= bytes && it_now_ms() < deadline; it_sleep_ms(1000))
		df = df_in_pod(t, pod);
	return df;
}

/* Writes mb MiB more into the pod's volume (real blocks: zeros written, not a hole). */
static void fill(struct rn_test *t, const char *pod, const char *file, int mb)
{
	if (it_sh("kubectl exec -n %s %s -- sh -c 'dd if=/dev/zero of=/data/%s bs=1M count=%d conv=fsync "
		  "2>/dev/null'",
		  t->ns, pod, file, mb))
		fail_msg("cannot write %d MiB into %s", mb, pod);
}

struct want {
	struct rn_test *t;
	const char *size;
	const struct kube_resource *kind; /* NULL: the StatefulSet SET */
	const char *name;
};

/* The template and every claim's capacity are at w->size. */
static bool grown_to(void *ctx)
{
	struct want *w = ctx;
	const char *name = w->kind ? w->name : SET;
	json_t *set = it_get(w->t->admin, w->kind ? w->kind : &KUBE_STATEFULSETS, w->t->ns, name);
	const json_t *tmpl = json_array_get(json_object_get(json_object_get(set, "spec"), "volumeClaimTemplates"), 0);
	bool ok = set && !strcmp(or_empty(kube_obj_str(tmpl, "spec.resources.requests.storage")), w->size);
	json_decref(set);
	for (int k = 0; ok && k < REPLICAS; k++) {
		char claim[64];
		snprintf(claim, sizeof(claim), "data-%s-%d", name, k);
		json_t *pvc = it_get(w->t->admin, &KUBE_PVCS, w->t->ns, claim);
		ok = !strcmp(or_empty(kube_obj_str(pvc, "status.capacity.storage")), w->size);
		json_decref(pvc);
	}
	return ok;
}

static void expect_grown_to(struct rn_test *t, const char *size, long timeout_ms)
{
	struct want w = {t, size, NULL, NULL};
	if (!it_wait(grown_to, &w, timeout_ms)) {
		rn_dump_state(t);
		fail_msg("the template and the claims did not grow to %s", size);
	}
}

/* The set's last growth of template data (wall ms), from the annotation the operator writes. */
static int64_t last_growth_ms(struct rn_test *t)
{
	json_t *set = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, SET);
	json_t *map = json_loads(or_empty(it_annotation(set, "stateful-operator.io/autoresize-last")), 0, NULL);
	int64_t s = rfc3339_seconds(or_empty(json_string_value(json_object_get(map, "data"))));
	json_decref(map);
	json_decref(set);
	return s * 1000;
}

static char *pod_uid(struct rn_test *t, int k)
{
	char pod[32];
	snprintf(pod, sizeof(pod), SET "-%d", k);
	return rn_pod_uid(t, pod);
}

static void create_workload(struct rn_test *t)
{
	json_t *sts = rn_workload_set(t, SET, REPLICAS, CLASS, "320Mi", 8);
	it_set_annotation(sts, "autoresize.stateful-operator.io/data", POLICY);
	rn_create_workload(t, sts, REPLICAS);
	json_decref(sts);
}

static void test_volumes_grow_before_they_fill_up(void **state)
{
	struct rn_test *t = *state;
	create_workload(t);
	char *uids[REPLICAS];
	for (int k = 0; k < REPLICAS; k++)
		uids[k] = pod_uid(t, k);
	int64_t df_before = df_in_pod(t, SET "-0");
	start_operator(t, "kubelet");

	/* Below the threshold: nothing grows for a few polls. */
	it_sleep_ms(12000);
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", SET), 0);

	/* Replica 0 passes 60 %: every claim and the template grow by 64Mi, in place. */
	double t0 = it_now_ms();
	fill(t, SET "-0", "fill-1", 200);
	expect_grown_to(t, "384Mi", 120000);
	double took = it_now_ms() - t0;
	int64_t first = last_growth_ms(t);
	char *msg = it_event_message(t->admin, t->ns, "AutoResizeTriggered", SET);
	assert_non_null(msg);
	if (!strstr(msg, "data-" SET "-0: used ") || !strstr(msg, "from 320Mi to 384Mi in place"))
		fail_msg("AutoResizeTriggered does not say which usage triggered what: %s", msg);
	printf("[ event ] AutoResizeTriggered: %s\n", msg);
	free(msg);
	for (int k = 0; k < REPLICAS; k++) {
		char *uid = pod_uid(t, k);
		assert_string_equal(uid, uids[k]); /* the pods kept running */
		free(uid);
	}
	int64_t df_after = df_when_above(t, SET "-0", df_before);
	if (df_after - df_before < 56LL << 20 || df_after > 384LL << 20)
		fail_msg("df in " SET "-0 shows %lld bytes, %lld before: not grown by 64Mi", (long long)df_after,
			 (long long)df_before);
	printf("[ figures ] fill past 60%% to both claims and the template at 384Mi: %.1f s; df %lld -> %lld bytes\n",
	       took / 1000, (long long)df_before, (long long)df_after);

	/* Past the new threshold at once: no growth within the cooldown, then one, to the maximum. */
	fill(t, SET "-0", "fill-2", 60);
	expect_grown_to(t, "448Mi", (COOLDOWN_S + 90) * 1000L);
	int64_t second = last_growth_ms(t);
	if (second - first < COOLDOWN_S * 1000L)
		fail_msg("grew again %lld ms after the last growth, within the %d s cooldown", (long long)(second - first),
			 COOLDOWN_S);
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", SET), 2);

	/* At the maximum: a Warning, and no growth. */
	fill(t, SET "-0", "fill-3", 60);
	double t1 = it_now_ms();
	while (!it_event_count(t->admin, t->ns, "AutoResizeAtMaximum", SET) && it_now_ms() - t1 < 120000)
		it_sleep_ms(1000);
	msg = it_event_message(t->admin, t->ns, "AutoResizeAtMaximum", SET);
	if (!msg)
		fail_msg("no AutoResizeAtMaximum Warning");
	printf("[ event ] AutoResizeAtMaximum: %s\n", msg);
	assert_non_null(strstr(msg, "maximum 448Mi"));
	free(msg);
	it_sleep_ms(COOLDOWN_S * 1000L); /* past the cooldown too: still no growth */
	struct want w = {t, "448Mi", NULL, NULL};
	assert_true(grown_to(&w));
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", SET), 2);
	for (int k = 0; k < REPLICAS; k++) {
		char *uid = pod_uid(t, k);
		assert_string_equal(uid, uids[k]);
		free(uid);
		free(uids[k]);
	}
}

/*
 * kubelet-proxy asks through the API server, which checks nodes/proxy: the
 * operator's ServiceAccount does not have it (deploy/ grants nodes/stats
 * only). A Warning says so and nothing grows; granted, growth resumes.
 */
static void test_usage_source_refusing_then_back(void **state)
{
	struct rn_test *t = *state;
	it_sh("kubectl delete clusterrolebinding rn-autoresize-proxy --ignore-not-found >/dev/null");
	create_workload(t);
	fill(t, SET "-0", "fill-1", 200);
	start_operator(t, "kubelet-proxy");
	double t0 = it_now_ms();
	while (!it_event_count(t->admin, t->ns, "UsageUnavailable", SET) && it_now_ms() - t0 < 60000)
		it_sleep_ms(1000);
	char *msg = it_event_message(t->admin, t->ns, "UsageUnavailable", SET);
	if (!msg)
		fail_msg("no UsageUnavailable Warning while the source refuses:\n%s", daemon_log(&t->d));
	printf("[ event ] UsageUnavailable: %s\n", msg);
	assert_non_null(strstr(msg, "nodes/proxy"));
	free(msg);
	it_sleep_ms(10000);
	struct want w = {t, "320Mi", NULL, NULL};
	assert_true(grown_to(&w)); /* nothing changed */
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", SET), 0);

	if (it_sh("kubectl create clusterrole rn-autoresize-proxy --verb=get --resource=nodes/proxy "
		  "--dry-run=client -o yaml | kubectl apply -f - >/dev/null && "
		  "kubectl create clusterrolebinding rn-autoresize-proxy --clusterrole=rn-autoresize-proxy "
		  "--serviceaccount=stateful-operator-system:stateful-operator >/dev/null"))
		fail_msg("cannot grant nodes/proxy");
	expect_grown_to(t, "384Mi", 90000);
	assert_true(it_event_count(t->admin, t->ns, "UsageAvailable", SET) >= 1);
	it_sh("kubectl delete clusterrolebinding rn-autoresize-proxy --ignore-not-found >/dev/null; "
	      "kubectl delete clusterrole rn-autoresize-proxy --ignore-not-found >/dev/null");
}

/*
 * A StatefulCluster takes the same policy: its template is its own to
 * change, and its members' claims grow in place with it (same pods).
 */
static void test_cluster_grows_in_place(void **state)
{
	struct rn_test *t = *state;
	start_operator(t, "kubelet");
	json_t *stc = rn_workload_cluster(t, "m", REPLICAS, CLASS, "320Mi", "Delete");
	it_set_annotation(stc, "autoresize.stateful-operator.io/data", "used=60%, step=64Mi, max=384Mi");
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) < 0)
		fail_msg("create StatefulCluster: %s", err.message);
	json_decref(stc);
	rn_wait_workload(t, "m", REPLICAS);
	char *uid0 = rn_pod_uid(t, "m-0"), *uid1 = rn_pod_uid(t, "m-1");
	int64_t df_before = df_in_pod(t, "m-1");
	fill(t, "m-1", "fill-1", 200);
	struct want w = {t, "384Mi", &KUBE_STATEFULCLUSTERS, "m"};
	if (!it_wait(grown_to, &w, 120000)) {
		rn_dump_state(t);
		fail_msg("the StatefulCluster's template and claims did not grow to 384Mi");
	}
	char *msg = it_event_message(t->admin, t->ns, "AutoResizeTriggered", "m");
	assert_non_null(msg);
	printf("[ event ] AutoResizeTriggered: %s\n", msg);
	assert_non_null(strstr(msg, "data-m-1: used "));
	free(msg);
	char *now0 = rn_pod_uid(t, "m-0"), *now1 = rn_pod_uid(t, "m-1");
	assert_string_equal(now0, uid0);
	assert_string_equal(now1, uid1);
	int64_t df = df_when_above(t, "m-1", df_before);
	if (df - df_before < 56LL << 20)
		fail_msg("df in m-1 shows %lld bytes, %lld before: not grown by 64Mi", (long long)df, (long long)df_before);
	free(now0);
	free(now1);
	free(uid0);
	free(uid1);
}

struct claim_at {
	struct rn_test *t;
	const char *claim;
	const char *size;
};

static bool claim_capacity_is(void *ctx)
{
	struct claim_at *c = ctx;
	json_t *pvc = it_get(c->t->admin, &KUBE_PVCS, c->t->ns, c->claim);
	bool ok = !strcmp(or_empty(kube_obj_str(pvc, "status.capacity.storage")), c->size);
	json_decref(pvc);
	return ok;
}

static const char *template_size(struct rn_test *t, const char *set, json_t **holder)
{
	*holder = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, set);
	return kube_obj_str(json_array_get(json_object_get(json_object_get(*holder, "spec"), "volumeClaimTemplates"), 0),
			    "spec.resources.requests.storage");
}

/* The class's policy, set only while the test that needs it runs: the class is the whole bed's. */
static void class_policy(const char *policy)
{
	if (it_sh("kubectl annotate --overwrite storageclass " CLASS " 'autoresize.stateful-operator.io/policy%s%s' "
		  ">/dev/null",
		  policy ? "=" : "-", policy ? policy : ""))
		fail_msg("cannot annotate StorageClass " CLASS);
}

static int class_policy_teardown(void **state)
{
	it_sh("kubectl annotate storageclass " CLASS " autoresize.stateful-operator.io/policy- >/dev/null 2>&1");
	return rn_teardown(state);
}

/*
 * scope=claim grows only the claim that crossed, in place, and leaves the
 * template; mode=recommend says what it would do and changes nothing. Set c
 * has no policy of its own: the StorageClass's grows it, template and claim,
 * and df in its running pod shows it.
 */
static void test_claim_scope_and_recommend_only(void **state)
{
	struct rn_test *t = *state;
	json_t *a = rn_workload_set(t, "a", 1, CLASS, "320Mi", 8);
	it_set_annotation(a, "autoresize.stateful-operator.io/data", "used=60%, step=64Mi, max=448Mi, scope=claim");
	rn_create_workload(t, a, 1);
	json_decref(a);
	json_t *b = rn_workload_set(t, "b", 1, CLASS, "320Mi", 8);
	it_set_annotation(b, "autoresize.stateful-operator.io/data", "used=60%, step=64Mi, max=448Mi, mode=recommend");
	rn_create_workload(t, b, 1);
	json_decref(b);
	json_t *cs = rn_workload_set(t, "c", 1, CLASS, "320Mi", 8);
	rn_create_workload(t, cs, 1);
	json_decref(cs);
	class_policy("used=60%, step=64Mi, max=384Mi");
	char *c_uid = rn_pod_uid(t, "c-0");
	int64_t c_df_before = df_in_pod(t, "c-0");
	start_operator(t, "kubelet");
	fill(t, "a-0", "fill-1", 200);
	fill(t, "b-0", "fill-1", 200);
	fill(t, "c-0", "fill-1", 200);

	struct claim_at c = {t, "data-a-0", "384Mi"};
	if (!it_wait(claim_capacity_is, &c, 120000)) {
		rn_dump_state(t);
		fail_msg("claim data-a-0 did not grow to 384Mi");
	}
	char *msg = it_event_message(t->admin, t->ns, "AutoResizeTriggered", "a");
	assert_non_null(msg);
	printf("[ event ] AutoResizeTriggered: %s\n", msg);
	assert_non_null(strstr(msg, "scope=claim"));
	free(msg);
	json_t *holder;
	assert_string_equal(template_size(t, "a", &holder), "320Mi"); /* the template stays */
	json_decref(holder);
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-a-0");
	assert_non_null(it_annotation(pvc, "stateful-operator.io/autoresize-last"));
	json_decref(pvc);

	double t0 = it_now_ms();
	while (!it_event_count(t->admin, t->ns, "AutoResizeRecommended", "b") && it_now_ms() - t0 < 60000)
		it_sleep_ms(1000);
	msg = it_event_message(t->admin, t->ns, "AutoResizeRecommended", "b");
	if (!msg)
		fail_msg("no AutoResizeRecommended for the recommend-only set:\n%s", daemon_log(&t->d));
	printf("[ event ] AutoResizeRecommended: %s\n", msg);
	assert_non_null(strstr(msg, "from 320Mi to 384Mi"));
	free(msg);
	it_sleep_ms(10000);
	json_t *set_b = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, "b");
	assert_null(it_annotation(set_b, "resize.stateful-operator.io/data"));
	json_decref(set_b);
	assert_string_equal(template_size(t, "b", &holder), "320Mi");
	json_decref(holder);
	c = (struct claim_at){t, "data-b-0", "320Mi"};
	assert_true(claim_capacity_is(&c));
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", "b"), 0);

	/* c, under the class's policy: its claim and its template at 384Mi, the same pod, df grown. */
	c = (struct claim_at){t, "data-c-0", "384Mi"};
	if (!it_wait(claim_capacity_is, &c, 60000)) {
		rn_dump_state(t);
		fail_msg("claim data-c-0 did not grow to 384Mi by its StorageClass's policy");
	}
	assert_string_equal(template_size(t, "c", &holder), "384Mi");
	json_decref(holder);
	msg = it_event_message(t->admin, t->ns, "AutoResizeTriggered", "c");
	assert_non_null(msg);
	printf("[ event ] AutoResizeTriggered: %s\n", msg);
	assert_non_null(strstr(msg, "(policy: autoresize.stateful-operator.io/policy on StorageClass " CLASS ")"));
	free(msg);
	char *c_now = rn_pod_uid(t, "c-0");
	assert_string_equal(c_now, c_uid);
	free(c_now);
	free(c_uid);
	int64_t c_df = df_when_above(t, "c-0", c_df_before);
	if (c_df - c_df_before < 56LL << 20)
		fail_msg("df in c-0 shows %lld bytes, %lld before: not grown by 64Mi", (long long)c_df,
			 (long long)c_df_before);
	printf("[ figures ] class policy: df in c-0 %lld -> %lld bytes\n", (long long)c_df_before, (long long)c_df);
	class_policy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_volumes_grow_before_they_fill_up, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_usage_source_refusing_then_back, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_cluster_grows_in_place, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_claim_scope_and_recommend_only, rn_setup, class_policy_teardown),
	};
	if (getenv("IT_FILTER")) /* run one test by hand: IT_FILTER=test_name */
		cmocka_set_test_filter(getenv("IT_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
