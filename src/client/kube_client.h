/*
 * A thin Kubernetes API client over libcurl and jansson. It works on whole
 * JSON documents: what the server sends is what the caller gets, unknown
 * fields included, so an update never drops a field this client does not
 * know about.
 *
 * Threads: every function may be called from any thread. Each thread gets
 * its own keep-alive curl handle (libcurl forbids sharing one), created on
 * first use and freed when the thread exits or the client is freed.
 *
 * Errors: functions return 0 on success or a negative KUBE_E* code, and
 * fill a struct kube_error with the HTTP code and the API's own Status
 * reason and message, so callers can pass them on to Events and logs.
 * 429 and 5xx answers and transport failures are retried with exponential
 * backoff (honouring Retry-After up to 5 s a wait and 15 s a request)
 * before an error is returned; 409 Conflict is returned at once (the
 * caller requeues). A write that may have reached the server (transport
 * failure or 5xx) is sent again only when a repeat is harmless: PUT, a
 * DELETE with a UID or resourceVersion precondition, a merge patch that
 * carries metadata.resourceVersion or metadata.uid, a JSON patch guarded
 * by a "test" op (see kube__repeat_is_harmless); never a POST.
 * Responses larger than 16 MiB are refused (KUBE_ETOOLARGE), and so are
 * answers, LIST items and watch events whose parsed tree would take more
 * than KUBE_OBJECT_MAX_PARSED of heap (see there).
 */
#ifndef SOP_CLIENT_KUBE_CLIENT_H
#define SOP_CLIENT_KUBE_CLIENT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "client/kube_config.h"
#include "client/kube_resource.h"
#include "client/object_peek.h"
#include "util/yaml_json.h"

/*
 * Heap one document from the API server may take once parsed (an answer, a
 * LIST item, a watch event; util/json_budget.h). Measured with
 * bench_parse_cost on bench_parse_samples (docs/design.md, "Parse
 * budgets"): a big StatefulSet (4 containers of 100 env vars) costs
 * 1.3 MiB, a big Pod 1.1 MiB, a ConfigMap of 1.5 MiB (etcd's limit) in
 * 26,000 keys 6.6 MiB; a StatefulSet grown by env vars to 1.5 MiB costs
 * 17.7 MiB and is refused.
 * Anyone who may create an object could otherwise make the operator
 * spend 80 times its size (450,000 "{}" in 1.3 MB: 104 MiB).
 */
#define KUBE_OBJECT_MAX_PARSED (16u << 20)
/*
 * LIST items and watch events parsed and applied at once, in the whole
 * process (every informer's thread): the informers' door costs at most
 * this many budgets, whatever the number of informers.
 */
#define KUBE_OBJECT_PARSES_AT_ONCE 2

/* The limits of one document from the API server: KUBE_RESPONSE_MAX of text, KUBE_OBJECT_MAX_PARSED parsed. */
extern const struct doc_limits kube_object_limits;

enum {
	KUBE_OK = 0,
	KUBE_EHTTP = -1,      /* the server answered with an error Status (see code/reason) */
	KUBE_ETRANSPORT = -2, /* no answer: connection, TLS or timeout (see message) */
	KUBE_EDECODE = -3,    /* the answer was not the JSON expected */
	KUBE_ESTOPPED = -4,   /* a watch was stopped by its caller */
	KUBE_EAUTH = -5,      /* credentials could not be obtained (token file, exec plugin) */
	KUBE_ETOOLARGE = -6,  /* the answer was larger than the cap: ask for less (a smaller LIST page) */
};

struct kube_error {
	long code;         /* HTTP status; 0 when there was no answer */
	char reason[64];   /* Status.reason: NotFound, Conflict, AlreadyExists, Forbidden, Expired, ... */
	char message[1024];
	/*
	 * A write: an attempt may have been done though its answer was lost
	 * (a cut, a 5xx), so this error may be the request's own doing (a
	 * guarded repeat's 409). Only a read tells.
	 */
	bool maybe_done;
};

/* True when err is the HTTP code given. */
static inline bool kube_error_is(const struct kube_error *err, long code)
{
	return err->code == code;
}

/* A request_timeout_ms that never ends a request (kubectl's --request-timeout=0); the low-speed limit still does. */
#define KUBE_NO_REQUEST_TIMEOUT_MS (100L * 365 * 86400 * 1000)

