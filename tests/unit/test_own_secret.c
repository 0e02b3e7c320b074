/*
 * The operator's own Secrets (runtime/own_secret.h), installed empty and
 * filled by the operator, which may get and update them but not create:
 * the state key (state_seal_load) and the webhook's certificate
 * (webhook_tls_sync), against a scripted API server on loopback. An empty
 * Secret is filled by one PUT that carries the resourceVersion read and
 * keeps the Secret's type, labels and annotations (Helm's ownership); a
 * 409 (another replica filled it first) is followed by a read, and the
 * winner's key or certificate is used; a missing Secret is never created
 * (no POST) and the error gives the command that makes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/state_seal.h"
#include "loopback.h"
#include "runtime/own_secret.h"
#include "util/xalloc.h"
#include "webhook/webhook.h"
#include "webhook/webhook_cert.h"
#include "webhook/webhook_tls.h"

#define NS "ops"
#define KEY_PATH "/api/v1/namespaces/" NS "/secrets/" STATE_SEAL_SECRET_NAME
#define CERT_PATH "/api/v1/namespaces/" NS "/secrets/" WEBHOOK_SECRET

/* As the Helm chart installs it, after Helm added its ownership. */
#define EMPTY_SECRET(name)                                                                                          \
	"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"Opaque\",\"metadata\":{\"name\":\"" name "\","     \
	"\"namespace\":\"" NS "\",\"resourceVersion\":\"5\",\"uid\":\"u-1\","                                      \
	"\"labels\":{\"app.kubernetes.io/managed-by\":\"Helm\"},"                                                   \
	"\"annotations\":{\"meta.helm.sh/release-name\":\"sop\",\"helm.sh/resource-policy\":\"keep\"},"            \
	"\"managedFields\":[{\"manager\":\"helm\",\"operation\":\"Apply\"}]}}"

static const char NOT_FOUND[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":"
				"\"NotFound\",\"code\":404,\"message\":\"secrets not found\"}";
static const char CONFLICT[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":"
			       "\"Conflict\",\"code\":409,\"message\":\"the object has been modified\"}";

/* The winner's key: 32 bytes of 0x41 ("A"), as another replica stored it. */
#define WINNER_KEY_B64 "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
static const char FILLED_KEY[] = "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"" STATE_SEAL_SECRET_NAME
				 "\",\"namespace\":\"" NS "\",\"resourceVersion\":\"6\"},\"data\":{\"key\":\""
				 WINNER_KEY_B64 "\"}}";

static struct kube_client *client_of(struct canned_server *s)
{
	return loopback_client(canned_server_port(s), NULL);
}

/* Request i's line must start with method and path; its body (new reference, NULL when none). */
static json_t *expect_request(struct canned_server *s, int i, const char *method, const char *path)
{
	char *line = NULL, *body = NULL;
	canned_server_request(s, i, &line, &body);
	assert_non_null(line);
	char *want = xasprintf("%s %s", method, path);
	if (strncmp(line, want, strlen(want)))
		fail_msg("request %d: \"%s\", want \"%s ...\"", i, line, want);
	json_t *obj = *body ? json_loads(body, 0, NULL) : NULL;
	free(want);
	free(line);
	free(body);
	return obj;
}

static int requests(struct canned_server *s)
{
	char head[16];
	return canned_server_last(s, head, sizeof(head));
}

/* The PUT kept what the Secret was read with: its precondition, type, labels and annotations; no managedFields. */
static void expect_kept_metadata(const json_t *put, const char *name)
{
	assert_non_null(put);
	const json_t *md = json_object_get(put, "metadata");
	assert_string_equal(json_string_value(json_object_get(md, "name")), name);
	assert_string_equal(json_string_value(json_object_get(md, "resourceVersion")), "5");
	assert_string_equal(json_string_value(json_object_get(put, "type")), "Opaque");
	assert_string_equal(json_string_value(json_object_get(json_object_get(md, "labels"),
								"app.kubernetes.io/managed-by")),
			    "Helm");
	const json_t *ann = json_object_get(md, "annotations");
	assert_string_equal(json_string_value(json_object_get(ann, "meta.helm.sh/release-name")), "sop");
	assert_string_equal(json_string_value(json_object_get(ann, "helm.sh/resource-policy")), "keep");
	assert_null(json_object_get(md, "managedFields"));
}

static void expect_same_key(const struct state_seal *got, const char *b64)
{
	unsigned char buf[64];
	assert_int_equal(EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)strlen(b64)), STATE_SEAL_KEY_BYTES + 1);
	struct state_seal *want = state_seal_new(buf);
	char a[STATE_SEAL_KEY_ID_LEN + 1], b[STATE_SEAL_KEY_ID_LEN + 1];
	state_seal_key_id(got, a);
	state_seal_key_id(want, b);
	assert_string_equal(a, b);
	state_seal_free(want);
}

