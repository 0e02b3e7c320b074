/*
 * The operator as users run it: deploy/overlays/cluster with the image built
 * here (a test overlay sets the image tag, the real node, and the API
 * server's address as a pod sees it: there is no kube-proxy; not the copy
 * image: the operator uses its own, retagged, image for copies), two
 * replicas under leader election, probed by the real kubelet, as uid 65532 on
 * a read-only root.
 *   - Both replicas are Ready (the standby too: Ready = can serve), so
 *     `kubectl rollout status` succeeds with 2/2; a new pod template rolls
 *     out (a surge, never fewer than two Ready), a new pod leads after; a
 *     drain of the node (kubectl drain, operator pods only) evicts one
 *     replica and the PodDisruptionBudget refuses the second while only one
 *     is Ready, which keeps the Lease; after uncordon the Deployment is
 *     2/2 again. The seconds each took are printed as figures.
 *   - During a resize by copy the leader's pod is deleted: the other
 *     replica takes over and the resize completes with every byte intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "itest.h"
#include "realnode.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define SET "db"
#define REPLICAS 3
#define OPERATOR_NS RN_OPERATOR_NS

/* build/rn-overlay: the test overlay on top of deploy/overlays/cluster. Returns its path (new string). */
static char *write_overlay(void)
{
	char *port = rn_api_port();
	char *dir = xasprintf("%s/build/rn-overlay", it_source_dir());
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", dir, strerror(errno));
	char *path = xasprintf("%s/kustomization.yaml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"# Written by tests/realnode/rn_deploy.c: deploy/overlays/cluster as the test bed runs it.\n"
		"apiVersion: kustomize.config.k8s.io/v1beta1\n"
		"kind: Kustomization\n"
		"resources:\n"
		"- ../../deploy/overlays/cluster\n"
		"images:\n"
		"- {name: stateful-operator, newTag: dev}\n"
		"patches:\n"
		"- target: {kind: Deployment, name: stateful-operator}\n"
		"  patch: |-\n"
		"    - {op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: Never}\n"
		"    - op: add\n"
		"      path: /spec/template/spec/nodeSelector\n"
		"      value: {\"" RN_NODE_LABEL "\": real}\n"
		"    - op: add\n"
		"      path: /spec/template/spec/tolerations\n"
		"      value: [{key: " RN_NODE_LABEL ", operator: Exists, effect: NoSchedule}]\n"
		"    - op: add\n"
		"      path: /spec/template/spec/containers/0/env/-\n"
		"      value: {name: KUBERNETES_SERVICE_HOST, value: \"" RN_API_HOST "\"}\n"
		"    - op: add\n"
		"      path: /spec/template/spec/containers/0/env/-\n"
		"      value: {name: KUBERNETES_SERVICE_PORT, value: \"%s\"}\n",
		port);
	fclose(f);
	free(path);
	free(port);
	return dir;
}


struct deploy_ctx {
	struct rn_test *t;
	char *leader; /* once found */
};

/* Operator pods not being deleted: how many, how many Ready (*ready), the name of a Ready one (*one, new; may be NULL). */
static int operator_pods(struct rn_test *t, int *ready, char **one)
{
	json_t *pods = it_list(t->admin, &KUBE_PODS, OPERATOR_NS, "app.kubernetes.io/name=stateful-operator");
	int live = 0;
	*ready = 0;
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) {
		if (kube_obj_str(p, "metadata.deletionTimestamp"))
			continue;
		live++;
		if (kube_obj_condition(p, "Ready", NULL)) {
			(*ready)++;
			if (one && !*one)
				*one = xstrdup(kube_obj_str(p, "metadata.name"));
		}
	}
	json_decref(pods);
	return live;
}

/* Two operator pods Running and Ready (the standby too: Ready = can serve), one holding the Lease. */
static bool operator_up(void *ctx)
{
	struct deploy_ctx *d = ctx;
	json_t *pods = it_list(d->t->admin, &KUBE_PODS, OPERATOR_NS, "app.kubernetes.io/name=stateful-operator");
	int running = 0, ready = 0;
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) {
		const char *phase = kube_obj_str(p, "status.phase");
		if (phase && !strcmp(phase, "Running") && !kube_obj_str(p, "metadata.deletionTimestamp"))
			running++;
		ready += kube_obj_condition(p, "Ready", NULL);
	}
	json_decref(pods);
	free(d->leader);
	d->leader = rn_deployed_leader(d->t);
	return running == 2 && ready == 2 && d->leader;
}

