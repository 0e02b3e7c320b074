/*
 * Autoresize's "said once" memory (issue 27, finding 6): a Warning once per
 * change; what was said of workloads and policies gone is forgotten at
 * each poll, workloads re-created under new names do not grow it, one
 * workload with thousands of junk policy annotations costs a few entries,
 * the hard cap holds and refuses new news rather than grow, and the bytes
 * of a full map (the longest entries) stay under the documented bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/autoresize/autoresize_act.h"
#include "controllers/autoresize/autoresize_said.h"
#include "loopback.h"
#include "runtime/events.h"
#include "util/log.h"
#include "util/xalloc.h"

/* A StatefulSet ns/name without templates, with junk policy annotations junk-0 .. junk-(n-1). New reference. */
static json_t *junk_workload(const char *ns, const char *name, int junk)
{
	json_t *annotations = json_object();
	for (int k = 0; k < junk; k++) {
		char *key = xasprintf("autoresize.stateful-operator.io/junk-%05d", k);
		json_object_set_new(annotations, key, json_string("used=80%, max=1Ti"));
		free(key);
	}
	return json_pack("{s:s, s:{s:s, s:s, s:o}, s:{s:[]}}", "kind", "StatefulSet", "metadata", "name", name,
			 "namespace", ns, "annotations", annotations, "spec", "volumeClaimTemplates");
}

/* An autoresize context whose Events go nowhere (a closed port, no retries): enough for autoresize_consider. */
struct bed {
	struct kube_client *client;
	struct autoresize_ctx ac;
	struct poll p;
};

static int bed_setup(void **state)
{
	struct bed *b = xcalloc(1, sizeof(*b));
	int port;
	close(loopback_listen(1, &port));
	struct kube_client_options co = {.max_retries = -1};
	b->client = loopback_client(port, &co);
	b->ac.deps.base.events = event_recorder_new(b->client, "autoresize", "test");
	autoresize_said_init(&b->ac.said);
	b->p = (struct poll){.table = json_object(), .errors = json_array()};
	*state = b;
	return 0;
}

static int bed_teardown(void **state)
{
	struct bed *b = *state;
	autoresize_said_release(&b->ac.said);
	event_recorder_free(b->ac.deps.base.events);
	kube_client_free(b->client);
	json_decref(b->p.table);
	json_decref(b->p.errors);
	free(b);
	return 0;
}

/* One poll as the controller runs it: forget what is gone, then consider each live workload. */
static void poll_once(struct bed *b, const json_t *sets)
{
	autoresize_said_prune(&b->ac.said, sets, NULL, NULL);
	size_t i;
	const json_t *w;
	json_array_foreach(sets, i, w)
		autoresize_consider(&b->ac, &b->p, w, false);
}

static void test_said_once_per_change(void **state)
{
	(void)state;
	struct autoresize_said m;
	autoresize_said_init(&m);
	assert_true(autoresize_said_news(&m, "ns/db/data/max", "10Gi"));
	assert_false(autoresize_said_news(&m, "ns/db/data/max", "10Gi"));
	assert_true(autoresize_said_news(&m, "ns/db/data/max", "20Gi"));
	assert_true(autoresize_said_forget(&m, "ns/db/data/max"));
	assert_false(autoresize_said_forget(&m, "ns/db/data/max"));
	assert_true(autoresize_said_news(&m, "ns/db/data/max", "20Gi"));
	assert_int_equal(autoresize_said_size(&m), 1);
	autoresize_said_release(&m);
}

/*
 * Workloads with junk policies, re-created under new names at each poll:
 * the memory stays what the 300 live ones need (2 entries each), where it
 * grew by 600 a poll before; a policy removed, or all workloads gone,
 * leaves nothing of them.
 */
static void test_gone_workloads_forgotten(void **state)
{
	struct bed *b = *state;
	enum { LIVE = 300 };
	json_t *sets = NULL;
	for (int round = 0; round < 3; round++) {
		json_decref(sets);
		sets = json_array();
		for (int i = 0; i < LIVE; i++) {
			char *name = xasprintf("w-%d-%d", round, i);
			json_array_append_new(sets, junk_workload("ns", name, 2));
			free(name);
		}
		poll_once(b, sets);
		assert_int_equal(autoresize_said_size(&b->ac.said), 2 * LIVE);
	}
	/* One policy removed from one workload: its entry goes at the next poll. */
	json_object_del((json_t *)kube_obj_annotations(json_array_get(sets, 0)),
			"autoresize.stateful-operator.io/junk-00001");
	poll_once(b, sets);
	assert_int_equal(autoresize_said_size(&b->ac.said), 2 * LIVE - 1);
	/* All gone (the controller's poll with no workload under a policy). */
	json_array_clear(sets);
	poll_once(b, sets);
	assert_int_equal(autoresize_said_size(&b->ac.said), 0);
	json_decref(sets);
}