struct kube_client_options {
	int max_retries;          /* for 429/5xx/transport errors; 0 = default 5, -1 = none */
	long request_timeout_ms;  /* non-watch requests; default 60000; KUBE_NO_REQUEST_TIMEOUT_MS: none */
	long low_speed_seconds;   /* non-watch requests end when below 1 KiB/s this long; default 30 */
	bool dry_run;             /* mutations are sent with dryRun=All: validated, never persisted */
	const char *user_agent;   /* default "stateful-operator" */
};

/* Called after every request; used for the API request metrics. */
typedef void (*kube_request_observer)(void *ctx, const char *verb, long code, double seconds);

struct kube_client;

/*
 * Creates a client. Takes over the contents of cfg (cfg is left zeroed);
 * opts may be NULL for defaults. Returns NULL and sets *err (new string)
 * when the config cannot be used.
 */
struct kube_client *kube_client_new(struct kube_config *cfg, const struct kube_client_options *opts,
				    char **err);
void kube_client_free(struct kube_client *c);
void kube_client_set_observer(struct kube_client *c, kube_request_observer fn, void *ctx);
/* The namespace the config named (context or in-cluster), or NULL. Borrowed. */
const char *kube_client_namespace(const struct kube_client *c);
/* Borrowed; e.g. https://127.0.0.1:6443 */
const char *kube_client_server(const struct kube_client *c);

/*
 * The generic request: method, a path with query (e.g. from
 * kube_resource_path), and an optional body with its content type. On
 * success *out (if out is not NULL) is a new reference to the decoded
 * body, or NULL when the body was empty.
 */
int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, json_t **out, struct kube_error *err)
	__attribute__((warn_unused_result));

/*
 * A GET whose answer is text, not JSON (a pod's log: .../pods/NAME/log?tailLines=N).
 * *out is a new NUL-terminated string on success.
 */
int kube_get_text(struct kube_client *c, const char *path, char **out, struct kube_error *err)
	__attribute__((warn_unused_result));

/*
 * kube_get_text sent once (but again after a 401, with credentials read
 * anew), within timeout_ms (0: the client's request timeout): for a
 * caller that polls and asks again next round. A kubelet's stats through
 * the node proxy: with a node down, each attempt waits out the API
 * server's dial timeout (30 s), and the retries would hold the poll for
 * minutes.
 */
int kube_get_text_once(struct kube_client *c, const char *path, long timeout_ms, char **out,
		       struct kube_error *err) __attribute__((warn_unused_result));

int kube_get(struct kube_client *c, const struct kube_resource *r, const char *ns,
	     const char *name, json_t **out, struct kube_error *err) __attribute__((warn_unused_result));

struct kube_list_options {
	const char *label_selector;
	const char *field_selector;
	long limit;                   /* page size; 0 = server default (all) */
	const char *continue_token;
	const char *resource_version;
	/*
	 * kube_list_page_each: called (with its ctx) for an item over
	 * KUBE_OBJECT_MAX_PARSED, which is then left out; NULL: such an item
	 * fails the page (KUBE_EDECODE).
	 */
	kube_oversize_fn on_oversize;
};

/* One LIST page; *out is the List object (items, metadata.continue, metadata.resourceVersion). */
int kube_list_page(struct kube_client *c, const struct kube_resource *r, const char *ns,
		   const struct kube_list_options *opts, json_t **out, struct kube_error *err)
	__attribute__((warn_unused_result));

/* Called with each item of a LIST page (borrowed: valid during the call). */
typedef void (*kube_list_item_fn)(void *ctx, json_t *item);

/*
 * One LIST page, handed over item by item: only one item is ever parsed
 * at a time, so memory holds the page's text, not a tree of all of it.
 * Items may have been delivered when a decode error is returned (the
 * caller then retries the whole list). *continue_token (NULL on the last
 * page) and *resource_version are new strings on success.
 */
int kube_list_page_each(struct kube_client *c, const struct kube_resource *r, const char *ns,
			const struct kube_list_options *opts, kube_list_item_fn fn, void *ctx,
			char **continue_token, char **resource_version, struct kube_error *err)
	__attribute__((warn_unused_result));

/*
 * Every page of a LIST (page_size items a page; 0 = 100); *items is a new
 * array of the items and *rv (may be NULL) a new string with the list's
 * resourceVersion.
 */
