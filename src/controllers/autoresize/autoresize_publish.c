/*
 * Publishing the usage a poll read (usage_published.h): each claim a pod
 * of a workload under a policy mounts gets its figures as an annotation,
 * so `kubectl stateful status` needs no nodes/proxy. Only these claims:
 * they are the ones the poll reads (a Prometheus answer may name every
 * claim of the cluster; those are not ours to annotate).
 */
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/autoresize/autoresize_act.h"
#include "controllers/autoresize/usage_published.h"
#include "util/log.h"
#include "util/xalloc.h"

/* One claim ("ns/claim"): written when usage_published_due says so. */
static void publish_one(struct autoresize_ctx *ac, const char *key, const struct volume_usage *u, int64_t now_s)
{
	json_t *pvc = store_get(ac->pvcs, key);
	const char *uid = kube_obj_str(pvc, "metadata.uid");
	if (!pvc || !uid || !*uid || kube_obj_terminating(pvc)) {
		json_decref(pvc);
		return;
	}
	struct usage_published old;
	bool have = usage_published_parse(kube_obj_annotation(pvc, ANNOTATION_USAGE), &old) == 0;
	if (!usage_published_due(have ? &old : NULL, u, now_s)) {
		json_decref(pvc);
		return;
	}
	char *text = usage_published_text(u, now_s);
	/* Guarded by the uid: a claim deleted and made again under the name gets no figures of the old one. */
	json_t *body = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "uid", uid, "annotations", ANNOTATION_USAGE, text);
	struct kube_error err;
	const char *ns = kube_obj_str(pvc, "metadata.namespace"), *name = kube_obj_str(pvc, "metadata.name");
	if (kube_patch(ac->deps.base.client, &KUBE_PVCS, ns, name, NULL, KUBE_PATCH_MERGE, body, NULL, &err) < 0)
		log_warn("autoresize", "%s/%s: publishing its usage failed: %s", ns, name, err.message);
	else
		log_debug("autoresize", "%s/%s: usage published: %s", ns, name, text);
	json_decref(body);
	free(text);
	json_decref(pvc);
}

void autoresize_publish_usage(struct autoresize_ctx *ac, const struct poll *p)
{
	int64_t now_s = p->now_ms / 1000;
	const char *key;
	const json_t *mounted;
	json_object_foreach((json_t *)p->mounts, key, mounted) {
		struct volume_usage u;
		if (!usage_from_json(json_object_get(p->table, key), &u))
			continue;
		if (!usage_valid(&u)) {
			log_debug("autoresize", "%s: the source's figures are no file system's; not published", key);
			continue;
		}
		publish_one(ac, key, &u, now_s);
	}
}
