#include "webhook/webhook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/kube_whoami.h"
#include "controllers/contract.h"
#include "runtime/http_server.h"
#include "runtime/store.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/work_budget.h"
#include "util/xalloc.h"
#include "util/yaml_json.h"
#include "webhook/admission.h"
#include "webhook/cert_dir.h"
#include "webhook/webhook_tls.h"

struct webhook {
	/* Set once; with --webhook-cert-dir by the sync thread, when the files first hold a pair it can serve. */
	_Atomic(struct http_server *) server;
	char *bind_address;
	struct webhook_tls *tls;       /* the certificate the operator makes, or NULL: */
	struct cert_dir *cert_dir;     /* the one mounted at --webhook-cert-dir */
	struct informer *classes;      /* StorageClasses, or NULL (namespace scope) */
	struct informer *attr_classes; /* VolumeAttributesClasses, or NULL (not served, or not readable) */
	bool attr_classes_unreadable;  /* served, but the operator may not list them */
	struct informer *saved_copies; /* the resize's saved StatefulSets (ConfigMaps) */
	const struct state_seal *seal; /* borrowed */
	char *operator_user;           /* who the operator is to the API server, or NULL: not known */
	struct metric_family *requests, *duration;
	atomic_uint large; /* large reviews being decided (WEBHOOK_LARGE_AT_ONCE at most) */

	pthread_t sync_thread;
	bool sync_started;
	pthread_mutex_t lock; /* guards stop */
	pthread_cond_t wake;
	bool stop;
};

/* A review is JSON from the API server, but bounded all the same. */
static const struct doc_limits review_limits = {
	.max_bytes = WEBHOOK_MAX_BODY,
	.max_depth = DOC_MAX_DEPTH,
	.max_aliases = 0,
	.max_nodes = 1000000,
	.max_expanded_bytes = WEBHOOK_MAX_BODY,
	.max_parsed_bytes = WEBHOOK_MAX_PARSED,
	.budget = "the webhook's budget for an AdmissionReview",
};

/* A cache's objects (new reference), or NULL when it was not made: the decision then says it cannot check. */
static json_t *cached(struct informer *inf)
{
	return inf ? store_list(informer_store(inf)) : NULL;
}

bool webhook_caches_synced(struct informer *const *caches, size_t n, const char **waiting)
{
	for (size_t i = 0; i < n; i++) {
		if (caches[i] && !informer_has_synced(caches[i])) {
			*waiting = informer_resource(caches[i])->plural;
			return false;
		}
	}
	*waiting = NULL;
	return true;
}

/* Whether the caches w reads have synced; *waiting as webhook_caches_synced's. */
static bool own_caches_synced(const struct webhook *w, const char **waiting)
{
	struct informer *const caches[] = {w->classes, w->attr_classes, w->saved_copies};
	return webhook_caches_synced(caches, sizeof(caches) / sizeof(caches[0]), waiting);
}

bool webhook_ready(const struct webhook *w, const char **why)
{
	const char *waiting = NULL;
	if (w->cert_dir && !cert_dir_ready(w->cert_dir, why))
		return false;
	if (!atomic_load(&w->server)) {
		*why = "webhook: not listening yet";
		return false;
	}
	if (!own_caches_synced(w, &waiting)) {
		*why = "webhook: its caches have not synced";
		return false;
	}
	*why = "ok";
	return true;
}

/* admission_view.saved_copy: ConfigMap <name>-sts-backup of the resize's cache (new reference), or NULL. */
static json_t *saved_copy_of(void *ctx, const char *ns, const char *name)
{
	struct informer *inf = ctx;
	char *key = xasprintf("%s/%s" BACKUP_SUFFIX, ns, name);
	json_t *cm = store_get(informer_store(inf), key);
	free(key);
	return cm;
}

static const char *outcome_of(const json_t *review)
{
	const json_t *resp = json_object_get(review, "response");
	if (!json_is_true(json_object_get(resp, "allowed")))
		return "denied";
	return json_object_get(resp, "patch") ? "mutated" : "allowed";
}

static void log_decision(const json_t *in, const json_t *out, const char *outcome)
{
	if (!strcmp(outcome, "allowed"))
		return;
	const json_t *req = json_object_get(in, "request");
	const json_t *resp = json_object_get(out, "response");
	const char *what = !strcmp(outcome, "denied") ? kube_obj_str(resp, "status.message")
						      : json_string_value(json_array_get(json_object_get(resp, "warnings"), 0));
	log_info("webhook", "StatefulSet %s/%s%s: %s: %s", kube_obj_str(req, "namespace"), kube_obj_str(req, "name"),
		 json_is_true(json_object_get(req, "dryRun")) ? " (dry run)" : "", outcome, what ? what : "");
}

