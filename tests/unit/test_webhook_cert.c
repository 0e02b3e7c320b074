/*
 * The webhook's certificates (webhook_cert.c): what is made verifies as a
 * TLS server chain for the names asked for, the check renews exactly what
 * needs renewing at the time given, the Secret round-trips, and the
 * caBundle keeps an old CA only while it can still be in use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/xalloc.h"
#include "webhook/webhook_cert.h"

#define DAY (24LL * 3600)
#define CA_CN "stateful-operator-webhook-ca"
#define SVC "stateful-operator-webhook.stateful-operator-system.svc"

static const char *const NAMES[] = {SVC, "127.0.0.1", "::1", NULL};

static long long now_s(void)
{
	return (long long)time(NULL);
}

/* A CA and a serving certificate for names, both made at t with the default validities. */
static struct cert_bundle made_at(long long t, const char *const *names)
{
	struct cert_bundle b = CERT_BUNDLE_INIT;
	char *err = NULL;
	assert_int_equal(cert_bundle_make_ca(&b, CA_CN, 0, t, &err), 0);
	assert_int_equal(cert_bundle_make_serving(&b, names, 0, t, &err), 0);
	assert_null(err);
	return b;
}

static X509 *read_cert(const char *pem)
{
	BIO *in = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(in, NULL, NULL, NULL);
	BIO_free(in);
	assert_non_null(x);
	return x;
}

static long long asn1_s(const ASN1_TIME *t)
{
	struct tm tm;
	assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
	return (long long)timegm(&tm);
}

/* X509_verify_cert of x against ca alone, as a TLS server certificate, at time t. */
static int verify(X509 *ca, X509 *x, long long t)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, x, NULL), 1);
	X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(ctx), X509_PURPOSE_SSL_SERVER);
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), (time_t)t);
	int ok = X509_verify_cert(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

static int count(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

static void test_serving_cert_chains_to_its_ca_for_its_names(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = made_at(t, NAMES), other = made_at(t, NAMES);
	X509 *ca = read_cert(b.ca_cert_pem), *x = read_cert(b.cert_pem);
	X509 *other_ca = read_cert(other.ca_cert_pem);

	assert_int_equal(verify(ca, x, t), 1);
	assert_int_not_equal(verify(other_ca, x, t), 1);
	/* Clients see it from an hour back to its end, and not after. */
	assert_int_equal(verify(ca, x, t - 3599), 1);
	assert_int_equal(verify(ca, x, t + 365 * DAY - 1), 1);
	assert_int_not_equal(verify(ca, x, t + 365 * DAY + 1), 1);
	/* The SANs: the DNS name and both addresses, nothing else. */
	assert_int_equal(X509_check_host(x, SVC, 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL), 1);
	assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
	assert_int_not_equal(X509_check_ip_asc(x, "127.0.0.2", 0), 1);
	assert_int_not_equal(X509_check_host(x, "other.svc", 0, 0, NULL), 1);
	/* Valid now: from an hour back (clock skew) to 365 days on; the CA for ten years. */
	assert_int_equal(asn1_s(X509_get0_notBefore(x)), t - 3600);
	assert_int_equal(asn1_s(X509_get0_notAfter(x)), t + 365 * DAY);
	assert_int_equal(asn1_s(X509_get0_notBefore(ca)), t - 3600);
	assert_int_equal(asn1_s(X509_get0_notAfter(ca)), t + 3650 * DAY);
	assert_int_equal(cert_not_after_s(b.cert_pem), t + 365 * DAY);
	/* Roles: the CA signs certificates only, the serving certificate serves TLS only. */
	assert_int_equal(X509_check_ca(ca), 1);
	assert_int_equal(X509_check_ca(x), 0);
	assert_true(X509_get_key_usage(ca) & KU_KEY_CERT_SIGN);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	assert_int_equal(X509_get_extended_key_usage(x), XKU_SSL_SERVER);
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	char cn[128];
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn)) > 0);
	assert_string_equal(cn, SVC);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, cn, sizeof(cn)) > 0);
	assert_string_equal(cn, CA_CN);
	/* P-256 keys; serials random, so two CAs never share one. */
	char group[32];
	size_t glen = 0;
	assert_int_equal(EVP_PKEY_get_utf8_string_param(X509_get0_pubkey(x), "group", group, sizeof(group), &glen), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca), X509_get0_serialNumber(other_ca)), 0);
	assert_non_null(strstr(b.key_pem, "-----BEGIN PRIVATE KEY-----"));

	X509_free(ca);
	X509_free(x);
	X509_free(other_ca);
	cert_bundle_release(&b);
	cert_bundle_release(&other);
	assert_null(b.ca_key_pem);
}

