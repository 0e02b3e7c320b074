/*
 * What /readyz answers (manager_ready): "can serve", never "leads". With
 * leader election on, a standby whose caches have synced is ready (a
 * Deployment of two is then Available and can roll out), and so is the
 * leader; the reason says which. Before the caches synced, or while a
 * ready check (the webhook) says no, it is not ready, with that reason.
 * The Lease comes from a canned API server on loopback: held by another
 * replica (this one stands by), or absent and then created (this one leads).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/leader.h"
#include "runtime/manager.h"
#include "util/clock.h"
#include "loopback.h"

#define LEASE(holder)                                                                                                  \
	"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"stateful-operator\","  \
	"\"namespace\":\"ops\",\"resourceVersion\":\"7\"},\"spec\":{\"holderIdentity\":\"" holder "\","                \
	"\"leaseDurationSeconds\":60,\"renewTime\":\"2026-11-28T10:00:00.000000Z\"}}"

static const char HELD_BY_OTHER[] = LEASE("op-other_0a0b0c0d0e0f");
static const char HELD_BY_ME[] = LEASE("op-me_010203040506");

struct fixture {
	struct canned_server *srv;
	struct kube_client *client;
	struct leader_elector *le;
	struct manager *m;
	pthread_t thread;
	int rc;
	atomic_bool webhook_ok;
};

/* A ready check standing for the webhook's: the test says when it can answer. */
static bool webhook_check(void *ctx, const char **why)
{
	struct fixture *f = ctx;
	if (atomic_load(&f->webhook_ok))
		return true;
	*why = "webhook: its caches have not synced";
	return false;
}

static void *run(void *arg)
{
	struct fixture *f = arg;
	f->rc = manager_run(f->m);
	return NULL;
}

/* A manager with leader election against srv (taken), a ready check; not running yet. */
static void fixture_init(struct fixture *f, struct canned_server *srv)
{
	memset(f, 0, sizeof(*f));
	f->srv = srv;
	f->client = loopback_client(canned_server_port(srv), NULL);
	/* A long lease: the standby must not find it expired while the test runs. */
	struct leader_options lo = {.lease_name = "stateful-operator",
				    .namespace = "ops",
				    .identity = "op-me_010203040506",
				    .lease_duration_ms = 60000,
				    .renew_deadline_ms = 40000,
				    .retry_period_ms = 50};
	f->le = leader_new(f->client, &lo);
	f->m = manager_new(f->client, NULL);
	manager_set_leader(f->m, f->le);
	manager_add_ready_check(f->m, webhook_check, f);
}

static void fixture_start(struct fixture *f)
{
	assert_int_equal(pthread_create(&f->thread, NULL, run, f), 0);
	double deadline = clock_mono_ms() + 10000;
	while (!manager_synced(f->m)) {
		assert_true(clock_mono_ms() < deadline);
		clock_sleep_ms(10);
	}
}

static void fixture_stop(struct fixture *f)
{
	manager_request_stop(f->m);
	assert_int_equal(pthread_join(f->thread, NULL), 0);
	assert_int_equal(f->rc, 0);
	manager_free(f->m);
	leader_free(f->le);
	kube_client_free(f->client);
	canned_server_stop(f->srv);
}

/* Waits until leader election has asked the server at least n times. */
static void wait_requests(struct fixture *f, int n)
{
	char head[512];
	double deadline = clock_mono_ms() + 10000;
	while (canned_server_last(f->srv, head, sizeof(head)) < n) {
		assert_true(clock_mono_ms() < deadline);
		clock_sleep_ms(10);
	}
}

static void test_standby_is_ready_once_synced_and_the_webhook_answers(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, canned_server_start("200 OK", "application/json", HELD_BY_OTHER));
	const char *why = NULL;
	assert_false(manager_ready(f.m, &why));
	assert_string_equal(why, "caches not synced");

	fixture_start(&f);
	/* Several tries at the Lease, each finding it held by the other replica. */
	wait_requests(&f, 3);
	assert_false(leader_is_leader(f.le));
	why = NULL;
	assert_false(manager_ready(f.m, &why));
	assert_string_equal(why, "webhook: its caches have not synced");

	atomic_store(&f.webhook_ok, true);
	why = NULL;
	assert_true(manager_ready(f.m, &why));
	assert_string_equal(why, "ok (standby: waiting for the Lease)");
	assert_false(leader_is_leader(f.le));
	fixture_stop(&f);
}

static void test_leader_is_ready_and_says_so(void **state)
{
	(void)state;
	/* No Lease yet (GET 404): this replica creates it, then renews it. */
	static const struct canned_answer script[] = {
		{"404 Not Found", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":404,"
				  "\"reason\":\"NotFound\",\"message\":\"not found\"}"},
		{"201 Created", HELD_BY_ME},
		{"200 OK", HELD_BY_ME},
	};
	struct fixture f;
	fixture_init(&f, canned_server_start_script(script, 3, "application/json"));
	atomic_store(&f.webhook_ok, true);
	fixture_start(&f);
	double deadline = clock_mono_ms() + 10000;
	while (!leader_is_leader(f.le)) {
		assert_true(clock_mono_ms() < deadline);
		clock_sleep_ms(10);
	}
	const char *why = NULL;
	assert_true(manager_ready(f.m, &why));
	assert_string_equal(why, "ok (leading)");
	fixture_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standby_is_ready_once_synced_and_the_webhook_answers),
		cmocka_unit_test(test_leader_is_ready_and_says_so),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
