#include "client/token_request.h"

#include <stdlib.h>
#include <string.h>

#include "client/kube_client_internal.h"
#include "util/duration.h"
#include "util/xalloc.h"

static const struct kube_resource SERVICEACCOUNTS = {
	.group = "", .version = "v1", .api_version = "v1",
	.plural = "serviceaccounts", .kind = "ServiceAccount", .namespaced = true,
};

void kube_token_release(struct kube_token *t)
{
	if (t->token) {
		explicit_bzero(t->token, strlen(t->token));
		FREE_AND_NULL(t->token);
	}
	t->expires_s = 0;
}

/* Printable ASCII without spaces: what a bearer token may be in a header line. */
static bool token_text_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

int kube_token_from_answer(const json_t *answer, struct kube_token *out, char **why)
{
	const json_t *status = json_object_get(answer, "status");
	const json_t *token = json_object_get(status, "token");
	const char *exp = json_string_value(json_object_get(status, "expirationTimestamp"));
	size_t len = json_string_length(token);
	kube_token_release(out);
	if (!json_is_string(token) || !len) {
		*why = xstrdup("the answer has no status.token");
		return -1;
	}
	if (len > KUBE_TOKEN_MAX || !token_text_ok(json_string_value(token), len)) {
		*why = xasprintf("status.token is longer than %u bytes or holds a space or control character",
				 KUBE_TOKEN_MAX);
		return -1;
	}
	int64_t expires = exp ? rfc3339_seconds(exp) : -1;
	if (expires < 0) {
		*why = xstrdup("status.expirationTimestamp is missing or not an RFC 3339 time");
		return -1;
	}
	out->token = xstrndup(json_string_value(token), len);
	out->expires_s = expires;
	return 0;
}

int kube_token_request(struct kube_client *c, const char *ns, const char *sa, long expiration_s,
		       struct kube_token *out, struct kube_error *err)
{
	char *path = kube_resource_path(&SERVICEACCOUNTS, ns, sa, "token");
	/* No spec.audiences: the API server's own (see the header). */
	char *body = xasprintf("{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
			       "\"spec\":{\"expirationSeconds\":%ld}}",
			       expiration_s);
	json_t *answer = NULL;
	int rc = kube__post_stores_nothing(c, path, body, &answer, err);
	if (rc == KUBE_OK) {
		char *why = NULL;
		if (kube_token_from_answer(answer, out, &why) < 0) {
			kube__set_error(err, 200, "", "POST %s: %s", path, why);
			rc = KUBE_EDECODE;
		}
		free(why);
	}
	/* The answer's copy of the token: jansson frees without wiping. */
	json_t *token = json_object_get(json_object_get(answer, "status"), "token");
	if (json_is_string(token))
		explicit_bzero((char *)json_string_value(token), json_string_length(token));
	json_decref(answer);
	free(body);
	free(path);
	return rc;
}