static void test_check_renews_serving_cert_30_days_before_expiry(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = made_at(t, NAMES);
	char *why = (char *)"unset";
	assert_int_equal(cert_bundle_check(&b, NAMES, t, &why), CERT_OK);
	assert_null(why);
	assert_int_equal(cert_bundle_check(&b, NAMES, t + 334 * DAY, NULL), CERT_OK);
	assert_int_equal(cert_bundle_check(&b, NAMES, t + 340 * DAY, &why), CERT_RENEW_SERVING);
	assert_non_null(strstr(why, "expires"));
	free(why);
	/* Renewed at that time, it is good again and still chains to the same CA. */
	char *ca_before = strdup(b.ca_cert_pem);
	assert_int_equal(cert_bundle_make_serving(&b, NAMES, 0, t + 340 * DAY, NULL), 0);
	assert_int_equal(cert_bundle_check(&b, NAMES, t + 340 * DAY, NULL), CERT_OK);
	assert_string_equal(b.ca_cert_pem, ca_before);
	free(ca_before);
	cert_bundle_release(&b);
}

static void test_check_makes_a_new_ca_a_year_before_it_expires(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = made_at(t, NAMES);
	char *why = NULL;
	/* 366 days before the CA ends only the serving certificate is due; 364 days before, the CA. */
	assert_int_equal(cert_bundle_check(&b, NAMES, t + (3650 - 366) * DAY, NULL), CERT_RENEW_SERVING);
	assert_int_equal(cert_bundle_check(&b, NAMES, t + (3650 - 364) * DAY, &why), CERT_NEW_CA);
	assert_non_null(strstr(why, "CA certificate expires"));
	free(why);
	/* Renewed 366 days before the CA ends, the serving certificate ends a day before it, and is good. */
	assert_int_equal(cert_bundle_make_serving(&b, NAMES, 0, t + (3650 - 366) * DAY, NULL), 0);
	assert_int_equal(cert_not_after_s(b.cert_pem), cert_not_after_s(b.ca_cert_pem) - DAY);
	assert_int_equal(cert_bundle_check(&b, NAMES, t + (3650 - 366) * DAY, NULL), CERT_OK);
	cert_bundle_release(&b);
}

static void test_check_renews_for_a_name_added_not_for_one_removed(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = made_at(t, NAMES);
	const char *const more[] = {SVC, "127.0.0.1", "::1", "10.0.0.7", NULL};
	const char *const more_dns[] = {SVC, "webhook.other.svc", NULL};
	const char *const fewer[] = {SVC, NULL};
	char *why = NULL;
	assert_int_equal(cert_bundle_check(&b, more, t, &why), CERT_RENEW_SERVING);
	assert_non_null(strstr(why, "\"10.0.0.7\""));
	free(why);
	assert_int_equal(cert_bundle_check(&b, more_dns, t, &why), CERT_RENEW_SERVING);
	assert_non_null(strstr(why, "\"webhook.other.svc\""));
	free(why);
	assert_int_equal(cert_bundle_check(&b, fewer, t, NULL), CERT_OK);
	cert_bundle_release(&b);
}

