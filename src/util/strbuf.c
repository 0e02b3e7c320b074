#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

void strbuf_init(struct strbuf *sb, size_t cap)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->alloc = 0;
	sb->cap = cap;
}

void strbuf_release(struct strbuf *sb)
{
	FREE_AND_NULL(sb->buf);
	sb->len = 0;
	sb->alloc = 0;
}

static int strbuf_reserve(struct strbuf *sb, size_t extra)
{
	if (sb->cap && (extra > sb->cap || sb->len > sb->cap - extra))
		return -1;
	size_t need = sb->len + extra + 1;
	if (need > sb->alloc) {
		size_t n = sb->alloc ? sb->alloc : 64;
		while (n < need)
			n *= 2;
		/* Doubling must not take a capped buffer past its cap (nearly 2x of it). */
		if (sb->cap && n > sb->cap + 1)
			n = sb->cap + 1;
		sb->buf = xrealloc(sb->buf, n);
		sb->alloc = n;
	}
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (strbuf_reserve(sb, len) < 0)
		return -1;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || strbuf_reserve(sb, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

void strbuf_appendf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || strbuf_reserve(sb, (size_t)n) < 0)
		abort();
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void strbuf_consume(struct strbuf *sb, size_t n)
{
	if (n >= sb->len) {
		strbuf_reset(sb);
		return;
	}
	memmove(sb->buf, sb->buf + n, sb->len - n);
	sb->len -= n;
	sb->buf[sb->len] = '\0';
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

char *strbuf_detach(struct strbuf *sb)
{
	char *s = sb->buf ? sb->buf : xstrdup("");
	sb->buf = NULL;
	sb->len = 0;
	sb->alloc = 0;
	return s;
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}