/* One workload with 5,000 junk policy annotations: 32 read, one Warning for the rest; 33 entries. */
static void test_one_workload_junk_keys(void **state)
{
	struct bed *b = *state;
	json_t *sets = json_array();
	json_array_append_new(sets, junk_workload("ns", "junk", 5000));
	for (int round = 0; round < 2; round++) {
		poll_once(b, sets);
		assert_int_equal(autoresize_said_size(&b->ac.said), 33);
		assert_true(json_is_string(json_object_get(b->ac.said.said, "ns/junk/*/policies")));
		assert_non_null(strstr(json_string_value(json_object_get(b->ac.said.said, "ns/junk/*/policies")),
				       "5000 autoresize.stateful-operator.io/ annotations: only the first 32"));
		assert_non_null(json_object_get(b->ac.said.said, "ns/junk/junk-00031/policy"));
		assert_null(json_object_get(b->ac.said.said, "ns/junk/junk-00032/policy"));
	}
	/* Down to 32: the workload-wide Warning is forgotten too. */
	json_t *annotations = (json_t *)kube_obj_annotations(json_array_get(sets, 0));
	for (int k = 32; k < 5000; k++) {
		char *key = xasprintf("autoresize.stateful-operator.io/junk-%05d", k);
		json_object_del(annotations, key);
		free(key);
	}
	poll_once(b, sets);
	assert_int_equal(autoresize_said_size(&b->ac.said), 32);
	json_decref(sets);
}

/* Keys of workload i of the cap test: "ns/w-<i>/data/<what>". New string. */
static char *cap_key(int i, const char *what)
{
	return xasprintf("ns/w-%d/data/%s", i, what);
}

/* The hard cap: full, a new key is refused (not said), a known one still changes; below it again, news is said. */
static void test_cap_holds(void **state)
{
	(void)state;
	struct autoresize_said m;
	autoresize_said_init(&m);
	for (int i = 0; i < AUTORESIZE_SAID_MAX + 500; i++) {
		char *key = cap_key(i, "max");
		assert_int_equal(autoresize_said_news(&m, key, "10Gi"), i < AUTORESIZE_SAID_MAX);
		free(key);
	}
	assert_int_equal(autoresize_said_size(&m), AUTORESIZE_SAID_MAX);
	assert_true(m.full_logged);
	char *known = cap_key(7, "max");
	assert_true(autoresize_said_news(&m, known, "20Gi"));
	assert_false(autoresize_said_news(&m, known, "20Gi"));
	assert_int_equal(autoresize_said_size(&m), AUTORESIZE_SAID_MAX);
	/* Ten workloads left: the rest is forgotten, and new news is said again. */
	json_t *sets = json_array();
	for (int i = 0; i < 10; i++) {
		char *name = xasprintf("w-%d", i);
		json_array_append_new(sets, json_pack("{s:{s:s, s:s, s:{s:s}}}", "metadata", "name", name, "namespace",
						      "ns", "annotations", "autoresize.stateful-operator.io/data",
						      "max=1Ti"));
		free(name);
	}
	autoresize_said_prune(&m, sets, NULL, NULL);
	assert_int_equal(autoresize_said_size(&m), 10);
	assert_false(m.full_logged);
	char *fresh = cap_key(3, "usage");
	assert_true(autoresize_said_news(&m, fresh, "unavailable"));
	free(fresh);
	free(known);
	json_decref(sets);
	autoresize_said_release(&m);
}

/* Bytes jansson holds (as malloc counts them), while the counting allocator is set. */
static size_t held;

static void *counting_malloc(size_t n)
{
	void *p = malloc(n);
	if (p)
		held += malloc_usable_size(p);
	return p;
}

static void counting_free(void *p)
{
	if (p)
		held -= malloc_usable_size(p);
	free(p);
}

