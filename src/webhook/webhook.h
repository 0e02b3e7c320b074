/*
 * The admission webhook: HTTPS on --webhook-bind-address, one route,
 * WEBHOOK_PATH, for the API server's AdmissionReviews of StatefulSet
 * updates and creates (the decision is admission.h's). It answers from the
 * caches (StorageClasses, VolumeAttributesClasses, the resize's saved
 * copies), never asking the API server while a request waits. Every
 * replica serves it, leading or not (every replica is Ready once it can
 * answer: webhook_ready), and until its caches have synced a replica
 * answers 503, which failurePolicy Ignore turns into the API server's own
 * judgement (a template change refused, the rest allowed).
 *
 * On a create while a resize has the set deleted, it tells the operator's
 * own re-create by the requester's username, which it learns at start
 * (kube_whoami.h: the operator's own identity, however it authenticates),
 * and by the seal on the re-create's state (admission.h).
 *
 * Its certificate (webhook_tls.h): a CA and a serving certificate the
 * operator makes, kept in Secret WEBHOOK_SECRET of its own namespace, the
 * CA written into the caBundle of MutatingWebhookConfiguration
 * WEBHOOK_CONFIGURATION; every replica serves what the Secret holds, looks
 * again every WEBHOOK_SYNC_MS, renews before expiry and serves the new one
 * without a restart. Or, with --webhook-cert-dir, the pair mounted there
 * (cert-manager's, or the user's), reloaded when it changes, with nothing
 * written to the cluster (cert_dir.h).
 *
 * Threads: webhook_start/webhook_stop from main; requests on the HTTP
 * threads (WEBHOOK_THREADS); the certificate on a thread of its own.
 */
#ifndef SOP_WEBHOOK_WEBHOOK_H
#define SOP_WEBHOOK_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "client/kube_client.h"
#include "controllers/state_seal.h"
#include "runtime/informer.h"
#include "runtime/manager.h"
#include "runtime/metrics.h"

#define WEBHOOK_PATH "/mutate-apps-v1-statefulset"
#define WEBHOOK_SECRET "stateful-operator-webhook-cert"
#define WEBHOOK_CONFIGURATION "stateful-operator"
#define WEBHOOK_SERVICE "stateful-operator-webhook"
#define WEBHOOK_SYNC_MS 60000
/* How often the files of --webhook-cert-dir are read (the kubelet updates a mounted Secret within a minute or so). */
#define WEBHOOK_CERT_DIR_POLL_MS 2000
/* An AdmissionReview holds two StatefulSets, each up to the API server's 3 MiB request limit. */
#define WEBHOOK_MAX_BODY (7u << 20)
/*
 * Reviews are decided on WEBHOOK_THREADS threads, at most
 * WEBHOOK_LARGE_AT_ONCE of them with a body over WEBHOOK_LARGE_BODY (a
 * large one meanwhile is answered 503 at once): a flood of large reviews
 * holds one thread, for its parse and at most its budget, and the others
 * decide the small reviews most real StatefulSets make. Memory: one large
 * review parsed (under the parse budget of review_limits) and three small
 * ones, beside WEBHOOK_MAX_BODIES of bodies.
 */
#define WEBHOOK_THREADS 4
#define WEBHOOK_LARGE_BODY (64u << 10)
#define WEBHOOK_LARGE_AT_ONCE 1
/*
 * The large bodies (over the HTTP server's HTTP_SERVER_SMALL_BODY) held at
 * once, over every connection: anyone who reaches the port may send bodies
 * side by side (16 connections from one address), and each is held whole
 * until answered. Two of the largest: the one being decided and one
 * arriving. Past it a review is answered 503 unread (failurePolicy Ignore);
 * small ones are always taken.
 */
