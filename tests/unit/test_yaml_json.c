/*
 * util/yaml_json: the limits on documents users write (issue 12): a
 * billion-laughs YAML, deep nesting, many aliases, large texts, in YAML and
 * in JSON; what stays within them is still read, and what is accepted
 * expands to no more than the limits say.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/strbuf.h"
#include "util/yaml_json.h"

/* ---- helpers ---- */

static void add(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[256];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	assert_int_equal(strbuf_add(sb, buf, (size_t)n), 0);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * What v expands to when copied or serialised, counted as the reader
 * counts: every key and every value is a node, key and string bytes count.
 */
static void expanded(const json_t *v, size_t *nodes, size_t *bytes)
{
	const char *k;
	const json_t *item;
	size_t i;
	(*nodes)++;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach((json_t *)v, k, item) {
			(*nodes)++;
			*bytes += strlen(k);
			expanded(item, nodes, bytes);
		}
		break;
	case JSON_ARRAY:
		json_array_foreach(v, i, item)
			expanded(item, nodes, bytes);
		break;
	case JSON_STRING:
		*bytes += json_string_length(v);
		break;
	default:
		break;
	}
}

/* Reads YAML under lim; must be accepted. New reference. */
static json_t *yaml_ok_under(const struct doc_limits *lim, const char *text, size_t len)
{
	json_t *v = NULL;
	char *msg = NULL;
	int rc = yaml_to_json_limited(text, len, lim, &v, &msg);
	if (rc != 0)
		fail_msg("refused: %s", msg);
	assert_null(msg);
	assert_non_null(v);
	return v;
}

/* Reads YAML under the annotation limits; must be accepted. New reference. */
static json_t *yaml_ok(const char *text, size_t len)
{
	return yaml_ok_under(&doc_limits_annotation, text, len);
}

/* Reads text (YAML, or JSON when json) under lim; must be refused with rc, msg holding needle. */
static void refused(bool json, const char *text, size_t len, const struct doc_limits *lim, int want_rc,
		    const char *needle)
{
	json_t *v = (json_t *)0x1;
	char *msg = NULL;
	int rc = json ? json_load_limited(text, len, 0, lim, &v, &msg)
		      : yaml_to_json_limited(text, len, lim, &v, &msg);
	assert_int_equal(rc, want_rc);
	assert_null(v);
	assert_non_null(msg);
	if (!strstr(msg, needle))
		fail_msg("message \"%s\" does not say \"%s\"", msg, needle);
	if (getenv("TEST_VERBOSE"))
		print_message("%s\n", msg);
	free(msg);
}

/*
 * The billion laughs: a0 is ten strings, each a(i) a list of ten aliases
 * of a(i-1), so a9 stands for 10^10 strings in some 560 bytes.
 */
static void bomb(struct strbuf *sb, const char *prefix)
{
	add(sb, "%sa0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", prefix);
	for (int i = 1; i < 10; i++) {
		add(sb, "%sa%d: &a%d [", prefix, i, i);
		for (int j = 0; j < 10; j++)
			add(sb, "%s*a%d", j ? ", " : "", i - 1);
		add(sb, "]\n");
	}
}

/* ---- YAML ---- */

/* The billion laughs is refused at once, before anything large exists, under every limits. */
static void test_yaml_alias_bomb(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	bomb(&sb, "");
	assert_true(sb.len < 600);
	double t0 = now_s();
	refused(false, sb.buf, sb.len, &doc_limits_annotation, DOC_TOO_LARGE,
		"once aliases are expanded (each alias counts as a copy of what it names)");
	refused(false, sb.buf, sb.len, &doc_limits_file, DOC_TOO_LARGE, "once aliases are expanded");
	/* Refused in a few hundred events, long before a9: microseconds, 1 s even under valgrind. */
	assert_true(now_s() - t0 < 1.0);
	strbuf_release(&sb);

	/* The same through flow style, and through "<<" merge keys of mappings. */
	sb = (struct strbuf)STRBUF_INIT;
	add(&sb, "{a0: &a0 {k: lol}");
	for (int i = 1; i < 10; i++) {
		add(&sb, ", a%d: &a%d [", i, i);
		for (int j = 0; j < 10; j++)
			add(&sb, "%s*a%d", j ? ", " : "", i - 1);
		add(&sb, "]");
	}
	add(&sb, "}");
	refused(false, sb.buf, sb.len, &doc_limits_annotation, DOC_TOO_LARGE, "once aliases are expanded");
	strbuf_release(&sb);

	sb = (struct strbuf)STRBUF_INIT;
	add(&sb, "m0: &m0 {k0: lol, k1: lol, k2: lol, k3: lol, k4: lol, k5: lol, k6: lol, k7: lol}\n");
	for (int i = 1; i < 10; i++) {
		add(&sb, "m%d: &m%d {<<: *m%d, x%d: [", i, i, i - 1, i);
		for (int j = 0; j < 10; j++)
			add(&sb, "%s*m%d", j ? ", " : "", i - 1);
		add(&sb, "]}\n");
	}
	refused(false, sb.buf, sb.len, &doc_limits_annotation, DOC_TOO_LARGE, "once aliases are expanded");
	strbuf_release(&sb);
}

