/*
 * Which resize state the operator acts on (resize_trust.c), through the
 * life of a resize that deletes and re-creates its StatefulSet: the state
 * holds on the object it was sealed for, moves between the set and its
 * backup ConfigMap only through the re-seals the operator makes, and a copy
 * of it on any other object of the same name (a new set, another
 * ConfigMap) holds nowhere.
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

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_trust.h"
#include "sim.h"

#define STATE_SEAL ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX

static struct state_seal *key(void)
{
	unsigned char k[STATE_SEAL_KEY_BYTES];
	memset(k, 9, sizeof(k));
	return state_seal_new(k);
}

/* StatefulSet shop/web with UID uid (NULL: a create, none yet) and resize state text. New reference. */
static json_t *set(const char *uid, const char *text)
{
	json_t *sts = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}}", "apiVersion", "apps/v1", "kind",
				"StatefulSet", "metadata", "namespace", "shop", "name", "web", "resourceVersion", "10",
				"annotations", ANNOTATION_RESIZE_STATE, text);
	if (uid)
		json_object_set_new(json_object_get(sts, "metadata"), "uid", json_string(uid));
	return sts;
}

/* Seals sts's state for scope's bond and uid, as the controller writes it. */
static void seal_set(const struct state_seal *s, json_t *sts, enum state_seal_bond bond, const char *uid)
{
	struct state_seal_scope scope = {"shop", "web", bond, uid};
	state_seal_annotate(s, json_object_get(json_object_get(sts, "metadata"), "annotations"), &scope,
			    ANNOTATION_RESIZE_STATE);
}

/* Save: ConfigMap web-sts-backup with state text, sealed for the set saved (saved_uid), then created (uid). */
static json_t *saved_backup(const struct state_seal *s, const char *saved_uid, const char *uid, const char *text)
{
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
			       "ConfigMap", "metadata", "namespace", "shop", "name", "web" BACKUP_SUFFIX, "labels",
			       LABEL_SAVED_STATEFULSET, "web", "annotations", ANNOTATION_RESIZE_STATE, text, "data",
			       BACKUP_KEY, "{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\"}}");
	struct state_seal_scope from = {"shop", "web", STATE_SEAL_SAVED_FROM, saved_uid};
	resize_trust_seal_backup(s, cm, &from);
	json_t *meta = json_object_get(cm, "metadata");
	json_object_set_new(meta, "uid", json_string(uid));
	json_object_set_new(meta, "resourceVersion", json_string("20"));
	return cm;
}

/* patch (stolen) applied to obj. */
static void apply(json_t *obj, json_t *patch)
{
	json_object_del(json_object_get(patch, "metadata"), "resourceVersion");
	json_object_del(json_object_get(patch, "metadata"), "uid");
	sim_merge_patch(obj, patch);
	json_decref(patch);
}

/* obj's annotations copied onto copy (what a user who may edit both can do). */
static void copy_annotations(json_t *copy, const json_t *obj)
{
	json_object_set_new(json_object_get(copy, "metadata"), "annotations",
			    json_deep_copy(kube_obj_annotations(obj)));
}

/* The finding: a sealed state copied from a deleted set onto a new set of the same name holds not. */
static void test_state_replayed_on_a_new_set_of_the_name(void **unused)
{
	(void)unused;
	struct state_seal *s = key();
	json_t *old = set("uid-old", "{\"phase\":\"Cleaning\",\"strategy\":\"copy\",\"oldVolumes\":[\"pv-1\"]}");
	seal_set(s, old, STATE_SEAL_OBJECT, "uid-old");
	assert_int_equal(resize_trust_statefulset(s, old, NULL), RESIZE_TRUST_SEALED);
	json_t *fresh = set("uid-new", "");
	copy_annotations(fresh, old);
	assert_int_equal(resize_trust_statefulset(s, fresh, NULL), RESIZE_TRUST_BROKEN);
	/* No state at all: nothing to judge. */
	json_object_del(json_object_get(json_object_get(fresh, "metadata"), "annotations"), ANNOTATION_RESIZE_STATE);
	assert_int_equal(resize_trust_statefulset(s, fresh, NULL), RESIZE_TRUST_NONE);
	json_decref(fresh);
	json_decref(old);
	state_seal_free(s);
}

