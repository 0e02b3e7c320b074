/*
 * What the usage sources' files share (usage_source.c, usage_kubelet.c,
 * usage_prometheus.c, usage_summary.c). Not for use outside this folder,
 * but for the unit tests.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_USAGE_SOURCE_INTERNAL_H
#define SOP_CONTROLLERS_AUTORESIZE_USAGE_SOURCE_INTERNAL_H

#include <curl/curl.h>
#include <stdbool.h>

#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_token.h"
#include "util/strbuf.h"

/*
 * An answer larger than this is refused, like the client's
 * KUBE_RESPONSE_MAX: a node's summary with 110 pods is about 1 MiB, a
 * Prometheus answer for 1,000 claims (five series each) about 2 MiB.
 */
#define USAGE_RESPONSE_MAX (16u << 20)
/*
 * Heap an answer may take once parsed (util/json_budget.h; measured with
 * bench_parse_cost, see docs/design.md "Parse budgets"): a summary of a
 * node with 110 pods (two containers, four volumes each) costs 2.4 MiB, a
 * Prometheus answer for 1,000 claims 14.2 MiB (about 1,600 fit). Answers
 * are parsed one at a time, on the poller's thread, so the door costs one
 * budget at most. Past it the answer is that node's (or that server's)
 * error, as any bad answer is.
 */
#define USAGE_SUMMARY_MAX_PARSED (16u << 20)
#define USAGE_PROMETHEUS_MAX_PARSED (24u << 20)
/* An error answer: only its message is wanted. */
#define USAGE_ERROR_MAX_PARSED (1u << 20)
#define USAGE_TIMEOUT_DEFAULT_MS 10000L
/*
 * Kubelets asked at once: a node that does not answer (down, or its port
 * filtered) costs the timeout, which must not add up node after node.
 * With the answers' buffers of 1-3 MiB each, a few MiB in all.
 */
#define USAGE_KUBELET_PARALLEL 8

struct usage_source {
	enum usage_source_kind kind;
	struct kube_client *client; /* borrowed */
	char *prometheus_url;       /* without trailing slashes */
	char *prometheus_shown;     /* the same without userinfo, for messages */
	char *prometheus_token_file;
	char *prometheus_ca_file;   /* CA of its serving certificate, or NULL: the system's */
	char *kubelet_ca_file;
	bool kubelet_insecure_tls;
	long timeout_ms;
	const char *kubelet_scheme; /* "https"; see usage__set_kubelet_scheme */
	CURL *curl;                 /* prometheus: this source's own keep-alive handle */
	CURLM *multi;               /* kubelet: the transfers under way, their kept-alive connections */
	CURL *kubelet_curl[USAGE_KUBELET_PARALLEL];
	struct usage_token kubelet_token; /* kubelet: what the kubelets are shown */
};

/*
 * Tests only: the kubelets are asked over scheme ("http" against a
 * scripted server) instead of https. Not an option of the daemon: the
 * token must never go out in clear.
 */
void usage__set_kubelet_scheme(struct usage_source *s, const char *scheme);
/*
 * Tests only: a source made with an https:// Prometheus URL (a token is
 * refused over http) asks it over http (a scripted server that shows the
 * request's headers).
 */
void usage__set_prometheus_plain_http(struct usage_source *s);

/* What one GET on a source's handle brought back. */
struct usage_answer {
	CURLcode cc;
	long code;                 /* HTTP status; 0 without an answer */
	char status_line[128];     /* "HTTP/1.1 403 Forbidden" */
	char curl_err[CURL_ERROR_SIZE];
	bool too_big;
	struct strbuf body;        /* capped at USAGE_RESPONSE_MAX */
};

/*
 * A GET set up on h (URL, credentials): usage__answer_start points h's
 * output at a (initialised there; usage__answer_release frees it) with
 * the source's timeout; usage__answer_end, once the transfer ended with
 * cc, returns 0 for a 2xx answer, else -1 with *why (new): the transport
 * error, or the status and what the body says ("403 Forbidden: ...").
 */
void usage__answer_start(struct usage_source *s, CURL *h, struct usage_answer *a);
int usage__answer_end(CURL *h, struct usage_answer *a, CURLcode cc, char **why);
/* Both around a blocking transfer on s->curl. */
int usage__perform(struct usage_source *s, struct usage_answer *a, char **why);
void usage__answer_release(struct usage_answer *a);

/* Appends a line to errors, as text_sanitize shows it (at most TEXT_QUOTE_MAX bytes): it quotes what a node sent. */
void usage__add_error(json_t *errors, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Adds "namespace/claim" -> u to table unless the claim is there already
 * (a claim mounted by two pods, or on two nodes, is reported twice with
 * the same figures; a node that does not run one of those pods never gets
 * here, see usage__mount_of). True when added.
 */
bool usage__table_add(json_t *table, const char *ns, const char *claim, const struct volume_usage *u);

/* Whether node's figures of claim ns/claim, under pod pod_ns/pod, count (mounts: see usage_source.h). */
enum usage_mount {
	USAGE_MOUNT_YES,        /* that pod runs there and mounts the claim */
	USAGE_MOUNT_NOT_ASKED,  /* no pod the poll looks at mounts it: not read */
	USAGE_MOUNT_OTHER_POD,  /* a pod there mounts it, but the figures come under another pod's name */
	USAGE_MOUNT_WRONG_NODE, /* only pods on other nodes mount it: the node speaks for what is not its own */
};
enum usage_mount usage__mount_of(const json_t *mounts, const char *node, const char *pod_ns, const char *pod,
				 const char *ns, const char *claim);

/* The kubelet sources: one GET of each node's summary. The number of requests sent. */
int usage__poll_kubelets(struct usage_source *s, const struct usage_node *nodes, int nnodes, const json_t *mounts,
			 json_t *table, json_t *errors);
/* One node through the API server: 1 when a request was sent, else 0. */
int usage__poll_kubelet_proxy(struct usage_source *s, const struct usage_node *node, const json_t *mounts,
			      json_t *table, json_t *errors);
/* Prometheus: one instant query. 1 when a request was sent, else 0. */
int usage__poll_prometheus(struct usage_source *s, json_t *table, json_t *errors);

/* base + "/api/v1/query?query=" + the kubelet_volume_stats_* selector, URL-encoded. New string. */
char *usage__prometheus_query_url(const char *base);

#endif
