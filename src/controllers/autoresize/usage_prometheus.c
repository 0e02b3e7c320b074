/*
 * The Prometheus source: one instant query of the kubelets' volume series
 * per poll (GET <url>/api/v1/query), whatever the number of claims, and
 * the parser of its answer.
 *
 * A claim may have several series of one metric: one per kubelet that
 * reported it within Prometheus' lookback (a pod that moved node), or per
 * scrape job. The latest sample of each metric wins.
 */
#include <curl/curl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_credentials.h"
#include "controllers/autoresize/usage_source.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "util/hashmap.h"
#include "util/xalloc.h"
#include "util/yaml_json.h"

/* The five series the policy needs, in one selector: one query, one answer. */
#define USAGE_PROMETHEUS_QUERY \
	"{__name__=~\"kubelet_volume_stats_(capacity_bytes|used_bytes|available_bytes|inodes|inodes_used)\"}"

enum series { S_CAPACITY, S_USED, S_AVAILABLE, S_INODES, S_INODES_USED, S_COUNT };

static const char *const series_names[S_COUNT] = {
	[S_CAPACITY] = "kubelet_volume_stats_capacity_bytes",
	[S_USED] = "kubelet_volume_stats_used_bytes",
	[S_AVAILABLE] = "kubelet_volume_stats_available_bytes",
	[S_INODES] = "kubelet_volume_stats_inodes",
	[S_INODES_USED] = "kubelet_volume_stats_inodes_used",
};

/* One claim's latest sample of each series. */
struct claim_samples {
	char *ns;
	char *claim;
	bool seen[S_COUNT];
	double at[S_COUNT];
	int64_t value[S_COUNT];
};

char *usage__prometheus_query_url(const char *base)
{
	char *q = curl_easy_escape(NULL, USAGE_PROMETHEUS_QUERY, 0);
	if (!q)
		abort();
	char *url = xasprintf("%s/api/v1/query?query=%s", base, q);
	curl_free(q);
	return url;
}

static int series_of(const char *name)
{
	for (int i = 0; name && i < S_COUNT; i++)
		if (!strcmp(name, series_names[i]))
			return i;
	return -1;
}

/*
 * A sample's value: Prometheus sends floats as strings ("1.073741824e+09",
 * "NaN", "+Inf"). Bytes and inodes are whole and below 2^63; anything
 * else (a negative, NaN, an infinity, trailing text) is refused.
 */
static bool sample_value(const char *text, int64_t *v)
{
	if (!text || !*text)
		return false;
	char *end;
	double d = strtod(text, &end);
	/* 2^63 is exactly representable; INT64_MAX is not (it rounds up to 2^63). */
	if (*end || !isfinite(d) || d < 0 || d >= 9223372036854775808.0)
		return false;
	*v = (int64_t)llround(d);
	return true;
}

static void claim_samples_free(void *p)
{
	struct claim_samples *cs = p;
	free(cs->ns);
	free(cs->claim);
	free(cs);
}

/* Keeps one series' sample (an item of data.result) when it is its claim's latest; others are skipped. */
static void take_sample(struct hashmap *claims, const json_t *item)
{
	const json_t *metric = json_object_get(item, "metric");
	int which = series_of(json_string_value(json_object_get(metric, "__name__")));
	const char *ns = json_string_value(json_object_get(metric, "namespace"));
	const char *claim = json_string_value(json_object_get(metric, "persistentvolumeclaim"));
	const json_t *pair = json_object_get(item, "value");
	const json_t *at = json_array_get(pair, 0);
	int64_t value;
	if (which < 0 || !ns || !*ns || !claim || !*claim || json_array_size(pair) != 2 || !json_is_number(at) ||
	    !sample_value(json_string_value(json_array_get(pair, 1)), &value))
		return;
	char *key = xasprintf("%s/%s", ns, claim);
	struct claim_samples *cs = hashmap_get(claims, key);
	if (!cs) {
		cs = xcalloc(1, sizeof(*cs));
		cs->ns = xstrdup(ns);
		cs->claim = xstrdup(claim);
		hashmap_put(claims, key, cs);
	}
	free(key);
	double t = json_number_value(at);
	if (!cs->seen[which] || t > cs->at[which]) {
		cs->seen[which] = true;
		cs->at[which] = t;
		cs->value[which] = value;
	}
}