/*
 * A review not decided within its budget: an error, which failurePolicy
 * Ignore turns into the API server's own judgement (a template change
 * refused as without the operator, a create let through as when no replica
 * answers). A denial would add nothing to a template change and would
 * refuse creates that only met a busy operator.
 */
static int over_budget(struct webhook *w, const struct work_budget *budget, double t0, const char *during,
		       char **body)
{
	double ms = clock_mono_ms() - t0;
	log_warn("webhook", "review abandoned (503) after %.0f ms %s: over its budget of %d ms", ms, during,
		 WEBHOOK_REVIEW_BUDGET_MS);
	*body = xasprintf("not decided: over the review's budget of %d ms (%lu steps, %.0f ms)\n",
			  WEBHOOK_REVIEW_BUDGET_MS, budget->steps, ms);
	metric_add(w->requests, 1, METRIC_LABELS("over_budget"));
	metric_observe(w->duration, ms / 1000.0, NULL);
	return 503;
}

/* Reads and decides one review (text, len: its body) within budget; the HTTP status, *body the answer. */
static int decide(struct webhook *w, const char *text, size_t len, double t0, struct work_budget *budget,
		  const char **content_type, char **body)
{
	json_t *in = NULL;
	char *msg = NULL;
	if (json_load_limited(text, len, 0, &review_limits, &in, &msg) < 0) {
		*body = xasprintf("not an AdmissionReview: %s\n", msg);
		free(msg);
		metric_add(w->requests, 1, METRIC_LABELS("invalid"));
		return 400;
	}
	if (work_budget_step(budget)) {
		json_decref(in);
		return over_budget(w, budget, t0, "reading the body", body);
	}
	json_t *classes = cached(w->classes);
	json_t *attr_classes = cached(w->attr_classes);
	struct admission_view view = {.storage_classes = classes,
				      .attributes_classes = attr_classes,
				      .attributes_classes_unreadable = w->attr_classes_unreadable,
				      .saved_copy = saved_copy_of,
				      .saved_copy_ctx = w->saved_copies,
				      .seal = w->seal,
				      .operator_user = w->operator_user,
				      .budget = budget};
	json_t *out = admission_review(in, &view);
	int status;
	if (budget->spent) {
		status = over_budget(w, budget, t0, "deciding", body);
	} else {
		const char *outcome = outcome_of(out);
		log_decision(in, out, outcome);
		*body = json_dumps(out, JSON_COMPACT);
		*content_type = "application/json";
		metric_add(w->requests, 1, METRIC_LABELS(outcome));
		metric_observe(w->duration, (clock_mono_ms() - t0) / 1000.0, NULL);
		status = *body ? 200 : 500;
	}
	json_decref(out);
	json_decref(classes);
	json_decref(attr_classes);
	json_decref(in);
	return status;
}

/* Takes a place for a large review; false when all WEBHOOK_LARGE_AT_ONCE are taken. */
static bool large_enter(struct webhook *w)
{
	unsigned n = atomic_load(&w->large);
	while (n < WEBHOOK_LARGE_AT_ONCE)
		if (atomic_compare_exchange_weak(&w->large, &n, n + 1))
			return true;
	return false;
}

static int on_review(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	struct webhook *w = ctx;
	double t0 = clock_mono_ms();
	struct work_budget budget;
	work_budget_init(&budget, WEBHOOK_REVIEW_BUDGET_MS);
	/*
	 * A review may reach a replica still starting (a Service that
	 * published it early, a client that calls it directly): an empty cache
	 * would deny a class that exists, or miss a saved copy. An error
	 * instead: failurePolicy Ignore then lets the API server judge the
	 * update as without the operator.
	 */
	const char *waiting = NULL;
	if (!own_caches_synced(w, &waiting)) {
		log_info("webhook", "review refused (503): cache of %s not synced yet", waiting);
		*body = xasprintf("not ready: the cache of %s has not synced yet\n", waiting);
		metric_add(w->requests, 1, METRIC_LABELS("unavailable"));
		return 503;
	}
	size_t len = 0;
	const char *text = http_request_body(req, &len);
	/*
	 * A large review is refused at once, not queued, while
	 * WEBHOOK_LARGE_AT_ONCE are being decided: the threads left stay free
	 * for small ones (most real StatefulSets'), and memory bounded.
	 */
	bool large = len > WEBHOOK_LARGE_BODY;
	if (large && !large_enter(w)) {
		*body = xasprintf("busy: another review of over %u bytes is being decided; retry\n", WEBHOOK_LARGE_BODY);
		metric_add(w->requests, 1, METRIC_LABELS("busy"));
		return 503;
	}
	int status = decide(w, text, len, t0, &budget, content_type, body);
	if (large)
		atomic_fetch_sub(&w->large, 1);
	return status;
}

