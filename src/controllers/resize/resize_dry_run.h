/*
 * Whether the API server would take the StatefulSet a resize is about to
 * re-create, asked before the orphan delete that makes the re-create
 * necessary. Once the set is deleted, a refused re-create leaves it gone
 * (its pods orphaned, a GitOps tool's own create blocked while the saved
 * copy waits): a create with dryRun=All runs the same defaulting,
 * validation and admission, and stores nothing. The set still exists
 * then, so a create that passed everything else meets its name: 409
 * AlreadyExists means yes.
 *
 * Threads: any, with a client the caller may use from its thread.
 */
#ifndef SOP_RESIZE_DRY_RUN_H
#define SOP_RESIZE_DRY_RUN_H

#include <jansson.h>

#include "client/kube_client.h"

/* err->reason when the API server refuses the StatefulSet itself. */
#define RESIZE_RECREATE_REFUSED "RecreateRefused"

/*
 * Dry-run creates sts (borrowed: the body the re-create will send) in
 * namespace ns. Returns 0 when the API server takes it, or cannot say (a
 * webhook that does not support dry runs; a quota the set itself fills
 * until it is deleted). -1 with *err: reason RESIZE_RECREATE_REFUSED and a
 * message naming the API server's answer when it refuses it (400, 403,
 * 422, or a webhook's denial); otherwise the client's error (no answer,
 * 5xx), to be tried again.
 */
int resize_dry_run_recreate(struct kube_client *c, const char *ns, const json_t *sts, struct kube_error *err)
	__attribute__((warn_unused_result));

#endif
