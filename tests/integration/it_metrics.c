/*
 * /metrics as Prometheus reads it: the real parser (promtool) accepts the
 * exposition, and the counters move when the operator works. /healthz and
 * /readyz answer on the probe address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

#define METRICS_PORT 18191
#define PROBE_PORT 18192

/* The value of the series whose line starts with prefix (name and labels), or -1. */
static double sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, prefix, n) && line[n] == ' ')
			return strtod(line + n + 1, NULL);
	}
	return -1;
}

static char *scrape(void)
{
	char *body = NULL;
	long code = http_get(METRICS_PORT, "/metrics", &body);
	if (code != 200)
		fail_msg("/metrics answered %ld", code);
	return body;
}

/* promtool check metrics: exit 0 and nothing printed. */
static void promtool_accepts(const char *text)
{
	char path[] = "/tmp/it-metrics-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char *cmd = xasprintf("promtool check metrics < %s > %s.out 2>&1", path, path);
	int rc = it_sh("%s", cmd);
	char *out_path = xasprintf("%s.out", path);
	FILE *f = fopen(out_path, "r");
	char report[2048] = "";
	size_t n = f ? fread(report, 1, sizeof(report) - 1, f) : 0;
	report[n] = '\0';
	if (f)
		fclose(f);
	if (rc != 0 || n != 0)
		fail_msg("promtool (exit %d) says:\n%s", rc, report);
	unlink(out_path);
	unlink(path);
	free(out_path);
	free(cmd);
}

/* Starts the operator with /metrics on METRICS_PORT (no probes) and waits for its caches. */
static void start_with_metrics(struct daemon *d)
{
	char maddr[32];
	snprintf(maddr, sizeof(maddr), "127.0.0.1:%d", METRICS_PORT);
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", maddr,
			      "--health-probe-bind-address", "0", NULL};
	daemon_start(d, args, NULL);
	assert_true(daemon_wait_log(d, "all caches synced", 20000));
}

/* SIGTERM: the operator exits 0 within 10 s. */
static void stop_cleanly(struct daemon *d)
{
	daemon_signal(d, SIGTERM);
	assert_int_equal(daemon_wait_exit(d, 10000), 0);
	daemon_cleanup(d);
}

static void test_metrics_parse_and_move(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-metrics");
	char maddr[32], paddr[32];
	snprintf(maddr, sizeof(maddr), "127.0.0.1:%d", METRICS_PORT);
	snprintf(paddr, sizeof(paddr), "127.0.0.1:%d", PROBE_PORT);
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address",
			      maddr, "--health-probe-bind-address", paddr, NULL};
	struct daemon d;
	daemon_start(&d, args, NULL);
	assert_true(daemon_wait_log(&d, "all caches synced", 20000));
	assert_int_equal(http_get(PROBE_PORT, "/healthz", NULL), 200);
	assert_int_equal(http_get(PROBE_PORT, "/readyz", NULL), 200);
	assert_int_equal(http_get(PROBE_PORT, "/nope", NULL), 404);

	char *before = scrape();
	promtool_accepts(before);
	/* Every family the spec names is there. */
	static const char *const families[] = {
		"stateful_operator_api_requests_total", "stateful_operator_watch_restarts_total",
		"stateful_operator_informer_events_total", "stateful_operator_resizes_started_total",
		"stateful_operator_resizes_completed_total", "stateful_operator_resizes_failed_total",
		"stateful_operator_copy_bytes_total", "stateful_operator_cleanups_started_total",
		"stateful_operator_cleanups_succeeded_total", "stateful_operator_cleanups_failed_total",
		"stateful_operator_cleanups_given_up_total", "stateful_operator_cluster_member_replacements_total",
		"stateful_operator_api_request_duration_seconds", "stateful_operator_copy_pass_duration_seconds",
		"controller_runtime_reconcile_total", "workqueue_queue_duration_seconds", "stateful_operator_build_info",
		"process_resident_memory_bytes", "process_start_time_seconds", "process_open_fds"};

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char *type = xasprintf("# TYPE %s ", families[i]);
		if (!strstr(before, type))
			fail_msg("family %s missing", families[i]);
		free(type);
	}
	/* The daemon's own build and process: build_info there, a start time of the last minutes. */
	assert_non_null(strstr(before, "\nstateful_operator_build_info{version=\""));
	assert_true(fabs(sample(before, "process_start_time_seconds") - (double)time(NULL)) < 600);

	double gets = sample(before, "stateful_operator_api_requests_total{verb=\"GET\",code=\"200\"}");

	double events = sample(before, "stateful_operator_informer_events_total{resource=\"statefulsets\"}");
	double objects = sample(before, "stateful_operator_informer_objects{resource=\"statefulsets\"}");
	assert_true(gets >= 3); /* at least one LIST per cache */
	assert_true(events >= 0 && objects >= 0);

	/* Work: a StatefulSet appears, changes and goes; the watch counters must follow. */
	json_t *sts = it_json("{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"m\"},"
			      "\"spec\":{\"replicas\":0,\"serviceName\":\"m\",\"selector\":{\"matchLabels\":"
			      "{\"app\":\"m\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"m\"}},"
			      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}");
	struct kube_error err;
	assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err), 0);
	it_sleep_ms(1500);
	char *after = scrape();
	promtool_accepts(after);
	double events2 = sample(after, "stateful_operator_informer_events_total{resource=\"statefulsets\"}");
	double objects2 = sample(after, "stateful_operator_informer_objects{resource=\"statefulsets\"}");
	double gets2 = sample(after, "stateful_operator_api_requests_total{verb=\"GET\",code=\"200\"}");
	printf("# informer events %g -> %g, cached StatefulSets %g -> %g\n", events, events2, objects,
	       objects2);
	assert_true(events2 >= events + 1);
	assert_int_equal((int)objects2, (int)objects + 1);
	assert_true(gets2 >= gets);

	stop_cleanly(&d);
	json_decref(sts);
	free(before);
	free(after);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

