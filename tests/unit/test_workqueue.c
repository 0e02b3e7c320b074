/*
 * Unit tests for the work queue (src/runtime/workqueue.c).
 *
 * Timing checks assert lower bounds strictly (a key never comes back before
 * its delay: the test's clock starts before the add) and upper bounds only
 * generously, so a loaded machine slows the tests down but does not fail
 * them. A get() that should return is run on a helper thread and waited for
 * with a timeout, so a queue that loses a wake-up fails the test instead of
 * hanging it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/workqueue.h"

#define MS UINT64_C(1000000)
#define GENEROUS_MS 3000 /* upper bound for anything that should be quick */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- a get() on a helper thread ----
 * The getter reports through a mutex and condition variable (which helgrind
 * and TSan understand). It lives on the heap so that a getter a broken queue
 * never wakes can be left behind: the test fails instead of hanging. */

struct getter {
	struct workqueue *q;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool returned;          /* under mu */
	char *key;              /* from workqueue_get(); the test frees it */
	uint64_t returned_ns;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	char *key = workqueue_get(g->q);
	uint64_t at = now_ns();

	pthread_mutex_lock(&g->mu);
	g->key = key;
	g->returned_ns = at;
	g->returned = true;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

static struct getter *getter_start(struct workqueue *q)
{
	struct getter *g = calloc(1, sizeof(*g));
	pthread_condattr_t attr;

	assert_non_null(g);
	g->q = q;
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &attr);
	pthread_condattr_destroy(&attr);
	assert_int_equal(pthread_create(&g->th, NULL, getter_main, g), 0);
	return g;
}

static bool getter_returned(struct getter *g)
{
	bool r;

	pthread_mutex_lock(&g->mu);
	r = g->returned;
	pthread_mutex_unlock(&g->mu);
	return r;
}

/* Waits until g's get() returned or the monotonic deadline passed. */
static bool getter_wait(struct getter *g, uint64_t deadline_ns)
{
	struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
	bool r;

	pthread_mutex_lock(&g->mu);
	while (!g->returned && pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0)
		;
	r = g->returned;
	pthread_mutex_unlock(&g->mu);
	return r;
}