static void test_check_renews_a_serving_cert_of_another_ca_or_key(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = made_at(t, NAMES), other = made_at(t, NAMES);
	char *why = NULL;

	/* Signed by another CA (a replica that rotated alone, a hand-edited Secret). */
	char *mine = b.cert_pem, *my_key = b.key_pem;
	b.cert_pem = other.cert_pem;
	b.key_pem = other.key_pem;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, &why), CERT_RENEW_SERVING);
	assert_non_null(strstr(why, "does not verify against the CA"));
	free(why);

	/* Its own certificate with another key. */
	b.cert_pem = mine;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, &why), CERT_RENEW_SERVING);
	assert_non_null(strstr(why, "does not match"));
	assert_null(strstr(why, "-----"));
	free(why);
	b.key_pem = my_key;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, NULL), CERT_OK);

	/* The CA with another CA's key: a new CA. */
	char *my_ca_key = b.ca_key_pem;
	b.ca_key_pem = other.ca_key_pem;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, &why), CERT_NEW_CA);
	assert_non_null(strstr(why, "CA key does not match"));
	free(why);
	b.ca_key_pem = my_ca_key;
	cert_bundle_release(&b);
	cert_bundle_release(&other);
}

static void test_check_of_missing_or_broken_parts(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle empty = CERT_BUNDLE_INIT, b = made_at(t, NAMES);
	assert_int_equal(cert_bundle_check(&empty, NAMES, t, NULL), CERT_NEW_CA);

	char *cert = b.cert_pem;
	b.cert_pem = NULL;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, NULL), CERT_RENEW_SERVING);
	b.cert_pem = (char *)"-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n";
	assert_int_equal(cert_bundle_check(&b, NAMES, t, NULL), CERT_RENEW_SERVING);
	b.cert_pem = cert;

	/* A serving certificate and its key in the CA's place: not a CA. */
	char *ca = b.ca_cert_pem, *ca_key = b.ca_key_pem;
	b.ca_cert_pem = b.cert_pem;
	b.ca_key_pem = b.key_pem;
	char *why = NULL;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, &why), CERT_NEW_CA);
	assert_non_null(strstr(why, "not a CA"));
	free(why);
	b.ca_cert_pem = ca;
	b.ca_key_pem = ca_key;
	assert_int_equal(cert_bundle_check(&b, NAMES, t, NULL), CERT_OK);
	cert_bundle_release(&b);
}

static void test_make_refuses_what_cannot_serve(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = CERT_BUNDLE_INIT;
	char *err = NULL;
	const char *const none[] = {NULL};
	const char *const wildcard[] = {"*.svc", NULL};
	const char *const spaced[] = {"a b.svc", NULL};

	assert_int_equal(cert_bundle_make_serving(&b, NAMES, 0, t, &err), -1);
	assert_non_null(strstr(err, "CA"));
	FREE_AND_NULL(err);
	assert_int_equal(cert_bundle_make_ca(&b, CA_CN, 100, t, &err), -1);
	assert_non_null(strstr(err, "renewed at once"));
	FREE_AND_NULL(err);
	assert_int_equal(cert_bundle_make_ca(&b, "", 0, t, &err), -1);
	FREE_AND_NULL(err);
	assert_int_equal(cert_bundle_make_ca(&b, CA_CN, 0, t, &err), 0);
	assert_int_equal(cert_bundle_make_serving(&b, none, 0, t, &err), -1);
	FREE_AND_NULL(err);
	assert_int_equal(cert_bundle_make_serving(&b, wildcard, 0, t, &err), -1);
	assert_non_null(strstr(err, "\"*.svc\""));
	FREE_AND_NULL(err);
	assert_int_equal(cert_bundle_make_serving(&b, spaced, 0, t, &err), -1);
	FREE_AND_NULL(err);
	assert_int_equal(cert_bundle_make_serving(&b, NAMES, 20, t, &err), -1);
	FREE_AND_NULL(err);
	/* Nothing half-made on the way. */
	assert_null(b.cert_pem);
	assert_null(b.key_pem);
	cert_bundle_release(&b);
}

