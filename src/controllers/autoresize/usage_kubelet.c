/*
 * The kubelet sources: one GET of a node's stats summary per poll, either
 * from the kubelet itself (its port; the token of the source's own
 * ServiceAccount, usage_token.h, never the operator's credentials; the
 * kubelet authorizes nodes/stats) or through the API server's node proxy
 * (nodes/proxy). A failure is one line in errors that names the node, the
 * request and the cause; the other nodes are still asked. Kubelets are
 * asked USAGE_KUBELET_PARALLEL at a time (curl multi, in the calling
 * thread), so nodes that do not answer cost one timeout, not one each.
 * Through the API server they are asked one after another: its client is
 * blocking, and a node down there costs the API server's dial timeout.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_credentials.h"
#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/clock.h"
#include "util/xalloc.h"

/*
 * An IPv4 or IPv6 address or a host name, nothing else: the usage token
 * goes where the URL points, and a node's status is written by the node
 * ("evil.example/?" would send it elsewhere).
 */
static bool address_ok(const char *a)
{
	if (!*a || strlen(a) > 253)
		return false;
	for (; *a; a++)
		if (!isalnum((unsigned char)*a) && !strchr(".-:", *a))
			return false;
	return true;
}

/* "https://10.0.0.5:10250/stats/summary"; an IPv6 address goes in brackets. New string. */
static char *summary_url(const char *scheme, const char *address, int port)
{
	bool v6 = strchr(address, ':') != NULL;
	return xasprintf("%s://%s%s%s:%d/stats/summary", scheme, v6 ? "[" : "", address, v6 ? "]" : "", port);
}

static void add_error(json_t *errors, const char *node, const char *what, const char *why)
{
	usage__add_error(errors, "node %s: %s%s%s", node, what ? what : "", what ? ": " : "", why);
}

/*
 * A node's summary (what = "GET <where>") into table: the claims that pods
 * on it mount. The summary's junk, or the count of volumes it reported of
 * claims mounted on other nodes only (not used), is one line in errors.
 */
static void take_summary(const char *node, const char *what, const char *body, size_t len, const json_t *mounts,
			 json_t *table, json_t *errors)
{
	char *why = NULL;
	int ignored = usage_parse_summary(body, len, node, mounts, table, &why);
	if (ignored < 0)
		add_error(errors, node, what, why);
	else if (ignored > 0)
		usage__add_error(errors,
				 "node %s: %d volume%s ignored: %s claims that, per the cache, no pod on this node mounts",
				 node, ignored, ignored == 1 ? "" : "s", ignored == 1 ? "it names" : "they name");
	free(why);
}

/* A node's GET under way on one of the source's handles. */
struct kubelet_call {
	CURL *h;
	const char *node;
	char *url;
	struct curl_slist *headers;
	struct usage_answer answer;
	bool busy;
};

/*
 * Starts node's GET on call showing token (borrowed) and nothing else
 * (true), or says in errors why it cannot be asked (false).
 */
static bool call_start(struct usage_source *s, struct kubelet_call *call, const struct usage_node *node,
		       const char *token, json_t *errors)
{
	const char *name = node->name ? node->name : "(unnamed)";
	if (!node->address || !*node->address || node->port <= 0 || node->port > 65535) {
		add_error(errors, name, NULL, "no address or kubelet port in its status (addresses, daemonEndpoints)");
		return false;
	}
	if (!address_ok(node->address)) {
		char *why = xasprintf("address \"%.64s\" is not an IP address or host name: not asked", node->address);
		add_error(errors, name, NULL, why);
		free(why);
		return false;
	}
	char *url = summary_url(s->kubelet_scheme, node->address, node->port);
	struct kube_tls_check tls = {s->kubelet_ca_file, s->kubelet_insecure_tls};
	curl_easy_reset(call->h);
	struct curl_slist *headers = kube_credentials_setup_bearer_get(s->client, call->h, url, &tls, token);
	call->node = name;
	call->url = url;
	call->headers = headers;
	call->busy = true;
	usage__answer_start(s, call->h, &call->answer);
	curl_easy_setopt(call->h, CURLOPT_PRIVATE, call);
	if (curl_multi_add_handle(s->multi, call->h) != CURLM_OK)
		abort(); /* only for a handle added twice: a bug */
	return true;
}

