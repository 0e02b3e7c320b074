#include "client/kube_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client_internal.h"
#include "client/kube_credentials.h"
#include "client/list_scan.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define LIST_PAGE_DEFAULT 100

/* One level less than a watch event, which wraps the object (watch_decoder.c). */
const struct doc_limits kube_object_limits = {
	.max_bytes = KUBE_RESPONSE_MAX,
	.max_depth = DOC_MAX_DEPTH - 1,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = KUBE_RESPONSE_MAX,
	.max_parsed_bytes = KUBE_OBJECT_MAX_PARSED,
	.budget = "the budget for an object from the API server",
};

/* An error answer: only its Status' reason and message are wanted. */
static const struct doc_limits status_limits = {
	.max_bytes = KUBE_RESPONSE_MAX,
	.max_depth = DOC_MAX_DEPTH,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = KUBE_RESPONSE_MAX,
	.max_parsed_bytes = 1u << 20,
	.budget = "the budget for an error answer",
};

/* A List's own metadata (continue, resourceVersion): a few short strings. */
static const struct doc_limits list_meta_limits = {
	.max_bytes = 64u << 10,
	.max_depth = DOC_MAX_DEPTH,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = 64u << 10,
	.max_parsed_bytes = 1u << 20,
	.budget = "the budget for a List's metadata",
};

/* KUBE_OBJECT_PARSES_AT_ONCE: the slots of parse-and-apply, process-wide. */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_free = PTHREAD_COND_INITIALIZER;
static int slots_taken;

void kube__object_slot_take(void)
{
	pthread_mutex_lock(&slots_lock);
	while (slots_taken >= KUBE_OBJECT_PARSES_AT_ONCE)
		pthread_cond_wait(&slots_free, &slots_lock);
	slots_taken++;
	pthread_mutex_unlock(&slots_lock);
}

void kube__object_slot_give(void)
{
	pthread_mutex_lock(&slots_lock);
	slots_taken--;
	pthread_cond_signal(&slots_free);
	pthread_mutex_unlock(&slots_lock);
}

/*
 * Retry-After is honoured up to this per wait and this in all for one
 * request: a server asking for more gets the error back sooner, and the
 * caller's work queue backs off from there.
 */
#define RETRY_AFTER_MAX_MS 5000L
#define RETRY_SLEEP_BUDGET_MS 15000L

/* Non-watch requests give up on a stalled transfer (below 1 KiB/s for this long). */
#define LOW_SPEED_BYTES 1024L
#define LOW_SPEED_SECONDS_DEFAULT 30L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_global(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		abort();
}