/* A name of n characters: a-z and digits, the i-th different from the others. New string. */
static char *long_name(size_t n, int i)
{
	char *s = xmalloc(n + 1);
	memset(s, 'a', n);
	snprintf(s, n + 1, "%07d", i);
	s[7] = 'a';
	s[n] = '\0';
	return s;
}

/*
 * The bound the header documents: a map full of the longest entries
 * (namespace 63, workload name 253, template 63 characters, "claim <253
 * characters> recommend", and news of 450 characters, longer than any
 * message) holds at most AUTORESIZE_SAID_MAX × 1,536 bytes; and the map
 * of usual entries its share of that.
 */
static void test_memory_bound(void **state)
{
	(void)state;
	json_set_alloc_funcs(counting_malloc, counting_free);
	held = 0;
	struct autoresize_said m;
	autoresize_said_init(&m);
	char *ns = long_name(63, 0), *tpl = long_name(63, 0), *claim = long_name(253, 0), *news = long_name(450, 0);
	for (int i = 0; i < AUTORESIZE_SAID_MAX; i++) {
		char *name = long_name(253, i);
		char *key = xasprintf("%s/%s/%s/claim %s recommend", ns, name, tpl, claim);
		assert_true(autoresize_said_news(&m, key, news));
		free(key);
		free(name);
	}
	size_t longest = held;
	autoresize_said_release(&m);
	assert_int_equal(held, 0);
	autoresize_said_init(&m);
	for (int i = 0; i < AUTORESIZE_SAID_MAX; i++) {
		char *key = xasprintf("shop/db-%d/data/usage", i);
		assert_true(autoresize_said_news(&m, key, "unavailable"));
		free(key);
	}
	size_t usual = held;
	autoresize_said_release(&m);
	json_set_alloc_funcs(malloc, free);
	printf("said-once map full (%d entries): longest entries %zu bytes (%zu per entry), usual %zu bytes (%zu per "
	       "entry)\n",
	       AUTORESIZE_SAID_MAX, longest, longest / AUTORESIZE_SAID_MAX, usual, usual / AUTORESIZE_SAID_MAX);
	assert_true(longest <= (size_t)AUTORESIZE_SAID_MAX * 1536);
	free(ns);
	free(tpl);
	free(claim);
	free(news);
}

/*
 * What a Namespace's or StorageClass's policy covers (the workload has no
 * annotation of its own) and those objects' own refusals stay remembered
 * while they are live, and go when they are not: else their Warnings would
 * come again at every poll.
 */
static void test_covered_subjects_kept(void **state)
{
	(void)state;
	struct autoresize_said m;
	autoresize_said_init(&m);
	assert_true(autoresize_said_news(&m, "ns/db/data/usage", "unavailable"));
	assert_true(autoresize_said_news(&m, "!StorageClass/fast/policy/invalid", "used: ..."));
	assert_true(autoresize_said_news(&m, "ns/db/logs/usage", "unavailable"));
	json_t *sets = json_pack("[{s:{s:s, s:s}}]", "metadata", "name", "db", "namespace", "ns");
	json_t *also = json_pack("{s:b, s:b}", "ns/db/data", 1, "!StorageClass/fast/policy", 1);
	autoresize_said_prune(&m, sets, NULL, also);
	assert_int_equal(autoresize_said_size(&m), 2);
	assert_false(autoresize_said_news(&m, "ns/db/data/usage", "unavailable"));
	assert_false(autoresize_said_news(&m, "!StorageClass/fast/policy/invalid", "used: ..."));
	autoresize_said_prune(&m, sets, NULL, NULL);
	assert_int_equal(autoresize_said_size(&m), 0);
	json_decref(also);
	json_decref(sets);
	autoresize_said_release(&m);
}

int main(void)
{
	/* A Warning per junk policy would fill the test's output (and its failed Event another line). */
	log_setup(LOG_ERROR, LOG_FORMAT_TEXT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_said_once_per_change),
		cmocka_unit_test_setup_teardown(test_gone_workloads_forgotten, bed_setup, bed_teardown),
		cmocka_unit_test_setup_teardown(test_one_workload_junk_keys, bed_setup, bed_teardown),
		cmocka_unit_test(test_cap_holds),
		cmocka_unit_test(test_memory_bound),
		cmocka_unit_test(test_covered_subjects_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
