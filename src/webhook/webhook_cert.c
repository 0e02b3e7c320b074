#include "webhook/webhook_cert.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/strbuf.h"
#include "util/base64.h"
#include "util/xalloc.h"

#define SECONDS_PER_DAY 86400LL
/* X.509's upper bound on a CommonName (ub-common-name). */
#define CN_MAX 64
#define DNS_NAME_MAX 253

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/*
 * *err (err may be NULL) = the message, plus OpenSSL's reason when it left
 * one; the queue is emptied either way. OpenSSL's reasons name what failed,
 * never the bytes of a key.
 */
static void fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(char **err, const char *fmt, ...)
{
	unsigned long e = ERR_peek_last_error();
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		char *msg = xvasprintf(fmt, ap);
		va_end(ap);
		const char *reason = e ? ERR_reason_error_string(e) : NULL;
		if (reason) {
			*err = xasprintf("%s: %s", msg, reason);
			free(msg);
		} else {
			*err = msg;
		}
	}
	ERR_clear_error();
}

/* ------------------------------------------------------------------ */
/* PEM in and out                                                      */
/* ------------------------------------------------------------------ */

/* The first certificate in pem (may be NULL); NULL when there is none. */
static X509 *cert_read(const char *pem)
{
	if (!pem)
		return NULL;
	BIO *in = BIO_new_mem_buf(pem, -1);
	X509 *x = in ? PEM_read_bio_X509(in, NULL, NULL, NULL) : NULL;
	BIO_free(in);
	return x;
}

/* A passphrase callback that has none: an encrypted key is refused, never prompted for on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

static EVP_PKEY *key_read(const char *pem)
{
	if (!pem)
		return NULL;
	BIO *in = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = in ? PEM_read_bio_PrivateKey(in, NULL, no_passphrase, NULL) : NULL;
	BIO_free(in);
	return k;
}

/* The text written to bio, as a new string; NULL on failure. */
static char *bio_text(BIO *bio)
{
	char *data = NULL;
	long len = BIO_get_mem_data(bio, &data);
	if (len <= 0 || !data)
		return NULL;
	return xstrndup(data, (size_t)len);
}

static char *cert_pem(X509 *x)
{
	BIO *out = BIO_new(BIO_s_mem());
	char *pem = out && PEM_write_bio_X509(out, x) == 1 ? bio_text(out) : NULL;
	BIO_free(out);
	return pem;
}

/* PKCS#8 PEM, unencrypted (the Secret is the protection); the BIO wipes its buffer when freed. */
static char *key_pem(EVP_PKEY *k)
{
	BIO *out = BIO_new(BIO_s_secmem());
	char *pem = out && PEM_write_bio_PrivateKey(out, k, NULL, NULL, 0, NULL, NULL) == 1 ? bio_text(out) : NULL;
	BIO_free(out);
	return pem;
}

static void free_key_text(char *pem)
{
	if (pem)
		OPENSSL_cleanse(pem, strlen(pem));
	free(pem);
}

void cert_bundle_release(struct cert_bundle *b)
{
	FREE_AND_NULL(b->ca_cert_pem);
	free_key_text(b->ca_key_pem);
	b->ca_key_pem = NULL;
	FREE_AND_NULL(b->cert_pem);
	free_key_text(b->key_pem);
	b->key_pem = NULL;
}

/* ------------------------------------------------------------------ */
/* Times                                                               */
/* ------------------------------------------------------------------ */

static long long asn1_time_s(const ASN1_TIME *t)
{
	struct tm tm;
	if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	return (long long)timegm(&tm);
}

long long cert_not_after_s(const char *pem)
{
	X509 *x = cert_read(pem);
	long long s = x ? asn1_time_s(X509_get0_notAfter(x)) : -1;
	X509_free(x);
	ERR_clear_error();
	return s;
}

void cert_format_time(long long s, char out[32])
{
	time_t t = (time_t)s;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "%lld", s);
}