void kube__set_error(struct kube_error *err, long code, const char *reason, const char *fmt, ...)
{
	err->code = code;
	snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

void kube__clear_error(struct kube_error *err)
{
	err->code = 0;
	err->reason[0] = '\0';
	err->message[0] = '\0';
	err->maybe_done = false;
}

/* Fills err from an error answer: the API Status when there is one, else the raw body. */
void kube__error_from_body(struct kube_error *err, long code, const char *body, size_t len)
{
	json_t *st = NULL;
	char *msg = NULL;
	if (len && json_load_limited(body, len, 0, &status_limits, &st, &msg) < 0)
		free(msg);
	const char *reason = st ? json_string_value(json_object_get(st, "reason")) : NULL;
	const char *message = st ? json_string_value(json_object_get(st, "message")) : NULL;
	if (message)
		kube__set_error(err, code, reason, "%s", message);
	else
		kube__set_error(err, code, reason, "HTTP %ld: %.200s", code, len ? body : "(empty body)");
	json_decref(st);
}

static void thread_handle_destroy(void *p)
{
	struct thread_handle *th = p;
	struct kube_client *c = th->client;
	pthread_mutex_lock(&c->handles_lock);
	for (struct thread_handle **pp = &c->handles; *pp; pp = &(*pp)->next) {
		if (*pp == th) {
			*pp = th->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->handles_lock);
	curl_easy_cleanup(th->curl);
	free(th);
}

/* This thread's handle, made on first use; reused so connections are kept alive. */
CURL *kube__thread_curl(struct kube_client *c)
{
	struct thread_handle *th = pthread_getspecific(c->handle_key);
	if (th)
		return th->curl;
	th = xcalloc(1, sizeof(*th));
	th->curl = curl_easy_init();
	if (!th->curl)
		abort();
	th->client = c;
	pthread_mutex_lock(&c->handles_lock);
	th->next = c->handles;
	c->handles = th;
	pthread_mutex_unlock(&c->handles_lock);
	if (pthread_setspecific(c->handle_key, th))
		abort();
	return th->curl;
}

/* Splits the server URL so that tls_server_name can be both SNI and the name verified. */
static int setup_url(struct kube_client *c, char **err)
{
	const char *server = c->cfg.server;
	if (!server || !*server) {
		*err = xstrdup("the config has no server URL");
		return -1;
	}
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
	/* Messages show the URL without userinfo: it may hold a password. */
	char *shown = kube_url_redact(server);
	int rc = -1;
	if (!u || curl_url_set(u, CURLUPART_URL, server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		*err = xasprintf("server URL %s is not a valid URL", shown);
		goto out;
	}
	if (strcmp(scheme, "https") && strcmp(scheme, "http")) {
		*err = xasprintf("server URL %s: scheme must be https (or http)", shown);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK || strcmp(shown, server)) {
		/* libcurl would send it as Basic auth on every request. */
		*err = xasprintf("server URL %s carries a user name or password", shown);
		goto out;
	}
	if (c->cfg.tls_server_name && *c->cfg.tls_server_name) {
		c->url_base = xasprintf("%s://%s:%s", scheme, c->cfg.tls_server_name, port);
		char *entry = xasprintf("%s:%s:%s:%s", c->cfg.tls_server_name, port, host, port);
		c->connect_to = curl_slist_append(NULL, entry);
		free(entry);
		if (!c->connect_to)
			abort();
	} else {
		size_t n = strlen(server);
		while (n && server[n - 1] == '/')
			n--;
		c->url_base = xstrndup(server, n);
	}
	rc = 0;
out:
	free(shown);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(user);
	curl_url_cleanup(u);
	return rc;
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ctx)
{
	(void)h;
	(void)access;
	struct kube_client *c = ctx;
	pthread_mutex_lock(&c->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	(void)h;
	struct kube_client *c = ctx;
	pthread_mutex_unlock(&c->share_locks[data]);
}

static CURLSH *share_new(struct kube_client *c)
{
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->share_locks[i], NULL);
	CURLSH *sh = curl_share_init();
	if (!sh || curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock) ||
	    curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock) ||
	    curl_share_setopt(sh, CURLSHOPT_USERDATA, c) ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION))
		abort(); /* libcurl >= 7.57 has all of these */
	return sh;
}

static void share_free(struct kube_client *c)
{
	curl_share_cleanup(c->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_locks[i]);
}

struct kube_client *kube_client_new(struct kube_config *cfg, const struct kube_client_options *opts,
				    char **err)
{
	pthread_once(&curl_once, curl_global);
	struct kube_client *c = xcalloc(1, sizeof(*c));
	c->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	if (opts)
		c->opts = *opts;
	if (c->opts.max_retries == 0)
		c->opts.max_retries = 5;
	else if (c->opts.max_retries < 0)
		c->opts.max_retries = 0;
	if (c->opts.request_timeout_ms <= 0)
		c->opts.request_timeout_ms = 60000;
	if (c->opts.low_speed_seconds <= 0)
		c->opts.low_speed_seconds = LOW_SPEED_SECONDS_DEFAULT;
	c->user_agent = xstrdup(c->opts.user_agent ? c->opts.user_agent : "stateful-operator");
	c->opts.user_agent = c->user_agent;
	pthread_mutex_init(&c->handles_lock, NULL);
	pthread_mutex_init(&c->auth_lock, NULL);
	pthread_cond_init(&c->exec_cond, NULL);
	c->share = share_new(c);
	if (pthread_key_create(&c->handle_key, thread_handle_destroy)) {
		*err = xstrdup("cannot create thread key");
		goto fail;
	}
	if (setup_url(c, err) < 0) {
		pthread_key_delete(c->handle_key);
		goto fail;
	}
	return c;
fail:
	share_free(c);
	pthread_mutex_destroy(&c->handles_lock);
	pthread_mutex_destroy(&c->auth_lock);
	pthread_cond_destroy(&c->exec_cond);
	kube_config_release(&c->cfg);
	free(c->user_agent);
	free(c);
	return NULL;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	kube__auth_release(c);
	/* Handles of threads still alive; the caller has stopped those threads. */
	pthread_key_delete(c->handle_key);
	struct thread_handle *th = c->handles;
	while (th) {
		struct thread_handle *next = th->next;
		curl_easy_cleanup(th->curl);
		free(th);
		th = next;
	}
	share_free(c); /* after every handle that used it */
	pthread_mutex_destroy(&c->handles_lock);
	pthread_mutex_destroy(&c->auth_lock);
	pthread_cond_destroy(&c->exec_cond);
	kube_exec_credential_release(&c->exec_cred);
	free(c->exec_err);
	free(c->file_token);
	free(c->url_base);
	curl_slist_free_all(c->connect_to);
	free(c->user_agent);
	kube_config_release(&c->cfg);
	free(c);
}