struct cleanup_wait {
	struct kube_client *c;
	const char *ns;
};

/* Two cleanups have ended: one succeeded (claims of ordinal 2 gone), one failed for good. */
static bool cleanups_ended(void *ctx)
{
	struct cleanup_wait *w = ctx;
	return it_event_count(w->c, w->ns, "CleanupSucceeded", "ok") == 1 &&
	       it_event_count(w->c, w->ns, "CleanupFailed", "bad") == 1;
}

/* The cleanup counters move with the cleanups: started, succeeded, failed (each attempt once). */
static void test_cleanup_counters_move(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-metrics-sd");
	static const char *const names[] = {"ok", "bad"};
	for (int i = 0; i < 2; i++) {
		json_t *sts = it_statefulset(names[i], 2, "OrderedReady", "data");
		char *app = xasprintf("%s-cleanup", names[i]);
		char *tmpl = it_testbed_pod_template(app, i == 0 ? "succeed" : "fail", "1s", "no", "data");
		it_set_annotation(sts, "stateful-operator.io/scaledown-pod-template", tmpl);
		it_set_annotation(sts, "stateful-operator.io/scaledown-max-attempts", "1");
		struct kube_error err;
		assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err), 0);
		free(tmpl);
		free(app);
		json_decref(sts);
	}
	it_wait_ready_and_bound(admin, ns, 4, 4, 60000);
	struct daemon d;
	start_with_metrics(&d);
	char *before = scrape();
	for (int i = 0; i < 2; i++)
		it_merge_patch(admin, &KUBE_STATEFULSETS, ns, names[i], "{\"spec\":{\"replicas\":1}}");
	struct cleanup_wait w = {admin, ns};
	if (!it_wait_every(cleanups_ended, &w, 60000, 200))
		fail_msg("the two cleanups did not end");
	char *after = scrape();
	/* "bad" has one attempt: its failure is also the cleanup given up. */
	static const char *const counters[] = {
		"stateful_operator_cleanups_started_total", "stateful_operator_cleanups_succeeded_total",
		"stateful_operator_cleanups_failed_total", "stateful_operator_cleanups_given_up_total"};
	static const int moved[] = {2, 1, 1, 1};
	for (int i = 0; i < 4; i++) {
		double b = sample(before, counters[i]), a = sample(after, counters[i]);
		printf("# %s %g -> %g\n", counters[i], b, a);
		assert_int_equal((int)(a - b), moved[i]);
	}

	stop_cleanly(&d);
	free(before);
	free(after);
	it_delete_all_removing_finalizer(admin, &KUBE_STATEFULSETS, ns, "stateful-operator.io/scaledown");
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

struct replaced_wait {
	struct kube_client *c;
	const char *ns;
};

static bool member_replaced(void *ctx)
{
	struct replaced_wait *w = ctx;
	return it_event_count(w->c, w->ns, "MemberReplaced", "x") >= 1;
}

