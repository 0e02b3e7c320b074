#include "controllers/autoresize/autoresize_policy.h"

#include "client/kube_object.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/quantity.h"
#include "util/duration.h"
#include "util/xalloc.h"

/* Longer values are refused before they are read: every refusal quotes its value into an Event. */
#define VALUE_MAX 64
/* Longer unknown keys are cut in the message, for the same reason. */
#define KEY_SHOWN 40

static const char *const binary_suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
#define BINARY_SUFFIXES ((int)(sizeof(binary_suffixes) / sizeof(binary_suffixes[0])))

/* Room for size * 1000% and used * 100 near 8Ei without overflow. */
__extension__ typedef __int128 wide;

struct key_spec;
/*
 * NULL when value (not empty, at most VALUE_MAX) is read into *p; else the
 * problem, a new string that follows "<key>: ".
 */
typedef char *(*value_reader)(const struct key_spec *k, const char *value, struct autoresize_policy *p);

struct key_spec {
	const char *name;
	const char *accepts; /* follows "use " in a refusal */
	value_reader read;
	/* read_choice: the value words[0] clears, words[1] sets the bool at offset flag; noun names a value */
	const char *words[2];
	const char *noun;
	size_t flag;
};

/* "80%" -> 80; -1 when value is not digits then "%". Past 100000 reads as 100000: out of every range. */
static int percent_value(const char *value)
{
	const char *s = value;
	long v = 0;
	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++)
		if (v < 100000)
			v = v * 10 + (*s - '0');
	if (strcmp(s, "%"))
		return -1;
	return (int)(v < 100000 ? v : 100000);
}

static char *read_percent(const struct key_spec *k, const char *value, int lo, int hi, int *out)
{
	int v = percent_value(value);
	if (v < 0)
		return xasprintf("\"%s\" is not a whole percentage; use %s", value, k->accepts);
	if (v < lo || v > hi)
		return xasprintf("\"%s\" is out of range; use %s", value, k->accepts);
	*out = v;
	return NULL;
}

/*
 * A quantity above zero into *out. whole: a fraction of a byte is refused;
 * else it is rounded up (for "free", available < ceil(q) is available < q).
 */
static char *read_bytes(const struct key_spec *k, const char *value, bool whole, int64_t *out)
{
	struct quantity q, back;
	char *err = NULL;
	int64_t v;
	if (quantity_parse(value, &q, &err) < 0)
		return err;
	if (quantity_sign(&q) <= 0)
		return xasprintf("\"%s\" is not above zero; use %s", value, k->accepts);
	if (quantity_to_int64(&q, &v) < 0)
		return xasprintf("\"%s\" is too large (more than 8Ei); use %s", value, k->accepts);
	quantity_from_int64(v, q.format, &back);
	if (whole && quantity_cmp(&q, &back) != 0)
		return xasprintf("\"%s\" is not a whole number of bytes; use %s", value, k->accepts);
	*out = v;
	return NULL;
}

static char *read_used(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	return read_percent(k, value, 1, 99, &p->used_percent);
}

static char *read_inodes(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	return read_percent(k, value, 1, 99, &p->inodes_percent);
}

static char *read_free(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	return read_bytes(k, value, false, &p->free_below_bytes);
}

static char *read_max(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	return read_bytes(k, value, true, &p->max_bytes);
}

static char *read_step(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	size_t n = strlen(value);
	if (value[n - 1] == '%') {
		p->step_bytes = 0;
		return read_percent(k, value, 1, 1000, &p->step_percent);
	}
	/* "20" would be 20 bytes; far likelier a percentage with its sign forgotten. */
	if (strspn(value, "0123456789.+-") == n)
		return xasprintf("\"%s\" is neither a percentage nor a quantity with a unit; use %s", value,
				 k->accepts);
	char *problem = read_bytes(k, value, true, &p->step_bytes);
	if (!problem)
		p->step_percent = 0;
	return problem;
}

