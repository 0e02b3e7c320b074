/*
 * A growing byte buffer with a size cap (like curl's dynbuf): data that
 * arrives from the network cannot grow it without bound. Always
 * NUL-terminated; a capped buffer never allocates more than cap + 1 bytes.
 * Not thread-safe; one owner at a time.
 */
#ifndef SOP_UTIL_STRBUF_H
#define SOP_UTIL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *buf;   /* NUL-terminated; NULL until the first append */
	size_t len;
	size_t alloc;
	size_t cap;  /* largest len allowed; 0 = unlimited */
};

#define STRBUF_INIT {NULL, 0, 0, 0}

void strbuf_init(struct strbuf *sb, size_t cap);
void strbuf_release(struct strbuf *sb);
/* Returns 0, or -1 when the append would pass the cap (nothing appended). */
int strbuf_add(struct strbuf *sb, const void *data, size_t len) __attribute__((warn_unused_result));
int strbuf_addstr(struct strbuf *sb, const char *s) __attribute__((warn_unused_result));
int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), warn_unused_result));
/*
 * strbuf_addf for a buffer without a cap (strbuf_init(sb, 0) or
 * STRBUF_INIT), where appending cannot be refused: for building messages.
 * Aborts when called on a capped buffer that is full (a programming error).
 */
void strbuf_appendf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes. */
void strbuf_consume(struct strbuf *sb, size_t n);
void strbuf_reset(struct strbuf *sb);
/* Returns the string (caller frees; never NULL) and leaves sb empty. */
char *strbuf_detach(struct strbuf *sb);
/* The contents as a C string; "" when empty. Borrowed, valid until the next change. */
const char *strbuf_str(const struct strbuf *sb);

#endif