/*
 * cert_dir_serve_fn: the first pair starts the HTTPS server (its
 * listener's failure is reported as the pair's, and tried again at the
 * next poll), later ones replace its certificate.
 */
static int serve_pair(void *ctx, const char *cert_pem, const char *key_pem, char **err)
{
	struct webhook *w = ctx;
	struct http_server *s = atomic_load(&w->server);
	if (s)
		return http_server_set_certificate(s, cert_pem, key_pem, err);
	s = http_server_start_tls_pool(w->bind_address, cert_pem, key_pem, WEBHOOK_THREADS, err);
	if (!s)
		return -1;
	http_server_handle_post(s, WEBHOOK_PATH, on_review, w, WEBHOOK_MAX_BODY);
	http_server_limit_bodies(s, WEBHOOK_MAX_BODIES);
	atomic_store(&w->server, s);
	log_info("webhook", "serving admission reviews on %s%s (HTTPS)", w->bind_address, WEBHOOK_PATH);
	return 0;
}

/* Looks at the Secret and serves a renewed certificate. */
static void sync_secret(struct webhook *w)
{
	char *err = NULL;
	int changed = webhook_tls_sync(w->tls, (long long)(clock_wall_ms() / 1000), &err);
	if (changed < 0) {
		log_warn("webhook", "certificate: %s; still serving the one before", err);
	} else if (changed > 0) {
		free(err);
		err = NULL;
		if (http_server_set_certificate(atomic_load(&w->server), webhook_tls_cert(w->tls), webhook_tls_key(w->tls),
						&err) < 0)
			log_error("webhook", "cannot serve the renewed certificate: %s", err);
		else
			log_info("webhook", "serving the renewed certificate");
	}
	free(err);
}

/*
 * Looks at the Secret every WEBHOOK_SYNC_MS, or at the files of
 * --webhook-cert-dir every WEBHOOK_CERT_DIR_POLL_MS (cert_dir logs what
 * it finds wrong).
 */
static void *sync_main(void *arg)
{
	struct webhook *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct timespec until = clock_mono_deadline(w->cert_dir ? WEBHOOK_CERT_DIR_POLL_MS : WEBHOOK_SYNC_MS);
		pthread_cond_timedwait(&w->wake, &w->lock, &until);
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->lock);
		if (w->cert_dir)
			(void)cert_dir_poll(w->cert_dir, (long long)(clock_wall_ms() / 1000), serve_pair, w);
		else
			sync_secret(w);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

enum attributes_classes { ATTRIBUTES_CLASSES_READABLE, ATTRIBUTES_CLASSES_NOT_SERVED, ATTRIBUTES_CLASSES_FORBIDDEN };

/*
 * Whether the API server serves VolumeAttributesClasses (Kubernetes 1.34+)
 * and the operator may list them: a LIST of one. They are cluster-scoped,
 * so in namespace scope only the webhook's ClusterRole grants them; a
 * cache that can never sync would keep the whole operator from starting.
 */
static enum attributes_classes attributes_classes_access(struct kube_client *c)
{
	char *base = kube_resource_path(&KUBE_VOLUMEATTRIBUTESCLASSES, NULL, NULL, NULL);
	char *path = xasprintf("%s?limit=1", base);
	free(base);
	json_t *list = NULL;
	struct kube_error err = {0};
	int r = kube_request(c, "GET", path, NULL, NULL, &list, &err);
	json_decref(list);
	free(path);
	if (r == 0)
		return ATTRIBUTES_CLASSES_READABLE;
	if (err.code == 404)
		return ATTRIBUTES_CLASSES_NOT_SERVED;
	if (err.code == 403) {
		log_error("webhook", "cannot list VolumeAttributesClasses (%s): grant list and watch on them (ClusterRole "
				     "stateful-operator-webhook, deploy/webhook); until then every attributes class change "
				     "is denied",
			  err.message);
		return ATTRIBUTES_CLASSES_FORBIDDEN;
	}
	/* Any other answer (a flaky network): the cache retries, and reports it if it never syncs. */
	log_warn("webhook", "could not check for VolumeAttributesClasses: %s", err.message);
	return ATTRIBUTES_CLASSES_READABLE;
}

/*
 * Who the operator is to the API server, for the create guard: the
 * requester of the operator's own re-creates. Unknown, the guard goes by
 * the seal alone, and says so.
 */
static void learn_operator_user(struct webhook *w, struct kube_client *client)
{
	struct kube_error err = {0};
	if (kube_whoami(client, &w->operator_user, &err) == 0) {
		log_info("webhook", "while a resize has a StatefulSet deleted, only %s may create it (the operator's "
				    "own identity)",
			 w->operator_user);
		return;
	}
	log_warn("webhook", "cannot tell the operator's own username (SelfSubjectReview: %s): while a resize has a "
			    "StatefulSet deleted, a create carrying the re-create's sealed state is let through from "
			    "anyone",
		 err.message);
}