/* A document of many long strings, each aliased: the byte budget, not the node budget, stops it. */
static void test_yaml_expanded_bytes(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	add(&sb, "s: &s \"");
	for (int i = 0; i < 1000; i++)
		add(&sb, "x");
	add(&sb, "\"\nl: [");
	for (int i = 0; i < 999; i++) /* 1000 strings of 1000 bytes: under 1 MiB */
		add(&sb, "%s*s", i ? ", " : "");
	add(&sb, "]\n");
	json_t *v = yaml_ok(sb.buf, sb.len);
	json_decref(v);
	strbuf_release(&sb);

	struct doc_limits lim = doc_limits_annotation;
	lim.max_aliases = 2000;
	sb = (struct strbuf)STRBUF_INIT;
	add(&sb, "s: &s \"");
	for (int i = 0; i < 1000; i++)
		add(&sb, "x");
	add(&sb, "\"\nl: [");
	for (int i = 0; i < 1100; i++) /* 1.1 MB */
		add(&sb, "%s*s", i ? ", " : "");
	add(&sb, "]\n");
	refused(false, sb.buf, sb.len, &lim, DOC_TOO_LARGE, "more than 1048576 bytes of keys and values");
	strbuf_release(&sb);
}

/*
 * What the reader counts is what a copy expands to, exactly when there are
 * no "<<" merges; the limit is reached at its number, not before.
 */
static void test_yaml_count_is_the_expansion(void **state)
{
	(void)state;
	static const char text[] = "base: &b {name: x, env: [{name: A, value: \"1\"}, {name: B, value: two}]}\n"
				   "first: *b\n"
				   "second: {inner: *b, list: [*b, *b, &s str, *s]}\n";
	json_t *v = yaml_ok(text, strlen(text));
	size_t nodes = 0, bytes = 0;
	expanded(v, &nodes, &bytes);
	json_decref(v);

	struct doc_limits lim = doc_limits_annotation;
	lim.max_nodes = nodes;
	lim.max_expanded_bytes = bytes;
	char *msg = NULL;
	assert_int_equal(yaml_to_json_limited(text, strlen(text), &lim, &v, &msg), 0);
	json_decref(v);
	lim.max_nodes = nodes - 1;
	refused(false, text, strlen(text), &lim, DOC_TOO_LARGE, "more than");
	lim.max_nodes = nodes;
	lim.max_expanded_bytes = bytes - 1;
	refused(false, text, strlen(text), &lim, DOC_TOO_LARGE, "bytes of keys and values");
}

/* Nesting: 64 levels are read, 65 are not, in block and in flow style. */
static void test_yaml_depth(void **state)
{
	(void)state;
	for (int depth = 64; depth <= 65; depth++) {
		struct strbuf flow = STRBUF_INIT, block = STRBUF_INIT;
		for (int i = 0; i < depth; i++)
			add(&flow, "[");
		for (int i = 0; i < depth; i++)
			add(&flow, "]");
		for (int i = 0; i < depth; i++)
			add(&block, "%*sk:\n", i, "");
		if (depth == 64) {
			json_decref(yaml_ok(flow.buf, flow.len));
			json_decref(yaml_ok(block.buf, block.len));
		} else {
			refused(false, flow.buf, flow.len, &doc_limits_annotation, DOC_TOO_LARGE,
				"nested deeper than 64 levels; flatten the document");
			refused(false, block.buf, block.len, &doc_limits_annotation, DOC_TOO_LARGE,
				"nested deeper than 64 levels");
		}
		strbuf_release(&flow);
		strbuf_release(&block);
	}
	/* Far deeper: refused at level 65, whatever follows. */
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < 100000; i++)
		add(&sb, "[");
	refused(false, sb.buf, sb.len, &doc_limits_annotation, DOC_TOO_LARGE, "line 1, column 65: too large");
	strbuf_release(&sb);
}

