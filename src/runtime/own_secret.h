/*
 * The operator's own Secrets (the state key, the webhook's certificate):
 * installed empty by deploy/ and the Helm chart, filled by the operator.
 *
 * The operator may get and update these Secrets by name and nothing more:
 * RBAC cannot limit create to a name, and a create right would let a
 * compromised operator write any Secret in its namespace. So it never
 * creates them. It fills an empty one with an update that carries the
 * resourceVersion it read: of two replicas filling at once, one wins, the
 * other gets 409 and reads the winner's. The update keeps the Secret's
 * type, labels and annotations (Helm's ownership and resource policy).
 *
 * Pure functions, any thread.
 */
#ifndef SOP_RUNTIME_OWN_SECRET_H
#define SOP_RUNTIME_OWN_SECRET_H

#include <jansson.h>

/*
 * What to tell the user when Secret ns/name is missing: which Secret to
 * make and the one command that makes it (new string).
 */
char *own_secret_missing(const char *ns, const char *name);

/*
 * The PUT that fills secret (borrowed: the object as read, with its
 * resourceVersion) with data (stolen): a copy of secret with data in place
 * of its own, everything else kept but metadata.managedFields (new
 * reference).
 */
json_t *own_secret_filled(const json_t *secret, json_t *data);

#endif
