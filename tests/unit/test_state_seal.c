/*
 * Seals on the controllers' state (state_seal.c): a seal holds only for
 * the text, object (by namespace, name and UID) and annotation it was made
 * for, under the key it was made with; an unsealed, forged or replayed
 * state reads as absent where a planner can rebuild it.
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

/* The scope of object ns/name with UID uid. */
static struct state_seal_scope at(const char *ns, const char *name, const char *uid)
{
	struct state_seal_scope scope = {ns, name, STATE_SEAL_OBJECT, uid};
	return scope;
}

static void test_seal_holds_only_for_what_it_sealed(void **unused)
{
	(void)unused;
	struct state_seal *s = seal_with(7), *other_key = seal_with(8);
	char seal[STATE_SEAL_HEX_LEN + 1];
	struct state_seal_scope web = at("shop", "web", "uid-1");
	state_seal_sign(s, &web, STATE, TEXT, seal);
	assert_int_equal(strlen(seal), STATE_SEAL_HEX_LEN);
	assert_true(state_seal_verify(s, &web, STATE, TEXT, seal));
	/* Another object, namespace, annotation, text or key: no. */
	struct state_seal_scope db = at("shop", "db", "uid-1"), attacker = at("attacker", "web", "uid-1");
	assert_false(state_seal_verify(s, &db, STATE, TEXT, seal));
	assert_false(state_seal_verify(s, &attacker, STATE, TEXT, seal));
	assert_false(state_seal_verify(s, &web, "stateful-operator.io/scaledown-state", TEXT, seal));
	assert_false(state_seal_verify(s, &web, STATE, TEXT " ", seal));
	assert_false(state_seal_verify(other_key, &web, STATE, TEXT, seal));
	/* Parts cannot slide into each other: ("ab", "c") is not ("a", "bc"). */
	char a[STATE_SEAL_HEX_LEN + 1], b[STATE_SEAL_HEX_LEN + 1];
	struct state_seal_scope ab = at("ab", "c", "uid-1"), bc = at("a", "bc", "uid-1");
	state_seal_sign(s, &ab, STATE, TEXT, a);
	state_seal_sign(s, &bc, STATE, TEXT, b);
	assert_string_not_equal(a, b);
	/* No seal, a short one, a wrong one. */
	assert_false(state_seal_verify(s, &web, STATE, TEXT, NULL));
	assert_false(state_seal_verify(s, &web, STATE, TEXT, "abc"));
	seal[0] = seal[0] == '0' ? '1' : '0';
	assert_false(state_seal_verify(s, &web, STATE, TEXT, seal));
	state_seal_free(s);
	state_seal_free(other_key);
}

/* Finding 9: a seal holds on the object it was made for, not on a later one of the same name. */
static void test_seal_bound_to_the_uid(void **unused)
{
	(void)unused;
	struct state_seal *s = seal_with(3);
	char seal[STATE_SEAL_HEX_LEN + 1];
	struct state_seal_scope old = at("shop", "web", "uid-old"), fresh = at("shop", "web", "uid-new");
	state_seal_sign(s, &old, STATE, TEXT, seal);
	assert_true(state_seal_verify(s, &old, STATE, TEXT, seal));
	assert_false(state_seal_verify(s, &fresh, STATE, TEXT, seal));
	/* The same UID under another bond is another seal: a backup's own is not a re-create's. */
	struct state_seal_scope saved = {"shop", "web", STATE_SEAL_SAVED_FROM, "uid-old"};
	struct state_seal_scope recreated = {"shop", "web", STATE_SEAL_RECREATED_FROM, "uid-old"};
	assert_false(state_seal_verify(s, &saved, STATE, TEXT, seal));
	assert_false(state_seal_verify(s, &recreated, STATE, TEXT, seal));
	char other[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign(s, &saved, STATE, TEXT, other);
	assert_true(state_seal_verify(s, &saved, STATE, TEXT, other));
	assert_false(state_seal_verify(s, &recreated, STATE, TEXT, other));
	/* No UID, nothing binds: nothing verifies, not even a seal made so. */
	struct state_seal_scope none = at("shop", "web", NULL), empty = at("shop", "web", "");
	state_seal_sign(s, &none, STATE, TEXT, other);
	assert_false(state_seal_verify(s, &none, STATE, TEXT, other));
	assert_false(state_seal_verify(s, &empty, STATE, TEXT, other));
	/* The earlier form (no UID) is another seal: it never verifies as this one, nor this one as it. */
	char v1[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign_v1(s, "shop", "web", STATE, TEXT, v1);
	assert_true(state_seal_verify_v1(s, "shop", "web", STATE, TEXT, v1));
	assert_false(state_seal_verify_v1(s, "shop", "db", STATE, TEXT, v1));
	assert_false(state_seal_verify(s, &old, STATE, TEXT, v1));
	assert_false(state_seal_verify_v1(s, "shop", "web", STATE, TEXT, seal));
	state_seal_free(s);
}

static json_t *statefulset(const char *ns, const char *name, const char *uid, json_t *annotations)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:o}}", "apiVersion", "apps/v1", "kind", "StatefulSet",
			 "metadata", "namespace", ns, "name", name, "uid", uid, "annotations", annotations);
}

