/* The test bed's provisioner of real local volumes (see local_provisioner.h). */
#include "local_provisioner.h"

#include <stdlib.h>
#include <string.h>

#include "client/quantity.h"
#include "local_volume.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define COMPONENT "local-volumes"
#define ANN_PROVISIONER "volume.kubernetes.io/storage-provisioner"
#define ANN_PROVISIONED_BY "pv.kubernetes.io/provisioned-by"
#define RELEASE_RETRY_MS 2000

static const char *annotation(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(obj, "metadata"),
								  "annotations"), key));
}

static bool is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

bool local_claim_needs_volume(const json_t *pvc)
{
	return is(kube_obj_str(pvc, "status.phase"), "Pending") && !kube_obj_str(pvc, "spec.volumeName") &&
	       is(annotation(pvc, ANN_PROVISIONER), LOCAL_PROVISIONER_NAME) &&
	       !kube_obj_str(pvc, "metadata.deletionTimestamp");
}

bool local_volume_releasable(const json_t *pv)
{
	const char *phase = kube_obj_str(pv, "status.phase");
	return local_provisioner_owns(pv) && is(kube_obj_str(pv, "spec.persistentVolumeReclaimPolicy"), "Delete") &&
	       (is(phase, "Released") || is(phase, "Failed"));
}

/* File systems want whole blocks: sizes are rounded up to whole MiB. */
static int64_t whole_mib(int64_t bytes)
{
	const int64_t mib = 1024 * 1024;
	return (bytes + mib - 1) / mib * mib;
}

/* Bytes of a quantity string, in whole MiB; -1 when unusable. */
static int64_t size_bytes(const char *s)
{
	struct quantity q;
	int64_t v;
	if (!s || quantity_parse(s, &q, NULL) < 0 || quantity_to_int64(&q, &v) < 0 || v <= 0)
		return -1;
	return whole_mib(v);
}

/* The PV of claim pvc on node: at path, a file system of fstype, or (fstype NULL) a device in volumeMode Block. */
static json_t *persistent_volume(const struct local_node *node, const json_t *pvc, const json_t *sc,
				 const char *pv_name, const char *path, const char *fstype)
{
	const char *reclaim = kube_obj_str(sc, "reclaimPolicy");
	const json_t *modes = json_object_get(json_object_get(pvc, "spec"), "accessModes");
	json_t *pv = json_pack(
		"{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:s}, s:O, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s},"
		" s:{s:s, s:s*}, s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}}",
		"apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", pv_name, "annotations",
		ANN_PROVISIONED_BY, LOCAL_PROVISIONER_NAME, "spec", "capacity", "storage",
		kube_obj_str(pvc, "spec.resources.requests.storage"), "accessModes", modes,
		"persistentVolumeReclaimPolicy", reclaim ? reclaim : "Delete", "storageClassName",
		kube_obj_str(pvc, "spec.storageClassName"), "volumeMode", fstype ? "Filesystem" : "Block", "claimRef", "apiVersion", "v1",
		"kind", "PersistentVolumeClaim", "namespace", kube_obj_str(pvc, "metadata.namespace"), "name",
		kube_obj_str(pvc, "metadata.name"), "uid", kube_obj_str(pvc, "metadata.uid"), "local", "path", path,
		"fsType", fstype, "nodeAffinity", "required", "nodeSelectorTerms", "matchExpressions", "key",
		"kubernetes.io/hostname", "operator", "In", "values", node->name);
	return pv;
}

