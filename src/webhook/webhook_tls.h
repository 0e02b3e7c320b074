/*
 * The webhook's certificate on the cluster: Secret WEBHOOK_SECRET (tls.crt,
 * tls.key, ca.crt, ca.key) in the operator's namespace, installed empty
 * (runtime/own_secret.h; never created here), filled and renewed by
 * whichever replica first finds it empty or due (an update with the
 * resourceVersion it read, keeping the Secret's type and metadata; a
 * conflict means another replica did it, and its Secret is read). The CA goes into the caBundle of every
 * webhook of MutatingWebhookConfiguration WEBHOOK_CONFIGURATION, ahead of
 * the CAs found there that have not expired (so a CA rotation keeps
 * replicas still serving the old chain trusted until it expires).
 *
 * Not thread-safe: one thread syncs.
 */
#ifndef SOP_WEBHOOK_TLS_H
#define SOP_WEBHOOK_TLS_H

#include <stdbool.h>

#include "client/kube_client.h"

struct webhook_tls;

/* client borrowed; ns and names (NULL-terminated) copied. dry_run: made in memory, never written. */
struct webhook_tls *webhook_tls_new(struct kube_client *client, const char *ns, const char *const *names,
				    bool dry_run);
void webhook_tls_free(struct webhook_tls *t);

/*
 * Reads the Secret, makes or renews what is missing or due (now_s: the
 * wall clock, seconds), keeps the caBundle in step. Returns 1 when the
 * serving certificate changed since the last call (or on the first), 0
 * when not, -1 with *err (new string) when there is no usable certificate.
 * A caBundle that cannot be written is logged, not an error: serving goes on.
 */
int webhook_tls_sync(struct webhook_tls *t, long long now_s, char **err);

/* The serving certificate and key (PEM) of the last successful sync. Borrowed until the next sync. */
const char *webhook_tls_cert(const struct webhook_tls *t);
const char *webhook_tls_key(const struct webhook_tls *t);

#endif
