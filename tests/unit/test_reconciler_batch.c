/*
 * The reconcile driver's batches (reconciler_ops.batch): steps a controller
 * says need not wait for each other (a StatefulCluster's claims, then its
 * pods) go out in one reconcile, in waves of 1, 2, 4... at once (up to
 * RECONCILE_WAVE_MAX), as a StatefulSet's Parallel pods are made; a step
 * that fails stops them after its wave, so a refusal (a quota) costs a few
 * requests, not one per member; a step of another kind waits for the next
 * reconcile; a controller without batch still takes one step a reconcile.
 * The steps are a fake controller's own (ACTION_OWN): no API server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/controller.h"
#include "runtime/reconciler.h"
#include "util/clock.h"
#include "util/xalloc.h"

#define ITEMS_MAX 64

struct fake {
	int items;        /* items to make: one step each */
	bool batch;       /* the controller lets them go together */
	int fail_at;      /* the send (0-based, in order) that fails, or -1 */
	bool other_after; /* once all are made, a step of another name */
	pthread_mutex_t lock;
	bool made[ITEMS_MAX];
	int sent, other_sent, performed, reads;
	atomic_int in_flight, max_in_flight;
};

struct snapshot {
	bool made[ITEMS_MAX];
};

static void *fake_read(void *ctx, const struct reconcile_key *k)
{
	struct fake *f = ctx;
	(void)k;
	pthread_mutex_lock(&f->lock);
	/* One reconcile is looked at: later ones (a retry, a requeue) find nothing to do. */
	struct snapshot *s = f->reads++ ? NULL : xcalloc(1, sizeof(*s));
	if (s)
		memcpy(s->made, f->made, sizeof(s->made));
	pthread_mutex_unlock(&f->lock);
	return s;
}

static void fake_release(void *ctx, void *snapshot)
{
	(void)ctx;
	free(snapshot);
}

static void fake_plan(void *ctx, const struct reconcile_key *k, void *snapshot, long long now_ms, struct action *a)
{
	struct fake *f = ctx;
	struct snapshot *s = snapshot;
	(void)k;
	(void)now_ms;
	for (int i = 0; i < f->items; i++) {
		if (!s->made[i]) {
			a->verb = ACTION_OWN;
			a->what = "Make";
			snprintf(a->name, sizeof(a->name), "item-%d", i);
			return;
		}
	}
	if (f->other_after) {
		a->verb = ACTION_OWN;
		a->what = "Other";
		snprintf(a->name, sizeof(a->name), "other");
	}
}

static int fake_perform(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a, bool *stale,
			struct kube_error *err)
{
	struct fake *f = ctx;
	(void)k;
	(void)snapshot;
	(void)stale;
	int now = atomic_fetch_add(&f->in_flight, 1) + 1;
	for (int max = atomic_load(&f->max_in_flight); now > max;)
		if (atomic_compare_exchange_weak(&f->max_in_flight, &max, now))
			break;
	pthread_mutex_lock(&f->lock);
	int order = f->sent++;
	bool other = !strcmp(a->what, "Other");
	f->other_sent += other;
	pthread_mutex_unlock(&f->lock);
	clock_sleep_ms(30); /* a request's time: the steps of a wave overlap */
	int r = 0;
	if (order == f->fail_at) {
		snprintf(err->message, sizeof(err->message), "refused");
		err->code = 403;
		r = -1;
	} else if (!other) {
		pthread_mutex_lock(&f->lock);
		f->made[atoi(a->name + strlen("item-"))] = true;
		pthread_mutex_unlock(&f->lock);
	}
	atomic_fetch_sub(&f->in_flight, 1);
	return r;
}

static void fake_performed(void *ctx, const struct reconcile_key *k, void *snapshot, const struct action *a, int r,
			   const struct kube_error *err)
{
	struct fake *f = ctx;
	(void)k;
	(void)snapshot;
	(void)a;
	(void)r;
	(void)err;
	pthread_mutex_lock(&f->lock);
	f->performed++;
	pthread_mutex_unlock(&f->lock);
}

static bool fake_batch(void *ctx, void *snapshot, const struct action *a)
{
	struct fake *f = ctx;
	struct snapshot *s = snapshot;
	if (!f->batch || strcmp(a->what, "Make"))
		return false;
	s->made[atoi(a->name + strlen("item-"))] = true;
	return true;
}

/* Runs one reconcile of "ns/x" with f's controller; its steps are then in f. */
static void reconcile_once(struct fake *f)
{
	static const struct reconciler_ops ops = {.name = "fake", .read = fake_read, .release = fake_release,
						  .plan = fake_plan, .perform_own = fake_perform,
						  .performed = fake_performed, .batch = fake_batch};
	pthread_mutex_init(&f->lock, NULL);
	struct reconciler_deps deps = {.workers = 1};
	struct controller *c = reconciler_new(&ops, f, NULL, &deps);
	assert_int_equal(controller_start(c), 0);
	controller_enqueue(c, "ns/x");
	struct controller_stats st;
	for (int i = 0; i < 1000; i++) {
		controller_get_stats(c, &st);
		if (st.reconciles >= 1)
			break;
		clock_sleep_ms(10);
	}
	controller_stop(c);
	controller_free(c);
	assert_int_equal(st.reconciles >= 1, 1);
	pthread_mutex_destroy(&f->lock);
}

static void test_independent_steps_go_in_one_reconcile_in_waves(void **state)
{
	(void)state;
	struct fake f = {.items = 30, .batch = true, .fail_at = -1, .other_after = true};
	reconcile_once(&f);
	assert_int_equal(f.sent, 30);
	assert_int_equal(f.performed, 30);
	for (int i = 0; i < 30; i++)
		assert_true(f.made[i]);
	/* Waves of 1, 2, 4, 8, then the 15 left: at most 15 at once, and more than one. */
	assert_true(atomic_load(&f.max_in_flight) > 1);
	assert_true(atomic_load(&f.max_in_flight) <= 15);
	/* The step of another name is planned again on the cache, next time. */
	assert_int_equal(f.other_sent, 0);
}

static void test_no_more_than_the_wave_limit_at_once(void **state)
{
	(void)state;
	struct fake f = {.items = ITEMS_MAX, .batch = true, .fail_at = -1};
	reconcile_once(&f);
	assert_int_equal(f.sent, ITEMS_MAX);
	assert_true(atomic_load(&f.max_in_flight) <= RECONCILE_WAVE_MAX);
}

static void test_a_refusal_stops_the_batch_after_its_wave(void **state)
{
	(void)state;
	/* The second step sent fails: it went with one other (wave 2); nothing after. */
	struct fake f = {.items = 30, .batch = true, .fail_at = 1};
	reconcile_once(&f);
	assert_int_equal(f.sent, 3);
	assert_int_equal(f.performed, 3);
}

static void test_without_batch_one_step_a_reconcile(void **state)
{
	(void)state;
	struct fake f = {.items = 30, .batch = false, .fail_at = -1};
	reconcile_once(&f);
	assert_int_equal(f.sent, 1);
	assert_int_equal(atomic_load(&f.max_in_flight), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_independent_steps_go_in_one_reconcile_in_waves),
		cmocka_unit_test(test_no_more_than_the_wave_limit_at_once),
		cmocka_unit_test(test_a_refusal_stops_the_batch_after_its_wave),
		cmocka_unit_test(test_without_batch_one_step_a_reconcile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
