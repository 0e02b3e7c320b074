/*
 * The kubelet sources: one GET of a node's stats summary per poll, either
 * from the kubelet itself (its port, the operator's credentials, the
 * kubelet authorizes nodes/stats) or through the API server's node proxy
 * (nodes/proxy). A failure is one line in errors that names the node, the
 * request and the cause; the other nodes are still asked.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_credentials.h"
#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/xalloc.h"

/* "https://10.0.0.5:10250/stats/summary"; an IPv6 address goes in brackets. New string. */
static char *summary_url(const char *scheme, const char *address, int port)
{
	bool v6 = strchr(address, ':') && address[0] != '[';
	return xasprintf("%s://%s%s%s:%d/stats/summary", scheme, v6 ? "[" : "", address, v6 ? "]" : "", port);
}

static void add_error(json_t *errors, const char *node, const char *what, const char *why)
{
	json_array_append_new(errors, json_sprintf("node %s: %s%s%s", node, what ? what : "", what ? ": " : "", why));
}

int usage__poll_kubelet(struct usage_source *s, const struct usage_node *node, json_t *table, json_t *errors)
{
	const char *name = node->name ? node->name : "(unnamed)";
	if (!node->address || !*node->address || node->port <= 0 || node->port > 65535) {
		add_error(errors, name, NULL, "no address or kubelet port in its status (addresses, daemonEndpoints)");
		return 0;
	}
	char *url = summary_url(s->kubelet_scheme, node->address, node->port);
	char *what = xasprintf("GET %s", url);
	char *why = NULL;
	struct kube_tls_check tls = {s->kubelet_ca_file, s->kubelet_insecure_tls};
	curl_easy_reset(s->curl);
	struct curl_slist *headers = kube_credentials_setup_get(s->client, s->curl, url, &tls, &why);
	int sent = 0;
	if (headers) {
		struct usage_answer a;
		int rc = usage__perform(s, &a, &why);
		if (rc == 0)
			rc = usage_parse_summary(strbuf_str(&a.body), a.body.len, table, &why);
		usage__answer_release(&a);
		curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(headers);
		sent = 1;
	}
	if (why)
		add_error(errors, name, what, why);
	free(why);
	free(what);
	free(url);
	return sent;
}

/* The client's error in the words of a poll failure: "403 Forbidden: <the API's message>". New string. */
static char *kube_error_text(int rc, const struct kube_error *err)
{
	if (rc == KUBE_EHTTP && err->reason[0])
		return xasprintf("%ld %s: %s", err->code, err->reason, err->message);
	return xstrdup(err->message);
}

int usage__poll_kubelet_proxy(struct usage_source *s, const struct usage_node *node, json_t *table,
			      json_t *errors)
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
		if (usage_parse_summary(body, strlen(body), table, &why) < 0)
			add_error(errors, name, what, why);
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