/* Under lim, one anchor and max_aliases - 1 aliases are read; one alias more is not. */
static void alias_count_cap(const struct doc_limits *lim)
{
	char want[128];
	snprintf(want, sizeof(want), "more than %zu anchors (&) and aliases (*); write the repeated parts out",
		 lim->max_aliases);
	for (size_t n = lim->max_aliases - 1; n <= lim->max_aliases; n++) {
		struct strbuf sb = STRBUF_INIT;
		add(&sb, "a: &a x\nl: [");
		for (size_t i = 0; i < n; i++)
			add(&sb, "%s*a", i ? ", " : "");
		add(&sb, "]\n");
		if (n < lim->max_aliases)
			json_decref(yaml_ok_under(lim, sb.buf, sb.len));
		else
			refused(false, sb.buf, sb.len, lim, DOC_TOO_LARGE, want);
		strbuf_release(&sb);
	}
}

/* Anchors and aliases: 1000 are read, more are not. */
static void test_yaml_alias_count(void **state)
{
	(void)state;
	assert_int_equal(doc_limits_annotation.max_aliases, 1000);
	alias_count_cap(&doc_limits_annotation);
}

/* The text itself: 256 KiB. */
static void test_yaml_bytes(void **state)
{
	(void)state;
	size_t len = 256 * 1024 + 1;
	char *text = malloc(len + 1);
	assert_non_null(text);
	memset(text, '#', len); /* a comment: nothing but its size is wrong */
	text[len] = '\0';
	refused(false, text, len, &doc_limits_annotation, DOC_TOO_LARGE, "262145 bytes, more than the 262144 read");
	json_decref(yaml_ok(text, len - 1));
	free(text);
}

/* An ordinary template with anchors, aliases and a merge key still reads, aliases resolved. */
static void test_yaml_ordinary_template(void **state)
{
	(void)state;
	static const char text[] = "metadata:\n"
				   "  labels: &labels\n"
				   "    app: datastore-cleanup\n"
				   "  annotations: *labels\n"
				   "spec:\n"
				   "  containers:\n"
				   "  - &c\n"
				   "    name: cleanup\n"
				   "    image: my-cleanup\n"
				   "    env: &env\n"
				   "    - {name: MODE, value: full}\n"
				   "  - <<: *c\n"
				   "    name: second\n"
				   "    args: [--env, *env]\n";
	json_t *v = yaml_ok(text, strlen(text));
	json_t *spec = json_object_get(v, "spec");
	json_t *c1 = json_array_get(json_object_get(spec, "containers"), 1);
	assert_string_equal(json_string_value(json_object_get(c1, "name")), "second");
	assert_string_equal(json_string_value(json_object_get(c1, "image")), "my-cleanup");
	assert_true(json_equal(json_object_get(json_object_get(v, "metadata"), "annotations"),
			       json_object_get(json_object_get(v, "metadata"), "labels")));
	char *dump = json_dumps(v, JSON_COMPACT);
	assert_non_null(dump);
	assert_true(strlen(dump) < 1024);
	free(dump);
	json_decref(v);
}

/* Syntax errors stay DOC_INVALID, with their line and column. */
static void test_yaml_invalid_is_not_too_large(void **state)
{
	(void)state;
	refused(false, "a: [", 4, &doc_limits_annotation, DOC_INVALID, "YAML syntax error at line");
	refused(false, "a: *nope\n", 9, &doc_limits_annotation, DOC_INVALID, "names no anchor");
}

/* ---- the limits of files (kubeconfig) ---- */

/* Reads YAML under the file limits; must be accepted. New reference. */
static json_t *file_ok(const char *text, size_t len)
{
	return yaml_ok_under(&doc_limits_file, text, len);
}

/* The text: 16 MiB are read, one byte more is not. */
static void test_file_bytes(void **state)
{
	(void)state;
	assert_int_equal(doc_limits_file.max_bytes, 16u << 20);
	size_t len = doc_limits_file.max_bytes + 1;
	char *text = malloc(len + 1);
	assert_non_null(text);
	memcpy(text, "a: 1\n", 5);
	memset(text + 5, '#', len - 5); /* a comment after a valid document */
	text[len] = '\0';
	refused(false, text, len, &doc_limits_file, DOC_TOO_LARGE, "16777217 bytes, more than the 16777216 read");
	json_t *v = file_ok(text, len - 1);
	assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
	json_decref(v);
	free(text);
}

/* Anchors and aliases in a file: 10,000 are read, more are not. */
static void test_file_alias_count(void **state)
{
	(void)state;
	assert_int_equal(doc_limits_file.max_aliases, 10000);
	alias_count_cap(&doc_limits_file);
}