/* The transfer ended with cc: the node's volumes into table, or its error into errors. */
static void call_end(struct usage_source *s, struct kubelet_call *call, CURLcode cc, const json_t *mounts,
		     json_t *table, json_t *errors)
{
	char *why = NULL;
	curl_multi_remove_handle(s->multi, call->h);
	char *what = xasprintf("GET %s", call->url);
	if (usage__answer_end(call->h, &call->answer, cc, &why) < 0)
		add_error(errors, call->node, what, why);
	else
		take_summary(call->node, what, strbuf_str(&call->answer.body), call->answer.body.len, mounts, table,
			     errors);
	free(what);
	free(why);
	usage__answer_release(&call->answer);
	curl_easy_setopt(call->h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(call->headers);
	FREE_AND_NULL(call->url);
	call->headers = NULL;
	call->busy = false;
}

int usage__poll_kubelets(struct usage_source *s, const struct usage_node *nodes, int nnodes, const json_t *mounts,
			 json_t *table, json_t *errors)
{
	if (!nnodes)
		return 0;
	const char *token = NULL;
	char *why = NULL;
	if (usage_token_get(&s->kubelet_token, clock_wall_ms() / 1000, &token, &why) < 0) {
		/* No token of its own: nobody is asked, with nothing else to show. */
		char *not_asked = xasprintf("not asked: %s", why);
		for (int i = 0; i < nnodes; i++)
			add_error(errors, nodes[i].name ? nodes[i].name : "(unnamed)", NULL, not_asked);
		free(not_asked);
		free(why);
		return 0;
	}
	struct kubelet_call calls[USAGE_KUBELET_PARALLEL];
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < USAGE_KUBELET_PARALLEL; i++)
		calls[i].h = s->kubelet_curl[i];
	int next = 0, active = 0, sent = 0;
	for (;;) {
		for (int i = 0; i < USAGE_KUBELET_PARALLEL && next < nnodes; i++) {
			while (!calls[i].busy && next < nnodes) {
				if (call_start(s, &calls[i], &nodes[next++], token, errors)) {
					active++;
					sent++;
				}
			}
		}
		if (!active)
			break;
		int running;
		curl_multi_perform(s->multi, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(s->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			char *call = NULL;
			CURLcode cc = msg->data.result; /* msg is gone once its handle is removed */
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &call);
			call_end(s, (struct kubelet_call *)(void *)call, cc, mounts, table, errors);
			active--;
		}
		if (active)
			curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
	}
	return sent;
}

/* The client's error in the words of a poll failure: "403 Forbidden: <the API's message>". New string. */
static char *kube_error_text(int rc, const struct kube_error *err)
{
	if (rc == KUBE_EHTTP && err->reason[0])
		return xasprintf("%ld %s: %s", err->code, err->reason, err->message);
	return xstrdup(err->message);
}

int usage__poll_kubelet_proxy(struct usage_source *s, const struct usage_node *node, const json_t *mounts,
			      json_t *table, json_t *errors)
{
	const char *name = node->name ? node->name : "";
	if (!*name) {
		add_error(errors, "(unnamed)", NULL, "no name");
		return 0;
	}
	char *esc = curl_easy_escape(NULL, name, 0);
	if (!esc)
		abort();
	char *path = xasprintf("/api/v1/nodes/%s/proxy/stats/summary", esc);
	curl_free(esc);
	char *what = xasprintf("GET %s", path);
	char *body = NULL, *why = NULL;
	struct kube_error err;
	int rc = kube_get_text_once(s->client, path, s->timeout_ms, &body, &err);
	if (rc == KUBE_OK) {
		take_summary(name, what, body, strlen(body), mounts, table, errors);
	} else if (rc == KUBE_ETRANSPORT || rc == KUBE_ETOOLARGE) {
		add_error(errors, name, NULL, err.message); /* the client's message names the request */
	} else {
		why = kube_error_text(rc, &err);
		add_error(errors, name, what, why);
	}
	free(why);
	free(body);
	free(what);
	free(path);
	return rc == KUBE_EAUTH ? 0 : 1;
}
