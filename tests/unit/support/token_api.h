/*
 * A scripted API server on 127.0.0.1 that answers the TokenRequests of
 * one ServiceAccount (POST /api/v1/namespaces/<ns>/serviceaccounts/<sa>/token)
 * with a token, or with the refusal it is told; every other path is 404.
 * For the unit tests of the kubelet usage source. Failures end the test
 * through cmocka.
 */
#ifndef SOP_TEST_TOKEN_API_H
#define SOP_TEST_TOKEN_API_H

#include <stdbool.h>
#include <stdint.h>

#include "client/kube_client.h"

struct token_api;

/* Answers with token (copied), expiring life_s seconds after each request. */
struct token_api *token_api_start(const char *ns, const char *sa, const char *token, long life_s);
/* From now on, answers token (copied) expiring life_s after now_s (0: the real clock). */
void token_api_set(struct token_api *a, const char *token, int64_t now_s);
/* From now on, answers code with an API Status of reason and message (copied); code 0: the token again. */
void token_api_refuse(struct token_api *a, int code, const char *reason, const char *message);
int token_api_port(const struct token_api *a);
/* TokenRequests answered so far (tokens or refusals). */
int token_api_requests(struct token_api *a);
/* The last request's body (new string; "" when none). */
char *token_api_last_body(struct token_api *a);
/* The last request asked for a dry run (?dryRun=...). */
bool token_api_last_dry_run(struct token_api *a);
/* A client of this server showing the bearer token "t" (the operator's own, in these tests). */
struct kube_client *token_api_client(const struct token_api *a);
void token_api_stop(struct token_api *a);

#endif
