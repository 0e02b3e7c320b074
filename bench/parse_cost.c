/*
 * What parsing a JSON document costs in heap: for each file, its size, what
 * the parse budget (util/json_budget.h) charges for it, and what the tree
 * still holds once built (glibc's in-use bytes before and after). The
 * figures behind the budgets in docs/design.md ("Parse budgets").
 *
 *   bench_parse_cost FILE...
 *
 * Prints one line per file: bytes=N charged=N held=N ratio=charged/bytes.
 */
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/json_budget.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		if (!got)
			break;
		n += got;
	}
	fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		size_t len = 0;
		char *text = slurp(argv[i], &len);
		if (!text) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			rc = 1;
			continue;
		}
		json_error_t jerr;
		struct json_budget b;
		size_t before = mallinfo2().uordblks;
		json_budget_open(&b, (size_t)-1, false);
		json_t *doc = json_loadb(text, len, JSON_DECODE_INT_AS_REAL, &jerr);
		json_budget_close(&b);
		size_t after = mallinfo2().uordblks;
		if (!doc) {
			fprintf(stderr, "%s: not JSON: %s\n", argv[i], jerr.text);
			rc = 1;
		} else {
			printf("%s bytes=%zu charged=%zu held=%zu ratio=%.1f\n", argv[i], len, b.charged,
			       after - before, (double)b.charged / (double)len);
		}
		json_decref(doc);
		free(text);
	}
	return rc;
}
