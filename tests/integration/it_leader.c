/*
 * Leader election between real operator processes: exactly one leads;
 * after kill -9 of the leader a standby leads within the lease duration
 * plus one retry period (15 s + 2 s); after SIGTERM (the Lease is
 * released) within 3 s. /readyz means "can serve", never "leads": the
 * standby is Ready (200) while another replica leads, and answers
 * admission reviews; who leads is shown by the Lease and by the metric
 * stateful_operator_leader (1 on the leader, 0 on the standby).
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

#include "daemon.h"
#include "itest.h"
#include "tcp_proxy.h"
#include "webhook/webhook.h"
#include "webhook_steps.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define LEASE_MS 15000
#define RETRY_MS 2000
/* A StatefulSet an update leaves as it was: the webhook allows it. */
#define REVIEWED_SET                                                                                                   \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\","                        \
	"\"namespace\":\"default\"},\"spec\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":"             \
	"[{\"name\":\"c\",\"image\":\"pause\"}]}},\"volumeClaimTemplates\":[{\"metadata\":{\"name\":"             \
	"\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]}}"

struct replica {
	struct daemon d;
	const char *name; /* POD_NAME, the prefix of its identity */
	int probe_port;   /* /readyz and /metrics */
	int webhook_port;
	char env[64];
};

/* A replica as the Deployment runs it: leader election, probes, metrics and the webhook. */
static void replica_start(struct replica *r, const char *name, int probe_port, const char *lease_ns)
{
	r->name = name;
	r->probe_port = probe_port;
	r->webhook_port = wh_free_port();
	snprintf(r->env, sizeof(r->env), "POD_NAME=%s", name);
	char probe[32], webhook[32];
	snprintf(probe, sizeof(probe), "127.0.0.1:%d", probe_port);
	snprintf(webhook, sizeof(webhook), "127.0.0.1:%d", r->webhook_port);
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--leader-elect",
			      "--leader-election-namespace", lease_ns, "--metrics-bind-address", probe,
			      "--health-probe-bind-address", probe, "--webhook-bind-address", webhook,
			      "--webhook-cert-names", "127.0.0.1", NULL};
	const char *env[] = {r->env, NULL};
	daemon_start(&r->d, args, env);
}

/* The Lease's holder (new string, "" when none), or NULL when there is no Lease. */
static char *holder(struct kube_client *admin, const char *ns)
{
	json_t *lease = NULL;
	struct kube_error err;
	if (kube_get(admin, &KUBE_LEASES, ns, "stateful-operator", &lease, &err) < 0)
		return NULL;
	const char *h = kube_obj_str(lease, "spec.holderIdentity");
	char *out = xstrdup(h ? h : "");
	json_decref(lease);
	return out;
}

struct holder_wait {
	struct kube_client *admin;
	const char *ns;
	const char *prefix;
};

static bool held_by(void *ctx)
{
	struct holder_wait *w = ctx;
	char *h = holder(w->admin, w->ns);
	bool yes = h && !strncmp(h, w->prefix, strlen(w->prefix)) && h[strlen(w->prefix)] == '_';
	free(h);
	return yes;
}

static bool wait_leader(struct kube_client *admin, const char *ns, const struct replica *r,
			long timeout_ms)
{
	struct holder_wait w = {admin, ns, r->name};
	return it_wait(held_by, &w, timeout_ms);
}

static long readyz(const struct replica *r)
{
	return http_get(r->probe_port, "/readyz", NULL);
}

struct ready_wait {
	const struct replica *r;
	long code;
};

static bool readyz_is(void *ctx)
{
	struct ready_wait *w = ctx;
	return readyz(w->r) == w->code;
}

static void expect_readyz(const struct replica *r, long code)
{
	struct ready_wait w = {r, code};
	if (!it_wait(readyz_is, &w, 5000))
		fail_msg("%s: /readyz gave %ld, want %ld", r->name, readyz(r), code);
}

/* /readyz answers 200 and its body says what this replica is (needle). */
static void expect_ready_as(const struct replica *r, const char *needle)
{
	expect_readyz(r, 200);
	char *body = NULL;
	assert_int_equal(http_get(r->probe_port, "/readyz", &body), 200);
	if (!body || !strstr(body, needle))
		fail_msg("%s: /readyz says \"%s\", want \"%s\"", r->name, body ? body : "", needle);
	free(body);
}

/* The value of stateful_operator_leader on r's /metrics, or -1 when absent. */
static int leader_metric(const struct replica *r)
{
	char *body = NULL;
	int v = -1;
	if (http_get(r->probe_port, "/metrics", &body) == 200) {
		for (const char *line = body; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
			if (!strncmp(line, "stateful_operator_leader ", 25))
				v = atoi(line + 25);
	}
	free(body);
	return v;
}

/*
 * An AdmissionReview of an UPDATE that changes nothing, posted to r's
 * webhook as the API server would (the Service may route it to any Ready
 * replica): the HTTP code, and whether the answer allowed it.
 */
static long review(const struct replica *r, bool *allowed)
{
	char *out = it_sh_output(
		"curl -sk -w ' %%{http_code}' -X POST -H 'Content-Type: application/json' "
		"https://127.0.0.1:%d" WEBHOOK_PATH " --data-binary '{\"apiVersion\":\"admission.k8s.io/v1\","
		"\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"it-leader\",\"operation\":\"UPDATE\","
		"\"namespace\":\"default\",\"name\":\"web\",\"userInfo\":{\"username\":\"it\"},"
		"\"object\":%s,\"oldObject\":%s}}'",
		r->webhook_port, REVIEWED_SET, REVIEWED_SET);
	const char *code = out ? strrchr(out, ' ') : NULL;
	*allowed = out && strstr(out, "\"allowed\":true");
	long c = code ? atol(code + 1) : 0;
	free(out);
	return c;
}

static void test_one_leader_and_failover(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	/* A Lease namespace of its own: no Lease left over from another run interferes. */
	char *ns = it_namespace_new(admin, "it-lease");
	struct replica a, b, c;

	replica_start(&a, "op-a", 18181, ns);
	assert_true(wait_leader(admin, ns, &a, 20000));
	replica_start(&b, "op-b", 18182, ns);
	assert_true(daemon_wait_log(&b.d, "waiting for Lease", 20000));
	it_sleep_ms(3 * RETRY_MS);
	/* Exactly one leads: b stays a standby while a renews. */
	assert_true(wait_leader(admin, ns, &a, 1));
	/* Both can serve, so both are Ready: a Deployment of two is Available and can roll out. */
	expect_ready_as(&a, "leading");
	expect_ready_as(&b, "standby");
	/* Leadership is shown elsewhere: the Lease (above) and the metric. */
	assert_int_equal(leader_metric(&a), 1);
	assert_int_equal(leader_metric(&b), 0);
	/* The standby answers reviews: the webhook's Service routes to either. */
	bool allowed = false;
	assert_int_equal(review(&b, &allowed), 200);
	assert_true(allowed);

	/* kill -9: no release; b must wait for the Lease to expire, and no longer. */
	double t0 = it_now_ms();
	daemon_signal(&a.d, SIGKILL);
	assert_int_equal(daemon_wait_exit(&a.d, 5000), 128 + SIGKILL);
	assert_true(wait_leader(admin, ns, &b, 30000));
	double failover = it_now_ms() - t0;
	printf("# kill -9: standby led after %.1f s (lease %d s + retry %d s)\n", failover / 1000,
	       LEASE_MS / 1000, RETRY_MS / 1000);
	/* 0.5 s of slack for this test's own polling and the API round trips. */
	assert_true(failover <= LEASE_MS + RETRY_MS + 500);
	assert_true(failover >= LEASE_MS - RETRY_MS); /* it did not steal a live Lease */
	expect_ready_as(&b, "leading");
	assert_int_equal(leader_metric(&b), 1);

	/* SIGTERM: the leader releases the Lease on its way out. */
	replica_start(&c, "op-c", 18183, ns);
	assert_true(daemon_wait_log(&c.d, "waiting for Lease", 20000));
	double t1 = it_now_ms();
	daemon_signal(&b.d, SIGTERM);
	assert_true(wait_leader(admin, ns, &c, 10000));
	double handover = it_now_ms() - t1;
	printf("# SIGTERM: standby led after %.1f s\n", handover / 1000);
	assert_true(handover <= 3000);
	assert_int_equal(daemon_wait_exit(&b.d, 10000), 0);
	char *log = daemon_log(&b.d);
	assert_non_null(strstr(log, "released Lease"));
	free(log);
	expect_ready_as(&c, "leading");

	daemon_signal(&c.d, SIGTERM);
	assert_int_equal(daemon_wait_exit(&c.d, 10000), 0);
	daemon_cleanup(&a.d);
	daemon_cleanup(&b.d);
	daemon_cleanup(&c.d);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/*
 * A leader cut off from the API server (every connection cut, new ones
 * refused) cannot renew: when the renew deadline passes it must exit,
 * before the Lease could expire for a standby, so two never act at once.
 */
static void test_leader_that_cannot_renew_exits(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-lost");
	struct kube_config cfg = {0};
	char *err = NULL;
	assert_int_equal(kubeconfig_load(getenv("KUBECONFIG"), NULL, &cfg, &err), 0);
	struct tcp_proxy *proxy = tcp_proxy_start("127.0.0.1", atoi(strrchr(cfg.server, ':') + 1));
	kube_config_release(&cfg);
	assert_non_null(proxy);
	char dir[] = "/tmp/it-lost-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *server = xasprintf("https://127.0.0.1:%d", tcp_proxy_port(proxy));
	char *token = it_operator_token();
	char *kc = it_write_kubeconfig(dir, "via-proxy.kubeconfig", server, token, NULL);

	const char *args[] = {"--kubeconfig", kc, "--leader-elect", "--leader-election-namespace", ns,
			      "--metrics-bind-address", "0", "--health-probe-bind-address", "0", NULL};
	struct daemon d;
	daemon_start(&d, args, NULL);
	assert_true(daemon_wait_log(&d, "became leader", 20000));
	double t0 = it_now_ms();
	tcp_proxy_block(proxy, true);
	tcp_proxy_cut(proxy);
	int rc = daemon_wait_exit(&d, 30000);
	double gone = it_now_ms() - t0;
	printf("# cut off: exited %d after %.1f s (renew deadline 10 s, lease 15 s)\n", rc, gone / 1000);
	assert_int_equal(rc, 1);
	assert_true(gone >= 8000);                 /* it kept trying for about the renew deadline */
	assert_true(gone <= 10000 + RETRY_MS);     /* and no longer than one more retry */
	assert_true(gone < LEASE_MS);              /* gone before anyone else could take the Lease */
	char *log = daemon_log(&d);
	assert_non_null(strstr(log, "leadership lost"));
	free(log);

	tcp_proxy_stop(proxy);
	daemon_cleanup(&d);
	it_sh("rm -rf '%s'", dir);
	free(kc);
	free(token);
	free(server);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_leader_and_failover),
		cmocka_unit_test(test_leader_that_cannot_renew_exits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
