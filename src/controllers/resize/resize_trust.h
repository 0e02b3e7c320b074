/*
 * Which resize state the operator may act on: the state on a StatefulSet
 * and on its backup ConfigMap <sts>-sts-backup, judged by their seals and
 * the UIDs those are bound to (state_seal.h). The resize controller asks
 * before every decision; the admission webhook asks on a create while a
 * backup exists.
 *
 * The state through a re-create, each write sealed:
 *   Save      the ConfigMap is created with the state and the saved set
 *             sealed to the live set's UID (SAVED_FROM), then sealed for
 *             its own UID, which the create answered;
 *   (stop)    the set is orphan-deleted only once the ConfigMap is sealed
 *             for itself: while the set is gone the state lives there;
 *   Recreate  the set is created with its state sealed to the ConfigMap's
 *             UID (RECREATED_FROM), then the ConfigMap records, sealed, the
 *             UID the create answered (ANNOTATION_RECREATED_UID); the set's
 *             next state write seals it for itself, before the ConfigMap
 *             may go.
 * A crash between two of those writes leaves an object the next pass
 * re-seals (RESEAL) or, for a re-created set the ConfigMap does not name
 * yet, orphan-deletes and re-creates (UNCONFIRMED): it may be the
 * operator's own, or another set carrying a copy of that state.
 *
 * Pure; safe from any thread on objects nobody modifies.
 */
#ifndef SOP_CONTROLLERS_RESIZE_TRUST_H
#define SOP_CONTROLLERS_RESIZE_TRUST_H

#include <jansson.h>
#include <stdbool.h>

#include "controllers/state_seal.h"

enum resize_trust {
	RESIZE_TRUST_NONE,        /* nothing to judge: the set has no state, or there is no backup */
	RESIZE_TRUST_SEALED,      /* sealed for this very object */
	RESIZE_TRUST_RESEAL,      /* sealed for the object it was made from, which vouches for it: re-seal it */
	RESIZE_TRUST_UNCONFIRMED, /* a set sealed for a re-create from the backup, which names no set yet */
	RESIZE_TRUST_BROKEN,      /* a seal missing, forged, or made for another object */
};

/*
 * The backup (borrowed; NULL: none) of the set sts (borrowed; NULL: gone):
 * its resize state and its saved StatefulSet (which must be there) sealed
 * for itself, or for sts while sts is there (RESEAL).
 */
enum resize_trust resize_trust_backup(const struct state_seal *s, const json_t *backup, const json_t *sts);

/*
 * The resize state of sts (borrowed; NULL or no state: NONE): sealed for
 * itself, or for a re-create from backup (borrowed; may be NULL), which must
 * be SEALED and name sts's UID (RESEAL), or name none yet (UNCONFIRMED).
 */
enum resize_trust resize_trust_statefulset(const struct state_seal *s, const json_t *sts, const json_t *backup);

/*
 * True when sts (borrowed), a StatefulSet in a create request (no UID yet),
 * is the operator's re-create from backup (borrowed): backup is SEALED and
 * sts's resize state is sealed for a re-create from it.
 */
bool resize_trust_recreate_of(const struct state_seal *s, const json_t *sts, const json_t *backup);

/*
 * Seals, in the ConfigMap cm (borrowed, modified), its resize state and its
 * saved StatefulSet (data) for scope (its namespace and name are the set's).
 */
void resize_trust_seal_backup(const struct state_seal *s, json_t *cm, const struct state_seal_scope *scope);

/* A merge patch (new reference) sealing backup (borrowed) for itself; its resourceVersion is the precondition. */
json_t *resize_trust_reseal_backup(const struct state_seal *s, const json_t *backup);

/* A merge patch (new reference) sealing sts's resize state (borrowed) for itself; resourceVersion precondition. */
json_t *resize_trust_reseal_statefulset(const struct state_seal *s, const json_t *sts);

/*
 * A merge patch (new reference) of backup (borrowed; its UID the
 * precondition) recording, sealed, that the operator re-created StatefulSet
 * sts_uid from it.
 */
json_t *resize_trust_confirm(const struct state_seal *s, const json_t *backup, const char *sts_uid);

#endif
