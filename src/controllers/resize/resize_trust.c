#include "controllers/resize/resize_trust.h"

#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "util/xalloc.h"

#define STATE_SEAL_KEY ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX
#define SAVED_SEAL_KEY SEALED_SAVED_STATEFULSET STATE_SEAL_SUFFIX
#define RECREATED_SEAL_KEY ANNOTATION_RECREATED_UID STATE_SEAL_SUFFIX

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* The saved StatefulSet's text in backup, or NULL. The key has a dot in it: not a path for kube_obj_str. */
static const char *saved_text(const json_t *backup)
{
	return json_string_value(json_object_get(json_object_get(backup, "data"), BACKUP_KEY));
}

/* The set's name a backup ConfigMap's name <sts>-sts-backup gives (new string), or NULL when it is no such name. */
static char *set_name_of(const json_t *backup)
{
	const char *name = kube_obj_str(backup, "metadata.name");
	size_t len = name ? strlen(name) : 0, suffix = strlen(BACKUP_SUFFIX);
	if (len <= suffix || strcmp(name + len - suffix, BACKUP_SUFFIX))
		return NULL;
	return xstrndup(name, len - suffix);
}

/* The backup's state (if any) and saved StatefulSet (required) sealed for bond/uid. */
static bool backup_sealed_for(const struct state_seal *s, const json_t *backup, enum state_seal_bond bond,
			      const char *uid)
{
	char *name = set_name_of(backup);
	const char *text = saved_text(backup);
	const json_t *ann = kube_obj_annotations(backup);
	struct state_seal_scope scope = {kube_obj_str(backup, "metadata.namespace"), name, bond, uid};
	bool ok = name && text && state_seal_annotation_ok(s, ann, &scope, ANNOTATION_RESIZE_STATE) &&
		  state_seal_verify(s, &scope, SEALED_SAVED_STATEFULSET, text,
				    json_string_value(json_object_get(ann, SAVED_SEAL_KEY)));
	free(name);
	return ok;
}

enum resize_trust resize_trust_backup(const struct state_seal *s, const json_t *backup, const json_t *sts)
{
	if (!backup)
		return RESIZE_TRUST_NONE;
	if (backup_sealed_for(s, backup, STATE_SEAL_OBJECT, kube_obj_str(backup, "metadata.uid")))
		return RESIZE_TRUST_SEALED;
	if (sts && backup_sealed_for(s, backup, STATE_SEAL_SAVED_FROM, kube_obj_str(sts, "metadata.uid")))
		return RESIZE_TRUST_RESEAL;
	return RESIZE_TRUST_BROKEN;
}

/* The UID backup says it re-created its set as, when sealed for backup itself; NULL otherwise. Borrowed. */
static const char *recreated_uid(const struct state_seal *s, const json_t *backup)
{
	char *name = set_name_of(backup);
	const json_t *ann = kube_obj_annotations(backup);
	const char *uid = json_string_value(json_object_get(ann, ANNOTATION_RECREATED_UID));
	struct state_seal_scope scope = {kube_obj_str(backup, "metadata.namespace"), name, STATE_SEAL_OBJECT,
					 kube_obj_str(backup, "metadata.uid")};
	bool ok = name && state_seal_verify(s, &scope, ANNOTATION_RECREATED_UID, uid,
					    json_string_value(json_object_get(ann, RECREATED_SEAL_KEY)));
	free(name);
	return ok ? uid : NULL;
}

/* sts's resize state sealed for a re-create from backup (the set's own scope, bound to backup's UID). */
static bool sealed_for_recreate(const struct state_seal *s, const json_t *sts, const json_t *backup)
{
	struct state_seal_scope scope = {kube_obj_str(sts, "metadata.namespace"), kube_obj_str(sts, "metadata.name"),
					 STATE_SEAL_RECREATED_FROM, kube_obj_str(backup, "metadata.uid")};
	return backup && json_object_get(kube_obj_annotations(sts), ANNOTATION_RESIZE_STATE) &&
	       state_seal_annotation_ok(s, kube_obj_annotations(sts), &scope, ANNOTATION_RESIZE_STATE);
}

