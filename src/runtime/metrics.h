/*
 * A small Prometheus metrics registry (client_golang's registry, in C):
 * counters, gauges, summaries (only _sum and _count, no quantiles) and
 * histograms (buckets chosen per family), each a family with a fixed set of

 * 0 to METRICS_MAX_LABELS label names, rendered in the Prometheus text
 * exposition format 0.0.4.
 *
 * Programming errors abort at once with a message naming the metric: an
 * invalid metric or label name, a counter whose name does not end in
 * "_total", a name registered twice with a different type, help or labels,
 * names that collide with another family's series (a histogram "x" owns
 * x_bucket, x_sum and x_count), a histogram label "le", a summary label
 * "quantile", the wrong number of label values, an update of the wrong
 * type. Bad values do not abort: they are ignored (see each function), so a
 * metric can never take the daemon down.
 *
 * Memory is bounded: a family holds at most METRICS_DEFAULT_MAX_SERIES series
 * (see metrics_set_max_series()). An update that would create one more
 * is dropped and counted in
 * stateful_operator_metrics_dropped_series_total{family="<name>"}, so a
 * label that takes unbounded values (a namespace, an error message) cannot
 * eat the daemon's memory.
 *
 * Output is stable: families sorted by name, series by label values (byte
 * order), histogram buckets in ascending order. Families without series are
 * left out. Label values that are not valid UTF-8 are repaired (each bad
 * byte becomes U+FFFD) because a single invalid byte makes Prometheus reject
 * the whole scrape.
 *
 * Threads: every function may be called from any thread at any time, except
 * metrics_free(), which needs every other call to have returned. Families
 * live as long as their registry: a struct metric_family pointer is valid
 * until metrics_free().
 */
#ifndef SOP_RUNTIME_METRICS_H
#define SOP_RUNTIME_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_LABELS 3
#define METRICS_DEFAULT_MAX_SERIES 10000

/* The Content-Type of metrics_render()'s output. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The family that counts updates dropped by the series limit. */
#define METRICS_DROPPED_SERIES_NAME "stateful_operator_metrics_dropped_series_total"

/*
 * Histogram bucket upper bounds (seconds), without +Inf, which every
 * histogram has too. METRICS_LATENCY_BOUNDS, the default: 0.5 ms to 60 s,
 * for requests and reconciles (docs/monitoring.md says why these).
 * METRICS_LONG_BOUNDS: 1 s to 1 day, for copy passes.
 */
#define METRICS_MAX_BUCKETS 20
#define METRICS_LATENCY_BUCKETS 16
extern const double metrics_latency_bounds[METRICS_LATENCY_BUCKETS];
#define METRICS_LONG_BUCKETS 13
extern const double metrics_long_bounds[METRICS_LONG_BUCKETS];

/*
 * A label value list for the update functions: METRIC_LABELS("a", "b") is
 * a NULL-terminated array (a compound literal, valid in the enclosing
 * block). The terminator lets the registry check the count: a family with
 * two labels aborts when given one value or three. Unlabelled families take
 * NULL (or METRIC_NO_LABELS).
 */
#define METRIC_LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define METRIC_NO_LABELS ((const char *const *)NULL)

struct metrics;
struct metric_family;

/* Returns a new empty registry (free with metrics_free()); never NULL. */
struct metrics *metrics_new(void);

/* Frees the registry, its families and their series. NULL is a no-op. */
void metrics_free(struct metrics *m);

/*
 * Sets the series limit per family (at least 1). Series that exist already
 * are kept. Mainly for tests.
 */
void metrics_set_max_series(struct metrics *m, size_t max);

/*
 * Register a family, or return the one registered under the same name when
 * type, help and label names are the same (so two modules may both
 * register a family they share). name and help are borrowed and copied;
 * label_names is NULL or a NULL-terminated array of at most
 * METRICS_MAX_LABELS names, borrowed and copied. Abort on a programming
 * error (see the top of this file). The family is valid until
 * metrics_free().
 */