void kube_client_set_observer(struct kube_client *c, kube_request_observer fn, void *ctx)
{
	c->observer = fn;
	c->observer_ctx = ctx;
}

const char *kube_client_namespace(const struct kube_client *c)
{
	return c->cfg.namespace;
}

const char *kube_client_server(const struct kube_client *c)
{
	return c->cfg.server;
}

static void set_blob(CURL *h, CURLoption opt, const struct kube_blob *b)
{
	struct curl_blob blob = {b->data, b->len, CURL_BLOB_COPY};
	curl_easy_setopt(h, opt, &blob);
}

/* The server's certificate checked against ca_file (NULL: the config's CA) unless insecure. */
static void setup_server_check(struct kube_client *c, CURL *h, const char *ca_file, bool insecure)
{
	if (insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	}
	if (ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
	else if (c->cfg.ca_data.data)
		set_blob(h, CURLOPT_CAINFO_BLOB, &c->cfg.ca_data);
	else if (c->cfg.ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg.ca_file);
}

/* The client certificate, for the API server only: the exec plugin's, else the config's. */
static void setup_client_cert(struct kube_client *c, CURL *h, const struct request_auth *auth)
{
	if (auth->cert.data) {
		set_blob(h, CURLOPT_SSLCERT_BLOB, &auth->cert);
		set_blob(h, CURLOPT_SSLKEY_BLOB, &auth->key);
	} else if (c->cfg.cert_data.data) {
		set_blob(h, CURLOPT_SSLCERT_BLOB, &c->cfg.cert_data);
		set_blob(h, CURLOPT_SSLKEY_BLOB, &c->cfg.key_data);
	} else if (c->cfg.cert_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cfg.cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->cfg.key_file);
	}
}

/* One "Name: value" header appended (values were checked for control characters when configured). */
static struct curl_slist *add_header(struct curl_slist *headers, const char *name, const char *value)
{
	char *hdr = xasprintf("%s: %s", name, value);
	headers = curl_slist_append(headers, hdr);
	free(hdr);
	return headers;
}

/*
 * Accept, Content-Type, Authorization and, to the API server, the
 * Impersonate-* headers of cfg (NULL: none); set on h, returned for the
 * caller to free.
 */
static struct curl_slist *setup_headers(CURL *h, const char *content_type, const char *bearer,
					const struct kube_config *cfg)
{
	struct curl_slist *headers = NULL;
	headers = curl_slist_append(headers, "Accept: application/json");
	if (cfg && cfg->impersonate_user) {
		headers = add_header(headers, "Impersonate-User", cfg->impersonate_user);
		for (size_t i = 0; i < cfg->nimpersonate_groups; i++)
			headers = add_header(headers, "Impersonate-Group", cfg->impersonate_groups[i]);
		if (cfg->impersonate_uid)
			headers = add_header(headers, "Impersonate-Uid", cfg->impersonate_uid);
	}
	if (content_type) {
		char *ct = xasprintf("Content-Type: %s", content_type);
		headers = curl_slist_append(headers, ct);
		free(ct);
	}
	if (bearer) {
		char *hdr = xasprintf("Authorization: Bearer %s", bearer);
		headers = curl_slist_append(headers, hdr);
		explicit_bzero(hdr, strlen(hdr));
		free(hdr);
	}
	if (!headers)
		abort();
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	return headers;
}

/* What every request sets, to the API server or elsewhere. */
static void setup_common(struct kube_client *c, CURL *h, const char *url)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	/* Redirects are never followed: credentials must not travel. */
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
}

/* Options common to every request on a handle, after curl_easy_reset. */
struct curl_slist *kube__setup_handle(struct kube_client *c, CURL *h, const char *method,
				       const char *url, const char *content_type,
				       const struct request_auth *auth)
{
	setup_common(c, h, url);
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (c->connect_to)
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
	setup_server_check(c, h, NULL, c->cfg.insecure_skip_tls_verify);
	setup_client_cert(c, h, auth);
	return setup_headers(h, content_type, auth->bearer, &c->cfg);
}

struct curl_slist *kube_credentials_setup_bearer_get(struct kube_client *c, CURL *h, const char *url,
						     const struct kube_tls_check *tls, const char *bearer)
{
	/* Not the client's share: a connection to a kubelet must not push out the API server's. */
	setup_common(c, h, url);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	/* The server is checked as the API server is; the client's own certificate and token never go. */
	setup_server_check(c, h, tls->ca_file, tls->insecure);
	return setup_headers(h, NULL, bearer, NULL);
}