/* Joins a getter that returned and frees it; its key is the caller's. */
static void getter_finish(struct getter *g)
{
	pthread_join(g->th, NULL);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/*
 * Waits for n getters to return from get(). If any is stuck past
 * timeout_ms, shuts the queue down to release it and fails; a getter that
 * even shutdown does not release is detached and leaked with its queue.
 */
static void getters_wait_or_fail(struct workqueue *q, struct getter **g, size_t n, long timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * MS;
	size_t stuck = 0, unkillable = 0;

	for (size_t i = 0; i < n; i++)
		if (!getter_wait(g[i], deadline))
			stuck++;
	if (stuck == 0)
		return;
	workqueue_shutdown(q);
	deadline = now_ns() + GENEROUS_MS * MS;
	for (size_t i = 0; i < n; i++) {
		if (getter_wait(g[i], deadline)) {
			free(g[i]->key);
			getter_finish(g[i]);
		} else {
			pthread_detach(g[i]->th);
			unkillable++;
		}
	}
	fail_msg("%zu of %zu getters still blocked after %ld ms (%zu even after shutdown)",
		 stuck, n, timeout_ms, unkillable);
}

/* Returns the next key (caller frees), failing the test if none comes in time. */
static char *get_within(struct workqueue *q, long timeout_ms, uint64_t *returned_ns)
{
	struct getter *g = getter_start(q);
	char *key;

	getters_wait_or_fail(q, &g, 1, timeout_ms);
	key = g->key;
	if (returned_ns)
		*returned_ns = g->returned_ns;
	getter_finish(g);
	return key;
}

/* Gets the next key, checks it is want, and marks it done. */
static void expect_next(struct workqueue *q, const char *want)
{
	char *k = get_within(q, GENEROUS_MS, NULL);

	assert_non_null(k);
	assert_string_equal(k, want);
	workqueue_done(q, k);
	free(k);
}

static struct workqueue_stats stats_of(struct workqueue *q)
{
	struct workqueue_stats st;

	workqueue_stats(q, &st);
	return st;
}

/* ---- basics ---- */

static void test_options_defaults(void **state)
{
	struct workqueue_options o;

	(void)state;
	memset(&o, 0xff, sizeof(o));
	workqueue_options_init(&o);
	assert_int_equal(o.base_delay_ms, 5);
	assert_int_equal(o.max_delay_ms, 300000);
}

static void test_free_null_and_unknown_keys(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct workqueue_stats st;

	(void)state;
	workqueue_free(NULL);
	workqueue_done(q, "ns/never-added");
	workqueue_forget(q, "ns/never-added");
	assert_int_equal(workqueue_num_requeues(q, "ns/never-added"), 0);
	assert_int_equal(workqueue_len(q), 0);
	assert_false(workqueue_is_shutting_down(q));
	st = stats_of(q);
	assert_int_equal(st.depth, 0);
	assert_int_equal(st.processing, 0);
	assert_int_equal(st.adds_total, 0);
	assert_int_equal(st.work_duration_count, 0);
	workqueue_free(q);
}

static void test_dedupe_waiting(void **state)
{
	struct workqueue *q = workqueue_new(NULL);

	(void)state;
	workqueue_add(q, "ns/a");
	workqueue_add(q, "ns/a");
	workqueue_add(q, "ns/b");
	workqueue_add(q, "ns/a");
	assert_int_equal(workqueue_len(q), 2);
	assert_int_equal(stats_of(q).adds_total, 2);
	assert_int_equal(stats_of(q).depth, 2);
	expect_next(q, "ns/a");
	expect_next(q, "ns/b");
	assert_int_equal(workqueue_len(q), 0);
	assert_int_equal(stats_of(q).depth, 0);
	workqueue_free(q);
}

static void test_copies_keys(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	char buf[32];

	(void)state;
	snprintf(buf, sizeof(buf), "ns/original");
	workqueue_add(q, buf);
	snprintf(buf, sizeof(buf), "ns/clobbered");
	expect_next(q, "ns/original");
	workqueue_free(q);
}

static void test_fifo_order(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	char key[32];

	(void)state;
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "ns/k%d", (i * 7919) % 1000);
		workqueue_add(q, key);
	}
	assert_int_equal(workqueue_len(q), 1000);
	for (int i = 0; i < 1000; i++) {
		char *k = workqueue_get(q);

		snprintf(key, sizeof(key), "ns/k%d", (i * 7919) % 1000);
		assert_non_null(k);
		assert_string_equal(k, key);
		workqueue_done(q, k);
		free(k);
	}
	assert_int_equal(workqueue_len(q), 0);
	workqueue_free(q);
}

/* ---- one worker per key ---- */

static void test_processing_key_not_handed_twice(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct getter *g;
	char *k;

	(void)state;
	workqueue_add(q, "ns/a");
	k = workqueue_get(q);
	assert_string_equal(k, "ns/a");

	/* A second worker waits; the key is re-added while the first holds it. */
	g = getter_start(q);
	workqueue_add(q, "ns/a");
	assert_int_equal(workqueue_len(q), 0);
	assert_int_equal(stats_of(q).depth, 1);
	sleep_ms(100);
	assert_false(getter_returned(g));

	workqueue_done(q, k);
	free(k);
	getters_wait_or_fail(q, &g, 1, GENEROUS_MS);
	assert_non_null(g->key);
	assert_string_equal(g->key, "ns/a");
	workqueue_done(q, g->key);
	free(g->key);
	getter_finish(g);
	assert_int_equal(workqueue_len(q), 0);
	assert_int_equal(stats_of(q).adds_total, 2);
	workqueue_free(q);
}

static void test_readd_during_processing_delivered_once(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	char *k;

	(void)state;
	workqueue_add(q, "ns/a");
	k = workqueue_get(q);
	assert_string_equal(k, "ns/a");
	workqueue_add(q, "ns/a");
	workqueue_add(q, "ns/a");
	workqueue_add(q, "ns/b");
	workqueue_add(q, "ns/a");
	/* Only b can be handed out while a is held. */
	assert_int_equal(workqueue_len(q), 1);
	expect_next(q, "ns/b");
	assert_int_equal(workqueue_len(q), 0);

	workqueue_done(q, k);
	free(k);
	assert_int_equal(workqueue_len(q), 1);
	expect_next(q, "ns/a");
	assert_int_equal(workqueue_len(q), 0);
	assert_int_equal(stats_of(q).depth, 0);
	/* A second done() of a key no longer held changes nothing. */
	workqueue_done(q, "ns/a");
	assert_int_equal(workqueue_len(q), 0);
	workqueue_free(q);
}

