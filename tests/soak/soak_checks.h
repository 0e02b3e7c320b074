/*
 * The chaos soak's invariants, read from the cluster's own state and from
 * watch records: each check appends what it found wrong (one string per
 * violation) to violations.
 */
#ifndef SOP_SOAK_CHECKS_H
#define SOP_SOAK_CHECKS_H

#include <jansson.h>

#include "client/kube_client.h"
#include "soak_ops.h"

/* Every operation ended: completed, or failed with the operator's message. */
void soak_check_ended(const struct soak_op *ops, int n, json_t *violations);

/*
 * Never two at once (watch records: from creation until deletion began):
 * copy Jobs for one replica of a set, cleanup pods for one ordinal of a
 * set, pods of one StatefulCluster identity.
 */
void soak_check_never_two(const json_t *job_records, const json_t *pod_records, json_t *violations);

/*
 * No StatefulCluster identity used again: no pod of an identity is created
 * after a MemberReplaced or MemberRemoved Event said it left (by etcd
 * revision: the Event is recorded after the state change that released it).
 */
void soak_check_identities(struct kube_client *admin, const char *ns, const json_t *pod_records, json_t *violations);

/*
 * Nothing lost or crossed: every claim an operation must keep exists, and
 * every Bound claim's PV is bound back to that claim (UID).
 */
void soak_check_claims(struct kube_client *admin, const char *ns, const struct soak_op *ops, int n,
		       json_t *violations);

/*
 * Nothing of ours left behind: saved StatefulSets, copy Jobs, cleanup pods
 * (given a minute to go), temporary claims, old volumes (but those a
 * failed copy keeps for the user), PVs of the namespace still marked as
 * taken over by a copy (taken-for, original-reclaim-policy; but those old
 * volumes), and no object in deletion still holding one of our finalizers.
 */
void soak_check_leftovers(struct kube_client *admin, const char *ns, const struct soak_op *ops, int n,
			  json_t *violations);

#endif
