/*
 * Allocation that never returns NULL: the daemon treats out-of-memory as
 * fatal and aborts in one place (like git's xmalloc and redis' zmalloc),
 * so no caller carries a half-handled OOM path. Thread-safe.
 */
#ifndef SOP_UTIL_XALLOC_H
#define SOP_UTIL_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Grows an array to hold at least 'need' items of 'item' bytes; *cap is updated. */
void *xgrow(void *ptr, size_t *cap, size_t need, size_t item);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a new string formatted like printf. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Frees *pp and sets it to NULL, so no dangling pointer stays reachable. */
#define FREE_AND_NULL(p) \
	do {             \
		free(p);     \
		(p) = NULL;  \
	} while (0)

#endif
