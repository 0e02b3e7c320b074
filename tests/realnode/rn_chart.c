/*
 * The Helm chart as users run it, on the real node, with the image built
 * here: `helm install --wait` (2 replicas, cluster scope, the webhook on),
 * `helm upgrade --wait` to a new image tag while a resize by copy runs (the
 * resize completes, every replica's tree intact), `helm rollback --wait` to
 * the first revision. Each must succeed with the Deployment 2/2; the seconds
 * each took are printed as figures.
 *
 * The test bed's part, as rn_deploy's overlay does it: the values set the
 * image (tag dev, then dev2: the same image tagged again in the node's
 * containerd; pull policy Never), the real node's selector and toleration; a
 * post-renderer (a Helm plugin this test writes) adds the API server's
 * address as a pod sees it (there is no kube-proxy).
 *
 * The release lives in stateful-operator-system, where `scripts/local-cluster
 * up` applied the same objects from deploy/ (cluster scope has fixed names):
 * it takes them over (--take-ownership). Afterwards the release's record is
 * dropped and its Deployment deleted, never uninstalled: the RBAC and the
 * ServiceAccount stay for the other tests (the operator's test kubeconfig
 * holds a token of that ServiceAccount).
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
#define RELEASE "sop-rn"
#define PLUGIN "testbed-api-address"

/* Helm with its state under build/rn-helm (nothing of the user's). */
static char *helm;

/*
 * The post-renderer: the chart's Deployment with KUBERNETES_SERVICE_HOST and
 * _PORT of the test bed (kubectl kustomize, the same patch as rn_deploy's
 * overlay). Written and installed into this test's Helm home.
 */
static void install_post_renderer(const char *home)
{
	char *port = rn_api_port();
	char *dir = xasprintf("%s/" PLUGIN, home);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", dir, strerror(errno));
	char *yaml = xasprintf("%s/plugin.yaml", dir), *script = xasprintf("%s/render.sh", dir);
	FILE *f = fopen(yaml, "w");
	assert_non_null(f);
	fprintf(f, "apiVersion: v1\ntype: postrenderer/v1\nname: " PLUGIN "\nversion: 0.1.0\nruntime: subprocess\n"
		   "runtimeConfig:\n  platformCommand:\n  - command: ${HELM_PLUGIN_DIR}/render.sh\n");
	fclose(f);
	f = fopen(script, "w");
	assert_non_null(f);
	fprintf(f,
		"#!/bin/sh\n"
		"# Written by tests/realnode/rn_chart.c: the operator's pods reach the API server as the test bed has it.\n"
		"set -eu\n"
		"dir=$(mktemp -d)\n"
		"trap 'rm -rf \"$dir\"' EXIT\n"
		"cat >\"$dir/chart.yaml\"\n"
		"cat >\"$dir/kustomization.yaml\" <<'EOF'\n"
		"resources: [chart.yaml]\n"
		"patches:\n"
		"- target: {kind: Deployment, name: stateful-operator}\n"
		"  patch: |-\n"
		"    - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_HOST, "
		"value: \"" RN_API_HOST "\"}}\n"
		"    - {op: add, path: /spec/template/spec/containers/0/env/-, value: {name: KUBERNETES_SERVICE_PORT, "
		"value: \"%s\"}}\n"
		"EOF\n"
		"kubectl kustomize \"$dir\"\n",
		port);
	fclose(f);
	if (chmod(script, 0755) < 0)
		fail_msg("chmod %s: %s", script, strerror(errno));
	if (it_sh("%s plugin install %s >&2", helm, dir))
		fail_msg("helm plugin install %s failed", dir);
	free(script);
	free(yaml);
	free(dir);
	free(port);
}

/* stateful-operator:dev tagged again as :dev2 in the real node's containerd (its socket: local-cluster-node.sh). */
static void tag_dev2(void)
{
	if (it_sh("state=$(dirname \"$KUBECONFIG\"); run=/run/sop-testbed-$(printf '%%s' \"$state\" | sha256sum | cut -c1-8); "
		  "ctr --address \"$run/containerd.sock\" --namespace k8s.io images tag --force "
		  "docker.io/library/stateful-operator:dev docker.io/library/stateful-operator:dev2 >&2"))
		fail_msg("tagging stateful-operator:dev as dev2 in the node's containerd failed");
}

static int chart_setup(void **state)
{
	int rc = rn_setup(state);
	char *home = xasprintf("%s/build/rn-helm", it_source_dir());
	it_sh("rm -rf '%s'", home);
	if (mkdir(home, 0755) < 0)
		fail_msg("mkdir %s: %s", home, strerror(errno));
	helm = xasprintf("HELM_CACHE_HOME=%s/cache HELM_CONFIG_HOME=%s/config HELM_DATA_HOME=%s/data helm", home, home,
			 home);
	install_post_renderer(home);
	tag_dev2();
	free(home);
	return rc;
}

