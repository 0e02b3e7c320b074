/*
 * HTTPS of runtime/http_server: a POST route served over TLS with a
 * certificate of the webhook's kind (webhook_cert.h), verified by curl
 * against its CA; a new certificate served without a restart (new
 * connections get it, clients of the old CA fail to verify); a refused pair
 * leaves the old one served.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/http_server.h"
#include "util/xalloc.h"
#include "webhook/webhook_cert.h"

static const char *const names[] = {"127.0.0.1", "webhook.test.svc", NULL};

static void make_bundle(struct cert_bundle *b, const char *cn)
{
	char *err = NULL;
	long long now = (long long)time(NULL);
	if (cert_bundle_make_ca(b, cn, CERT_CA_DAYS_DEFAULT, now, &err) < 0 || cert_bundle_make_serving(b, names, CERT_SERVING_DAYS_DEFAULT, now, &err) < 0)
		fail_msg("making a certificate: %s", err);
}

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	strncat(arg, data, size * n < 200 ? size * n : 200);
	return size * n;
}

/* POSTs body over HTTPS, trusting ca_pem only; the curl result, the answer in out. */
static CURLcode post(int port, const char *ca_pem, const char *body, long *status, char out[256])
{
	char url[128];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/review", port);
	CURL *curl = curl_easy_init();
	struct curl_blob ca = {.data = (void *)ca_pem, .len = strlen(ca_pem), .flags = CURL_BLOB_COPY};
	out[0] = '\0';
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	CURLcode rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(curl);
	return rc;
}

static int echo(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	*content_type = "application/json";
	*body = xasprintf("{\"got\":%zu}", strlen(http_request_body(req, NULL)));
	return 200;
}

static void test_https_and_a_new_certificate_without_restart(void **state)
{
	(void)state;
	struct cert_bundle a = CERT_BUNDLE_INIT, b = CERT_BUNDLE_INIT;
	make_bundle(&a, "ca-a");
	make_bundle(&b, "ca-b");
	char *err = NULL;
	struct http_server *s = http_server_start_tls("127.0.0.1:0", a.cert_pem, a.key_pem, &err);
	if (!s)
		fail_msg("start: %s", err);
	http_server_handle_post(s, "/review", echo, NULL, 1 << 20);
	int port = http_server_port(s);
	long status = 0;
	char out[256];

	assert_int_equal(post(port, a.ca_cert_pem, "{\"x\":1}", &status, out), CURLE_OK);
	assert_int_equal(status, 200);
	assert_string_equal(out, "{\"got\":7}");
	/* A client that trusts another CA does not get through. */
	assert_int_not_equal(post(port, b.ca_cert_pem, "{}", &status, out), CURLE_OK);

	/* The new certificate: new connections get it, on the same port. */
	assert_int_equal(http_server_set_certificate(s, b.cert_pem, b.key_pem, &err), 0);
	assert_null(err);
	assert_int_equal(post(port, b.ca_cert_pem, "{}", &status, out), CURLE_OK);
	assert_int_equal(status, 200);
	assert_int_not_equal(post(port, a.ca_cert_pem, "{}", &status, out), CURLE_OK);

	/* A refused pair (a certificate with another's key): the one before is still served. */
	assert_int_equal(http_server_set_certificate(s, a.cert_pem, b.key_pem, &err), -1);
	assert_non_null(err);
	free(err);
	assert_int_equal(post(port, b.ca_cert_pem, "{}", &status, out), CURLE_OK);
	assert_int_equal(status, 200);

	/* Twice more: the daemon of the certificate before last is stopped at each swap. */
	assert_int_equal(http_server_set_certificate(s, a.cert_pem, a.key_pem, &err), 0);
	assert_int_equal(http_server_set_certificate(s, b.cert_pem, b.key_pem, &err), 0);
	assert_int_equal(post(port, b.ca_cert_pem, "{}", &status, out), CURLE_OK);
	http_server_stop(s);
	cert_bundle_release(&a);
	cert_bundle_release(&b);
}

static void test_https_refuses_a_bad_pair_at_start(void **state)
{
	(void)state;
	char *err = NULL;
	struct http_server *s = http_server_start_tls("127.0.0.1:0", "not a certificate", "not a key", &err);
	assert_null(s);
	assert_non_null(strstr(err, "certificate"));
	free(err);
	/* A plain server cannot swap certificates. */
	s = http_server_start("127.0.0.1:0", &err);
	assert_non_null(s);
	assert_int_equal(http_server_set_certificate(s, "x", "y", &err), -1);
	free(err);
	http_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_https_and_a_new_certificate_without_restart),
		cmocka_unit_test(test_https_refuses_a_bad_pair_at_start),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