/* ------------------------------------------------------------------ */
/* Making certificates                                                 */
/* ------------------------------------------------------------------ */

/* A random positive 128-bit serial (RFC 5280: unique per CA, at most 20 octets). */
static int set_random_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	int ok = 0;
	if (!bn)
		return -1;
	do {
		if (BN_rand(bn, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1)
			goto out;
	} while (BN_is_zero(bn));
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
out:
	BN_free(bn);
	return ok ? 0 : -1;
}

static int set_validity(X509 *x, long long not_before_s, long long not_after_s)
{
	if (!ASN1_TIME_set(X509_getm_notBefore(x), (time_t)not_before_s) ||
	    !ASN1_TIME_set(X509_getm_notAfter(x), (time_t)not_after_s))
		return -1;
	return 0;
}

/* An extension written the way openssl.cnf writes it; issuer is x itself when self-signed. */
static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	int ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A new X.509v3 certificate for key with a random serial; subject CN=cn unless cn is NULL. */
static X509 *cert_start(EVP_PKEY *key, const char *cn, long long not_before_s, long long not_after_s)
{
	X509 *x = X509_new();
	if (!x || X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0 ||
	    set_validity(x, not_before_s, not_after_s) < 0 || X509_set_pubkey(x, key) != 1)
		goto bad;
	if (cn && X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
					     (const unsigned char *)cn, -1, -1, 0) != 1)
		goto bad;
	return x;
bad:
	X509_free(x);
	return NULL;
}

int cert_bundle_make_ca(struct cert_bundle *b, const char *cn, int days, long long now_s, char **err)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	char *cpem = NULL, *kpem = NULL;
	int rc = -1;

	if (days <= 0)
		days = CERT_CA_DAYS_DEFAULT;
	if (!cn || !*cn || strlen(cn) > CN_MAX) {
		fail(err, "the CA's common name must be 1 to %d characters", CN_MAX);
		goto out;
	}
	if (days * SECONDS_PER_DAY <= CERT_CA_RENEW_BEFORE_S) {
		fail(err, "a CA valid for %d days would be renewed at once (it is renewed %lld days before it expires)",
		     days, CERT_CA_RENEW_BEFORE_S / SECONDS_PER_DAY);
		goto out;
	}
	key = EVP_EC_gen("P-256");
	if (!key) {
		fail(err, "cannot make the CA's key");
		goto out;
	}
	x = cert_start(key, cn, now_s - CERT_BACKDATE_S, now_s + days * SECONDS_PER_DAY);
	/* Self-signed: the issuer is the subject, and the key identifiers are the CA's own. */
	if (!x || X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, x, NID_authority_key_identifier, "keyid:always") < 0 || X509_sign(x, key, EVP_sha256()) <= 0) {
		fail(err, "cannot make the CA's certificate");
		goto out;
	}
	cpem = cert_pem(x);
	kpem = key_pem(key);
	if (!cpem || !kpem) {
		fail(err, "cannot write the CA as PEM");
		goto out;
	}
	cert_bundle_release(b);
	b->ca_cert_pem = cpem;
	b->ca_key_pem = kpem;
	cpem = kpem = NULL;
	rc = 0;
out:
	free(cpem);
	free_key_text(kpem);
	X509_free(x);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return rc;
}

/* An IP address in binary (new) when name is an IPv4 or IPv6 literal, else NULL. */
static ASN1_OCTET_STRING *ip_of(const char *name)
{
	ASN1_OCTET_STRING *ip = a2i_IPADDRESS(name);
	ERR_clear_error(); /* "not an address" is an answer here, not an error */
	return ip;
}

/* Letters, digits, '-' and '.', no empty label: what a TLS client matches a DNS SAN against. */
static bool dns_name_ok(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len > DNS_NAME_MAX || name[0] == '.' || name[len - 1] == '.' || strstr(name, ".."))
		return false;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static bool name_ok(const char *name)
{
	ASN1_OCTET_STRING *ip = ip_of(name);
	ASN1_OCTET_STRING_free(ip);
	return ip || dns_name_ok(name);
}