/*
 * "a: &a [x, x, ...]" (nitems one-byte strings), "l: [*a, *a, ...]"
 * (naliases), then "p: [x, x, ...]" (npad). Counted as the reader counts:
 * the mapping, its keys, each list and each item are nodes.
 */
static void expansion_doc(struct strbuf *sb, int nitems, int naliases, int npad)
{
	add(sb, "a: &a [");
	for (int i = 0; i < nitems; i++)
		add(sb, "%sx", i ? ", " : "");
	add(sb, "]\nl: [");
	for (int i = 0; i < naliases; i++)
		add(sb, "%s*a", i ? ", " : "");
	add(sb, "]\np: [");
	for (int i = 0; i < npad; i++)
		add(sb, "%sx", i ? ", " : "");
	add(sb, "]\n");
}

/*
 * Keys and values of a file, aliases expanded: 4,000,000 are read, one
 * more is not; and 64 MiB of their text, not a byte more. What is read
 * stays a small tree (aliases share their node), so this costs little.
 */
static void test_file_expansion(void **state)
{
	(void)state;
	assert_int_equal(doc_limits_file.max_nodes, 4000000);
	assert_int_equal(doc_limits_file.max_expanded_bytes, 64u << 20);
	/* mapping + 3 keys + 3 lists = 7; list a: 1000 items; each alias its list and items, 1001. */
	int nitems = 1000, naliases = 3994;
	int npad = (int)(doc_limits_file.max_nodes - 7 - (size_t)nitems - (size_t)naliases * 1001);
	assert_true(npad > 0 && npad < 1001);
	for (int extra = 0; extra <= 1; extra++) {
		struct strbuf sb = STRBUF_INIT;
		expansion_doc(&sb, nitems, naliases, npad + extra);
		if (!extra) {
			json_t *v = file_ok(sb.buf, sb.len);
			size_t nodes = 0, bytes = 0;
			expanded(v, &nodes, &bytes);
			assert_int_equal(nodes, doc_limits_file.max_nodes);
			json_decref(v);
		} else {
			refused(false, sb.buf, sb.len, &doc_limits_file, DOC_TOO_LARGE,
				"more than 4000000 keys and values once aliases are expanded");
		}
		strbuf_release(&sb);
	}

	/* Bytes: the same shape with long strings, "s" padding to exactly 64 MiB. */
	struct strbuf sb = STRBUF_INIT;
	add(&sb, "a: &a [");
	for (int i = 0; i < 16; i++) { /* 16 strings of 4 KiB: 64 KiB an alias */
		add(&sb, "%s", i ? ", " : "");
		for (int k = 0; k < 4096; k++)
			assert_int_equal(strbuf_add(&sb, "z", 1), 0);
	}
	add(&sb, "]\nl: [");
	for (int i = 0; i < 1022; i++) /* with the anchor itself: 1023 copies */
		add(&sb, "%s*a", i ? ", " : "");
	add(&sb, "]\ns: ");
	size_t used = 3 /* keys a, l, s */ + (size_t)1023 * 16 * 4096;
	size_t pad = doc_limits_file.max_expanded_bytes - used;
	for (size_t i = 0; i < pad; i++)
		assert_int_equal(strbuf_add(&sb, "y", 1), 0);
	add(&sb, "\n");
	json_t *v = file_ok(sb.buf, sb.len);
	size_t nodes = 0, bytes = 0;
	expanded(v, &nodes, &bytes);
	assert_int_equal(bytes, doc_limits_file.max_expanded_bytes);
	json_decref(v);
	sb.buf[sb.len - 1] = 'y';
	add(&sb, "\n");
	refused(false, sb.buf, sb.len, &doc_limits_file, DOC_TOO_LARGE,
		"more than 67108864 bytes of keys and values once aliases are expanded");
	strbuf_release(&sb);
}

/* The billion laughs in a file: refused at once, with the line and column of the alias that passed. */
static void test_file_alias_bomb(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	bomb(&sb, "");
	double t0 = now_s();
	refused(false, sb.buf, sb.len, &doc_limits_file, DOC_TOO_LARGE,
		"too large: more than 4000000 keys and values once aliases are expanded");
	assert_true(now_s() - t0 < 1.0);
	strbuf_release(&sb);
}

/* ---- JSON ---- */

static json_t *json_ok(const char *text, size_t len)
{
	json_t *v = NULL;
	char *msg = NULL;
	int rc = json_load_limited(text, len, 0, &doc_limits_annotation, &v, &msg);
	if (rc != 0)
		fail_msg("refused: %s", msg);
	assert_non_null(v);
	return v;
}

