/*
 * A budget in bytes of heap for what jansson allocates while a document is
 * parsed: the memory the tree will take, priced as glibc's malloc takes it
 * (the request, its 8-byte header, rounded up to 16, at least 32).
 *
 * Why count allocations, not the text: jansson spends about 75 bytes of
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
 * its length). Once a charge would pass the limit, a hard budget makes the
 * allocation fail (jansson then gives up and frees what it built); a soft
 * one only remembers the overrun, for builders that check between steps.
 *
 * Threads: any thread; a budget belongs to the thread that opened it.
 */
#ifndef SOP_UTIL_JSON_BUDGET_H
#define SOP_UTIL_JSON_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

struct json_budget {
	size_t limit;   /* bytes */
	size_t charged; /* bytes charged so far (a hard budget: never past limit) */
	bool hard;      /* refuse the allocation that passes the limit */
	bool overrun;   /* an allocation passed the limit */
};

/* Opens b (the caller's, e.g. on its stack) on this thread. One at a time per thread. */
void json_budget_open(struct json_budget *b, size_t limit, bool hard);
/* Closes the thread's budget b: jansson allocates freely again. */
void json_budget_close(struct json_budget *b);

/* What glibc's malloc takes for a request of size bytes. */
size_t json_budget_price(size_t size);

#endif
