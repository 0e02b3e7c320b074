/*
 * Seals on the state the controllers keep in annotations.
 *
 * The controllers keep their progress on the objects they serve (the
 * resize-state, scaledown-state and cluster-state annotations, the saved
 * StatefulSet), where anyone who may edit the object may write too. What
 * the operator reads back is therefore untrusted unless it carries a seal:
 * an HMAC-SHA256, under a key only the operator can read, of the object's
 * namespace and name, what the text is (its annotation key) and the text.
 * A seal cannot be forged without the key, nor moved to another object or
 * another annotation; the seal of the same text on the same object stays
 * valid, so state may move between a StatefulSet and its saved copy.
 *
 * The key lives in a Secret in the operator's own namespace (by default
 * stateful-operator-state-key), installed empty (runtime/own_secret.h) and
 * filled by the first operator that finds it so. Losing it makes every
 * state in flight untrusted (see docs).
 *
 * Thread-safe after creation: sealing and checking only read the key.
 */
#ifndef SOP_CONTROLLERS_STATE_SEAL_H
#define SOP_CONTROLLERS_STATE_SEAL_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"

#define STATE_SEAL_KEY_BYTES 32
#define STATE_SEAL_HEX_LEN 64
#define STATE_SEAL_SECRET_NAME "stateful-operator-state-key"
#define STATE_SEAL_SECRET_KEY "key"
/* The seal of annotation <key> is in annotation <key>-seal. */
#define STATE_SEAL_SUFFIX "-seal"

struct state_seal;

/* A seal with key (copied). */
struct state_seal *state_seal_new(const unsigned char key[STATE_SEAL_KEY_BYTES]);

/* A seal with a random key that is kept nowhere (dry runs write nothing to seal). */
struct state_seal *state_seal_new_ephemeral(void);

/*
 * Reads the key from Secret ns/name, or, when the Secret holds none (no or
 * an empty data.key) and fill is true, makes a random one and stores it
 * there by an update guarded by the resourceVersion read (a race with
 * another replica ends with both using the stored one). Never creates the
 * Secret: a missing one is an error whose message says how to make it.
 * Refuses a Secret whose key is not STATE_SEAL_KEY_BYTES bytes. -1 with
 * err->code 404 when there is no key (no Secret, or an empty one and fill
 * false). *out is new on success.
 */
int state_seal_load(struct kube_client *c, const char *ns, const char *name, bool fill, struct state_seal **out,
		    struct kube_error *err) __attribute__((warn_unused_result));

/*
 * A short fingerprint of the key (hex into out), for logs: replicas that
 * print the same one seal with the same key. It reveals nothing of the key.
 */
#define STATE_SEAL_KEY_ID_LEN 16
void state_seal_key_id(const struct state_seal *s, char out[STATE_SEAL_KEY_ID_LEN + 1]);

void state_seal_free(struct state_seal *s);

/* The seal of text, kept as annotation key on object ns/name: hex into out. */
void state_seal_sign(const struct state_seal *s, const char *ns, const char *name, const char *key, const char *text,
		     char out[STATE_SEAL_HEX_LEN + 1]);

/* True when seal (may be NULL) is the seal of text as annotation key on ns/name. */
bool state_seal_verify(const struct state_seal *s, const char *ns, const char *name, const char *key,
		       const char *text, const char *seal);

/*
 * True when annotation key of annotations (borrowed; may be NULL) is absent
 * or carries a valid seal for ns/name in annotation <key>-seal.
 */
bool state_seal_annotation_ok(const struct state_seal *s, const json_t *annotations, const char *ns,
			      const char *name, const char *key);

/*
 * Adds, to the annotations object ann (borrowed), the seal of ann[key] for
 * ns/name, or a null seal when ann[key] is null or absent (removing a merge
 * patch's stale seal).
 */
void state_seal_annotate(const struct state_seal *s, json_t *ann, const char *ns, const char *name, const char *key);

/*
 * obj (borrowed) as a planner may read it: a new reference to obj itself
 * when its annotation key is absent or sealed for it; else a copy without
 * that annotation, as if the state were lost, and *dropped is set. For the
 * state a planner can rebuild from the cluster (scale-down, StatefulCluster).
 */
json_t *state_seal_drop_unsealed(const struct state_seal *s, json_t *obj, const char *key, bool *dropped);

#endif
