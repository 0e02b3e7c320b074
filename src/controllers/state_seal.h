/*
 * Seals on the state the controllers keep in annotations.
 *
 * The controllers keep their progress on the objects they serve (the
 * resize-state, scaledown-state and cluster-state annotations, the saved
 * StatefulSet), where anyone who may edit the object may write too. What
 * the operator reads back is therefore untrusted unless it carries a seal:
 * an HMAC-SHA256, under a key only the operator can read, of the object's
 * namespace and name, what the text is (its annotation key), the text, and
 * the UID the seal is bound to (struct state_seal_scope). A seal cannot be
 * forged without the key, nor moved to another annotation, namespace or
 * name, nor to another object of the same name: a new object has a new UID.
 *
 * A seal is bound to the UID of the object that carries it, except for
 * the moment between the create of an object and its first re-seal, when
 * its UID is not known yet: a backup ConfigMap just saved is bound to the
 * StatefulSet it saved, a StatefulSet just re-created to the ConfigMap it
 * was re-created from (resize_trust.h says when those hold).
 *
 * Seals of the earlier form (no UID: "v1") are never accepted as such; the
 * leader re-seals the ones it finds once, when it first starts with this
 * form (state_seal_upgrade.h).
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
/*
 * On the key's Secret: the form of the seals in the cluster. "2" (UIDs
 * bound) once every earlier seal was re-sealed, or the Secret was made by a
 * version that seals so; "upgrading" while the leader re-seals them.
 */
#define STATE_SEAL_FORMAT_ANNOTATION "stateful-operator.io/seal-format"
#define STATE_SEAL_FORMAT "2"
#define STATE_SEAL_FORMAT_UPGRADING "upgrading"
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

/* What a seal is bound to, besides namespace, name, annotation key and text. */
enum state_seal_bond {
	STATE_SEAL_OBJECT,         /* uid: the object that carries it */
	STATE_SEAL_SAVED_FROM,     /* on a backup ConfigMap just made: uid of the StatefulSet saved in it */
	STATE_SEAL_RECREATED_FROM, /* on a StatefulSet just re-created: uid of the backup ConfigMap it came from */
};

/* Where a sealed text lives and what it is bound to; strings borrowed. */
struct state_seal_scope {
	const char *ns;
	const char *name;
	enum state_seal_bond bond;
	const char *uid; /* NULL or empty: nothing to bind to, so nothing verifies */
};

/* The scope of obj (borrowed, as are the strings): its namespace, name and own UID. */
struct state_seal_scope state_seal_scope_of(const json_t *obj);

/* The seal of text, kept as annotation key in scope: hex into out. */
void state_seal_sign(const struct state_seal *s, const struct state_seal_scope *scope, const char *key,
		     const char *text, char out[STATE_SEAL_HEX_LEN + 1]);

/* True when seal (may be NULL) is the seal of text as annotation key in scope. */
bool state_seal_verify(const struct state_seal *s, const struct state_seal_scope *scope, const char *key,
		       const char *text, const char *seal);

/*
 * True when annotation key of annotations (borrowed; may be NULL) is absent
 * or carries a valid seal for scope in annotation <key>-seal.
 */
bool state_seal_annotation_ok(const struct state_seal *s, const json_t *annotations,
			      const struct state_seal_scope *scope, const char *key);

/*
 * Adds, to the annotations object ann (borrowed), the seal of ann[key] for
 * scope, or a null seal when ann[key] is null or absent (removing a merge
 * patch's stale seal).
 */
void state_seal_annotate(const struct state_seal *s, json_t *ann, const struct state_seal_scope *scope,
			 const char *key);

/*
 * obj (borrowed) as a planner may read it: a new reference to obj itself
 * when its annotation key is absent or sealed for it (its own UID); else a
 * copy without that annotation, as if the state were lost, and *dropped is
 * set. For the state a planner can rebuild from the cluster (scale-down,
 * StatefulCluster).
 */
json_t *state_seal_drop_unsealed(const struct state_seal *s, json_t *obj, const char *key, bool *dropped);

/*
 * The seal of the earlier form (no UID), for state_seal_upgrade only:
 * true when seal is the v1 seal of text as annotation key of ns/name.
 */
bool state_seal_verify_v1(const struct state_seal *s, const char *ns, const char *name, const char *key,
			  const char *text, const char *seal);
/* The v1 seal itself (tests make states as an earlier version left them). */
void state_seal_sign_v1(const struct state_seal *s, const char *ns, const char *name, const char *key,
			const char *text, char out[STATE_SEAL_HEX_LEN + 1]);

#endif