/* subjectAltName: an IP entry for each address literal, a DNS entry for each other name. */
static int add_san(X509 *x, const char *const *names, bool critical)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	int rc = -1;
	if (!gens)
		return -1;
	for (size_t i = 0; names[i]; i++) {
		GENERAL_NAME *gn = GENERAL_NAME_new();
		if (!gn)
			goto out;
		ASN1_OCTET_STRING *ip = ip_of(names[i]);
		if (ip) {
			GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);
		} else {
			ASN1_IA5STRING *dns = ASN1_IA5STRING_new();
			if (!dns || ASN1_STRING_set(dns, names[i], -1) != 1) {
				ASN1_IA5STRING_free(dns);
				GENERAL_NAME_free(gn);
				goto out;
			}
			GENERAL_NAME_set0_value(gn, GEN_DNS, dns);
		}
		if (!sk_GENERAL_NAME_push(gens, gn)) {
			GENERAL_NAME_free(gn);
			goto out;
		}
	}
	rc = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, critical ? 1 : 0, X509V3_ADD_DEFAULT) == 1 ? 0 : -1;
out:
	GENERAL_NAMES_free(gens);
	return rc;
}

int cert_bundle_make_serving(struct cert_bundle *b, const char *const *names, int days, long long now_s,
			     char **err)
{
	X509 *ca = NULL, *x = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	char *cpem = NULL, *kpem = NULL;
	int rc = -1;

	if (days <= 0)
		days = CERT_SERVING_DAYS_DEFAULT;
	if (days * SECONDS_PER_DAY <= CERT_SERVING_RENEW_BEFORE_S) {
		fail(err, "a serving certificate valid for %d days would be renewed at once (it is renewed %lld days "
		     "before it expires)", days, CERT_SERVING_RENEW_BEFORE_S / SECONDS_PER_DAY);
		goto out;
	}
	if (!names || !names[0]) {
		fail(err, "a serving certificate needs at least one name");
		goto out;
	}
	for (size_t i = 0; names[i]; i++) {
		if (!name_ok(names[i])) {
			fail(err, "\"%s\" is neither an IP address nor a DNS name (letters, digits, '-', '.')", names[i]);
			goto out;
		}
	}
	ca = cert_read(b->ca_cert_pem);
	ca_key = key_read(b->ca_key_pem);
	if (!ca || !ca_key) {
		fail(err, "no readable CA certificate and key to sign with");
		goto out;
	}
	if (X509_check_private_key(ca, ca_key) != 1) {
		fail(err, "the CA's key does not match its certificate");
		goto out;
	}
	key = EVP_EC_gen("P-256");
	if (!key) {
		fail(err, "cannot make the serving key");
		goto out;
	}
	/* A certificate cannot be trusted past its CA: end with it when it ends first. */
	long long not_after = now_s + days * SECONDS_PER_DAY;
	long long ca_not_after = asn1_time_s(X509_get0_notAfter(ca));
	if (ca_not_after >= 0 && ca_not_after < not_after)
		not_after = ca_not_after;
	/* RFC 5280 4.2.1.6: with no subject, the SAN is the identity and must be critical. */
	bool with_cn = strlen(names[0]) <= CN_MAX;
	x = cert_start(key, with_cn ? names[0] : NULL, now_s - CERT_BACKDATE_S, not_after);
	if (!x || X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
	    add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, ca, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, ca, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, ca, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, ca, NID_authority_key_identifier, "keyid:always") < 0 || add_san(x, names, !with_cn) < 0 ||
	    X509_sign(x, ca_key, EVP_sha256()) <= 0) {
		fail(err, "cannot make the serving certificate");
		goto out;
	}
	cpem = cert_pem(x);
	kpem = key_pem(key);
	if (!cpem || !kpem) {
		fail(err, "cannot write the serving certificate as PEM");
		goto out;
	}
	free(b->cert_pem);
	free_key_text(b->key_pem);
	b->cert_pem = cpem;
	b->key_pem = kpem;
	cpem = kpem = NULL;
	rc = 0;
