/*
 * Unit tests for the Prometheus metrics registry (src/runtime/metrics.c).
 *
 * Rendering is checked against exact expected text, so every byte of the
 * exposition format (HELP/TYPE lines, escaping, number formatting, order)
 * is pinned. Programming errors abort by design; those tests run the bad
 * call in a forked child and expect SIGABRT. When promtool is installed,
 * one test feeds a render with every type and awkward label values to
 * `promtool check metrics` (the Prometheus parser and linter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/duration_histogram.h"
#include "runtime/metrics.h"

/* The dropped-series counter every registry has; one 0 line per labelled family. */
#define DROPPED_HEAD                                                                                    \
	"# HELP stateful_operator_metrics_dropped_series_total Metric updates dropped because their "     \
	"family already had the maximum number of series.\n"                                            \
	"# TYPE stateful_operator_metrics_dropped_series_total counter\n"
#define DROPPED(fam) "stateful_operator_metrics_dropped_series_total{family=\"" fam "\"} 0\n"

static size_t count_lines_with(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void test_empty_registry(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	char *out = metrics_render(m);

	/* No series anywhere: nothing at all, not even HELP/TYPE lines. */
	assert_string_equal(out, "");
	free(out);
	metrics_free(m);
	metrics_free(NULL);
}

static void test_counter_and_gauge_render(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *c = metrics_counter(m, "a_requests_total", "Requests.", NULL);
	struct metric_family *cl =
		metrics_counter(m, "b_requests_total", "Requests by verb and code.", METRIC_LABELS("verb", "code"));
	struct metric_family *g = metrics_gauge(m, "c_depth", "Depth.", METRIC_LABELS("name"));

	metric_add(c, 1, NULL);
	metric_add(c, 2.5, METRIC_NO_LABELS);
	metric_add(cl, 1, METRIC_LABELS("GET", "200"));
	metric_add(cl, 1, METRIC_LABELS("GET", "200"));
	metric_add(cl, 3, METRIC_LABELS("DELETE", "404"));
	metric_set(g, 7, METRIC_LABELS("q"));
	metric_add(g, -2, METRIC_LABELS("q"));
	metric_set(g, -0.25, METRIC_LABELS("p"));

	char *out = metrics_render(m);
	assert_string_equal(out, "# HELP a_requests_total Requests.\n"
				 "# TYPE a_requests_total counter\n"
				 "a_requests_total 3.5\n"
				 "# HELP b_requests_total Requests by verb and code.\n"
				 "# TYPE b_requests_total counter\n"
				 "b_requests_total{verb=\"DELETE\",code=\"404\"} 3\n"
				 "b_requests_total{verb=\"GET\",code=\"200\"} 2\n"
				 "# HELP c_depth Depth.\n"
				 "# TYPE c_depth gauge\n"
				 "c_depth{name=\"p\"} -0.25\n"
				 "c_depth{name=\"q\"} 5\n" DROPPED_HEAD DROPPED("b_requests_total")
					 DROPPED("c_depth"));
	free(out);

	assert_true(metric_value(cl, METRIC_LABELS("GET", "200")) == 2);
	assert_true(metric_value(cl, METRIC_LABELS("GET", "500")) == 0);
	metrics_free(m);
}

static void test_number_formatting(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *g = metrics_gauge(m, "g", "Values.", METRIC_LABELS("k"));

	metric_set(g, NAN, METRIC_LABELS("a_nan"));
	metric_set(g, INFINITY, METRIC_LABELS("b_inf"));
	metric_set(g, -INFINITY, METRIC_LABELS("c_neginf"));
	metric_set(g, 0.1, METRIC_LABELS("d_tenth"));
	metric_set(g, 1e-7, METRIC_LABELS("e_small"));
	metric_set(g, 1234567.5, METRIC_LABELS("f_mixed"));
	metric_set(g, 9007199254740992.0, METRIC_LABELS("g_2p53"));
	metric_set(g, 1152921504606846976.0, METRIC_LABELS("h_2p60"));
	metric_set(g, 0, METRIC_LABELS("i_zero"));
	metric_set(g, 1.0 / 3.0, METRIC_LABELS("j_third"));

	char *out = metrics_render(m);
	assert_string_equal(out, "# HELP g Values.\n"
				 "# TYPE g gauge\n"
				 "g{k=\"a_nan\"} NaN\n"
				 "g{k=\"b_inf\"} +Inf\n"
				 "g{k=\"c_neginf\"} -Inf\n"
				 "g{k=\"d_tenth\"} 0.1\n"
				 "g{k=\"e_small\"} 1e-07\n"
				 "g{k=\"f_mixed\"} 1234567.5\n"
				 "g{k=\"g_2p53\"} 9007199254740992\n"
				 "g{k=\"h_2p60\"} 1.152921504606847e+18\n"
				 "g{k=\"i_zero\"} 0\n"
				 "g{k=\"j_third\"} 0.3333333333333333\n" DROPPED_HEAD DROPPED("g"));
	free(out);
	metrics_free(m);
}

static void test_escaping(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *g =
		metrics_gauge(m, "esc", "Help with \\ backslash,\nnewline and \"quotes\".", METRIC_LABELS("v"));

	metric_set(g, 1, METRIC_LABELS("back\\slash"));
	metric_set(g, 2, METRIC_LABELS("dq\"uote"));
	metric_set(g, 3, METRIC_LABELS("new\nline"));
	metric_set(g, 4, METRIC_LABELS("all\\\"\n"));
	metric_set(g, 5, METRIC_LABELS(""));
	metric_set(g, 6, METRIC_LABELS("tab\tand {braces}, = and 'single' and ünïcødé ✓"));

	char *out = metrics_render(m);
	assert_string_equal(out, "# HELP esc Help with \\\\ backslash,\\nnewline and \"quotes\".\n"
				 "# TYPE esc gauge\n"
				 "esc{v=\"\"} 5\n"
				 "esc{v=\"all\\\\\\\"\\n\"} 4\n"
				 "esc{v=\"back\\\\slash\"} 1\n"
				 "esc{v=\"dq\\\"uote\"} 2\n"
				 "esc{v=\"new\\nline\"} 3\n"
				 "esc{v=\"tab\tand {braces}, = and 'single' and ünïcødé ✓\"} 6\n" DROPPED_HEAD
					 DROPPED("esc"));
	free(out);
	metrics_free(m);
}

static void test_invalid_utf8_is_repaired(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *c = metrics_counter(m, "u_total", "UTF-8.", METRIC_LABELS("v"));

	/* A lone continuation byte, a truncated sequence, an overlong '/', a
	 * surrogate: each bad byte becomes U+FFFD. Two raw values that repair
	 * to the same text are the same series. */
	metric_add(c, 1, METRIC_LABELS("a\x80z"));
	metric_add(c, 1, METRIC_LABELS("a\xbfz"));
	metric_add(c, 1, METRIC_LABELS("b\xe2\x9c"));
	metric_add(c, 1, METRIC_LABELS("c\xc0\xaf"));
	metric_add(c, 1, METRIC_LABELS("d\xed\xa0\x80"));

	char *out = metrics_render(m);
	assert_string_equal(out, DROPPED_HEAD DROPPED("u_total") "# HELP u_total UTF-8.\n"
				 "# TYPE u_total counter\n"
				 "u_total{v=\"a\xef\xbf\xbdz\"} 2\n"
				 "u_total{v=\"b\xef\xbf\xbd\xef\xbf\xbd\"} 1\n"
				 "u_total{v=\"c\xef\xbf\xbd\xef\xbf\xbd\"} 1\n"
				 "u_total{v=\"d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"} 1\n");
	free(out);
	metrics_free(m);
}

static void test_histogram_cumulative(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	static const double bounds[] = {0.005, 0.5, 10};
	struct metric_family *h = metrics_histogram_bounds(m, "op_duration_seconds", "Operation duration.",
							   METRIC_LABELS("controller"), bounds, 3);

	/* Bounds are inclusive (le): 0.005 goes into le="0.005". */
	const double obs[] = {0.001, 0.005, 0.0051, 0.3, 0.3, 7, 100, NAN /* ignored */};
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
		metric_observe(h, obs[i], METRIC_LABELS("resize"));
	metric_observe(h, 0.5, METRIC_LABELS("cluster"));

	char *out = metrics_render(m);
	assert_string_equal(out, "# HELP op_duration_seconds Operation duration.\n"
				 "# TYPE op_duration_seconds histogram\n"
				 "op_duration_seconds_bucket{controller=\"cluster\",le=\"0.005\"} 0\n"
				 "op_duration_seconds_bucket{controller=\"cluster\",le=\"0.5\"} 1\n"
				 "op_duration_seconds_bucket{controller=\"cluster\",le=\"10\"} 1\n"
				 "op_duration_seconds_bucket{controller=\"cluster\",le=\"+Inf\"} 1\n"
				 "op_duration_seconds_sum{controller=\"cluster\"} 0.5\n"
				 "op_duration_seconds_count{controller=\"cluster\"} 1\n"
				 "op_duration_seconds_bucket{controller=\"resize\",le=\"0.005\"} 2\n"
				 "op_duration_seconds_bucket{controller=\"resize\",le=\"0.5\"} 5\n"
				 "op_duration_seconds_bucket{controller=\"resize\",le=\"10\"} 6\n"
				 "op_duration_seconds_bucket{controller=\"resize\",le=\"+Inf\"} 7\n"
				 "op_duration_seconds_sum{controller=\"resize\"} 107.6111\n"
				 "op_duration_seconds_count{controller=\"resize\"} 7\n" DROPPED_HEAD
					 DROPPED("op_duration_seconds"));
	free(out);
	assert_true(metric_value(h, METRIC_LABELS("resize")) == 7);
	metrics_free(m);
}

/*
 * A histogram mirrored from counts kept elsewhere (the controllers' and
 * queues' struct duration_histogram): per-bucket counts in, cumulative
 * buckets out, count = their total (+Inf included), and the same text as
 * observations would give.
 */
static void test_histogram_set(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	static const double bounds[] = {0.001, 0.1};
	struct metric_family *h =
		metrics_histogram_bounds(m, "w_seconds", "W.", METRIC_LABELS("name"), bounds, 2);
	const uint64_t counts[] = {2, 0, 3};
	metric_histogram_set(h, counts, 3, 12.5, METRIC_LABELS("resize"));
	char *out = metrics_render(m);
	assert_string_equal(out, DROPPED_HEAD DROPPED("w_seconds") "# HELP w_seconds W.\n"
				 "# TYPE w_seconds histogram\n"
				 "w_seconds_bucket{name=\"resize\",le=\"0.001\"} 2\n"
				 "w_seconds_bucket{name=\"resize\",le=\"0.1\"} 2\n"
				 "w_seconds_bucket{name=\"resize\",le=\"+Inf\"} 5\n"
				 "w_seconds_sum{name=\"resize\"} 12.5\n"
				 "w_seconds_count{name=\"resize\"} 5\n");

	free(out);
	assert_true(metric_value(h, METRIC_LABELS("resize")) == 5);
	/* A second set replaces the first (a mirror, not an add). */
	const uint64_t again[] = {1, 1, 1};
	metric_histogram_set(h, again, 3, 1, METRIC_LABELS("resize"));
	assert_true(metric_value(h, METRIC_LABELS("resize")) == 3);
	metrics_free(m);
}

/*
 * The lock-free duration histogram the controllers and queues keep:
 * inclusive upper bounds in nanoseconds (exactly 1 ms lands in le="0.001",
 * 1 ns more in the next), above 60 s in +Inf, 0 in the first bucket, and
 * the sum in seconds.
 */
static void test_duration_histogram_buckets(void **state)
{
	(void)state;
	struct duration_histogram h;
	duration_histogram_init(&h);
	duration_histogram_observe(&h, 0);
	duration_histogram_observe(&h, 500000);      /* 0.5 ms: le 0.0005 */
	duration_histogram_observe(&h, 1000000);     /* 1 ms: le 0.001 */
	duration_histogram_observe(&h, 1000001);     /* le 0.0025 */
	duration_histogram_observe(&h, 60000000000); /* 60 s: le 60 */
	duration_histogram_observe(&h, 60000000001); /* +Inf */
	struct duration_snapshot s;
	duration_histogram_read(&h, &s);
	assert_int_equal(s.count, 6);
	assert_int_equal(s.counts[0], 2);
	assert_int_equal(s.counts[1], 1);
	assert_int_equal(s.counts[2], 1);
	assert_int_equal(s.counts[METRICS_LATENCY_BUCKETS - 1], 1);
	assert_int_equal(s.counts[METRICS_LATENCY_BUCKETS], 1);
	uint64_t total = 0;
	for (size_t i = 0; i < DURATION_HISTOGRAM_COUNTS; i++)
		total += s.counts[i];
	assert_int_equal(total, 6);
	assert_true(fabs(s.sum_seconds - 120.0025000010) < 1e-6);
	/* Its nanosecond bounds are the registry's default bounds, bucket for bucket. */
	for (size_t i = 0; i < METRICS_LATENCY_BUCKETS; i++) {
		struct duration_histogram one;
		duration_histogram_init(&one);
		duration_histogram_observe(&one, (uint64_t)llround(metrics_latency_bounds[i] * 1e9));
		duration_histogram_read(&one, &s);
		assert_int_equal(s.counts[i], 1);
	}
}

static void test_histogram_without_labels(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *h = metrics_histogram(m, "x_seconds", "X.", NULL);

	metric_observe(h, 0.02, NULL);
	char *out = metrics_render(m);
	/* The default buckets: metrics_latency_bounds. */
	assert_non_null(strstr(out, "# TYPE x_seconds histogram\n"
				    "x_seconds_bucket{le=\"0.0005\"} 0\n"
				    "x_seconds_bucket{le=\"0.001\"} 0\n"
				    "x_seconds_bucket{le=\"0.0025\"} 0\n"
				    "x_seconds_bucket{le=\"0.005\"} 0\n"
				    "x_seconds_bucket{le=\"0.01\"} 0\n"
				    "x_seconds_bucket{le=\"0.025\"} 1\n"));
	assert_non_null(strstr(out, "x_seconds_bucket{le=\"30\"} 1\n"
				    "x_seconds_bucket{le=\"60\"} 1\n"
				    "x_seconds_bucket{le=\"+Inf\"} 1\n"
				    "x_seconds_sum 0.02\n"
				    "x_seconds_count 1\n"));
	free(out);
	metrics_free(m);
}

static void test_summary(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *s = metrics_summary(m, "wq_latency_seconds", "Queue latency.", METRIC_LABELS("name"));

	metric_observe(s, 0.25, METRIC_LABELS("a"));
	metric_observe(s, 0.5, METRIC_LABELS("a"));
	metric_summary_set(s, 12.5, 40, METRIC_LABELS("b"));

	char *out = metrics_render(m);
	assert_string_equal(out, DROPPED_HEAD DROPPED("wq_latency_seconds") "# HELP wq_latency_seconds Queue latency.\n"
				 "# TYPE wq_latency_seconds summary\n"
				 "wq_latency_seconds_sum{name=\"a\"} 0.75\n"
				 "wq_latency_seconds_count{name=\"a\"} 2\n"
				 "wq_latency_seconds_sum{name=\"b\"} 12.5\n"
				 "wq_latency_seconds_count{name=\"b\"} 40\n");
	free(out);
	metrics_free(m);
}

/* Same data added in a different order renders byte for byte the same. */
static char *build_and_render(bool reverse)
{
	struct metrics *m = metrics_new();
	const char *names[] = {"zz_total", "aa_total", "mm_total"};
	const char *vals[] = {"b", "a", "c", "B", "", "aa"};

	for (size_t k = 0; k < 3; k++) {
		size_t i = reverse ? 2 - k : k;
		struct metric_family *f = metrics_counter(m, names[i], "Order.", METRIC_LABELS("x", "y"));
		for (size_t j = 0; j < 6; j++) {
			size_t v = reverse ? 5 - j : j;
			metric_add(f, (double)v, METRIC_LABELS(vals[v], vals[(v + 1) % 6]));
			metric_add(f, 1, METRIC_LABELS(vals[v], vals[(v + 2) % 6]));
		}
	}
	char *out = metrics_render(m);
	metrics_free(m);
	return out;
}

static void test_stable_order(void **state)
{
	(void)state;
	char *a = build_and_render(false);
	char *b = build_and_render(true);

	assert_string_equal(a, b);
	/* Families by name. */
	const char *aa = strstr(a, "# HELP aa_total"), *mm = strstr(a, "# HELP mm_total"),
		   *st = strstr(a, "# HELP stateful_operator"), *zz = strstr(a, "# HELP zz_total");
	assert_true(aa && mm && st && zz && aa < mm && mm < st && st < zz);
	/* Series by label values, first label first, in byte order ("" < "B" < "a"). */
	assert_non_null(strstr(a, "# TYPE aa_total counter\n"
				  "aa_total{x=\"\",y=\"aa\"} 4\n"
				  "aa_total{x=\"\",y=\"b\"} 1\n"
				  "aa_total{x=\"B\",y=\"\"} 3\n"
				  "aa_total{x=\"B\",y=\"aa\"} 1\n"
				  "aa_total{x=\"a\",y=\"B\"} 1\n"
				  "aa_total{x=\"a\",y=\"c\"} 1\n"
				  "aa_total{x=\"aa\",y=\"a\"} 1\n"
				  "aa_total{x=\"aa\",y=\"b\"} 5\n"
				  "aa_total{x=\"b\",y=\"a\"} 0\n"
				  "aa_total{x=\"b\",y=\"c\"} 1\n"
				  "aa_total{x=\"c\",y=\"\"} 1\n"
				  "aa_total{x=\"c\",y=\"B\"} 2\n"
				  "# HELP mm_total "));
	/* HELP and TYPE once per family. */
	assert_int_equal(count_lines_with(a, "# HELP aa_total "), 1);
	assert_int_equal(count_lines_with(a, "# TYPE aa_total "), 1);
	free(a);
	free(b);
}

static void test_series_cap(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *c = metrics_counter(m, "boom_total", "Label explosion.", METRIC_LABELS("id"));
	struct metric_family *g = metrics_gauge(m, "quiet", "Another family.", METRIC_LABELS("id"));
	char id[32];

	/* The default limit. */
	for (int i = 0; i < METRICS_DEFAULT_MAX_SERIES + 25; i++) {
		snprintf(id, sizeof(id), "id-%d", i);
		metric_add(c, 1, METRIC_LABELS(id));
	}
	metric_add(c, 1, METRIC_LABELS("id-0")); /* existing series still count */
	metric_set(g, 1, METRIC_LABELS("x"));    /* other families are not affected */

	char *out = metrics_render(m);
	assert_int_equal(count_lines_with(out, "\nboom_total{"), METRICS_DEFAULT_MAX_SERIES);
	assert_non_null(strstr(out, "boom_total{id=\"id-0\"} 2\n"));
	assert_null(strstr(out, "boom_total{id=\"id-10010\"}"));
	assert_non_null(strstr(out, "stateful_operator_metrics_dropped_series_total{family=\"boom_total\"} 25\n"));
	assert_non_null(strstr(out, "stateful_operator_metrics_dropped_series_total{family=\"quiet\"} 0\n"));
	assert_non_null(strstr(out, "quiet{id=\"x\"} 1\n"));
	free(out);

	/* A smaller limit, and a reset that frees room again. */
	metrics_set_max_series(m, 2);
	metric_set(g, 2, METRIC_LABELS("y"));
	metric_set(g, 3, METRIC_LABELS("z"));
	assert_true(metric_value(g, METRIC_LABELS("z")) == 0);
	metric_reset(g);
	metric_set(g, 3, METRIC_LABELS("z"));
	assert_true(metric_value(g, METRIC_LABELS("z")) == 3);
	assert_true(metric_value(g, METRIC_LABELS("x")) == 0);
	out = metrics_render(m);
	assert_non_null(strstr(out, "stateful_operator_metrics_dropped_series_total{family=\"quiet\"} 1\n"));
	free(out);
	metrics_free(m);
}

static void test_bad_values_ignored(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *c = metrics_counter(m, "c_total", "C.", NULL);

	metric_add(c, 5, NULL);
	metric_add(c, -1, NULL);
	metric_add(c, NAN, NULL);
	metric_set(c, -3, NULL);
	metric_set(c, NAN, NULL);
	assert_true(metric_value(c, NULL) == 5);
	metric_set(c, 9, NULL); /* a collector mirroring a count */
	assert_true(metric_value(c, NULL) == 9);
	metrics_free(m);
}

static void test_register_twice_returns_same(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *a = metrics_gauge(m, "same", "Same.", METRIC_LABELS("x"));
	struct metric_family *b = metrics_gauge(m, "same", "Same.", METRIC_LABELS("x"));

	assert_ptr_equal(a, b);
	metrics_free(m);
}

/* ---- collectors ---- */

struct source {
	int calls;
	double depth;
	struct metric_family *gauge;
};

static void collect_depth(void *ctx, struct metrics *m)
{
	struct source *src = ctx;

	src->calls++;
	/* Registering from a collector is allowed (and returns the same family). */
	src->gauge = metrics_gauge(m, "live_depth", "Depth read at scrape time.", NULL);
	metric_set(src->gauge, src->depth, NULL);
}

static void test_collectors_run_at_render(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct source src = {0};

	metrics_add_collector(m, collect_depth, &src);
	assert_int_equal(src.calls, 0);

	src.depth = 4;
	char *out = metrics_render(m);
	assert_int_equal(src.calls, 1);
	assert_string_equal(out, "# HELP live_depth Depth read at scrape time.\n"
				 "# TYPE live_depth gauge\n"
				 "live_depth 4\n");
	free(out);

	src.depth = 11;
	out = metrics_render(m);
	assert_int_equal(src.calls, 2);
	assert_non_null(strstr(out, "live_depth 11\n"));
	free(out);
	metrics_free(m);
}

/* ---- threads ---- */

#define THREADS 8
#define ITERS 20000

struct worker {
	struct metrics *m;
	struct metric_family *c, *g, *h, *s;
	int id;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	const char *keys[] = {"k0", "k1", "k2", "k3"};

	for (int i = 0; i < ITERS; i++) {
		const char *k = keys[(i + w->id) % 4];
		metric_add(w->c, 1, METRIC_LABELS(k));
		metric_add(w->g, (w->id % 2) ? 1 : -1, NULL);
		metric_observe(w->h, 0.01, METRIC_LABELS(k));
		metric_observe(w->s, 0.5, NULL);
	}
	return NULL;
}

static void *render_loop(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++)
		free(metrics_render(w->m));
	return NULL;
}

