/*
 * Issue 27, finding 2: what a node receives from the kubelet usage source.
 * A Node object whose kubelet endpoint (status.addresses InternalIP and
 * status.daemonEndpoints.kubeletEndpoint.Port, which a node writes itself)
 * is a listener of this test (kubelet_trap.h) on 127.0.0.23, holding a
 * serving certificate the operator accepts (--kubelet-ca-file); a
 * StatefulSet with an autoresize policy whose pod is bound to that node.
 * Whatever credential reaches the listener is then asked, with a
 * SelfSubjectAccessReview made with it, what it may do: not create pods in
 * kube-system, not delete PVs, not patch the webhook configuration; but
 * get nodes/stats (the feature still works). It must be the usage
 * reader's, not the operator's token, and no client certificate is
 * presented, also by an operator whose own credential is one (the admin's
 * kubeconfig). Namespace scope refuses the kubelet source at start.
 * The operator runs with --dry-run: it reads, and changes nothing on the
 * shared test bed.
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
#include <time.h>
#include <unistd.h>

#include "client/kube_config.h"
#include "client/kube_object.h"
#include "daemon.h"
#include "itest.h"
#include "kubelet_trap.h"
#include "util/xalloc.h"
#include "webhook/webhook_cert.h"

#define TRAP_ADDRESS "127.0.0.23"
#define READER "system:serviceaccount:stateful-operator-system:stateful-operator-usage-reader"

struct t {
	struct kube_client *admin;
	char *ns;
	char *node;
	char *dir;
	char *ca_file;
	struct cert_bundle certs;
	struct kubelet_trap *trap;
	struct daemon d;
	bool running;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));
	t->admin = it_admin_client();
	t->ns = it_namespace_new(t->admin, "it-kubelet-token");
	t->node = xasprintf("%s-node", t->ns);
	char tmpl[] = "/tmp/it-kubelet-token-XXXXXX";
	t->dir = xstrdup(mkdtemp(tmpl));
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	if (t->running) {
		daemon_signal(&t->d, SIGTERM);
		daemon_wait_exit(&t->d, 10000);
		daemon_cleanup(&t->d);
	}
	kubelet_trap_stop(t->trap);
	struct kube_error err;
	if (kube_delete(t->admin, &KUBE_NODES, NULL, t->node, NULL, &err) < 0 && err.code != 404)
		printf("[ warn  ] delete node %s: %s\n", t->node, err.message);
	it_namespace_delete(t->admin, t->ns);
	it_sh("rm -rf '%s'", t->dir);
	cert_bundle_release(&t->certs);
	free(t->ca_file);
	free(t->dir);
	free(t->node);
	free(t->ns);
	kube_client_free(t->admin);
	free(t);
	return 0;
}

/* The listener, a CA the operator is told to trust, and the Node that points at the listener. */
static void make_trap_node(struct t *t)
{
	static const char *const names[] = {TRAP_ADDRESS, NULL};
	char *err = NULL;
	long long now = (long long)time(NULL);
	if (cert_bundle_make_ca(&t->certs, "it-kubelet-trap-ca", CERT_CA_DAYS_DEFAULT, now, &err) < 0 ||
	    cert_bundle_make_serving(&t->certs, names, CERT_SERVING_DAYS_DEFAULT, now, &err) < 0)
		fail_msg("certificates: %s", err);
	t->ca_file = xasprintf("%s/kubelet-ca.crt", t->dir);
	FILE *f = fopen(t->ca_file, "w");
	if (!f)
		fail_msg("cannot write %s", t->ca_file);
	fputs(t->certs.ca_cert_pem, f);
	fclose(f);
	t->trap = kubelet_trap_start(TRAP_ADDRESS, t->certs.cert_pem, t->certs.key_pem);

	/* Unschedulable and tainted: nothing else lands on it; kwok does not manage it (no annotation). */
	json_t *node = it_json("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
			       "\"labels\":{\"it-kubelet-token\":\"trap\"}},\"spec\":{\"unschedulable\":true,"
			       "\"taints\":[{\"key\":\"it-kubelet-token\",\"value\":\"trap\",\"effect\":\"NoSchedule\"}]}}",
			       t->node);
	struct kube_error kerr;
	if (kube_create(t->admin, &KUBE_NODES, NULL, node, NULL, &kerr) < 0)
		fail_msg("create node %s: %s", t->node, kerr.message);
	json_decref(node);
	/* What a node writes about itself: where its kubelet listens. */
	json_t *status = it_json("{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"%s\"},"
				 "{\"type\":\"Hostname\",\"address\":\"%s\"}],"
				 "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":%d}}}}",
				 TRAP_ADDRESS, t->node, kubelet_trap_port(t->trap));
	if (kube_patch(t->admin, &KUBE_NODES, NULL, t->node, "status", KUBE_PATCH_MERGE, status, NULL, &kerr) < 0)
		fail_msg("patch node %s status: %s", t->node, kerr.message);
	json_decref(status);
}

