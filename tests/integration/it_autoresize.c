/*
 * Autoresize's refusals and its source being down, on the real control
 * plane (kwok pods: no usage to read, which is the point here): a bad
 * policy gets a Warning that names the field, a policy for a template the
 * set does not have too, and a Prometheus that does not answer a
 * UsageUnavailable Warning; nothing is written to the set in any case.
 * Growth itself is shown on real volumes (tests/realnode/rn_autoresize.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"

struct t {
	struct kube_client *admin;
	char *ns;
	struct daemon d;
	bool running;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));
	t->admin = it_admin_client();
	t->ns = it_namespace_new(t->admin, "it-autoresize");
	*state = t;
	return 0;
}

/* Whatever the test's end: the operator stopped, the namespace gone. */
static int teardown(void **state)
{
	struct t *t = *state;
	if (t->running) {
		daemon_signal(&t->d, SIGTERM);
		daemon_wait_exit(&t->d, 10000);
		daemon_cleanup(&t->d);
	}
	it_namespace_delete(t->admin, t->ns);
	free(t->ns);
	kube_client_free(t->admin);
	free(t);
	return 0;
}

struct seen {
	struct t *t;
	const char *reason;
	const char *part;
};

/* Some Event of s->reason about the set says s->part (there may be several of one reason). */
static bool event_says(void *ctx)
{
	struct seen *s = ctx;
	char *selector = xasprintf("reason=%s,involvedObject.name=s", s->reason);
	json_t *events = it_events(s->t->admin, s->t->ns, selector);
	free(selector);
	bool ok = false;
	size_t i;
	const json_t *e;
	json_array_foreach(events, i, e) {
		const char *msg = kube_obj_str(e, "message");
		if (msg && strstr(msg, s->part)) {
			printf("[ event ] %s: %s\n", s->reason, msg);
			ok = true;
		}
	}
	json_decref(events);
	return ok;
}

static void expect_event(struct t *t, const char *reason, const char *part)
{
	struct seen s = {t, reason, part};
	if (!it_wait(event_says, &s, 60000))
		fail_msg("no %s Event saying \"%s\"; operator log:\n%s", reason, part, daemon_log(&t->d));
}

static void test_refusals_and_source_down_change_nothing(void **state)
{
	struct t *t = *state;
	json_t *sts = it_statefulset("s", 2, "Parallel", "data,logs");
	it_set_annotation(sts, "autoresize.stateful-operator.io/data", "used=80%, step=20, max=1Gi");
	it_set_annotation(sts, "autoresize.stateful-operator.io/cache", "used=80%, max=1Gi");
	it_set_annotation(sts, "autoresize.stateful-operator.io/logs", "used=80%, max=1Gi");
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULSETS, t->ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	json_decref(sts);
	it_wait_ready_and_bound(t->admin, t->ns, 2, 4, 60000);
	json_t *before = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, "s");

	/* Nothing listens on port 1: the source is down. */
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"),
			      "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			      "--autoresize-source", "prometheus", "--prometheus-url", "http://127.0.0.1:1",
			      "--autoresize-interval", "5s", NULL};
	daemon_start(&t->d, args, NULL);
	t->running = true;
	if (!daemon_wait_log(&t->d, "all caches synced", 20000))
		fail_msg("operator did not start:\n%s", daemon_log(&t->d));

	expect_event(t, "AutoResizePolicyInvalid", "autoresize.stateful-operator.io/data: step:");
	expect_event(t, "AutoResizePolicyInvalid", "there is no volumeClaimTemplate named cache");
	expect_event(t, "UsageUnavailable", "the claims of template logs");
	char *msg = it_event_message(t->admin, t->ns, "UsageUnavailable", "s");
	assert_non_null(strstr(msg, "127.0.0.1:1"));
	free(msg);

	/* A few polls later: said once each, not at every poll; the set is as it was. */
	it_sleep_ms(12000);
	json_t *events = it_events(t->admin, t->ns, "reason=UsageUnavailable");
	assert_int_equal(json_array_size(events), 1);
	assert_int_equal(kube_obj_int(json_array_get(events, 0), "count", NULL, 0), 1);
	json_decref(events);
	json_t *after = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, "s");
	assert_string_equal(kube_obj_str(after, "metadata.resourceVersion"), kube_obj_str(before, "metadata.resourceVersion"));
	json_decref(after);
	json_decref(before);
	daemon_stop_operator(&t->d);
	t->running = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals_and_source_down_change_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
