/*
 * Log lines: a JSON line is always one valid JSON object that keeps the
 * message, even when the message is not valid UTF-8 (a "%.200s" cut in the
 * middle of a character, bytes from the network), and neither a JSON nor
 * a text line carries a control a terminal would act on.
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

#include "output_capture.h"
#include "terminal_scan.h"
#include "util/log.h"

struct log_call {
	enum log_level level;
	const char *msg;
};

static void log_one(void *ctx)
{
	const struct log_call *c = ctx;
	log_msg(c->level, "test", "%s", c->msg);
}

/* Runs log_msg(level, "test", "%s", msg) with stderr sent to a file; returns the line written (new). */
static char *capture(enum log_level level, const char *msg)
{
	struct log_call c = {level, msg};
	return output_capture(log_one, &c, false, true);
}

/* The line must be one JSON object, with "msg" equal to want. */
static void expect_json_msg(const char *msg, const char *want)
{
	char *line = capture(LOG_WARN, msg);
	size_t len = strlen(line);
	assert_true(len > 1 && line[len - 1] == '\n');
	assert_null(memchr(line, '\n', len - 1)); /* one line */
	json_error_t jerr;
	json_t *o = json_loads(line, 0, &jerr);
	if (!o)
		fail_msg("not JSON: %s: %s", jerr.text, line);
	const char *got = json_string_value(json_object_get(o, "msg"));
	if (!got || strcmp(got, want))
		fail_msg("msg is \"%s\", want \"%s\" (line %s)", got ? got : "(none)", want, line);
	const char *level = json_string_value(json_object_get(o, "level"));
	const char *logger = json_string_value(json_object_get(o, "logger"));
	assert_true(level && !strcmp(level, "warn"));
	assert_true(logger && !strcmp(logger, "test"));
	assert_non_null(json_string_value(json_object_get(o, "ts")));
	json_decref(o);
	free(line);
}

#define FFFD "\xef\xbf\xbd" /* U+FFFD REPLACEMENT CHARACTER */

static void test_json_valid_utf8_kept_as_is(void **state)
{
	(void)state;
	log_setup(LOG_INFO, LOG_FORMAT_JSON);
	expect_json_msg("plain", "plain");
	expect_json_msg("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \"q\"\n\t", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \"q\"\n\t");
	expect_json_msg("", "");
}

static void test_json_invalid_utf8_is_replaced(void **state)
{
	(void)state;
	log_setup(LOG_INFO, LOG_FORMAT_JSON);
	/* A "%.4s" cut in the middle of "é": the rest of the message stays. */
	expect_json_msg("caf\xc3", "caf" FFFD);
	expect_json_msg("pvc data-0: \xe2\x82", "pvc data-0: " FFFD FFFD);
	expect_json_msg("a\xff" "b\xfe" "c", "a" FFFD "b" FFFD "c");
	/* Lone continuation bytes, overlong forms, surrogates, past U+10FFFF. */
	expect_json_msg("\x80x", FFFD "x");
	expect_json_msg("\xc0\xaf", FFFD FFFD);
	expect_json_msg("\xe0\x80\xaf", FFFD FFFD FFFD);
	expect_json_msg("\xed\xa0\x80", FFFD FFFD FFFD);
	expect_json_msg("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD);
	/* A valid character right after a broken one is kept. */
	expect_json_msg("\xc3\xc3\xa9", FFFD "\xc3\xa9");
	expect_json_msg("\xf0\x9f\x98", FFFD FFFD FFFD);
}

static void test_text_format_unchanged(void **state)
{
	(void)state;
	log_setup(LOG_INFO, LOG_FORMAT_TEXT);
	char *line = capture(LOG_INFO, "two\nlines");
	assert_non_null(strstr(line, " info  test: two lines\n"));
	free(line);
	line = capture(LOG_DEBUG, "hidden");
	assert_string_equal(line, "");
	free(line);
}

/* A message quoting a tenant's text (issue 27): escapes, BEL, U+009B, DEL, an RLO. */
#define DIRTY "\033]0;x\007\033[2J\xc2\x9b" "2J\x7f\xe2\x80\xae"

/* `kubectl logs` prints the operator's lines to a terminal: neither format replays the controls. */
static void test_controls_never_reach_the_terminal(void **state)
{
	(void)state;
	log_setup(LOG_INFO, LOG_FORMAT_TEXT);
	char *line = capture(LOG_WARN, "pod said: " DIRTY " end");
	size_t len = strlen(line);
	terminal_expect_safe("text log line", line, false);
	assert_null(memchr(line, '\n', len - 1));
	assert_non_null(strstr(line, "pod said: "));
	assert_non_null(strstr(line, "2J"));
	assert_non_null(strstr(line, " end\n"));
	free(line);

	/* JSON keeps the message as it was (a program reads it back), as \u escapes. */
	log_setup(LOG_INFO, LOG_FORMAT_JSON);
	line = capture(LOG_WARN, "pod said: " DIRTY " end\tand\nmore");
	terminal_expect_safe("JSON log line", line, false);
	free(line);
	expect_json_msg("pod said: " DIRTY " end\tand\nmore", "pod said: " DIRTY " end\tand\nmore");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_valid_utf8_kept_as_is),
		cmocka_unit_test(test_json_invalid_utf8_is_replaced),
		cmocka_unit_test(test_text_format_unchanged),
		cmocka_unit_test(test_controls_never_reach_the_terminal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