/* Where a response body goes: capped, and the cap's refusal told apart from curl's own errors. */
struct body_sink {
	struct strbuf *sb;
	bool too_big;
};

static size_t collect_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct body_sink *bs = userp;
	size_t n = size * nmemb;
	if (strbuf_add(bs->sb, data, n) < 0) {
		bs->too_big = true;
		return 0;
	}
	return n;
}

static bool retryable(long code)
{
	return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
}

/* Failures where nothing reached the server: any request may be sent again. */
static bool not_sent(CURLcode cc)
{
	return cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY ||
	       cc == CURLE_COULDNT_CONNECT || cc == CURLE_SSL_CONNECT_ERROR;
}

static bool json_str_set(const json_t *v)
{
	return json_string_length(v) > 0;
}

/* A JSON patch guarded by a test of resourceVersion, or by any test with only replace ops besides. */
static bool json_patch_guarded(const json_t *ops)
{
	bool test = false, only_replace = true;
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		const char *name = json_string_value(json_object_get(op, "op"));
		const char *path = json_string_value(json_object_get(op, "path"));
		if (name && !strcmp(name, "test")) {
			if (path && !strcmp(path, "/metadata/resourceVersion"))
				return true;
			test = true;
		} else if (!name || strcmp(name, "replace")) {
			only_replace = false;
		}
	}
	return test && only_replace;
}

bool kube__repeat_is_harmless(const char *method, const char *content_type, const char *body)
{
	if (!strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "PUT"))
		return true;
	bool del = !strcmp(method, "DELETE");
	if (!del && strcmp(method, "PATCH"))
		return false; /* POST: a second create, eviction or binding is a second act */
	json_t *doc = body ? json_loads(body, 0, NULL) : NULL;
	bool harmless;
	if (del) {
		const json_t *pre = json_object_get(doc, "preconditions");
		harmless = json_str_set(json_object_get(pre, "uid")) ||
			   json_str_set(json_object_get(pre, "resourceVersion"));
	} else if (content_type && !strcmp(content_type, "application/json-patch+json")) {
		harmless = json_patch_guarded(doc);
	} else {
		const json_t *meta = json_object_get(doc, "metadata");
		harmless = json_str_set(json_object_get(meta, "resourceVersion")) ||
			   json_str_set(json_object_get(meta, "uid"));
	}
	json_decref(doc);
	return harmless;
}

/* Delay before retry number attempt (0-based): Retry-After when given (capped), else 100 ms * 2^n with jitter. */
static long retry_delay_ms(CURL *h, int attempt)
{
	struct curl_header *hdr = NULL;
	if (h && curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK) {
		char *end;
		long secs = strtol(hdr->value, &end, 10);
		if (end != hdr->value && secs >= 0)
			return secs > RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS : secs * 1000;
	}
	long base = 100L << (attempt > 7 ? 7 : attempt);
	return base + rand() % (base / 2 + 1);
}

double kube__now_seconds(void)
{
	return clock_mono_ms() / 1e3;
}

static bool is_mutation(const char *method)
{
	return strcmp(method, "GET") != 0;
}

/*
 * Appends dryRun=All to a mutation's path when the client is in dry-run
 * mode, but for a POST that stores nothing (stores_nothing). New string.
 */
static char *effective_url(struct kube_client *c, const char *method, const char *path, bool stores_nothing)
{
	if (c->opts.dry_run && is_mutation(method) && !stores_nothing) {
		log_info("client", "dry-run: %s %s", method, path);
		return xasprintf("%s%s%cdryRun=All", c->url_base, path, strchr(path, '?') ? '&' : '?');
	}
	return xasprintf("%s%s", c->url_base, path);
}

/* A request's own bounds where the client's do not fit; NULL: the client's. */
struct request_limits {
	int max_retries;  /* 0: sent once */
	long timeout_ms;
	bool stores_nothing; /* a POST the server keeps nothing of (TokenRequest): sent as is in dry-run mode */
};

/*
 * The request loop: on success resp holds the 2xx body (raw bytes).
 * A request that may have reached the server is sent again only when a
 * repeat is harmless (kube__repeat_is_harmless, or dry-run); 429 is
 * always retried (the server turned it away unhandled).
 */
