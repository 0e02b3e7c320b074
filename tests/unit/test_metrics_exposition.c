/*
 * The operator's real /metrics text, as its registry renders it after an
 * observation in every family: observability's (API requests through a
 * client, reconciles and work queues of a running controller, the copy
 * pass, process_*, build_info), the webhook's and autoresize's.
 *
 * Checked here: every family has the TYPE its kind asks for (a histogram
 * for each duration, a counter for each _total, a gauge otherwise; no
 * summary), each histogram's buckets are cumulative and end in +Inf equal
 * to _count, and the stock names carry the stock labels. The text is
 * written to $SOP_METRICS_EXPOSITION (default
 * /tmp/sop_metrics_exposition.prom), where tests/metrics/exposition_check.sh
 * runs Prometheus' own parser on it (promtool check metrics) and compares
 * its families with docs/reference.md.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/autoresize/autoresize_controller.h"
#include "observability.h"
#include "runtime/controller.h"
#include "runtime/leader.h"
#include "runtime/manager.h"
#include "util/clock.h"
#include "webhook/webhook.h"
#include "loopback.h"

/* The families whose meaning is a duration: each must be a histogram. */
static const char *const durations[] = {
	"controller_runtime_reconcile_time_seconds",
	"workqueue_queue_duration_seconds",
	"workqueue_work_duration_seconds",
	"stateful_operator_reaction_seconds",
	"stateful_operator_api_request_duration_seconds",
	"stateful_operator_webhook_request_duration_seconds",
	"stateful_operator_copy_pass_duration_seconds",
};

/* Fails once, then asks to be called again later, or writes (a reaction) and succeeds. */
static int reconcile(void *ctx, const char *key, long *requeue_after_ms)
{
	int *failed = ctx;
	if (!strcmp(key, "ns/fails") && !(*failed)++)
		return -1;
	if (!strcmp(key, "ns/polls")) {
		*requeue_after_ms = 3600 * 1000;
		return 0;
	}
	controller_note_write(clock_mono_ns());
	return 0;
}

