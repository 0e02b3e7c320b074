/*
 * A GET to a server other than the API server (a kubelet), with the
 * client's way of checking server certificates but a bearer token the
 * caller gives: never the client's own token or client certificate, which
 * would let that server act as the operator. And the token file reader
 * the client uses, for other servers' bearer tokens (Prometheus).
 *
 * Threads: as kube_client.h; a handle belongs to the calling thread.
 */
#ifndef SOP_CLIENT_KUBE_CREDENTIALS_H
#define SOP_CLIENT_KUBE_CREDENTIALS_H

#include <curl/curl.h>
#include <stdbool.h>

#include "client/kube_client.h"

/* How the other server's certificate is checked. */
struct kube_tls_check {
	const char *ca_file; /* its CA; NULL: the API server's (the client's config, else the system's) */
	bool insecure;       /* not checked at all (name and issuer) */
};

/*
 * Sets up h (the caller's handle, reset by the caller) for a GET of url
 * showing bearer (borrowed; NULL: no Authorization header) and nothing
 * else: no client certificate, the client's user agent, no redirects,
 * the server's certificate checked as tls says. Returns the header list,
 * to free with curl_slist_free_all after the transfer.
 */
struct curl_slist *kube_credentials_setup_bearer_get(struct kube_client *c, CURL *h, const char *url,
						     const struct kube_tls_check *tls, const char *bearer)
	__attribute__((warn_unused_result));

/*
 * A bearer token from path: at most 64 KiB, trailing blanks and line
 * breaks cut, refused when empty or when it holds a control character
 * (it goes into a header line). 0 with *out (new), or -1 with *err (new).
 */
int kube_token_file_read(const char *path, char **out, char **err) __attribute__((warn_unused_result));

#endif
