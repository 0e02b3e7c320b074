/*
 * The kubelet source's own token (issue 27, finding 2: every kubelet
 * received the operator's own credentials): when a token is renewed and
 * until when it is shown (pure, every case of the clocks), what a
 * TokenRequest answer must hold, the request itself (its path, 600 s, no
 * audience, real in dry-run mode), renewal against a scripted API server
 * (one request per token's life, a failed renewal keeps the current token
 * until its end, then nothing), and the kubelet source when no token can
 * be had: every node's line names the ServiceAccount and the missing
 * right, and no kubelet is asked at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/token_request.h"
#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "controllers/autoresize/usage_token.h"
#include "loopback.h"
#include "token_api.h"
#include "util/xalloc.h"

#define T0 1700000000LL

static void expect_times(int64_t now, int64_t expires, int64_t renew_at, int64_t usable_until)
{
	int64_t r, u;
	usage_token_times(now, expires, &r, &u);
	if (r != renew_at || u != usable_until)
		fail_msg("token at %lld expiring %lld: renew at %lld, usable until %lld; want %lld, %lld",
			 (long long)now, (long long)expires, (long long)r, (long long)u, (long long)renew_at,
			 (long long)usable_until);
}

/* Renewed at 80 % of its life; shown until 30 s before its end; the clocks cannot stretch or loop it. */
static void test_times(void **state)
{
	(void)state;
	expect_times(T0, T0 + 600, T0 + 480, T0 + 570);          /* as asked */
	expect_times(T0, T0 + 3600, T0 + 480, T0 + 570);         /* the server's clock ahead: never past what was asked */
	expect_times(T0, T0 + 300, T0 + 240, T0 + 270);          /* a shorter life than asked */
	expect_times(T0, T0 - 100, T0 + 48, T0 + 30);            /* our clock far ahead: a minute, not a loop */
	expect_times(T0, T0 + 60, T0 + 48, T0 + 30);
}

static void test_need(void **state)
{
	(void)state;
	struct usage_token t;
	usage_token_init(&t, NULL, "sop", "reader");
	assert_int_equal(usage_token_need(&t, T0), USAGE_TOKEN_FETCH); /* none yet */
	t.tok.token = xstrdup("x");
	usage_token_times(T0, T0 + 600, &t.renew_at_s, &t.usable_until_s);
	assert_int_equal(usage_token_need(&t, T0), USAGE_TOKEN_HAVE);
	assert_int_equal(usage_token_need(&t, T0 + 479), USAGE_TOKEN_HAVE);
	assert_int_equal(usage_token_need(&t, T0 + 480), USAGE_TOKEN_RENEW);
	assert_int_equal(usage_token_need(&t, T0 + 569), USAGE_TOKEN_RENEW);
	assert_int_equal(usage_token_need(&t, T0 + 570), USAGE_TOKEN_FETCH);
	assert_int_equal(usage_token_need(&t, T0 + 10000), USAGE_TOKEN_FETCH);
	usage_token_release(&t);
	assert_null(t.tok.token);
}

static void expect_answer_refused(const char *json, const char *why_has)
{
	json_t *answer = json_loads(json, 0, NULL);
	assert_non_null(answer);
	struct kube_token tok = {xstrdup("old"), 1};
	char *why = NULL;
	assert_int_equal(kube_token_from_answer(answer, &tok, &why), -1);
	assert_null(tok.token); /* the old one is gone too: nothing half-read is shown */
	if (!strstr(why, why_has))
		fail_msg("\"%s\" does not say \"%s\"", why, why_has);
	/* The message never carries the token's text. */
	assert_null(strstr(why, "secret"));
	free(why);
	json_decref(answer);
}