#define ST_KEYS 4
#define ST_WORKERS 4
#define ST_PRODUCERS 2
#define ST_ADDS 4000
#define ST_WORKER_READDS 600

/* Heap-allocated so a broken queue's stuck workers can be left behind. */
struct stress {
	struct workqueue *q;
	atomic_int held[ST_KEYS];
	atomic_uint added_seq[ST_KEYS]; /* bumped right before every add of the key */
	atomic_uint seen_seq[ST_KEYS];  /* added_seq as read by the key's holder */
	atomic_int readd_budget;
	atomic_bool double_held;
	atomic_bool bad_key;
	atomic_ulong gets;
	atomic_ulong overlaps;          /* adds that found the key held */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int exited;                     /* workers that returned; under mu */
};

static const char *const st_keys[ST_KEYS] = {"ns/k0", "ns/k1", "ns/k2", "ns/k3"};

static void *stress_worker(void *arg)
{
	struct stress *s = arg;
	char *k;

	while ((k = workqueue_get(s->q)) != NULL) {
		int i = k[strlen(k) - 1] - '0';

		if (i < 0 || i >= ST_KEYS || strcmp(k, st_keys[i]) != 0) {
			atomic_store(&s->bad_key, true);
			workqueue_done(s->q, k);
			free(k);
			continue;
		}
		if (atomic_fetch_add(&s->held[i], 1) != 0)
			atomic_store(&s->double_held, true);
		atomic_store(&s->seen_seq[i], atomic_load(&s->added_seq[i]));
		atomic_fetch_add(&s->gets, 1);
		for (int y = 0; y < 3; y++)
			sched_yield();
		/* Sometimes the worker itself asks for a retry while holding the key. */
		if (atomic_fetch_sub(&s->readd_budget, 1) > 0) {
			atomic_fetch_add(&s->added_seq[i], 1);
			workqueue_add_rate_limited(s->q, k);
		} else {
			workqueue_forget(s->q, k);
		}
		atomic_fetch_sub(&s->held[i], 1);
		workqueue_done(s->q, k);
		free(k);
	}
	pthread_mutex_lock(&s->mu);
	s->exited++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void *stress_producer(void *arg)
{
	struct stress *s = arg;
	unsigned int seed = (unsigned int)(uintptr_t)pthread_self();

	for (int n = 0; n < ST_ADDS; n++) {
		int i = rand_r(&seed) % ST_KEYS;

		atomic_fetch_add(&s->added_seq[i], 1);
		if (atomic_load(&s->held[i]) > 0)
			atomic_fetch_add(&s->overlaps, 1);
		if (n % 7 == 0)
			workqueue_add_after(s->q, st_keys[i], 1 + n % 3);
		else
			workqueue_add(s->q, st_keys[i]);
		sched_yield();
	}
	return NULL;
}

/* Shuts the queue down and joins the workers; false (workers detached and
 * left behind) when they do not all return in time. */
static bool stress_stop(struct stress *s, pthread_t *workers)
{
	uint64_t end = now_ns() + GENEROUS_MS * MS;
	struct timespec ts = {(time_t)(end / 1000000000u), (long)(end % 1000000000u)};
	bool all;

	workqueue_shutdown(s->q);
	pthread_mutex_lock(&s->mu);
	while (s->exited < ST_WORKERS && pthread_cond_timedwait(&s->cv, &s->mu, &ts) == 0)
		;
	all = s->exited == ST_WORKERS;
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < ST_WORKERS; i++) {
		if (all)
			pthread_join(workers[i], NULL);
		else
			pthread_detach(workers[i]);
	}
	return all;
}

