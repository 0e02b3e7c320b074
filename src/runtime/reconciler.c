#include "runtime/reconciler.h"

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
	struct action a;
	action_init(&a);
	rc->ops.plan(rc->ctx, &k, snapshot, clock_wall_ms(), &a);
	if (rc->ops.prepare)
		rc->ops.prepare(rc->ctx, &k, snapshot, &a);
	const char *step = action_name(&a);
	if (changes_something(&a))
		log_debug(rc->ops.name, "%s: %s %s", key, step, a.name);

	struct kube_error err = {0};
	bool stale = false;
	int r = changes_something(&a) && rc->ops.check ? rc->ops.check(rc->ctx, &k, snapshot, &a, &err) : RECONCILE_GO;
	if (r == RECONCILE_MOVED_ON) {
		stale = true;
		r = 0;
	} else if (r == RECONCILE_DONE) {
		r = 0;
	} else if (r == RECONCILE_GO) {
		r = a.verb == ACTION_OWN ? rc->ops.perform_own(rc->ctx, &k, snapshot, &a, &stale, &err)
					 : action_perform(rc->deps.client, ns, &a, &stale, &err);
	}
	if (rc->ops.performed)
		rc->ops.performed(rc->ctx, &k, snapshot, &a, r, &err);
	if (r < 0) {
		log_warn(rc->ops.name, "%s: %s %s failed: %s", key, step, a.name, err.message);
	} else if (stale) {
		log_debug(rc->ops.name, "%s: %s %s: the cluster moved on; looking again", key, step, a.name);
		*requeue_after_ms = RECONCILE_STALE_MS;
	} else {
		record(rc, snapshot, &a);
		*requeue_after_ms = requeue_after(&a);
		if (changes_something(&a))
			crash_hook_after(&rc->crash, rc->ops.name, step);
	}
	action_release(&a);
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
