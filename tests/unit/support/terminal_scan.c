#include "terminal_scan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the drawer's own sequence at p (ESC[2K, ESC[<n>A), or 0. */
static size_t drawer_sequence(const unsigned char *p, size_t left)
{
	if (left >= 4 && !memcmp(p, "\033[2K", 4))
		return 4;
	if (left < 3 || p[0] != 0x1b || p[1] != '[')
		return 0;
	size_t i = 2;
	while (i < left && p[i] >= '0' && p[i] <= '9')
		i++;
	return i > 2 && i < left && p[i] == 'A' ? i + 1 : 0;
}

/* Bytes of the well-formed UTF-8 sequence at p (2 to 4) with its code point in *cp, or 0. */
static size_t utf8_at(const unsigned char *p, size_t left, uint32_t *cp)
{
	size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
	uint32_t min = n == 4 ? 0x10000 : n == 3 ? 0x800 : 0x80;
	if (p[0] < 0xc0 || p[0] > 0xf4 || n > left)
		return 0;
	uint32_t c = p[0] & (n == 4 ? 0x07 : n == 3 ? 0x0f : 0x1f);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

long terminal_scan(const char *text, size_t len, bool drawer, const char **what)
{
	const unsigned char *s = (const unsigned char *)text;
	for (size_t i = 0; i < len;) {
		unsigned char b = s[i];
		size_t own = drawer ? drawer_sequence(s + i, len - i) : 0;
		if (own) {
			i += own;
			continue;
		}
		if (b == '\n' || (drawer && b == '\r') || (b >= 0x20 && b < 0x7f)) {
			i++;
			continue;
		}
		if (b < 0x20 || b == 0x7f) {
			*what = b == 0x1b ? "ESC" : b == 0x07 ? "BEL" : b == 0x7f ? "DEL" : "a C0 control";
			return (long)i;
		}
		uint32_t cp = 0;
		size_t n = utf8_at(s + i, len - i, &cp);
		if (!n) {
			*what = b == 0x9b ? "a raw 0x9b (CSI)" : b <= 0x9f ? "a raw C1 byte" : "a byte that is not UTF-8";
			return (long)i;
		}
		if (cp <= 0x9f) {
			*what = cp == 0x9b ? "U+009B (CSI)" : "a C1 control";
			return (long)i;
		}
		if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069)) {
			*what = "a bidirectional control";
			return (long)i;
		}
		i += n;
	}
	return -1;
}

void terminal_expect_safe(const char *label, const char *text, bool drawer)
{
	const char *what = NULL;
	size_t len = strlen(text);
	long at = terminal_scan(text, len, drawer, &what);
	if (at < 0)
		return;
	/* The output as the test's own terminal may show it: every byte outside printable ASCII as \xNN. */
	char *shown = malloc(len * 4 + 1), *o = shown;
	assert_non_null(shown);
	for (size_t i = 0; i < len; i++) {
		unsigned char b = (unsigned char)text[i];
		o += b == '\n' || (b >= 0x20 && b < 0x7f) ? sprintf(o, "%c", b) : sprintf(o, "\\x%02x", b);
	}
	fail_msg("%s: %s at byte %ld of:\n%s", label, what, at, shown);
}

char *terminal_dirty_text(const char *prefix)
{
	static const char dirty[] = "\033]0;x\007\033[2J\xc2\x9b" "2J\r\n";
	size_t n = strlen(prefix) + strlen(dirty), tail = 4096;
	char *text = malloc(n + tail + 1);
	assert_non_null(text);
	strcpy(text, prefix);
	strcat(text, dirty);
	memset(text + n, 'z', tail);
	text[n + tail] = '\0';
	return text;
}

void terminal_expect_safe_messages(const json_t *history, size_t max)
{
	size_t i;
	const json_t *e;
	json_array_foreach(history, i, e) {
		const char *msg = json_string_value(json_object_get(e, "message"));
		if (!msg)
			continue;
		terminal_expect_safe("an Event's message", msg, false);
		if (strlen(msg) > max)
			fail_msg("an Event's message of %zu bytes (at most %zu): %.80s...", strlen(msg), max, msg);
	}
}