static int request_raw(struct kube_client *c, const char *method, const char *path,
		       const char *content_type, const char *body, bool repeat_ok,
		       const struct request_limits *lim, struct strbuf *resp, struct kube_error *err)
{
	int max_retries = lim ? lim->max_retries : c->opts.max_retries;
	long timeout_ms = lim ? lim->timeout_ms : c->opts.request_timeout_ms;
	CURL *h = kube__thread_curl(c);
	bool stores_nothing = lim && lim->stores_nothing;
	char *url = effective_url(c, method, path, stores_nothing);
	bool refreshed_auth = false;
	bool repeatable = repeat_ok || stores_nothing || (c->opts.dry_run && is_mutation(method)) ||
			  kube__repeat_is_harmless(method, content_type, body);
	long slept_ms = 0;
	int rc = KUBE_ETRANSPORT;
	bool answer_lost = false; /* an attempt of a write may have been done */
	kube__clear_error(err);

	for (int attempt = 0;; attempt++) {
		struct request_auth auth;
		char *auth_err = NULL;
		if (kube__get_auth(c, refreshed_auth, &auth, &auth_err) < 0) {
			kube__set_error(err, 0, "", "%s", auth_err);
			free(auth_err);
			rc = KUBE_EAUTH;
			break;
		}
		curl_easy_reset(h);
		struct curl_slist *headers = kube__setup_handle(c, h, method, url, content_type, &auth);
		char curl_err[CURL_ERROR_SIZE] = "";
		struct body_sink sink = {resp, false};
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
		/* Set here, not in kube__setup_handle: an idle watch is not a stall. */
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->opts.low_speed_seconds);
		/*
		 * libcurl silently resends a request once when a kept-alive
		 * connection dies before any answer; a write that must not be
		 * repeated goes on a connection of its own.
		 */
		if (!repeatable)
			curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
		if (body) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		}
		strbuf_reset(resp);
		double start = kube__now_seconds();
		CURLcode cc = curl_easy_perform(h);
		long code = 0;
		if (cc == CURLE_OK || sink.too_big)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		if (c->observer)
			c->observer(c->observer_ctx, method, code, kube__now_seconds() - start);
		curl_slist_free_all(headers);
		kube__request_auth_release(&auth);

		if (sink.too_big) {
			/* The same answer would come again: not retried. */
			kube__set_error(err, code, "", "%s %s: answer larger than %u MiB", method, path,
					KUBE_RESPONSE_MAX >> 20);
			rc = KUBE_ETOOLARGE;
			break;
		} else if (cc != CURLE_OK) {
			kube__set_error(err, 0, "", "%s %s: %s", method, path,
				  curl_err[0] ? curl_err : curl_easy_strerror(cc));
			rc = KUBE_ETRANSPORT;
			answer_lost |= !not_sent(cc);
			if (!repeatable && !not_sent(cc)) {
				log_debug("client", "%s %s: %s; not retried (the server may have done it)",
					  method, path, err->message);
				break;
			}
		} else if (code >= 200 && code < 300) {
			rc = KUBE_OK;
			break;
		} else {
			kube__error_from_body(err, code, resp->buf, resp->len);
			rc = KUBE_EHTTP;
			if (code == 401 && !refreshed_auth && (c->cfg.token_file || c->cfg.exec)) {
				/* A rotated token or expired plugin credential: fetch anew once. */
				refreshed_auth = true;
				continue;
			}
			answer_lost |= code >= 500;
			if (!retryable(code) || (code != 429 && !repeatable))
				break;
		}
		if (attempt >= max_retries)
			break;
		long delay = retry_delay_ms(cc == CURLE_OK ? h : NULL, attempt);
		if (slept_ms + delay > RETRY_SLEEP_BUDGET_MS)
			break;
		slept_ms += delay;
		log_debug("client", "%s %s: %s; retry %d in %ld ms", method, path, err->message,
			  attempt + 1, delay);
		clock_sleep_ms(delay);
	}
	if (rc != KUBE_OK)
		err->maybe_done = answer_lost && is_mutation(method);
	free(url);
	return rc;
}

/* kube_request; repeat_ok: the caller knows a resend is harmless where the body does not show it. */
static int request_json(struct kube_client *c, const char *method, const char *path, const char *content_type,
			const char *body, bool repeat_ok, const struct request_limits *lim, json_t **out,
			struct kube_error *err)
{
	struct strbuf resp;
	strbuf_init(&resp, KUBE_RESPONSE_MAX);
	if (out)
		*out = NULL;
	int rc = request_raw(c, method, path, content_type, body, repeat_ok, lim, &resp, err);
	if (rc == KUBE_OK && out && resp.len) {
		char *msg = NULL;
		int jrc = json_load_limited(resp.buf, resp.len, 0, &kube_object_limits, out, &msg);
		if (jrc == DOC_TOO_LARGE) {
			/* A LIST page asks for fewer items (see kube_list_all); one object is refused. */
			kube__set_error(err, 200, "", "%s %s: answer refused: %s", method, path, msg);
			rc = KUBE_ETOOLARGE;
		} else if (jrc < 0) {
			kube__set_error(err, 200, "", "%s %s: answer is not JSON: %s", method, path, msg);
			rc = KUBE_EDECODE;
		}
		free(msg);
	}
	if (lim && lim->stores_nothing && resp.buf)
		explicit_bzero(resp.buf, resp.len); /* a minted token's text */
	strbuf_release(&resp);
	return rc;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, json_t **out, struct kube_error *err)
{
	return request_json(c, method, path, content_type, body, false, NULL, out, err);
}