static void test_empty_state_key_is_filled_by_one_guarded_update(void **unused)
{
	(void)unused;
	const struct canned_answer script[] = {{"200 OK", EMPTY_SECRET(STATE_SEAL_SECRET_NAME)}, {"200 OK", "{}"}};
	struct canned_server *s = canned_server_start_script(script, 2, "application/json");
	struct kube_client *c = client_of(s);
	struct state_seal *seal = NULL;
	struct kube_error err = {0};
	assert_int_equal(state_seal_load(c, NS, STATE_SEAL_SECRET_NAME, true, &seal, &err), 0);
	assert_int_equal(requests(s), 2);
	json_decref(expect_request(s, 0, "GET", KEY_PATH));
	json_t *put = expect_request(s, 1, "PUT", KEY_PATH);
	expect_kept_metadata(put, STATE_SEAL_SECRET_NAME);
	const char *b64 = json_string_value(json_object_get(json_object_get(put, "data"), STATE_SEAL_SECRET_KEY));
	assert_non_null(b64);
	/* The key it seals with is the one it stored. */
	expect_same_key(seal, b64);
	json_decref(put);
	state_seal_free(seal);
	kube_client_free(c);
	canned_server_stop(s);
}

static void test_state_key_conflict_reads_the_winners_key(void **unused)
{
	(void)unused;
	const struct canned_answer script[] = {
		{"200 OK", EMPTY_SECRET(STATE_SEAL_SECRET_NAME)}, {"409 Conflict", CONFLICT}, {"200 OK", FILLED_KEY}};
	struct canned_server *s = canned_server_start_script(script, 3, "application/json");
	struct kube_client *c = client_of(s);
	struct state_seal *seal = NULL;
	struct kube_error err = {0};
	assert_int_equal(state_seal_load(c, NS, STATE_SEAL_SECRET_NAME, true, &seal, &err), 0);
	assert_int_equal(requests(s), 3);
	json_decref(expect_request(s, 1, "PUT", KEY_PATH));
	json_decref(expect_request(s, 2, "GET", KEY_PATH));
	expect_same_key(seal, WINNER_KEY_B64);
	state_seal_free(seal);
	kube_client_free(c);
	canned_server_stop(s);
}

static void test_missing_state_key_is_not_created_and_the_error_says_how(void **unused)
{
	(void)unused;
	const struct canned_answer script[] = {{"404 Not Found", NOT_FOUND}};
	struct canned_server *s = canned_server_start_script(script, 1, "application/json");
	struct kube_client *c = client_of(s);
	struct state_seal *seal = NULL;
	struct kube_error err = {0};
	assert_int_equal(state_seal_load(c, NS, STATE_SEAL_SECRET_NAME, true, &seal, &err), -1);
	assert_null(seal);
	assert_int_equal(err.code, 404);
	if (!strstr(err.message, "kubectl create secret generic " STATE_SEAL_SECRET_NAME " -n " NS))
		fail_msg("the error does not give the command: %s", err.message);
	assert_int_equal(requests(s), 1); /* no POST */
	kube_client_free(c);
	canned_server_stop(s);
}

static void test_empty_state_key_in_a_dry_run_is_left_empty(void **unused)
{
	(void)unused;
	const struct canned_answer script[] = {{"200 OK", EMPTY_SECRET(STATE_SEAL_SECRET_NAME)}};
	struct canned_server *s = canned_server_start_script(script, 1, "application/json");
	struct kube_client *c = client_of(s);
	struct state_seal *seal = NULL;
	struct kube_error err = {0};
	assert_int_equal(state_seal_load(c, NS, STATE_SEAL_SECRET_NAME, false, &seal, &err), -1);
	assert_int_equal(err.code, 404); /* main then seals with a key kept nowhere */
	assert_int_equal(requests(s), 1);
	kube_client_free(c);
	canned_server_stop(s);
}

static void test_bad_state_key_is_refused_and_left_alone(void **unused)
{
	(void)unused;
	static const char bad[] = "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"k\","
				  "\"resourceVersion\":\"5\"},\"data\":{\"key\":\"c2hvcnQ=\"}}";
	const struct canned_answer script[] = {{"200 OK", bad}};
	struct canned_server *s = canned_server_start_script(script, 1, "application/json");
	struct kube_client *c = client_of(s);
	struct state_seal *seal = NULL;
	struct kube_error err = {0};
	assert_int_equal(state_seal_load(c, NS, STATE_SEAL_SECRET_NAME, true, &seal, &err), -1);
	if (!strstr(err.message, "data.key is not the base64 of a 32-byte key"))
		fail_msg("the error does not name the key: %s", err.message);
	assert_int_equal(requests(s), 1); /* not overwritten */
	kube_client_free(c);
	canned_server_stop(s);
}

static const char *const NAMES[] = {"stateful-operator-webhook." NS ".svc", NULL};