struct metric_family *metrics_counter(struct metrics *m, const char *name, const char *help,
				      const char *const *label_names);
struct metric_family *metrics_gauge(struct metrics *m, const char *name, const char *help,
				    const char *const *label_names);
struct metric_family *metrics_summary(struct metrics *m, const char *name, const char *help,
				      const char *const *label_names);
/* Buckets: metrics_latency_bounds and +Inf. */
struct metric_family *metrics_histogram(struct metrics *m, const char *name, const char *help,
					const char *const *label_names);
/*
 * Buckets: bounds (borrowed for the registry's life: a static table),
 * nbounds of them (1 to METRICS_MAX_BUCKETS, ascending, finite), and
 * +Inf. Registering the name again with other bounds aborts.
 */
struct metric_family *metrics_histogram_bounds(struct metrics *m, const char *name, const char *help,
					       const char *const *label_names, const double *bounds,
					       size_t nbounds);

/*
 * In every update below, label_values is METRIC_LABELS(...) or, for a
 * family without labels, NULL: exactly as many values as the family has
 * label names, then NULL; otherwise abort. The values are borrowed (copied
 * when a series is created). A series is created at its first update.
 */

/*
 * Adds v to a counter (v >= 0; a negative or NaN v is ignored) or to a
 * gauge (any v; a negative v lowers it).
 */
void metric_add(struct metric_family *f, double v, const char *const *label_values);

/*
 * Sets a gauge to v (NaN and infinities are allowed and rendered as NaN,
 * +Inf, -Inf). Also sets a counter, for collectors that mirror a count kept
 * elsewhere (a counter must never go down; that is the caller's promise).
 */
void metric_set(struct metric_family *f, double v, const char *const *label_values);

/* Records one observation in a histogram or a summary. NaN is ignored. */
void metric_observe(struct metric_family *f, double v, const char *const *label_values);

/*
 * Sets a summary's sum and count, for collectors that mirror totals kept
 * elsewhere (e.g. the work queue's latency sums).
 */
void metric_summary_set(struct metric_family *f, double sum, uint64_t count,
			const char *const *label_values);

/*
 * Sets a histogram series, for collectors that mirror one kept elsewhere
 * (struct duration_histogram): counts[i] observations in bucket i (not
 * cumulative: those above bound i-1 and at most bound i), counts[nbounds]
 * those above the last bound; n must be the family's nbounds + 1 (abort
 * otherwise). The count is their total; sum the sum of the observations.
 */
void metric_histogram_set(struct metric_family *f, const uint64_t *counts, size_t n, double sum,
			  const char *const *label_values);

/*
 * Removes every series of the family, e.g. before a collector refills a
 * gauge whose label sets come and go (objects that no longer exist).
 */
void metric_reset(struct metric_family *f);

/*
 * The current value of a counter or gauge series, or the count of a summary
 * or histogram series; 0 when the series does not exist. For tests.
 */
double metric_value(struct metric_family *f, const char *const *label_values);

/*
 * A collector refreshes metrics from live objects at scrape time (the work
 * queue's depth, the store's size). collect is called by metrics_render()
 * on the rendering thread, without any registry lock held, so it may update
 * and register families; it must not call metrics_render() or
 * metrics_free(). Renders are serialized, so a collector is never called by
 * two renders at once. ctx is borrowed and must outlive the registry.
 * Collectors run in the order they were added.
 */
typedef void (*metrics_collect_fn)(void *ctx, struct metrics *m);
void metrics_add_collector(struct metrics *m, metrics_collect_fn collect, void *ctx);

/*
 * Runs the collectors, then returns the whole registry as a new string
 * (caller frees) in the text exposition format 0.0.4 (see
 * METRICS_CONTENT_TYPE). Never NULL.
 */
char *metrics_render(struct metrics *m);

#endif
