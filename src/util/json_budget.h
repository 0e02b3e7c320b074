/*
 * A budget in bytes of heap for what jansson allocates while a document is
 * parsed: the memory the tree will take, priced as glibc's malloc takes it
 * (the request, its 8-byte header, rounded up to 16, at least 32).
 *
 * Why count allocations, not the text: jansson spends about 80 bytes of
 * heap per byte of "{}"-heavy JSON (an object, its hashtable's buckets),
 * a few per byte of a long string, so no limit on the text or on a count
 * of values bounds memory for every shape; a prescan that prices
 * containers would copy jansson's internals and drift with its versions.
 * jansson's allocator hook sees every byte it asks for.
 *
 * How: a constructor installs the hook once, before main and so before
 * any thread (json_set_alloc_funcs is not thread-safe). The hook is
 * malloc() unless the calling thread has a budget open, and the free hook
 * is plain free(), so it is harmless to everything else that uses jansson.
 * A budget charges every allocation made while it is open and never
 * credits a free, so what it charges bounds the parse's peak too (the
 * lexer's buffer grows by doubling: a string is charged about three times
 * its length). It never fails an allocation: jansson does not survive
 * every failed one (its lexer ignores a failed growth of its buffer and
 * then reads past the end). It only says overrun; json_load_limited then
 * stops feeding jansson text, so the parse ends there (see headroom).
 *
 * Threads: any thread; a budget belongs to the thread that opened it.
 */
#ifndef SOP_UTIL_JSON_BUDGET_H
#define SOP_UTIL_JSON_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

/* Text handed to jansson at a time while a budget is open (json_load_limited). */
#define JSON_BUDGET_CHUNK 256

struct json_budget {
	size_t limit;   /* bytes */
	size_t charged; /* bytes charged so far */
	bool overrun;   /* charged has passed limit */
};

/* Opens b (the caller's, e.g. on its stack) on this thread. One at a time per thread. */
void json_budget_open(struct json_budget *b, size_t limit);
/* Closes the thread's budget b: jansson allocates uncounted again. */
void json_budget_close(struct json_budget *b);

/* What glibc's malloc takes for a request of size bytes. */
size_t json_budget_price(size_t size);

/*
 * What reading text[0..len) (JSON) may still take after the budget is
 * found overrun, before the parse ends: one JSON_BUDGET_CHUNK of text at
 * the costliest, and the last growth of the lexer's buffer (doubled past
 * the longest token: string, number or word) with the token's decoded
 * copy. A caller that stops at limit - headroom stays within limit.
 */
size_t json_budget_headroom(const char *text, size_t len);

#endif