int kube__post_stores_nothing(struct kube_client *c, const char *path, const char *body, json_t **out,
			      struct kube_error *err)
{
	struct request_limits lim = {c->opts.max_retries, c->opts.request_timeout_ms, true};
	return request_json(c, "POST", path, "application/json", body, true, &lim, out, err);
}

static int get_text(struct kube_client *c, const char *path, const struct request_limits *lim, char **out,
		    struct kube_error *err)
{
	struct strbuf resp;
	strbuf_init(&resp, KUBE_RESPONSE_MAX);
	*out = NULL;
	int rc = request_raw(c, "GET", path, NULL, NULL, true, lim, &resp, err);
	if (rc == KUBE_OK)
		*out = resp.buf ? strbuf_detach(&resp) : xstrdup("");
	strbuf_release(&resp);
	return rc;
}

int kube_get_text(struct kube_client *c, const char *path, char **out, struct kube_error *err)
{
	return get_text(c, path, NULL, out, err);
}

int kube_get_text_once(struct kube_client *c, const char *path, long timeout_ms, char **out,
		       struct kube_error *err)
{
	struct request_limits lim = {0, timeout_ms > 0 ? timeout_ms : c->opts.request_timeout_ms, false};
	return get_text(c, path, &lim, out, err);
}

static char *json_body(const json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);
	if (!s)
		abort();
	return s;
}

int kube_get(struct kube_client *c, const struct kube_resource *r, const char *ns,
	     const char *name, json_t **out, struct kube_error *err)
{
	char *path = kube_resource_path(r, ns, name, NULL);
	int rc = kube_request(c, "GET", path, NULL, NULL, out, err);
	free(path);
	return rc;
}

void kube__add_query(struct strbuf *sb, const char *key, const char *value)
{
	if (!value || !*value)
		return;
	char *esc = curl_easy_escape(NULL, value, 0);
	if (!esc || strbuf_addf(sb, "%c%s=%s", strchr(strbuf_str(sb), '?') ? '&' : '?', key, esc) < 0)
		abort();
	curl_free(esc);
}

void kube__add_query_long(struct strbuf *sb, const char *key, long value)
{
	if (value <= 0)
		return;
	char num[32];
	snprintf(num, sizeof(num), "%ld", value);
	kube__add_query(sb, key, num);
}

/* The LIST path with its query. New string. */
static char *list_path(const struct kube_resource *r, const char *ns,
		       const struct kube_list_options *opts)
{
	struct strbuf sb = STRBUF_INIT;
	char *base = kube_resource_path(r, ns, NULL, NULL);
	if (strbuf_addstr(&sb, base) < 0)
		abort();
	free(base);
	if (opts) {
		kube__add_query(&sb, "labelSelector", opts->label_selector);
		kube__add_query(&sb, "fieldSelector", opts->field_selector);
		kube__add_query_long(&sb, "limit", opts->limit);
		kube__add_query(&sb, "continue", opts->continue_token);
		kube__add_query(&sb, "resourceVersion", opts->resource_version);
	}
	return strbuf_detach(&sb);
}

int kube_list_page(struct kube_client *c, const struct kube_resource *r, const char *ns,
		   const struct kube_list_options *opts, json_t **out, struct kube_error *err)
{
	char *path = list_path(r, ns, opts);
	int rc = kube_request(c, "GET", path, NULL, NULL, out, err);
	if (rc == KUBE_OK && (!*out || !json_is_array(json_object_get(*out, "items")))) {
		kube__set_error(err, 200, "", "LIST %s: answer has no items", r->plural);
		json_decref(*out);
		*out = NULL;
		rc = KUBE_EDECODE;
	}
	free(path);
	return rc;
}

struct each_item {
	kube_list_item_fn fn;
	kube_oversize_fn on_oversize; /* or NULL: an item over budget fails the page */
	void *ctx;
	char bad_item[JSON_ERROR_TEXT_LENGTH + 32]; /* why an item could not be read; "" when none */
};

