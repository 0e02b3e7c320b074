#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_cleanup.h"
#include "plugin/plugin_output.h"
#include "plugin/plugin_table.h"
#include "util/xalloc.h"

#define CLEANUP_MAX_ATTEMPTS_DEFAULT 3

int cleanup_max_attempts(const json_t *sts)
{
	const char *v = kube_obj_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS);
	char *end = NULL;
	long n = v ? strtol(v, &end, 10) : 0;
	return v && end && !*end && n >= 1 && n <= 100 ? (int)n : CLEANUP_MAX_ATTEMPTS_DEFAULT;
}

static json_t *row_for(json_t *rows, long long ord)
{
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r)
		if (json_integer_value(json_object_get(r, "ordinal")) == ord)
			return r;
	r = json_pack("{s:I, s:i}", "ordinal", (json_int_t)ord, "failures", 0);
	json_array_append_new(rows, r);
	return r;
}

static int by_ordinal(const void *a, const void *b)
{
	long long x = json_integer_value(json_object_get(*(json_t *const *)a, "ordinal"));
	long long y = json_integer_value(json_object_get(*(json_t *const *)b, "ordinal"));
	return (x > y) - (x < y);
}

json_t *cleanup_rows(const json_t *sts, const json_t *state, const json_t *pods, size_t *given_up)
{
	int max = cleanup_max_attempts(sts);
	json_t *rows = json_array();
	const char *key;
	json_t *entry;
	json_object_foreach(json_object_get(state, "ordinals"), key, entry) {
		char *end = NULL;
		long long ord = strtoll(key, &end, 10);
		if (!end || *end)
			continue;
		json_t *r = row_for(rows, ord);
		json_object_set_new(r, "failures", json_integer(kube_obj_int(entry, "failures", NULL, 0)));
		if (kube_obj_str(entry, "retryAt"))
			json_object_set_new(r, "nextRetry", json_string(kube_obj_str(entry, "retryAt")));
		if (kube_obj_str(entry, "message"))
			json_object_set_new(r, "message", json_string(kube_obj_str(entry, "message")));
	}
	size_t i;
	const json_t *pod;
	json_array_foreach(pods, i, pod) {
		const char *o = kube_obj_annotation(pod, ANNOTATION_CLEANUP_ORDINAL);
		char *end = NULL;
		long long ord = o ? strtoll(o, &end, 10) : -1;
		if (!o || !end || *end)
			continue;
		json_t *r = row_for(rows, ord);
		json_object_set_new(r, "pod", json_string(kube_obj_str(pod, "metadata.name")));
		const char *phase = kube_obj_str(pod, "status.phase");
		json_object_set_new(r, "podPhase", json_string(phase ? phase : "Pending"));
	}
	*given_up = 0;
	json_t *r;
	json_array_foreach(rows, i, r) {
		bool gave_up = json_integer_value(json_object_get(r, "failures")) >= max && !json_object_get(r, "pod");
		json_object_set_new(r, "maxAttempts", json_integer(max));
		json_object_set_new(r, "givenUp", json_boolean(gave_up));
		*given_up += gave_up;
	}
	/* Sorted by ordinal: jansson's arrays have no sort, so through a C array. */
	size_t n = json_array_size(rows);
	json_t **items = xcalloc(n + 1, sizeof(*items));
	for (i = 0; i < n; i++)
		items[i] = json_incref(json_array_get(rows, i));
	qsort(items, n, sizeof(*items), by_ordinal);
	json_array_clear(rows);
	for (i = 0; i < n; i++)
		json_array_append_new(rows, items[i]);
	free(items);
	return rows;
}

/* The table; wide: the last message whole. */
static char *table_text(const json_t *rows, const struct plugin_format *f, const void *ctx)
{
	(void)ctx;
	bool wide = f->output == PLUGIN_OUT_WIDE;
	static const char *const headers[] = {"ORDINAL", "ATTEMPTS FAILED", "STATE", "NEXT RETRY", "POD", "LAST MESSAGE"};
	struct table *t = table_new(6, headers);
	if (f->no_headers)
		table_hide_headers(t);
	size_t i;
	const json_t *r;
	json_array_foreach(rows, i, r) {
		char *ord = xasprintf("%lld", (long long)json_integer_value(json_object_get(r, "ordinal")));
		char *fails = xasprintf("%lld/%lld", (long long)json_integer_value(json_object_get(r, "failures")),
					(long long)json_integer_value(json_object_get(r, "maxAttempts")));
		const char *pod = kube_obj_str(r, "pod");
		char *podtext = pod ? xasprintf("%s (%s)", pod, kube_obj_str(r, "podPhase")) : NULL;
		const char *state = json_is_true(json_object_get(r, "givenUp")) ? "GivenUp"
				    : pod						? "Running"
				    : kube_obj_str(r, "nextRetry")			? "RetryWaiting"
											: "Recorded";
		const char *m = kube_obj_str(r, "message");
		char *msg = wide ? xstrdup(m ? m : "-") : table_ellipsize(m, 80);
		const char *cells[] = {ord, fails, state, kube_obj_str(r, "nextRetry"), podtext, msg};
		table_add(t, cells);
		free(msg);
		free(podtext);
		free(fails);
		free(ord);
	}
	char *out = table_render(t);
	table_free(t);
	return out;
}

char *cleanup_table(const json_t *rows)
{
	struct plugin_format f = {.output = PLUGIN_OUT_TABLE};
	return table_text(rows, &f, NULL);
}

int cleanup_render(const json_t *rows, const struct plugin_format *f, char **out, char **err)
{
	static const struct plugin_listing listing = {.name_of = plugin_pod_of, .table = table_text};
	return plugin_render(rows, f, &listing, out, err);
}

json_t *cleanup_state_rearmed(const json_t *state, int max)
{
	json_t *out = json_is_object(state) ? json_deep_copy(state) : json_object();
	json_t *ords = json_object_get(out, "ordinals");
	const char *key;
	json_t *entry;
	void *tmp;
	json_object_foreach_safe(ords, tmp, key, entry) {
		if (kube_obj_int(entry, "failures", NULL, 0) >= max)
			json_object_del(ords, key);
	}
	return out;
}
