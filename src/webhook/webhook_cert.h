/*
 * The admission webhook's certificates, made without cert-manager.
 *
 * The operator keeps a private CA (ECDSA P-256, self-signed) and a serving
 * certificate signed by it in one Secret of type kubernetes.io/tls; the
 * CA's certificate goes into the webhook configuration's caBundle. Every
 * replica reads the same Secret, so all of them serve the same chain.
 *
 * This module is the pure part: it makes certificates, says what a stored
 * bundle needs (nothing, a new serving certificate, or a new CA), converts
 * to and from the Secret's data, and builds the caBundle that keeps an old
 * CA trusted through a rotation. No I/O; the time is always a parameter
 * (now_s, seconds since the epoch), so tests drive it through years.
 *
 * Error messages and reasons never carry key material.
 * Thread-safe: no shared state (OpenSSL 3 is thread-safe); every function
 * leaves the calling thread's OpenSSL error queue empty.
 */
#ifndef SOP_WEBHOOK_WEBHOOK_CERT_H
#define SOP_WEBHOOK_WEBHOOK_CERT_H

#include <jansson.h>

/* The Secret's data keys (values are base64 of PEM text). */
#define CERT_SECRET_CERT "tls.crt"
#define CERT_SECRET_KEY "tls.key"
#define CERT_SECRET_CA_CERT "ca.crt"
#define CERT_SECRET_CA_KEY "ca.key"

#define CERT_CA_DAYS_DEFAULT 3650
#define CERT_SERVING_DAYS_DEFAULT 365
/* A certificate this close to its notAfter is replaced. */
#define CERT_CA_RENEW_BEFORE_S (365LL * 86400)
#define CERT_SERVING_RENEW_BEFORE_S (30LL * 86400)
/* notBefore is this far before the making time, for replicas whose clocks lag. */
#define CERT_BACKDATE_S 3600

/* PEM texts; each NULL when absent. Owned by the bundle. */
struct cert_bundle {
	char *ca_cert_pem;
	char *ca_key_pem;
	char *cert_pem; /* the serving certificate (tls.crt) */
	char *key_pem;  /* its key (tls.key) */
};

#define CERT_BUNDLE_INIT {NULL, NULL, NULL, NULL}

/* Frees the contents (key texts wiped first) and leaves every field NULL. */
void cert_bundle_release(struct cert_bundle *b);

/*
 * Makes a new CA into b: a P-256 key, a self-signed certificate with
 * subject CN=cn, basicConstraints CA:TRUE (critical), keyUsage
 * keyCertSign|cRLSign, a random 128-bit serial, valid from now_s -
 * CERT_BACKDATE_S to now_s + days (days <= 0: CERT_CA_DAYS_DEFAULT).
 * Replaces b's CA and frees its serving certificate and key, which the
 * new CA did not sign: keep the old ca_cert_pem first if it must stay in
 * the caBundle. Refuses days that CERT_CA_RENEW_BEFORE_S would renew at
 * once. On failure b is unchanged and *err (may be NULL) is a new message.
 */
int cert_bundle_make_ca(struct cert_bundle *b, const char *cn, int days, long long now_s, char **err)
	__attribute__((warn_unused_result));

/*
 * Makes a new serving certificate and key into b, signed by b's CA: a
 * P-256 key, subjectAltName with each of names (NULL-terminated, at least
 * one): an IP address when the name parses as IPv4 or IPv6, else a DNS
 * name (letters, digits, '-' and '.', no wildcards); CN = the first name
 * (left out, and the SAN made critical, when longer than a CN may be);
 * extendedKeyUsage serverAuth, keyUsage digitalSignature, SHA-256, valid
 * from now_s - CERT_BACKDATE_S to now_s + days (days <= 0:
 * CERT_SERVING_DAYS_DEFAULT), never past the CA's own notAfter. Refuses a
 * missing or unreadable CA, a bad name, and days that
 * CERT_SERVING_RENEW_BEFORE_S would renew at once. On failure b is
 * unchanged and *err (may be NULL) is a new message.
 */
int cert_bundle_make_serving(struct cert_bundle *b, const char *const *names, int days, long long now_s,
			     char **err) __attribute__((warn_unused_result));

enum cert_action {
	CERT_OK,            /* serve as stored */
	CERT_RENEW_SERVING, /* make a new serving certificate with the stored CA */
	CERT_NEW_CA,        /* make a new CA, then a new serving certificate */
};

/*
 * What b needs at now_s to serve names (as for cert_bundle_make_serving;
 * NULL: any names).
 * CERT_NEW_CA: the CA is missing, unreadable, not a CA, does not match its
 * key, or expires within CERT_CA_RENEW_BEFORE_S. Else CERT_RENEW_SERVING:
 * the serving certificate or key is missing or unreadable, they do not
 * match, it expires within CERT_SERVING_RENEW_BEFORE_S, it does not verify
 * against the CA at now_s as a TLS server certificate, or it does not
 * cover one of names. notBefore is not checked (it is backdated; two
 * replicas with skewed clocks must not take turns renewing). *why (why
 * may be NULL) is a new one-line reason for the log, NULL for CERT_OK.
 */
enum cert_action cert_bundle_check(const struct cert_bundle *b, const char *const *names, long long now_s,
				   char **why);

/*
 * Whether a serving pair given from outside (cert_pem: the chain, leaf
 * first; key_pem: its key) can serve the API server at now_s: 0, with
 * *not_after_s (may be NULL) the leaf's notAfter; else -1 with *why (why
 * may be NULL) a new one-line reason that says what to fix. Refuses no
 * certificate or no key (an encrypted key is refused, never prompted
 * for), a key that does not match, a leaf that expired, one not for TLS
 * servers (keyUsage or extendedKeyUsage), and one whose subjectAltName
 * covers none of names (NULL-terminated, as for cert_bundle_make_serving;
 * wildcards match; NULL: any). notBefore is not checked (a replica whose
 * clock lags must not refuse a certificate just issued).
 */
int cert_pair_check(const char *cert_pem, const char *key_pem, const char *const *names, long long now_s,
		    long long *not_after_s, char **why) __attribute__((warn_unused_result));

/* s (seconds since the epoch) as "2027-11-25T04:00:00Z" into out. */
void cert_format_time(long long s, char out[32]);

/* The notAfter of the first certificate in pem, in seconds since the epoch; -1 when unreadable. */
long long cert_not_after_s(const char *pem);

/*
 * The Secret's data object for b: a new reference, with the base64 of each
 * PEM b holds under CERT_SECRET_* (absent fields left out).
 */
json_t *cert_bundle_secret_data(const struct cert_bundle *b);

/*
 * Reads a Secret (borrowed) into b (released first): each data key that
 * is absent, null or empty, or a Secret without data, leaves its field
 * NULL (cert_bundle_check then says what to make). Refuses,
 * with a new *err naming the key, a data value that is not a string, not
 * padded standard base64, or does not decode to text; on failure b is
 * left empty.
 */
int cert_bundle_from_secret(const json_t *secret, struct cert_bundle *b, char **err)
	__attribute__((warn_unused_result));

/*
 * The caBundle to publish (a new string): new_ca_pem's certificate first,
 * then each certificate of old_ca_pem (may be NULL; may hold several, e.g.
 * the caBundle now published) that is not new_ca_pem's and has not expired
 * at now_s, so that replicas still serving a chain of the old CA stay
 * trusted while they move to the new one. NULL when new_ca_pem holds no
 * certificate; unreadable old text is dropped.
 */
char *cert_ca_bundle(const char *new_ca_pem, const char *old_ca_pem, long long now_s);

#endif
