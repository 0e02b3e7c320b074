/*
 * The resize-state annotation: read once into enums, written back as the
 * same JSON, keys this version does not know kept (the integration tests
 * and older operators read it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_state.h"
#include "runtime/store.h"

#define NOW_MS 1795262400000LL /* 2026-11-21T12:00:00Z */

/* A StatefulSet with uid "u1" carrying state (NULL: none). New reference. */
static json_t *sts_with(const char *state)
{
	json_t *s = json_pack("{s:{s:s, s:s, s:{}}}", "metadata", "name", "web", "uid", "u1", "annotations");
	if (state)
		json_object_set_new(json_object_get(json_object_get(s, "metadata"), "annotations"),
				    ANNOTATION_RESIZE_STATE, json_string(state));
	return s;
}

static void expect_read(const char *state, bool present, enum resize_phase phase, enum copy_stage stage)
{
	json_t *s = sts_with(state);
	struct resize_state st;
	assert_int_equal(resize_state_read(s, &st), present);
	if (st.phase != phase || st.stage != stage)
		fail_msg("%s: phase %d stage %d, want %d %d", state ? state : "(none)", st.phase, st.stage, phase,
			 stage);
	resize_state_release(&st);
	json_decref(s);
}

static void test_read(void **state)
{
	(void)state;
	expect_read(NULL, false, RESIZE_PHASE_NONE, COPY_STAGE_NONE);
	expect_read("not json", false, RESIZE_PHASE_NONE, COPY_STAGE_NONE);
	expect_read("[1]", false, RESIZE_PHASE_NONE, COPY_STAGE_NONE);
	expect_read("{}", true, RESIZE_PHASE_NONE, COPY_STAGE_NONE);
	expect_read("{\"phase\":\"Expanding\"}", true, RESIZE_PHASE_EXPANDING, COPY_STAGE_NONE);
	expect_read("{\"phase\":\"Adopting\"}", true, RESIZE_PHASE_ADOPTING, COPY_STAGE_NONE);
	expect_read("{\"phase\":\"Cleaning\"}", true, RESIZE_PHASE_CLEANING, COPY_STAGE_NONE);
	expect_read("{\"phase\":\"Shrinking\"}", true, RESIZE_PHASE_UNKNOWN, COPY_STAGE_NONE);
	expect_read("{\"phase\":7}", true, RESIZE_PHASE_NONE, COPY_STAGE_NONE);
	expect_read("{\"phase\":\"Copying\",\"batch\":{\"step\":\"Swap\"}}", true, RESIZE_PHASE_COPYING,
		    COPY_STAGE_SWAP);
	expect_read("{\"phase\":\"Copying\",\"batch\":{\"step\":\"Ready\"}}", true, RESIZE_PHASE_COPYING,
		    COPY_STAGE_READY);
	expect_read("{\"phase\":\"Copying\",\"batch\":{}}", true, RESIZE_PHASE_COPYING, COPY_STAGE_UNKNOWN);
}

/*
 * Anyone who may edit the set writes the annotation: one that would take
 * more than the annotation budget (8 MiB) once parsed reads as no state,
 * never built (kube_obj_annotation_json). 80,000 "{}" fit the 256 KiB of
 * annotations and would take about 19 MiB.
 */
static void test_state_over_the_parse_budget_is_none(void **state)
{
	(void)state;
	size_t n = 80000;
	char *text = malloc(3 * n + 64);
	assert_non_null(text);
	char *p = text + sprintf(text, "{\"phase\":\"Expanding\",\"x\":[");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s{}", i ? "," : "");
	strcpy(p, "]}");
	assert_true(strlen(text) < 256u * 1024u);
	expect_read(text, false, RESIZE_PHASE_NONE, COPY_STAGE_NONE);
	strcpy(text + strlen("{\"phase\":\"Expanding\",\"x\":[{}"), "]}"); /* the same with one "{}": read */
	expect_read(text, true, RESIZE_PHASE_EXPANDING, COPY_STAGE_NONE);
	free(text);
}

static void test_written_back_with_unknown_keys(void **state)
{
	(void)state;
	json_t *s = sts_with("{\"phase\":\"Copying\",\"strategy\":\"copy\",\"future\":{\"x\":1},"
			     "\"batch\":{\"step\":\"Stop\",\"ordinals\":[1]}}");
	struct resize_state st;
	assert_true(resize_state_read(s, &st));
	assert_true(st.copy);
	json_t *n = resize_state_next_stage(&st, NOW_MS, COPY_STAGE_COPY);
	char *text = resize_state_text(n);
	assert_string_equal(text, "{\"batch\":{\"ordinals\":[1],\"step\":\"Copy\"},\"future\":{\"x\":1},"
				  "\"phase\":\"Copying\",\"strategy\":\"copy\",\"updated\":\"2026-11-21T12:00:00Z\",\"v\":1}");
	free(text);
	json_decref(n);
	n = resize_state_next(&st, NOW_MS, RESIZE_PHASE_CLEANING);
	assert_string_equal(kube_obj_str(n, "phase"), "Cleaning");
	assert_non_null(json_object_get(n, "future"));
	json_decref(n);
	resize_state_release(&st);
	json_decref(s);
}