/* A StatefulCluster member that fails is replaced, and the replacement is counted. */
static void test_replacement_counter_moves(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-metrics-stc");
	struct daemon d;
	start_with_metrics(&d);
	char *before = scrape();
	/* Every member's pod fails 3 s after it starts (kwok, as annotated): each is replaced in turn. */
	json_t *stc = it_json("{\"apiVersion\":\"stateful-operator.io/v1alpha1\",\"kind\":\"StatefulCluster\","
			      "\"metadata\":{\"name\":\"x\"},\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":"
			      "{\"app\":\"x\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"x\"},\"annotations\":"
			      "{\"testbed.stateful-operator.io/outcome\":\"fail\",\"testbed.stateful-operator.io/delay\":"
			      "\"3s\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}");
	struct kube_error err;
	assert_int_equal(kube_create(admin, &KUBE_STATEFULCLUSTERS, ns, stc, NULL, &err), 0);
	struct replaced_wait w = {admin, ns};
	if (!it_wait_every(member_replaced, &w, 60000, 200))
		fail_msg("no member was replaced");
	char *after = scrape();
	const char *family = "stateful_operator_cluster_member_replacements_total";
	double b = sample(before, family), a = sample(after, family);
	printf("# %s %g -> %g\n", family, b, a);
	assert_true(a - b >= 1);

	assert_int_equal(kube_delete(admin, &KUBE_STATEFULCLUSTERS, ns, "x", NULL, &err), 0);
	stop_cleanly(&d);
	json_decref(stc);
	free(before);
	free(after);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

/* The stuck-resize gauge's series for set in ns as it renders (its name and labels). New string. */
static char *in_flight_series(const char *ns, const char *set)
{
	return xasprintf("stateful_operator_resize_in_flight_seconds"
			 "{statefulset_namespace=\"%s\",statefulset=\"%s\"}",
			 ns, set);
}

/*
 * The stuck-resize gauge: a resize recorded as started 4 h ago and still
 * Expanding shows its age; a Failed one and a set without a resize have no
 * series; once the state goes, so does the series. (The state is not
 * sealed, so the operator leaves it alone: only the gauge is under test.)
 */
static void test_resize_in_flight_gauge(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-metrics-rs");
	time_t started = time(NULL) - 4 * 3600;
	struct tm tm;
	char when[32];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&started, &tm));
	static const char *const names[] = {"stuck", "failed", "plain"};
	static const char *const phases[] = {"Expanding", "Failed", NULL};
	for (int i = 0; i < 3; i++) {
		json_t *sts = it_statefulset(names[i], 0, "OrderedReady", "data");
		if (phases[i]) {
			char *st = xasprintf("{\"phase\":\"%s\",\"strategy\":\"expand\",\"started\":\"%s\"}",
					     phases[i], when);
			it_set_annotation(sts, "stateful-operator.io/resize-state", st);
			free(st);
		}
		struct kube_error err;
		assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err), 0);
		json_decref(sts);
	}
	struct daemon d;
	start_with_metrics(&d);
	char *stuck = in_flight_series(ns, "stuck"), *failed = in_flight_series(ns, "failed"),
	     *plain = in_flight_series(ns, "plain");
	char *text = scrape();
	promtool_accepts(text);
	double age = sample(text, stuck);
	printf("# %s %g\n", stuck, age);
	assert_true(age >= 4 * 3600 && age < 4 * 3600 + 120);
	assert_true(sample(text, failed) < 0);
	assert_true(sample(text, plain) < 0);
	free(text);

	it_merge_patch(admin, &KUBE_STATEFULSETS, ns, "stuck",
		       "{\"metadata\":{\"annotations\":{\"stateful-operator.io/resize-state\":null}}}");
	it_sleep_ms(1500);
	text = scrape();
	assert_true(sample(text, stuck) < 0);

	stop_cleanly(&d);
	free(text);
	free(stuck);
	free(failed);
	free(plain);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

static void test_listener_that_cannot_bind_is_an_error(void **state)
{
	(void)state;
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address",
			      "127.0.0.1:99999", NULL};
	struct daemon d;
	daemon_start(&d, args, NULL);
	assert_int_equal(daemon_wait_exit(&d, 10000), 1);
	char *log = daemon_log(&d);
	if (!strstr(log, "--metrics-bind-address"))
		fail_msg("the error does not name the flag: %s", log);
	free(log);
	daemon_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_parse_and_move),
		cmocka_unit_test(test_cleanup_counters_move),
		cmocka_unit_test(test_replacement_counter_moves),
		cmocka_unit_test(test_resize_in_flight_gauge),
		cmocka_unit_test(test_listener_that_cannot_bind_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
