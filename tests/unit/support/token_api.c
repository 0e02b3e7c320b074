#include "token_api.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loopback.h"
#include "runtime/http_server.h"
#include "util/duration.h"
#include "util/xalloc.h"

struct token_api {
	struct http_server *srv;
	pthread_mutex_t lock;
	char *token;
	long life_s;
	int64_t now_s; /* 0: the real clock */
	int refuse_code;
	char *refusal; /* the Status body */
	int requests;
	char *last_body;
	bool last_dry_run;
};

static int answer(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	struct token_api *a = ctx;
	size_t len = 0;
	const char *got = http_request_body(req, &len);
	pthread_mutex_lock(&a->lock);
	a->requests++;
	free(a->last_body);
	a->last_body = xstrndup(got ? got : "", len);
	a->last_dry_run = http_request_query(req, "dryRun") != NULL;
	int code = 201;
	*content_type = "application/json";
	if (a->refuse_code) {
		code = a->refuse_code;
		*body = xstrdup(a->refusal);
	} else {
		char exp[32];
		rfc3339_format((a->now_s ? a->now_s : (int64_t)time(NULL)) + a->life_s, exp);
		*body = xasprintf("{\"kind\":\"TokenRequest\",\"apiVersion\":\"authentication.k8s.io/v1\","
				  "\"spec\":{\"audiences\":[\"https://kubernetes.default.svc.cluster.local\"],"
				  "\"expirationSeconds\":%ld},\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}",
				  a->life_s, a->token, exp);
	}
	pthread_mutex_unlock(&a->lock);
	return code;
}

struct token_api *token_api_start(const char *ns, const char *sa, const char *token, long life_s)
{
	struct token_api *a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	a->token = xstrdup(token);
	a->life_s = life_s;
	char *err = NULL;
	a->srv = http_server_start("127.0.0.1:0", &err);
	if (!a->srv)
		fail_msg("token API: %s", err);
	char *path = xasprintf("/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa);
	http_server_handle_post(a->srv, path, answer, a, 64 << 10);
	free(path);
	return a;
}

void token_api_set(struct token_api *a, const char *token, int64_t now_s)
{
	pthread_mutex_lock(&a->lock);
	free(a->token);
	a->token = xstrdup(token);
	a->now_s = now_s;
	pthread_mutex_unlock(&a->lock);
}

void token_api_refuse(struct token_api *a, int code, const char *reason, const char *message)
{
	pthread_mutex_lock(&a->lock);
	a->refuse_code = code;
	free(a->refusal);
	a->refusal = xasprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
			       "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
			       message ? message : "", reason ? reason : "", code);
	pthread_mutex_unlock(&a->lock);
}

int token_api_port(const struct token_api *a)
{
	return http_server_port(a->srv);
}

int token_api_requests(struct token_api *a)
{
	pthread_mutex_lock(&a->lock);
	int n = a->requests;
	pthread_mutex_unlock(&a->lock);
	return n;
}

char *token_api_last_body(struct token_api *a)
{
	pthread_mutex_lock(&a->lock);
	char *b = xstrdup(a->last_body ? a->last_body : "");
	pthread_mutex_unlock(&a->lock);
	return b;
}

bool token_api_last_dry_run(struct token_api *a)
{
	pthread_mutex_lock(&a->lock);
	bool d = a->last_dry_run;
	pthread_mutex_unlock(&a->lock);
	return d;
}

struct kube_client *token_api_client(const struct token_api *a)
{
	struct kube_client_options o = {.max_retries = -1};
	return loopback_client(token_api_port(a), &o);
}

void token_api_stop(struct token_api *a)
{
	if (!a)
		return;
	http_server_stop(a->srv);
	pthread_mutex_destroy(&a->lock);
	free(a->token);
	free(a->refusal);
	free(a->last_body);
	free(a);
}
