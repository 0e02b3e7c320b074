/*
 * The controller work queue: client-go's rate-limiting delaying work queue
 * (k8s.io/client-go/util/workqueue) for string keys ("namespace/name").
 *
 * - Dedupe: adding a key that is already waiting does nothing.
 * - One worker per key: a key handed out by workqueue_get() is "processing"
 *   until workqueue_done(); adding it meanwhile marks it dirty and done()
 *   queues it again, once. Two callers never hold the same key.
 * - Fair: keys are handed out in the order they became ready (FIFO).
 * - Delayed add (workqueue_add_after) and per-key exponential backoff
 *   (workqueue_add_rate_limited: base * 2^failures, capped).
 *
 * Keys are copied; the queue never keeps a caller's pointer.
 *
 * Threads: every function may be called from any thread at any time, except
 * workqueue_free(), which needs every other call to have returned (shut the
 * queue down and join the workers first).
 */
#ifndef SOP_RUNTIME_WORKQUEUE_H
#define SOP_RUNTIME_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/duration_histogram.h"

#define WORKQUEUE_DEFAULT_BASE_DELAY_MS 5
#define WORKQUEUE_DEFAULT_MAX_DELAY_MS 300000 /* 300 s */

struct workqueue_options {
	/* First retry delay of workqueue_add_rate_limited(); 0 = 5 ms. */
	uint64_t base_delay_ms;
	/* Largest retry delay; 0 = 300 s. */
	uint64_t max_delay_ms;
};

/*
 * Counters for /metrics, named after client-go's workqueue metrics. Durations
 * are in nanoseconds of the monotonic clock.
 */
struct workqueue_stats {
	/* Keys added and not yet handed out, including keys re-added while
	 * processing that wait for done() (client-go's "depth"). */
	size_t depth;
	/* Keys waiting for their add_after() / backoff delay to pass. */
	size_t delayed;
	/* Keys handed out by get() and not yet done(). */
	size_t processing;
	/* Adds that made a key waiting (deduplicated adds do not count). */
	uint64_t adds_total;
	/* Calls of workqueue_add_rate_limited(). */
	uint64_t retries_total;
	/* From the add that made a key waiting (for a delayed key: from when
	 * its delay passed) until get() handed it out. */
	uint64_t queue_latency_ns_sum;
	uint64_t queue_latency_count;
	/* From get() until done(). */
	uint64_t work_duration_ns_sum;
	uint64_t work_duration_count;
	/* The same two, by bucket (the metrics' histograms). */
	struct duration_snapshot queue_latency, work_duration;

	/* Age of the oldest key being processed; 0 when none. */
	uint64_t longest_running_ns;
	/* Summed age of all keys being processed (client-go's unfinished work). */
	uint64_t unfinished_work_ns;
};

struct workqueue;

/* Fills opts with the defaults (5 ms, 300 s). */
void workqueue_options_init(struct workqueue_options *opts);

/*
 * Returns a new queue (free with workqueue_free()). opts is borrowed and may
 * be NULL for the defaults. Never returns NULL: out of memory aborts.
 */
struct workqueue *workqueue_new(const struct workqueue_options *opts);

/* Frees the queue and every key in it. NULL is a no-op. See "Threads". */
void workqueue_free(struct workqueue *q);

/*
 * Makes key (borrowed, copied) available to get(), unless it is already
 * waiting. A key being processed is handed out again after its done().
 * Ignored after shutdown.
 */
void workqueue_add(struct workqueue *q, const char *key);

/*
 * Adds key (borrowed, copied) once delay_ms has passed; delay_ms <= 0 adds
 * now. A key already waiting for a delay keeps the earlier of the two ready
 * times; the delayed add is independent of whether the key is waiting or
 * processing now (when it fires it is an ordinary workqueue_add()).
 * Ignored after shutdown.
 */
void workqueue_add_after(struct workqueue *q, const char *key, int64_t delay_ms);

/*
 * Adds key (borrowed, copied) after its backoff: base * 2^n where n counts
 * the earlier calls for this key since its last forget(), capped at the
 * maximum delay. Counts one retry. Ignored after shutdown.
 */
void workqueue_add_rate_limited(struct workqueue *q, const char *key);

/* Resets key's failure count (call after a successful reconcile). */
void workqueue_forget(struct workqueue *q, const char *key);

/* How many rate-limited adds key has had since its last forget(). */
unsigned int workqueue_num_requeues(struct workqueue *q, const char *key);

/*
 * Blocks until a key is available and hands it out: returns a new string
 * the caller frees after passing it to workqueue_done(). Returns NULL once
 * the queue is shut down, at once, also for callers already blocked here and
 * even if keys are still waiting: those are dropped, not drained (the
 * operator's state lives in the cluster, so the next leader redoes them).
 * Keys being processed at shutdown are finished by their workers, which then
 * call done() and see NULL from their next get(); joining the workers thus
 * gives client-go's ShutDownWithDrain.
 */
char *workqueue_get(struct workqueue *q);
/* As workqueue_get; *queued_ns receives when the key was queued (clock_mono_ns). */
char *workqueue_get_queued(struct workqueue *q, uint64_t *queued_ns);

/*
 * Marks key (borrowed) as no longer processing; if it was added meanwhile,
 * queues it again. A key that is not processing is ignored. Allowed after
 * shutdown (it still records the work duration).
 */
void workqueue_done(struct workqueue *q, const char *key);

/* Stops the queue: later adds are ignored and get() returns NULL. Idempotent. */
void workqueue_shutdown(struct workqueue *q);
bool workqueue_is_shutting_down(struct workqueue *q);

/* Keys ready to be handed out now (waiting, not processing, delay passed). */
size_t workqueue_len(struct workqueue *q);

/* Fills *out with a consistent snapshot. */
void workqueue_stats(struct workqueue *q, struct workqueue_stats *out);

#endif
