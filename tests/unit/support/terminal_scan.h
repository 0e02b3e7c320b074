/*
 * The tests' own judge of what reaches a terminal (independent of
 * util/text_sanitize.c, which it checks): the first byte of some output
 * that a terminal would act on, with what it is. Used by the unit tests
 * of the plugin and the operator's messages, and by it_plugin.
 */
#ifndef SOP_TEST_TERMINAL_SCAN_H
#define SOP_TEST_TERMINAL_SCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * A tenant's text as issue 27 measured it: prefix, a window title
 * (ESC ] 0;x BEL), clear screen as ESC [2J and as U+009B 2J, CR LF, then
 * 4 KiB of 'z' (the kubelet keeps that much of a termination message).
 * New string.
 */
char *terminal_dirty_text(const char *prefix);

/*
 * Scans len bytes of text. Unsafe: any C0 control but LF, DEL, a C1
 * control (U+0080..U+009F in UTF-8, or a byte 0x80..0x9f that is not part
 * of a well-formed sequence, as 0x9b alone), any other byte that is not
 * well-formed UTF-8, and the bidirectional controls U+061C, U+200E,
 * U+200F, U+202A..U+202E, U+2066..U+2069. With drawer, the escape
 * sequences kubectl-stateful's resize --wait writes itself on a terminal
 * (ESC[2K, ESC[<n>A) and CR are allowed. Returns the offset of the first
 * unsafe byte, or -1, with *what (static) naming it.
 */
long terminal_scan(const char *text, size_t len, bool drawer, const char **what);

/* Fails the test (cmocka) when text (NUL-terminated) holds an unsafe byte, naming it, where, and label. */
void terminal_expect_safe(const char *label, const char *text, bool drawer);

/* The same for the "message" of every object in history (the simulators' steps), each at most max bytes. */
void terminal_expect_safe_messages(const json_t *history, size_t max);

#endif
