/*
 * The test bed's provisioner for the real nodes' StorageClasses
 * (provisioner testbed.stateful-operator.io/local): a Pending claim gets a
 * `local` PV on one of the real nodes (local_nodes.h: the one the claim
 * names, else the first), backed by a file system of the requested size
 * (local_volume.h), pre-bound to the claim (a claim in volumeMode Block: a
 * Block PV whose path is the loop device itself, no file system, with any of
 * these classes); a Released PV of reclaim policy
 * Delete is unmounted, its backing file deleted, then the PV. Class
 * parameter fsType: ext4 (default) or xfs. Runs in testbed-pvc-resizer,
 * which also grows these volumes (local_provisioner_grow). Test-bed code.
 */
#ifndef SOP_TESTBED_LOCAL_PROVISIONER_H
#define SOP_TESTBED_LOCAL_PROVISIONER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "client/kube_client.h"
#include "local_nodes.h"

#define LOCAL_PROVISIONER_NAME "testbed.stateful-operator.io/local"

struct local_provisioner {
	struct kube_client *client; /* borrowed */
	struct local_nodes nodes;   /* where the volumes go, each node its own dir; none: not served */
};

/* Informer filters: a claim waiting for us; a PV of ours to delete. */
bool local_claim_needs_volume(const json_t *pvc);
bool local_volume_releasable(const json_t *pv);

/* One step for the claim ns/name or the PV; 0 done (or *requeue_ms > 0: look again then), -1 retry. */
int local_provision(struct local_provisioner *p, const char *ns, const char *name, long *requeue_ms);
int local_release(struct local_provisioner *p, const char *pv_name, long *requeue_ms);

/* pv (borrowed) is one of ours. */
bool local_provisioner_owns(const json_t *pv);

/* Grows the backing of pv (borrowed) to bytes when it is one of ours; 0 when not ours. */
int local_provisioner_grow(struct local_provisioner *p, const json_t *pv, int64_t bytes);

#endif
