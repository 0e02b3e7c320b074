/*
 * Outside text made safe to show (util/text_sanitize.h), class by class:
 * C0 controls (whitespace ones a space, the rest U+FFFD), DEL, C1 as
 * UTF-8 and as lone bytes, bidirectional controls, line and paragraph
 * separators, malformed UTF-8 (cut, overlong, surrogates, past
 * U+10FFFF); the bound and its cut at a character boundary; clean text
 * unchanged; the JSON escaping that reads back the same; and the repair
 * of invalid UTF-8 that keeps controls (for JSON logs).
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

#include "util/text_sanitize.h"

#define FFFD "\xef\xbf\xbd" /* U+FFFD REPLACEMENT CHARACTER */

struct sanitize_case {
	const char *why;
	const char *in;
	const char *want;
};

static const struct sanitize_case cases[] = {
	/* What passes as it is. */
	{"plain ASCII", "Copying 2/3: web-1", "Copying 2/3: web-1"},
	{"empty", "", ""},
	{"UTF-8 letters, symbols, emoji", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	{"U+00A0 (first past C1)", "a\xc2\xa0" "b", "a\xc2\xa0" "b"},
	{"U+FFFD itself", FFFD, FFFD},
	{"right-to-left letters (not controls)", "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d", "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d"},
	{"U+10FFFF, the last code point", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},
	/* C0: whitespace becomes a space, the rest U+FFFD. */
	{"TAB LF VT FF CR", "a\tb\nc\vd\fe\rf", "a b c d e f"},
	{"CRLF", "one\r\ntwo", "one  two"},
	{"ESC of a CSI", "\x1b[2J", FFFD "[2J"},
	{"OSC title, BEL-terminated", "\x1b]0;x\x07", FFFD "]0;x" FFFD},
	{"BS overwriting", "ok\b\bNO", "ok" FFFD FFFD "NO"},
	{"NUL ends it (C string)", "a\0b", "a"},
	{"0x01 and 0x1f", "\x01x\x1f", FFFD "x" FFFD},
	{"DEL", "a\x7f" "b", "a" FFFD "b"},
	/* C1 as UTF-8: U+0080..U+009F. */
	{"U+0080", "\xc2\x80", FFFD},
	{"U+0085 NEL", "a\xc2\x85" "b", "a" FFFD "b"},
	{"U+009B CSI", "\xc2\x9b" "2J", FFFD "2J"},
	{"U+009D OSC", "\xc2\x9d" "0;x\xc2\x9c", FFFD "0;x" FFFD},
	{"U+009F", "\xc2\x9f", FFFD},
	/* C1 as lone bytes: not UTF-8 at all. */
	{"raw 0x9b", "\x9b" "2J", FFFD "2J"},
	{"raw 0x80..0x9f", "\x80\x90\x9f", FFFD FFFD FFFD},
	/* Bidirectional controls (Bidi_Control). */
	{"U+202E RLO", "abc\xe2\x80\xae" "fed", "abc" FFFD "fed"},
	{"U+202A..U+202D", "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", FFFD FFFD FFFD FFFD},
	{"U+2066..U+2069 isolates", "\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", FFFD FFFD FFFD FFFD},
	{"U+200E U+200F marks", "\xe2\x80\x8e\xe2\x80\x8f", FFFD FFFD},
	{"U+061C ALM", "\xd8\x9c", FFFD},
	{"U+2065 (unassigned, next to the isolates) passes", "\xe2\x81\xa5", "\xe2\x81\xa5"},
	/* Line and paragraph separators: a space. */
	{"U+2028 U+2029", "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c", "a b c"},
	/* Malformed UTF-8: one U+FFFD per byte. */
	{"cut 2-byte", "caf\xc3", "caf" FFFD},
	{"cut 3-byte", "x\xe2\x82", "x" FFFD FFFD},
	{"cut 4-byte", "\xf0\x9f\x98", FFFD FFFD FFFD},
	{"lone continuation", "\xbf", FFFD},
	{"overlong '/' (C0 AF)", "\xc0\xaf", FFFD FFFD},
	{"overlong ESC (C0 9B)", "\xc0\x9b", FFFD FFFD},
	{"overlong 3-byte", "\xe0\x80\xaf", FFFD FFFD FFFD},
	{"overlong 4-byte", "\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD},
	{"surrogate U+D800", "\xed\xa0\x80", FFFD FFFD FFFD},
	{"past U+10FFFF", "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},
	{"F5..FF", "\xf5\xfe\xff", FFFD FFFD FFFD},
	{"a broken lead then a good character", "\xc3\xc3\xa9", FFFD "\xc3\xa9"},
	/* The reproducer: a resize-status and an Event message. */
	{"issue 27", "\x1b]0;x\x07\x1b[2J\xc2\x9b" "2J done", FFFD "]0;x" FFFD FFFD "[2J" FFFD "2J done"},
};

static void test_classes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = text_sanitize(cases[i].in, 0);
		if (strcmp(got, cases[i].want))
			fail_msg("%s: got \"%s\", want \"%s\"", cases[i].why, got, cases[i].want);
		/* Clean text stays as it is. */
		char *again = text_sanitize(got, 0);
		if (strcmp(again, got))
			fail_msg("%s: not stable: \"%s\" then \"%s\"", cases[i].why, got, again);
		free(again);
		free(got);
	}
	assert_null(text_sanitize(NULL, 0));
	assert_null(text_sanitize(NULL, 10));
}

/* No byte a terminal acts on: C0, DEL, a C1 byte (raw or UTF-8), or a bidi control. */
static void expect_inert(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fail_msg("control 0x%02x at %zu of \"%s\"", *p, (size_t)(p - (const unsigned char *)s), s);
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			fail_msg("C1 U+00%02X in \"%s\"", p[1], s);
	}
	assert_null(strstr(s, "\xe2\x80\xae"));
	assert_null(strstr(s, "\xe2\x81\xa6"));
	json_t *j = json_string(s); /* valid UTF-8, or NULL */
	assert_non_null(j);
	json_decref(j);
}

