/*
 * The usage sources: their names, options, the poll that asks each node
 * (or Prometheus) once, and what the HTTP sources share (the capped GET
 * and the words of a failure).
 */
#include "controllers/autoresize/usage_source.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_config.h"
#include "client/kube_credentials.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"
#include "util/yaml_json.h"

static const char *const kind_names[] = {
	[USAGE_SOURCE_NONE] = "none",
	[USAGE_SOURCE_KUBELET] = "kubelet",
	[USAGE_SOURCE_KUBELET_PROXY] = "kubelet-proxy",
	[USAGE_SOURCE_PROMETHEUS] = "prometheus",
};

int usage_source_kind_parse(const char *text)
{
	for (size_t i = 0; text && i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (!strcmp(text, kind_names[i]))
			return (int)i;
	return -1;
}

const char *usage_source_kind_name(enum usage_source_kind k)
{
	if ((unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]))
		return kind_names[k];
	return "unknown";
}

/*
 * Checks the Prometheus URL and keeps it, and the same without userinfo
 * for messages. Credentials (token: a bearer token is to be sent, or a
 * password in the URL) need https://: over http:// anyone on the path
 * reads them.
 */
static int set_prometheus_url(struct usage_source *s, const char *url, bool token, char **err)
{
	if (!url || !*url) {
		*err = xstrdup("prometheus: no URL (e.g. http://prometheus.monitoring:9090)");
		return -1;
	}
	s->prometheus_shown = kube_url_redact(url);
	CURLU *u = curl_url();
	char *scheme = NULL, *password = NULL;
	int rc = -1;
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		*err = xasprintf("prometheus URL %s is not a valid URL", s->prometheus_shown);
	} else if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		*err = xasprintf("prometheus URL %s: scheme must be http or https", s->prometheus_shown);
	} else if (strchr(url, '?') || strchr(url, '#')) {
		*err = xasprintf("prometheus URL %s: a query or fragment cannot be followed by the API's path",
				 s->prometheus_shown);
	} else if (!strcmp(scheme, "http") && token) {
		*err = xasprintf("prometheus URL %s is http://: the bearer token (--prometheus-bearer-token-file) would "
				 "go out in clear; use https:// (with --prometheus-ca-file for a private CA), or drop "
				 "the token", s->prometheus_shown);
	} else if (!strcmp(scheme, "http") && curl_url_get(u, CURLUPART_PASSWORD, &password, 0) == CURLUE_OK) {
		*err = xasprintf("prometheus URL %s is http://: its password would go out in clear; use https:// (with "
				 "--prometheus-ca-file for a private CA), or drop the password", s->prometheus_shown);
	} else {
		size_t n = strlen(url);
		while (n && url[n - 1] == '/')
			n--;
		s->prometheus_url = xstrndup(url, n);
		n = strlen(s->prometheus_shown);
		while (n && s->prometheus_shown[n - 1] == '/')
			s->prometheus_shown[--n] = '\0';
		rc = 0;
	}
	curl_free(scheme);
	if (password)
		explicit_bzero(password, strlen(password));
	curl_free(password);
	curl_url_cleanup(u);
	return rc;
}

/* A file named by an option is readable now, so a typo stops the start rather than every poll. */
static int check_readable(const char *what, const char *path, char **err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		*err = xasprintf("%s %s: %s", what, path, strerror(errno));
		return -1;
	}
	fclose(f);
	return 0;
}