struct pod_on {
	struct t *t;
};

static bool pod_bound(void *ctx)
{
	struct t *t = ((struct pod_on *)ctx)->t;
	json_t *pod = it_get(t->admin, &KUBE_PODS, t->ns, "s-0");
	const char *node = kube_obj_str(pod, "spec.nodeName");
	bool ok = node && !strcmp(node, t->node);
	json_decref(pod);
	return ok;
}

/* A set with a policy whose one pod is bound to the trap's node (no scheduler, no kubelet: it stays Pending). */
static void make_set(struct t *t)
{
	json_t *sts = it_statefulset("s", 1, "Parallel", "data");
	it_set_annotation(sts, "autoresize.stateful-operator.io/data", "used=80%, max=1Gi");
	json_t *spec = json_object_get(json_object_get(json_object_get(sts, "spec"), "template"), "spec");
	json_object_set_new(spec, "nodeName", json_string(t->node));
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULSETS, t->ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	json_decref(sts);
	struct pod_on p = {t};
	if (!it_wait(pod_bound, &p, 60000))
		fail_msg("pod s-0 not created on %s", t->node);
}

/* Starts the operator as kubeconfig, reading usage from the kubelets (dry run: it changes nothing). */
static void start_operator(struct t *t, const char *kubeconfig)
{
	const char *args[] = {"--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address",
			      "0", "--dry-run", "--log-level", "debug", "--autoresize-source", "kubelet",
			      "--autoresize-interval", "5s", "--kubelet-ca-file", t->ca_file, NULL};
	daemon_start(&t->d, args, NULL);
	t->running = true;
	if (!daemon_wait_log(&t->d, "all caches synced", 30000))
		fail_msg("operator did not start:\n%s", daemon_log(&t->d));
}

static void stop_operator(struct t *t)
{
	daemon_stop_operator(&t->d);
	t->running = false;
}

static bool trap_asked(void *ctx)
{
	struct kubelet_trap_seen seen;
	kubelet_trap_seen(ctx, &seen);
	bool asked = seen.requests > 0;
	kubelet_trap_seen_release(&seen);
	return asked;
}

/* What reached the trap once the operator asked it (fills *seen). */
static void wait_asked(struct t *t, struct kubelet_trap_seen *seen)
{
	if (!it_wait(trap_asked, t->trap, 60000))
		fail_msg("the operator never asked the node's kubelet endpoint; its log:\n%s", daemon_log(&t->d));
	kubelet_trap_seen(t->trap, seen);
	printf("[ trap  ] %d request(s), Authorization %s, client certificate %s\n", seen->requests,
	       seen->authorization ? "present" : "absent", seen->client_cert ? "PRESENTED" : "none");
}

/* A client of the API server that shows token (borrowed). */
static struct kube_client *client_with(struct t *t, const char *token)
{
	char *path = it_write_kubeconfig(t->dir, "captured.kubeconfig", NULL, token, NULL);
	struct kube_client *c = it_client_from(path, NULL);
	free(path);
	return c;
}

/* A SelfSubjectAccessReview by c: is it allowed that (resourceAttributes, JSON)? */
static bool allowed(struct kube_client *c, const char *attributes)
{
	char *body = xasprintf("{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","
			       "\"spec\":{\"resourceAttributes\":%s}}",
			       attributes);
	json_t *out = NULL;
	struct kube_error err;
	if (kube_request(c, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json", body,
			 &out, &err) < 0)
		fail_msg("SelfSubjectAccessReview %s: %s", attributes, err.message);
	bool ok = json_is_true(json_object_get(json_object_get(out, "status"), "allowed"));
	printf("[ can-i ] %s: %s\n", attributes, ok ? "yes" : "no");
	json_decref(out);
	free(body);
	return ok;
}

/* Who c is, as the API server sees it (new string). */
static char *whoami(struct kube_client *c)
{
	json_t *out = NULL;
	struct kube_error err;
	if (kube_request(c, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
			 "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}", &out, &err) < 0)
		fail_msg("SelfSubjectReview with the captured token: %s", err.message);
	const char *user = kube_obj_str(out, "status.userInfo.username");
	char *name = xstrdup(user ? user : "");
	json_decref(out);
	return name;
}

