/* The informer cache: keys, duplicate deliveries, secondary indexes, copies not shared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/store.h"
#include "util/xalloc.h"

static json_t *pod(const char *ns, const char *name, const char *rv, const char *owner_uid)
{
	json_t *o = json_pack("{s:s, s:{s:s, s:s, s:s}}", "kind", "Pod", "metadata", "namespace", ns,
			      "name", name, "resourceVersion", rv);
	if (owner_uid)
		json_object_set_new(json_object_get(o, "metadata"), "ownerReferences",
				    json_pack("[{s:s, s:s}]", "kind", "StatefulSet", "uid", owner_uid));
	return o;
}

static const char *name_of(const json_t *o)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

static void test_upsert_get_delete(void **state)
{
	(void)state;
	struct store *s = store_new();
	json_t *a = pod("ns1", "a", "1", NULL);
	json_t *old = NULL;
	assert_true(store_upsert(s, a, &old));
	assert_null(old);
	assert_int_equal(store_len(s), 1);

	json_t *got = store_get(s, "ns1/a");
	assert_non_null(got);
	assert_true(json_equal(got, a));
	/* A reader's copy is its own: changing it leaves the cache as it was. */
	json_object_set_new(got, "kind", json_string("Changed"));
	json_t *again = store_get(s, "ns1/a");
	assert_string_equal(json_string_value(json_object_get(again, "kind")), "Pod");
	json_decref(got);
	json_decref(again);

	assert_null(store_get(s, "ns2/a"));
	assert_false(store_delete(s, "ns2/a", NULL));
	assert_true(store_delete(s, "ns1/a", &old));
	assert_non_null(old);
	assert_string_equal(name_of(old), "a");
	assert_int_equal(store_len(s), 0);
	json_decref(old);
	json_decref(a);
	store_free(s);
}

static void test_same_resource_version_is_a_duplicate(void **state)
{
	(void)state;
	struct store *s = store_new();
	json_t *v1 = pod("ns", "a", "7", NULL);
	json_t *v2 = pod("ns", "a", "8", NULL);
	json_t *old = NULL;
	assert_true(store_upsert(s, v1, NULL));
	assert_false(store_upsert(s, v1, &old)); /* redelivered: no change, no handler */
	assert_null(old);
	assert_true(store_upsert(s, v2, &old));
	assert_non_null(old);
	char *rv = store_resource_version(s, "ns/a");
	assert_string_equal(rv, "8");
	assert_string_equal(json_string_value(json_object_get(json_object_get(old, "metadata"),
							      "resourceVersion")),
			    "7");
	free(rv);
	json_decref(old);
	json_decref(v1);
	json_decref(v2);
	store_free(s);
}

static int count_named(json_t *arr, const char *name)
{
	int n = 0;
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o) n += !strcmp(name_of(o), name);
	return n;
}

static void test_indexes_follow_updates_and_deletes(void **state)
{
	(void)state;
	struct store *s = store_new();
	store_add_index(s, "namespace", store_index_namespace);
	store_add_index(s, "owner", store_index_owner_uid);
	json_t *objs[] = {pod("x", "a", "1", "uid-1"), pod("x", "b", "1", "uid-1"),
			  pod("y", "c", "1", "uid-2")};
	for (size_t i = 0; i < 3; i++)
		assert_true(store_upsert(s, objs[i], NULL));

	json_t *r = store_by_index(s, "owner", "uid-1");
	assert_int_equal(json_array_size(r), 2);
	assert_int_equal(count_named(r, "a") + count_named(r, "b"), 2);
	json_decref(r);
	r = store_by_index(s, "namespace", "y");
	assert_int_equal(json_array_size(r), 1);
	json_decref(r);

	/* b moves to another owner: the old index value must forget it. */
	json_t *b2 = pod("x", "b", "2", "uid-2");
	assert_true(store_upsert(s, b2, NULL));
	r = store_by_index(s, "owner", "uid-1");
	assert_int_equal(json_array_size(r), 1);
	assert_int_equal(count_named(r, "a"), 1);
	json_decref(r);
	r = store_by_index(s, "owner", "uid-2");
	assert_int_equal(json_array_size(r), 2);
	json_decref(r);

	assert_true(store_delete(s, "y/c", NULL));
	r = store_by_index(s, "owner", "uid-2");
	assert_int_equal(json_array_size(r), 1);
	assert_int_equal(count_named(r, "b"), 1);
	json_decref(r);
	r = store_by_index(s, "namespace", "y");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);
	r = store_by_index(s, "no-such-index", "x");
	assert_int_equal(json_array_size(r), 0);
	json_decref(r);

	for (size_t i = 0; i < 3; i++)
		json_decref(objs[i]);
	json_decref(b2);
	store_free(s);
}

static void test_many_keys_and_listing(void **state)
{
	(void)state;
	struct store *s = store_new();
	for (int i = 0; i < 5000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "p%d", i);
		json_t *p = pod("ns", name, "1", NULL);
		assert_true(store_upsert(s, p, NULL));
		json_decref(p);
	}
	assert_int_equal(store_len(s), 5000);
	size_t n;
	char **keys = store_keys(s, &n);
	assert_int_equal(n, 5000);
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		found += !strcmp(keys[i], "ns/p4999");
		free(keys[i]);
	}
	free(keys);
	assert_int_equal(found, 1);
	json_t *all = store_list(s);
	assert_int_equal(json_array_size(all), 5000);
	json_decref(all);
	store_free(s);
}

static void test_cluster_scoped_key(void **state)
{
	(void)state;
	struct store *s = store_new();
	json_t *pv = json_pack("{s:{s:s, s:s}}", "metadata", "name", "pv-1", "resourceVersion", "3");
	assert_true(store_upsert(s, pv, NULL));
	json_t *got = store_get(s, "pv-1");
	assert_non_null(got);
	json_decref(got);
	json_decref(pv);
	store_free(s);
}

/* A key left out for its size: no object, but known to exist until stored or deleted again. */
static void test_refused_key(void **state)
{
	(void)state;
	struct store *s = store_new();
	json_t *p = pod("ns", "a", "1", NULL);
	store_upsert(s, p, NULL);
	assert_false(store_refused(s, "ns/a"));
	json_t *old = NULL;
	assert_true(store_refuse(s, "ns/a", &old));
	assert_non_null(old);
	json_decref(old);
	assert_null(store_get(s, "ns/a"));
	assert_true(store_refused(s, "ns/a"));
	assert_false(store_refuse(s, "ns/b", NULL)); /* never stored: marked all the same */
	assert_true(store_refused(s, "ns/b"));
	store_upsert(s, p, NULL); /* readable again */
	assert_false(store_refused(s, "ns/a"));
	assert_false(store_delete(s, "ns/b", NULL)); /* gone */
	assert_false(store_refused(s, "ns/b"));
	json_decref(p);
	store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upsert_get_delete),
		cmocka_unit_test(test_same_resource_version_is_a_duplicate),
		cmocka_unit_test(test_indexes_follow_updates_and_deletes),
		cmocka_unit_test(test_many_keys_and_listing),
		cmocka_unit_test(test_cluster_scoped_key),
		cmocka_unit_test(test_refused_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
