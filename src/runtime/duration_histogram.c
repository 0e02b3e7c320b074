#include "runtime/duration_histogram.h"

#include <stddef.h>

/* metrics_latency_bounds in nanoseconds, so an observation compares integers. */
static const uint64_t bounds_ns[METRICS_LATENCY_BUCKETS] = {
	500000ull,      1000000ull,     2500000ull,      5000000ull,      10000000ull,    25000000ull,
	50000000ull,    100000000ull,   250000000ull,    500000000ull,    1000000000ull,  2500000000ull,
	5000000000ull,  10000000000ull, 30000000000ull,  60000000000ull,
};

void duration_histogram_init(struct duration_histogram *h)
{
	for (size_t i = 0; i < DURATION_HISTOGRAM_COUNTS; i++)
		atomic_init(&h->counts[i], 0);
	atomic_init(&h->sum_ns, 0);
}

/* Bounds are inclusive (Prometheus' le): ns == bound falls in that bucket. */
void duration_histogram_observe(struct duration_histogram *h, uint64_t ns)
{
	size_t lo = 0, hi = METRICS_LATENCY_BUCKETS; /* the first bound >= ns, or METRICS_LATENCY_BUCKETS */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (bounds_ns[mid] < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	atomic_fetch_add_explicit(&h->counts[lo], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

void duration_histogram_read(const struct duration_histogram *h, struct duration_snapshot *out)
{
	out->count = 0;
	for (size_t i = 0; i < DURATION_HISTOGRAM_COUNTS; i++) {
		out->counts[i] = atomic_load_explicit(&h->counts[i], memory_order_relaxed);
		out->count += out->counts[i];
	}
	out->sum_seconds = (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9;
}