static void test_empty_webhook_secret_is_filled_keeping_its_metadata(void **unused)
{
	(void)unused;
	/* The Secret, the PUT, then the configuration (absent here: logged, not an error). */
	const struct canned_answer script[] = {
		{"200 OK", EMPTY_SECRET(WEBHOOK_SECRET)}, {"200 OK", "{}"}, {"404 Not Found", NOT_FOUND}};
	struct canned_server *s = canned_server_start_script(script, 3, "application/json");
	struct kube_client *c = client_of(s);
	struct webhook_tls *t = webhook_tls_new(c, NS, NAMES, false);
	char *err = NULL;
	assert_int_equal(webhook_tls_sync(t, 1700000000, &err), 1);
	json_t *put = expect_request(s, 1, "PUT", CERT_PATH);
	expect_kept_metadata(put, WEBHOOK_SECRET);
	const json_t *data = json_object_get(put, "data");
	for (const char *const *k = (const char *const[]){CERT_SECRET_CERT, CERT_SECRET_KEY, CERT_SECRET_CA_CERT,
							   CERT_SECRET_CA_KEY, NULL};
	     *k; k++)
		if (!json_string_length(json_object_get(data, *k)))
			fail_msg("the PUT has no data.%s", *k);
	/* It serves what it stored. */
	struct cert_bundle stored = CERT_BUNDLE_INIT;
	char *perr = NULL;
	assert_int_equal(cert_bundle_from_secret(put, &stored, &perr), 0);
	assert_string_equal(webhook_tls_cert(t), stored.cert_pem);
	cert_bundle_release(&stored);
	json_decref(put);
	webhook_tls_free(t);
	kube_client_free(c);
	canned_server_stop(s);
}

static void test_webhook_secret_conflict_serves_the_winners_certificate(void **unused)
{
	(void)unused;
	long long now = 1700000000;
	struct cert_bundle winner = CERT_BUNDLE_INIT;
	char *err = NULL;
	assert_int_equal(cert_bundle_make_ca(&winner, "winner-ca", 3650, now, &err), 0);
	assert_int_equal(cert_bundle_make_serving(&winner, NAMES, 365, now, &err), 0);
	json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o}", "apiVersion", "v1", "kind", "Secret",
				"metadata", "name", WEBHOOK_SECRET, "namespace", NS, "resourceVersion", "6", "data",
				cert_bundle_secret_data(&winner));
	char *filled = json_dumps(obj, JSON_COMPACT);
	const struct canned_answer script[] = {{"200 OK", EMPTY_SECRET(WEBHOOK_SECRET)},
					       {"409 Conflict", CONFLICT},
					       {"200 OK", filled},
					       {"404 Not Found", NOT_FOUND}};
	struct canned_server *s = canned_server_start_script(script, 4, "application/json");
	struct kube_client *c = client_of(s);
	struct webhook_tls *t = webhook_tls_new(c, NS, NAMES, false);
	assert_int_equal(webhook_tls_sync(t, now, &err), 1);
	assert_int_equal(requests(s), 4); /* GET, PUT (409), GET: no second PUT; the configuration */
	json_decref(expect_request(s, 2, "GET", CERT_PATH));
	assert_string_equal(webhook_tls_cert(t), winner.cert_pem);
	webhook_tls_free(t);
	kube_client_free(c);
	canned_server_stop(s);
	free(filled);
	json_decref(obj);
	cert_bundle_release(&winner);
}

static void test_missing_webhook_secret_is_not_created_and_the_error_says_how(void **unused)
{
	(void)unused;
	const struct canned_answer script[] = {{"404 Not Found", NOT_FOUND}};
	struct canned_server *s = canned_server_start_script(script, 1, "application/json");
	struct kube_client *c = client_of(s);
	struct webhook_tls *t = webhook_tls_new(c, NS, NAMES, false);
	char *err = NULL;
	assert_int_equal(webhook_tls_sync(t, 1700000000, &err), -1);
	if (!err || !strstr(err, "kubectl create secret generic " WEBHOOK_SECRET " -n " NS))
		fail_msg("the error does not give the command: %s", err ? err : "(none)");
	assert_int_equal(requests(s), 1); /* no POST */
	free(err);
	webhook_tls_free(t);
	kube_client_free(c);
	canned_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_state_key_is_filled_by_one_guarded_update),
		cmocka_unit_test(test_state_key_conflict_reads_the_winners_key),
		cmocka_unit_test(test_missing_state_key_is_not_created_and_the_error_says_how),
		cmocka_unit_test(test_empty_state_key_in_a_dry_run_is_left_empty),
		cmocka_unit_test(test_bad_state_key_is_refused_and_left_alone),
		cmocka_unit_test(test_empty_webhook_secret_is_filled_keeping_its_metadata),
		cmocka_unit_test(test_webhook_secret_conflict_serves_the_winners_certificate),
		cmocka_unit_test(test_missing_webhook_secret_is_not_created_and_the_error_says_how),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
