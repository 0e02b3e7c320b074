#include "util/text_sanitize.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/xalloc.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

size_t text_utf8_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (s[0] == 0xe0)
			lo = 0xa0; /* overlong below */
		else if (s[0] == 0xed)
			hi = 0x9f; /* surrogates above */
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f; /* past U+10FFFF above */
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/* The code point of the well-formed sequence of n bytes at s. */
static uint32_t decode(const unsigned char *s, size_t n)
{
	switch (n) {
	case 1: return s[0];
	case 2: return (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
	case 3: return (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
	default: return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 | (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
	}
}

enum shown { SHOWN_AS_IS, SHOWN_AS_SPACE, SHOWN_REPLACED };

static enum shown shown_as(uint32_t c)
{
	if (c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == 0x2028 || c == 0x2029)
		return SHOWN_AS_SPACE;
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
		return SHOWN_REPLACED;
	if (c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
		return SHOWN_REPLACED;
	return SHOWN_AS_IS;
}

char *text_sanitize(const char *s, size_t max)
{
	if (!s)
		return NULL;
	/* Each byte of s gives at most 3 (U+FFFD); with a bound, max and one character past it. */
	size_t room = max ? max + 4 : strlen(s) * 3;
	char *out = xmalloc(room + 1);
	size_t len = 0;
	bool cut = false;
	for (const char *p = s; *p;) {
		size_t n = text_utf8_len(p);
		const char *piece = p;
		size_t plen = n;
		enum shown how = n ? shown_as(decode((const unsigned char *)p, n)) : SHOWN_REPLACED;
		if (how == SHOWN_AS_SPACE) {
			piece = " ";
			plen = 1;
		} else if (how == SHOWN_REPLACED) {
			piece = REPLACEMENT;
			plen = 3;
		}
		if (max && len + plen > max) {
			cut = true;
			break;
		}
		memcpy(out + len, piece, plen);
		len += plen;
		p += n ? n : 1;
	}
	if (cut) {
		const char *mark = max >= 4 ? "..." : "";
		size_t keep = max - strlen(mark);
		/* Back to a character boundary: out is well-formed UTF-8 by now. */
		while (len > keep) {
			len--;
			while (len > 0 && ((unsigned char)out[len] & 0xc0) == 0x80)
				len--;
		}
		memcpy(out + len, mark, strlen(mark));
		len += strlen(mark);
	}
	out[len] = '\0';
	return out;
}

char *text_utf8_repair(const char *s)
{
	size_t i = 0, n;
	while (s[i] && (n = text_utf8_len(s + i)))
		i += n;
	if (!s[i])
		return NULL;
	char *out = xmalloc(strlen(s) * 3 + 1), *o = out;
	memcpy(o, s, i);
	o += i;
	while (s[i]) {
		n = text_utf8_len(s + i);
		if (n) {
			memcpy(o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, REPLACEMENT, 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return out;
}

char *text_escape_json(const char *doc)
{
	/* "\uXXXX" is 6 bytes for at least 1 of the input. */
	char *out = xmalloc(strlen(doc) * 6 + 1), *o = out;
	for (const char *p = doc; *p;) {
		size_t n = text_utf8_len(p);
		uint32_t c = n ? decode((const unsigned char *)p, n) : 0xfffd;
		/* The layout's newlines are the document's own: jansson escapes those inside strings. */
		if (n && (c == '\n' || shown_as(c) == SHOWN_AS_IS)) {
			memcpy(o, p, n);
			o += n;
		} else {
			o += sprintf(o, "\\u%04X", (unsigned)c); /* as jansson writes its own */
		}
		p += n ? n : 1;
	}
	*o = '\0';
	return out;
}