/* Parses one item and hands it over, within a slot (KUBE_OBJECT_PARSES_AT_ONCE). */
static int parse_item(void *ctx, const char *text, size_t len)
{
	struct each_item *ei = ctx;
	json_t *item = NULL;
	char *msg = NULL;
	int rc = 0;
	kube__object_slot_take();
	int jrc = json_load_limited(text, len, 0, &kube_object_limits, &item, &msg);
	if (jrc == DOC_TOO_LARGE && ei->on_oversize) {
		/* Out of the slot: the callback may log and record an Event. */
		kube__object_slot_give();
		struct kube_object_id id;
		kube_object_id_peek(text, len, &id);
		rc = ei->on_oversize(ei->ctx, NULL, &id, msg);
		free(msg);
		return rc;
	} else if (!json_is_object(item)) {
		if (jrc == DOC_TOO_LARGE) {
			snprintf(ei->bad_item, sizeof(ei->bad_item), "an item is refused: %s", msg);
		} else if (item) {
			snprintf(ei->bad_item, sizeof(ei->bad_item), "an item is not a JSON object");
		} else {
			/*
			 * jansson's words say why (nesting past its 2048 levels, say),
			 * without its "near '...'": that quotes the text, perhaps a Secret's.
			 */
			char *near = strstr(msg, " near ");
			if (near)
				*near = '\0';
			snprintf(ei->bad_item, sizeof(ei->bad_item), "an item is not JSON: %s", msg);
		}
		rc = -1;
	} else {
		ei->fn(ei->ctx, item);
	}
	json_decref(item);
	kube__object_slot_give();
	free(msg);
	return rc;
}

int kube_list_page_each(struct kube_client *c, const struct kube_resource *r, const char *ns,
			const struct kube_list_options *opts, kube_list_item_fn fn, void *ctx,
			char **continue_token, char **resource_version, struct kube_error *err)
{
	*continue_token = NULL;
	*resource_version = NULL;
	char *path = list_path(r, ns, opts);
	struct strbuf resp;
	strbuf_init(&resp, KUBE_RESPONSE_MAX);
	int rc = request_raw(c, "GET", path, NULL, NULL, false, NULL, &resp, err);
	if (rc == KUBE_OK) {
		struct each_item ei = {fn, opts ? opts->on_oversize : NULL, ctx, ""};
		const char *meta_text = NULL;
		size_t meta_len = 0;
		json_t *meta = NULL;
		char *msg = NULL;
		if (list_scan(resp.buf ? resp.buf : "", resp.len, parse_item, &ei, &meta_text, &meta_len) ||
		    !meta_text || json_load_limited(meta_text, meta_len, 0, &list_meta_limits, &meta, &msg) < 0) {
			kube__set_error(err, 200, "", "LIST %s: answer is not a List%s%s%s", r->plural,
				  ei.bad_item[0] ? " (" : "", ei.bad_item, ei.bad_item[0] ? ")" : "");
			rc = KUBE_EDECODE;
			free(msg);
		} else {
			const char *cont = json_string_value(json_object_get(meta, "continue"));
			const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
			*continue_token = cont && *cont ? xstrdup(cont) : NULL;
			*resource_version = xstrdup(rv ? rv : "");
		}
		json_decref(meta);
	}
	strbuf_release(&resp);
	free(path);
	return rc;
}

int kube_list_all(struct kube_client *c, const struct kube_resource *r, const char *ns,
		  const char *label_selector, long page_size, json_t **items, char **rv,
		  struct kube_error *err)
{
	json_t *all = json_array();
	char *cont = NULL;
	int rc;
	long limit = page_size > 0 ? page_size : LIST_PAGE_DEFAULT;
	*items = NULL;
	if (rv)
		*rv = NULL;
	for (;;) {
		struct kube_list_options lo = {.label_selector = label_selector,
					       .limit = limit,
					       .continue_token = cont};
		json_t *page = NULL;
		rc = kube_list_page(c, r, ns, &lo, &page, err);
		if (rc == KUBE_ETOOLARGE && limit > 1) {
			/* Over the text cap or the parse budget: fewer items a page, down to one. */
			limit /= 2;
			continue;
		}
		if (rc != KUBE_OK && cont && err->code == 410) {
			/* The continue token expired mid-list: start over for a consistent snapshot. */
			FREE_AND_NULL(cont);
			json_array_clear(all);
			continue;
		}
		if (rc != KUBE_OK)
			break;
		json_array_extend(all, json_object_get(page, "items"));
		const char *next = kube_obj_str(page, "metadata.continue");
		if (rv && (!next || !*next)) {
			const char *v = kube_obj_str(page, "metadata.resourceVersion");
			*rv = xstrdup(v ? v : "");
		}
		free(cont);
		cont = next && *next ? xstrdup(next) : NULL;
		json_decref(page);
		if (!cont)
			break;
	}
	free(cont);
	if (rc == KUBE_OK)
		*items = all;
	else
		json_decref(all);
	return rc;
}