/* Runs a controller "resize" on three keys until each has been reconciled as asked. */
static void run_controller(struct manager *m, int *failed)
{
	struct controller_options co = {.name = "resize", .workers = 2, .reconcile = reconcile, .ctx = failed};
	struct controller *c = controller_new(&co);
	manager_add_controller(m, c); /* the manager frees it */
	assert_int_equal(controller_start(c), 0);
	controller_enqueue(c, "ns/fails");
	controller_enqueue(c, "ns/polls");
	controller_enqueue(c, "ns/writes");
	struct controller_stats st;
	for (int i = 0; i < 1000; i++) {
		controller_get_stats(c, &st);
		if (st.by_result[RECONCILE_RESULT_SUCCESS] >= 2 && st.by_result[RECONCILE_RESULT_ERROR] >= 1 &&
		    st.by_result[RECONCILE_RESULT_REQUEUE_AFTER] >= 1)
			break;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	controller_stop(c);
	assert_true(st.by_result[RECONCILE_RESULT_SUCCESS] >= 2);
	assert_int_equal(st.by_result[RECONCILE_RESULT_ERROR], 1);
	assert_int_equal(st.by_result[RECONCILE_RESULT_REQUEUE_AFTER], 1);
	assert_true(st.reaction.count >= 2);
	assert_int_equal(st.duration.count, st.reconciles);
}

/* The operator's registry after one observation in every family; its text (new string). */
static char *render_everything(void)
{
	struct canned_server *srv = canned_server_start("200 OK", "application/json", "{\"major\":\"1\"}");
	struct kube_client *client = loopback_client(canned_server_port(srv), NULL);
	struct manager *m = manager_new(client, NULL);
	manager_informer(m, &KUBE_STATEFULSETS);
	struct leader_options lo = {.lease_name = "stateful-operator", .namespace = "ops", .identity = "op-me"};
	struct leader_elector *le = leader_new(client, &lo);
	char *err = NULL;
	struct observability *o = observability_start("0", "0", client, m, le, &err);
	assert_non_null(o);
	observability_build_info(o, "0.9.0", "abc1234");
	struct metrics *reg = observability_metrics(o);

	char *text = NULL;
	struct kube_error kerr = {0};
	assert_int_equal(kube_get_text(client, "/version", &text, &kerr), 0);
	free(text);
	int failed = 0;
	run_controller(m, &failed);
	observability_observe(o, "stateful_operator_copy_pass_duration_seconds", "full", 420);
	observability_count(o, "stateful_operator_resizes_started_total", 1);

	struct metric_family *reviews, *review_time, *ratio, *grows, *reads, *requests;
	webhook_register_metrics(reg, &reviews, &review_time);
	metric_add(reviews, 1, METRIC_LABELS("allowed"));
	metric_observe(review_time, 0.0004, NULL);
	autoresize_register_metrics(reg, &ratio, &grows, &reads, &requests);
	metric_set(ratio, 0.42, METRIC_LABELS("db", "data-db-0"));
	metric_add(grows, 1, METRIC_LABELS("grow"));
	metric_add(reads, 1, METRIC_LABELS("kubelet", "ok"));
	metric_add(requests, 3, METRIC_LABELS("kubelet"));

	char *out = metrics_render(reg);
	observability_stop(o);
	leader_free(le);
	manager_free(m);
	kube_client_free(client);
	canned_server_stop(srv);
	return out;
}

/* The TYPE line of family name in text, or NULL. Points into text (up to the newline). */
static const char *type_of(const char *text, const char *name)
{
	char head[160];
	snprintf(head, sizeof(head), "# TYPE %s ", name);
	const char *p = strstr(text, head);
	return p ? p + strlen(head) : NULL;
}

static bool type_is(const char *type, const char *want)
{
	size_t n = strlen(want);
	return type && !strncmp(type, want, n) && type[n] == '\n';
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t k = strlen(suffix);
	return len >= k && !memcmp(s + len - k, suffix, k);
}

static bool is_duration(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
		if (strlen(durations[i]) == len && !memcmp(durations[i], name, len))
			return true;
	return false;
}

static void test_every_family_has_its_type(void **state)
{
	(void)state;
	char *out = render_everything();
	const char *path = getenv("SOP_METRICS_EXPOSITION");
	FILE *f = fopen(path ? path : "/tmp/sop_metrics_exposition.prom", "w");
	assert_non_null(f);
	assert_true(fputs(out, f) >= 0);
	assert_int_equal(fclose(f), 0);

	int families = 0;
	for (const char *p = strstr(out, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
		const char *name = p + 7, *sp = strchr(name, ' ');
		size_t len = (size_t)(sp - name);
		const char *type = sp + 1;
		const char *want = is_duration(name, len) ? "histogram" : ends_with(name, len, "_total") ? "counter" : "gauge";
		if (!type_is(type, want))
			fail_msg("%.*s: TYPE %.*s, want %s", (int)len, name, (int)strcspn(type, "\n"), type, want);
		families++;
	}
	/* Every duration is there (a histogram, checked above). */
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
		if (!type_of(out, durations[i]))
			fail_msg("%s is missing from the exposition", durations[i]);
	/* The stock families, with the stock labels. */
	const char *const stock[] = {
		"controller_runtime_reconcile_total{controller=\"resize\",result=\"success\"} ",
		"controller_runtime_reconcile_total{controller=\"resize\",result=\"error\"} 1\n",
		"controller_runtime_reconcile_total{controller=\"resize\",result=\"requeue\"} 0\n",
		"controller_runtime_reconcile_total{controller=\"resize\",result=\"requeue_after\"} 1\n",
		"controller_runtime_reconcile_errors_total{controller=\"resize\"} 1\n",
		"controller_runtime_reconcile_time_seconds_bucket{controller=\"resize\",le=\"+Inf\"} ",
		"workqueue_adds_total{name=\"resize\"} ",
		"workqueue_depth{name=\"resize\"} ",
		"workqueue_retries_total{name=\"resize\"} 1\n",
		"workqueue_queue_duration_seconds_bucket{name=\"resize\",le=\"0.0005\"} ",
		"workqueue_work_duration_seconds_count{name=\"resize\"} ",
		"workqueue_longest_running_processor_seconds{name=\"resize\"} 0\n",
		"workqueue_unfinished_work_seconds{name=\"resize\"} 0\n",
		"stateful_operator_copy_pass_duration_seconds_bucket{pass=\"full\",le=\"300\"} 0\n",
		"stateful_operator_copy_pass_duration_seconds_bucket{pass=\"full\",le=\"900\"} 1\n",
		"stateful_operator_copy_pass_duration_seconds_count{pass=\"delta\"} 0\n",
		"stateful_operator_build_info{version=\"0.9.0\",commit=\"abc1234\"} 1\n",
		"process_resident_memory_bytes ",
		"process_virtual_memory_bytes ",
		"process_cpu_seconds_total ",
		"process_open_fds ",
		"process_max_fds ",
		"process_start_time_seconds ",
	};
	for (size_t i = 0; i < sizeof(stock) / sizeof(stock[0]); i++)
		if (!strstr(out, stock[i]))
			fail_msg("no line starting %s", stock[i]);
	/* The process started in the last day and has some memory and descriptors. */
	double start = strtod(strstr(out, "\nprocess_start_time_seconds ") + 28, NULL);
	double now = (double)time(NULL);
	assert_true(start > now - 86400 && start <= now + 1);
	assert_true(strtod(strstr(out, "\nprocess_resident_memory_bytes ") + 31, NULL) > 1e5);
	assert_true(strtod(strstr(out, "\nprocess_open_fds ") + 18, NULL) >= 3);
	assert_true(families >= 40);
	free(out);
}

/*
 * Each histogram series: cumulative buckets (never decreasing), le
 * ascending, ending in le="+Inf" equal to its _count.
 */
static void test_histograms_are_cumulative(void **state)
{
	(void)state;
	char *out = render_everything();
	int series = 0;
	double last = -1, last_le = -1;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char *b = strstr(line, "_bucket{");
		if (b && line[0] != '#') {
			char *le = strstr(b, "le=\"");
			assert_non_null(le);
			double v = strtod(strrchr(line, ' ') + 1, NULL);
			if (!strncmp(le + 4, "+Inf", 4)) {
				assert_true(v >= last);
				last = v;
				series++;
				continue;
			}
			double bound = strtod(le + 4, NULL);
			if (last_le >= 0 && bound > last_le)
				assert_true(v >= last);
			last_le = bound;
			last = v;
		} else if (strstr(line, "_count") && line[0] != '#' && last >= 0) {
			assert_true(strtod(strrchr(line, ' ') + 1, NULL) == last);
			last = last_le = -1;
		}
	}
	assert_true(series >= 9); /* 6 duration families with one series, copy passes with 3 */
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_family_has_its_type),
		cmocka_unit_test(test_histograms_are_cumulative),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