struct usage_source *usage_source_new(struct kube_client *client, const struct usage_source_options *o, char **err)
{
	struct usage_source *s = xcalloc(1, sizeof(*s));
	s->kind = o->kind;
	s->client = client;
	s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : USAGE_TIMEOUT_DEFAULT_MS;
	s->kubelet_scheme = "https";
	s->kubelet_insecure_tls = o->kubelet_insecure_tls;
	switch (o->kind) {
	case USAGE_SOURCE_PROMETHEUS:
		if (set_prometheus_url(s, o->prometheus_url, o->prometheus_token_file != NULL, err) < 0)
			goto fail;
		if (o->prometheus_ca_file) {
			if (check_readable("prometheus CA file", o->prometheus_ca_file, err) < 0)
				goto fail;
			s->prometheus_ca_file = xstrdup(o->prometheus_ca_file);
		}
		if (o->prometheus_token_file) {
			char *token = NULL;
			if (kube_token_file_read(o->prometheus_token_file, &token, err) < 0)
				goto fail;
			explicit_bzero(token, strlen(token));
			free(token);
			s->prometheus_token_file = xstrdup(o->prometheus_token_file);
		}
		break;
	case USAGE_SOURCE_KUBELET:
		if (!o->cluster_scope) {
			*err = xstrdup("the kubelet usage source needs cluster scope (its ServiceAccount's nodes/stats "
				       "is cluster-wide; a Role cannot grant it): with --namespace use "
				       "--autoresize-source=prometheus, or run without --namespace");
			goto fail;
		}
		if (!o->kubelet_token_namespace || !*o->kubelet_token_namespace || !o->kubelet_service_account ||
		    !*o->kubelet_service_account) {
			*err = xstrdup("the kubelet usage source needs the ServiceAccount whose token the kubelets see "
				       "(--kubelet-service-account, in the operator's namespace)");
			goto fail;
		}
		if (o->kubelet_ca_file) {
			if (check_readable("kubelet CA file", o->kubelet_ca_file, err) < 0)
				goto fail;
			s->kubelet_ca_file = xstrdup(o->kubelet_ca_file);
		}
		/* fall through */
	case USAGE_SOURCE_KUBELET_PROXY:
		if (!client) {
			*err = xasprintf("usage source %s needs the API client", usage_source_kind_name(o->kind));
			goto fail;
		}
		break;
	default:
		*err = xasprintf("no usage source (kind %d): kubelet, kubelet-proxy or prometheus", (int)o->kind);
		goto fail;
	}
	if (o->kind == USAGE_SOURCE_PROMETHEUS) {
		s->curl = curl_easy_init();
		if (!s->curl)
			abort();
	} else if (o->kind == USAGE_SOURCE_KUBELET) {
		s->multi = curl_multi_init();
		for (int i = 0; i < USAGE_KUBELET_PARALLEL; i++)
			if (!(s->kubelet_curl[i] = curl_easy_init()))
				abort();
		if (!s->multi)
			abort();
		usage_token_init(&s->kubelet_token, client, o->kubelet_token_namespace, o->kubelet_service_account);
	}
	return s;
fail:
	usage_source_free(s);
	return NULL;
}

void usage_source_free(struct usage_source *s)
{
	if (!s)
		return;
	if (s->curl)
		curl_easy_cleanup(s->curl);
	for (int i = 0; i < USAGE_KUBELET_PARALLEL; i++)
		if (s->kubelet_curl[i])
			curl_easy_cleanup(s->kubelet_curl[i]);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	free(s->prometheus_url);
	free(s->prometheus_shown);
	free(s->prometheus_token_file);
	free(s->prometheus_ca_file);
	free(s->kubelet_ca_file);
	usage_token_release(&s->kubelet_token);
	free(s);
}

void usage__set_kubelet_scheme(struct usage_source *s, const char *scheme)
{
	s->kubelet_scheme = scheme;
}

void usage__set_prometheus_plain_http(struct usage_source *s)
{
	char *urls[] = {s->prometheus_url, s->prometheus_shown};
	for (size_t i = 0; i < 2; i++)
		if (!strncmp(urls[i], "https://", 8))
			memmove(urls[i] + 4, urls[i] + 5, strlen(urls[i] + 5) + 1);
}

int usage_source_poll(struct usage_source *s, const struct usage_node *nodes, int nnodes, const json_t *mounts,
		      json_t *table, json_t *errors)
{
	int sent = 0;
	switch (s->kind) {
	case USAGE_SOURCE_PROMETHEUS:
		return usage__poll_prometheus(s, table, errors);
	case USAGE_SOURCE_KUBELET:
		return usage__poll_kubelets(s, nodes, nnodes, mounts, table, errors);
	case USAGE_SOURCE_KUBELET_PROXY:
		for (int i = 0; i < nnodes; i++)
			sent += usage__poll_kubelet_proxy(s, &nodes[i], mounts, table, errors);
		return sent;
	default:
		return 0;
	}
}

/* --- the GET the HTTP sources share --- */

static size_t collect_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct usage_answer *a = userp;
	size_t n = size * nmemb;
	if (strbuf_add(&a->body, data, n) < 0) {
		a->too_big = true;
		return 0;
	}
	return n;
}

/* Keeps the status line ("HTTP/1.1 403 Forbidden"): its reason phrase goes into messages. */
static size_t collect_status(char *data, size_t size, size_t nmemb, void *userp)
{
	struct usage_answer *a = userp;
	size_t n = size * nmemb;
	if (n >= 5 && !memcmp(data, "HTTP/", 5)) {
		size_t k = n;
		while (k && (data[k - 1] == '\r' || data[k - 1] == '\n'))
			k--;
		if (k >= sizeof(a->status_line))
			k = sizeof(a->status_line) - 1;
		memcpy(a->status_line, data, k);
		a->status_line[k] = '\0';
	}
	return n;
}

/* An error body: only its message is wanted, so a small budget; past it, the text is shown. */
static const struct doc_limits error_body_limits = {
	.max_bytes = USAGE_RESPONSE_MAX,
	.max_depth = DOC_MAX_DEPTH,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = USAGE_RESPONSE_MAX,
	.max_parsed_bytes = USAGE_ERROR_MAX_PARSED,
	.budget = "the budget for an error answer",
};