out:
	free(cpem);
	free_key_text(kpem);
	X509_free(ca);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return rc;
}

/* ------------------------------------------------------------------ */
/* What a stored bundle needs                                          */
/* ------------------------------------------------------------------ */

/* Returns a, with *why (why may be NULL) the formatted reason. */
static enum cert_action decide(char **why, enum cert_action a, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static enum cert_action decide(char **why, enum cert_action a, const char *fmt, ...)
{
	if (why) {
		va_list ap;
		va_start(ap, fmt);
		*why = xvasprintf(fmt, ap);
		va_end(ap);
	}
	return a;
}

/* NULL when x chains to ca for a TLS server, else the verifier's reason. Times are the caller's to check. */
static const char *chain_problem(X509 *ca, X509 *x)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	const char *problem = "cannot set up the verifier";
	if (!store || !ctx || X509_STORE_add_cert(store, ca) != 1 || X509_STORE_CTX_init(ctx, store, x, NULL) != 1)
		goto out;
	X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_NO_CHECK_TIME);
	X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
	if (X509_verify_cert(ctx) == 1)
		problem = NULL;
	else
		problem = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return problem;
}

/* The first of names that x does not carry as a SAN (the CN does not count); NULL when it carries all. */
static const char *uncovered_name(X509 *x, const char *const *names)
{
	for (size_t i = 0; names && names[i]; i++) {
		ASN1_OCTET_STRING *ip = ip_of(names[i]);
		int covered;
		if (ip)
			covered = X509_check_ip_asc(x, names[i], 0);
		else
			covered = X509_check_host(x, names[i], 0,
						  X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_WILDCARDS, NULL);
		ASN1_OCTET_STRING_free(ip);
		if (covered != 1)
			return names[i];
	}
	return NULL;
}

/*
 * What a certificate and its key need, named what ("CA", "serving"), to
 * last renew_before_s more from now_s: a, when either is unreadable, they
 * do not match, or the certificate ends sooner; else CERT_OK.
 */
static enum cert_action check_pair(X509 *x, EVP_PKEY *key, const char *what, long long renew_before_s,
				   long long now_s, enum cert_action a, char **why)
{
	if (!x)
		return decide(why, a, "no readable %s certificate", what);
	if (!key)
		return decide(why, a, "no readable %s key", what);
	if (X509_check_private_key(x, key) != 1)
		return decide(why, a, "the %s key does not match the %s certificate", what, what);
	long long end = asn1_time_s(X509_get0_notAfter(x));
	if (end < 0)
		return decide(why, a, "the %s certificate's expiry is unreadable", what);
	if (end - now_s < renew_before_s) {
		char when[32];
		cert_format_time(end, when);
		return decide(why, a, "the %s certificate expires at %s, within %lld days", what, when,
			      renew_before_s / SECONDS_PER_DAY);
	}
	return CERT_OK;
}

static enum cert_action check_ca(X509 *ca, EVP_PKEY *ca_key, long long now_s, char **why)
{
	if (ca && X509_check_ca(ca) == 0)
		return decide(why, CERT_NEW_CA, "the CA certificate is not a CA's");
	return check_pair(ca, ca_key, "CA", CERT_CA_RENEW_BEFORE_S, now_s, CERT_NEW_CA, why);
}

static enum cert_action check_serving(X509 *ca, X509 *x, EVP_PKEY *key, const char *const *names, long long now_s,
				      char **why)
{
	enum cert_action a = check_pair(x, key, "serving", CERT_SERVING_RENEW_BEFORE_S, now_s, CERT_RENEW_SERVING, why);
	if (a != CERT_OK)
		return a;
	const char *problem = chain_problem(ca, x);
	if (problem)
		return decide(why, CERT_RENEW_SERVING, "the serving certificate does not verify against the CA: %s",
			      problem);
	const char *name = uncovered_name(x, names);
	if (name)
		return decide(why, CERT_RENEW_SERVING, "the serving certificate does not cover the name \"%s\"", name);
	return CERT_OK;
}