/* kubectl rollout status of the operator's Deployment, as helm --wait and GitOps tools wait: 0 when it succeeded. */
static int rollout_status(int timeout_s, double *seconds)
{
	double t0 = it_now_ms();
	int rc = it_sh("kubectl rollout status -n " OPERATOR_NS " deployment/stateful-operator --timeout=%ds >&2",
		       timeout_s);
	*seconds = (it_now_ms() - t0) / 1000;
	return rc;
}

/* The Deployment says 2 replicas, 2 updated, 2 ready, 2 available. */
static void expect_deployment_2_of_2(void)
{
	char *st = it_sh_output("kubectl get deployment -n " OPERATOR_NS " stateful-operator -o jsonpath="
				"'{.status.replicas}/{.status.updatedReplicas}/{.status.readyReplicas}/"
				"{.status.availableReplicas}'");
	if (strcmp(st, "2/2/2/2"))
		fail_msg("the Deployment is not 2/2 (replicas/updated/ready/available: %s)", st);
	free(st);
}

/* The pod holding the Lease is pod, within timeout_ms (a handover takes one retry period). */
static bool leads(struct rn_test *t, const char *pod, long timeout_ms)
{
	for (double deadline = it_now_ms() + (double)timeout_ms;; it_sleep_ms(200)) {
		char *l = rn_deployed_leader(t);
		bool yes = l && !strcmp(l, pod);
		free(l);
		if (yes)
			return true;
		if (it_now_ms() > deadline)
			return false;
	}
}

/* Leaves the real node schedulable whatever happened, then the usual teardown. */
static int deploy_teardown(void **state)
{
	it_sh("kubectl uncordon " RN_NODE " >/dev/null 2>&1");
	return rn_teardown(state);
}

static bool copy_started(void *ctx)
{
	struct rn_test *t = ctx;
	json_t *jobs = it_list(t->admin, &KUBE_JOBS, t->ns, NULL);
	bool any = json_array_size(jobs) > 0;
	/* The overlay retagged the operator image (newTag dev) and said nothing of copies. */
	if (any) {
		const json_t *c = json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(
			json_array_get(jobs, 0), "spec"), "template"), "spec"), "containers"), 0);
		assert_string_equal(kube_obj_str(c, "image"), RN_OPERATOR_IMAGE);
	}
	json_decref(jobs);
	return any;
}

