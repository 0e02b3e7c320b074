/*
 * When the webhook answers: only once every cache it reads has synced (a
 * review may still reach a replica that is starting, and an empty cache
 * would deny a class that exists).
 * Caches against a canned API server on loopback that answers every
 * request with an empty list: one started (it syncs), one never started.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "runtime/informer.h"
#include "webhook/webhook.h"
#include "loopback.h"

static const char EMPTY_LIST[] = "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},"
				 "\"items\":[]}";

static void test_answers_once_every_cache_made_has_synced(void **state)
{
	(void)state;
	struct canned_server *srv = canned_server_start("200 OK", "application/json", EMPTY_LIST);
	struct kube_client *client = loopback_client(canned_server_port(srv), NULL);
	struct informer_options sc = {.resource = &KUBE_STORAGECLASSES};
	struct informer_options vac = {.resource = &KUBE_VOLUMEATTRIBUTESCLASSES};
	struct informer *synced = informer_new(client, &sc);
	struct informer *starting = informer_new(client, &vac);
	assert_int_equal(informer_start(synced), 0);
	assert_true(informer_wait_synced(synced, 10000));
	const char *waiting = "?";

	/* One not synced yet: no answer, and it is named. NULL (a cache not made, namespace scope) is skipped. */
	struct informer *const some[] = {NULL, synced, starting};
	assert_false(webhook_caches_synced(some, 3, &waiting));
	assert_string_equal(waiting, "volumeattributesclasses");

	struct informer *const ready[] = {synced, NULL};
	assert_true(webhook_caches_synced(ready, 2, &waiting));
	assert_null(waiting);

	struct informer *const none[] = {NULL};
	waiting = "?";
	assert_true(webhook_caches_synced(none, 1, &waiting));
	assert_null(waiting);

	informer_free(starting);
	informer_free(synced);
	kube_client_free(client);
	canned_server_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers_once_every_cache_made_has_synced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
