/* Command-line flags: defaults, every flag, and refusals that say what to fix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* getopt wants writable strings; -Wwrite-strings makes literals const, so copy them. */
struct args {
	int argc;
	char *argv[32];
};

static struct args *args_new(const char *const *list)
{
	struct args *a = calloc(1, sizeof(*a));
	a->argv[a->argc++] = strdup("stateful-operator");
	for (; *list; list++)
		a->argv[a->argc++] = strdup(*list);
	return a;
}

static void args_free(struct args *a)
{
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a);
}

#define ARGV(...) args_new((const char *const[]){__VA_ARGS__, NULL})

static void test_defaults(void **state)
{
	(void)state;
	struct args *a = args_new((const char *const[]){NULL});
	struct operator_options o;
	char *err = NULL;
	assert_int_equal(options_parse(a->argc, a->argv, &o, &err), 0);
	args_free(a);
	assert_null(o.kubeconfig);
	assert_null(o.namespace);
	assert_int_equal(o.workers, 4);
	assert_int_equal(o.controllers, CONTROLLER_ALL);
	assert_false(o.dry_run);
	assert_false(o.leader_elect);
	assert_int_equal(o.log_level, LOG_INFO);
	assert_int_equal(o.log_format, LOG_FORMAT_TEXT);
	assert_string_equal(o.metrics_bind_address, ":8080");
	assert_string_equal(o.health_probe_bind_address, ":8081");
	assert_string_equal(o.autoresize_source, "kubelet");
	assert_int_equal(o.autoresize_interval_ms, 60000);
	assert_false(o.autoresize_recommend_only);
	assert_int_equal(o.kubelet_port, 10250);
	assert_string_equal(o.kubelet_service_account, "stateful-operator-usage-reader");
	assert_null(o.prometheus_url);
	assert_null(o.webhook_cert_dir);
	options_release(&o);
}

static void test_every_flag(void **state)
{
	(void)state;
	struct args *a = ARGV("--kubeconfig", "/k", "--context", "dev", "--namespace", "apps", "--workers",
			   "8", "--controllers", "resize,cluster", "--dry-run", "--log-level", "debug",
			   "--log-format=json", "--metrics-bind-address", "127.0.0.1:9090",
			   "--health-probe-bind-address", ":9091", "--leader-elect",
			   "--leader-election-namespace", "ops", "--copy-image", "registry.local/rsync:3");
	struct operator_options o;
	char *err = NULL;
	assert_int_equal(options_parse(a->argc, a->argv, &o, &err), 0);
	args_free(a);
	assert_string_equal(o.kubeconfig, "/k");
	assert_string_equal(o.context, "dev");
	assert_string_equal(o.namespace, "apps");
	assert_int_equal(o.workers, 8);
	assert_int_equal(o.controllers, CONTROLLER_RESIZE | CONTROLLER_CLUSTER);
	assert_true(o.dry_run);
	assert_int_equal(o.log_level, LOG_DEBUG);
	assert_int_equal(o.log_format, LOG_FORMAT_JSON);
	assert_string_equal(o.metrics_bind_address, "127.0.0.1:9090");
	assert_string_equal(o.health_probe_bind_address, ":9091");
	assert_true(o.leader_elect);
	assert_string_equal(o.leader_election_namespace, "ops");
	assert_string_equal(o.copy_image, "registry.local/rsync:3");
	/* Namespace scope has no kubelet source: autoresize is off unless another source is named. */
	assert_string_equal(o.autoresize_source, "none");
	options_release(&o);

	a = ARGV("--autoresize-source", "prometheus", "--prometheus-url", "https://prom:9090",
		 "--prometheus-bearer-token-file", "/t", "--prometheus-ca-file", "/pca", "--autoresize-interval", "2m",
		 "--autoresize-recommend-only",
		 "--kubelet-ca-file", "/ca", "--kubelet-insecure-tls", "--kubelet-port", "10255",
		 "--kubelet-service-account", "reader.v2");
	assert_int_equal(options_parse(a->argc, a->argv, &o, &err), 0);
	args_free(a);
	assert_string_equal(o.autoresize_source, "prometheus");
	assert_string_equal(o.prometheus_url, "https://prom:9090");
	assert_string_equal(o.prometheus_token_file, "/t");
	assert_string_equal(o.prometheus_ca_file, "/pca");
	assert_int_equal(o.autoresize_interval_ms, 120000);
	assert_true(o.autoresize_recommend_only);
	assert_string_equal(o.kubelet_ca_file, "/ca");
	assert_true(o.kubelet_insecure_tls);
	assert_int_equal(o.kubelet_port, 10255);
	assert_string_equal(o.kubelet_service_account, "reader.v2");
	options_release(&o);

	a = ARGV("--webhook-bind-address", ":9443", "--webhook-cert-dir", "/etc/webhook-cert");
	assert_int_equal(options_parse(a->argc, a->argv, &o, &err), 0);
	args_free(a);
	assert_string_equal(o.webhook_bind_address, ":9443");
	assert_string_equal(o.webhook_cert_dir, "/etc/webhook-cert");
	options_release(&o);

	/* Namespace scope with a source that works there. */
	a = ARGV("--namespace", "apps", "--autoresize-source", "prometheus", "--prometheus-url", "http://prom:9090");
	assert_int_equal(options_parse(a->argc, a->argv, &o, &err), 0);
	args_free(a);
	assert_string_equal(o.autoresize_source, "prometheus");
	options_release(&o);
}

