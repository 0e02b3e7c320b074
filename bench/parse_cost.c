/*
 * What parsing a JSON document costs in heap: for each file, its size, what
 * the parse budget (util/json_budget.h) charges for it, and what the tree
 * still holds once built (glibc's in-use bytes before and after). The
 * figures behind the budgets in docs/design.md ("Parse budgets").
 *
 *   bench_parse_cost FILE...
 *   bench_parse_cost --worst BYTES
 *
 * Prints one line per file: bytes=N charged=N held=N ratio=charged/bytes.
 * --worst: the costliest document a budget of BYTES accepts (as many "{}"
 * as it takes, the most heap a byte of text can cost), read by
 * json_load_limited in this process: its size, its charge, and how much
 * the process' peak RSS (VmHWM) grew while it was read.
 */
#include <jansson.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_budget.h"
#include "util/proc_status.h"
#include "util/strbuf.h"
#include "util/yaml_json.h"

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

/* An array of n "{}". New string. */
static char *braces(size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	if (strbuf_addstr(&sb, "[") < 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if (strbuf_addstr(&sb, i ? ",{}" : "{}") < 0)
			abort();
	if (strbuf_addstr(&sb, "]") < 0)
		abort();
	return strbuf_detach(&sb);
}

static size_t charge_of(const char *text)
{
	struct json_budget b;
	json_budget_open(&b, (size_t)-1);
	json_t *v = json_loads(text, 0, NULL);
	json_budget_close(&b);
	json_decref(v);
	return b.charged;
}

/* Whether a budget of budget bytes accepts text. */
static bool accepted(const char *text, size_t budget)
{
	struct doc_limits lim = {.max_bytes = (size_t)-1, .max_depth = DOC_MAX_DEPTH, .max_nodes = (size_t)-1,
				 .max_expanded_bytes = (size_t)-1, .max_parsed_bytes = budget};
	json_t *v = NULL;
	char *msg = NULL;
	int rc = json_load_limited(text, strlen(text), 0, &lim, &v, &msg);
	json_decref(v);
	free(msg);
	return rc == 0;
}

static int worst(size_t budget)
{
	size_t lo = 1, hi = budget / 64;
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;
		char *t = braces(mid);
		if (accepted(t, budget))
			lo = mid;
		else
			hi = mid - 1;
		free(t);
	}
	char *text = braces(lo);
	struct doc_limits lim = {.max_bytes = (size_t)-1, .max_depth = DOC_MAX_DEPTH, .max_nodes = (size_t)-1,
				 .max_expanded_bytes = (size_t)-1, .max_parsed_bytes = budget};
	json_t *v = NULL;
	char *msg = NULL;
	/* The search above raised the peak: start it again from here. */
	if (proc_status_reset_peak() < 0)
		return 1;
	long before = proc_status_kb(0, "VmHWM");
	int rc = json_load_limited(text, strlen(text), 0, &lim, &v, &msg);
	long after = proc_status_kb(0, "VmHWM");
	printf("budget=%zu worst_accepted={}x%zu bytes=%zu rc=%d charged=%zu peak_rss_growth_kb=%ld\n", budget, lo,
	       strlen(text), rc, charge_of(text), after - before);
	json_decref(v);
	free(msg);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;
	if (argc == 3 && !strcmp(argv[1], "--worst"))
		return worst(strtoull(argv[2], NULL, 10)) ? 1 : 0;
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
		json_budget_open(&b, (size_t)-1);
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
