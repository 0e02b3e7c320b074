#include "util/json_budget.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local struct json_budget *current;

size_t json_budget_price(size_t size)
{
	/* glibc on 64 bits: 8 bytes of header, 16-byte alignment, 32 bytes at least. */
	size_t chunk = (size + 8 + 15) & ~(size_t)15;
	return chunk < 32 ? 32 : chunk;
}

static void *budget_malloc(size_t size)
{
	struct json_budget *b = current;
	if (b) {
		size_t price = json_budget_price(size);
		if (price < size || b->charged > b->limit || price > b->limit - b->charged) {
			b->overrun = true;
			if (b->hard)
				return NULL;
		}
		b->charged = price > SIZE_MAX - b->charged ? SIZE_MAX : b->charged + price;
	}
	return malloc(size);
}

__attribute__((constructor)) static void json_budget_install(void)
{
	json_set_alloc_funcs(budget_malloc, free);
}

void json_budget_open(struct json_budget *b, size_t limit, bool hard)
{
	if (current) {
		fputs("stateful-operator: a JSON budget opened inside another\n", stderr);
		abort(); /* a programming error */
	}
	*b = (struct json_budget){.limit = limit, .hard = hard};
	current = b;
}

void json_budget_close(struct json_budget *b)
{
	if (current == b)
		current = NULL;
}