/* Into table, the claims with all three byte series; inodes when both inode series are there. */
static void add_claims(const struct hashmap *claims, json_t *table)
{
	struct hashmap_iter it;
	const char *key;
	void *value;
	hashmap_iter_init(&it, claims);
	while (hashmap_iter_next(&it, &key, &value)) {
		const struct claim_samples *cs = value;
		if (!cs->seen[S_CAPACITY] || !cs->seen[S_USED] || !cs->seen[S_AVAILABLE])
			continue;
		struct volume_usage u = {
			.capacity_bytes = cs->value[S_CAPACITY],
			.used_bytes = cs->value[S_USED],
			.available_bytes = cs->value[S_AVAILABLE],
		};
		if (cs->seen[S_INODES] && cs->seen[S_INODES_USED]) {
			u.inodes = cs->value[S_INODES];
			u.inodes_used = cs->value[S_INODES_USED];
		}
		usage__table_add(table, cs->ns, cs->claim, &u);
	}
}

/* The server answers what it holds: bounded in bytes, depth and parsed memory. */
static const struct doc_limits answer_limits = {
	.max_bytes = USAGE_RESPONSE_MAX,
	.max_depth = DOC_MAX_DEPTH,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = USAGE_RESPONSE_MAX,
	.max_parsed_bytes = USAGE_PROMETHEUS_MAX_PARSED,
	.budget = "the budget for a Prometheus answer",
};

int usage_parse_prometheus(const char *body, size_t len, json_t *table, char **why)
{
	json_t *doc = NULL;
	char *msg = NULL;
	int rc = json_load_limited(body, len, 0, &answer_limits, &doc, &msg);
	if (rc < 0 || !json_is_object(doc)) {
		*why = rc == DOC_TOO_LARGE ? xasprintf("the answer is refused: %s", msg)
		       : rc < 0	    ? xasprintf("the answer is not JSON: %s", msg)
				    : xstrdup("the answer is not a JSON object");
		free(msg);
		rc = -1;
		goto out;
	}
	rc = -1;
	const char *status = json_string_value(json_object_get(doc, "status"));
	if (status && !strcmp(status, "error")) {
		const char *type = json_string_value(json_object_get(doc, "errorType"));
		const char *error = json_string_value(json_object_get(doc, "error"));
		*why = xasprintf("query failed: %s: %s", type ? type : "error", error ? error : "(no message)");
		goto out;
	}
	if (!status || strcmp(status, "success")) {
		*why = xasprintf("the answer's status is %s, not success", status ? status : "missing");
		goto out;
	}
	const json_t *data = json_object_get(doc, "data");
	const char *type = json_string_value(json_object_get(data, "resultType"));
	const json_t *result = json_object_get(data, "result");
	if (!type || strcmp(type, "vector") || !json_is_array(result)) {
		*why = xasprintf("the answer is not an instant vector (resultType %s)", type ? type : "missing");
		goto out;
	}
	struct hashmap claims;
	hashmap_init(&claims);
	size_t i;
	const json_t *item;
	json_array_foreach(result, i, item)
		take_sample(&claims, item);
	add_claims(&claims, table);
	hashmap_release(&claims, claim_samples_free);
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

/* The Authorization header from the token file, read at every poll (tokens rotate). NULL + *err when unreadable. */
static struct curl_slist *prometheus_headers(const struct usage_source *s, char **err)
{
	struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
	if (!headers)
		abort();
	if (!s->prometheus_token_file)
		return headers;
	char *token = NULL;
	if (kube_token_file_read(s->prometheus_token_file, &token, err) < 0) {
		curl_slist_free_all(headers);
		return NULL;
	}
	char *line = xasprintf("Authorization: Bearer %s", token);
	headers = curl_slist_append(headers, line);
	explicit_bzero(line, strlen(line));
	explicit_bzero(token, strlen(token));
	free(line);
	free(token);
	if (!headers)
		abort();
	return headers;
}

int usage__poll_prometheus(struct usage_source *s, json_t *table, json_t *errors)
{
	char *why = NULL;
	struct curl_slist *headers = prometheus_headers(s, &why);
	if (!headers) {
		usage__add_error(errors, "prometheus %s: %s", s->prometheus_shown, why);
		free(why);
		return 0;
	}
	char *url = usage__prometheus_query_url(s->prometheus_url);
	CURL *h = s->curl;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "stateful-operator");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	/* The token must not follow a redirect elsewhere. */
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	if (s->prometheus_ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, s->prometheus_ca_file);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	struct usage_answer a;
	int rc = usage__perform(s, &a, &why);
	if (rc == 0)
		rc = usage_parse_prometheus(strbuf_str(&a.body), a.body.len, table, &why);
	if (rc < 0) {
		usage__add_error(errors, "prometheus %s: %s", s->prometheus_shown, why);
		free(why);
	}
	usage__answer_release(&a);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	free(url);
	return 1;
}