static void test_annotations_sealed_by_annotate_read_back(void **unused)
{
	(void)unused;
	struct state_seal *s = seal_with(1);
	json_t *ann = json_pack("{s:s}", STATE, TEXT);
	struct state_seal_scope web = at("shop", "web", "uid-1");
	state_seal_annotate(s, ann, &web, STATE);
	assert_non_null(json_object_get(ann, STATE STATE_SEAL_SUFFIX));
	assert_true(state_seal_annotation_ok(s, ann, &web, STATE));
	/* The same annotations copied onto another set (or namespace, or a new set of the name) do not hold there. */
	struct state_seal_scope attacker = at("attacker", "web", "uid-1"), again = at("shop", "web", "uid-2");
	assert_false(state_seal_annotation_ok(s, ann, &attacker, STATE));
	assert_false(state_seal_annotation_ok(s, ann, &again, STATE));
	/* Edited state, seal kept: no. */
	json_object_set_new(ann, STATE, json_string("{\"phase\":\"Cleaning\",\"oldVolumes\":[\"victim-pv\"]}"));
	assert_false(state_seal_annotation_ok(s, ann, &web, STATE));
	/* No state at all is fine; removing it removes the seal in a merge patch. */
	json_t *none = json_object();
	assert_true(state_seal_annotation_ok(s, none, &web, STATE));
	assert_true(state_seal_annotation_ok(s, NULL, &web, STATE));
	json_object_set_new(none, STATE, json_null());
	state_seal_annotate(s, none, &web, STATE);
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
	json_t *forged = statefulset("shop", "web", "uid-1", json_pack("{s:s, s:s}", STATE, TEXT, "keep", "me"));
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
	struct state_seal_scope web = at("shop", "web", "uid-1");
	state_seal_annotate(s, ann2, &web, STATE);
	json_t *sealed = statefulset("shop", "web", "uid-1", json_deep_copy(ann2));
	seen = state_seal_drop_unsealed(s, sealed, STATE, &dropped);
	assert_false(dropped);
	assert_ptr_equal(seen, sealed);
	json_decref(seen);
	json_decref(sealed);
	/* The same state and seal on a later set of the name (a replay): lost. */
	json_t *replayed = statefulset("shop", "web", "uid-2", ann2);
	seen = state_seal_drop_unsealed(s, replayed, STATE, &dropped);
	assert_true(dropped);
	assert_null(json_object_get(json_object_get(json_object_get(seen, "metadata"), "annotations"), STATE));
	json_decref(seen);
	json_decref(replayed);
	state_seal_free(s);
}

static void test_ephemeral_keys_differ(void **unused)
{
	(void)unused;
	struct state_seal *a = state_seal_new_ephemeral(), *b = state_seal_new_ephemeral();
	char seal[STATE_SEAL_HEX_LEN + 1];
	struct state_seal_scope web = at("shop", "web", "uid-1");
	state_seal_sign(a, &web, STATE, TEXT, seal);
	assert_true(state_seal_verify(a, &web, STATE, TEXT, seal));
	assert_false(state_seal_verify(b, &web, STATE, TEXT, seal));
	state_seal_free(a);
	state_seal_free(b);
	state_seal_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal_holds_only_for_what_it_sealed),
		cmocka_unit_test(test_seal_bound_to_the_uid),
		cmocka_unit_test(test_annotations_sealed_by_annotate_read_back),
		cmocka_unit_test(test_unsealed_state_reads_as_lost),
		cmocka_unit_test(test_ephemeral_keys_differ),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
