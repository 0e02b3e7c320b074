/*
 * Re-seals, once, the state that a version before UID-bound seals left in
 * the cluster (state_seal.h): a resize in flight across the upgrade then
 * finishes, and from then on a seal of the earlier form ("v1", valid for
 * any object of the name) holds nowhere, so an old state copied from a
 * deleted object cannot be replayed.
 *
 * The leader runs it before its controllers start. When the key's Secret
 * says STATE_SEAL_FORMAT, there is nothing to do. Otherwise it marks the
 * Secret STATE_SEAL_FORMAT_UPGRADING (a leader that may not update the
 * Secret re-seals nothing: those states stay untrusted), seals for the
 * object that carries it every state whose v1 seal holds (StatefulSets'
 * resize-state and scaledown-state, backup ConfigMaps' resize state and
 * saved StatefulSet, StatefulClusters' cluster-state), then marks the
 * Secret STATE_SEAL_FORMAT. A crash before that repeats the pass at the
 * next start; nothing it writes changes a state's text.
 *
 * Threads: the manager's, before the controllers start.
 */
#ifndef SOP_CONTROLLERS_STATE_SEAL_UPGRADE_H
#define SOP_CONTROLLERS_STATE_SEAL_UPGRADE_H

#include <stdbool.h>

#include "client/kube_client.h"
#include "controllers/state_seal.h"

struct state_seal_upgrade {
	struct kube_client *client;   /* borrowed */
	const struct state_seal *seal; /* borrowed */
	const char *key_namespace;    /* where the key's Secret is */
	const char *namespace;        /* the namespace watched; NULL: all */
};

/*
 * The pass described above. Returns the number of states re-sealed (0 or
 * more), or -1 with *err filled when it could not finish (logged by the
 * caller; the next start tries again).
 */
int state_seal_upgrade_run(const struct state_seal_upgrade *u, struct kube_error *err)
	__attribute__((warn_unused_result));

#endif