static void test_recreating(void **state)
{
	(void)state;
	static const struct {
		const char *state;
		bool yes;
	} cases[] = {
		{"{\"phase\":\"Recreating\",\"statefulSetUID\":\"u1\"}", true},
		{"{\"phase\":\"Saving\",\"statefulSetUID\":\"u1\"}", true},
		{"{\"phase\":\"Copying\",\"statefulSetUID\":\"u1\"}", true},
		{"{\"phase\":\"Recreating\",\"statefulSetUID\":\"u0\"}", false}, /* an earlier set's */
		{"{\"phase\":\"Recreating\"}", false},
		{"{\"phase\":\"Adopting\",\"statefulSetUID\":\"u1\"}", false},
		{NULL, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *s = sts_with(cases[i].state);
		if (resize_state_recreating(s) != cases[i].yes)
			fail_msg("%s: want %d", cases[i].state ? cases[i].state : "(none)", cases[i].yes);
		json_decref(s);
	}
}

/* The stuck-resize gauge's value: the age of resizes still at work, and only of those. */
static void test_in_flight_seconds(void **state)
{
	(void)state;
	static const struct {
		const char *state;
		double age; /* -1: not in flight */
	} cases[] = {
		{"{\"phase\":\"Expanding\",\"started\":\"2026-11-21T11:00:00Z\"}", 3600},
		{"{\"phase\":\"Saving\",\"started\":\"2026-11-21T11:59:30Z\"}", 30},
		{"{\"phase\":\"Recreating\",\"started\":\"2026-11-21T10:00:00Z\"}", 7200},
		{"{\"phase\":\"Adopting\",\"started\":\"2026-11-21T12:00:00Z\"}", 0},
		{"{\"phase\":\"Copying\",\"started\":\"2026-11-20T12:00:00Z\",\"batch\":{\"step\":\"Copy\"}}", 86400},
		{"{\"phase\":\"Modifying\",\"started\":\"2026-11-21T11:50:00Z\"}", 600},
		{"{\"phase\":\"Expanding\",\"started\":\"2026-11-21T12:05:00Z\"}", 0}, /* clock skew */
		{"{\"phase\":\"Failed\",\"started\":\"2026-11-21T11:00:00Z\"}", -1},
		{"{\"phase\":\"Cleaning\",\"started\":\"2026-11-21T11:00:00Z\"}", -1}, /* done, old volumes kept */
		{"{\"phase\":\"Shrinking\",\"started\":\"2026-11-21T11:00:00Z\"}", -1},
		{"{\"phase\":\"Expanding\"}", -1},
		{"{\"phase\":\"Expanding\",\"started\":\"yesterday\"}", -1},
		{"{\"phase\":\"Expanding\",\"started\":5}", -1},
		{"{\"started\":\"2026-11-21T11:00:00Z\"}", -1},
		{"not json", -1},
		{NULL, -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *s = sts_with(cases[i].state);
		double age = resize_state_in_flight_seconds(s, NOW_MS / 1000);
		if (age != cases[i].age)
			fail_msg("%s: %g s, want %g", cases[i].state ? cases[i].state : "(none)", age, cases[i].age);
		json_decref(s);
	}
}

/* sts_with(state), named name in namespace "ns" at resourceVersion rv, for a store. New reference. */
static json_t *stored_sts(const char *name, const char *rv, const char *state)
{
	json_t *o = sts_with(state);
	json_t *meta = json_object_get(o, "metadata");
	json_object_set_new(meta, "name", json_string(name));
	json_object_set_new(meta, "namespace", json_string("ns"));
	json_object_set_new(meta, "resourceVersion", json_string(rv));
	return o;
}

/* The index the metrics read through: the sets with a resize state, whatever its phase, and no other. */
static void test_index_holds_the_sets_with_a_state(void **state)
{
	(void)state;
	struct store *s = store_new();
	store_add_index(s, RESIZE_STATE_INDEX, resize_state_index);
	static const char *const states[] = {"{\"phase\":\"Expanding\"}", NULL, "{\"phase\":\"Failed\"}", NULL};
	for (int i = 0; i < 4; i++) {
		char name[16];
		snprintf(name, sizeof(name), "web-%d", i);
		json_t *o = stored_sts(name, "1", states[i]);
		assert_true(store_upsert(s, o, NULL));
		json_decref(o);
	}
	json_t *sets = store_by_index(s, RESIZE_STATE_INDEX, RESIZE_STATE_INDEX_VALUE);
	assert_int_equal(json_array_size(sets), 2);
	for (size_t i = 0; i < json_array_size(sets); i++) {
		const char *name = kube_obj_str(json_array_get(sets, i), "metadata.name");
		if (strcmp(name, "web-0") && strcmp(name, "web-2"))
			fail_msg("%s has no resize state", name);
	}
	json_decref(sets);
	/* Its state removed, a set leaves the index. */
	json_t *o = stored_sts("web-0", "2", NULL);
	assert_true(store_upsert(s, o, NULL));
	json_decref(o);
	sets = store_by_index(s, RESIZE_STATE_INDEX, RESIZE_STATE_INDEX_VALUE);
	assert_int_equal(json_array_size(sets), 1);
	json_decref(sets);
	store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_state_over_the_parse_budget_is_none),
		cmocka_unit_test(test_written_back_with_unknown_keys),
		cmocka_unit_test(test_recreating),
		cmocka_unit_test(test_in_flight_seconds),
		cmocka_unit_test(test_index_holds_the_sets_with_a_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