#define WEBHOOK_MAX_BODIES ((WEBHOOK_LARGE_AT_ONCE + 1) * WEBHOOK_MAX_BODY)
/*
 * The time one review may take, from its body received to its answer
 * (reading it, then deciding, checked at each template): past it the work
 * is abandoned and the review answered 503 (failurePolicy Ignore: the API
 * server judges as without the operator). Well under the configuration's
 * timeoutSeconds (5, deploy/webhook and the chart): a review queued behind
 * one that spends its whole budget on each HTTP thread is still answered in
 * time.
 */
#define WEBHOOK_REVIEW_BUDGET_MS 1000
/*
 * Heap one review may take once parsed (util/json_budget.h; measured with
 * bench_parse_cost, docs/design.md "Parse budgets"): a review of a big
 * StatefulSet (4 containers of 100 env vars, old and new) costs 2.4 MiB,
 * one of two 700 KiB StatefulSets 16.0 MiB (refused: the budget keeps a
 * headroom). Anyone who reaches the port can
 * send a review, before any credential is checked: 1.3 MB of "{}" would
 * cost 104 MiB. Reviews are parsed on the HTTP threads, one large at a
 * time (WEBHOOK_LARGE_AT_ONCE; a small body cannot reach this budget), so the
 * door costs about WEBHOOK_LARGE_AT_ONCE x WEBHOOK_MAX_PARSED: keep that well
 * inside the 128 Mi memory limit when either changes. Past it the review is
 * refused (400), which failurePolicy Ignore turns into the API server's
 * own judgement.
 */
#define WEBHOOK_MAX_PARSED (16u << 20)

struct webhook_options {
	const char *bind_address; /* --webhook-bind-address; "0": no webhook */
	const char *namespace;    /* the operator's own: where the Secret is */
	/* Names the serving certificate covers (DNS names or IP addresses), NULL-terminated; NULL: the Service's. */
	const char *const *cert_names;
	/*
	 * --webhook-cert-dir: serve DIR/tls.crt and DIR/tls.key (cert_dir.h),
	 * reloaded when they change; the operator then never reads or writes
	 * WEBHOOK_SECRET nor any caBundle. NULL: it makes its own (webhook_tls.h).
	 */
	const char *cert_dir;
	bool read_storage_classes; /* false in namespace scope: a Role cannot grant them */
	bool dry_run;              /* make a certificate, write nothing */
	const struct state_seal *seal; /* the controllers' (borrowed): a saved copy holds a create back only when sealed */
};

struct webhook;

/*
 * Registers the webhook's metric families on metrics (a second call
 * returns the same ones): webhook_start's, and the exposition test's.
 */
void webhook_register_metrics(struct metrics *metrics, struct metric_family **requests,
			      struct metric_family **duration);


/*
 * Registers the caches it reads with m, gets its certificate and starts
 * serving. client, m and metrics are borrowed and must outlive it. NULL
 * with *err (new string) when it cannot serve; NULL without *err when
 * bind_address is "0". With cert_dir, files that cannot be served yet do
 * not fail it: it starts listening once they can (webhook_ready says why
 * not until then).
 */
struct webhook *webhook_start(const struct webhook_options *o, struct kube_client *client, struct manager *m,
			      struct metrics *metrics, char **err);
void webhook_stop(struct webhook *w);
/*
 * Whether every cache of caches (n of them; NULL: one not made) has synced,
 * the webhook's condition to answer a review. When not, *waiting (borrowed)
 * names the first that has not (its resource's plural), else NULL.
 */
bool webhook_caches_synced(struct informer *const *caches, size_t n, const char **waiting);
/*
 * Whether w can answer a review now (its caches have synced): a condition
 * of the replica's readiness (manager_add_ready_check), and a certificate
 * served that has not expired. When not, *why (borrowed, valid while w)
 * says what it waits for, or what to fix. Any thread.
 */
bool webhook_ready(const struct webhook *w, const char **why);
/* The port it listens on (for ":0" in tests); 0 while it does not listen yet (--webhook-cert-dir). */
int webhook_port(const struct webhook *w);

#endif