enum resize_trust resize_trust_statefulset(const struct state_seal *s, const json_t *sts, const json_t *backup)
{
	const json_t *ann = kube_obj_annotations(sts);
	if (!sts || !json_object_get(ann, ANNOTATION_RESIZE_STATE))
		return RESIZE_TRUST_NONE;
	struct state_seal_scope own = state_seal_scope_of(sts);
	if (state_seal_annotation_ok(s, ann, &own, ANNOTATION_RESIZE_STATE))
		return RESIZE_TRUST_SEALED;
	if (!sealed_for_recreate(s, sts, backup) || resize_trust_backup(s, backup, NULL) != RESIZE_TRUST_SEALED)
		return RESIZE_TRUST_BROKEN;
	/* Only the set the backup names: a copy of its state on any other set of the name is a replay. */
	const char *named = recreated_uid(s, backup);
	if (!named)
		return RESIZE_TRUST_UNCONFIRMED;
	return same(named, kube_obj_str(sts, "metadata.uid")) ? RESIZE_TRUST_RESEAL : RESIZE_TRUST_BROKEN;
}

bool resize_trust_recreate_of(const struct state_seal *s, const json_t *sts, const json_t *backup)
{
	return resize_trust_backup(s, backup, NULL) == RESIZE_TRUST_SEALED && sealed_for_recreate(s, sts, backup);
}

void resize_trust_seal_backup(const struct state_seal *s, json_t *cm, const struct state_seal_scope *scope)
{
	json_t *meta = json_object_get(cm, "metadata");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	json_t *ann = json_object_get(meta, "annotations");
	if (json_object_get(ann, ANNOTATION_RESIZE_STATE))
		state_seal_annotate(s, ann, scope, ANNOTATION_RESIZE_STATE);
	const char *text = saved_text(cm);
	if (text) {
		char seal[STATE_SEAL_HEX_LEN + 1];
		state_seal_sign(s, scope, SEALED_SAVED_STATEFULSET, text, seal);
		json_object_set_new(ann, SAVED_SEAL_KEY, json_string(seal));
	}
}

/* A merge patch of obj's annotations ann (stolen), on the resourceVersion the seals were made for. New reference. */
static json_t *seal_patch(const json_t *obj, json_t *ann)
{
	return json_pack("{s:{s:o, s:s*}}", "metadata", "annotations", ann, "resourceVersion",
			 kube_obj_str(obj, "metadata.resourceVersion"));
}

json_t *resize_trust_reseal_backup(const struct state_seal *s, const json_t *backup)
{
	char *name = set_name_of(backup);
	struct state_seal_scope scope = {kube_obj_str(backup, "metadata.namespace"), name, STATE_SEAL_OBJECT,
					 kube_obj_str(backup, "metadata.uid")};
	/* What is sealed, and only the seals written. */
	json_t *copy = json_pack("{s:{s:O*}, s:O*}", "metadata", "annotations", kube_obj_annotations(backup), "data",
				 json_object_get(backup, "data"));
	resize_trust_seal_backup(s, copy, &scope);
	const json_t *ann = kube_obj_annotations(copy);
	json_t *seals = json_object();
	if (json_object_get(ann, STATE_SEAL_KEY))
		json_object_set(seals, STATE_SEAL_KEY, json_object_get(ann, STATE_SEAL_KEY));
	if (json_object_get(ann, SAVED_SEAL_KEY))
		json_object_set(seals, SAVED_SEAL_KEY, json_object_get(ann, SAVED_SEAL_KEY));
	json_decref(copy);
	free(name);
	return seal_patch(backup, seals);
}

json_t *resize_trust_reseal_statefulset(const struct state_seal *s, const json_t *sts)
{
	struct state_seal_scope scope = state_seal_scope_of(sts);
	json_t *ann = json_pack("{s:O*}", ANNOTATION_RESIZE_STATE,
				json_object_get(kube_obj_annotations(sts), ANNOTATION_RESIZE_STATE));
	state_seal_annotate(s, ann, &scope, ANNOTATION_RESIZE_STATE);
	json_object_del(ann, ANNOTATION_RESIZE_STATE);
	return seal_patch(sts, ann);
}

json_t *resize_trust_confirm(const struct state_seal *s, const json_t *backup, const char *sts_uid)
{
	char *name = set_name_of(backup);
	struct state_seal_scope scope = {kube_obj_str(backup, "metadata.namespace"), name, STATE_SEAL_OBJECT,
					 kube_obj_str(backup, "metadata.uid")};
	json_t *ann = json_pack("{s:s}", ANNOTATION_RECREATED_UID, sts_uid);
	state_seal_annotate(s, ann, &scope, ANNOTATION_RECREATED_UID);
	free(name);
	return json_pack("{s:{s:o, s:s*}}", "metadata", "annotations", ann, "uid", kube_obj_str(backup, "metadata.uid"));
}