static void test_answer(void **state)
{
	(void)state;
	json_t *answer = json_loads("{\"status\":{\"token\":\"eyJ.abc-_\",\"expirationTimestamp\":\"2023-11-14T22:13:20Z\"}}",
				    0, NULL);
	struct kube_token tok = {NULL, 0};
	char *why = NULL;
	assert_int_equal(kube_token_from_answer(answer, &tok, &why), 0);
	assert_string_equal(tok.token, "eyJ.abc-_");
	assert_int_equal(tok.expires_s, T0);
	kube_token_release(&tok);
	assert_null(tok.token);
	json_decref(answer);

	expect_answer_refused("{}", "no status.token");
	expect_answer_refused("{\"status\":{\"token\":\"\",\"expirationTimestamp\":\"2023-11-14T22:13:20Z\"}}",
			      "no status.token");
	expect_answer_refused("{\"status\":{\"token\":7,\"expirationTimestamp\":\"2023-11-14T22:13:20Z\"}}",
			      "no status.token");
	/* It goes into a header line: a line break would add headers of the node's choosing. */
	expect_answer_refused(
		"{\"status\":{\"token\":\"secret\\r\\nX-Evil: 1\",\"expirationTimestamp\":\"2023-11-14T22:13:20Z\"}}",
		"control character");
	expect_answer_refused("{\"status\":{\"token\":\"secret two\",\"expirationTimestamp\":\"2023-11-14T22:13:20Z\"}}",
			      "space");
	expect_answer_refused("{\"status\":{\"token\":\"secret\"}}", "expirationTimestamp");
	expect_answer_refused("{\"status\":{\"token\":\"secret\",\"expirationTimestamp\":\"tomorrow\"}}",
			      "expirationTimestamp");
	char *big = xmalloc(KUBE_TOKEN_MAX + 2);
	memset(big, 'a', KUBE_TOKEN_MAX + 1);
	big[KUBE_TOKEN_MAX + 1] = '\0';
	char *json = xasprintf("{\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"2023-11-14T22:13:20Z\"}}", big);
	expect_answer_refused(json, "longer than");
	free(json);
	free(big);
}

/* The request: that ServiceAccount's token subresource, 600 s, no audience (the API server's own). */
static void test_request(void **state)
{
	(void)state;
	struct token_api *api = token_api_start("sop", "reader", "minted", 600);
	struct kube_client *c = token_api_client(api);
	struct kube_token tok = {NULL, 0};
	struct kube_error err;
	long long before = (long long)time(NULL);
	assert_int_equal(kube_token_request(c, "sop", "reader", 600, &tok, &err), KUBE_OK);
	assert_string_equal(tok.token, "minted");
	assert_true(tok.expires_s >= before + 600 && tok.expires_s <= (long long)time(NULL) + 600);
	char *body = token_api_last_body(api);
	json_t *req = json_loads(body, 0, NULL);
	assert_non_null(req);
	assert_string_equal(json_string_value(json_object_get(req, "kind")), "TokenRequest");
	assert_string_equal(json_string_value(json_object_get(req, "apiVersion")), "authentication.k8s.io/v1");
	const json_t *spec = json_object_get(req, "spec");
	assert_int_equal(json_integer_value(json_object_get(spec, "expirationSeconds")), 600);
	assert_null(json_object_get(spec, "audiences"));
	json_decref(req);
	free(body);
	kube_token_release(&tok);

	/* Another ServiceAccount's path is not this one's: the API's 404 in its words. */
	assert_int_equal(kube_token_request(c, "sop", "other", 600, &tok, &err), KUBE_EHTTP);
	assert_int_equal(err.code, 404);
	assert_null(tok.token);
	kube_client_free(c);

	/* A dry-run operator still reads usage: the TokenRequest stores nothing and goes as is. */
	struct kube_client_options o = {.max_retries = -1, .dry_run = true};
	c = loopback_client(token_api_port(api), &o);
	assert_int_equal(kube_token_request(c, "sop", "reader", 600, &tok, &err), KUBE_OK);
	assert_false(token_api_last_dry_run(api));
	assert_string_equal(tok.token, "minted");
	kube_token_release(&tok);
	kube_client_free(c);
	token_api_stop(api);
}

static void expect_get(struct usage_token *t, int64_t now, const char *want)
{
	const char *token = NULL;
	char *why = NULL;
	if (usage_token_get(t, now, &token, &why) < 0)
		fail_msg("no token at +%lld: %s", (long long)(now - T0), why);
	assert_string_equal(token, want);
}

/*
 * Against the API: one request per token's life; at 80 % a new one; a
 * failed renewal keeps the current one, until 30 s before its end, then
 * none and a reason that names the ServiceAccount and the right.
 */
