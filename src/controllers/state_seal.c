#include "controllers/state_seal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "client/kube_object.h"
#include "runtime/own_secret.h"

/* base64 of STATE_SEAL_KEY_BYTES bytes: 44 characters, the last one '='. */
#define KEY_B64_LEN (4 * ((STATE_SEAL_KEY_BYTES + 2) / 3))

struct state_seal {
	unsigned char key[STATE_SEAL_KEY_BYTES];
};

struct state_seal *state_seal_new(const unsigned char key[STATE_SEAL_KEY_BYTES])
{
	struct state_seal *s = xcalloc(1, sizeof(*s));
	memcpy(s->key, key, sizeof(s->key));
	return s;
}

static int random_key(unsigned char key[STATE_SEAL_KEY_BYTES])
{
	return RAND_bytes(key, STATE_SEAL_KEY_BYTES) == 1 ? 0 : -1;
}

struct state_seal *state_seal_new_ephemeral(void)
{
	unsigned char key[STATE_SEAL_KEY_BYTES];
	if (random_key(key) < 0)
		abort(); /* no randomness at all: nothing safe to do */
	struct state_seal *s = state_seal_new(key);
	OPENSSL_cleanse(key, sizeof(key));
	return s;
}

void state_seal_free(struct state_seal *s)
{
	if (!s)
		return;
	OPENSSL_cleanse(s->key, sizeof(s->key));
	free(s);
}

/* The key in a Secret's data, decoded into key; -1 when absent or not exactly the key's size. */
static int key_from_secret(const json_t *secret, unsigned char key[STATE_SEAL_KEY_BYTES])
{
	const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), STATE_SEAL_SECRET_KEY));
	if (!b64 || strlen(b64) != KEY_B64_LEN || b64[KEY_B64_LEN - 1] != '=' || b64[KEY_B64_LEN - 2] == '=')
		return -1;
	unsigned char buf[KEY_B64_LEN];
	if (EVP_DecodeBlock(buf, (const unsigned char *)b64, KEY_B64_LEN) != STATE_SEAL_KEY_BYTES + 1)
		return -1;
	memcpy(key, buf, STATE_SEAL_KEY_BYTES);
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

/* No key yet: no data.key, or an empty one (how deploy/ and the chart install it). */
static bool secret_empty(const json_t *secret)
{
	const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), STATE_SEAL_SECRET_KEY));
	return !b64 || !*b64;
}

/*
 * Fills the empty secret (borrowed, as read) with a new random key, by an
 * update guarded by the resourceVersion read. 0 with the key in key; -1
 * with *err (409: another replica filled it first).
 */
static int fill_secret(struct kube_client *c, const char *ns, const char *name, const json_t *secret,
		       unsigned char key[STATE_SEAL_KEY_BYTES], struct kube_error *err)
{
	char b64[KEY_B64_LEN + 1];
	if (random_key(key) < 0) {
		snprintf(err->message, sizeof(err->message), "no random bytes for a new state key");
		err->code = 0;
		return -1;
	}
	EVP_EncodeBlock((unsigned char *)b64, key, STATE_SEAL_KEY_BYTES);
	json_t *data = json_object_get(secret, "data");
	data = json_is_object(data) ? json_deep_copy(data) : json_object();
	json_object_set_new(data, STATE_SEAL_SECRET_KEY, json_string(b64));
	json_t *put = own_secret_filled(secret, data);
	/* A new key has sealed nothing of the earlier form: nothing to upgrade. */
	json_t *meta = json_object_get(put, "metadata");
	if (!json_is_object(json_object_get(meta, "annotations")))
		json_object_set_new(meta, "annotations", json_object());
	json_object_set_new(json_object_get(meta, "annotations"), STATE_SEAL_FORMAT_ANNOTATION,
			    json_string(STATE_SEAL_FORMAT));
	int r = kube_replace(c, &KUBE_SECRETS, ns, name, NULL, put, NULL, err);
	OPENSSL_cleanse(b64, sizeof(b64));
	json_decref(put);
	if (r < 0)
		OPENSSL_cleanse(key, STATE_SEAL_KEY_BYTES);
	return r;
}

int state_seal_load(struct kube_client *c, const char *ns, const char *name, bool fill, struct state_seal **out,
		    struct kube_error *err)
{
	*out = NULL;
	/* Two fills at once: the loser's update gets 409 and it reads the winner's key. */
	for (int attempt = 0; attempt < 3; attempt++) {
		json_t *secret = NULL;
		if (kube_get(c, &KUBE_SECRETS, ns, name, &secret, err) < 0) {
			if (err->code == 404) {
				char *why = own_secret_missing(ns, name);
				snprintf(err->message, sizeof(err->message), "%s", why);
				free(why);
			}
			return -1;
		}
		unsigned char key[STATE_SEAL_KEY_BYTES];
		int r = 0;
		if (!secret_empty(secret)) {
			r = key_from_secret(secret, key);
			if (r < 0)
				snprintf(err->message, sizeof(err->message),
					 "Secret %s/%s: data.%s is not the base64 of a %d-byte key; fix it, or empty "
					 "it for a new key (kubectl patch secret %s -n %s --type=json "
					 "-p '[{\"op\":\"remove\",\"path\":\"/data/%s\"}]')",
					 ns, name, STATE_SEAL_SECRET_KEY, STATE_SEAL_KEY_BYTES, name, ns,
					 STATE_SEAL_SECRET_KEY);
		} else if (!fill) {
			snprintf(err->message, sizeof(err->message), "Secret %s/%s holds no key yet", ns, name);
			err->code = 404;
			r = -1;
		} else {
			r = fill_secret(c, ns, name, secret, key, err);
			if (r == 0)
				log_info("state", "made a new state key in Secret %s/%s", ns, name);
		}
		json_decref(secret);
		if (r == 0) {
			*out = state_seal_new(key);
			OPENSSL_cleanse(key, sizeof(key));
			return 0;
		}
		if (!fill || err->code != 409)
			return -1;
	}
	snprintf(err->message, sizeof(err->message), "Secret %s/%s changed under every update; try again", ns, name);
	return -1;
}