/* Save: sealed for the set it saves until the operator seals it for itself; only that set vouches for it. */
static void test_backup_sealed_for_its_set_then_for_itself(void **unused)
{
	(void)unused;
	struct state_seal *s = key();
	json_t *sts = set("uid-set-1", "{\"phase\":\"Copying\"}");
	seal_set(s, sts, STATE_SEAL_OBJECT, "uid-set-1");
	json_t *cm = saved_backup(s, "uid-set-1", "uid-cm-1", "{\"phase\":\"Copying\"}");
	assert_int_equal(resize_trust_backup(s, cm, sts), RESIZE_TRUST_RESEAL);
	/* With the set gone, or another set of the name, nothing vouches for it. */
	assert_int_equal(resize_trust_backup(s, cm, NULL), RESIZE_TRUST_BROKEN);
	json_t *other = set("uid-set-9", "{}");
	assert_int_equal(resize_trust_backup(s, cm, other), RESIZE_TRUST_BROKEN);
	/* Sealed for itself: it holds while the set is gone. */
	apply(cm, resize_trust_reseal_backup(s, cm));
	assert_int_equal(resize_trust_backup(s, cm, NULL), RESIZE_TRUST_SEALED);
	assert_int_equal(resize_trust_backup(s, cm, sts), RESIZE_TRUST_SEALED);
	/* The same content in another ConfigMap (the first one deleted, a copy made): not sealed for that one. */
	json_t *copy = json_deep_copy(cm);
	json_object_set_new(json_object_get(copy, "metadata"), "uid", json_string("uid-cm-2"));
	assert_int_equal(resize_trust_backup(s, copy, NULL), RESIZE_TRUST_BROKEN);
	/* Its saved StatefulSet edited, or missing: broken. */
	json_object_set_new(json_object_get(cm, "data"), BACKUP_KEY, json_string("{\"kind\":\"StatefulSet\"}"));
	assert_int_equal(resize_trust_backup(s, cm, NULL), RESIZE_TRUST_BROKEN);
	json_object_del(cm, "data");
	assert_int_equal(resize_trust_backup(s, cm, NULL), RESIZE_TRUST_BROKEN);
	assert_int_equal(resize_trust_backup(s, NULL, sts), RESIZE_TRUST_NONE);
	json_decref(copy);
	json_decref(other);
	json_decref(cm);
	json_decref(sts);
	state_seal_free(s);
}

/*
 * Recreate: the set's state sealed for a re-create from the backup holds
 * only on the set the backup names; sealed for itself, it holds alone.
 */