static void test_renewal(void **state)
{
	(void)state;
	struct token_api *api = token_api_start("sop", "reader", "first", 600);
	struct kube_client *c = token_api_client(api);
	struct usage_token t;
	usage_token_init(&t, c, "sop", "reader");
	/* The API's clock is ours: its expirationTimestamp is asked-for time + 600. */
	token_api_set(api, "first", T0);
	expect_get(&t, T0, "first");
	expect_get(&t, T0 + 100, "first");
	expect_get(&t, T0 + 479, "first");
	assert_int_equal(token_api_requests(api), 1);

	token_api_set(api, "second", T0 + 480);
	expect_get(&t, T0 + 480, "second");
	assert_int_equal(token_api_requests(api), 2);
	int64_t got_at = T0 + 480;

	token_api_refuse(api, 403, "Forbidden",
			 "serviceaccounts \\\"reader\\\" is forbidden: User \\\"system:serviceaccount:sop:op\\\" cannot "
			 "create resource \\\"serviceaccounts/token\\\" in API group \\\"\\\" in the namespace \\\"sop\\\"");
	/* The renewal fails: the current token is still shown, each poll asking again. */
	int64_t due = got_at + 480;
	expect_get(&t, due, "second");
	expect_get(&t, due + 5, "second");
	assert_int_equal(token_api_requests(api), 4);
	/* Its end near: none, and why. */
	const char *token = NULL;
	char *why = NULL;
	assert_int_equal(usage_token_get(&t, got_at + 570, &token, &why), -1);
	assert_null(t.tok.token);
	assert_string_equal(why, "no token of ServiceAccount sop/reader for the kubelets: 403 Forbidden: "
				 "serviceaccounts \"reader\" is forbidden: User \"system:serviceaccount:sop:op\" cannot "
				 "create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"sop\" "
				 "(the operator needs create on serviceaccounts/token for that name only: "
				 "deploy/rbac/cluster/usage-reader.yaml)");
	free(why);

	/* Granted again: a token again. */
	token_api_refuse(api, 0, NULL, NULL);
	token_api_set(api, "third", got_at + 600);
	expect_get(&t, got_at + 600, "third");
	usage_token_release(&t);
	kube_client_free(c);
	token_api_stop(api);
}

/* One poll of the kubelet source through api, the kubelet being canned: its lines. */
static json_t *poll_without_token(struct token_api *api, struct canned_server *kubelet)
{
	struct kube_client *c = token_api_client(api);
	struct usage_source_options o = {.kind = USAGE_SOURCE_KUBELET,
					 .kubelet_token_namespace = "sop",
					 .kubelet_service_account = "reader",
					 .cluster_scope = true};
	char *err = NULL;
	struct usage_source *s = usage_source_new(c, &o, &err);
	assert_non_null(s);
	usage__set_kubelet_scheme(s, "http");
	struct usage_node nodes[] = {{"n1", "127.0.0.1", canned_server_port(kubelet)},
				     {"n2", "127.0.0.1", canned_server_port(kubelet)}};
	json_t *table = json_object(), *errors = json_array();
	assert_int_equal(usage_source_poll(s, nodes, 2, NULL, table, errors), 0);
	assert_int_equal(json_object_size(table), 0);
	usage_source_free(s);
	kube_client_free(c);
	json_decref(table);
	return errors;
}

/*
 * No token to be had (the right missing, the ServiceAccount missing):
 * each node's line says so, and no kubelet is asked: there is no other
 * credential to fall back to.
 */
static void test_source_without_token(void **state)
{
	(void)state;
	struct canned_server *kubelet = canned_server_start("200 OK", "application/json", "{}");
	struct token_api *api = token_api_start("sop", "reader", "never", 600);
	token_api_refuse(api, 403, "Forbidden", "cannot create resource \\\"serviceaccounts/token\\\"");
	json_t *errors = poll_without_token(api, kubelet);
	assert_int_equal(json_array_size(errors), 2);
	assert_string_equal(json_string_value(json_array_get(errors, 0)),
			    "node n1: not asked: no token of ServiceAccount sop/reader for the kubelets: 403 Forbidden: "
			    "cannot create resource \"serviceaccounts/token\" (the operator needs create on "
			    "serviceaccounts/token for that name only: deploy/rbac/cluster/usage-reader.yaml)");
	assert_non_null(strstr(json_string_value(json_array_get(errors, 1)), "node n2: not asked: "));
	json_decref(errors);

	token_api_refuse(api, 404, "NotFound", "serviceaccounts \\\"reader\\\" not found");
	errors = poll_without_token(api, kubelet);
	assert_int_equal(json_array_size(errors), 2);
	assert_string_equal(json_string_value(json_array_get(errors, 0)),
			    "node n1: not asked: no token of ServiceAccount sop/reader for the kubelets: 404 NotFound: "
			    "serviceaccounts \"reader\" not found (create it, with get on nodes/stats and nothing else: "
			    "deploy/rbac/cluster/usage-reader.yaml; or name another with --kubelet-service-account)");
	json_decref(errors);

	char head[256];
	assert_int_equal(canned_server_last(kubelet, head, sizeof(head)), 0);
	token_api_stop(api);
	canned_server_stop(kubelet);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_need),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_renewal),
		cmocka_unit_test(test_source_without_token),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
