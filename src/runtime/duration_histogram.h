/*
 * A histogram of durations kept where they are measured (a controller's
 * reconciles, a work queue's waits), lock-free, for the metrics registry to
 * mirror at scrape time (metric_histogram_set). Buckets:
 * metrics_latency_bounds and +Inf, as metrics_histogram()'s.
 *
 * Threads: observe from any thread; read from any thread (each bucket is
 * read atomically; a read during observations may see one in the count
 * and not yet in the sum, never a bucket count above the total).
 */
#ifndef SOP_RUNTIME_DURATION_HISTOGRAM_H
#define SOP_RUNTIME_DURATION_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/metrics.h"

#define DURATION_HISTOGRAM_COUNTS (METRICS_LATENCY_BUCKETS + 1)

struct duration_histogram {
	atomic_uint_fast64_t counts[DURATION_HISTOGRAM_COUNTS]; /* per bucket, not cumulative; last: +Inf */
	atomic_uint_fast64_t sum_ns;
};

/* What a read returns: counts as metric_histogram_set() takes them. */
struct duration_snapshot {
	uint64_t counts[DURATION_HISTOGRAM_COUNTS];
	uint64_t count;
	double sum_seconds;
};

/* All zero; a zeroed (calloc) struct is initialised too. */
void duration_histogram_init(struct duration_histogram *h);
/* One observation of ns nanoseconds: two atomic adds, no lock, no allocation. */
void duration_histogram_observe(struct duration_histogram *h, uint64_t ns);
void duration_histogram_read(const struct duration_histogram *h, struct duration_snapshot *out);

#endif
