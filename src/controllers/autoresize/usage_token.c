#include "controllers/autoresize/usage_token.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/xalloc.h"

void usage_token_times(int64_t now_s, int64_t expires_s, int64_t *renew_at_s, int64_t *usable_until_s)
{
	int64_t life = expires_s - now_s;
	if (life > USAGE_TOKEN_SECONDS)
		life = USAGE_TOKEN_SECONDS;
	if (life < USAGE_TOKEN_MIN_LIFE_S)
		life = USAGE_TOKEN_MIN_LIFE_S;
	*renew_at_s = now_s + life * 4 / 5;
	*usable_until_s = now_s + life - USAGE_TOKEN_MARGIN_S;
}

enum usage_token_need usage_token_need(const struct usage_token *t, int64_t now_s)
{
	if (!t->tok.token || now_s >= t->usable_until_s)
		return USAGE_TOKEN_FETCH;
	return now_s >= t->renew_at_s ? USAGE_TOKEN_RENEW : USAGE_TOKEN_HAVE;
}

void usage_token_init(struct usage_token *t, struct kube_client *client, const char *ns, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->client = client;
	t->ns = xstrdup(ns);
	t->name = xstrdup(name);
}

void usage_token_release(struct usage_token *t)
{
	kube_token_release(&t->tok);
	FREE_AND_NULL(t->ns);
	FREE_AND_NULL(t->name);
}

/* Why no token could be had, with what to do about it. New string. */
static char *token_error(const struct usage_token *t, int rc, const struct kube_error *err)
{
	const char *fix = "";
	if (rc == KUBE_EHTTP && err->code == 403)
		fix = " (the operator needs create on serviceaccounts/token for that name only: "
		      "deploy/rbac/cluster/usage-reader.yaml)";
	else if (rc == KUBE_EHTTP && err->code == 404)
		fix = " (create it, with get on nodes/stats and nothing else: deploy/rbac/cluster/usage-reader.yaml; "
		      "or name another with --kubelet-service-account)";
	if (rc == KUBE_EHTTP)
		return xasprintf("no token of ServiceAccount %s/%s for the kubelets: %ld %s: %s%s", t->ns, t->name,
				 err->code, err->reason[0] ? err->reason : "error", err->message, fix);
	return xasprintf("no token of ServiceAccount %s/%s for the kubelets: %s", t->ns, t->name, err->message);
}

int usage_token_get(struct usage_token *t, int64_t now_s, const char **token, char **why)
{
	enum usage_token_need need = usage_token_need(t, now_s);
	if (need != USAGE_TOKEN_HAVE) {
		struct kube_token fresh = {NULL, 0};
		struct kube_error err;
		int rc = kube_token_request(t->client, t->ns, t->name, USAGE_TOKEN_SECONDS, &fresh, &err);
		if (rc == KUBE_OK) {
			kube_token_release(&t->tok);
			t->tok = fresh;
			usage_token_times(now_s, fresh.expires_s, &t->renew_at_s, &t->usable_until_s);
			t->renewal_failed = false;
		} else if (need == USAGE_TOKEN_RENEW) {
			if (!t->renewal_failed) {
				char *text = token_error(t, rc, &err);
				log_warn("autoresize", "%s; the current token is shown until it expires", text);
				free(text);
				t->renewal_failed = true;
			}
		} else {
			kube_token_release(&t->tok);
			*why = token_error(t, rc, &err);
			return -1;
		}
	}
	*token = t->tok.token;
	return 0;
}
