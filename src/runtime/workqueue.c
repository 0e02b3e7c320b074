/*
 * The work queue (see workqueue.h), after client-go's queue.go,
 * delaying_queue.go, rate_limiting_queue.go and default_rate_limiters.go.
 *
 * One record per key ("struct entry") holds all of the key's state: dirty
 * (waiting to be handed out), processing (handed out, not yet done), its
 * failure count, its delayed ready time and its metric timestamps. The
 * records live in one open-addressing hash table (linear probing,
 * backward-shift deletion), so every operation is O(1) on average with tens
 * of thousands of keys; the FIFO ring and the delay heap only hold pointers to
 * records. A record is freed as soon as it carries no state.
 *
 * Invariant (client-go's): a key is in the FIFO ring iff dirty && !processing.
 *
 * Delays without a timer thread: a delayed key is moved to the FIFO lazily,
 * by whichever call takes the lock next after its time has passed (get, add,
 * len, stats), so order and depth are the same as with a timer thread. Idle
 * getters must still wake up when the earliest delay passes; exactly one of
 * them, the "timer owner", sleeps in pthread_cond_timedwait() (CLOCK_MONOTONIC)
 * on cv_timer until the heap's earliest ready time; the others sleep on
 * cv_item. A getter that leaves get() passes the baton: it wakes another idle
 * getter when keys are still queued or when nobody watches the heap any more.
 * This saves a thread per queue and a thundering herd of timed waits.
 */
#include "runtime/workqueue.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/xalloc.h"

#define NOT_IN_HEAP SIZE_MAX
#define TABLE_MIN_CAP 16
#define RING_MIN_CAP 16
#define RING_KEEP_CAP 4096       /* an empty ring bigger than this is freed */
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)
#define MAX_TIMED_WAIT_NS (3600 * NS_PER_S) /* re-check at least hourly */

struct entry {
	uint64_t hash;
	uint64_t added_at;       /* when it last became dirty */
	uint64_t started_at;     /* when get() handed it out */
	uint64_t ready_at;       /* when its delayed add fires (in the heap only) */
	uint64_t seq;            /* heap tie-break: FIFO among equal ready times */
	size_t heap_idx;         /* NOT_IN_HEAP unless waiting for a delay */
	struct entry *proc_prev; /* processing list, oldest first */
	struct entry *proc_next;
	unsigned int failures;
	bool dirty;
	bool processing;
	char key[];
};

struct table {
	struct entry **slots;    /* cap = mask + 1, a power of two */
	size_t mask;
	size_t count;
};

struct ring {
	struct entry **items;    /* cap is 0 or a power of two */
	size_t cap;
	size_t head;
	size_t count;
};

struct heap {
	struct entry **items;    /* min-heap on (ready_at, seq) */
	size_t cap;
	size_t count;
};

struct workqueue {
	pthread_mutex_t mu;
	pthread_cond_t cv_item;  /* idle getters wait here */
	pthread_cond_t cv_timer; /* the timer owner waits here */
	size_t item_waiters;
	bool timer_owner;
	bool shutting_down;

	uint64_t base_delay_ms;
	uint64_t max_delay_ms;

	struct table keys;
	struct ring queue;
	struct heap delayed;
	struct entry *proc_head;
	struct entry *proc_tail;
	size_t n_dirty;
	size_t n_processing;
	uint64_t seq;

	uint64_t adds_total;
	uint64_t retries_total;
	uint64_t latency_ns_sum;
	uint64_t latency_count;
	uint64_t work_ns_sum;
	uint64_t work_count;
	struct duration_histogram latency, work; /* the same observations, by bucket */
};

/* pthread calls on valid objects only fail on programming errors. */
static void check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "stateful-operator: workqueue: %s: %s\n", what, strerror(rc));
		abort();
	}
}

static void lock(struct workqueue *q)
{
	check(pthread_mutex_lock(&q->mu), "pthread_mutex_lock");
}

static void unlock(struct workqueue *q)
{
	check(pthread_mutex_unlock(&q->mu), "pthread_mutex_unlock");
}

