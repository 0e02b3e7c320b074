/*
 * Seals on the controllers' state (state_seal.c): a seal holds only for
 * the text, object and annotation it was made for, under the key it was
 * made with; an unsealed or forged state reads as absent where a planner
 * can rebuild it.
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

#include "controllers/state_seal.h"

#define STATE "stateful-operator.io/resize-state"
#define TEXT "{\"phase\":\"Cleaning\",\"strategy\":\"copy\",\"oldVolumes\":[\"data-web-0-pv\"]}"

static struct state_seal *seal_with(unsigned char fill)
{
	unsigned char key[STATE_SEAL_KEY_BYTES];
	memset(key, fill, sizeof(key));
	return state_seal_new(key);
}

static void test_seal_holds_only_for_what_it_sealed(void **unused)
{
	(void)unused;
	struct state_seal *s = seal_with(7), *other_key = seal_with(8);
	char seal[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign(s, "shop", "web", STATE, TEXT, seal);
	assert_int_equal(strlen(seal), STATE_SEAL_HEX_LEN);
	assert_true(state_seal_verify(s, "shop", "web", STATE, TEXT, seal));
	/* Another object, namespace, annotation, text or key: no. */
	assert_false(state_seal_verify(s, "shop", "db", STATE, TEXT, seal));
	assert_false(state_seal_verify(s, "attacker", "web", STATE, TEXT, seal));
	assert_false(state_seal_verify(s, "shop", "web", "stateful-operator.io/scaledown-state", TEXT, seal));
	assert_false(state_seal_verify(s, "shop", "web", STATE, TEXT " ", seal));
	assert_false(state_seal_verify(other_key, "shop", "web", STATE, TEXT, seal));
	/* Parts cannot slide into each other: ("ab", "c") is not ("a", "bc"). */
	char a[STATE_SEAL_HEX_LEN + 1], b[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign(s, "ab", "c", STATE, TEXT, a);
	state_seal_sign(s, "a", "bc", STATE, TEXT, b);
	assert_string_not_equal(a, b);
	/* No seal, a short one, a wrong one. */
	assert_false(state_seal_verify(s, "shop", "web", STATE, TEXT, NULL));
	assert_false(state_seal_verify(s, "shop", "web", STATE, TEXT, "abc"));
	seal[0] = seal[0] == '0' ? '1' : '0';
	assert_false(state_seal_verify(s, "shop", "web", STATE, TEXT, seal));
	state_seal_free(s);
	state_seal_free(other_key);
}

static json_t *statefulset(const char *ns, const char *name, json_t *annotations)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}}", "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata",
			 "namespace", ns, "name", name, "annotations", annotations);
}

static void test_annotations_sealed_by_annotate_read_back(void **unused)
{
	(void)unused;
	struct state_seal *s = seal_with(1);
	json_t *ann = json_pack("{s:s}", STATE, TEXT);
	state_seal_annotate(s, ann, "shop", "web", STATE);
	assert_non_null(json_object_get(ann, STATE STATE_SEAL_SUFFIX));
	assert_true(state_seal_annotation_ok(s, ann, "shop", "web", STATE));
	/* The same annotations copied onto another set (or namespace) do not hold there. */
	assert_false(state_seal_annotation_ok(s, ann, "attacker", "web", STATE));
	/* Edited state, seal kept: no. */
	json_object_set_new(ann, STATE, json_string("{\"phase\":\"Cleaning\",\"oldVolumes\":[\"victim-pv\"]}"));
	assert_false(state_seal_annotation_ok(s, ann, "shop", "web", STATE));
	/* No state at all is fine; removing it removes the seal in a merge patch. */
	json_t *none = json_object();
	assert_true(state_seal_annotation_ok(s, none, "shop", "web", STATE));
	assert_true(state_seal_annotation_ok(s, NULL, "shop", "web", STATE));
	json_object_set_new(none, STATE, json_null());
	state_seal_annotate(s, none, "shop", "web", STATE);
	assert_true(json_is_null(json_object_get(none, STATE STATE_SEAL_SUFFIX)));
	json_decref(none);
	json_decref(ann);
	state_seal_free(s);
}

static void test_unsealed_state_reads_as_lost(void **unused)
{
	(void)unused;
	struct state_seal *s = seal_with(2);
	/* A forged state: dropped from a copy, the cached object untouched. */
	json_t *forged = statefulset("shop", "web", json_pack("{s:s, s:s}", STATE, TEXT, "keep", "me"));
	bool dropped = false;
	json_t *seen = state_seal_drop_unsealed(s, forged, STATE, &dropped);
	assert_true(dropped);
	assert_ptr_not_equal(seen, forged);
	const json_t *ann = json_object_get(json_object_get(seen, "metadata"), "annotations");
	assert_null(json_object_get(ann, STATE));
	assert_string_equal(json_string_value(json_object_get(ann, "keep")), "me");
	assert_non_null(json_object_get(json_object_get(json_object_get(forged, "metadata"), "annotations"), STATE));
	json_decref(seen);
	json_decref(forged);

	/* A sealed state: the object itself. */
	json_t *ann2 = json_pack("{s:s}", STATE, TEXT);
	state_seal_annotate(s, ann2, "shop", "web", STATE);
	json_t *sealed = statefulset("shop", "web", ann2);
	seen = state_seal_drop_unsealed(s, sealed, STATE, &dropped);
	assert_false(dropped);
	assert_ptr_equal(seen, sealed);
	json_decref(seen);
	json_decref(sealed);
	state_seal_free(s);
}

static void test_ephemeral_keys_differ(void **unused)
{
	(void)unused;
	struct state_seal *a = state_seal_new_ephemeral(), *b = state_seal_new_ephemeral();
	char seal[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign(a, "shop", "web", STATE, TEXT, seal);
	assert_true(state_seal_verify(a, "shop", "web", STATE, TEXT, seal));
	assert_false(state_seal_verify(b, "shop", "web", STATE, TEXT, seal));
	state_seal_free(a);
	state_seal_free(b);
	state_seal_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal_holds_only_for_what_it_sealed),
		cmocka_unit_test(test_annotations_sealed_by_annotate_read_back),
		cmocka_unit_test(test_unsealed_state_reads_as_lost),
		cmocka_unit_test(test_ephemeral_keys_differ),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