static void test_concurrent_one_worker_per_key(void **state)
{
	struct workqueue_options o = {.base_delay_ms = 1, .max_delay_ms = 4};
	struct stress *s = calloc(1, sizeof(*s));
	pthread_t workers[ST_WORKERS], producers[ST_PRODUCERS];
	pthread_condattr_t attr;
	struct workqueue_stats st;
	uint64_t give_up;

	(void)state;
	assert_non_null(s);
	s->q = workqueue_new(&o);
	atomic_init(&s->readd_budget, ST_WORKER_READDS);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &attr);
	pthread_condattr_destroy(&attr);
	for (int i = 0; i < ST_WORKERS; i++)
		assert_int_equal(pthread_create(&workers[i], NULL, stress_worker, s), 0);
	for (int i = 0; i < ST_PRODUCERS; i++)
		assert_int_equal(pthread_create(&producers[i], NULL, stress_producer, s), 0);
	for (int i = 0; i < ST_PRODUCERS; i++)
		pthread_join(producers[i], NULL);

	/* Quiescent: nothing waiting, delayed or held (so no worker can re-add). */
	give_up = now_ns() + 60000 * MS;
	for (;;) {
		st = stats_of(s->q);
		if (st.depth == 0 && st.delayed == 0 && st.processing == 0)
			break;
		if (now_ns() > give_up) {
			stress_stop(s, workers);
			fail_msg("queue never drained: depth %zu delayed %zu processing %zu",
				 st.depth, st.delayed, st.processing);
		}
		sleep_ms(5);
	}
	if (!stress_stop(s, workers))
		fail_msg("workers still blocked in get() after shutdown");

	assert_false(atomic_load(&s->double_held));
	assert_false(atomic_load(&s->bad_key));
	/* Every add made after a key's last hand-out was followed by another. */
	for (int i = 0; i < ST_KEYS; i++)
		assert_int_equal(atomic_load(&s->seen_seq[i]), atomic_load(&s->added_seq[i]));
	st = stats_of(s->q);
	assert_int_equal(st.work_duration_count, atomic_load(&s->gets));
	assert_int_equal(st.queue_latency_count, atomic_load(&s->gets));
	assert_int_equal(st.retries_total, ST_WORKER_READDS);
	assert_true(atomic_load(&s->gets) >= ST_KEYS);
	print_message("stress: %lu gets, %lu adds while held\n", atomic_load(&s->gets),
		      atomic_load(&s->overlaps));
	workqueue_free(s->q);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ---- rate limiting ---- */

/* add_rate_limited(key) and check it comes back no sooner than min_ms. */
static void expect_backoff(struct workqueue *q, const char *key, uint64_t min_ms, unsigned int requeues)
{
	uint64_t t0 = now_ns(), at;
	char *k;

	workqueue_add_rate_limited(q, key);
	assert_int_equal(workqueue_num_requeues(q, key), requeues);
	k = get_within(q, GENEROUS_MS + (long)min_ms, &at);
	assert_non_null(k);
	assert_string_equal(k, key);
	if (at - t0 < min_ms * MS)
		fail_msg("%s came back after %.3f ms, before its %llu ms backoff", key,
			 (double)(at - t0) / MS, (unsigned long long)min_ms);
	workqueue_done(q, k);
	free(k);
}

static void test_backoff_growth(void **state)
{
	struct workqueue *q = workqueue_new(NULL);

	(void)state;
	expect_backoff(q, "ns/a", 5, 1);
	expect_backoff(q, "ns/a", 10, 2);
	expect_backoff(q, "ns/a", 20, 3);
	expect_backoff(q, "ns/a", 40, 4);
	expect_backoff(q, "ns/a", 80, 5);
	/* Per key: b starts at the base again. */
	assert_int_equal(workqueue_num_requeues(q, "ns/b"), 0);
	expect_backoff(q, "ns/b", 5, 1);
	assert_int_equal(workqueue_num_requeues(q, "ns/a"), 5);
	assert_int_equal(stats_of(q).retries_total, 6);
	workqueue_free(q);
}

static void test_backoff_cap(void **state)
{
	struct workqueue_options o = {.base_delay_ms = 5, .max_delay_ms = 40};
	struct workqueue *q = workqueue_new(&o);
	uint64_t t0 = now_ns(), at;
	char *k;

	(void)state;
	expect_backoff(q, "ns/b", 5, 1);
	expect_backoff(q, "ns/b", 10, 2);
	expect_backoff(q, "ns/b", 20, 3);
	expect_backoff(q, "ns/b", 40, 4);
	expect_backoff(q, "ns/b", 40, 5);

	/* 100 failures: 5 ms * 2^99 must neither overflow nor escape the cap. The
	 * key is already waiting for its first (5 ms) delay, which wins. */
	for (int i = 0; i < 100; i++)
		workqueue_add_rate_limited(q, "ns/a");
	assert_int_equal(workqueue_num_requeues(q, "ns/a"), 100);
	assert_int_equal(stats_of(q).delayed, 1);
	k = get_within(q, GENEROUS_MS, &at);
	assert_string_equal(k, "ns/a");
	assert_true(at - t0 >= 5 * MS);
	workqueue_done(q, k);
	free(k);
	/* Without the cap this one would never come back. */
	expect_backoff(q, "ns/a", 40, 101);
	workqueue_free(q);
}