static uint64_t now_ns(void)
{
	return clock_mono_ns();
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t ms_to_ns(uint64_t ms)
{
	return ms > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms * NS_PER_MS;
}

/* FNV-1a: keys are short names from the API server, not adversarial input. */
static uint64_t hash_key(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* ---- hash table of entries ---- */

static void table_place(struct table *t, struct entry *e)
{
	size_t i = e->hash & t->mask;

	while (t->slots[i])
		i = (i + 1) & t->mask;
	t->slots[i] = e;
}

static void table_resize(struct table *t, size_t cap)
{
	struct entry **old = t->slots;
	size_t old_cap = old ? t->mask + 1 : 0;

	t->slots = xcalloc(cap, sizeof(*t->slots));
	t->mask = cap - 1;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			table_place(t, old[i]);
	free(old);
}

/* Borrowed; NULL when key has no record. */
static struct entry *table_lookup(const struct table *t, const char *key, uint64_t h)
{
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		struct entry *e = t->slots[i];

		if (!e)
			return NULL;
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	}
}

/* Steals e; its key must not be in the table yet. */
static void table_insert(struct table *t, struct entry *e)
{
	size_t cap = t->mask + 1;

	if ((t->count + 1) * 4 > cap * 3)
		table_resize(t, cap * 2);
	table_place(t, e);
	t->count++;
}

/* Unlinks e (which must be in the table) without freeing it. */
static void table_remove(struct table *t, const struct entry *e)
{
	size_t mask = t->mask;
	size_t i = e->hash & mask;

	while (t->slots[i] != e)
		i = (i + 1) & mask;
	/* Backward shift: pull later members of the probe run into the hole
	 * when the hole lies between their home slot and where they sit. */
	for (size_t j = (i + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
		size_t home = t->slots[j]->hash & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = NULL;
	t->count--;
	if (mask + 1 > TABLE_MIN_CAP && t->count * 8 < mask + 1)
		table_resize(t, (mask + 1) / 2);
}

/* ---- FIFO ring ---- */

static void ring_push(struct ring *r, struct entry *e)
{
	if (r->count == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : RING_MIN_CAP;
		struct entry **items = xmalloc(cap * sizeof(*items));

		for (size_t k = 0; k < r->count; k++)
			items[k] = r->items[(r->head + k) & (r->cap - 1)];
		free(r->items);
		r->items = items;
		r->cap = cap;
		r->head = 0;
	}
	r->items[(r->head + r->count) & (r->cap - 1)] = e;
	r->count++;
}

/* Borrowed; the ring must not be empty. */
static struct entry *ring_pop(struct ring *r)
{
	struct entry *e = r->items[r->head];

	r->head = (r->head + 1) & (r->cap - 1);
	r->count--;
	if (r->count == 0 && r->cap > RING_KEEP_CAP) {
		/* Give a burst's memory back. */
		FREE_AND_NULL(r->items);
		r->cap = 0;
		r->head = 0;
	}
	return e;
}

/* ---- min-heap of delayed entries ---- */

static bool heap_less(const struct entry *a, const struct entry *b)
{
	return a->ready_at < b->ready_at || (a->ready_at == b->ready_at && a->seq < b->seq);
}

static void heap_set(struct heap *h, size_t i, struct entry *e)
{
	h->items[i] = e;
	e->heap_idx = i;
}

static void heap_up(struct heap *h, size_t i)
{
	struct entry *e = h->items[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!heap_less(e, h->items[parent]))
			break;
		heap_set(h, i, h->items[parent]);
		i = parent;
	}
	heap_set(h, i, e);
}

static void heap_down(struct heap *h, size_t i)
{
	struct entry *e = h->items[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= h->count)
			break;
		if (child + 1 < h->count && heap_less(h->items[child + 1], h->items[child]))
			child++;
		if (!heap_less(h->items[child], e))
			break;
		heap_set(h, i, h->items[child]);
		i = child;
	}
	heap_set(h, i, e);
}

static void heap_push(struct heap *h, struct entry *e)
{
	h->items = xgrow(h->items, &h->cap, h->count + 1, sizeof(*h->items));
	h->items[h->count] = e;
	heap_up(h, h->count++);
}

/* Borrowed; the heap must not be empty. */
static struct entry *heap_pop(struct heap *h)
{
	struct entry *top = h->items[0];

	h->count--;
	if (h->count > 0) {
		h->items[0] = h->items[h->count];
		heap_down(h, 0);
	}
	top->heap_idx = NOT_IN_HEAP;
	return top;
}

/* ---- entries ---- */

/* Borrowed record of key, created when missing. Lock held. */
static struct entry *entry_get(struct workqueue *q, const char *key)
{
	uint64_t h = hash_key(key);
	struct entry *e = table_lookup(&q->keys, key, h);
	size_t len;

	if (e)
		return e;
	len = strlen(key);
	e = xcalloc(1, sizeof(*e) + len + 1);
	memcpy(e->key, key, len + 1);
	e->hash = h;
	e->heap_idx = NOT_IN_HEAP;
	table_insert(&q->keys, e);
	return e;
}

static struct entry *entry_find(struct workqueue *q, const char *key)
{
	return table_lookup(&q->keys, key, hash_key(key));
}

/* Frees e once it carries no state. Lock held. */
static void entry_maybe_release(struct workqueue *q, struct entry *e)
{
	if (e->dirty || e->processing || e->failures || e->heap_idx != NOT_IN_HEAP)
		return;
	table_remove(&q->keys, e);
	free(e);
}

static void proc_append(struct workqueue *q, struct entry *e)
{
	e->proc_prev = q->proc_tail;
	e->proc_next = NULL;
	if (q->proc_tail)
		q->proc_tail->proc_next = e;
	else
		q->proc_head = e;
	q->proc_tail = e;
}

static void proc_remove(struct workqueue *q, struct entry *e)
{
	if (e->proc_prev)
		e->proc_prev->proc_next = e->proc_next;
	else
		q->proc_head = e->proc_next;
	if (e->proc_next)
		e->proc_next->proc_prev = e->proc_prev;
	else
		q->proc_tail = e->proc_prev;
	e->proc_prev = NULL;
	e->proc_next = NULL;
}

/* ---- waking getters ---- */

/* A key was queued: wake one idle getter, or the timer owner if it is the
 * only one. A wake-up that finds a getter already signalled is not lost: that
 * getter passes the baton when it leaves get(). */
static void wake_getter(struct workqueue *q)
{
	if (q->item_waiters > 0)
		check(pthread_cond_signal(&q->cv_item), "pthread_cond_signal");
	else if (q->timer_owner)
		check(pthread_cond_signal(&q->cv_timer), "pthread_cond_signal");
}

/* The earliest ready time moved earlier: the timer owner must re-arm, or an
 * idle getter must become the timer owner. */
static void wake_timer(struct workqueue *q)
{
	if (q->timer_owner)
		check(pthread_cond_signal(&q->cv_timer), "pthread_cond_signal");
	else if (q->item_waiters > 0)
		check(pthread_cond_signal(&q->cv_item), "pthread_cond_signal");
}

/* ---- core, lock held ---- */

static void add_locked(struct workqueue *q, struct entry *e, uint64_t now)
{
	if (e->dirty)
		return;
	e->dirty = true;
	e->added_at = now;
	q->n_dirty++;
	q->adds_total++;
	if (e->processing)
		return; /* done() queues it */
	ring_push(&q->queue, e);
	wake_getter(q);
}

/* Moves every delayed key whose time has come to the FIFO, earliest first. */
static void promote_ready(struct workqueue *q, uint64_t now)
{
	if (q->shutting_down)
		return;
	while (q->delayed.count > 0 && q->delayed.items[0]->ready_at <= now) {
		struct entry *e = heap_pop(&q->delayed);

		add_locked(q, e, now);
	}
}

static void add_at_locked(struct workqueue *q, struct entry *e, uint64_t ready_at)
{
	if (e->heap_idx != NOT_IN_HEAP) {
		if (ready_at >= e->ready_at)
			return; /* the earlier time wins */
		e->ready_at = ready_at;
		heap_up(&q->delayed, e->heap_idx);
	} else {
		e->ready_at = ready_at;
		e->seq = q->seq++;
		heap_push(&q->delayed, e);
	}
	if (e->heap_idx == 0)
		wake_timer(q);
}

/* Hands out the oldest queued key: a new string; *queued_ns gets when it was queued. */
static char *take_locked(struct workqueue *q, uint64_t now, uint64_t *queued_ns)
{
	struct entry *e = ring_pop(&q->queue);

	e->dirty = false;
	q->n_dirty--;
	e->processing = true;
	q->n_processing++;
	q->latency_ns_sum += sat_sub(now, e->added_at);
	q->latency_count++;
	duration_histogram_observe(&q->latency, sat_sub(now, e->added_at));
	*queued_ns = e->added_at;
	e->started_at = now;
	proc_append(q, e);
	return xstrdup(e->key);
}

static uint64_t backoff_ms(const struct workqueue *q, unsigned int failures)
{
	/* base << failures, without overflowing, never above the cap. */
	if (failures >= 64 || q->base_delay_ms > (q->max_delay_ms >> failures))
		return q->max_delay_ms;
	return q->base_delay_ms << failures;
}

static struct timespec deadline(uint64_t ready_at, uint64_t now)
{
	struct timespec ts;
	uint64_t at = ready_at;

	if (sat_sub(at, now) > MAX_TIMED_WAIT_NS)
		at = now + MAX_TIMED_WAIT_NS;
	ts.tv_sec = (time_t)(at / NS_PER_S);
	ts.tv_nsec = (long)(at % NS_PER_S);
	return ts;
}

/* ---- public ---- */

void workqueue_options_init(struct workqueue_options *opts)
{
	opts->base_delay_ms = WORKQUEUE_DEFAULT_BASE_DELAY_MS;
	opts->max_delay_ms = WORKQUEUE_DEFAULT_MAX_DELAY_MS;
}

struct workqueue *workqueue_new(const struct workqueue_options *opts)
{
	struct workqueue *q = xcalloc(1, sizeof(*q));
	pthread_condattr_t attr;

	duration_histogram_init(&q->latency);
	duration_histogram_init(&q->work);


	q->base_delay_ms = WORKQUEUE_DEFAULT_BASE_DELAY_MS;
	q->max_delay_ms = WORKQUEUE_DEFAULT_MAX_DELAY_MS;
	if (opts && opts->base_delay_ms)
		q->base_delay_ms = opts->base_delay_ms;
	if (opts && opts->max_delay_ms)
		q->max_delay_ms = opts->max_delay_ms;

	check(pthread_mutex_init(&q->mu, NULL), "pthread_mutex_init");
	check(pthread_condattr_init(&attr), "pthread_condattr_init");
	check(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), "pthread_condattr_setclock");
	check(pthread_cond_init(&q->cv_item, &attr), "pthread_cond_init");
	check(pthread_cond_init(&q->cv_timer, &attr), "pthread_cond_init");
	pthread_condattr_destroy(&attr);

	table_resize(&q->keys, TABLE_MIN_CAP);
	return q;
}