int local_provision(struct local_provisioner *p, const char *ns, const char *name, long *requeue_ms)
{
	json_t *pvc = NULL, *sc = NULL, *existing = NULL, *pv = NULL;
	struct kube_error err;
	char *pv_name = NULL, *fail = NULL, *path = NULL;
	int rc = -1;
	*requeue_ms = 0;
	if (kube_get(p->client, &KUBE_PVCS, ns, name, &pvc, &err) < 0) {
		rc = err.code == 404 ? 0 : -1;
		if (rc)
			log_warn(COMPONENT, "%s/%s: get: %s", ns, name, err.message);
		goto out;
	}
	if (!local_claim_needs_volume(pvc)) {
		rc = 0;
		goto out;
	}
	/* A node not ours: nothing to do until the claim changes (it is looked at again then). */
	const struct local_node *node = local_nodes_for_claim(&p->nodes, pvc, &fail);
	if (!node) {
		log_warn(COMPONENT, "%s/%s: %s", ns, name, fail);
		rc = 0;
		goto out;
	}
	const char *cls = kube_obj_str(pvc, "spec.storageClassName");
	if (!cls || kube_get(p->client, &KUBE_STORAGECLASSES, NULL, cls, &sc, &err) < 0) {
		log_warn(COMPONENT, "%s/%s: StorageClass %s: %s", ns, name, cls ? cls : "(none)",
			 cls ? err.message : "not set");
		goto out;
	}
	const char *fstype = kube_obj_str(sc, "parameters.fsType");
	fstype = fstype ? fstype : "ext4";
	int64_t bytes = size_bytes(kube_obj_str(pvc, "spec.resources.requests.storage"));
	if (bytes < 0) {
		log_warn(COMPONENT, "%s/%s: no usable spec.resources.requests.storage", ns, name);
		goto out;
	}
	pv_name = xasprintf("pvc-%s", kube_obj_str(pvc, "metadata.uid"));
	if (kube_get(p->client, &KUBE_PVS, NULL, pv_name, &existing, &err) == 0) {
		rc = 0; /* made before; the PV controller binds it */
		goto out;
	}
	if (err.code != 404) {
		log_warn(COMPONENT, "%s/%s: get pv %s: %s", ns, name, pv_name, err.message);
		goto out;
	}
	/* A claim in volumeMode Block gets the loop device itself, as a CSI driver hands a raw volume. */
	bool block = is(kube_obj_str(pvc, "spec.volumeMode"), "Block");
	if (block ? local_volume_create_block(node->dir, pv_name, bytes, &path, &fail) < 0
		  : local_volume_create(node->dir, pv_name, bytes, fstype, &fail) < 0) {
		log_warn(COMPONENT, "%s/%s: making the volume: %s", ns, name, fail);
		goto out;
	}
	if (!block)
		path = local_volume_path(node->dir, pv_name);
	pv = persistent_volume(node, pvc, sc, pv_name, path, block ? NULL : fstype);
	if (kube_create(p->client, &KUBE_PVS, NULL, pv, NULL, &err) < 0 && err.code != 409) {
		log_warn(COMPONENT, "%s/%s: create pv %s: %s", ns, name, pv_name, err.message);
		goto out;
	}
	log_info(COMPONENT, "%s/%s: pv %s: %s %lld bytes on %s (%s)", ns, name, pv_name, block ? "Block" : fstype,
		 (long long)bytes, node->name, path);
	rc = 0;
out:
	free(path);
	free(fail);
	free(pv_name);
	json_decref(pv);
	json_decref(existing);
	json_decref(sc);
	json_decref(pvc);
	return rc;
}

int local_release(struct local_provisioner *p, const char *pv_name, long *requeue_ms)
{
	json_t *pv = NULL;
	struct kube_error err;
	char *fail = NULL;
	int rc = -1;
	*requeue_ms = 0;
	if (kube_get(p->client, &KUBE_PVS, NULL, pv_name, &pv, &err) < 0) {
		rc = err.code == 404 ? 0 : -1;
		goto out;
	}
	if (!local_volume_releasable(pv)) {
		rc = 0;
		goto out;
	}
	const struct local_node *node = local_nodes_of_volume(&p->nodes, pv);
	if (!node) {
		log_warn(COMPONENT, "pv %s: bound to no node this resizer serves (--local-node); left alone", pv_name);
		rc = 0;
		goto out;
	}
	int gone = local_volume_delete(node->dir, pv_name, &fail);
	if (gone < 0) {
		log_warn(COMPONENT, "pv %s: deleting the volume: %s", pv_name, fail);
		goto out;
	}
	if (gone == 1) { /* a pod's mount of it is still there */
		*requeue_ms = RELEASE_RETRY_MS;
		rc = 0;
		goto out;
	}
	struct kube_delete_options opts = {.precondition_uid = kube_obj_str(pv, "metadata.uid")};
	if (kube_delete(p->client, &KUBE_PVS, NULL, pv_name, &opts, &err) < 0 && err.code != 404) {
		log_warn(COMPONENT, "pv %s: delete: %s", pv_name, err.message);
		goto out;
	}
	log_info(COMPONENT, "pv %s: released; backing file deleted, PV deleted", pv_name);
	rc = 0;
out:
	free(fail);
	json_decref(pv);
	return rc;
}

bool local_provisioner_owns(const json_t *pv)
{
	return is(annotation(pv, ANN_PROVISIONED_BY), LOCAL_PROVISIONER_NAME);
}

int local_provisioner_grow(struct local_provisioner *p, const json_t *pv, int64_t bytes)
{
	if (!p->nodes.n || !local_provisioner_owns(pv))
		return 0;
	const char *name = kube_obj_str(pv, "metadata.name");
	const struct local_node *node = local_nodes_of_volume(&p->nodes, pv);
	if (!node) {
		log_warn(COMPONENT, "pv %s: bound to no node this resizer serves (--local-node)", name);
		return -1;
	}
	char *fail = NULL;
	bool block = is(kube_obj_str(pv, "spec.volumeMode"), "Block");
	if ((block ? local_volume_grow_block(node->dir, name, whole_mib(bytes), &fail)
		   : local_volume_grow(node->dir, name, whole_mib(bytes), &fail)) < 0) {
		log_warn(COMPONENT, "pv %s: growing to %lld bytes: %s", name, (long long)bytes, fail);
		free(fail);
		return -1;
	}
	log_info(COMPONENT, "pv %s: %s grown to %lld bytes", name, block ? "device" : "file system", (long long)bytes);
	return 0;
}