static void test_forget_resets(void **state)
{
	struct workqueue_options o = {.base_delay_ms = 200, .max_delay_ms = 60000};
	struct workqueue *q = workqueue_new(&o);
	uint64_t t0, at;
	char *k;

	(void)state;
	t0 = now_ns();
	for (int i = 0; i < 5; i++)
		workqueue_add_rate_limited(q, "ns/a");
	assert_int_equal(workqueue_num_requeues(q, "ns/a"), 5);
	k = get_within(q, GENEROUS_MS, &at);
	assert_string_equal(k, "ns/a");
	assert_true(at - t0 >= 200 * MS);
	workqueue_done(q, k);
	free(k);

	workqueue_forget(q, "ns/a");
	assert_int_equal(workqueue_num_requeues(q, "ns/a"), 0);
	/* Back at the base (200 ms), not at 200 ms * 2^5 = 6.4 s. */
	t0 = now_ns();
	workqueue_add_rate_limited(q, "ns/a");
	assert_int_equal(workqueue_num_requeues(q, "ns/a"), 1);
	k = get_within(q, 4000, &at);
	assert_string_equal(k, "ns/a");
	assert_true(at - t0 >= 200 * MS);
	workqueue_done(q, k);
	free(k);
	workqueue_free(q);
}

/* ---- delayed adds ---- */

static void expect_delayed(struct workqueue *q, const char *want, uint64_t t0, uint64_t min_ms)
{
	uint64_t at;
	char *k = get_within(q, GENEROUS_MS + (long)min_ms, &at);

	assert_non_null(k);
	assert_string_equal(k, want);
	if (at - t0 < min_ms * MS)
		fail_msg("%s arrived after %.3f ms, before its %llu ms delay", want,
			 (double)(at - t0) / MS, (unsigned long long)min_ms);
	workqueue_done(q, k);
	free(k);
}

static void test_delayed_order(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	uint64_t t0 = now_ns();

	(void)state;
	workqueue_add_after(q, "ns/c", 150);
	workqueue_add_after(q, "ns/a", 50);
	workqueue_add_after(q, "ns/late", 600000);
	workqueue_add_after(q, "ns/b", 100);
	workqueue_add(q, "ns/now");
	assert_int_equal(stats_of(q).delayed, 4);
	expect_next(q, "ns/now");
	expect_delayed(q, "ns/a", t0, 50);
	expect_delayed(q, "ns/b", t0, 100);
	expect_delayed(q, "ns/c", t0, 150);
	assert_int_equal(stats_of(q).delayed, 1);
	assert_int_equal(workqueue_len(q), 0);

	/* A key whose delay passed while nobody called get() was due before a
	 * key added afterwards, and is handed out first. */
	workqueue_add_after(q, "ns/due", 20);
	sleep_ms(50);
	workqueue_add(q, "ns/after");
	expect_next(q, "ns/due");
	expect_next(q, "ns/after");
	/* ns/late is freed with the queue. */
	workqueue_free(q);
}

static void test_delayed_key_is_independent_of_waiting_copy(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	uint64_t t0 = now_ns();

	(void)state;
	/* Added now and again in 50 ms: processed now, and again after 50 ms. */
	workqueue_add_after(q, "ns/a", 50);
	workqueue_add(q, "ns/a");
	expect_next(q, "ns/a");
	expect_delayed(q, "ns/a", t0, 50);
	assert_int_equal(stats_of(q).adds_total, 2);
	workqueue_free(q);
}

static void test_add_after_earlier_wins(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	uint64_t t0 = now_ns();

	(void)state;
	workqueue_add_after(q, "ns/a", 600000);
	workqueue_add_after(q, "ns/a", 50);
	assert_int_equal(stats_of(q).delayed, 1);
	expect_delayed(q, "ns/a", t0, 50);
	assert_int_equal(stats_of(q).delayed, 0);

	t0 = now_ns();
	workqueue_add_after(q, "ns/b", 50);
	workqueue_add_after(q, "ns/b", 600000);
	assert_int_equal(stats_of(q).delayed, 1);
	expect_delayed(q, "ns/b", t0, 50);
	assert_int_equal(stats_of(q).delayed, 0);
	assert_int_equal(workqueue_len(q), 0);
	workqueue_free(q);
}

