/*
 * The client's internal tier (libuv's uv__ style): what kube_client.c,
 * kube_auth.c and kube_watch.c share. Not for use outside src/client/.
 */
#ifndef SOP_CLIENT_KUBE_CLIENT_INTERNAL_H
#define SOP_CLIENT_KUBE_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "client/kube_client.h"
#include "util/strbuf.h"

/*
 * A LIST page or an object larger than this is refused (the buffer cap).
 * Pages are 100 items (kube_list_all too), so this allows 160 KiB per
 * item, and a single object (etcd keeps at most 1.5 MiB) fits ten times;
 * informers list one page at a time, so this stays far below the 128 Mi
 * memory limit even with the parsed tree of a page.
 */
#define KUBE_RESPONSE_MAX (16u << 20)

/*
 * A slot of KUBE_OBJECT_PARSES_AT_ONCE: taken before a LIST item or a watch
 * event is parsed, given back once its tree is freed. Waits for one.
 */
void kube__object_slot_take(void);
void kube__object_slot_give(void);

struct thread_handle {
	CURL *curl;
	struct kube_client *client;
	struct thread_handle *next;
};

struct kube_client {
	struct kube_config cfg;
	struct kube_client_options opts;
	char *user_agent;
	char *url_base;        /* scheme://host:port used in URLs (tls_server_name as host when set) */
	struct curl_slist *connect_to; /* CURLOPT_CONNECT_TO list when tls_server_name is set */

	pthread_key_t handle_key;
	pthread_mutex_t handles_lock;
	struct thread_handle *handles;
	/*
	 * Every thread's handle draws on one pool of kept-alive connections and
	 * TLS sessions: a dozen workers that each kept their own idle TLS
	 * connection held 1.5 MB and as many sockets on the API server.
	 */
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];

	pthread_mutex_t auth_lock;
	char *file_token;      /* last token read from cfg.token_file */
	time_t file_token_at;
	struct kube_exec_credential exec_cred;
	bool exec_cred_valid;
	/* The plugin runs without auth_lock (up to 60 s); these say how it went. */
	pthread_cond_t exec_cond;  /* broadcast when a run ends */
	bool exec_running;
	unsigned long exec_runs;   /* runs ended */
	char *exec_err;            /* the last run's error; NULL when it succeeded */
	time_t exec_retry_at;      /* no background renewal before this (after a failed one) */
	pthread_t exec_thread;     /* the background renewal ahead of expiry */
	bool exec_thread_joinable;

	kube_request_observer observer;
	void *observer_ctx;
};

/*
 * The credentials for one request: a bearer token (new string or NULL)
 * and, from an exec plugin, client certificate and key (new blobs).
 */
struct request_auth {
	char *bearer;
	struct kube_blob cert;
	struct kube_blob key;
};

/*
 * Credentials for one request; refresh forces a new read (after a 401).
 * 0, or -1 with *err. An exec credential close to expiry is renewed in
 * the background while the current one is handed out; a caller waits
 * for the plugin only when there is no usable credential.
 */
int kube__get_auth(struct kube_client *c, bool refresh, struct request_auth *a, char **err);
/* Waits for a background renewal; for kube_client_free. */
void kube__auth_release(struct kube_client *c);
void kube__request_auth_release(struct request_auth *a);

/*
 * A POST of body (JSON) to path that the server stores nothing of (a
 * TokenRequest): sent as is in dry-run mode, and sent again after a lost
 * answer (a second one costs nothing). As kube_request otherwise.
 */
int kube__post_stores_nothing(struct kube_client *c, const char *path, const char *body, json_t **out,
			      struct kube_error *err) __attribute__((warn_unused_result));

/* This thread's keep-alive handle. */
CURL *kube__thread_curl(struct kube_client *c);
/* Sets URL, method, TLS and headers on h after curl_easy_reset; returns the header list to free. */
struct curl_slist *kube__setup_handle(struct kube_client *c, CURL *h, const char *method, const char *url,
				      const char *content_type, const struct request_auth *auth);

void kube__set_error(struct kube_error *err, long code, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void kube__clear_error(struct kube_error *err);
/* Fills err from an error answer: the API Status when there is one, else the raw body. */
void kube__error_from_body(struct kube_error *err, long code, const char *body, size_t len);
double kube__now_seconds(void);
/*
 * True when sending this request twice does no harm, so it may be retried
 * after a failure that leaves unknown whether the server acted on it.
 */
bool kube__repeat_is_harmless(const char *method, const char *content_type, const char *body);
void kube__add_query(struct strbuf *sb, const char *key, const char *value);
void kube__add_query_long(struct strbuf *sb, const char *key, long value);

#endif