static void test_long_first_name_no_cn_and_serving_ends_with_its_ca(void **unused)
{
	(void)unused;
	long long t = now_s();
	/* 70 characters: more than a CN may hold. */
	const char *const longname[] = {"a-webhook-service-with-a-long-name.a-namespace-with-a-long-name-too.svc", NULL};
	struct cert_bundle b = CERT_BUNDLE_INIT;
	assert_true(strlen(longname[0]) > 64);
	assert_int_equal(cert_bundle_make_ca(&b, CA_CN, 400, t, NULL), 0);
	assert_int_equal(cert_bundle_make_serving(&b, longname, 0, t + 100 * DAY, NULL), 0);
	X509 *ca = read_cert(b.ca_cert_pem), *x = read_cert(b.cert_pem);
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(x)), 0);
	int crit = -1;
	GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
	assert_non_null(san);
	assert_int_equal(crit, 1);
	GENERAL_NAMES_free(san);
	assert_int_equal(verify(ca, x, t + 100 * DAY), 1);
	/* 365 days asked, 300 left in the CA: the certificate ends with the CA. */
	assert_int_equal(cert_not_after_s(b.cert_pem), t + 400 * DAY);
	assert_int_equal(cert_bundle_check(&b, longname, t + 100 * DAY, NULL), CERT_NEW_CA);
	X509_free(ca);
	X509_free(x);
	cert_bundle_release(&b);
	assert_int_equal(cert_not_after_s("garbage"), -1);
	assert_int_equal(cert_not_after_s(NULL), -1);
}

static json_t *secret_of(json_t *data)
{
	return json_pack("{s:s, s:s, s:s, s:o}", "apiVersion", "v1", "kind", "Secret", "type", "Opaque",
			 "data", data);
}

static void test_secret_round_trip(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle b = made_at(t, NAMES), back = CERT_BUNDLE_INIT;
	json_t *data = cert_bundle_secret_data(&b);
	assert_int_equal(json_object_size(data), 4);
	/* Base64, not the PEM text itself. */
	const char *crt = json_string_value(json_object_get(data, "tls.crt"));
	assert_non_null(crt);
	assert_null(strchr(crt, '-'));
	assert_null(strchr(crt, '\n'));
	json_t *secret = secret_of(data);
	char *err = NULL;
	assert_int_equal(cert_bundle_from_secret(secret, &back, &err), 0);
	assert_string_equal(back.ca_cert_pem, b.ca_cert_pem);
	assert_string_equal(back.ca_key_pem, b.ca_key_pem);
	assert_string_equal(back.cert_pem, b.cert_pem);
	assert_string_equal(back.key_pem, b.key_pem);
	assert_int_equal(cert_bundle_check(&back, NAMES, t, NULL), CERT_OK);
	json_decref(secret);

	/* Only a CA: the serving keys are left out, and read back as absent. */
	free(b.cert_pem);
	free(b.key_pem);
	b.cert_pem = b.key_pem = NULL;
	secret = secret_of(cert_bundle_secret_data(&b));
	assert_null(json_object_get(json_object_get(secret, "data"), "tls.crt"));
	assert_int_equal(cert_bundle_from_secret(secret, &back, &err), 0);
	assert_string_equal(back.ca_cert_pem, b.ca_cert_pem);
	assert_null(back.cert_pem);
	assert_null(back.key_pem);
	json_decref(secret);

	/* No data at all: an empty bundle, which the check answers with a new CA. */
	secret = json_pack("{s:s}", "kind", "Secret");
	assert_int_equal(cert_bundle_from_secret(secret, &back, &err), 0);
	assert_null(back.ca_cert_pem);
	assert_int_equal(cert_bundle_check(&back, NAMES, t, NULL), CERT_NEW_CA);
	json_decref(secret);
	cert_bundle_release(&b);
	cert_bundle_release(&back);
}

