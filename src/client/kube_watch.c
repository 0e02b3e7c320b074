/* WATCH: a long-lived GET whose body is a stream of events (watch_decoder.c frames it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client_internal.h"
#include "client/watch_decoder.h"
#include "util/xalloc.h"

/* The body of a watch refused with an error: a Status, a few hundred bytes; more is cut off. */
#define WATCH_ERROR_BODY_MAX (1u << 20)

struct watch_state {
	CURL *curl;
	struct watch_decoder dec;
	kube_watch_fn fn;
	void *ctx;
	const atomic_bool *stop;
	struct strbuf error_body; /* body of a non-200 answer */
	char *decode_err;
	bool ended_by_fn;
};

static size_t watch_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct watch_state *ws = userp;
	size_t n = size * nmemb;
	long code = 0;
	curl_easy_getinfo(ws->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200)
		return strbuf_add(&ws->error_body, data, n) < 0 ? 0 : n;
	int rc = watch_decoder_feed(&ws->dec, data, n, ws->fn, ws->ctx, &ws->decode_err);
	if (rc == 1)
		ws->ended_by_fn = true;
	return rc ? 0 : n;
}

static int watch_progress(void *userp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			  curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	struct watch_state *ws = userp;
	return ws->stop && atomic_load(ws->stop) ? 1 : 0;
}

int kube_watch(struct kube_client *c, const struct kube_resource *r, const char *ns,
	       const struct kube_watch_options *opts, kube_watch_fn fn, void *ctx,
	       const atomic_bool *stop, struct kube_error *err)
{
	struct strbuf path = STRBUF_INIT;
	char *base = kube_resource_path(r, ns, NULL, NULL);
	if (strbuf_addstr(&path, base) < 0 || strbuf_addstr(&path, "?watch=true") < 0)
		abort();
	free(base);
	kube__add_query(&path, "resourceVersion", opts->resource_version);
	kube__add_query(&path, "labelSelector", opts->label_selector);
	kube__add_query(&path, "fieldSelector", opts->field_selector);
	kube__add_query_long(&path, "timeoutSeconds", opts->timeout_seconds);
	if (opts->allow_bookmarks)
		kube__add_query(&path, "allowWatchBookmarks", "true");

	kube__clear_error(err);
	struct request_auth auth;
	char *auth_err = NULL;
	if (kube__get_auth(c, false, &auth, &auth_err) < 0) {
		kube__set_error(err, 0, "", "%s", auth_err);
		free(auth_err);
		strbuf_release(&path);
		return KUBE_EAUTH;
	}
	CURL *h = kube__thread_curl(c);
	char *url = xasprintf("%s%s", c->url_base, path.buf);
	curl_easy_reset(h);
	struct curl_slist *headers = kube__setup_handle(c, h, "GET", url, NULL, &auth);
	struct watch_state ws = {.curl = h, .fn = fn, .ctx = ctx, .stop = stop};
	watch_decoder_init(&ws.dec);
	ws.dec.on_oversize = opts->on_oversize;
	strbuf_init(&ws.error_body, WATCH_ERROR_BODY_MAX);
	char curl_err[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &ws);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, &ws);
	if (opts->timeout_seconds > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (opts->timeout_seconds + 30) * 1000L);

	double start = kube__now_seconds();
	CURLcode cc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (c->observer)
		c->observer(c->observer_ctx, "WATCH", code, kube__now_seconds() - start);

	int rc;
	if (stop && atomic_load(stop)) {
		rc = KUBE_ESTOPPED;
		kube__set_error(err, code, "", "watch %s stopped", r->plural);
	} else if (ws.decode_err) {
		rc = KUBE_EDECODE;
		kube__set_error(err, code, "", "watch %s: %s", r->plural, ws.decode_err);
	} else if (ws.ended_by_fn) {
		rc = KUBE_OK;
	} else if (code != 0 && code != 200) {
		kube__error_from_body(err, code, ws.error_body.buf, ws.error_body.len);
		rc = KUBE_EHTTP;
	} else if (cc != CURLE_OK) {
		rc = KUBE_ETRANSPORT;
		kube__set_error(err, code, "", "watch %s: %s", r->plural,
			  curl_err[0] ? curl_err : curl_easy_strerror(cc));
	} else {
		rc = KUBE_OK; /* the server ended the watch (timeoutSeconds) */
	}
	curl_slist_free_all(headers);
	kube__request_auth_release(&auth);
	watch_decoder_release(&ws.dec);
	strbuf_release(&ws.error_body);
	free(ws.decode_err);
	free(url);
	strbuf_release(&path);
	return rc;
}

