/*
 * util/json_budget and the max_parsed_bytes of json_load_limited /
 * yaml_to_json_limited (issue 27): what a parse costs is what the tree
 * takes of the heap; a document is read at exactly its cost and refused
 * one byte below, whatever its shape ("{}"-heavy, "[]"-heavy, long
 * strings, many keys); every budget in between refuses or reads it whole,
 * and leaks nothing; the issue's body (450,000 "{}", 1.3 MB, 104 MiB
 * parsed) is refused by every door's budget, within it; a string too long
 * to read within the budget is refused before it is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_client.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/json_budget.h"
#include "util/proc_status.h"
#include "util/strbuf.h"
#include "util/yaml_json.h"
#include "webhook/webhook.h"

/* Bounds that leave only the budget to decide. */
static struct doc_limits budget_only(size_t parsed)
{
	return (struct doc_limits){.max_bytes = 64u << 20,
				   .max_depth = DOC_MAX_DEPTH,
				   .max_aliases = 1000,
				   .max_nodes = SIZE_MAX,
				   .max_expanded_bytes = 64u << 20,
				   .max_parsed_bytes = parsed,
				   .budget = "the test's budget"};
}

/*
 * Whether glibc's malloc serves this process: valgrind's and the
 * sanitizers' keep other figures (mallinfo2, RSS with redzones), so the
 * tests that measure the heap run in the normal build only.
 */
static bool glibc_heap(void)
{
	size_t heap0 = mallinfo2().uordblks;
	void *volatile probe = malloc(4096); /* volatile: not elided */
	size_t heap1 = mallinfo2().uordblks;
	free(probe);
	if (heap1 - heap0 >= 4096)
		return true;
	print_message("not glibc's malloc: the heap is not measured here\n");
	return false;
}

/* What parsing text costs, charged as json_load_limited charges it. */
static size_t cost_of(const char *text, size_t len)
{
	struct json_budget b;
	json_budget_open(&b, SIZE_MAX);
	json_t *v = json_loadb(text, len, 0, NULL);
	json_budget_close(&b);
	assert_non_null(v);
	assert_false(b.overrun);
	json_decref(v);
	return b.charged;
}

static void add(struct strbuf *sb, const char *s)
{
	assert_int_equal(strbuf_addstr(sb, s), 0);
}

/* n copies of item, comma-separated, inside open and close. New string in sb. */
static void repeat(struct strbuf *sb, const char *open, const char *item, size_t n, const char *close)
{
	add(sb, open);
	for (size_t i = 0; i < n; i++) {
		if (i)
			add(sb, ",");
		add(sb, item);
	}
	add(sb, close);
}

/*
 * Read under a budget of its cost and its headroom (what the parse may take
 * between two looks at the budget), refused one byte below, the budget
 * named.
 */
static void boundary(const char *text, size_t len)
{
	size_t need = cost_of(text, len) + json_budget_headroom(text, len);
	struct doc_limits lim = budget_only(need);
	json_t *v = NULL;
	char *msg = NULL;
	if (json_load_limited(text, len, 0, &lim, &v, &msg) != 0)
		fail_msg("refused under %zu: %s", need, msg);
	json_decref(v);

	lim.max_parsed_bytes = need - 1;
	v = (json_t *)0x1;
	assert_int_equal(json_load_limited(text, len, 0, &lim, &v, &msg), DOC_TOO_LARGE);
	assert_null(v);
	char want[160];
	snprintf(want, sizeof(want), "JSON error: too large: its parsed tree takes more than %zu bytes of memory, "
				     "the test's budget; write a smaller document", need - 1);
	assert_string_equal(msg, want);
	free(msg);
}

static void test_boundary_of_each_shape(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	repeat(&sb, "[", "{}", 20000, "]"); /* "{}"-heavy: an object and its buckets per 3 bytes */
	boundary(sb.buf, sb.len);
	strbuf_reset(&sb);
	repeat(&sb, "[", "[]", 20000, "]"); /* "[]"-heavy */
	boundary(sb.buf, sb.len);
	strbuf_reset(&sb);
	add(&sb, "{\"s\":\""); /* one long string: the lexer's buffer and the string */
	for (int i = 0; i < 100000; i++)
		add(&sb, "abcdefghij");
	add(&sb, "\"}");
	boundary(sb.buf, sb.len);
	strbuf_reset(&sb);
	add(&sb, "{"); /* many keys: a pair per key, the table grows */
	for (int i = 0; i < 20000; i++) {
		char kv[48];
		snprintf(kv, sizeof(kv), "%s\"key-%06d\":%d", i ? "," : "", i, i);
		add(&sb, kv);
	}
	add(&sb, "}");
	boundary(sb.buf, sb.len);
	strbuf_reset(&sb);
	repeat(&sb, "{\"env\":[", "{\"name\":\"VARIABLE\",\"value\":\"some-value\"}", 2000, "]}");
	boundary(sb.buf, sb.len);
	strbuf_release(&sb);
}

