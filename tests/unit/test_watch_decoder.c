/* Watch-stream framing: however the bytes are cut into reads, each event arrives once, whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/watch_decoder.h"
#include "util/xalloc.h"

#define MAX_SEEN 16

struct seen {
	int n;
	char type[MAX_SEEN][16];
	char name[MAX_SEEN][64];
	long code[MAX_SEEN];
	int stop_after; /* ask to stop after this many events; 0 = never */
	struct refused *refused; /* for on_refused */
};

static int record(void *ctx, const char *type, json_t *object)
{
	struct seen *s = ctx;
	if (s->n < MAX_SEEN) {
		snprintf(s->type[s->n], sizeof(s->type[0]), "%s", type);
		const char *name = json_string_value(
			json_object_get(json_object_get(object, "metadata"), "name"));
		snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name ? name : "");
		s->code[s->n] = watch_error_code(object);
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after;
}

static const char EV_ADD[] = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
			     "\"resourceVersion\":\"10\"}}}\n";
static const char EV_MOD[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\n";
static const char EV_BOOKMARK[] = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
				  "{\"resourceVersion\":\"12345\"}}}\n";
static const char EV_GONE[] = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
			      "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (999)\","
			      "\"reason\":\"Expired\",\"code\":410}}\n";

static void feed_ok(struct watch_decoder *d, const char *data, size_t len, struct seen *s)
{
	char *err = NULL;
	assert_int_equal(watch_decoder_feed(d, data, len, record, s, &err), 0);
	assert_null(err);
}

static void test_event_split_at_every_byte(void **state)
{
	(void)state;
	size_t len = strlen(EV_ADD);
	/* Cut the event in two at every possible place: it must arrive exactly once, whole. */
	for (size_t cut = 0; cut <= len; cut++) {
		struct watch_decoder d;
		struct seen s = {0};
		watch_decoder_init(&d);
		feed_ok(&d, EV_ADD, cut, &s);
		assert_int_equal(s.n, cut == len ? 1 : 0);
		feed_ok(&d, EV_ADD + cut, len - cut, &s);
		assert_int_equal(s.n, 1);
		assert_string_equal(s.type[0], "ADDED");
		assert_string_equal(s.name[0], "a");
		watch_decoder_release(&d);
	}
}

static void test_byte_by_byte(void **state)
{
	(void)state;
	char *all = xasprintf("%s%s%s", EV_ADD, EV_MOD, EV_BOOKMARK);
	struct watch_decoder d;
	struct seen s = {0};
	watch_decoder_init(&d);
	for (size_t i = 0; all[i]; i++)
		feed_ok(&d, all + i, 1, &s);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.type[2], "BOOKMARK");
	watch_decoder_release(&d);
	free(all);
}

static void test_several_events_in_one_read(void **state)
{
	(void)state;
	char *all = xasprintf("%s%s%s%s", EV_ADD, EV_MOD, EV_BOOKMARK, EV_GONE);
	struct watch_decoder d;
	struct seen s = {0};
	watch_decoder_init(&d);
	feed_ok(&d, all, strlen(all), &s);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.type[0], "ADDED");
	assert_string_equal(s.type[1], "MODIFIED");
	assert_string_equal(s.name[1], "b");
	assert_string_equal(s.type[2], "BOOKMARK");
	assert_string_equal(s.type[3], "ERROR");
	assert_int_equal(s.code[3], 410);
	watch_decoder_release(&d);
	free(all);
}

static void test_error_410_is_reported(void **state)
{
	(void)state;
	struct watch_decoder d;
	struct seen s = {0};
	watch_decoder_init(&d);
	feed_ok(&d, EV_GONE, strlen(EV_GONE), &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.type[0], "ERROR");
	assert_int_equal(s.code[0], 410);
	watch_decoder_release(&d);
}

static void test_blank_lines_and_crlf_are_skipped(void **state)
{
	(void)state;
	char *all = xasprintf("\n\r\n%.*s\r\n\n", (int)strlen(EV_MOD) - 1, EV_MOD);
	struct watch_decoder d;
	struct seen s = {0};
	watch_decoder_init(&d);
	feed_ok(&d, all, strlen(all), &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.type[0], "MODIFIED");
	watch_decoder_release(&d);
	free(all);
}