static void test_deployed_operator_survives_losing_its_leader_mid_copy(void **state)
{
	struct rn_test *t = *state;
	char *overlay = write_overlay();
	if (it_sh("kubectl apply -k %s >/dev/null", overlay))
		fail_msg("kubectl apply -k %s failed", overlay);
	struct deploy_ctx d = {t, NULL};
	if (!it_wait_every(operator_up, &d, RN_WAIT_MS, 500)) {
		it_sh("kubectl get pods -n " OPERATOR_NS " -o wide >&2; kubectl describe pods -n " OPERATOR_NS
		      " | tail -30 >&2");
		fail_msg("the deployed operator did not come up: 2 Running and Ready, one holding the Lease");
	}
	/*
	 * In the pod (the ServiceAccount's token, in-cluster config), the webhook
	 * knows the operator as the API server does: the requester of its own
	 * re-creates, which this copy makes (finding 7).
	 */
	char *who = it_sh_output("kubectl logs -n " OPERATOR_NS " %s | grep -c 'only "
				 "system:serviceaccount:" OPERATOR_NS ":stateful-operator may create it' || true",
				 d.leader);
	if (atoi(who) < 1)
		fail_msg("the deployed webhook did not learn the operator's identity in-cluster");
	free(who);
	/* As the Deployment says: uid 65532, read-only root. */
	char *id = it_sh_output("kubectl exec -n " OPERATOR_NS " %s -- id -u", d.leader);
	assert_string_equal(id, "65532");
	free(id);
	assert_int_not_equal(it_sh("kubectl exec -n " OPERATOR_NS " %s -- touch /probe 2>/dev/null", d.leader), 0);

	char *old_uid[REPLICAS];
	rn_start_copy_resize(t, SET, REPLICAS, old_uid);
	if (!it_wait_every(copy_started, t, RN_WAIT_MS, 200))
		fail_msg("the deployed operator started no copy");
	char *first = xstrdup(d.leader);
	double t0 = it_now_ms();
	if (it_sh("kubectl delete pod -n " OPERATOR_NS " %s --wait=false >/dev/null", first))
		fail_msg("deleting the leader failed");
	/* Another pod takes the Lease. */
	char *next = NULL;
	for (double deadline = it_now_ms() + 60000; !next || !strcmp(next, first); it_sleep_ms(200)) {
		if (it_now_ms() > deadline)
			fail_msg("no other replica took the Lease within 60 s");
		free(next);
		next = rn_deployed_leader(t);
	}
	printf("[ figures ] leader %s deleted mid-copy; %s leads %.1f s later\n", first, next,
	       (it_now_ms() - t0) / 1000);
	rn_wait_resize(t, SET, RN_WAIT_MS * 2, NULL);
	rn_wait_workload(t, SET, REPLICAS);
	rn_assert_copied_intact(t, SET, REPLICAS, old_uid, 100LL << 20, "across the leader change");
	/* The kubelet kept probing: no operator container restarted. */
	char *restarts = it_sh_output("kubectl get pods -n " OPERATOR_NS " -l app.kubernetes.io/name=stateful-operator "
				      "-o jsonpath='{.items[*].status.containerStatuses[0].restartCount}'");
	printf("[ info ] operator container restarts: %s\n", restarts);
	for (const char *p = restarts; *p; p++)
		if (*p != '0' && *p != ' ')
			fail_msg("an operator container restarted (%s)", restarts);
	free(restarts);
	it_sh("kubectl delete deployment -n " OPERATOR_NS " stateful-operator --wait=true >/dev/null");
	free(next);
	free(first);
	free(d.leader);
	free(overlay);
}