int kube_list_all(struct kube_client *c, const struct kube_resource *r, const char *ns,
		  const char *label_selector, long page_size, json_t **items, char **rv,
		  struct kube_error *err) __attribute__((warn_unused_result));

/* POST; obj is borrowed. *out (may be NULL) is the created object. */
int kube_create(struct kube_client *c, const struct kube_resource *r, const char *ns,
		const json_t *obj, json_t **out, struct kube_error *err)
	__attribute__((warn_unused_result));

/*
 * POST of obj (borrowed), whose metadata.name is one nobody else makes (an
 * Event's "<object>.<nanoseconds>"): a resent request can then only meet
 * 409 AlreadyExists, its own first send, which counts as success. So it may
 * go on a kept-alive connection, where kube_create opens a new one (and
 * pays a TLS handshake) lest a resend create a second object.
 */
int kube_create_named(struct kube_client *c, const struct kube_resource *r, const char *ns, const json_t *obj,
		      struct kube_error *err) __attribute__((warn_unused_result));

/* PUT of a whole object (or of a subresource when sub is not NULL). */
int kube_replace(struct kube_client *c, const struct kube_resource *r, const char *ns,
		 const char *name, const char *sub, const json_t *obj, json_t **out,
		 struct kube_error *err) __attribute__((warn_unused_result));

enum kube_patch_type {
	KUBE_PATCH_MERGE,   /* application/merge-patch+json (RFC 7386) */
	KUBE_PATCH_JSON,    /* application/json-patch+json (RFC 6902), may carry "test" ops */
};

/* PATCH name (or its subresource sub). patch is borrowed. */
int kube_patch(struct kube_client *c, const struct kube_resource *r, const char *ns,
	       const char *name, const char *sub, enum kube_patch_type type, const json_t *patch,
	       json_t **out, struct kube_error *err) __attribute__((warn_unused_result));

struct kube_delete_options {
	const char *propagation_policy; /* "Orphan", "Background", "Foreground" or NULL */
	const char *precondition_uid;
	const char *precondition_resource_version;
	const long *grace_period_seconds; /* NULL = the object's default; 0 = at once */
};

int kube_delete(struct kube_client *c, const struct kube_resource *r, const char *ns,
		const char *name, const struct kube_delete_options *opts, struct kube_error *err)
	__attribute__((warn_unused_result));

/*
 * Changes an object in place for kube_update_retry. Returns 0 to PUT it,
 * 1 when no change is needed (nothing is sent), negative to give up.
 */
typedef int (*kube_mutate_fn)(void *ctx, json_t *obj);

/*
 * GET, mutate, PUT; on 409 Conflict (someone changed it since the GET),
 * again from the GET, up to max_attempts (client-go's RetryOnConflict).
 * *out (may be NULL) receives the object as stored. Returns 0, 1 when
 * mutate said no change was needed, or the error of the last attempt.
 */
int kube_update_retry(struct kube_client *c, const struct kube_resource *r, const char *ns,
		      const char *name, kube_mutate_fn mutate, void *ctx, int max_attempts,
		      json_t **out, struct kube_error *err) __attribute__((warn_unused_result));

struct kube_watch_options {
	const char *resource_version;
	const char *label_selector;
	const char *field_selector;
	long timeout_seconds;         /* server-side end of the watch; 0 = server default */
	bool allow_bookmarks;
	/*
	 * Called (with the watch's ctx) for an event over
	 * KUBE_OBJECT_MAX_PARSED, which is then not delivered; NULL: such an
	 * event ends the watch (KUBE_EDECODE).
	 */
	kube_oversize_fn on_oversize;
};

/*
 * Called for each watch event with its type (ADDED, MODIFIED, DELETED,
 * BOOKMARK, ERROR) and object (borrowed, valid during the call). Return 0
 * to go on, non-zero to end the watch.
 */
typedef int (*kube_watch_fn)(void *ctx, const char *type, json_t *object);

/*
 * Streams a WATCH until the server ends it (returns 0), fn asks to end
 * (returns 0), *stop becomes true (checked at least once a second;
 * returns KUBE_ESTOPPED), or an error.
 */
int kube_watch(struct kube_client *c, const struct kube_resource *r, const char *ns,
	       const struct kube_watch_options *opts, kube_watch_fn fn, void *ctx,
	       const atomic_bool *stop, struct kube_error *err) __attribute__((warn_unused_result));

#endif