/*
 * What the budget charges is what the tree holds of the heap, and a little
 * more (the lexer's buffers, freed once read): never less, so the budget
 * bounds memory; not far more, so it does not refuse what fits.
 */
static void test_charge_is_the_heap(void **state)
{
	(void)state;
	if (!glibc_heap())
		return;
	struct strbuf sb = STRBUF_INIT;
	repeat(&sb, "[", "{}", 100000, "]");
	const char *texts[] = {sb.buf, "{\"a\":[1,2,3,{\"b\":\"c\"}],\"d\":{\"e\":null,\"f\":true,\"g\":1.5}}"};
	for (size_t i = 0; i < 2; i++) {
		size_t before = mallinfo2().uordblks;
		struct json_budget b;
		json_budget_open(&b, SIZE_MAX);
		json_t *v = json_loads(texts[i], 0, NULL);
		json_budget_close(&b);
		size_t held = mallinfo2().uordblks - before;
		assert_non_null(v);
		if (held > b.charged || b.charged > held + held / 2 + 4096)
			fail_msg("text %zu: charged %zu, the tree holds %zu", i, b.charged, held);
		json_decref(v);
	}
	strbuf_release(&sb);
}

/*
 * Every budget from none to what the document needs: refused
 * (DOC_TOO_LARGE: up front when not even its longest token fits, else
 * where the parse stops) or read whole, the same tree as without a budget.
 * Under valgrind or ASan: no leak either.
 */
static void test_every_budget_refuses_or_reads_whole(void **state)
{
	(void)state;
	const char *text = "{\"metadata\":{\"name\":\"db\",\"labels\":{\"a\":\"b\",\"c\":\"d\"}},\"spec\":{\"replicas\":3,"
			   "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"X\",\"value\":"
			   "\"1\"},{\"name\":\"Y\",\"value\":\"2\"}]}],\"volumes\":[]}}},\"list\":[[],{},[{}],1.5,-2,"
			   "true,false,null,\"\\u00e9\\ud83d\\ude00\"]}";
	size_t len = strlen(text);
	json_t *want = json_loads(text, 0, NULL);
	size_t headroom = json_budget_headroom(text, len);
	size_t need = cost_of(text, len) + headroom;
	bool accepted = false;
	for (size_t budget = 1; budget <= need; budget += budget < headroom ? 997 : 1) {
		struct doc_limits lim = budget_only(budget);
		json_t *v = NULL;
		char *msg = NULL;
		int rc = json_load_limited(text, len, 0, &lim, &v, &msg);
		if (rc == DOC_TOO_LARGE) {
			assert_null(v);
			assert_non_null(strstr(msg, budget <= headroom ? "so long that reading it takes more than"
								       : "its parsed tree takes more than"));
			free(msg);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(budget, need);
			accepted = true;
			assert_true(json_equal(v, want));
			json_decref(v);
		}
	}
	assert_true(accepted);
	json_decref(want);
}

/* YAML: the budget is checked after each event; a flow of "{}" is refused, a template read. */
static void test_yaml_under_the_budget(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	repeat(&sb, "x: [", "{}", 80000, "]\n");
	struct doc_limits lim = doc_limits_annotation;
	assert_int_equal(lim.max_parsed_bytes, 8u << 20);
	json_t *v = (json_t *)0x1;
	char *msg = NULL;
	assert_int_equal(yaml_to_json_limited(sb.buf, sb.len, &lim, &v, &msg), DOC_TOO_LARGE);
	assert_null(v);
	if (!strstr(msg, "YAML error: too large: its parsed tree takes more than 8388608 bytes of memory, the budget "
			 "for an annotation"))
		fail_msg("message: %s", msg);
	free(msg);
	strbuf_reset(&sb);
	repeat(&sb, "env: [", "{name: VARIABLE, value: some-value}", 2000, "]\n");
	assert_int_equal(yaml_to_json_limited(sb.buf, sb.len, &lim, &v, &msg), 0);
	assert_int_equal(json_array_size(json_object_get(v, "env")), 2000);
	json_decref(v);
	strbuf_release(&sb);
}

/*
 * The issue's body: 450,000 "{}" in 1.3 MB would take over 100 MiB parsed
 * (the operator's limit is 128 Mi); each door's budget refuses it at once,
 * and what the parse charged before it stopped is within the budget.
 */