static void expect_refusal(struct args *a, const char *needle)
{
	struct operator_options o;
	char *err = NULL;
	assert_int_equal(options_parse(a->argc, a->argv, &o, &err), -1);
	args_free(a);
	assert_non_null(err);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
	free(err);
	options_release(&o);
}

static void test_refusals_name_the_flag(void **state)
{
	(void)state;
	expect_refusal(ARGV("--workers", "0"), "--workers");
	expect_refusal(ARGV("--workers", "many"), "--workers");
	expect_refusal(ARGV("--workers", "65"), "1 to 64");
	expect_refusal(ARGV("--controllers", "resize,backup"), "\"backup\"");
	expect_refusal(ARGV("--controllers", ","), "at least one");
	expect_refusal(ARGV("--log-level", "verbose"), "--log-level");
	expect_refusal(ARGV("--log-format", "xml"), "--log-format");
	expect_refusal(ARGV("--namespace", ""), "--namespace");
	expect_refusal(ARGV("--copy-image", "rsync latest"), "--copy-image");
	expect_refusal(ARGV("--frobnicate"), "unknown flag --frobnicate");
	expect_refusal(ARGV("--kubeconfig"), "--kubeconfig needs a value");
	expect_refusal(ARGV("stray"), "unexpected argument \"stray\"");
	expect_refusal(ARGV("--autoresize-source", "cadvisor"), "kubelet, kubelet-proxy, prometheus, none");
	expect_refusal(ARGV("--autoresize-source", "prometheus"), "--autoresize-source=prometheus needs --prometheus-url");
	expect_refusal(ARGV("--autoresize-interval", "1s"), "--autoresize-interval: at least 5s");
	expect_refusal(ARGV("--autoresize-interval", "soon"), "--autoresize-interval");
	expect_refusal(ARGV("--prometheus-url", "prom:9090"), "--prometheus-url");
	/* A bearer token in clear (issue 27, finding 10), in either order of the flags. */
	expect_refusal(ARGV("--autoresize-source", "prometheus", "--prometheus-url", "http://prom:9090",
			    "--prometheus-bearer-token-file", "/t"),
		       "--prometheus-bearer-token-file needs an https:// --prometheus-url");
	expect_refusal(ARGV("--prometheus-bearer-token-file", "/t", "--prometheus-url", "http://prom:9090"),
		       "use https://");
	expect_refusal(ARGV("--kubelet-port", "0"), "--kubelet-port");
	/* The kubelet source in namespace scope: refused, naming what works there. */
	expect_refusal(ARGV("--namespace", "apps", "--autoresize-source", "kubelet"),
		       "--autoresize-source=kubelet needs cluster scope");
	expect_refusal(ARGV("--autoresize-source=kubelet", "--namespace=apps"), "--autoresize-source=prometheus");
	expect_refusal(ARGV("--kubelet-service-account", "Reader"), "--kubelet-service-account");
	expect_refusal(ARGV("--kubelet-service-account", "a/../b"), "not a ServiceAccount name");
	expect_refusal(ARGV("--kubelet-service-account", "-a"), "--kubelet-service-account");
	expect_refusal(ARGV("--webhook-bind-address", ":9443", "--webhook-cert-dir", ""),
		       "--webhook-cert-dir: give the directory");
	/* A certificate for a webhook that is off is a mistake worth saying. */
	expect_refusal(ARGV("--webhook-cert-dir", "/etc/webhook-cert"), "--webhook-cert-dir needs --webhook-bind-address");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_flag),
		cmocka_unit_test(test_refusals_name_the_flag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
