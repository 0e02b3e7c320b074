/*
 * TokenRequest: a short-lived token of another ServiceAccount, for a
 * server that must not see the client's own credentials (a kubelet asked
 * for its stats summary). POST
 * /api/v1/namespaces/<ns>/serviceaccounts/<name>/token, which needs
 * create on serviceaccounts/token for that name.
 *
 * Audience: none is asked, so the token carries the API server's own
 * audiences (--api-audiences, by default its --service-account-issuer).
 * That is what a kubelet accepts: its webhook authenticator (kubelet
 * BuildAuthn: a DelegatingAuthenticatorConfig without APIAudiences) sends
 * TokenReviews without audiences, which the API server checks against its
 * own; a token for an audience of our choosing ("kubelet") would be
 * refused by every kubelet. Such a token also works against the API
 * server, with that ServiceAccount's rights only: hence a ServiceAccount
 * of its own, with nothing but what the kubelet checks.
 *
 * The token is a secret: it is in no message here, and wiped when freed.
 * Threads: as kube_client.h.
 */
#ifndef SOP_CLIENT_TOKEN_REQUEST_H
#define SOP_CLIENT_TOKEN_REQUEST_H

#include <jansson.h>
#include <stdint.h>

#include "client/kube_client.h"

/* Tokens longer than this are refused: they go into a header line. */
#define KUBE_TOKEN_MAX (16u << 10)

struct kube_token {
	char *token;       /* NULL: none */
	int64_t expires_s; /* its status.expirationTimestamp, seconds since the epoch */
};

/*
 * Asks for a token of ServiceAccount ns/sa valid for expiration_s seconds
 * (the API takes 600 at least; it may give less). 0 with *out (released
 * first), or a KUBE_E* code with err (the API's own reason and message;
 * KUBE_EDECODE for an answer without a usable token).
 */
int kube_token_request(struct kube_client *c, const char *ns, const char *sa, long expiration_s,
		       struct kube_token *out, struct kube_error *err) __attribute__((warn_unused_result));

/*
 * Reads a TokenRequest as the API answers it (borrowed): status.token
 * (not empty, at most KUBE_TOKEN_MAX bytes, no control character or
 * space) and status.expirationTimestamp (RFC 3339). 0 with *out (released
 * first), or -1 with *why (new; never holds the token). Pure.
 */
int kube_token_from_answer(const json_t *answer, struct kube_token *out, char **why)
	__attribute__((warn_unused_result));

/* Wipes and frees the token; t stays usable (empty). */
void kube_token_release(struct kube_token *t);

#endif