static void test_deployed_operator_is_available_rolls_out_and_drains(void **state)
{
	struct rn_test *t = *state;
	char *overlay = write_overlay();
	double t0 = it_now_ms(), secs;
	if (it_sh("kubectl apply -k %s >/dev/null", overlay))
		fail_msg("kubectl apply -k %s failed", overlay);
	/* What the issue found: the standby never Ready, so this never succeeded. */
	if (rollout_status(RN_WAIT_MS / 1000, &secs)) {
		it_sh("kubectl get pods -n " OPERATOR_NS " -o wide >&2");
		fail_msg("kubectl rollout status did not succeed: the Deployment is not Available with 2 replicas");
	}
	printf("[ figures ] install: kubectl apply -k + rollout status 2/2 in %.1f s\n", (it_now_ms() - t0) / 1000);
	expect_deployment_2_of_2();
	char *first = rn_deployed_leader(t);
	if (!first)
		fail_msg("no replica holds the Lease");

	/* A new pod template (what an upgrade is): a surge, never fewer than two Ready, a new pod leads after. */
	t0 = it_now_ms();
	if (it_sh("kubectl patch deployment -n " OPERATOR_NS " stateful-operator --type merge -p "
		  "'{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"rn-deploy/rollout\":\"%lld\"}}}}}' >/dev/null",
		  (long long)t0))
		fail_msg("patching the pod template failed");
	int least_ready = 2;
	for (;;) {
		char *st = it_sh_output("kubectl get deployment -n " OPERATOR_NS " stateful-operator -o jsonpath="
					"'{.metadata.generation}/{.status.observedGeneration}/{.status.replicas}/"
					"{.status.updatedReplicas}/{.status.availableReplicas}'");
		long long gen = 0, seen = 0;
		int replicas = 0, updated = 0, available = 0;
		int n = sscanf(st, "%lld/%lld/%d/%d/%d", &gen, &seen, &replicas, &updated, &available);
		free(st);
		int ready = 0;
		operator_pods(t, &ready, NULL);
		if (ready < least_ready)
			least_ready = ready;
		if (n == 5 && seen >= gen && replicas == 2 && updated == 2 && available == 2)
			break;
		if (it_now_ms() - t0 > RN_WAIT_MS)
			fail_msg("the new pod template did not roll out within %ld s", RN_WAIT_MS / 1000);
		it_sleep_ms(200);
	}
	if (rollout_status(60, &secs))
		fail_msg("kubectl rollout status after the template change did not succeed");
	printf("[ figures ] rollout of a new pod template: %.1f s; fewest Ready operator pods meanwhile: %d\n",
	       (it_now_ms() - t0) / 1000, least_ready);
	assert_true(least_ready >= 2);
	expect_deployment_2_of_2();
	/* The last old pod may still be handing the Lease over (one retry period). */
	char *next = NULL;
	for (double deadline = it_now_ms() + 30000;; it_sleep_ms(200)) {
		free(next);
		next = rn_deployed_leader(t);
		json_t *pod = next ? it_get(t->admin, &KUBE_PODS, OPERATOR_NS, next) : NULL;
		bool renewed = pod && kube_obj_annotation(pod, "rn-deploy/rollout");
		json_decref(pod);
		if (renewed)
			break;
		if (it_now_ms() > deadline)
			fail_msg("30 s after the rollout the Lease is held by %s, not by a pod of the new template",
				 next ? next : "nobody");
	}

	/*
	 * A drain of the node (operator pods only: the rest of the test bed
	 * stays): one replica evicted; its replacement cannot be scheduled on
	 * the cordoned node, so the budget refuses the second eviction until
	 * the drain gives up, and the one left keeps serving and leads.
	 */
	t0 = it_now_ms();
	char *out = NULL;
	int rc = it_sh_capture(&out, "kubectl drain " RN_NODE " --pod-selector=app.kubernetes.io/name=stateful-operator "
				     "--ignore-daemonsets --timeout=25s 2>&1");
	printf("[ figures ] kubectl drain (operator pods) gave up after %.1f s (exit %d)\n", (it_now_ms() - t0) / 1000,
	       rc);
	if (rc == 0 || !strstr(out, "disruption budget")) {
		fprintf(stderr, "%s\n", out);
		fail_msg("the drain did not stop at the PodDisruptionBudget (exit %d)", rc);
	}
	free(out);
	int ready = 0;
	char *left = NULL;
	int live = operator_pods(t, &ready, &left);
	printf("[ info ] during the drain: %d operator pods not being deleted, %d Ready (%s)\n", live, ready,
	       left ? left : "none");
	if (ready != 1 || !left)
		fail_msg("the budget did not keep exactly one Ready replica: %d Ready", ready);
	if (!leads(t, left, 20000))
		fail_msg("the replica left, %s, does not hold the Lease", left);
	/* The eviction API itself, as any tool calls it: 429 from the budget. */
	char *refused = NULL;
	rc = it_sh_capture(&refused, "echo '{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":"
				     "{\"name\":\"%s\",\"namespace\":\"" OPERATOR_NS "\"}}' | kubectl create --raw "
				     "/api/v1/namespaces/" OPERATOR_NS "/pods/%s/eviction -f - 2>&1",
				     left, left);
	if (rc == 0 || !refused || !strstr(refused, "disruption budget"))
		fail_msg("evicting the last Ready replica was not refused by the budget (exit %d): %s", rc,
			 refused ? refused : "");
	free(refused);
	t0 = it_now_ms();
	if (it_sh("kubectl uncordon " RN_NODE " >/dev/null"))
		fail_msg("kubectl uncordon failed");
	if (rollout_status(RN_WAIT_MS / 1000, &secs))
		fail_msg("the Deployment did not come back to 2/2 after uncordon");
	printf("[ figures ] after uncordon: 2/2 Ready again in %.1f s\n", (it_now_ms() - t0) / 1000);
	expect_deployment_2_of_2();

	it_sh("kubectl delete deployment -n " OPERATOR_NS " stateful-operator --wait=true >/dev/null");
	free(left);
	free(next);
	free(first);
	free(overlay);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_deployed_operator_is_available_rolls_out_and_drains, rn_setup,
						deploy_teardown),
		cmocka_unit_test_setup_teardown(test_deployed_operator_survives_losing_its_leader_mid_copy, rn_setup,
						rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