static void test_concurrent_updates(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct worker w[THREADS];
	pthread_t th[THREADS + 1];
	struct metric_family *c = metrics_counter(m, "hits_total", "Hits.", METRIC_LABELS("k"));
	struct metric_family *g = metrics_gauge(m, "level", "Level.", NULL);
	struct metric_family *h = metrics_histogram(m, "dur_seconds", "Durations.", METRIC_LABELS("k"));
	struct metric_family *s = metrics_summary(m, "lat_seconds", "Latency.", NULL);

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){m, c, g, h, s, i};
		assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	assert_int_equal(pthread_create(&th[THREADS], NULL, render_loop, &w[0]), 0);
	for (int i = 0; i <= THREADS; i++)
		pthread_join(th[i], NULL);

	double total = 0;
	const char *keys[] = {"k0", "k1", "k2", "k3"};
	for (int k = 0; k < 4; k++) {
		assert_true(metric_value(c, METRIC_LABELS(keys[k])) == THREADS * ITERS / 4);
		total += metric_value(c, METRIC_LABELS(keys[k]));
		assert_true(metric_value(h, METRIC_LABELS(keys[k])) == THREADS * ITERS / 4);
	}
	assert_true(total == THREADS * ITERS);
	assert_true(metric_value(g, NULL) == 0);
	assert_true(metric_value(s, NULL) == THREADS * ITERS);

	char *out = metrics_render(m);
	char want[128];
	snprintf(want, sizeof(want), "dur_seconds_bucket{k=\"k2\",le=\"0.01\"} %d\n", THREADS * ITERS / 4);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "lat_seconds_sum %d\n", THREADS * ITERS / 2);
	assert_non_null(strstr(out, want));
	free(out);
	metrics_free(m);
}