/* The release's record goes (its objects stay: see the top), then the usual teardown deletes the Deployment. */
static int chart_teardown(void **state)
{
	it_sh("kubectl delete secret -n " RN_OPERATOR_NS " -l owner=helm,name=" RELEASE " --ignore-not-found >/dev/null");
	it_sh("kubectl delete poddisruptionbudget -n " RN_OPERATOR_NS " stateful-operator --ignore-not-found >/dev/null");
	free(helm);
	helm = NULL;
	return rn_teardown(state);
}

/* Runs a helm command (args after "helm"), timed; fails the test with its output when it fails. */
static double helm_timed(const char *what, const char *args)
{
	double t0 = it_now_ms();
	char *out = NULL;
	int rc = it_sh_capture(&out, "%s %s 2>&1", helm, args);
	double s = (it_now_ms() - t0) / 1000;
	if (rc) {
		it_sh("kubectl get pods -n " RN_OPERATOR_NS " -o wide >&2");
		fail_msg("%s failed (exit %d after %.1f s):\n%s", what, rc, s, out ? out : "");
	}
	free(out);
	printf("[ figures ] %s: %.1f s\n", what, s);
	return s;
}

/* The Deployment's image, and that it is 2/2 (replicas, updated, ready, available). */
static void expect_deployment(const char *image)
{
	char *st = it_sh_output("kubectl get deployment -n " RN_OPERATOR_NS " stateful-operator -o jsonpath="
				"'{.spec.template.spec.containers[0].image} {.status.replicas}/{.status.updatedReplicas}/"
				"{.status.readyReplicas}/{.status.availableReplicas}'");
	char *want = xasprintf("%s 2/2/2/2", image);
	if (strcmp(st, want))
		fail_msg("the Deployment is \"%s\", want \"%s\"", st, want);
	free(want);
	free(st);
}

static bool copy_started(void *ctx)
{
	struct rn_test *t = ctx;
	json_t *jobs = it_list(t->admin, &KUBE_JOBS, t->ns, NULL);
	bool any = json_array_size(jobs) > 0;
	json_decref(jobs);
	return any;
}

static void test_chart_installs_upgrades_mid_copy_and_rolls_back(void **state)
{
	struct rn_test *t = *state;
	char *chart = xasprintf("%s/charts/stateful-operator", it_source_dir());
	char *args = xasprintf(
		"install " RELEASE " %s -n " RN_OPERATOR_NS " --take-ownership --force-conflicts --wait --timeout 240s "
		"--set image.tag=dev --set image.pullPolicy=Never --set-json 'nodeSelector={\"" RN_NODE_LABEL "\":\"real\"}' "
		"--set-json 'tolerations=[{\"key\":\"" RN_NODE_LABEL "\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]' "
		"--post-renderer " PLUGIN,
		chart);
	helm_timed("helm install --wait (2 replicas)", args);
	free(args);
	expect_deployment(RN_OPERATOR_IMAGE);

	/* A resize by copy under way... */
	char *old_uid[REPLICAS];
	rn_start_copy_resize(t, SET, REPLICAS, old_uid);
	if (!it_wait_every(copy_started, t, RN_WAIT_MS, 200))
		fail_msg("the installed operator started no copy");

	/* ...while the operator is upgraded to another image tag: both replicas replaced, the Lease handed over. */
	args = xasprintf("upgrade " RELEASE " %s -n " RN_OPERATOR_NS " --reuse-values --set image.tag=dev2 "
			 "--force-conflicts --wait --timeout 240s --post-renderer " PLUGIN,
			 chart);
	helm_timed("helm upgrade --wait to a new image tag during a copy", args);
	free(args);
	expect_deployment("stateful-operator:dev2");
	double t0 = it_now_ms();
	rn_wait_resize(t, SET, RN_WAIT_MS * 2, NULL);
	rn_wait_workload(t, SET, REPLICAS);
	printf("[ figures ] the resize completed %.1f s after the upgrade\n", (it_now_ms() - t0) / 1000);
	rn_assert_copied_intact(t, SET, REPLICAS, old_uid, 100LL << 20, "across the upgrade");

	helm_timed("helm rollback --wait to revision 1", "rollback " RELEASE " 1 -n " RN_OPERATOR_NS
						       " --wait --timeout 240s");
	expect_deployment(RN_OPERATOR_IMAGE);
	char *leader = NULL;
	for (double deadline = it_now_ms() + 30000; !leader; it_sleep_ms(200)) {
		if (it_now_ms() > deadline)
			fail_msg("no replica holds the Lease after the rollback");
		leader = rn_deployed_leader(t);
	}
	free(leader);
	free(chart);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_chart_installs_upgrades_mid_copy_and_rolls_back, chart_setup,
						chart_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
