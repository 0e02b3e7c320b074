/*
 * Event messages (runtime/events.c) quote outside text: a pod's
 * termination message, the API's or a kubelet's error. Whatever a caller
 * formats, the message recorded is one clean line (no control a terminal
 * acts on) of at most EVENT_MESSAGE_MAX bytes. Seen through the JSON log
 * line every Event also makes, which keeps the message as recorded (the
 * API server here refuses the connection).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loopback.h"
#include "output_capture.h"
#include "runtime/events.h"
#include "terminal_scan.h"
#include "util/log.h"
#include "util/xalloc.h"

struct record_call {
	struct event_recorder *r;
	const json_t *obj;
	const char *text;
};

static void record(void *ctx)
{
	const struct record_call *c = ctx;
	assert_int_equal(event_record(c->r, c->obj, EVENT_WARNING, "CleanupFailed", "pod said: %s", c->text), -1);
}

/* Records one Warning about obj with message text; the message as the Event's log line shows it (new string). */
static char *recorded(struct event_recorder *r, const json_t *obj, const char *text)
{
	log_setup(LOG_INFO, LOG_FORMAT_JSON);
	struct record_call c = {r, obj, text};
	char *lines = output_capture(record, &c, false, true);
	char *msg = NULL;
	for (char *line = strtok(lines, "\n"); line && !msg; line = strtok(NULL, "\n")) {
		json_t *o = json_loads(line, 0, NULL);
		const char *m = json_string_value(json_object_get(o, "msg"));
		const char *prefix = "StatefulSet shop/web: CleanupFailed: ";
		if (m && !strncmp(m, prefix, strlen(prefix)))
			msg = xstrdup(m + strlen(prefix));
		json_decref(o);
	}
	free(lines);
	if (!msg)
		fail_msg("no log line of the Event");
	return msg;
}

static void test_message_clean_and_bounded(void **state)
{
	(void)state;
	int port;
	close(loopback_listen(1, &port)); /* nobody listens: the create fails at once */
	struct kube_client_options o = {.max_retries = -1};
	struct kube_client *client = loopback_client(port, &o);
	struct event_recorder *r = event_recorder_new(client, "stateful-operator", "test");
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "kind", "StatefulSet", "apiVersion", "apps/v1", "metadata",
				"name", "web", "namespace", "shop", "uid", "u-1");

	/* Issue 27's reproducer: a title (OSC ... BEL), clear screen as ESC [ and as U+009B; and CR LF, DEL, an RLO. */
	char *msg = recorded(r, obj, "\033]0;x\007\033[2J\xc2\x9b" "2J\r\nnext\x7f\xe2\x80\xae" "end");
	terminal_expect_safe("Event message", msg, false);
	assert_non_null(strstr(msg, "pod said: "));
	assert_non_null(strstr(msg, "next"));
	assert_non_null(strstr(msg, "end"));
	free(msg);

	/* The kubelet keeps 4 KiB of a termination message; an API error can be longer. */
	size_t n = 64 * 1024;
	char *big = xmalloc(n + 1);
	memset(big, 'y', n);
	big[n] = '\0';
	msg = recorded(r, obj, big);
	if (strlen(msg) > EVENT_MESSAGE_MAX)
		fail_msg("an Event message of %zu bytes", strlen(msg));
	assert_true(strlen(msg) > EVENT_MESSAGE_MAX - 8);
	free(msg);
	free(big);

	json_decref(obj);
	event_recorder_free(r);
	kube_client_free(client);
	log_setup(LOG_INFO, LOG_FORMAT_TEXT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_message_clean_and_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