static void test_stop_drops_the_rest(void **state)
{
	(void)state;
	char *all = xasprintf("%s%s%s", EV_ADD, EV_MOD, EV_BOOKMARK);
	struct watch_decoder d;
	struct seen s = {.stop_after = 2};
	char *err = NULL;
	watch_decoder_init(&d);
	assert_int_equal(watch_decoder_feed(&d, all, strlen(all), record, &s, &err), 1);
	assert_int_equal(s.n, 2);
	watch_decoder_release(&d);
	free(all);
}

static void test_malformed_event_is_an_error(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":\n", /* not JSON */
		"{\"object\":{}}\n",                                /* no type */
		"{\"type\":\"ADDED\"}\n",                           /* no object */
		"{\"type\":\"ADDED\",\"object\":[]}\n",             /* object not an object */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct watch_decoder d;
		struct seen s = {0};
		char *err = NULL;
		watch_decoder_init(&d);
		assert_int_equal(watch_decoder_feed(&d, bad[i], strlen(bad[i]), record, &s, &err), -1);
		assert_non_null(err);
		assert_int_equal(s.n, 0);
		free(err);
		watch_decoder_release(&d);
	}
}

/* An ADDED event of exactly len bytes (without its newline), a big string inside. */
static char *event_of_size(size_t len)
{
	static const char head[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\"},\"data\":[\"";
	static const char tail[] = "\"]}}";
	char *ev = xmalloc(len + 2);
	memcpy(ev, head, sizeof(head) - 1);
	/*
	 * Strings of 1,000 bytes: text the parse budget holds (about its size
	 * once parsed), so that the cap on the text is what is tested here.
	 */
	size_t fill = len - (sizeof(head) - 1) - (sizeof(tail) - 1);
	for (size_t i = 0; i < fill; i++)
		ev[sizeof(head) - 1 + i] = i % 1003 == 1000 ? '"' : i % 1003 == 1001 ? ',' : i % 1003 == 1002 ? '"' : 'x';
	if (fill % 1003 > 1000)
		memset(ev + sizeof(head) - 1 + fill - fill % 1003, 'x', fill % 1003); /* no "," cut short */
	memcpy(ev + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	ev[len] = '\n';
	ev[len + 1] = '\0';
	return ev;
}

/*
 * The cap fits the object size limit: etcd stores objects up to 1.5 MiB
 * and the API server takes request bodies up to 3 MiB, so an event of that
 * size passes; a bigger one is refused, and the buffer never grows past
 * the cap, which the operator's 128 Mi memory limit can afford.
 */
static void test_event_size_limit(void **state)
{
	(void)state;
	/* 1.5 MiB of '<' is 9 MiB of JSON; the cap must hold it and stay well under 128 Mi. */
	assert_true(WATCH_EVENT_MAX >= (9u << 20) + (64u << 10));
	assert_true(WATCH_EVENT_MAX <= (10u << 20));

	/* Exactly the cap, fed in 64 KiB reads: delivered. */
	char *ev = event_of_size(WATCH_EVENT_MAX);
	struct watch_decoder d;
	struct seen s = {0};
	watch_decoder_init(&d);
	for (size_t off = 0, n; off < WATCH_EVENT_MAX + 1; off += n) {
		n = WATCH_EVENT_MAX + 1 - off < (64u << 10) ? WATCH_EVENT_MAX + 1 - off : (64u << 10);
		feed_ok(&d, ev + off, n, &s);
	}
	assert_int_equal(s.n, 1);
	assert_string_equal(s.name[0], "big");
	watch_decoder_release(&d);
	free(ev);

	/* One byte more: refused, nothing delivered. */
	ev = event_of_size(WATCH_EVENT_MAX + 1);
	memset(&s, 0, sizeof(s));
	char *err = NULL;
	watch_decoder_init(&d);
	assert_int_equal(watch_decoder_feed(&d, ev, WATCH_EVENT_MAX + 2, record, &s, &err), -1);
	assert_non_null(strstr(err, "larger than"));
	assert_int_equal(s.n, 0);
	free(err);
	watch_decoder_release(&d);
	free(ev);
}

/* An endless line is refused once past the cap, the buffer bounded all along. */
static void test_oversized_event_is_refused(void **state)
{
	(void)state;
	size_t chunk = 1u << 20;
	char *junk = xmalloc(chunk);
	memset(junk, 'x', chunk);
	struct watch_decoder d;
	struct seen s = {0};
	char *err = NULL;
	int rc = 0;
	size_t fed = 0;
	watch_decoder_init(&d);
	while (rc == 0 && fed < (64u << 20)) {
		rc = watch_decoder_feed(&d, junk, chunk, record, &s, &err);
		fed += chunk;
		assert_true(d.pending.alloc <= WATCH_EVENT_MAX + 1);
	}
	assert_int_equal(rc, -1);
	assert_true(fed <= WATCH_EVENT_MAX + chunk);
	assert_non_null(strstr(err, "larger than"));
	free(err);
	free(junk);
	watch_decoder_release(&d);
}

/* An event whose object nests depth arrays: {"type":"ADDED","object":{"d":[[...]]}} and a newline. */
static char *deep_event(size_t depth, size_t *len)
{
	static const char head[] = "{\"type\":\"ADDED\",\"object\":{\"d\":";
	static const char tail[] = "}}\n";
	*len = strlen(head) + 2 * depth + strlen(tail);
	char *ev = xmalloc(*len + 1);
	memcpy(ev, head, strlen(head));
	memset(ev + strlen(head), '[', depth);
	memset(ev + strlen(head) + depth, ']', depth);
	memcpy(ev + strlen(head) + 2 * depth, tail, strlen(tail) + 1);
	return ev;
}

/*
 * Nesting: an event is read under DOC_MAX_DEPTH (64) levels, the operator's
 * own recursive code stays shallow; the event and its object are two
 * levels. Deeper is refused with that said, however deep, never a stack
 * overflow; within it is delivered.
 */
static void test_deep_event_is_refused(void **state)
{
	(void)state;
	size_t len;
	char *ev = deep_event(DOC_MAX_DEPTH - 2, &len);
	struct watch_decoder d;
	struct seen s = {0};
	watch_decoder_init(&d);
	feed_ok(&d, ev, len, &s);
	assert_int_equal(s.n, 1);
	watch_decoder_release(&d);
	free(ev);

	ev = deep_event(DOC_MAX_DEPTH - 1, &len);
	memset(&s, 0, sizeof(s));
	char *err = NULL;
	watch_decoder_init(&d);
	assert_int_equal(watch_decoder_feed(&d, ev, len, record, &s, &err), -1);
	if (!strstr(err, "watch event is refused: JSON error at line 1, column 93: too large: objects and arrays "
			 "nested deeper than 64 levels"))
		fail_msg("message: %s", err);
	assert_int_equal(s.n, 0);
	free(err);
	watch_decoder_release(&d);
	free(ev);

	ev = deep_event(1000000, &len);
	watch_decoder_init(&d);
	assert_int_equal(watch_decoder_feed(&d, ev, len, record, &s, &err), -1);
	assert_non_null(strstr(err, "nested deeper than 64 levels"));
	free(err);
	watch_decoder_release(&d);
	free(ev);
}

/* What the decoder's on_oversize was told. */
struct refused {
	int n;
	char type[16], ns[64], name[254], uid[64], rv[64], why[512];
	int answer; /* what it returns */
};

static int on_refused(void *ctx, const char *type, const struct kube_object_id *id, const char *why)
{
	struct refused *r = ((struct seen *)ctx)->refused;
	r->n++;
	snprintf(r->type, sizeof(r->type), "%s", type ? type : "(null)");
	snprintf(r->ns, sizeof(r->ns), "%s", id->namespace);
	snprintf(r->name, sizeof(r->name), "%s", id->name);
	snprintf(r->uid, sizeof(r->uid), "%s", id->uid);
	snprintf(r->rv, sizeof(r->rv), "%s", id->resource_version);
	snprintf(r->why, sizeof(r->why), "%s", why);
	return r->answer;
}

/*
 * A MODIFIED event whose object holds n empty objects in an annotation-like
 * field, metadata after a large managedFields (which the peek skips, never
 * builds). New string, length in *len.
 */
static char *braces_event(size_t n, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	if (strbuf_addstr(&sb, "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"StatefulCluster\",\"spec\":{\"template\":[") < 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if (strbuf_addstr(&sb, i ? ",{}" : "{}") < 0)
			abort();
	if (strbuf_addstr(&sb, "]},\"metadata\":{\"managedFields\":[{\"fieldsV1\":{\"f:spec\":{}}}],"
			       "\"namespace\":\"team-a\",\"name\":\"db\",\"uid\":\"u-1\",\"resourceVersion\":\"42\"}}}\n") < 0)
		abort();
	*len = sb.len;
	return strbuf_detach(&sb);
}

/*
 * The parse budget (KUBE_OBJECT_MAX_PARSED): an event whose tree would pass
 * it is never built; with on_oversize it is skipped and named (type,
 * namespace, name, uid, resourceVersion), the events around it delivered,
 * the stream goes on; without, it ends the stream with the budget named.
 * 450,000 "{}" (1.3 MB, the body) would take about 100 MiB.
 */
static void test_event_over_the_parse_budget_is_skipped(void **state)
{
	(void)state;
	size_t len;
	char *big = braces_event(450000, &len);
	assert_true(len < 1400000);
	struct refused r = {0};
	struct seen s = {.refused = &r};
	struct watch_decoder d;
	watch_decoder_init(&d);
	d.on_oversize = on_refused;
	feed_ok(&d, EV_ADD, strlen(EV_ADD), &s);
	feed_ok(&d, big, len, &s);
	feed_ok(&d, EV_MOD, strlen(EV_MOD), &s);
	if (s.n != 2)
		fail_msg("%d events: %s %s %s, %d refused", s.n, s.name[0], s.name[1], s.name[2], r.n);
	assert_string_equal(s.name[0], "a");
	assert_string_equal(s.name[1], "b");
	assert_int_equal(r.n, 1);
	assert_string_equal(r.type, "MODIFIED");
	assert_string_equal(r.ns, "team-a");
	assert_string_equal(r.name, "db");
	assert_string_equal(r.uid, "u-1");
	assert_string_equal(r.rv, "42");
	if (!strstr(r.why, "more than 16777216 bytes of memory, the budget for an object from the API server"))
		fail_msg("why: %s", r.why);
	/* It may end the stream. */
	r.answer = 1;
	char *err = NULL;
	assert_int_equal(watch_decoder_feed(&d, big, len, record, &s, &err), 1);
	assert_null(err);
	assert_int_equal(r.n, 2);
	watch_decoder_release(&d);

	/* Without on_oversize: an error that says which budget. */
	watch_decoder_init(&d);
	assert_int_equal(watch_decoder_feed(&d, big, len, record, &s, &err), -1);
	if (!strstr(err, "watch event is refused: JSON error: too large: its parsed tree takes more than 16777216 "
			 "bytes of memory, the budget for an object from the API server"))
		fail_msg("message: %s", err);
	free(err);
	watch_decoder_release(&d);
	free(big);

	/* Just under the budget: delivered. About 200 bytes of heap a "{}" of text. */
	big = braces_event(60000, &len);
	memset(&s, 0, sizeof(s));
	s.refused = &r;
	r.n = 0;
	watch_decoder_init(&d);
	d.on_oversize = on_refused;
	feed_ok(&d, big, len, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(r.n, 0);
	watch_decoder_release(&d);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_split_at_every_byte),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_several_events_in_one_read),
		cmocka_unit_test(test_error_410_is_reported),
		cmocka_unit_test(test_blank_lines_and_crlf_are_skipped),
		cmocka_unit_test(test_stop_drops_the_rest),
		cmocka_unit_test(test_malformed_event_is_an_error),
		cmocka_unit_test(test_event_size_limit),
		cmocka_unit_test(test_oversized_event_is_refused),
		cmocka_unit_test(test_deep_event_is_refused),
		cmocka_unit_test(test_event_over_the_parse_budget_is_skipped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
