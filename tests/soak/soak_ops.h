/*
 * The chaos soak's operations: each a workload of its own (a StatefulSet or
 * a StatefulCluster named after it) that is created, made ready, asked to
 * change, and then watched until it completed or failed with a message.
 */
#ifndef SOP_SOAK_OPS_H
#define SOP_SOAK_OPS_H

#include <stdbool.h>

#include "client/kube_client.h"

enum soak_op_kind {
	OP_EXPAND,         /* in-place growth of 2 replicas */
	OP_COPY_ROLLING,   /* growth by copy on a class that cannot expand, replica by replica */
	OP_COPY_OFFLINE,   /* the same with every replica stopped */
	OP_COPY_ABORT,     /* a rolling copy aborted once it started */
	OP_SCALEDOWN,      /* 3 -> 1 with a cleanup pod that succeeds */
	OP_SCALEDOWN_FAIL, /* 3 -> 1 with a cleanup pod that fails: given up, claims kept */
	OP_CLUSTER,        /* a StatefulCluster of 3 scaled to 2 */
	OP_CLUSTER_FAIL,   /* a StatefulCluster of 3 scaled to 4 while member 1 fails: replaced by a new identity */
	OP_KINDS
};

extern const char *const soak_op_names[OP_KINDS];

enum soak_op_phase { PHASE_CREATED, PHASE_ASKED, PHASE_DONE, PHASE_FAILED };

struct soak_op {
	enum soak_op_kind kind;
	enum soak_op_phase phase;
	char name[32];
	double created_ms, asked_ms, ended_ms;
	char *message; /* PHASE_FAILED: what the operator said */
};

/* Creates op's workload in ns. 0, or -1 with a message on stderr. */
int soak_op_create(struct kube_client *admin, const char *ns, struct soak_op *op);

/* One step: asks for the change once the workload is ready; records the end. */
void soak_op_poll(struct kube_client *admin, const char *ns, struct soak_op *op, double now_ms);

#endif
