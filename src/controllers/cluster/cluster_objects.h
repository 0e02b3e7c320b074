/*
 * The objects a StatefulCluster creates: its members' pods and claims and
 * its ControllerRevisions, their names, and how to read those names back
 * (identities, revision hashes). Pure. Private to src/controllers/cluster.
 */
#ifndef SOP_CLUSTER_OBJECTS_H
#define SOP_CLUSTER_OBJECTS_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/claim_names.h"

/* ---- names: the members' pods and claims are named as a StatefulSet's (claim_names.h) ---- */

/* The ControllerRevision of a template hash: "<cluster>-<hash>". New string. */
char *cluster_revision_name(const char *cluster, const char *hash);

/*
 * The identity n of a name "<prefix><n>" (canonical decimal), or -1. Not
 * kube_name_ordinal: identities come from a counter that only grows, so
 * they may pass the 9 digits of an int32 ordinal (up to 18 here).
 */
long cluster_identity_after(const char *name, const char *prefix);
/* The identity of a pod name "<cluster>-<n>" (tmpl NULL) or claim name "<tmpl>-<cluster>-<n>", or -1. */
long cluster_identity_of(const char *name, const char *tmpl, const char *cluster);

/* ---- objects ---- */

/* The condition of type in obj's status.conditions (borrowed), or NULL: kube_obj_condition gives no times. */
const json_t *cluster_condition(const json_t *obj, const char *type);

/* The revision hash of a pod template: 10 hex digits of SHA-256 of its canonical JSON. */
void cluster_template_hash(const json_t *tmpl, char out[11]);

/*
 * The labels every member pod (or claim) carries: tmpl's (its template's,
 * or claim template's), the selector's matchLabels (tmpl may leave them
 * out), the cluster and member labels (member may be NULL). New object.
 */
json_t *cluster_pod_labels(const json_t *cluster, const json_t *tmpl, const char *member);

/*
 * Member n's pod at revision (name <cluster>-<hash>) from tmpl (the
 * revision's spec.template): hostname and subdomain, the claims of every
 * volumeClaimTemplate mounted under the template's name, the user's own
 * volumes kept, controlled by the StatefulCluster. New object.
 */
json_t *cluster_member_pod(const json_t *cluster, const json_t *tmpl, long n, const char *revision);

/* Claim <template>-<cluster>-<n> from volumeClaimTemplate vct; owned by the cluster when owned. New object. */
json_t *cluster_member_claim(const json_t *cluster, const json_t *vct, long n, bool owned);

/* The ControllerRevision <cluster>-<hash> holding spec.template, numbered number. New object. */
json_t *cluster_revision(const json_t *cluster, const char *hash, long long number);

/* An owner reference to the cluster (controller or not). New object. */
json_t *cluster_owner_ref(const json_t *cluster, bool controller);

#endif