/* The Service's names, as a client inside the cluster may call it. */
static char **service_names(const char *ns)
{
	char **n = xcalloc(5, sizeof(*n));
	n[0] = xasprintf("%s.%s.svc", WEBHOOK_SERVICE, ns);
	n[1] = xasprintf("%s.%s.svc.cluster.local", WEBHOOK_SERVICE, ns);
	n[2] = xasprintf("%s.%s", WEBHOOK_SERVICE, ns);
	n[3] = xstrdup(WEBHOOK_SERVICE);
	return n;
}

static void free_names(char **names)
{
	for (char **n = names; n && *n; n++)
		free(*n);
	free(names);
}

void webhook_register_metrics(struct metrics *metrics, struct metric_family **requests,
			      struct metric_family **duration)
{
	*requests = metrics_counter(metrics, "stateful_operator_webhook_requests_total",
				    "AdmissionReviews answered, by outcome (allowed, mutated, denied, invalid; unavailable: "
				    "refused while the caches sync; over_budget: abandoned, not decided within "
				    "the review's time budget; busy: a large review refused while others are "
				    "decided).",
				    METRIC_LABELS("outcome"));
	*duration = metrics_histogram(metrics, "stateful_operator_webhook_request_duration_seconds",
				      "Time to decide an AdmissionReview, from its body received to the answer.", NULL);
}

struct webhook *webhook_start(const struct webhook_options *o, struct kube_client *client, struct manager *m,
			      struct metrics *metrics, char **err)
{
	*err = NULL;
	if (!o->bind_address || !strcmp(o->bind_address, "0"))
		return NULL;
	char **own_names = o->cert_names ? NULL : service_names(o->namespace);
	const char *const *names = o->cert_names ? o->cert_names : (const char *const *)own_names;
	struct webhook *w = xcalloc(1, sizeof(*w));
	atomic_init(&w->server, NULL);
	w->bind_address = xstrdup(o->bind_address);
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (o->cert_dir)
		w->cert_dir = cert_dir_new(o->cert_dir, names);
	else
		w->tls = webhook_tls_new(client, o->namespace, names, o->dry_run);
	free_names(own_names);
	if (o->read_storage_classes)
		w->classes = manager_informer(m, &KUBE_STORAGECLASSES);
	/*
	 * In namespace scope too: the manager watches cluster-scoped kinds
	 * cluster-wide, and the webhook's ClusterRole grants these (a Role
	 * cannot grant StorageClasses, so those stay unread there).
	 */
	switch (attributes_classes_access(client)) {
	case ATTRIBUTES_CLASSES_READABLE:
		w->attr_classes = manager_informer(m, &KUBE_VOLUMEATTRIBUTESCLASSES);
		break;
	case ATTRIBUTES_CLASSES_FORBIDDEN:
		w->attr_classes_unreadable = true;
		break;
	case ATTRIBUTES_CLASSES_NOT_SERVED:
		break;
	}
	w->saved_copies = manager_informer_selected(m, &KUBE_CONFIGMAPS, LABEL_SAVED_STATEFULSET);
	w->seal = o->seal;
	learn_operator_user(w, client);
	webhook_register_metrics(metrics, &w->requests, &w->duration);
	long long now_s = (long long)(clock_wall_ms() / 1000);
	if (w->cert_dir) {
		/*
		 * Files that cannot be served are no reason to stop: the replica
		 * stays not Ready, saying why (cert_dir logs it), until they can.
		 */
		(void)cert_dir_poll(w->cert_dir, now_s, serve_pair, w);
	} else {
		char *why = NULL;
		if (webhook_tls_sync(w->tls, now_s, &why) < 0) {
			*err = xasprintf("webhook certificate: %s", why);
			free(why);
			webhook_stop(w);
			return NULL;
		}
		if (serve_pair(w, webhook_tls_cert(w->tls), webhook_tls_key(w->tls), err) < 0) {
			webhook_stop(w);
			return NULL;
		}
	}
	w->sync_started = pthread_create(&w->sync_thread, NULL, sync_main, w) == 0;
	if (!w->sync_started)
		log_warn("webhook", "no thread to renew or reload the certificate: that waits for the next start");
	return w;
}

void webhook_stop(struct webhook *w)
{
	if (!w)
		return;
	if (w->sync_started) {
		pthread_mutex_lock(&w->lock);
		w->stop = true;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->sync_thread, NULL);
	}
	http_server_stop(atomic_load(&w->server));
	webhook_tls_free(w->tls);
	cert_dir_free(w->cert_dir);
	free(w->bind_address);
	free(w->operator_user);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int webhook_port(const struct webhook *w)
{
	struct http_server *s = w ? atomic_load(&w->server) : NULL;
	return s ? http_server_port(s) : 0;
}