/* Every byte, and every byte after each lead byte: never a control out, never invalid UTF-8. */
static void test_every_byte(void **state)
{
	(void)state;
	char in[4] = {0};
	for (int a = 1; a < 256; a++) {
		for (int b = 0; b < 256; b++) {
			in[0] = (char)a;
			in[1] = (char)b;
			in[2] = (char)0x9b;
			char *got = text_sanitize(in, 0);
			expect_inert(got);
			free(got);
		}
	}
}

static void test_bound(void **state)
{
	(void)state;
	struct {
		const char *in;
		size_t max;
		const char *want;
	} bounded[] = {
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ..."},
		/* The cut never splits a character: U+00E9 is 2 bytes, U+FFFD 3. */
		{"abcd\xc3\xa9" "fgh", 8, "abcd..."},
		{"abc\xc3\xa9" "fghij", 8, "abc\xc3\xa9..."},
		{"\x1b\x1b\x1b\x1b", 8, FFFD "..."},
		{"\x1b\x1b\x1b\x1b", 9, FFFD FFFD "..."},
		{"\x1b\x1b\x1b", 9, FFFD FFFD FFFD},
		/* No room for the mark: a plain cut. */
		{"abcdef", 3, "abc"},
		{"\xc3\xa9\xc3\xa9", 3, "\xc3\xa9"},
	};
	for (size_t i = 0; i < sizeof(bounded) / sizeof(bounded[0]); i++) {
		char *got = text_sanitize(bounded[i].in, bounded[i].max);
		if (strcmp(got, bounded[i].want))
			fail_msg("\"%s\" in %zu: got \"%s\", want \"%s\"", bounded[i].in, bounded[i].max, got, bounded[i].want);
		assert_true(strlen(got) <= bounded[i].max);
		free(got);
	}
	/* A megabyte of escapes costs what the bound allows. */
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 0x1b, n);
	big[n] = '\0';
	char *got = text_sanitize(big, TEXT_QUOTE_MAX);
	assert_true(strlen(got) <= TEXT_QUOTE_MAX);
	assert_true(strlen(got) > TEXT_QUOTE_MAX - 6);
	expect_inert(got);
	free(got);
	got = text_sanitize(big, 0);
	assert_int_equal(strlen(got), 3 * n);
	free(got);
	free(big);
}

/* JSON and YAML output: the same value when read back, nothing a terminal acts on when shown. */
static void test_escape_json(void **state)
{
	(void)state;
	const char *const values[] = {
		"\x1b]0;x\x07\x1b[2J\xc2\x9b" "2J",
		"a\x7f" "b\xc2\x85" "c\xe2\x80\xae" "d\xe2\x80\xa8" "e\xd8\x9c",
		"caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\ /",
		"",
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		json_t *doc = json_pack("{s:[s, i], s:s}", "k\xc2\x9b", values[i], 1, "v", values[i]);
		char *text = json_dumps(doc, JSON_INDENT(2));
		char *shown = text_escape_json(text);
		/* The layout's newlines stay; nothing else below 0x20, no DEL, no C1, no bidi. */
		for (const unsigned char *p = (const unsigned char *)shown; *p; p++)
			if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
				fail_msg("value %zu: byte 0x%02x in %s", i, *p, shown);
		assert_null(strstr(shown, "\xe2\x80\xae"));
		assert_null(strstr(shown, "\xe2\x80\xa8"));
		json_error_t e;
		json_t *back = json_loads(shown, 0, &e);
		if (!back || !json_equal(back, doc))
			fail_msg("value %zu does not read back: %s: %s", i, back ? "differs" : e.text, shown);
		json_decref(back);
		free(shown);
		free(text);
		json_decref(doc);
	}
	char *s = text_escape_json("\"\xc2\x9b\x7f\"");
	assert_string_equal(s, "\"\\u009B\\u007F\"");
	free(s);
	/* A byte that is not UTF-8 (jansson never writes one): U+FFFD. */
	s = text_escape_json("\"\x9b\"");
	assert_string_equal(s, "\"\\uFFFD\"");
	free(s);
}

static void test_utf8_repair(void **state)
{
	(void)state;
	assert_null(text_utf8_repair("valid \x1b\n\xc2\x9b caf\xc3\xa9"));
	char *s = text_utf8_repair("caf\xc3");
	assert_string_equal(s, "caf" FFFD);
	free(s);
	s = text_utf8_repair("\x1b\xed\xa0\x80\n");
	assert_string_equal(s, "\x1b" FFFD FFFD FFFD "\n");
	free(s);
	assert_int_equal(text_utf8_len("a"), 1);
	assert_int_equal(text_utf8_len("\xc3\xa9"), 2);
	assert_int_equal(text_utf8_len("\xe2\x82\xac"), 3);
	assert_int_equal(text_utf8_len("\xf0\x9f\x98\x80"), 4);
	assert_int_equal(text_utf8_len("\xc3"), 0);
	assert_int_equal(text_utf8_len("\xe2\x82"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_escape_json),
		cmocka_unit_test(test_utf8_repair),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
