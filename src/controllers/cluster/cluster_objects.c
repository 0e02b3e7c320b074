#include "controllers/cluster/cluster_plan_internal.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "util/xalloc.h"

char *cluster_revision_name(const char *cluster, const char *hash)
{
	return xasprintf("%s-%s", cluster, hash);
}

long cluster_identity_of(const char *name, const char *tmpl, const char *cluster)
{
	char *prefix = set_name_prefix(tmpl, cluster);
	long n = (long)kube_name_number(name, prefix, MAX_IDENTITY_DIGITS);
	free(prefix);
	return n;
}

const json_t *cluster_condition(const json_t *obj, const char *type)
{
	return kube_array_find(json_object_get(json_object_get(obj, "status"), "conditions"), "type", type);
}

void cluster_template_hash(const json_t *tmpl, char out[11])
{
	char *text = json_dumps(tmpl ? tmpl : json_null(), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_Digest(text, strlen(text), md, &len, EVP_sha256(), NULL);
	for (int i = 0; i < 5; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	free(text);
}

json_t *cluster_owner_ref(const json_t *cluster, bool controller)
{
	json_t *ref = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", CLUSTER_API_VERSION, "kind", CLUSTER_KIND,
				"name", kube_obj_str(cluster, "metadata.name"), "uid",
				kube_obj_str(cluster, "metadata.uid"));
	if (controller) {
		json_object_set_new(ref, "controller", json_true());
		json_object_set_new(ref, "blockOwnerDeletion", json_true());
	}
	return ref;
}

static json_t *object_or_new(const json_t *v)
{
	return json_is_object(v) ? json_deep_copy(v) : json_object();
}

json_t *cluster_pod_labels(const json_t *cluster, const json_t *tmpl, const char *member)
{
	json_t *labels = object_or_new(kube_obj_labels(tmpl));
	const json_t *selector = json_object_get(json_object_get(cluster, "spec"), "selector");
	const json_t *ml = json_object_get(selector, "matchLabels");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)ml, k, v) {
		if (!json_object_get(labels, k))
			json_object_set(labels, k, v);
	}
	json_object_set_new(labels, LABEL_CLUSTER, json_string(kube_obj_str(cluster, "metadata.name")));
	if (member)
		json_object_set_new(labels, LABEL_CLUSTER_MEMBER, json_string(member));
	return labels;
}

static bool has_volume(const json_t *volumes, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach(volumes, i, v) {
		const char *have = kube_obj_str(v, "name");
		if (name && have && !strcmp(have, name))
			return true;
	}
	return false;
}

json_t *cluster_member_pod(const json_t *cluster, const json_t *tmpl, long n, const char *revision)
{
	const char *name = kube_obj_str(cluster, "metadata.name");
	char *pod_name = set_pod_name(name, n);
	json_t *labels = cluster_pod_labels(cluster, tmpl, pod_name);
	json_object_set_new(labels, LABEL_REVISION_HASH, json_string(revision));
	json_t *annotations = object_or_new(kube_obj_annotations(tmpl));
	json_t *spec = object_or_new(json_object_get(tmpl, "spec"));
	json_object_set_new(spec, "hostname", json_string(pod_name));
	const char *service = kube_obj_str(cluster, "spec.serviceName");
	if (service && *service)
		json_object_set_new(spec, "subdomain", json_string(service));
	json_t *volumes = json_object_get(spec, "volumes");
	if (!json_is_array(volumes)) {
		volumes = json_array();
		json_object_set_new(spec, "volumes", volumes);
	}
	size_t i;
	const json_t *vct;
	json_array_foreach(json_object_get(json_object_get(cluster, "spec"), "volumeClaimTemplates"), i, vct) {
		const char *t = kube_obj_str(vct, "metadata.name");
		if (!t || has_volume(volumes, t))
			continue; /* a user volume of that name wins, as in a StatefulSet */
		char *claim = set_claim_name(t, name, n);
		json_t *volume = json_pack("{s:s, s:{s:s}}", "name", t, "persistentVolumeClaim", "claimName", claim);
		json_array_append_new(volumes, volume);
		free(claim);
	}
	json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:o, s:[o]}, s:o}", "apiVersion", "v1", "kind", "Pod",
				"metadata", "name", pod_name, "namespace", kube_obj_str(cluster, "metadata.namespace"),
				"labels", labels, "annotations", annotations, "ownerReferences",
				cluster_owner_ref(cluster, true), "spec", spec);
	free(pod_name);
	return pod;
}

json_t *cluster_member_claim(const json_t *cluster, const json_t *vct, long n, bool owned)
{
	const char *name = kube_obj_str(cluster, "metadata.name");
	char *member = set_pod_name(name, n);
	char *claim = set_claim_name(kube_obj_str(vct, "metadata.name"), name, n);
	/* The selector's labels too, as a StatefulSet gives its claims. */
	json_t *labels = cluster_pod_labels(cluster, vct, member);
	json_t *meta = json_pack("{s:s, s:s, s:o}", "name", claim, "namespace",
				 kube_obj_str(cluster, "metadata.namespace"), "labels", labels);
	const json_t *ann = kube_obj_annotations(vct);
	if (json_is_object(ann))
		json_object_set_new(meta, "annotations", json_deep_copy(ann));
	if (owned)
		json_object_set_new(meta, "ownerReferences", json_pack("[o]", cluster_owner_ref(cluster, false)));
	json_t *pvc = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata",
				meta, "spec", object_or_new(json_object_get(vct, "spec")));
	free(claim);
	free(member);
	return pvc;
}

json_t *cluster_revision(const json_t *cluster, const char *hash, long long number)
{
	const char *name = kube_obj_str(cluster, "metadata.name");
	char *rev = cluster_revision_name(name, hash);
	const json_t *tmpl = json_object_get(json_object_get(cluster, "spec"), "template");
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:[o]}, s:{s:O}, s:I}", "apiVersion", "apps/v1",
				"kind", "ControllerRevision", "metadata", "name", rev, "namespace",
				kube_obj_str(cluster, "metadata.namespace"), "labels", LABEL_CLUSTER, name,
				LABEL_REVISION_HASH, hash, "ownerReferences", cluster_owner_ref(cluster, true), "data",
				"template", tmpl ? tmpl : json_null(), "revision", (json_int_t)number);
	free(rev);
	return obj;
}