enum cert_action cert_bundle_check(const struct cert_bundle *b, const char *const *names, long long now_s,
				   char **why)
{
	X509 *ca = cert_read(b->ca_cert_pem), *x = NULL;
	EVP_PKEY *ca_key = key_read(b->ca_key_pem), *key = NULL;
	if (why)
		*why = NULL;
	enum cert_action a = check_ca(ca, ca_key, now_s, why);
	if (a == CERT_OK) {
		x = cert_read(b->cert_pem);
		key = key_read(b->key_pem);
		a = check_serving(ca, x, key, names, now_s, why);
	}
	X509_free(ca);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return a;
}

/* Whether x's subjectAltName covers one of names (NULL: no names asked for); wildcards match. */
static bool covers_any(X509 *x, const char *const *names)
{
	if (!names || !names[0])
		return true;
	for (size_t i = 0; names[i]; i++) {
		ASN1_OCTET_STRING *ip = ip_of(names[i]);
		int covered = ip ? X509_check_ip_asc(x, names[i], 0)
				 : X509_check_host(x, names[i], 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL);
		ASN1_OCTET_STRING_free(ip);
		if (covered == 1)
			return true;
	}
	return false;
}

/* "a, b, c" of names, as a new string. */
static char *names_text(const char *const *names)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; names[i]; i++)
		strbuf_appendf(&sb, "%s%s", i ? ", " : "", names[i]);
	return strbuf_detach(&sb);
}

int cert_pair_check(const char *cert_pem, const char *key_pem, const char *const *names, long long now_s,
		    long long *not_after_s, char **why)
{
	X509 *x = cert_read(cert_pem);
	EVP_PKEY *key = key_read(key_pem);
	long long end = x ? asn1_time_s(X509_get0_notAfter(x)) : -1;
	char when[32];
	cert_format_time(end, when);
	int rc = -1;
	if (!x)
		decide(why, CERT_OK, "no PEM certificate (BEGIN CERTIFICATE) in tls.crt");
	else if (!key)
		decide(why, CERT_OK, "no PEM private key in tls.key (an encrypted key is not supported)");
	else if (X509_check_private_key(x, key) != 1)
		decide(why, CERT_OK, "tls.key is not the key of the certificate in tls.crt (give the pair of one Secret)");
	else if (end < 0)
		decide(why, CERT_OK, "the certificate's notAfter in tls.crt is unreadable");
	else if (end <= now_s)
		decide(why, CERT_OK, "the certificate in tls.crt expired at %s: renew it", when);
	else if (X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0) != 1)
		decide(why, CERT_OK, "the certificate in tls.crt is not for TLS servers (its keyUsage or "
				     "extendedKeyUsage leaves out server auth)");
	else if (!covers_any(x, names)) {
		char *list = names_text(names);
		decide(why, CERT_OK, "the certificate in tls.crt covers none of the names the webhook is called by (%s): "
				     "add one to its dnsNames (or give --webhook-cert-names)",
		       list);
		free(list);
	} else {
		rc = 0;
		if (why)
			*why = NULL;
		if (not_after_s)
			*not_after_s = end;
	}
	X509_free(x);
	EVP_PKEY_free(key);
	ERR_clear_error();
	return rc;
}

/* ------------------------------------------------------------------ */
/* The Secret                                                          */
/* ------------------------------------------------------------------ */

static const struct {
	const char *key;
	size_t offset;
	bool secret; /* key material: wiped from temporary buffers */
} secret_fields[] = {
	{CERT_SECRET_CERT, offsetof(struct cert_bundle, cert_pem), false},
	{CERT_SECRET_KEY, offsetof(struct cert_bundle, key_pem), true},
	{CERT_SECRET_CA_CERT, offsetof(struct cert_bundle, ca_cert_pem), false},
	{CERT_SECRET_CA_KEY, offsetof(struct cert_bundle, ca_key_pem), true},
};
#define N_SECRET_FIELDS (sizeof(secret_fields) / sizeof(secret_fields[0]))