/* What an error body says: an API Status' message, Prometheus' errorType and error, else its text, shortened. */
static void describe_body(struct strbuf *out, const char *body, size_t len)
{
	json_t *doc = NULL;
	char *msg = NULL;
	if (len && json_load_limited(body, len, 0, &error_body_limits, &doc, &msg) < 0)
		free(msg);
	const char *message = json_string_value(json_object_get(doc, "message"));
	const char *error = json_string_value(json_object_get(doc, "error"));
	const char *error_type = json_string_value(json_object_get(doc, "errorType"));
	if (message) {
		strbuf_appendf(out, ": %s", message);
	} else if (error) {
		strbuf_appendf(out, ": %s%s%s", error_type ? error_type : "", error_type ? ": " : "", error);
	} else {
		while (len && isspace((unsigned char)body[len - 1]))
			len--;
		size_t shown = len > 300 ? 300 : len;
		if (shown)
			strbuf_appendf(out, ": ");
		for (size_t i = 0; i < shown; i++)
			strbuf_appendf(out, "%c", iscntrl((unsigned char)body[i]) ? ' ' : body[i]);
		if (shown < len)
			strbuf_appendf(out, "...");
	}
	json_decref(doc);
}

void usage__answer_start(struct usage_source *s, CURL *h, struct usage_answer *a)
{
	memset(a, 0, sizeof(*a));
	strbuf_init(&a->body, USAGE_RESPONSE_MAX);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, collect_status);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->curl_err);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
}

int usage__answer_end(CURL *h, struct usage_answer *a, CURLcode cc, char **why)
{
	a->cc = cc;
	/* The handle keeps its connection, not pointers into a. */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (a->too_big) {
		*why = xasprintf("answer larger than %u MiB", USAGE_RESPONSE_MAX >> 20);
		return -1;
	}
	if (a->cc != CURLE_OK) {
		*why = xstrdup(a->curl_err[0] ? a->curl_err : curl_easy_strerror(a->cc));
		return -1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->code);
	if (a->code >= 200 && a->code < 300)
		return 0;
	struct strbuf sb = STRBUF_INIT;
	/* "HTTP/1.1 403 Forbidden" -> "403 Forbidden"; HTTP/2 has no reason phrase. */
	const char *phrase = strchr(a->status_line, ' ');
	if (phrase && strtol(phrase + 1, NULL, 10) == a->code)
		strbuf_appendf(&sb, "%s", phrase + 1);
	else
		strbuf_appendf(&sb, "HTTP %ld", a->code);
	describe_body(&sb, strbuf_str(&a->body), a->body.len);
	*why = strbuf_detach(&sb);
	return -1;
}

int usage__perform(struct usage_source *s, struct usage_answer *a, char **why)
{
	usage__answer_start(s, s->curl, a);
	return usage__answer_end(s->curl, a, curl_easy_perform(s->curl), why);
}

void usage__answer_release(struct usage_answer *a)
{
	strbuf_release(&a->body);
}

void usage__add_error(json_t *errors, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *raw = xvasprintf(fmt, ap);
	va_end(ap);
	/*
	 * A node's or Prometheus' words (an error body, a JSON message) go into
	 * Events: one clean line, bounded, valid UTF-8 (a body cut within a
	 * character, another charset) as JSON strings must be.
	 */
	char *line = text_sanitize(raw, TEXT_QUOTE_MAX);
	json_array_append_new(errors, json_string(line));
	free(line);
	free(raw);
}

/* --- the table --- */

bool usage__table_add(json_t *table, const char *ns, const char *claim, const struct volume_usage *u)
{
	char *key = xasprintf("%s/%s", ns, claim);
	bool added = !json_object_get(table, key);
	if (added)
		json_object_set_new(table, key, usage_to_json(u));
	free(key);
	return added;
}

json_t *usage_to_json(const struct volume_usage *u)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "capacity", (json_int_t)u->capacity_bytes, "used",
			      (json_int_t)u->used_bytes, "available", (json_int_t)u->available_bytes, "inodes",
			      (json_int_t)u->inodes, "inodesUsed", (json_int_t)u->inodes_used);
	if (!o)
		abort();
	return o;
}

/* Reads obj[key] into *v: false when it is there but not an integer, or missing and required. */
static bool int_field(const json_t *obj, const char *key, bool required, int64_t *v)
{
	const json_t *f = json_object_get(obj, key);
	*v = 0;
	if (!f)
		return !required;
	if (!json_is_integer(f))
		return false;
	*v = (int64_t)json_integer_value(f);
	return true;
}

bool usage_from_json(const json_t *obj, struct volume_usage *u)
{
	memset(u, 0, sizeof(*u));
	return json_is_object(obj) && int_field(obj, "capacity", true, &u->capacity_bytes) &&
	       int_field(obj, "used", true, &u->used_bytes) &&
	       int_field(obj, "available", true, &u->available_bytes) &&
	       int_field(obj, "inodes", false, &u->inodes) && int_field(obj, "inodesUsed", false, &u->inodes_used);
}
