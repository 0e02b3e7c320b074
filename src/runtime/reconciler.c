#include "runtime/reconciler.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/crash_hook.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

struct reconciler {
	struct reconciler_ops ops;
	struct reconciler_deps deps;
	void *ctx;
	void (*free_ctx)(void *ctx);
	struct crash_hook crash;
};

static void record(struct reconciler *rc, void *snapshot, const struct action *a)
{
	const json_t *about = rc->ops.about ? rc->ops.about(rc->ctx, snapshot) : NULL;
	if (a->event_reason && about)
		event_record(rc->deps.events, about, a->event_type, a->event_reason, "%s", a->event_message);
	for (int i = 0; i < ACTION_MAX_COUNTS && rc->deps.count; i++)
		if (a->counts[i].family && a->counts[i].by)
			rc->deps.count(rc->deps.counter, a->counts[i].family, (double)a->counts[i].by);
	if (a->observed.family && rc->deps.observe)
		rc->deps.observe(rc->deps.counter, a->observed.family, a->observed.label, a->observed.v);

}

static long requeue_after(const struct action *a)
{
	switch (a->verb) {
	case ACTION_WAIT:
		return a->requeue_ms;
	case ACTION_NOTHING:
	case ACTION_REFUSE:
		return a->requeue_ms > 0 ? a->requeue_ms : 0;
	default:
		return a->requeue_ms > 0 && a->requeue_ms < RECONCILE_AFTER_STEP_MS ? a->requeue_ms
										   : RECONCILE_AFTER_STEP_MS;
	}
}

static bool changes_something(const struct action *a)
{
	return a->verb != ACTION_NOTHING && a->verb != ACTION_WAIT && a->verb != ACTION_REFUSE;
}

/* One step on its way: what the planner asked, then how it went. */
struct step {
	struct action a;
	struct kube_error err;
	bool stale;
	int r;
	/* for the threads of a wave */
	struct reconciler *rc;
	const struct reconcile_key *k;
	void *snapshot;
};

/* Performs st->a (check, send): sets r, stale, err. Callable from any thread. */
static void send_step(struct step *st)
{
	struct reconciler *rc = st->rc;
	struct action *a = &st->a;
	st->stale = false;
	int r = changes_something(a) && rc->ops.check ? rc->ops.check(rc->ctx, st->k, st->snapshot, a, &st->err)
						     : RECONCILE_GO;
	if (r == RECONCILE_MOVED_ON) {
		st->stale = true;
		r = 0;
	} else if (r == RECONCILE_DONE) {
		r = 0;
	} else if (r == RECONCILE_GO) {
		r = a->verb == ACTION_OWN ? rc->ops.perform_own(rc->ctx, st->k, st->snapshot, a, &st->stale, &st->err)
					  : action_perform(rc->deps.client, st->k->ns, a, &st->stale, &st->err);
	}
	st->r = r;
}

static void *send_step_thread(void *arg)
{
	send_step(arg);
	return NULL;
}

/* Tells the controller and the logs how st went; records it when done. Returns st->r. */
static int finish_step(struct reconciler *rc, const struct reconcile_key *k, void *snapshot, struct step *st,
		       long *requeue_after_ms)
{
	const char *step = action_name(&st->a);
	if (rc->ops.performed)
		rc->ops.performed(rc->ctx, k, snapshot, &st->a, st->r, &st->err);
	if (st->r < 0) {
		log_warn(rc->ops.name, "%s: %s %s failed: %s", k->key, step, st->a.name, st->err.message);
	} else if (st->stale) {
		log_debug(rc->ops.name, "%s: %s %s: the cluster moved on; looking again", k->key, step, st->a.name);
		*requeue_after_ms = RECONCILE_STALE_MS;
	} else {
		record(rc, snapshot, &st->a);
		*requeue_after_ms = requeue_after(&st->a);
		if (changes_something(&st->a))
			crash_hook_after(&rc->crash, rc->ops.name, step);
	}
	return st->r;
}

/* Plans into st (action_init'ed) on snapshot, as of now. */
static void plan_step(struct reconciler *rc, const struct reconcile_key *k, void *snapshot, struct step *st)
{
	memset(st, 0, sizeof(*st));
	action_init(&st->a);
	st->rc = rc;
	st->k = k;
	st->snapshot = snapshot;
	rc->ops.plan(rc->ctx, k, snapshot, clock_wall_ms(), &st->a);
	if (rc->ops.prepare)
		rc->ops.prepare(rc->ctx, k, snapshot, &st->a);
	if (changes_something(&st->a))
		log_debug(rc->ops.name, "%s: %s %s", k->key, action_name(&st->a), st->a.name);
}

