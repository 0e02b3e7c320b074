/*
 * Text from outside the operator made safe to show: annotations and Events
 * anyone who may write to a namespace sets, pods' termination messages,
 * kubelets' and Prometheus' error bodies. The plugin passes every piece of
 * cluster text it prints through here, and the operator every piece of
 * outside text it quotes into an Event, a status annotation or a log line.
 *
 * What a terminal acts on never passes:
 *  - C0 controls (ESC starts every escape sequence, BEL ends an OSC, CR
 *    and BS overwrite what was shown) and DEL;
 *  - C1 controls, U+0080..U+009F (xterm takes U+009B as CSI and U+009D as
 *    OSC, in UTF-8 as \xc2\x9b or as a lone byte 0x9b);
 *  - the bidirectional controls (Unicode's Bidi_Control: U+061C, U+200E,
 *    U+200F, U+202A..U+202E, U+2066..U+2069), which reorder what is shown
 *    so a line reads as something else ("Trojan Source", CVE-2021-42574);
 *  - bytes that are not well-formed UTF-8 (RFC 3629: no overlong forms,
 *    no surrogates, nothing past U+10FFFF, no cut sequences).
 * Whitespace controls (TAB, LF, VT, FF, CR) and U+2028, U+2029 become a
 * space: the text stays one line and reads as it did. Everything else
 * listed becomes U+FFFD, one per byte of a malformed sequence: the reader
 * sees that something was there, and U+FFFD is one column wide and
 * valid wherever UTF-8 is (an Event, JSON).
 *
 * Pure; thread-safe.
 */
#ifndef SOP_UTIL_TEXT_SANITIZE_H
#define SOP_UTIL_TEXT_SANITIZE_H

#include <stddef.h>

/* The most of one piece of outside text (a termination message, an error body) quoted into a message. */
#define TEXT_QUOTE_MAX 512

/*
 * s as one clean line (see above), as a new string; NULL for NULL. With
 * max > 0 it is at most max bytes: cut at a character boundary and ending
 * in "..." when longer, and only about max bytes of s are read. max 0:
 * no bound (for text already bounded, e.g. read from the API server).
 * Clean text comes back unchanged (the plugin's own words pass through).
 */
char *text_sanitize(const char *s, size_t max);

/*
 * s (NUL-terminated) with every byte that is not part of well-formed UTF-8
 * replaced by U+FFFD, controls kept: for JSON, which refuses invalid
 * UTF-8. A new string, or NULL when s is valid already.
 */
char *text_utf8_repair(const char *s);

/*
 * A JSON or YAML document as jansson's json_dumps writes it (C0 controls
 * inside strings already escaped) with DEL, the C1 and bidirectional
 * controls and U+2028, U+2029 written as \uXXXX escapes, and a byte that
 * is not UTF-8 as \uFFFD: it reads back as the same value, yet shows no
 * control on a terminal. New string.
 */
char *text_escape_json(const char *doc);

/* The length (1 to 4) of the well-formed UTF-8 sequence at s (NUL-terminated), or 0 when none starts there. */
size_t text_utf8_len(const char *s);

#endif
