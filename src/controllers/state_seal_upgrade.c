#include "controllers/state_seal_upgrade.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "util/log.h"
#include "util/xalloc.h"

#define ATTEMPTS 5

/* What carries sealed state: the resource, a label selector, and the keys sealed on it. */
struct carrier {
	const struct kube_resource *r;
	const char *selector;
	bool backup;              /* a backup ConfigMap: named after its set, its saved set sealed too */
	const char *const keys[3]; /* annotations, NULL-terminated */
};

static const struct carrier CARRIERS[] = {
	{&KUBE_STATEFULSETS, NULL, false, {ANNOTATION_RESIZE_STATE, ANNOTATION_SCALEDOWN_STATE, NULL}},
	{&KUBE_CONFIGMAPS, LABEL_SAVED_STATEFULSET, true, {ANNOTATION_RESIZE_STATE, NULL, NULL}},
	{&KUBE_STATEFULCLUSTERS, NULL, false, {ANNOTATION_CLUSTER_STATE, NULL, NULL}},
};

/* ---- the Secret's mark ---- */

struct mark {
	const char *want;
	char *seen; /* the mark as last read (new string), or NULL */
};

/* kube_mutate_fn: sets the mark to want, unless it is STATE_SEAL_FORMAT already. */
static int set_mark(void *ctx, json_t *secret)
{
	struct mark *m = ctx;
	const char *now = kube_obj_annotation(secret, STATE_SEAL_FORMAT_ANNOTATION);
	free(m->seen);
	m->seen = now ? xstrdup(now) : NULL;
	if (now && (!strcmp(now, STATE_SEAL_FORMAT) || !strcmp(now, m->want)))
		return 1;
	json_t *meta = json_object_get(secret, "metadata");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	json_object_set_new(json_object_get(meta, "annotations"), STATE_SEAL_FORMAT_ANNOTATION, json_string(m->want));
	return 0;
}

/* ---- one object ---- */

/*
 * The merge patch that seals obj's v1-sealed texts for obj itself (new
 * reference), or NULL when none needs it. *count: how many.
 */
static json_t *reseal_patch(const struct state_seal *s, const struct carrier *k, const json_t *obj, int *count)
{
	const json_t *ann = kube_obj_annotations(obj);
	struct state_seal_scope scope = state_seal_scope_of(obj);
	char *set_name = NULL;
	if (k->backup) {
		/* A backup's texts are sealed under its StatefulSet's name. */
		const char *name = scope.name;
		size_t len = name ? strlen(name) : 0, sfx = strlen(BACKUP_SUFFIX);
		if (len <= sfx || strcmp(name + len - sfx, BACKUP_SUFFIX))
			return NULL;
		scope.name = set_name = xstrndup(name, len - sfx);
	}
	json_t *seals = json_object();
	const char *texts[4] = {NULL}, *keys[4] = {NULL};
	int n = 0;
	for (int i = 0; k->keys[i]; i++) {
		keys[n] = k->keys[i];
		texts[n++] = json_string_value(json_object_get(ann, k->keys[i]));
	}
	if (k->backup) {
		keys[n] = SEALED_SAVED_STATEFULSET;
		texts[n++] = json_string_value(json_object_get(json_object_get(obj, "data"), BACKUP_KEY));
	}
	for (int i = 0; i < n; i++) {
		char *seal_key = xasprintf("%s" STATE_SEAL_SUFFIX, keys[i]);
		const char *seal = json_string_value(json_object_get(ann, seal_key));
		if (texts[i] && !state_seal_verify(s, &scope, keys[i], texts[i], seal) &&
		    state_seal_verify_v1(s, scope.ns, scope.name, keys[i], texts[i], seal)) {
			char fresh[STATE_SEAL_HEX_LEN + 1];
			state_seal_sign(s, &scope, keys[i], texts[i], fresh);
			json_object_set_new(seals, seal_key, json_string(fresh));
		}
		free(seal_key);
	}
	free(set_name);
	*count = (int)json_object_size(seals);
	if (!*count) {
		json_decref(seals);
		return NULL;
	}
	/* On the version read: the texts sealed are the ones there. */
	return json_pack("{s:{s:o, s:s*}}", "metadata", "annotations", seals, "resourceVersion",
			 kube_obj_str(obj, "metadata.resourceVersion"));
}

