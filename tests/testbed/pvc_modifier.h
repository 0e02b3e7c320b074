/*
 * testbed-pvc-resizer's ModifyVolume side: carries out the steps
 * pvc_modify_plan.h decides (and gives provisioned PVs their claim's
 * class), on the API server, for claims of every
 * StorageClass (the test bed has no other driver to leave them to; a
 * VolumeAttributesClass's driverName is not looked at). The outcome of a
 * modification waits for the resizer's delay (its mode's "delay", slow
 * mode's 5 s), told by the delay_ms callback. Main thread only.
 */
#ifndef SOP_TESTBED_PVC_MODIFIER_H
#define SOP_TESTBED_PVC_MODIFIER_H

#include <jansson.h>

#include "client/kube_client.h"
#include "runtime/events.h"
#include "runtime/store.h"
#include "util/hashmap.h"

struct pvc_modifier {
	struct kube_client *client; /* borrowed */
	struct store *pvs, *vacs;   /* borrowed: the informers' caches */
	/* The delay before a modification's outcome for pvc (ms), or -1 when it cannot be told now. */
	long (*delay_ms)(void *ctx, const json_t *pvc);
	void *ctx;
	/*
	 * Borrowed, may be NULL: where the external-resizer's Events go
	 * (VolumeModify, VolumeModifySuccessful, VolumeModifyFailed,
	 * VolumeModifyCanceled).
	 */
	struct event_recorder *events;
	struct hashmap clocks; /* "ns/name" -> when its modification started; private */
};

void pvc_modifier_init(struct pvc_modifier *m);
void pvc_modifier_release(struct pvc_modifier *m);

/*
 * Brings the claim ns/name as far as it goes now. Returns 0 (look again
 * after *requeue_ms when it is > 0), or -1 to retry with backoff.
 */
int pvc_modifier_reconcile(struct pvc_modifier *m, const char *ns, const char *name, long *requeue_ms);

/*
 * Gives the PV pv_name the class its not yet bound claim asks for, when
 * modify_provisioned_class says so and the class exists; a missing class
 * leaves the claim Pending, as a CSI provisioner does (the class's
 * creation brings the PV back). Returns 0, or -1 to retry with backoff.
 */
int pvc_modifier_provisioned(struct pvc_modifier *m, const char *pv_name);

#endif