static void test_secret_with_bad_base64_refused(void **unused)
{
	(void)unused;
	const char *bad[] = {"not base64!", "QUJ\nREVG", "QUI=QUI=", "QUJDR", "QQ=", "QUJD AA==", "AAAA", "A==="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* Good values around the bad one must not survive it. */
		json_t *secret = secret_of(json_pack("{s:s, s:s}", "ca.crt", "QUJD", "tls.key", bad[i]));
		struct cert_bundle b = CERT_BUNDLE_INIT;
		char *err = NULL;
		assert_int_equal(cert_bundle_from_secret(secret, &b, &err), -1);
		assert_non_null(err);
		assert_non_null(strstr(err, "data.tls.key"));
		assert_null(strstr(err, bad[i])); /* a key's text is never echoed */
		assert_null(b.ca_cert_pem);
		assert_null(b.key_pem);
		free(err);
		json_decref(secret);
	}
	/* Not a string. */
	json_t *secret = secret_of(json_pack("{s:i}", "tls.crt", 7));
	struct cert_bundle b = CERT_BUNDLE_INIT;
	char *err = NULL;
	assert_int_equal(cert_bundle_from_secret(secret, &b, &err), -1);
	assert_non_null(strstr(err, "data.tls.crt"));
	free(err);
	json_decref(secret);
	/* Both paddings and none decode. */
	secret = secret_of(json_pack("{s:s, s:s, s:s}", "ca.crt", "QUJD", "tls.crt", "QUI=", "tls.key", "QQ=="));
	assert_int_equal(cert_bundle_from_secret(secret, &b, NULL), 0);
	assert_string_equal(b.ca_cert_pem, "ABC");
	assert_string_equal(b.cert_pem, "AB");
	assert_string_equal(b.key_pem, "A");
	json_decref(secret);
	cert_bundle_release(&b);
}

static void test_ca_bundle_keeps_the_old_ca_until_it_expires(void **unused)
{
	(void)unused;
	long long t = now_s();
	struct cert_bundle old = CERT_BUNDLE_INIT, rotated = CERT_BUNDLE_INIT;
	assert_int_equal(cert_bundle_make_ca(&old, CA_CN, 0, t, NULL), 0);
	long long rotation = t + (3650 - 364) * DAY;
	assert_int_equal(cert_bundle_make_ca(&rotated, CA_CN, 0, rotation, NULL), 0);

	char *bundle = cert_ca_bundle(rotated.ca_cert_pem, old.ca_cert_pem, rotation);
	assert_non_null(bundle);
	assert_int_equal(count(bundle, "BEGIN CERTIFICATE"), 2);
	/* The new CA first, then the old one. */
	assert_int_equal(strncmp(bundle, rotated.ca_cert_pem, strlen(rotated.ca_cert_pem)), 0);
	assert_non_null(strstr(bundle, old.ca_cert_pem));
	/* Published again later (old = the bundle now published): the same until the old CA ends. */
	char *again = cert_ca_bundle(rotated.ca_cert_pem, bundle, t + 3650 * DAY - 1);
	assert_string_equal(again, bundle);
	free(again);
	again = cert_ca_bundle(rotated.ca_cert_pem, bundle, t + 3650 * DAY);
	assert_string_equal(again, rotated.ca_cert_pem);
	free(again);
	free(bundle);

	/* No rotation: the same CA once. Unreadable old text dropped; no new CA, no bundle. */
	bundle = cert_ca_bundle(old.ca_cert_pem, old.ca_cert_pem, t);
	assert_string_equal(bundle, old.ca_cert_pem);
	free(bundle);
	bundle = cert_ca_bundle(old.ca_cert_pem, NULL, t);
	assert_string_equal(bundle, old.ca_cert_pem);
	free(bundle);
	bundle = cert_ca_bundle(old.ca_cert_pem, "junk", t);
	assert_string_equal(bundle, old.ca_cert_pem);
	free(bundle);
	assert_null(cert_ca_bundle(NULL, old.ca_cert_pem, t));
	assert_null(cert_ca_bundle("junk", old.ca_cert_pem, t));
	cert_bundle_release(&old);
	cert_bundle_release(&rotated);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serving_cert_chains_to_its_ca_for_its_names),
		cmocka_unit_test(test_check_renews_serving_cert_30_days_before_expiry),
		cmocka_unit_test(test_check_makes_a_new_ca_a_year_before_it_expires),
		cmocka_unit_test(test_check_renews_for_a_name_added_not_for_one_removed),
		cmocka_unit_test(test_check_renews_a_serving_cert_of_another_ca_or_key),
		cmocka_unit_test(test_check_of_missing_or_broken_parts),
		cmocka_unit_test(test_make_refuses_what_cannot_serve),
		cmocka_unit_test(test_long_first_name_no_cn_and_serving_ends_with_its_ca),
		cmocka_unit_test(test_secret_round_trip),
		cmocka_unit_test(test_secret_with_bad_base64_refused),
		cmocka_unit_test(test_ca_bundle_keeps_the_old_ca_until_it_expires),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
