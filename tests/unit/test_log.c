/*
 * Log lines: a JSON line is always one valid JSON object that keeps the
 * message, even when the message is not valid UTF-8 (a "%.200s" cut in the
 * middle of a character, bytes from the network).
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

#include "util/log.h"

/* Runs log_msg(level, "test", "%s", msg) with stderr sent to a file; returns the line written (new). */
static char *capture(enum log_level level, const char *msg)
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	int saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	log_msg(level, "test", "%s", msg);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	off_t len = lseek(fileno(tmp), 0, SEEK_END);
	assert_true(len >= 0);
	char *line = calloc(1, (size_t)len + 1);
	assert_non_null(line);
	assert_int_equal(pread(fileno(tmp), line, (size_t)len, 0), (ssize_t)len);
	fclose(tmp);
	return line;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_valid_utf8_kept_as_is),
		cmocka_unit_test(test_json_invalid_utf8_is_replaced),
		cmocka_unit_test(test_text_format_unchanged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