static void test_the_issue_body_is_refused_by_every_door(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	repeat(&sb, "[", "{}", 450000, "]");
	assert_true(sb.len < 1400000);
	assert_true(cost_of(sb.buf, sb.len) > (100u << 20));
	const size_t budgets[] = {WEBHOOK_MAX_PARSED, KUBE_OBJECT_MAX_PARSED, USAGE_SUMMARY_MAX_PARSED,
				  USAGE_PROMETHEUS_MAX_PARSED, doc_limits_annotation.max_parsed_bytes};
	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
		assert_true(budgets[i] <= (32u << 20));
		struct doc_limits lim = budget_only(budgets[i]);
		json_t *v = NULL;
		char *msg = NULL;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(json_load_limited(sb.buf, sb.len, 0, &lim, &v, &msg), DOC_TOO_LARGE);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		assert_null(v);
		free(msg);
		assert_true((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 < 10.0);
	}
	strbuf_release(&sb);
}

/*
 * What the process takes to refuse the issue's body stays within the
 * budget: its peak RSS (VmHWM, reset first) grows by less than 16 MiB,
 * where reading it whole takes 104 MiB. First of the tests, before any
 * large parse leaves freed heap for this one to reuse.
 */
static void test_refusing_the_issue_body_stays_within_the_budget(void **state)
{
	(void)state;
	if (!glibc_heap())
		return;
	struct strbuf sb = STRBUF_INIT;
	repeat(&sb, "[", "{}", 450000, "]");
	assert_int_equal(proc_status_reset_peak(), 0);
	long before = proc_status_kb(0, "VmHWM");
	struct doc_limits lim = budget_only(WEBHOOK_MAX_PARSED);
	json_t *v = NULL;
	char *msg = NULL;
	assert_int_equal(json_load_limited(sb.buf, sb.len, 0, &lim, &v, &msg), DOC_TOO_LARGE);
	free(msg);
	long grew = proc_status_kb(0, "VmHWM") - before;
	print_message("refusing it took %ld kB more peak RSS\n", grew);
	if (grew < 0 || grew >= (long)(WEBHOOK_MAX_PARSED >> 10))
		fail_msg("peak RSS grew by %ld kB", grew);
	strbuf_release(&sb);
}

/* Strings of megabytes cost about three times their length to read: one that alone passes is refused up front. */
static void test_long_string_refused_up_front(void **state)
{
	(void)state;
	size_t n = 8u << 20;
	char *text = malloc(n + 8);
	assert_non_null(text);
	memcpy(text, "[\"", 2);
	memset(text + 2, 'a', n);
	memcpy(text + 2 + n, "\"]", 3);
	struct doc_limits lim = budget_only(16u << 20);
	json_t *v = NULL;
	char *msg = NULL;
	assert_int_equal(json_load_limited(text, n + 4, 0, &lim, &v, &msg), DOC_TOO_LARGE);
	assert_non_null(strstr(msg, "a string or value so long that reading it takes more than 16777216 bytes"));
	free(msg);
	/* 1.5 MiB of it (etcd's limit for a whole object) is read. */
	size_t m = 3u << 19;
	memcpy(text + 2 + m, "\"]", 3);
	if (json_load_limited(text, m + 4, 0, &lim, &v, &msg) != 0)
		fail_msg("refused: %s", msg);
	assert_int_equal(json_string_length(json_array_get(v, 0)), m);
	json_decref(v);
	free(text);
}

/* Budgets do not nest; outside one, jansson allocates freely (the hook is harmless). */
static void test_no_budget_outside(void **state)
{
	(void)state;
	struct json_budget b;
	json_budget_open(&b, 64);
	json_budget_close(&b);
	json_t *v = json_loads("[{},{},{},{}]", 0, NULL);
	assert_non_null(v);
	json_decref(v);
	assert_int_equal(json_budget_price(1), 32);
	assert_int_equal(json_budget_price(24), 32);
	assert_int_equal(json_budget_price(25), 48);
	assert_int_equal(json_budget_price(1000), 1008);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusing_the_issue_body_stays_within_the_budget),
		cmocka_unit_test(test_boundary_of_each_shape),
		cmocka_unit_test(test_charge_is_the_heap),
		cmocka_unit_test(test_every_budget_refuses_or_reads_whole),
		cmocka_unit_test(test_yaml_under_the_budget),
		cmocka_unit_test(test_the_issue_body_is_refused_by_every_door),
		cmocka_unit_test(test_long_string_refused_up_front),
		cmocka_unit_test(test_no_budget_outside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
