#include "client/kube_resource.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/xalloc.h"

const struct kube_resource KUBE_STATEFULSETS = {
	.group = "apps", .version = "v1", .api_version = "apps/v1",
	.plural = "statefulsets", .kind = "StatefulSet", .namespaced = true,
};
const struct kube_resource KUBE_CONTROLLERREVISIONS = {
	.group = "apps", .version = "v1", .api_version = "apps/v1",
	.plural = "controllerrevisions", .kind = "ControllerRevision", .namespaced = true,
};
const struct kube_resource KUBE_PVCS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "persistentvolumeclaims", .kind = "PersistentVolumeClaim", .namespaced = true,
};
const struct kube_resource KUBE_PVS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "persistentvolumes", .kind = "PersistentVolume", .namespaced = false,
};
const struct kube_resource KUBE_PODS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "pods", .kind = "Pod", .namespaced = true,
};
const struct kube_resource KUBE_EVENTS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "events", .kind = "Event", .namespaced = true,
};
const struct kube_resource KUBE_CONFIGMAPS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "configmaps", .kind = "ConfigMap", .namespaced = true,
};
const struct kube_resource KUBE_SECRETS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "secrets", .kind = "Secret", .namespaced = true,
};
const struct kube_resource KUBE_NODES = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "nodes", .kind = "Node", .namespaced = false,
};
const struct kube_resource KUBE_NAMESPACES = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "namespaces", .kind = "Namespace", .namespaced = false,
};
const struct kube_resource KUBE_STATEFULCLUSTERS = {
	.group = "stateful-operator.io", .version = "v1alpha1", .api_version = "stateful-operator.io/v1alpha1",
	.plural = "statefulclusters", .kind = "StatefulCluster", .namespaced = true,
};
const struct kube_resource KUBE_JOBS = {
	.group = "batch", .version = "v1", .api_version = "batch/v1",
	.plural = "jobs", .kind = "Job", .namespaced = true,
};
const struct kube_resource KUBE_STORAGECLASSES = {
	.group = "storage.k8s.io", .version = "v1", .api_version = "storage.k8s.io/v1",
	.plural = "storageclasses", .kind = "StorageClass", .namespaced = false,
};
const struct kube_resource KUBE_VOLUMEATTRIBUTESCLASSES = {
	.group = "storage.k8s.io", .version = "v1", .api_version = "storage.k8s.io/v1",
	.plural = "volumeattributesclasses", .kind = "VolumeAttributesClass", .namespaced = false,
};
const struct kube_resource KUBE_MUTATINGWEBHOOKCONFIGURATIONS = {
	.group = "admissionregistration.k8s.io", .version = "v1", .api_version = "admissionregistration.k8s.io/v1",
	.plural = "mutatingwebhookconfigurations", .kind = "MutatingWebhookConfiguration", .namespaced = false,
};
const struct kube_resource KUBE_LEASES = {
	.group = "coordination.k8s.io", .version = "v1", .api_version = "coordination.k8s.io/v1",
	.plural = "leases", .kind = "Lease", .namespaced = true,
};

static void add_segment(struct strbuf *sb, const char *seg)
{
	char *esc = curl_easy_escape(NULL, seg, 0);
	if (!esc)
		abort();
	if (strbuf_addf(sb, "/%s", esc) < 0)
		abort(); /* uncapped buffer: cannot fail */
	curl_free(esc);
}

char *kube_resource_path(const struct kube_resource *r, const char *ns, const char *name,
			 const char *sub)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = r->group[0] ? strbuf_addf(&sb, "/apis/%s/%s", r->group, r->version)
			     : strbuf_addf(&sb, "/api/%s", r->version);
	if (rc < 0)
		abort();
	if (r->namespaced && ns && ns[0]) {
		add_segment(&sb, "namespaces");
		add_segment(&sb, ns);
	}
	add_segment(&sb, r->plural);
	if (name) {
		add_segment(&sb, name);
		if (sub)
			add_segment(&sb, sub);
	}
	return strbuf_detach(&sb);
}
