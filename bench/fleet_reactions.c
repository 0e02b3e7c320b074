/*
 * Reaction times from the API server's audit log, for bench/fleet: for
 * each StatefulSet a user annotated, the time from that change being
 * stored (its PATCH's stageTimestamp, ResponseComplete) to the operator's
 * first write to the same StatefulSet (requestReceivedTimestamp of its
 * next PATCH). Both times come from the API server's clock, so this is
 * end to end: watch delivery, queueing, the reconcile, the request.
 *
 *   bench_fleet_reactions AUDIT_LOG OPERATOR_USER SINCE_RFC3339
 *
 * Only entries received at or after SINCE count. Prints one line:
 * "reactions N: p50 X ms, p99 Y ms, max Z ms" (N annotated sets that got a
 * write), and "missing M" when some never did.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/hashmap.h"
#include "util/xalloc.h"

/* Microseconds since the epoch of "2026-11-24T16:12:31.123456Z"; -1 when unreadable. */
static long long rfc3339_us(const char *s)
{
	struct tm tm = {0};
	int frac_len = 0;
	char frac[16] = "";
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
			 &tm.tm_min, &tm.tm_sec) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	const char *dot = strchr(s, '.');
	if (dot && sscanf(dot + 1, "%15[0-9]%n", frac, &frac_len) == 1) {
		while (frac_len < 6)
			frac[frac_len++] = '0';
		frac[6] = '\0';
	} else {
		strcpy(frac, "0");
	}
	return (long long)timegm(&tm) * 1000000LL + atoll(frac);
}

struct reaction {
	long long changed_us;  /* the user's change stored */
	long long reacted_us;  /* the operator's first write after it; 0 while none */
};

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s AUDIT_LOG OPERATOR_USER SINCE_RFC3339\n", argv[0]);
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	long long since = rfc3339_us(argv[3]);
	struct hashmap sets; /* ns/name -> struct reaction */
	hashmap_init(&sets);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		json_t *e = json_loads(line, 0, NULL);
		const char *verb = json_string_value(json_object_get(e, "verb"));
		const json_t *ref = json_object_get(e, "objectRef");
		const char *resource = json_string_value(json_object_get(ref, "resource"));
		const char *user = json_string_value(json_object_get(json_object_get(e, "user"), "username"));
		long long received = rfc3339_us(json_string_value(json_object_get(e, "requestReceivedTimestamp")));
		long long stored = rfc3339_us(json_string_value(json_object_get(e, "stageTimestamp")));
		long code = (long)json_integer_value(json_object_get(json_object_get(e, "responseStatus"), "code"));
		if (!verb || strcmp(verb, "patch") || !resource || strcmp(resource, "statefulsets") ||
		    json_object_get(ref, "subresource") || !user || received < since || code >= 300) {
			json_decref(e);
			continue;
		}
		char *key = xasprintf("%s/%s", json_string_value(json_object_get(ref, "namespace")),
				      json_string_value(json_object_get(ref, "name")));
		struct reaction *r = hashmap_get(&sets, key);
		if (strcmp(user, argv[2])) {
			if (!r) {
				r = xcalloc(1, sizeof(*r));
				r->changed_us = stored;
				hashmap_put(&sets, key, r);
			}
		} else if (r && !r->reacted_us && received >= r->changed_us) {
			r->reacted_us = received;
		}
		free(key);
		json_decref(e);
	}
	free(line);
	fclose(f);

	size_t n = 0, missing = 0;
	long long *ms_x1000 = xcalloc(hashmap_len(&sets) + 1, sizeof(long long));
	struct hashmap_iter it;
	hashmap_iter_init(&it, &sets);
	const char *k;
	void *v;
	while (hashmap_iter_next(&it, &k, &v)) {
		struct reaction *r = v;
		if (r->reacted_us)
			ms_x1000[n++] = r->reacted_us - r->changed_us;
		else
			missing++;
	}
	hashmap_release(&sets, free);
	if (!n) {
		printf("reactions 0 (missing %zu)\n", missing);
		free(ms_x1000);
		return 1;
	}
	qsort(ms_x1000, n, sizeof(long long), cmp_ll);
	size_t p99 = (n * 99 + 99) / 100;
	printf("reactions %zu: p50 %.1f ms, p99 %.1f ms, max %.1f ms%s", n, ms_x1000[(n - 1) / 2] / 1000.0,
	       ms_x1000[(p99 ? p99 : 1) - 1] / 1000.0, ms_x1000[n - 1] / 1000.0, missing ? "" : "\n");
	if (missing)
		printf(", missing %zu\n", missing);
	free(ms_x1000);
	return 0;
}