static char *read_cooldown(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	char *err = NULL;
	(void)k;
	return duration_parse(value, &p->cooldown_ms, &err) < 0 ? err : NULL;
}

/* mode: grow, recommend (Events only) or off (no autoresize: opts out of a namespace's or class's policy). */
static char *read_mode(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	if (strcmp(value, "grow") && strcmp(value, "recommend") && strcmp(value, "off"))
		return xasprintf("\"%s\" is not a mode; use %s", value, k->accepts);
	p->recommend_only = !strcmp(value, "recommend");
	p->off = !strcmp(value, "off");
	return NULL;
}

/* allow-copy, scope: one of two words, the second sets a flag of the policy. */
static char *read_choice(const struct key_spec *k, const char *value, struct autoresize_policy *p)
{
	bool second = !strcmp(value, k->words[1]);
	if (!second && strcmp(value, k->words[0]))
		return xasprintf("\"%s\" is not %s; use %s", value, k->noun, k->accepts);
	*(bool *)((char *)p + k->flag) = second;
	return NULL;
}

enum { KEY_USED, KEY_FREE, KEY_INODES, KEY_STEP, KEY_MAX, KEY_COOLDOWN, KEY_MODE, KEY_ALLOW_COPY, KEY_SCOPE, KEYS };

static const struct key_spec keys[KEYS] = {
	[KEY_USED] = {.name = "used", .accepts = "a whole percentage from 1% to 99%, e.g. used=80%", .read = read_used},
	[KEY_FREE] = {.name = "free", .accepts = "a quantity above zero, e.g. free=5Gi", .read = read_free},
	[KEY_INODES] = {.name = "inodes",
			.accepts = "a whole percentage from 1% to 99%, e.g. inodes=90%",
			.read = read_inodes},
	[KEY_STEP] = {.name = "step",
		      .accepts = "a whole percentage from 1% to 1000% or a quantity of whole bytes above zero, e.g. "
				 "step=20% or step=10Gi",
		      .read = read_step},
	[KEY_MAX] = {.name = "max", .accepts = "a quantity of whole bytes above zero, e.g. max=500Gi", .read = read_max},
	[KEY_COOLDOWN] = {.name = "cooldown",
			  .accepts = "a duration, e.g. cooldown=6h, cooldown=30m or cooldown=0s",
			  .read = read_cooldown},
	[KEY_MODE] = {.name = "mode", .accepts = "grow, recommend or off", .read = read_mode},
	[KEY_ALLOW_COPY] = {.name = "allow-copy",
			    .accepts = "true or false",
			    .read = read_choice,
			    .words = {"false", "true"},
			    .noun = "a boolean",
			    .flag = offsetof(struct autoresize_policy, allow_copy)},
	[KEY_SCOPE] = {.name = "scope",
		       .accepts = "template or claim",
		       .read = read_choice,
		       .words = {"template", "claim"},
		       .noun = "a scope",
		       .flag = offsetof(struct autoresize_policy, per_claim)},
};

#define KEY_LIST "used, free, inodes, step, max, cooldown, mode, allow-copy and scope"