/* ---- programming errors abort ---- */

enum misuse {
	BAD_NAME,
	BAD_NAME_DASH,
	COUNTER_WITHOUT_TOTAL,
	RESERVED_LABEL,
	BAD_LABEL,
	DUPLICATE_LABEL,
	TOO_MANY_LABELS,
	HISTOGRAM_LE,
	SUMMARY_QUANTILE,
	EMPTY_HELP,
	REREGISTER_OTHER_TYPE,
	REREGISTER_OTHER_LABELS,
	COLLIDES_WITH_HISTOGRAM,
	COLLIDES_WITH_SUMMARY,
	TOO_FEW_VALUES,
	TOO_MANY_VALUES,
	VALUES_ON_UNLABELLED,
	OBSERVE_COUNTER,
	SET_HISTOGRAM,
	REREGISTER_OTHER_BOUNDS,
	BOUNDS_NOT_ASCENDING,
	HISTOGRAM_SET_WRONG_LENGTH,
	MISUSE_COUNT
};

static void misuse(enum misuse which)
{
	struct metrics *m = metrics_new();
	struct metric_family *two = metrics_counter(m, "two_total", "Two.", METRIC_LABELS("a", "b"));
	struct metric_family *none = metrics_gauge(m, "none", "None.", NULL);

	metrics_histogram(m, "h_seconds", "H.", NULL);
	metrics_summary(m, "s_seconds", "S.", NULL);
	switch (which) {
	case BAD_NAME:
		metrics_gauge(m, "1abc", "Bad.", NULL);
		break;
	case BAD_NAME_DASH:
		metrics_gauge(m, "a-b", "Bad.", NULL);
		break;
	case COUNTER_WITHOUT_TOTAL:
		metrics_counter(m, "requests", "Bad.", NULL);
		break;
	case RESERVED_LABEL:
		metrics_gauge(m, "g", "Bad.", METRIC_LABELS("__name"));
		break;
	case BAD_LABEL:
		metrics_gauge(m, "g", "Bad.", METRIC_LABELS("a:b"));
		break;
	case DUPLICATE_LABEL:
		metrics_gauge(m, "g", "Bad.", METRIC_LABELS("a", "a"));
		break;
	case TOO_MANY_LABELS:
		metrics_gauge(m, "g", "Bad.", METRIC_LABELS("a", "b", "c", "d"));
		break;
	case HISTOGRAM_LE:
		metrics_histogram(m, "x_seconds", "Bad.", METRIC_LABELS("le"));
		break;
	case SUMMARY_QUANTILE:
		metrics_summary(m, "x_seconds", "Bad.", METRIC_LABELS("quantile"));
		break;
	case EMPTY_HELP:
		metrics_gauge(m, "g", "", NULL);
		break;
	case REREGISTER_OTHER_TYPE:
		metrics_counter(m, "none_total", "None.", NULL);
		metrics_gauge(m, "none_total", "None.", NULL);
		break;
	case REREGISTER_OTHER_LABELS:
		metrics_counter(m, "two_total", "Two.", METRIC_LABELS("a"));
		break;
	case COLLIDES_WITH_HISTOGRAM:
		metrics_gauge(m, "h_seconds_bucket", "Bad.", NULL);
		break;
	case COLLIDES_WITH_SUMMARY:
		metrics_gauge(m, "s_seconds_count", "Bad.", NULL);
		break;
	case TOO_FEW_VALUES:
		metric_add(two, 1, METRIC_LABELS("x"));
		break;
	case TOO_MANY_VALUES:
		metric_add(two, 1, METRIC_LABELS("x", "y", "z"));
		break;
	case VALUES_ON_UNLABELLED:
		metric_set(none, 1, METRIC_LABELS("x"));
		break;
	case OBSERVE_COUNTER:
		metric_observe(two, 1, METRIC_LABELS("x", "y"));
		break;
	case SET_HISTOGRAM:
		metric_set(metrics_histogram(m, "h_seconds", "H.", NULL), 1, NULL);
		break;
	case REREGISTER_OTHER_BOUNDS: {
		static const double other[] = {1, 2};
		metrics_histogram_bounds(m, "h_seconds", "H.", NULL, other, 2);
		break;
	}
	case BOUNDS_NOT_ASCENDING: {
		static const double down[] = {2, 1};
		metrics_histogram_bounds(m, "d_seconds", "D.", NULL, down, 2);
		break;
	}
	case HISTOGRAM_SET_WRONG_LENGTH: {
		const uint64_t counts[METRICS_LATENCY_BUCKETS] = {0}; /* one short: no +Inf */
		metric_histogram_set(metrics_histogram(m, "h_seconds", "H.", NULL), counts,
				     METRICS_LATENCY_BUCKETS, 0, NULL);
		break;
	}
	case MISUSE_COUNT:
		break;
	}

	metrics_free(m);
}