static void test_add_after_nonpositive_is_add(void **state)
{
	struct workqueue *q = workqueue_new(NULL);

	(void)state;
	workqueue_add_after(q, "ns/a", 0);
	workqueue_add_after(q, "ns/b", -5);
	assert_int_equal(workqueue_len(q), 2);
	assert_int_equal(stats_of(q).delayed, 0);
	expect_next(q, "ns/a");
	expect_next(q, "ns/b");
	workqueue_free(q);
}

static void test_delayed_wakes_blocked_getter(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct getter *g;
	uint64_t t0;

	(void)state;
	g = getter_start(q);
	sleep_ms(20); /* usually blocked with nothing to wait for by now */
	t0 = now_ns();
	workqueue_add_after(q, "ns/a", 60);
	getters_wait_or_fail(q, &g, 1, GENEROUS_MS);
	assert_non_null(g->key);
	assert_string_equal(g->key, "ns/a");
	assert_true(g->returned_ns - t0 >= 60 * MS);
	workqueue_done(q, g->key);
	free(g->key);
	getter_finish(g);

	/* An earlier key arriving while a getter waits for a later one. */
	t0 = now_ns();
	workqueue_add_after(q, "ns/late", 600000);
	g = getter_start(q);
	sleep_ms(20);
	workqueue_add_after(q, "ns/soon", 40);
	getters_wait_or_fail(q, &g, 1, GENEROUS_MS);
	assert_non_null(g->key);
	assert_string_equal(g->key, "ns/soon");
	assert_true(g->returned_ns - t0 >= 40 * MS);
	workqueue_done(q, g->key);
	free(g->key);
	getter_finish(g);
	workqueue_free(q);
}

/* The only idle getter sleeps until a delayed key is due; a plain key added
 * meanwhile must wake it. */
static void test_delay_watcher_takes_plain_key(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct getter *g;

	(void)state;
	workqueue_add_after(q, "ns/late", 600000);
	g = getter_start(q);
	sleep_ms(20);
	workqueue_add(q, "ns/plain");
	getters_wait_or_fail(q, &g, 1, GENEROUS_MS);
	assert_non_null(g->key);
	assert_string_equal(g->key, "ns/plain");
	workqueue_done(q, g->key);
	free(g->key);
	getter_finish(g);
	workqueue_free(q);
}

/* The getter that watched the delays takes the first delayed key and keeps
 * it; the next delayed key must still reach the other idle getter. */
static void test_delay_watch_passes_to_idle_getter(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct getter *g[2];
	struct getter *first, *second;
	uint64_t t0;

	(void)state;
	g[0] = getter_start(q);
	g[1] = getter_start(q);
	sleep_ms(20);
	t0 = now_ns();
	workqueue_add_after(q, "ns/d1", 50);
	workqueue_add_after(q, "ns/d2", 150);
	/* Nobody calls done() until both returned. */
	getters_wait_or_fail(q, g, 2, GENEROUS_MS);
	assert_non_null(g[0]->key);
	assert_non_null(g[1]->key);
	first = strcmp(g[0]->key, "ns/d1") == 0 ? g[0] : g[1];
	second = first == g[0] ? g[1] : g[0];
	assert_string_equal(first->key, "ns/d1");
	assert_string_equal(second->key, "ns/d2");
	assert_true(first->returned_ns - t0 >= 50 * MS);
	assert_true(second->returned_ns - t0 >= 150 * MS);
	assert_int_equal(stats_of(q).processing, 2);
	for (int i = 0; i < 2; i++) {
		workqueue_done(q, g[i]->key);
		free(g[i]->key);
		getter_finish(g[i]);
	}
	workqueue_free(q);
}

/* A burst of adds wakes more getters than are still asleep on the queue (the
 * signalled ones have not run yet); the getter asleep on the delay timer
 * must still be reached, through the getters that leave get(). */
static void test_burst_reaches_delay_watcher(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct getter *g[3];
	(void)state;
	for (int round = 0; round < 20; round++) {
		bool seen[3] = {false, false, false};

		workqueue_add_after(q, "ns/late", 600000);
		for (int i = 0; i < 3; i++)
			g[i] = getter_start(q);
		sleep_ms(20);
		workqueue_add(q, "ns/p0");
		workqueue_add(q, "ns/p1");
		workqueue_add(q, "ns/p2");
		/* Nobody calls done() until all three returned. */
		getters_wait_or_fail(q, g, 3, GENEROUS_MS);
		for (int i = 0; i < 3; i++) {
			assert_non_null(g[i]->key);
			assert_int_equal(strncmp(g[i]->key, "ns/p", 4), 0);
			seen[g[i]->key[4] - '0'] = true;
		}
		for (int i = 0; i < 3; i++) {
			workqueue_done(q, g[i]->key);
			free(g[i]->key);
			getter_finish(g[i]);
		}
		assert_true(seen[0] && seen[1] && seen[2]);
	}
	workqueue_free(q);
}