void state_seal_key_id(const struct state_seal *s, char out[STATE_SEAL_KEY_ID_LEN + 1])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	static const char what[] = "stateful-operator.io/key-id";
	if (!HMAC(EVP_sha256(), s->key, sizeof(s->key), (const unsigned char *)what, sizeof(what) - 1, mac, &mac_len))
		abort(); /* SHA-256 is always there */
	for (unsigned i = 0; i < STATE_SEAL_KEY_ID_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

/* The HMAC of parts (n of them), each length-prefixed so that no two different lists read the same: hex into out. */
static void mac_of(const struct state_seal *s, const char *const *parts, size_t n, char out[STATE_SEAL_HEX_LEN + 1])
{
	struct strbuf msg = STRBUF_INIT;
	for (size_t i = 0; i < n; i++) {
		const char *p = parts[i] ? parts[i] : "";
		strbuf_appendf(&msg, "%zu:", strlen(p));
		strbuf_appendf(&msg, "%s", p);
	}
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	if (!HMAC(EVP_sha256(), s->key, sizeof(s->key), (const unsigned char *)strbuf_str(&msg), msg.len, mac,
		  &mac_len) ||
	    mac_len * 2 != STATE_SEAL_HEX_LEN)
		abort(); /* SHA-256 is always there */
	for (unsigned i = 0; i < mac_len; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	strbuf_release(&msg);
}

static bool same_mac(const char *want, const char *seal)
{
	return seal && strlen(seal) == STATE_SEAL_HEX_LEN && CRYPTO_memcmp(want, seal, STATE_SEAL_HEX_LEN) == 0;
}

/* The bond's name in the MAC: a seal made for one kind of bond never reads as another's. */
static const char *bond_name(enum state_seal_bond bond)
{
	switch (bond) {
	case STATE_SEAL_OBJECT:
		return "object";
	case STATE_SEAL_SAVED_FROM:
		return "saved-from";
	case STATE_SEAL_RECREATED_FROM:
		return "recreated-from";
	}
	abort();
}

struct state_seal_scope state_seal_scope_of(const json_t *obj)
{
	struct state_seal_scope scope = {kube_obj_str(obj, "metadata.namespace"), kube_obj_str(obj, "metadata.name"),
					 STATE_SEAL_OBJECT, kube_obj_str(obj, "metadata.uid")};
	return scope;
}

void state_seal_sign(const struct state_seal *s, const struct state_seal_scope *scope, const char *key,
		     const char *text, char out[STATE_SEAL_HEX_LEN + 1])
{
	const char *parts[] = {"stateful-operator.io/seal/v2", scope->ns, scope->name, key, text,
			       bond_name(scope->bond), scope->uid};
	mac_of(s, parts, sizeof(parts) / sizeof(parts[0]), out);
}

bool state_seal_verify(const struct state_seal *s, const struct state_seal_scope *scope, const char *key,
		       const char *text, const char *seal)
{
	if (!text || !scope->uid || !*scope->uid)
		return false;
	char want[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign(s, scope, key, text, want);
	return same_mac(want, seal);
}

void state_seal_sign_v1(const struct state_seal *s, const char *ns, const char *name, const char *key,
			const char *text, char out[STATE_SEAL_HEX_LEN + 1])
{
	const char *parts[] = {"stateful-operator.io/seal/v1", ns, name, key, text};
	mac_of(s, parts, sizeof(parts) / sizeof(parts[0]), out);
}

bool state_seal_verify_v1(const struct state_seal *s, const char *ns, const char *name, const char *key,
			  const char *text, const char *seal)
{
	if (!text)
		return false;
	char want[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign_v1(s, ns, name, key, text, want);
	return same_mac(want, seal);
}

bool state_seal_annotation_ok(const struct state_seal *s, const json_t *annotations,
			      const struct state_seal_scope *scope, const char *key)
{
	const json_t *text = json_object_get(annotations, key);
	if (!text)
		return true;
	char *seal_key = xasprintf("%s" STATE_SEAL_SUFFIX, key);
	bool ok = state_seal_verify(s, scope, key, json_string_value(text),
				    json_string_value(json_object_get(annotations, seal_key)));
	free(seal_key);
	return ok;
}

void state_seal_annotate(const struct state_seal *s, json_t *ann, const struct state_seal_scope *scope,
			 const char *key)
{
	const char *text = json_string_value(json_object_get(ann, key));
	char *seal_key = xasprintf("%s" STATE_SEAL_SUFFIX, key);
	if (text) {
		char seal[STATE_SEAL_HEX_LEN + 1];
		state_seal_sign(s, scope, key, text, seal);
		json_object_set_new(ann, seal_key, json_string(seal));
	} else {
		json_object_set_new(ann, seal_key, json_null());
	}
	free(seal_key);
}

json_t *state_seal_drop_unsealed(const struct state_seal *s, json_t *obj, const char *key, bool *dropped)
{
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	struct state_seal_scope scope = state_seal_scope_of(obj);
	*dropped = !state_seal_annotation_ok(s, ann, &scope, key);
	if (!*dropped)
		return json_incref(obj);
	json_t *copy = json_deep_copy(obj);
	json_object_del(json_object_get(json_object_get(copy, "metadata"), "annotations"), key);
	return copy;
}