static void test_recreated_state_resealed_after_the_create(void **unused)
{
	(void)unused;
	struct state_seal *s = key();
	json_t *cm = saved_backup(s, "uid-set-1", "uid-cm-1", "{\"phase\":\"Copying\"}");
	apply(cm, resize_trust_reseal_backup(s, cm));
	/* The create: no UID yet. */
	json_t *body = set(NULL, "{\"phase\":\"Copying\",\"batch\":{\"step\":\"Ready\"}}");
	seal_set(s, body, STATE_SEAL_RECREATED_FROM, "uid-cm-1");
	assert_true(resize_trust_recreate_of(s, body, cm));
	/* Created as uid-set-2; the operator stopped before the backup recorded it. */
	json_t *made = json_deep_copy(body);
	json_object_set_new(json_object_get(made, "metadata"), "uid", json_string("uid-set-2"));
	assert_int_equal(resize_trust_statefulset(s, made, cm), RESIZE_TRUST_UNCONFIRMED);
	/* Recorded: that set, and only it. */
	apply(cm, resize_trust_confirm(s, cm, "uid-set-2"));
	assert_int_equal(resize_trust_statefulset(s, made, cm), RESIZE_TRUST_RESEAL);
	json_t *replay = set("uid-set-3", "");
	copy_annotations(replay, made);
	assert_int_equal(resize_trust_statefulset(s, replay, cm), RESIZE_TRUST_BROKEN);
	/* Without the backup there is nothing to vouch for it. */
	assert_int_equal(resize_trust_statefulset(s, made, NULL), RESIZE_TRUST_BROKEN);
	/* The re-seal: it holds alone, the backup may go. */
	apply(made, resize_trust_reseal_statefulset(s, made));
	assert_int_equal(resize_trust_statefulset(s, made, cm), RESIZE_TRUST_SEALED);
	assert_int_equal(resize_trust_statefulset(s, made, NULL), RESIZE_TRUST_SEALED);
	copy_annotations(replay, made);
	assert_int_equal(resize_trust_statefulset(s, replay, NULL), RESIZE_TRUST_BROKEN);
	/* A confirmation copied from another backup does not hold on this one. */
	json_t *cm2 = saved_backup(s, "uid-set-2", "uid-cm-2", "{\"phase\":\"Copying\"}");
	apply(cm2, resize_trust_reseal_backup(s, cm2));
	json_t *ann2 = json_object_get(json_object_get(cm2, "metadata"), "annotations");
	json_object_set_new(ann2, ANNOTATION_RECREATED_UID, json_string("uid-set-3"));
	json_object_set(ann2, ANNOTATION_RECREATED_UID STATE_SEAL_SUFFIX,
			json_object_get(kube_obj_annotations(cm), ANNOTATION_RECREATED_UID STATE_SEAL_SUFFIX));
	json_t *body2 = set("uid-set-3", "{\"phase\":\"Copying\"}");
	seal_set(s, body2, STATE_SEAL_RECREATED_FROM, "uid-cm-2");
	assert_int_equal(resize_trust_statefulset(s, body2, cm2), RESIZE_TRUST_UNCONFIRMED);
	json_decref(body2);
	json_decref(cm2);
	json_decref(replay);
	json_decref(made);
	json_decref(body);
	json_decref(cm);
	state_seal_free(s);
}

/* A re-create's state holds only with a backup the operator sealed for itself, from which it was sealed. */
static void test_recreate_needs_a_sealed_backup(void **unused)
{
	(void)unused;
	struct state_seal *s = key();
	json_t *cm = saved_backup(s, "uid-set-1", "uid-cm-1", "{}");
	json_t *body = set(NULL, "{\"phase\":\"Copying\"}");
	seal_set(s, body, STATE_SEAL_RECREATED_FROM, "uid-cm-1");
	/* Not yet sealed for itself (SAVED_FROM): not a backup to re-create from. */
	assert_false(resize_trust_recreate_of(s, body, cm));
	apply(cm, resize_trust_reseal_backup(s, cm));
	assert_true(resize_trust_recreate_of(s, body, cm));
	/* The state of the set as it was before the delete (sealed for that set): not a re-create's. */
	json_t *before = set(NULL, "{\"phase\":\"Copying\"}");
	seal_set(s, before, STATE_SEAL_OBJECT, "uid-set-1");
	assert_false(resize_trust_recreate_of(s, before, cm));
	/* A ConfigMap anyone can make, with no seal: nothing holds. */
	json_t *forged = json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "namespace", "shop", "name",
				   "web" BACKUP_SUFFIX, "uid", "uid-cm-9", "data", BACKUP_KEY, "{}");
	assert_int_equal(resize_trust_backup(s, forged, NULL), RESIZE_TRUST_BROKEN);
	assert_false(resize_trust_recreate_of(s, body, forged));
	assert_false(resize_trust_recreate_of(s, body, NULL));
	json_decref(forged);
	json_decref(before);
	json_decref(body);
	json_decref(cm);
	state_seal_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_replayed_on_a_new_set_of_the_name),
		cmocka_unit_test(test_backup_sealed_for_its_set_then_for_itself),
		cmocka_unit_test(test_recreated_state_resealed_after_the_create),
		cmocka_unit_test(test_recreate_needs_a_sealed_backup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