static void test_programming_errors_abort(void **state)
{
	(void)state;
	for (int which = 0; which < MISUSE_COUNT; which++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);
			dup2(devnull, 2);
			misuse((enum misuse)which);
			_exit(0); /* did not abort: the parent reports it */
		}
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
			fail_msg("misuse case %d did not abort (status 0x%x)", which, status);
	}
}

/* ---- the real Prometheus parser ---- */

static void collect_awkward(void *ctx, struct metrics *m)
{
	(void)ctx;
	metric_set(metrics_gauge(m, "sop_test_workqueue_depth", "Current depth of the work queue.",
				 METRIC_LABELS("name")),
		   3, METRIC_LABELS("resize"));
}

/*
 * Renders a registry with every type, special values and awkward label
 * values to a file (kept for inspection: $SOP_METRICS_SAMPLE or
 * /tmp/sop_metrics_sample.prom) and runs `promtool check metrics` on it
 * when promtool is installed: it must print nothing and exit 0.
 */
static void test_promtool_accepts_render(void **state)
{
	(void)state;
	struct metrics *m = metrics_new();
	struct metric_family *req = metrics_counter(m, "sop_test_api_requests_total",
						    "API requests by verb and code.\nSecond \\ line.",
						    METRIC_LABELS("verb", "code", "note"));
	struct metric_family *bytes =
		metrics_counter(m, "sop_test_copied_bytes_total", "Bytes copied by copy jobs.", NULL);
	struct metric_family *temp = metrics_gauge(m, "sop_test_ratio", "A gauge with special values.",
						   METRIC_LABELS("kind"));
	struct metric_family *dur = metrics_histogram(m, "sop_test_reconcile_duration_seconds",
						      "Reconcile duration.", METRIC_LABELS("controller", "result"));
	struct metric_family *lat = metrics_summary(m, "sop_test_queue_latency_seconds",
						    "Time keys wait in the queue.", METRIC_LABELS("name"));

	metric_add(req, 3, METRIC_LABELS("GET", "200", "plain"));
	metric_add(req, 1, METRIC_LABELS("PATCH", "409", "quote \" backslash \\ newline \n end"));
	metric_add(req, 1, METRIC_LABELS("LIST", "500", "ünïcødé ✓ {a=\"b\"}, trailing \\"));
	metric_add(req, 1, METRIC_LABELS("WATCH", "0", "bad utf8 \xff\xfe here"));
	metric_add(req, 1, METRIC_LABELS("DELETE", "404", ""));
	metric_add(bytes, 123456789012.0, NULL);
	metric_set(temp, NAN, METRIC_LABELS("nan"));
	metric_set(temp, INFINITY, METRIC_LABELS("inf"));
	metric_set(temp, -INFINITY, METRIC_LABELS("neginf"));
	metric_set(temp, 1e-300, METRIC_LABELS("tiny"));
	metric_set(temp, -1.5e300, METRIC_LABELS("huge"));
	const double obs[] = {0.0001, 0.005, 0.07, 0.7, 3, 30};
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
		metric_observe(dur, obs[i], METRIC_LABELS("resize", i % 2 ? "error" : "success"));
	metric_observe(lat, 0.2, METRIC_LABELS("scaledown"));
	metric_summary_set(lat, 1e6, 123456, METRIC_LABELS("cluster"));
	metrics_add_collector(m, collect_awkward, NULL);

	/* Push one family over the limit so the dropped counter has a value. */
	metrics_set_max_series(m, 3);
	metric_set(temp, 1, METRIC_LABELS("over the limit"));
	metrics_set_max_series(m, METRICS_DEFAULT_MAX_SERIES);

	char *out = metrics_render(m);
	const char *path = getenv("SOP_METRICS_SAMPLE");
	if (!path)
		path = "/tmp/sop_metrics_sample.prom";
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(out, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "stateful_operator_metrics_dropped_series_total{family=\"sop_test_ratio\"} "));
	free(out);
	metrics_free(m);

	if (system("command -v promtool >/dev/null 2>&1") != 0)
		fail_msg("promtool is not installed (scripts/install-deps installs Debian's prometheus "
			 "package, which has it): rendered %s but cannot check it", path);
	char cmd[512], report[4096] = "";
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(report, 1, sizeof(report) - 1, p);
	report[n] = '\0';
	int rc = pclose(p);
	if (rc != 0 || n != 0)
		fail_msg("promtool check metrics (exit %d):\n%s", rc, report);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_registry),
		cmocka_unit_test(test_counter_and_gauge_render),
		cmocka_unit_test(test_number_formatting),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_invalid_utf8_is_repaired),
		cmocka_unit_test(test_histogram_cumulative),
		cmocka_unit_test(test_histogram_without_labels),
		cmocka_unit_test(test_histogram_set),
		cmocka_unit_test(test_duration_histogram_buckets),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_stable_order),
		cmocka_unit_test(test_series_cap),
		cmocka_unit_test(test_bad_values_ignored),
		cmocka_unit_test(test_register_twice_returns_same),
		cmocka_unit_test(test_collectors_run_at_render),
		/* Before any test starts threads, so that valgrind finds nothing
		 * (not even cached thread stacks) in the aborting children. */
		cmocka_unit_test(test_programming_errors_abort),
		cmocka_unit_test(test_concurrent_updates),
		cmocka_unit_test(test_promtool_accepts_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
