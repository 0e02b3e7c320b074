#include "util/duration.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/xalloc.h"

static int fail(char **err, const char *text, const char *why)
{
	if (err)
		*err = xasprintf("\"%s\" is not a duration (%s); write it like 90s, 30m, 1h30m or 24h", text,
				 why);
	return -1;
}

/* Nanoseconds per unit; the longest matching suffix wins ("ms" before "m"). */
static int64_t unit_ns(const char **p)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {{"ns", 1},
		     {"us", 1000},
		     {"\xc2\xb5s", 1000}, /* µs, micro sign */
		     {"\xce\xbcs", 1000}, /* μs, Greek mu */
		     {"ms", 1000000},
		     {"s", 1000000000LL},
		     {"m", 60000000000LL},
		     {"h", 3600000000000LL}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);
		if (!strncmp(*p, units[i].name, n)) {
			*p += n;
			return units[i].ns;
		}
	}
	return 0;
}

int duration_parse(const char *text, int64_t *ms, char **err)
{
	if (err)
		*err = NULL;
	const char *p = text ? text : "";
	if (*p == '+')
		p++;
	if (*p == '-')
		return fail(err, text ? text : "", "it is negative");
	if (!strcmp(p, "0")) {
		*ms = 0;
		return 0;
	}
	if (!*p)
		return fail(err, text ? text : "", "it is empty");
	/* Kept in nanoseconds below 2^63, as Go does: about 292 years. */
	const int64_t max_ns = INT64_MAX;
	int64_t total = 0;
	while (*p) {
		if (!isdigit((unsigned char)*p) && *p != '.')
			return fail(err, text, "expected a number");
		int64_t whole = 0;
		double frac = 0, scale = 1;
		bool digits = false;
		for (; isdigit((unsigned char)*p); p++, digits = true) {
			if (whole > (max_ns - 9) / 10)
				return fail(err, text, "it is too long");
			whole = whole * 10 + (*p - '0');
		}
		if (*p == '.')
			for (p++; isdigit((unsigned char)*p); p++, digits = true)
				frac += (*p - '0') * (scale /= 10);
		if (!digits)
			return fail(err, text, "expected a number");
		int64_t unit = unit_ns(&p);
		if (!unit)
			return fail(err, text, *p ? "unknown unit; use ns, us, ms, s, m or h" : "missing unit");
		if (whole > (max_ns - total) / unit)
			return fail(err, text, "it is too long");
		total += whole * unit;
		int64_t part = (int64_t)(frac * (double)unit);
		if (part > max_ns - total)
			return fail(err, text, "it is too long");
		total += part;
	}
	*ms = total / 1000000;
	return 0;
}

int64_t rfc3339_seconds(const char *text)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!text)
		return -1;
	const char *end = strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -1;
	return (int64_t)timegm(&tm);
}

void rfc3339_format(int64_t seconds, char out[32])
{
	time_t t = (time_t)seconds;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
