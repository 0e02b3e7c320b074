/*
 * The kubelet source's own token, so that no kubelet ever sees the
 * operator's credentials: a TokenRequest (client/token_request.h) of a
 * ServiceAccount that may only get nodes/stats, what a kubelet checks for
 * /stats/summary (deploy/rbac/cluster/usage-reader.yaml). A node that
 * keeps what it receives can read the other kubelets' stats for at most
 * USAGE_TOKEN_SECONDS, nothing more.
 *
 * The token is asked for USAGE_TOKEN_SECONDS (the least the API takes)
 * and renewed once 80 % of its life has passed; a failed renewal keeps
 * the current token until USAGE_TOKEN_MARGIN_S before its end, then the
 * kubelets are not asked at all: there is no other credential to fall
 * back to. The token is never logged.
 *
 * Not thread-safe: one thread (the autoresize poll) uses a usage_token.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_USAGE_TOKEN_H
#define SOP_CONTROLLERS_AUTORESIZE_USAGE_TOKEN_H

#include <stdbool.h>
#include <stdint.h>

#include "client/kube_client.h"
#include "client/token_request.h"

#define USAGE_TOKEN_SECONDS 600
/* Not shown within this of its end: a request under way must not carry a token that expires. */
#define USAGE_TOKEN_MARGIN_S 30
/* The shortest life counted, whatever the clocks say (ours ahead of the API server's). */
#define USAGE_TOKEN_MIN_LIFE_S 60

struct usage_token {
	struct kube_client *client; /* borrowed */
	char *ns;
	char *name;
	struct kube_token tok;
	int64_t renew_at_s;      /* wall clock */
	int64_t usable_until_s;
	bool renewal_failed;     /* said in the log once per failing streak */
};

enum usage_token_need {
	USAGE_TOKEN_HAVE,  /* the current token, as it is */
	USAGE_TOKEN_RENEW, /* due: ask for a new one, keep the current one if that fails */
	USAGE_TOKEN_FETCH, /* none, or too close to its end: a new one or nothing */
};

/*
 * When a token received at now_s that the API server says expires at
 * expires_s is renewed, and until when it is shown. Its life is counted
 * from our clock and clamped to [USAGE_TOKEN_MIN_LIFE_S,
 * USAGE_TOKEN_SECONDS], so a skewed clock neither keeps a token past what
 * was asked nor renews it in a loop. Pure.
 */
void usage_token_times(int64_t now_s, int64_t expires_s, int64_t *renew_at_s, int64_t *usable_until_s);
/* What t needs at now_s. Pure. */
enum usage_token_need usage_token_need(const struct usage_token *t, int64_t now_s);

/* ns, name copied; client borrowed, must outlive t. */
void usage_token_init(struct usage_token *t, struct kube_client *client, const char *ns, const char *name);
/* Wipes the token and frees the rest. */
void usage_token_release(struct usage_token *t);

/*
 * The token to show a kubelet at now_s (wall clock, seconds): *token is
 * borrowed until the next call. 0, or -1 with *why (new): the
 * ServiceAccount, the API's answer and the right that is missing.
 */
int usage_token_get(struct usage_token *t, int64_t now_s, const char **token, char **why)
	__attribute__((warn_unused_result));

#endif