static char **field(struct cert_bundle *b, size_t i)
{
	return (char **)((char *)b + secret_fields[i].offset);
}

static const char *field_value(const struct cert_bundle *b, size_t i)
{
	return *(char *const *)((const char *)b + secret_fields[i].offset);
}

json_t *cert_bundle_secret_data(const struct cert_bundle *b)
{
	json_t *data = json_object();
	for (size_t i = 0; i < N_SECRET_FIELDS; i++) {
		const char *pem = field_value(b, i);
		if (!pem)
			continue;
		char *b64 = base64_encode(pem, strlen(pem));
		json_object_set_new(data, secret_fields[i].key, json_string(b64));
		if (secret_fields[i].secret)
			OPENSSL_cleanse(b64, strlen(b64));
		free(b64);
	}
	return data;
}

/* Padded base64 of text (no NUL inside) into a new string in *out. */
static int b64_decode_text(const char *in, char **out)
{
	size_t len = 0;
	char *buf = base64_decode(in, &len);
	if (!buf)
		return -1;
	if (memchr(buf, '\0', len)) {
		OPENSSL_cleanse(buf, len);
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

int cert_bundle_from_secret(const json_t *secret, struct cert_bundle *b, char **err)
{
	cert_bundle_release(b);
	const json_t *data = json_object_get(secret, "data");
	if (!data || json_is_null(data))
		return 0;
	if (!json_is_object(data)) {
		fail(err, "the Secret's data is not an object");
		return -1;
	}
	for (size_t i = 0; i < N_SECRET_FIELDS; i++) {
		const json_t *v = json_object_get(data, secret_fields[i].key);
		if (!v || json_is_null(v))
			continue;
		const char *text = json_string_value(v);
		if (!text) {
			fail(err, "the Secret's data.%s is not a string", secret_fields[i].key);
			goto bad;
		}
		/* An empty value is how an emptied key reads back: as good as absent. */
		if (!*text)
			continue;
		if (b64_decode_text(text, field(b, i)) < 0) {
			fail(err, "the Secret's data.%s is not the padded base64 of PEM text", secret_fields[i].key);
			goto bad;
		}
	}
	return 0;
bad:
	cert_bundle_release(b);
	return -1;
}

/* ------------------------------------------------------------------ */
/* caBundle through a CA rotation                                      */
/* ------------------------------------------------------------------ */

char *cert_ca_bundle(const char *new_ca_pem, const char *old_ca_pem, long long now_s)
{
	X509 *ca = cert_read(new_ca_pem);
	STACK_OF(X509) *kept = sk_X509_new_null();
	BIO *in = NULL;
	struct strbuf out = STRBUF_INIT;
	char *result = NULL;

	if (!ca || !kept)
		goto out;
	char *pem = cert_pem(ca);
	if (!pem)
		goto out;
	strbuf_appendf(&out, "%s", pem);
	free(pem);
	if (!sk_X509_push(kept, ca))
		goto out;
	ca = NULL; /* owned by kept */
	in = old_ca_pem ? BIO_new_mem_buf(old_ca_pem, -1) : NULL;
	X509 *old;
	while (in && (old = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
		bool seen = false;
		for (int i = 0; i < sk_X509_num(kept) && !seen; i++)
			seen = X509_cmp(old, sk_X509_value(kept, i)) == 0;
		long long end = asn1_time_s(X509_get0_notAfter(old));
		pem = !seen && end > now_s ? cert_pem(old) : NULL;
		if (pem && sk_X509_push(kept, old)) {
			strbuf_appendf(&out, "%s", pem);
			old = NULL;
		}
		free(pem);
		X509_free(old);
	}
	result = strbuf_detach(&out);
out:
	strbuf_release(&out);
	BIO_free(in);
	X509_free(ca);
	sk_X509_pop_free(kept, X509_free);
	ERR_clear_error();
	return result;
}