/*
 * (*steps)[0] planned; while the controller takes each step as done in the
 * snapshot (ops.batch), plans the next ones of the same name into *steps
 * (grown), up to RECONCILE_BATCH_MAX. Returns how many steps to send.
 */
static size_t gather(struct reconciler *rc, const struct reconcile_key *k, void *snapshot, struct step **steps)
{
	size_t n = 1, cap = 1;
	if (!rc->ops.batch || !changes_something(&(*steps)[0].a))
		return n;
	while (n < RECONCILE_BATCH_MAX && rc->ops.batch(rc->ctx, snapshot, &(*steps)[n - 1].a)) {
		if (n == cap) {
			cap *= 2;
			*steps = xrealloc(*steps, cap * sizeof(**steps));
		}
		struct step *next = &(*steps)[n];
		plan_step(rc, k, snapshot, next);
		if (strcmp(action_name(&next->a), action_name(&(*steps)[0].a))) {
			action_release(&next->a); /* another kind of step: planned again on the cache */
			break;
		}
		n++;
	}
	return n;
}

/*
 * Sends steps[0..n) at once (n <= RECONCILE_WAVE_MAX), one thread each but
 * the first, which goes on this one. A thread that cannot be made sends
 * its step here.
 */
static void send_wave(struct step *steps, size_t n)
{
	pthread_t threads[RECONCILE_WAVE_MAX];
	bool started[RECONCILE_WAVE_MAX] = {false};
	for (size_t i = 1; i < n; i++)
		started[i] = !pthread_create(&threads[i], NULL, send_step_thread, &steps[i]);
	send_step(&steps[0]);
	for (size_t i = 1; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			send_step(&steps[i]);
	}
}

static int reconcile(void *ctx, const char *key, long *requeue_after_ms)
{
	struct reconciler *rc = ctx;
	const char *slash = strchr(key, '/');
	if (!slash)
		return 0;
	char *ns = xstrndup(key, (size_t)(slash - key));
	struct reconcile_key k = {key, ns, slash + 1};
	void *snapshot = rc->ops.read(rc->ctx, &k);
	if (!snapshot) {
		free(ns);
		return 0;
	}
	struct step *steps = xmalloc(sizeof(*steps));
	plan_step(rc, &k, snapshot, &steps[0]);
	size_t n = gather(rc, &k, snapshot, &steps);
	/*
	 * Waves of 1, 2, 4... steps sent at once, as a StatefulSet's pods are
	 * made (slow start): a refusal (a quota, a webhook) stops them after a
	 * few requests, not n. Each step is then told and recorded as if alone.
	 */
	int r = 0;
	size_t sent = 0;
	for (size_t wave = 1; sent < n && r == 0; wave = wave * 2 > RECONCILE_WAVE_MAX ? RECONCILE_WAVE_MAX : wave * 2) {
		size_t m = n - sent < wave ? n - sent : wave;
		send_wave(steps + sent, m);
		for (size_t i = sent; i < sent + m; i++) {
			if (finish_step(rc, &k, snapshot, &steps[i], requeue_after_ms) < 0 && r == 0)
				r = -1;
			if (steps[i].stale && r == 0)
				r = 1; /* the cluster moved on: the rest is planned again from the cache */
		}
		sent += m;
	}
	if (r == 1)
		*requeue_after_ms = RECONCILE_STALE_MS;
	for (size_t i = 0; i < n; i++)
		action_release(&steps[i].a);
	free(steps);
	rc->ops.release(rc->ctx, snapshot);
	free(ns);
	return r < 0 ? -1 : 0;
}

static void free_reconciler(void *ctx)
{
	struct reconciler *rc = ctx;
	if (rc->free_ctx)
		rc->free_ctx(rc->ctx);
	free(rc);
}

struct controller *reconciler_new(const struct reconciler_ops *ops, void *ctx, void (*free_ctx)(void *ctx),
				  const struct reconciler_deps *deps)
{
	struct reconciler *rc = xcalloc(1, sizeof(*rc));
	rc->ops = *ops;
	rc->deps = *deps;
	rc->ctx = ctx;
	rc->free_ctx = free_ctx;
	crash_hook_init(&rc->crash);
	struct controller_options co = {.name = ops->name,
					.workers = deps->workers,
					.reconcile = reconcile,
					.ctx = rc,
					.free_ctx = free_reconciler};
	return controller_new(&co);
}