/* JSON nesting: 64 levels read, 65 not, and 100,000 refused without building anything. */
static void test_json_depth(void **state)
{
	(void)state;
	for (int depth = 64; depth <= 65; depth++) {
		struct strbuf arr = STRBUF_INIT, obj = STRBUF_INIT;
		for (int i = 0; i < depth; i++) {
			add(&arr, "[");
			add(&obj, "{\"k\": ");
		}
		add(&obj, "1");
		for (int i = 0; i < depth; i++) {
			add(&arr, "]");
			add(&obj, "}");
		}
		if (depth == 64) {
			json_decref(json_ok(arr.buf, arr.len));
			json_decref(json_ok(obj.buf, obj.len));
		} else {
			refused(true, arr.buf, arr.len, &doc_limits_annotation, DOC_TOO_LARGE,
				"nested deeper than 64 levels; flatten the document");
			refused(true, obj.buf, obj.len, &doc_limits_annotation, DOC_TOO_LARGE,
				"line 1, column 385: too large");
		}
		strbuf_release(&arr);
		strbuf_release(&obj);
	}
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < 100000; i++)
		add(&sb, "[");
	for (int i = 0; i < 100000; i++)
		add(&sb, "]");
	double t0 = now_s();
	refused(true, sb.buf, sb.len, &doc_limits_annotation, DOC_TOO_LARGE, "nested deeper than 64 levels");
	assert_true(now_s() - t0 < 1.0);
	strbuf_release(&sb);

	/* Brackets inside strings are text, escaped quotes included. */
	sb = (struct strbuf)STRBUF_INIT;
	add(&sb, "{\"k\": \"\\\"");
	for (int i = 0; i < 100; i++)
		add(&sb, "[{");
	add(&sb, "\"}");
	json_t *v = json_ok(sb.buf, sb.len);
	assert_int_equal(json_string_length(json_object_get(v, "k")), 201);
	json_decref(v);
	strbuf_release(&sb);
}

/* JSON values: 100,000 read, more not; the text: 256 KiB. */
static void test_json_size(void **state)
{
	(void)state;
	for (int n = 99999; n <= 100000; n++) { /* the array and n numbers */
		struct strbuf sb = STRBUF_INIT;
		add(&sb, "[");
		for (int i = 0; i < n; i++)
			add(&sb, "%s1", i ? "," : "");
		add(&sb, "]");
		if (n == 99999)
			json_decref(json_ok(sb.buf, sb.len));
		else
			refused(true, sb.buf, sb.len, &doc_limits_annotation, DOC_TOO_LARGE,
				"more than 100000 values");
		strbuf_release(&sb);
	}
	size_t len = 256 * 1024 + 1;
	char *text = malloc(len + 1);
	assert_non_null(text);
	memset(text, ' ', len);
	text[0] = '[';
	text[len - 1] = ']';
	text[len] = '\0';
	refused(true, text, len, &doc_limits_annotation, DOC_TOO_LARGE, "262145 bytes, more than the 262144 read");
	text[len - 2] = ']';
	json_decref(json_ok(text, len - 1));
	free(text);
}

/* Malformed JSON is DOC_INVALID with jansson's words, line and column. */
static void test_json_invalid(void **state)
{
	(void)state;
	refused(true, "{\"a\": 1,}", 9, &doc_limits_annotation, DOC_INVALID, "at line 1, column 9");
	refused(true, "metadata: {}", 12, &doc_limits_annotation, DOC_INVALID, "expected near 'metadata' at line 1");
	refused(true, "", 0, &doc_limits_annotation, DOC_INVALID, "at line");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_alias_bomb),
		cmocka_unit_test(test_yaml_expanded_bytes),
		cmocka_unit_test(test_yaml_count_is_the_expansion),
		cmocka_unit_test(test_yaml_depth),
		cmocka_unit_test(test_yaml_alias_count),
		cmocka_unit_test(test_yaml_bytes),
		cmocka_unit_test(test_yaml_ordinary_template),
		cmocka_unit_test(test_yaml_invalid_is_not_too_large),
		cmocka_unit_test(test_file_bytes),
		cmocka_unit_test(test_file_alias_count),
		cmocka_unit_test(test_file_expansion),
		cmocka_unit_test(test_file_alias_bomb),
		cmocka_unit_test(test_json_depth),
		cmocka_unit_test(test_json_size),
		cmocka_unit_test(test_json_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
