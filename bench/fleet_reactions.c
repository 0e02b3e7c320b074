/*
 * Reaction times from the API server's audit log, for bench/fleet: for
 * each StatefulSet a user annotated, the time from that change being
 * stored (its PATCH's stageTimestamp, ResponseComplete) to the operator's
 * first write to the same StatefulSet (requestReceivedTimestamp of its
 * next PATCH). Both times come from the API server's clock, so this is
 * end to end: watch delivery, queueing, the reconcile, the request.
 *
 *   bench_fleet_reactions AUDIT_LOG OPERATOR_USER SINCE_RFC3339 [STARTS]
 *
 * Only entries received at or after SINCE count. Prints one line:
 * "reactions N: p50 X ms, p99 Y ms, max Z ms" (N annotated sets that got a
 * write), and "missing M" when some never did. STARTS, when given, holds
 * lines "NAMESPACE/NAME MICROSECONDS": the wall time before the user's
 * kubectl started; a second line then gives the same figures from there
 * (end to end as a user sees it: kubectl's start, request, the watch, the
 * operator). Both clocks are this machine's.
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
	long long started_us;  /* the user's kubectl started; 0 when not known */
};

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

/* Fills started_us from STARTS lines "NAMESPACE/NAME MICROSECONDS". */
static int read_starts(const char *path, struct hashmap *sets)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		return -1;
	}
	char key[512];
	long long us;
	while (fscanf(f, "%511s %lld", key, &us) == 2) {
		struct reaction *r = hashmap_get(sets, key);
		if (r)
			r->started_us = us;
	}
	fclose(f);
	return 0;
}

/* Prints "LABEL N: p50 X ms, p99 Y ms, max Z ms[, missing M]", measured from the change
 * stored or (from_start) from kubectl's start; 1 when no set got a write. */
static int print_percentiles(const char *label, const struct hashmap *sets, int from_start)
{
	size_t n = 0, missing = 0;
	long long *us = xcalloc(hashmap_len(sets) + 1, sizeof(long long));
	struct hashmap_iter it;
	hashmap_iter_init(&it, sets);
	const char *k;
	void *v;
	while (hashmap_iter_next(&it, &k, &v)) {
		const struct reaction *r = v;
		long long from = from_start ? r->started_us : r->changed_us;
		if (r->reacted_us && from)
			us[n++] = r->reacted_us - from;
		else
			missing++;
	}
	if (!n) {
		printf("%s 0 (missing %zu)\n", label, missing);
		free(us);
		return 1;
	}
	qsort(us, n, sizeof(long long), cmp_ll);
	size_t p99 = (n * 99 + 99) / 100;
	printf("%s %zu: p50 %.1f ms, p99 %.1f ms, max %.1f ms", label, n, us[(n - 1) / 2] / 1000.0,
	       us[(p99 ? p99 : 1) - 1] / 1000.0, us[n - 1] / 1000.0);
	if (missing)
		printf(", missing %zu", missing);
	printf("\n");
	free(us);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s AUDIT_LOG OPERATOR_USER SINCE_RFC3339 [STARTS]\n", argv[0]);
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

	if (argc == 5 && read_starts(argv[4], &sets) < 0) {
		hashmap_release(&sets, free);
		return 1;
	}
	int rc = print_percentiles("reactions", &sets, 0);
	if (argc == 5 && rc == 0)
		rc = print_percentiles("with kubectl", &sets, 1);
	hashmap_release(&sets, free);
	return rc;
}