void workqueue_free(struct workqueue *q)
{
	if (!q)
		return;
	for (size_t i = 0; i <= q->keys.mask; i++)
		free(q->keys.slots[i]);
	free(q->keys.slots);
	free(q->queue.items);
	free(q->delayed.items);
	pthread_cond_destroy(&q->cv_timer);
	pthread_cond_destroy(&q->cv_item);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

void workqueue_add(struct workqueue *q, const char *key)
{
	uint64_t now;

	lock(q);
	if (!q->shutting_down) {
		now = now_ns();
		/* Keys whose delay passed go first: they were due earlier. */
		promote_ready(q, now);
		add_locked(q, entry_get(q, key), now);
	}
	unlock(q);
}

void workqueue_add_after(struct workqueue *q, const char *key, int64_t delay_ms)
{
	if (delay_ms <= 0) {
		workqueue_add(q, key);
		return;
	}
	lock(q);
	if (!q->shutting_down)
		add_at_locked(q, entry_get(q, key), sat_add(now_ns(), ms_to_ns((uint64_t)delay_ms)));
	unlock(q);
}

void workqueue_add_rate_limited(struct workqueue *q, const char *key)
{
	struct entry *e;
	uint64_t delay;

	lock(q);
	if (!q->shutting_down) {
		e = entry_get(q, key);
		delay = backoff_ms(q, e->failures);
		if (e->failures < UINT_MAX)
			e->failures++;
		q->retries_total++;
		add_at_locked(q, e, sat_add(now_ns(), ms_to_ns(delay)));
	}
	unlock(q);
}

void workqueue_forget(struct workqueue *q, const char *key)
{
	struct entry *e;

	lock(q);
	e = entry_find(q, key);
	if (e) {
		e->failures = 0;
		entry_maybe_release(q, e);
	}
	unlock(q);
}

unsigned int workqueue_num_requeues(struct workqueue *q, const char *key)
{
	struct entry *e;
	unsigned int n;

	lock(q);
	e = entry_find(q, key);
	n = e ? e->failures : 0;
	unlock(q);
	return n;
}

char *workqueue_get(struct workqueue *q)
{
	uint64_t queued_ns;
	return workqueue_get_queued(q, &queued_ns);
}

char *workqueue_get_queued(struct workqueue *q, uint64_t *queued_ns)
{
	char *key = NULL;
	uint64_t now;
	int rc;

	lock(q);
	for (;;) {
		if (q->shutting_down)
			break;
		now = now_ns();
		promote_ready(q, now);
		if (q->queue.count > 0) {
			key = take_locked(q, now, queued_ns);
			break;
		}
		if (q->delayed.count > 0 && !q->timer_owner) {
			struct timespec ts = deadline(q->delayed.items[0]->ready_at, now);

			q->timer_owner = true;
			rc = pthread_cond_timedwait(&q->cv_timer, &q->mu, &ts);
			q->timer_owner = false;
			if (rc != ETIMEDOUT)
				check(rc, "pthread_cond_timedwait");
		} else {
			q->item_waiters++;
			rc = pthread_cond_wait(&q->cv_item, &q->mu);
			q->item_waiters--;
			check(rc, "pthread_cond_wait");
		}
	}
	/* Pass the baton: a burst of adds may have signalled getters that had
	 * not run yet, so keys can be left queued with a getter still asleep.
	 * (A heap nobody watches should not happen, as every queued key wakes
	 * someone; checking is cheap insurance.) */
	if (!q->shutting_down
	    && (q->queue.count > 0 || (q->delayed.count > 0 && !q->timer_owner)))
		wake_getter(q);
	unlock(q);
	return key;
}

void workqueue_done(struct workqueue *q, const char *key)
{
	struct entry *e;

	lock(q);
	e = entry_find(q, key);
	if (e && e->processing) {
		e->processing = false;
		q->n_processing--;
		proc_remove(q, e);
		uint64_t took = sat_sub(now_ns(), e->started_at);
		q->work_ns_sum += took;
		q->work_count++;
		duration_histogram_observe(&q->work, took);
		if (e->dirty) {
			/* Re-added while processing: its turn now. */
			ring_push(&q->queue, e);
			wake_getter(q);
		} else {
			entry_maybe_release(q, e);
		}
	}
	unlock(q);
}

void workqueue_shutdown(struct workqueue *q)
{
	lock(q);
	q->shutting_down = true;
	check(pthread_cond_broadcast(&q->cv_item), "pthread_cond_broadcast");
	check(pthread_cond_broadcast(&q->cv_timer), "pthread_cond_broadcast");
	unlock(q);
}

bool workqueue_is_shutting_down(struct workqueue *q)
{
	bool down;

	lock(q);
	down = q->shutting_down;
	unlock(q);
	return down;
}

size_t workqueue_len(struct workqueue *q)
{
	size_t n;

	lock(q);
	promote_ready(q, now_ns());
	n = q->queue.count;
	unlock(q);
	return n;
}

void workqueue_stats(struct workqueue *q, struct workqueue_stats *out)
{
	uint64_t now;

	memset(out, 0, sizeof(*out));
	lock(q);
	now = now_ns();
	promote_ready(q, now);
	out->depth = q->n_dirty;
	out->delayed = q->delayed.count;
	out->processing = q->n_processing;
	out->adds_total = q->adds_total;
	out->retries_total = q->retries_total;
	out->queue_latency_ns_sum = q->latency_ns_sum;
	out->queue_latency_count = q->latency_count;
	out->work_duration_ns_sum = q->work_ns_sum;
	out->work_duration_count = q->work_count;
	duration_histogram_read(&q->latency, &out->queue_latency);
	duration_histogram_read(&q->work, &out->work_duration);
	if (q->proc_head)
		out->longest_running_ns = sat_sub(now, q->proc_head->started_at);
	/* The list is as long as the number of workers. */
	for (const struct entry *e = q->proc_head; e; e = e->proc_next)
		out->unfinished_work_ns += sat_sub(now, e->started_at);
	unlock(q);
}
