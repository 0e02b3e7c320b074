#include "util/json_budget.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The most a byte of JSON text costs parsed: "[" is an array (48) and its first table (80); "{}" less. */
#define COST_PER_BYTE_MAX 256

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
		b->charged = price < size || price > SIZE_MAX - b->charged ? SIZE_MAX : b->charged + price;
		if (b->charged > b->limit)
			b->overrun = true;
	}
	return malloc(size);
}

__attribute__((constructor)) static void json_budget_install(void)
{
	json_set_alloc_funcs(budget_malloc, free);
}

void json_budget_open(struct json_budget *b, size_t limit)
{
	if (current) {
		fputs("stateful-operator: a JSON budget opened inside another\n", stderr);
		abort(); /* a programming error */
	}
	*b = (struct json_budget){.limit = limit};
	current = b;
}

void json_budget_close(struct json_budget *b)
{
	if (current == b)
		current = NULL;
}

/* The longest token of JSON text: a string with its quotes, or a run of a number or a word. */
static size_t longest_token(const char *s, size_t len)
{
	size_t longest = 0, start = 0;
	bool in_string = false, in_word = false, escaped = false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_string) {
			if (escaped)
				escaped = false;
			else if (c == '\\')
				escaped = true;
			else if (c == '"') {
				in_string = false;
				if (i + 1 - start > longest)
					longest = i + 1 - start;
			}
			continue;
		}
		bool word = c != '"' && c != '{' && c != '}' && c != '[' && c != ']' && c != ',' && c != ':' &&
			    c != ' ' && c != '\t' && c != '\r' && c != '\n';
		if (word && !in_word)
			start = i;
		if (!word && in_word && i - start > longest)
			longest = i - start;
		in_word = word;
		if (c == '"') {
			in_string = true;
			start = i;
		}
	}
	if ((in_string || in_word) && len - start > longest)
		longest = len - start; /* unterminated: the lexer reads to the end */
	return longest;
}

size_t json_budget_headroom(const char *text, size_t len)
{
	/* jansson's buffer: 16 bytes, doubled past the token and its NUL (the smaller ones are charged already). */
	size_t token = longest_token(text, len);
	size_t buffer = 16;
	while (buffer < token + 2 && buffer <= SIZE_MAX / 4)
		buffer *= 2;
	return json_budget_price(buffer) + json_budget_price(token + 1) +
	       (size_t)JSON_BUDGET_CHUNK * COST_PER_BYTE_MAX;
}
