/*
 * The API resources the operator talks to, and how their URL paths are
 * built. Immutable tables; safe from any thread.
 */
#ifndef SOP_CLIENT_KUBE_RESOURCE_H
#define SOP_CLIENT_KUBE_RESOURCE_H

#include <stdbool.h>

struct kube_resource {
	const char *group;   /* "" for the core group */
	const char *version;
	const char *api_version; /* "apps/v1", or "v1" for the core group */
	const char *plural;
	const char *kind;
	bool namespaced;
};

extern const struct kube_resource KUBE_STATEFULSETS;
extern const struct kube_resource KUBE_PVCS;
extern const struct kube_resource KUBE_PVS;
extern const struct kube_resource KUBE_PODS;
extern const struct kube_resource KUBE_JOBS;
extern const struct kube_resource KUBE_EVENTS;
extern const struct kube_resource KUBE_CONFIGMAPS;
extern const struct kube_resource KUBE_SECRETS;
extern const struct kube_resource KUBE_STORAGECLASSES;
extern const struct kube_resource KUBE_VOLUMEATTRIBUTESCLASSES;
extern const struct kube_resource KUBE_MUTATINGWEBHOOKCONFIGURATIONS;
extern const struct kube_resource KUBE_LEASES;
extern const struct kube_resource KUBE_NODES;
extern const struct kube_resource KUBE_NAMESPACES;
extern const struct kube_resource KUBE_CONTROLLERREVISIONS;
extern const struct kube_resource KUBE_STATEFULCLUSTERS; /* ours: deploy/crds/ */

/*
 * Returns a new path: /api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]] for the
 * core group, /apis/GROUP/VERSION/... otherwise. ns NULL or "" lists across
 * namespaces; name and sub may be NULL. Path segments are escaped.
 */
char *kube_resource_path(const struct kube_resource *r, const char *ns, const char *name,
			 const char *sub);

#endif