/* The captured credential: the usage reader's bearer token, with nothing but nodes/stats. */
static void expect_reader_token(struct t *t, const struct kubelet_trap_seen *seen)
{
	if (!seen->authorization || strncmp(seen->authorization, "Bearer ", 7))
		fail_msg("no bearer token reached the node's endpoint: %s",
			 seen->authorization ? "another scheme" : "none");
	const char *token = seen->authorization + 7;
	char *own = it_operator_token();
	if (!strcmp(token, own))
		printf("[ trap  ] the node received the operator's OWN token\n");
	struct kube_client *c = client_with(t, token);
	char *user = whoami(c);
	printf("[ trap  ] the captured token is %s\n", user);
	/* What the operator's own token may do; a node must get none of it. */
	bool pods = allowed(c, "{\"verb\":\"create\",\"resource\":\"pods\",\"namespace\":\"kube-system\"}");
	bool pvs = allowed(c, "{\"verb\":\"delete\",\"resource\":\"persistentvolumes\"}");
	bool hook = allowed(c, "{\"verb\":\"patch\",\"group\":\"admissionregistration.k8s.io\","
			       "\"resource\":\"mutatingwebhookconfigurations\",\"name\":\"stateful-operator\"}");
	bool secrets = allowed(c, "{\"verb\":\"create\",\"resource\":\"secrets\",\"namespace\":\"stateful-operator-system\"}");
	/* What the kubelet checks for /stats/summary: the feature still works. */
	bool stats = allowed(c, "{\"verb\":\"get\",\"resource\":\"nodes\",\"subresource\":\"stats\"}");
	assert_false(pods);
	assert_false(pvs);
	assert_false(hook);
	assert_false(secrets);
	assert_true(stats);
	assert_string_not_equal(token, own);
	assert_string_equal(user, READER);
	/* Never logged, even at debug. */
	char *log = daemon_log(&t->d);
	assert_null(strstr(log, token));
	free(log);
	free(user);
	free(own);
	kube_client_free(c);
}

/*
 * The operator, as kubeconfig, asks the trap's node: no client
 * certificate, and a bearer token that is the usage reader's.
 */
static void expect_node_gets_only_the_usage_token(struct t *t, const char *kubeconfig)
{
	make_trap_node(t);
	make_set(t);
	start_operator(t, kubeconfig);
	struct kubelet_trap_seen seen;
	wait_asked(t, &seen);
	assert_false(seen.client_cert);
	expect_reader_token(t, &seen);
	kubelet_trap_seen_release(&seen);
	stop_operator(t);
}

/* The operator as it runs in-cluster: its own ServiceAccount's bearer token. */
static void test_node_gets_only_the_usage_token(void **state)
{
	expect_node_gets_only_the_usage_token(*state, getenv("SOP_OPERATOR_KUBECONFIG"));
}

/* An operator whose own credential is a client certificate (the admin's): none is presented to the node. */
static void test_no_client_certificate_presented(void **state)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	bool has_cert = cfg.cert_data.data || cfg.cert_file;
	kube_config_release(&cfg);
	if (!has_cert)
		fail_msg("the admin kubeconfig %s holds no client certificate: cannot show that none is presented",
			 getenv("KUBECONFIG"));
	expect_node_gets_only_the_usage_token(*state, getenv("KUBECONFIG"));
}

/* Namespace scope has no kubelet source: the operator refuses to start, saying what to use, and asks nobody. */
static void test_namespace_scope_refuses_the_kubelet_source(void **state)
{
	struct t *t = *state;
	make_trap_node(t);
	make_set(t);
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--dry-run", "--namespace", t->ns,
			      "--autoresize-source", "kubelet", "--kubelet-port", "1", NULL};
	/* Its own namespace as deploy/ has it: the state key is found there, nothing else stops it. */
	const char *env[] = {"POD_NAMESPACE=stateful-operator-system", NULL};
	daemon_start(&t->d, args, env);
	t->running = true;
	int code = daemon_wait_exit(&t->d, 20000);
	char *log = daemon_log(&t->d);
	t->running = false;
	daemon_cleanup(&t->d);
	printf("[ exit  ] %d: %s\n", code, log);
	if (code <= 0 || !strstr(log, "needs cluster scope") || !strstr(log, "--autoresize-source=prometheus"))
		fail_msg("the kubelet source in namespace scope was not refused at start (exit %d):\n%s", code, log);
	free(log);
	struct kubelet_trap_seen seen;
	kubelet_trap_seen(t->trap, &seen);
	assert_int_equal(seen.requests, 0);
	kubelet_trap_seen_release(&seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node_gets_only_the_usage_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_client_certificate_presented, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_scope_refuses_the_kubelet_source, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