/* Re-seals obj (borrowed; read again after a conflict). Returns how many texts, or -1. */
static int reseal_object(const struct state_seal_upgrade *u, const struct carrier *k, const json_t *obj,
			 struct kube_error *err)
{
	const char *ns = kube_obj_str(obj, "metadata.namespace"), *name = kube_obj_str(obj, "metadata.name");
	json_t *cur = json_incref((json_t *)obj);
	int done = -1;
	for (int attempt = 0; attempt < ATTEMPTS && done < 0; attempt++) {
		int count = 0;
		json_t *patch = reseal_patch(u->seal, k, cur, &count);
		if (!patch) {
			done = 0;
			break;
		}
		int r = kube_patch(u->client, k->r, ns, name, NULL, KUBE_PATCH_MERGE, patch, NULL, err);
		json_decref(patch);
		if (r == 0 || err->code == 404) {
			done = r == 0 ? count : 0;
			if (r == 0)
				log_info("seal", "%s %s/%s: %d state(s) sealed for it (UID %s)", k->r->kind, ns, name,
					 count, kube_obj_str(cur, "metadata.uid"));
			break;
		}
		if (err->code != 409)
			break;
		json_decref(cur);
		cur = NULL;
		if (kube_get(u->client, k->r, ns, name, &cur, err) < 0) {
			done = err->code == 404 ? 0 : -1;
			break;
		}
	}
	json_decref(cur);
	return done;
}

/* Every object of carrier k. Returns the texts re-sealed, or -1. */
static int reseal_all(const struct state_seal_upgrade *u, const struct carrier *k, struct kube_error *err)
{
	json_t *items = NULL;
	if (kube_list_all(u->client, k->r, u->namespace, k->selector, 0, &items, NULL, err) < 0)
		return k->r == &KUBE_STATEFULCLUSTERS && err->code == 404 ? 0 : -1; /* the CRD is not installed */
	int total = 0;
	size_t i;
	json_t *obj;
	json_array_foreach(items, i, obj) {
		int n = reseal_object(u, k, obj, err);
		if (n < 0) {
			total = -1;
			break;
		}
		total += n;
	}
	json_decref(items);
	return total;
}

int state_seal_upgrade_run(const struct state_seal_upgrade *u, struct kube_error *err)
{
	struct mark m = {STATE_SEAL_FORMAT_UPGRADING, NULL};
	int r = kube_update_retry(u->client, &KUBE_SECRETS, u->key_namespace, STATE_SEAL_SECRET_NAME, set_mark, &m,
				  ATTEMPTS, NULL, err);
	int total = 0;
	if (r < 0 || (r == 1 && m.seen && !strcmp(m.seen, STATE_SEAL_FORMAT))) {
		total = r < 0 ? -1 : 0;
		goto out;
	}
	log_info("seal", "sealing the state an earlier version left for the objects that carry it (once)");
	for (size_t i = 0; i < sizeof(CARRIERS) / sizeof(CARRIERS[0]); i++) {
		int n = reseal_all(u, &CARRIERS[i], err);
		if (n < 0) {
			total = -1;
			goto out;
		}
		total += n;
	}
	m.want = STATE_SEAL_FORMAT;
	if (kube_update_retry(u->client, &KUBE_SECRETS, u->key_namespace, STATE_SEAL_SECRET_NAME, set_mark, &m,
			      ATTEMPTS, NULL, err) < 0)
		total = -1;
	else
		log_info("seal", "%d state(s) of an earlier version sealed; seals of that form hold nowhere now", total);
out:
	free(m.seen);
	return total;
}