/* ---- shutdown ---- */

static void test_shutdown_wakes_getters(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct getter *g[3];

	(void)state;
	/* One getter sleeps on the delay timer, the others on the queue. */
	workqueue_add_after(q, "ns/late", 600000);
	for (int i = 0; i < 3; i++)
		g[i] = getter_start(q);
	sleep_ms(50);
	for (int i = 0; i < 3; i++)
		assert_false(getter_returned(g[i]));
	assert_false(workqueue_is_shutting_down(q));

	workqueue_shutdown(q);
	for (int i = 0; i < 3; i++) {
		uint64_t deadline = now_ns() + GENEROUS_MS * MS;

		if (!getter_wait(g[i], deadline)) {
			for (int j = i; j < 3; j++)
				pthread_detach(g[j]->th);
			fail_msg("shutdown did not wake getter %d", i);
		}
		assert_null(g[i]->key);
		getter_finish(g[i]);
	}
	assert_true(workqueue_is_shutting_down(q));
	workqueue_shutdown(q); /* idempotent */

	workqueue_add(q, "ns/a");
	workqueue_add_after(q, "ns/b", 1);
	workqueue_add_rate_limited(q, "ns/c");
	assert_int_equal(workqueue_len(q), 0);
	assert_int_equal(workqueue_num_requeues(q, "ns/c"), 0);
	assert_int_equal(stats_of(q).adds_total, 0);
	assert_int_equal(stats_of(q).retries_total, 0);
	assert_null(workqueue_get(q));
	workqueue_free(q);
}

static void test_shutdown_drops_waiting_keys(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct workqueue_stats st;
	char *k;

	(void)state;
	workqueue_add(q, "ns/a");
	workqueue_add(q, "ns/b");
	k = workqueue_get(q);
	assert_string_equal(k, "ns/a");
	workqueue_add(q, "ns/a");
	workqueue_shutdown(q);
	/* b is waiting, but get() stops handing out keys at once. */
	assert_null(workqueue_get(q));
	/* The worker still finishes and reports its key. */
	workqueue_done(q, k);
	free(k);
	assert_null(workqueue_get(q));
	st = stats_of(q);
	assert_int_equal(st.processing, 0);
	assert_int_equal(st.work_duration_count, 1);
	workqueue_free(q);
}

/* ---- stats ---- */

static void test_stats(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	struct workqueue_stats st;
	char *a, *b;

	(void)state;
	workqueue_add(q, "ns/a");
	workqueue_add(q, "ns/b");
	workqueue_add(q, "ns/a");
	st = stats_of(q);
	assert_int_equal(st.depth, 2);
	assert_int_equal(st.adds_total, 2);
	assert_int_equal(st.processing, 0);
	assert_int_equal(st.longest_running_ns, 0);

	sleep_ms(30);
	a = workqueue_get(q);
	assert_string_equal(a, "ns/a");
	st = stats_of(q);
	assert_int_equal(st.depth, 1);
	assert_int_equal(st.processing, 1);
	assert_int_equal(st.queue_latency_count, 1);
	assert_true(st.queue_latency_ns_sum >= 30 * MS);

	sleep_ms(30);
	b = workqueue_get(q);
	assert_string_equal(b, "ns/b");
	st = stats_of(q);
	assert_int_equal(st.depth, 0);
	assert_int_equal(st.processing, 2);
	assert_int_equal(st.queue_latency_count, 2);
	assert_true(st.queue_latency_ns_sum >= 90 * MS); /* 30 for a + 60 for b */
	/* a has run 30 ms longer than b. */
	assert_true(st.longest_running_ns >= 30 * MS);
	assert_true(st.unfinished_work_ns >= st.longest_running_ns);
	assert_true(st.unfinished_work_ns < 2 * st.longest_running_ns);

	/* Re-added while processing: counts as an add and in depth, not in len. */
	workqueue_add(q, "ns/a");
	st = stats_of(q);
	assert_int_equal(st.adds_total, 3);
	assert_int_equal(st.depth, 1);
	assert_int_equal(workqueue_len(q), 0);

	sleep_ms(20);
	workqueue_done(q, a);
	workqueue_done(q, b);
	free(a);
	free(b);
	st = stats_of(q);
	assert_int_equal(st.processing, 0);
	assert_int_equal(st.work_duration_count, 2);
	assert_true(st.work_duration_ns_sum >= 70 * MS); /* a >= 50, b >= 20 */
	assert_int_equal(st.longest_running_ns, 0);
	assert_int_equal(st.unfinished_work_ns, 0);
	assert_int_equal(st.depth, 1);

	workqueue_add_rate_limited(q, "ns/c");
	workqueue_add_rate_limited(q, "ns/c");
	workqueue_add_after(q, "ns/d", 600000);
	st = stats_of(q);
	assert_int_equal(st.retries_total, 2);
	assert_int_equal(st.delayed, 2);
	assert_int_equal(st.adds_total, 3);
	expect_next(q, "ns/a");
	expect_next(q, "ns/c"); /* its 5 ms passed: promoted, counted as an add */
	st = stats_of(q);
	assert_int_equal(st.adds_total, 4);
	assert_int_equal(st.delayed, 1);
	assert_int_equal(st.depth, 0);
	assert_int_equal(st.queue_latency_count, 4);
	assert_int_equal(st.work_duration_count, 4);
	workqueue_free(q);
}

