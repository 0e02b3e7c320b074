#include "controllers/autoresize/usage_published.h"

#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/xalloc.h"

static bool within(int64_t v, int64_t max)
{
	return v >= 0 && v <= max;
}

bool usage_valid(const struct volume_usage *u)
{
	return u->capacity_bytes > 0 && u->capacity_bytes <= USAGE_BOUND && within(u->used_bytes, u->capacity_bytes) &&
	       within(u->available_bytes, u->capacity_bytes) && within(u->inodes, USAGE_BOUND) &&
	       within(u->inodes_used, u->inodes);
}

char *usage_published_text(const struct volume_usage *u, int64_t observed_s)
{
	char when[32];
	rfc3339_format(observed_s, when);
	return xasprintf("used=%lld,available=%lld,capacity=%lld,inodesUsed=%lld,inodes=%lld,observed=%s",
			 (long long)u->used_bytes, (long long)u->available_bytes, (long long)u->capacity_bytes,
			 (long long)u->inodes_used, (long long)u->inodes, when);
}

/* Decimal digits only, at most USAGE_BOUND: no sign, no space, no quantity suffix. */
static bool read_count(const char *s, size_t len, int64_t *out)
{
	int64_t v = 0;
	if (!len || len > 19)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		int d = s[i] - '0';
		if (v > (USAGE_BOUND - d) / 10) /* checked before it is computed: 19 digits overflow */
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

enum { F_USED, F_AVAILABLE, F_CAPACITY, F_INODES_USED, F_INODES, F_OBSERVED, F_COUNT };
static const char *const field_names[F_COUNT] = {"used", "available", "capacity", "inodesUsed", "inodes", "observed"};

static int field_of(const char *key, size_t len)
{
	for (int i = 0; i < F_COUNT; i++)
		if (strlen(field_names[i]) == len && !strncmp(field_names[i], key, len))
			return i;
	return -1;
}

int usage_published_parse(const char *text, struct usage_published *out)
{
	memset(out, 0, sizeof(*out));
	if (!text || strnlen(text, USAGE_TEXT_MAX + 1) > USAGE_TEXT_MAX)
		return -1;
	bool seen[F_COUNT] = {false};
	int64_t *counts[F_OBSERVED] = {&out->usage.used_bytes, &out->usage.available_bytes,
				       &out->usage.capacity_bytes, &out->usage.inodes_used, &out->usage.inodes};
	for (const char *s = text;; s++) {
		size_t len = strcspn(s, ",");
		const char *eq = memchr(s, '=', len);
		if (!eq)
			return -1;
		const char *value = eq + 1;
		size_t vlen = len - (size_t)(value - s);
		int f = field_of(s, (size_t)(eq - s));
		if (f >= 0 && seen[f])
			return -1;
		if (f == F_OBSERVED) {
			char when[32];
			if (vlen >= sizeof(when))
				return -1;
			memcpy(when, value, vlen);
			when[vlen] = '\0';
			out->observed_s = rfc3339_seconds(when);
			if (out->observed_s < 0)
				return -1;
		} else if (f >= 0 && !read_count(value, vlen, counts[f])) {
			return -1;
		}
		if (f >= 0)
			seen[f] = true;
		s += len;
		if (!*s)
			break;
	}
	if (!seen[F_USED] || !seen[F_AVAILABLE] || !seen[F_CAPACITY] || !seen[F_OBSERVED])
		return -1;
	return usage_valid(&out->usage) ? 0 : -1;
}

/* a and b differ by USAGE_PUBLISH_MOVE_PERCENT of `of` or more (rounded up; every figure is below 2^60). */
static bool moved(int64_t a, int64_t b, int64_t of)
{
	int64_t d = a > b ? a - b : b - a;
	int64_t step = of / 100 * USAGE_PUBLISH_MOVE_PERCENT + (of % 100 * USAGE_PUBLISH_MOVE_PERCENT + 99) / 100;
	return d > 0 && d >= step;
}

bool usage_published_due(const struct usage_published *old, const struct volume_usage *now, int64_t now_s)
{
	if (!old)
		return true;
	const struct volume_usage *o = &old->usage;
	int64_t age = now_s - old->observed_s;
	return age >= USAGE_PUBLISH_REFRESH_S || age < -60 || o->capacity_bytes != now->capacity_bytes ||
	       o->inodes != now->inodes || moved(o->used_bytes, now->used_bytes, now->capacity_bytes) ||
	       moved(o->available_bytes, now->available_bytes, now->capacity_bytes) ||
	       (now->inodes > 0 && moved(o->inodes_used, now->inodes_used, now->inodes));
}
