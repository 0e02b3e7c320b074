/*
 * The LIST response scanner (client/list_scan.c) on any text. Every item
 * it hands over is one complete JSON value, as is the metadata it points
 * at, and both lie inside the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/list_scan.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct scan {
	const char *text;
	size_t len;
	size_t items;
};

static int check_item(void *ctx, const char *item, size_t len)
{
	struct scan *s = ctx;
	FUZZ_CHECK(item >= s->text && len <= s->len && (size_t)(item - s->text) <= s->len - len,
		   "an item lies inside the text");
	FUZZ_CHECK(len > 0 && json_value_span(item, len) == len, "an item is one complete value");
	s->items++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);
	if (size)
		memcpy(text, data, size);
	struct scan s = {text, size, 0};
	const char *meta = NULL;
	size_t meta_len = 0;
	int rc = list_scan(text, size, check_item, &s, &meta, &meta_len);
	FUZZ_CHECK(rc == 0 || rc == -1, "the callback never stops it, so 0 or -1");
	if (rc == 0 && meta) {
		FUZZ_CHECK(meta >= text && (size_t)(meta - text) + meta_len <= size, "metadata lies inside the text");
		FUZZ_CHECK(json_value_span(meta, meta_len) == meta_len, "metadata is one complete value");
	}
	(void)json_value_span(text, size);
	free(text);
	return 0;
}