/* Sends obj (borrowed) as the body of method to the resource path. */
static int send_object(struct kube_client *c, const char *method, const struct kube_resource *r,
		       const char *ns, const char *name, const char *sub, const char *content_type,
		       const json_t *obj, json_t **out, struct kube_error *err)
{
	char *path = kube_resource_path(r, ns, name, sub);
	char *body = json_body(obj);
	int rc = kube_request(c, method, path, content_type, body, out, err);
	free(body);
	free(path);
	return rc;
}

int kube_create(struct kube_client *c, const struct kube_resource *r, const char *ns,
		const json_t *obj, json_t **out, struct kube_error *err)
{
	return send_object(c, "POST", r, ns, NULL, NULL, "application/json", obj, out, err);
}

int kube_create_named(struct kube_client *c, const struct kube_resource *r, const char *ns, const json_t *obj,
		      struct kube_error *err)
{
	char *path = kube_resource_path(r, ns, NULL, NULL);
	char *body = json_body(obj);
	int rc = request_json(c, "POST", path, "application/json", body, true, NULL, NULL, err);
	if (rc < 0 && err->code == 409 && !strcmp(err->reason, "AlreadyExists"))
		rc = KUBE_OK; /* a resend of our own request: the name is one nobody else makes */
	free(body);
	free(path);
	return rc;
}

int kube_replace(struct kube_client *c, const struct kube_resource *r, const char *ns,
		 const char *name, const char *sub, const json_t *obj, json_t **out,
		 struct kube_error *err)
{
	return send_object(c, "PUT", r, ns, name, sub, "application/json", obj, out, err);
}

int kube_patch(struct kube_client *c, const struct kube_resource *r, const char *ns,
	       const char *name, const char *sub, enum kube_patch_type type, const json_t *patch,
	       json_t **out, struct kube_error *err)
{
	const char *ct = type == KUBE_PATCH_JSON ? "application/json-patch+json"
						 : "application/merge-patch+json";
	return send_object(c, "PATCH", r, ns, name, sub, ct, patch, out, err);
}

int kube_delete(struct kube_client *c, const struct kube_resource *r, const char *ns,
		const char *name, const struct kube_delete_options *opts, struct kube_error *err)
{
	char *path = kube_resource_path(r, ns, name, NULL);
	json_t *del = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
	if (opts && opts->propagation_policy)
		json_object_set_new(del, "propagationPolicy", json_string(opts->propagation_policy));
	if (opts && (opts->precondition_uid || opts->precondition_resource_version)) {
		json_t *pre = json_object();
		if (opts->precondition_uid)
			json_object_set_new(pre, "uid", json_string(opts->precondition_uid));
		if (opts->precondition_resource_version)
			json_object_set_new(pre, "resourceVersion",
					    json_string(opts->precondition_resource_version));
		json_object_set_new(del, "preconditions", pre);
	}
	if (opts && opts->grace_period_seconds)
		json_object_set_new(del, "gracePeriodSeconds",
				    json_integer((json_int_t)*opts->grace_period_seconds));
	char *body = json_body(del);
	int rc = kube_request(c, "DELETE", path, "application/json", body, NULL, err);
	free(body);
	json_decref(del);
	free(path);
	return rc;
}

int kube_update_retry(struct kube_client *c, const struct kube_resource *r, const char *ns,
		      const char *name, kube_mutate_fn mutate, void *ctx, int max_attempts,
		      json_t **out, struct kube_error *err)
{
	int rc = KUBE_EHTTP;
	if (out)
		*out = NULL;
	for (int attempt = 0; attempt < max_attempts; attempt++) {
		json_t *obj = NULL;
		rc = kube_get(c, r, ns, name, &obj, err);
		if (rc < 0)
			return rc;
		int m = mutate(ctx, obj);
		if (m != 0) {
			json_decref(obj);
			return m > 0 ? 1 : m;
		}
		rc = kube_replace(c, r, ns, name, NULL, obj, out, err);
		json_decref(obj);
		if (rc != KUBE_EHTTP || err->code != 409)
			return rc;
		log_debug("client", "update %s/%s: conflict, retrying", r->plural, name);
	}
	return rc;
}