/* ---- scale ---- */

#define MANY 50000

static void test_many_keys(void **state)
{
	struct workqueue *q = workqueue_new(NULL);
	char key[32];

	(void)state;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < MANY; i++) {
			snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
			workqueue_add(q, key);
		}
	assert_int_equal(workqueue_len(q), MANY);
	assert_int_equal(stats_of(q).adds_total, MANY);
	for (int i = 0; i < MANY; i++) {
		char *k = workqueue_get(q);

		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		assert_string_equal(k, key);
		workqueue_done(q, k);
		free(k);
	}

	/* Rate-limited: same delay for all, so they come back in call order. */
	for (int i = 0; i < MANY; i++) {
		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		workqueue_add_rate_limited(q, key);
		if (i % 2)
			workqueue_add_rate_limited(q, key);
	}
	for (int i = 0; i < MANY; i += 3) {
		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		workqueue_forget(q, key);
	}
	for (int i = 0; i < MANY; i++) {
		unsigned int want = i % 3 == 0 ? 0 : i % 2 ? 2 : 1;

		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		assert_int_equal(workqueue_num_requeues(q, key), want);
	}
	for (int i = 0; i < MANY; i++) {
		char *k = workqueue_get(q);

		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		assert_string_equal(k, key);
		workqueue_done(q, k);
		free(k);
	}
	for (int i = 0; i < MANY; i++) {
		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		workqueue_forget(q, key);
	}
	for (int i = 0; i < MANY; i += 1000) {
		snprintf(key, sizeof(key), "ns-%d/pod-%d", i % 97, i);
		assert_int_equal(workqueue_num_requeues(q, key), 0);
	}
	assert_int_equal(stats_of(q).depth, 0);
	assert_int_equal(stats_of(q).delayed, 0);
	assert_int_equal(workqueue_len(q), 0);
	workqueue_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_defaults),
		cmocka_unit_test(test_free_null_and_unknown_keys),
		cmocka_unit_test(test_dedupe_waiting),
		cmocka_unit_test(test_copies_keys),
		cmocka_unit_test(test_fifo_order),
		cmocka_unit_test(test_processing_key_not_handed_twice),
		cmocka_unit_test(test_readd_during_processing_delivered_once),
		cmocka_unit_test(test_concurrent_one_worker_per_key),
		cmocka_unit_test(test_backoff_growth),
		cmocka_unit_test(test_backoff_cap),
		cmocka_unit_test(test_forget_resets),
		cmocka_unit_test(test_delayed_order),
		cmocka_unit_test(test_delayed_key_is_independent_of_waiting_copy),
		cmocka_unit_test(test_add_after_earlier_wins),
		cmocka_unit_test(test_add_after_nonpositive_is_add),
		cmocka_unit_test(test_delayed_wakes_blocked_getter),
		cmocka_unit_test(test_delay_watcher_takes_plain_key),
		cmocka_unit_test(test_delay_watch_passes_to_idle_getter),
		cmocka_unit_test(test_burst_reaches_delay_watcher),
		cmocka_unit_test(test_shutdown_wakes_getters),
		cmocka_unit_test(test_shutdown_drops_waiting_keys),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_many_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