static const struct key_spec *key_find(const char *name, size_t len)
{
	for (int i = 0; i < KEYS; i++)
		if (strlen(keys[i].name) == len && !strncmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

/* s without leading and trailing white space; trims in place. */
static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/*
 * why (taken) with every byte outside printable ASCII written \xNN, as the
 * quantity parser quotes: keys and values (and duration_parse's quote of
 * them) may hold any bytes, and an Event's message must be valid UTF-8.
 */
static char *printable(char *why)
{
	char *out = xmalloc(strlen(why) * 4 + 1), *o = out;
	for (const unsigned char *c = (const unsigned char *)why; *c; c++)
		o += *c >= 0x20 && *c < 0x7f ? sprintf(o, "%c", *c) : sprintf(o, "\\x%02x", *c);
	*o = '\0';
	free(why);
	return out;
}

static char *unknown_key(const char *name, size_t len)
{
	int shown = len > KEY_SHOWN ? KEY_SHOWN : (int)len;
	return xasprintf("%.*s%s: unknown key; the keys are " KEY_LIST, shown, name, len > KEY_SHOWN ? "..." : "");
}

/*
 * Reads one item (trimmed, not empty) into *p; seen marks the keys read so
 * far. NULL, or the whole refusal (new string).
 */
static char *read_item(char *item, bool seen[KEYS], struct autoresize_policy *p)
{
	char *eq = strchr(item, '=');
	if (!eq) {
		/* "max 500Gi", "max": a known key whose "=" is missing says so; anything else is unknown. */
		size_t len = strcspn(item, " \t\r\n\f\v");
		const struct key_spec *k = key_find(item, len);
		return k ? xasprintf("%s: no \"=\" after the key; use %s", k->name, k->accepts)
			 : unknown_key(item, strlen(item));
	}
	*eq = '\0';
	char *name = trim(item), *value = trim(eq + 1);
	if (!*name)
		return xasprintf("\"=%.*s%s\": no key before \"=\"; the keys are " KEY_LIST, KEY_SHOWN, value,
				 strlen(value) > KEY_SHOWN ? "..." : "");
	const struct key_spec *k = key_find(name, strlen(name));
	if (!k)
		return unknown_key(name, strlen(name));
	if (seen[k - keys])
		return xasprintf("%s: given twice; give each key once", k->name);
	seen[k - keys] = true;
	if (!*value)
		return xasprintf("%s: empty value; use %s", k->name, k->accepts);
	if (strlen(value) > VALUE_MAX)
		return xasprintf("%s: the value is %zu characters long (at most %d); use %s", k->name, strlen(value),
				 VALUE_MAX, k->accepts);
	char *problem = k->read(k, value, p);
	if (!problem)
		return NULL;
	char *why = xasprintf("%s: %s", k->name, problem);
	free(problem);
	return why;
}

/* Checks that need the whole policy. NULL, or the refusal (new string). */
static char *check_policy(const bool seen[KEYS], const struct autoresize_policy *p)
{
	if (p->off) /* an opt-out grows nothing: no max to give */
		return NULL;
	if (!seen[KEY_MAX])
		return xstrdup("max: required (the size autoresize never grows past, e.g. max=500Gi)");
	if (p->free_below_bytes >= p->max_bytes) {
		char *free_text = autoresize_bytes_text(p->free_below_bytes);
		char *max_text = autoresize_bytes_text(p->max_bytes);
		char *why = xasprintf("free: %s is not below max (%s); use a quantity below max", free_text, max_text);
		free(free_text);
		free(max_text);
		return why;
	}
	return NULL;
}

int autoresize_policy_parse(const char *text, struct autoresize_policy *p, char **why)
{
	struct autoresize_policy pol = {
		.step_percent = AUTORESIZE_DEFAULT_STEP_PERCENT,
		.cooldown_ms = AUTORESIZE_DEFAULT_COOLDOWN_MS,
	};
	bool seen[KEYS] = {false};
	*why = NULL;
	if (text && strlen(text) > AUTORESIZE_POLICY_TEXT_MAX) {
		/* Read no further: the text is anyone's who may annotate, and every refusal goes into an Event. */
		*why = xasprintf("the policy is %zu bytes long (at most %d); give each key once, e.g. "
				 "used=80%%, step=20%%, max=500Gi",
				 strlen(text), AUTORESIZE_POLICY_TEXT_MAX);
		memset(p, 0, sizeof(*p));
		return -1;
	}
	char *copy = xstrdup(text ? text : ""), *next = NULL;
	for (char *item = copy; item && !*why; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		item = trim(item);
		if (*item) /* "a=1, ,b=2" and a trailing comma are harmless */
			*why = read_item(item, seen, &pol);
	}
	free(copy);
	if (!*why)
		*why = check_policy(seen, &pol);
	if (*why) {
		*why = printable(*why);
		memset(p, 0, sizeof(*p));
		return -1;
	}
	if (!seen[KEY_USED] && !seen[KEY_FREE] && !seen[KEY_INODES] && !pol.off)
		pol.used_percent = AUTORESIZE_DEFAULT_USED_PERCENT;
	*p = pol;
	return 0;
}

int autoresize_granularity_parse(const char *text, int64_t *bytes, char **why)
{
	static const struct key_spec granularity = {.name = "granularity",
						    .accepts = "a quantity of whole bytes above zero, e.g. 4Gi"};
	*why = NULL;
	if (!text) {
		*bytes = AUTORESIZE_DEFAULT_GRANULARITY;
		return 0;
	}
	char *value = xstrdup(text), *problem = NULL;
	char *v = trim(value);
	if (!*v)
		problem = xasprintf("empty value; use %s", granularity.accepts);
	else if (strlen(v) > VALUE_MAX)
		problem = xasprintf("the value is %zu characters long (at most %d); use %s", strlen(v), VALUE_MAX,
				    granularity.accepts);
	else
		problem = read_bytes(&granularity, v, true, bytes);
	free(value);
	if (!problem)
		return 0;
	*why = printable(xasprintf("%s: %s", granularity.name, problem));
	free(problem);
	return -1;
}

char *autoresize_bytes_text(int64_t bytes)
{
	int unit = 0;
	while (bytes != 0 && bytes % 1024 == 0 && unit + 1 < BINARY_SUFFIXES) {
		bytes /= 1024;
		unit++;
	}
	return xasprintf("%" PRId64 "%s", bytes, binary_suffixes[unit]);
}

/* bytes (past 8Ei for used + free) for a reader: one decimal in the largest binary unit, "272Mi", "1.5Gi", "1000". */
static void approx_bytes(wide bytes, char *buf, size_t size)
{
	int unit = 0;
	double v = (double)bytes;
	if (bytes > -1024 && bytes < 1024) {
		snprintf(buf, size, "%d", (int)bytes);
		return;
	}
	while (unit + 1 < BINARY_SUFFIXES && (v >= 1024 || v <= -1024)) {
		v /= 1024;
		unit++;
	}
	char number[32];
	snprintf(number, sizeof(number), "%.1f", v);
	size_t n = strlen(number);
	if (n > 2 && !strcmp(number + n - 2, ".0"))
		number[n - 2] = '\0';
	snprintf(buf, size, "%s%s", number, binary_suffixes[unit]);
}

/* Appends part to the trigger text, after "; ", when it fits whole. */
static void trigger_add(struct autoresize_decision *d, const char *part)
{
	size_t used = strlen(d->trigger);
	const char *sep = used ? "; " : "";
	size_t seplen = strlen(sep), partlen = strlen(part);
	if (used + seplen + partlen < sizeof(d->trigger)) {
		memcpy(d->trigger + used, sep, seplen);
		memcpy(d->trigger + used + seplen, part, partlen + 1);
	}
}

static int64_t at_least_zero(int64_t v)
{
	return v > 0 ? v : 0;
}

/* Fills d->used_ratio and d->trigger; true when any threshold of p is crossed. */
static bool over_threshold(const struct autoresize_policy *p, const struct volume_usage *u,
			   struct autoresize_decision *d)
{
	int64_t used = at_least_zero(u->used_bytes), avail = at_least_zero(u->available_bytes);
	int64_t inodes = at_least_zero(u->inodes), inodes_used = at_least_zero(u->inodes_used);
	wide total = (wide)used + avail;
	char part[96], a[24], b[24];
	d->used_ratio = total > 0 ? (double)used / (double)total : 0;
	d->trigger[0] = '\0';
	/* Exact integer comparisons: a ratio of exactly 80% must count as 80%, whatever doubles make of it. */
	if (p->used_percent > 0 && total > 0 && (wide)used * 100 >= (wide)p->used_percent * total) {
		approx_bytes(used, a, sizeof(a));
		approx_bytes(total, b, sizeof(b));
		snprintf(part, sizeof(part), "used %d%% (%s of %s) >= %d%%", (int)((wide)used * 100 / total), a, b,
			 p->used_percent);
		trigger_add(d, part);
	}
	if (p->free_below_bytes > 0 && avail < p->free_below_bytes) {
		approx_bytes(avail, a, sizeof(a));
		approx_bytes(p->free_below_bytes, b, sizeof(b));
		snprintf(part, sizeof(part), "free %s < %s", a, b);
		trigger_add(d, part);
	}
	if (p->inodes_percent > 0 && inodes > 0 &&
	    (wide)inodes_used * 100 >= (wide)p->inodes_percent * inodes) {
		snprintf(part, sizeof(part), "inodes used %d%% (%" PRId64 " of %" PRId64 ") >= %d%%",
			 (int)((wide)inodes_used * 100 / inodes), inodes_used, inodes, p->inodes_percent);
		trigger_add(d, part);
	}
	return d->trigger[0] != '\0';
}

/* size grown by p's step (at least one byte), rounded up to granularity, at most max. */
static int64_t grown_size(const struct autoresize_policy *p, int64_t size, int64_t granularity)
{
	wide step = p->step_bytes > 0 ? (wide)p->step_bytes
					  : ((wide)size * p->step_percent + 99) / 100;
	if (step < 1)
		step = 1;
	wide grown = (wide)size + step;
	grown = (grown + granularity - 1) / granularity * granularity;
	return grown < p->max_bytes ? (int64_t)grown : p->max_bytes;
}

void autoresize_decide(const struct autoresize_policy *p, const struct volume_usage *u, int64_t size_bytes,
		       int64_t last_growth_ms, int64_t now_ms, int64_t granularity_bytes,
		       struct autoresize_decision *d)
{
	memset(d, 0, sizeof(*d));
	if (granularity_bytes <= 0)
		granularity_bytes = AUTORESIZE_DEFAULT_GRANULARITY;
	if (!over_threshold(p, u, d)) {
		d->verdict = AUTORESIZE_BELOW;
		return;
	}
	if (size_bytes >= p->max_bytes) {
		d->verdict = AUTORESIZE_AT_MAX;
		return;
	}
	if (last_growth_ms > 0) {
		int64_t cooldown = p->cooldown_ms > 0 ? p->cooldown_ms : 0;
		int64_t next = last_growth_ms > INT64_MAX - cooldown ? INT64_MAX : last_growth_ms + cooldown;
		if (now_ms < next) {
			d->verdict = AUTORESIZE_COOLDOWN;
			d->next_ms = next;
			return;
		}
	}
	int64_t grown = grown_size(p, size_bytes < 0 ? 0 : size_bytes, granularity_bytes);
	if (grown <= size_bytes) {
		d->verdict = AUTORESIZE_AT_MAX;
		return;
	}
	d->verdict = AUTORESIZE_GROW;
	d->new_bytes = grown;
}

int64_t autoresize_quantity_bytes(const char *text)
{
	struct quantity q;
	int64_t v;
	if (!text || quantity_parse(text, &q, NULL) < 0 || quantity_to_int64(&q, &v) < 0)
		return -1;
	return v;
}

int64_t autoresize_last_growth_ms(const json_t *w, const char *tpl)
{
	json_t *map = kube_obj_annotation_json(w, ANNOTATION_AUTORESIZE_LAST);
	int64_t s = rfc3339_seconds(json_string_value(json_object_get(map, tpl)));
	json_decref(map);
	return s > 0 ? s * 1000 : 0;
}

bool autoresize_has_policy(const json_t *w)
{
	size_t plen = strlen(ANNOTATION_AUTORESIZE_PREFIX);
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)kube_obj_annotations(w), key, v)
		if (!strncmp(key, ANNOTATION_AUTORESIZE_PREFIX, plen) && strcmp(key, ANNOTATION_AUTORESIZE_GRANULARITY))
			return true;
	return false;
}
