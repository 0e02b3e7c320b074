#include "runtime/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* docs/monitoring.md, "Histograms", says where these come from. */
const double metrics_latency_bounds[METRICS_LATENCY_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

const double metrics_long_bounds[METRICS_LONG_BUCKETS] = {
	1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400,
};

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_SUMMARY, METRIC_HISTOGRAM };

static const char *const type_names[] = {"counter", "gauge", "summary", "histogram"};

struct metric_series {
	char *values[METRICS_MAX_LABELS]; /* valid UTF-8; family->nlabels of them */
	double value;                     /* counter, gauge; the sum of a summary/histogram */
	uint64_t count;                   /* summary, histogram */
	uint64_t buckets[];               /* histogram: per bucket, not cumulative (no +Inf): family->nbounds */
};

struct metric_family {
	struct metrics *m;
	enum metric_type type;
	char *name;
	char *help;
	size_t nlabels;
	char *label_names[METRICS_MAX_LABELS];
	const double *bounds; /* histogram: nbounds upper bounds (static), +Inf implied */
	size_t nbounds;
	pthread_mutex_t mu;   /* guards series */
	struct hashmap series; /* encoded label values -> struct metric_series */
};

struct collector {
	metrics_collect_fn fn;
	void *ctx;
};

struct metrics {
	pthread_mutex_t mu; /* guards families and collectors */
	struct metric_family **families; /* sorted by name */
	size_t nfamilies, families_cap;
	struct collector *collectors;
	size_t ncollectors, collectors_cap;
	/* Serializes renders, so collectors never run twice at once and a
	 * render sees the values its own collectors set. */
	pthread_mutex_t render_mu;
	atomic_size_t max_series;
	struct metric_family *dropped;
};

static void lock(pthread_mutex_t *mu)
{
	if (pthread_mutex_lock(mu) != 0)
		abort();
}

static void unlock(pthread_mutex_t *mu)
{
	if (pthread_mutex_unlock(mu) != 0)
		abort();
}

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("stateful-operator: metrics: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* The output buffer has no cap, so an append cannot fail. */
static void put(struct strbuf *sb, const char *s, size_t len)
{
	if (strbuf_add(sb, s, len) < 0)
		abort();
}

static void puts_sb(struct strbuf *sb, const char *s)
{
	put(sb, s, strlen(s));
}

/* ---- names and text ---- */

static bool is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* */
static bool valid_metric_name(const char *s)
{
	if (!s || !*s || !(is_alpha_(*s) || *s == ':'))
		return false;
	for (s++; *s; s++)
		if (!(is_alpha_(*s) || is_digit(*s) || *s == ':'))
			return false;
	return true;
}

/* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus). */
static bool valid_label_name(const char *s)
{
	if (!s || !*s || !is_alpha_(*s) || strncmp(s, "__", 2) == 0)
		return false;
	for (s++; *s; s++)
		if (!(is_alpha_(*s) || is_digit(*s)))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/*
 * Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 when the byte at s starts none.
 */
static size_t utf8_seq_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

/* (The checks above stop at the first non-continuation byte, so they never
 * read past the terminating NUL.) */
static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq_len(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

/* A new copy of s with every byte that starts no valid sequence replaced by U+FFFD. */
static char *utf8_repair(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq_len(p);
		if (n) {
			put(&sb, (const char *)p, n);
			p += n;
		} else {
			put(&sb, "\xef\xbf\xbd", 3);
			p++;
		}
	}
	return strbuf_detach(&sb);
}

/* Label values escape backslash, double quote and newline; HELP text only
 * backslash and newline. */
static void put_escaped(struct strbuf *sb, const char *s, bool quote)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = NULL;
		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '\n')
			esc = "\\n";
		else if (*s == '"' && quote)
			esc = "\\\"";
		if (esc) {
			put(sb, run, (size_t)(s - run));
			put(sb, esc, 2);
			run = s + 1;
		}
	}
	put(sb, run, (size_t)(s - run));
}

/*
 * Formats v as Prometheus reads it: NaN, +Inf, -Inf, integers without
 * exponent up to 2^53, otherwise the shortest %g form that reads back as v
 * (so 0.1 is "0.1", not "0.10000000000000001").
 */
static void format_double(char buf[40], double v)
{
	if (isnan(v)) {
		strcpy(buf, "NaN");
	} else if (isinf(v)) {
		strcpy(buf, v > 0 ? "+Inf" : "-Inf");
	} else if (v == floor(v) && fabs(v) <= 9007199254740992.0) {
		snprintf(buf, 40, "%.0f", v);
	} else {
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(buf, 40, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	}
}

/* ---- registry ---- */

struct metrics *metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	if (pthread_mutex_init(&m->mu, NULL) != 0 || pthread_mutex_init(&m->render_mu, NULL) != 0)
		abort();
	atomic_init(&m->max_series, METRICS_DEFAULT_MAX_SERIES);
	m->dropped = metrics_counter(m, METRICS_DROPPED_SERIES_NAME,
				     "Metric updates dropped because their family already had the maximum "
				     "number of series.",
				     METRIC_LABELS("family"));
	return m;
}

static void series_free(void *p)
{
	struct metric_series *s = p;

	for (size_t i = 0; i < METRICS_MAX_LABELS; i++)
		free(s->values[i]);
	free(s);
}

static void family_free(struct metric_family *f)
{
	hashmap_release(&f->series, series_free);
	pthread_mutex_destroy(&f->mu);
	free(f->name);
	free(f->help);
	for (size_t i = 0; i < f->nlabels; i++)
		free(f->label_names[i]);
	free(f);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfamilies; i++)
		family_free(m->families[i]);
	free(m->families);
	free(m->collectors);
	pthread_mutex_destroy(&m->mu);
	pthread_mutex_destroy(&m->render_mu);
	free(m);
}

void metrics_set_max_series(struct metrics *m, size_t max)
{
	atomic_store(&m->max_series, max ? max : 1);
}

/* The sample names a family writes besides its own name (NULL-terminated). */
static const char *const *family_suffixes(enum metric_type type)
{
	static const char *const none[] = {NULL};
	static const char *const summary[] = {"_sum", "_count", NULL};
	static const char *const histogram[] = {"_bucket", "_sum", "_count", NULL};

	return type == METRIC_SUMMARY ? summary : type == METRIC_HISTOGRAM ? histogram : none;
}

/* True when a family of type `type` named `name` would write sample `sample`. */
static bool family_writes(enum metric_type type, const char *name, const char *sample)
{
	size_t n = strlen(name);

	if (strcmp(name, sample) == 0)
		return true;
	if (strncmp(name, sample, n) != 0)
		return false;
	for (const char *const *sfx = family_suffixes(type); *sfx; sfx++)
		if (strcmp(sample + n, *sfx) == 0)
			return true;
	return false;
}

static bool families_collide(const struct metric_family *f, enum metric_type type, const char *name)
{
	if (family_writes(type, name, f->name) || family_writes(f->type, f->name, name))
		return true;
	/* x+s1 == y+s2 for suffixes s1 != s2 would need one of _sum, _count,
	 * _bucket to end in another, and none does. */
	return false;
}

static bool same_family(const struct metric_family *f, enum metric_type type, const char *help,
			size_t nlabels, const char *const *label_names, const double *bounds, size_t nbounds)
{
	if (f->type != type || strcmp(f->help, help) != 0 || f->nlabels != nlabels || f->nbounds != nbounds ||
	    (nbounds && memcmp(f->bounds, bounds, nbounds * sizeof(*bounds)) != 0))
		return false;
	for (size_t i = 0; i < nlabels; i++)
		if (strcmp(f->label_names[i], label_names[i]) != 0)
			return false;
	return true;
}

static struct metric_family *metrics_register(struct metrics *m, enum metric_type type, const char *name,
					       const char *help, const char *const *label_names,
					       const double *bounds, size_t nbounds)
{
	size_t nlabels = 0;

	if (!valid_metric_name(name))
		die("invalid metric name \"%s\"", name ? name : "(null)");
	if (type == METRIC_COUNTER && !ends_with(name, "_total"))
		die("counter %s: a counter's name must end in \"_total\"", name);
	if (!help || !*help || !utf8_valid(help))
		die("%s: help text must be non-empty UTF-8", name);
	if (type == METRIC_HISTOGRAM && (!bounds || nbounds < 1 || nbounds > METRICS_MAX_BUCKETS))
		die("%s: a histogram needs 1 to %d bucket bounds", name, METRICS_MAX_BUCKETS);
	for (size_t i = 0; i < nbounds; i++)
		if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
			die("%s: bucket bounds must be finite and ascending", name);
	for (; label_names && label_names[nlabels]; nlabels++) {
		const char *l = label_names[nlabels];
		if (nlabels == METRICS_MAX_LABELS)
			die("%s: more than %d labels", name, METRICS_MAX_LABELS);
		if (!valid_label_name(l))
			die("%s: invalid label name \"%s\"", name, l);
		if (type == METRIC_HISTOGRAM && strcmp(l, "le") == 0)
			die("%s: a histogram cannot have a label \"le\"", name);
		if (type == METRIC_SUMMARY && strcmp(l, "quantile") == 0)
			die("%s: a summary cannot have a label \"quantile\"", name);
		for (size_t j = 0; j < nlabels; j++)
			if (strcmp(label_names[j], l) == 0)
				die("%s: label \"%s\" given twice", name, l);
	}

	lock(&m->mu);
	size_t pos = 0;
	for (size_t i = 0; i < m->nfamilies; i++) {
		struct metric_family *f = m->families[i];
		if (strcmp(f->name, name) == 0) {
			if (!same_family(f, type, help, nlabels, label_names, bounds, nbounds))
				die("%s registered twice with a different type, help, labels or buckets", name);
			unlock(&m->mu);
			return f;
		}
		if (families_collide(f, type, name))
			die("%s %s collides with %s %s", type_names[type], name, type_names[f->type], f->name);
		if (strcmp(f->name, name) < 0)
			pos = i + 1;
	}

	struct metric_family *f = xcalloc(1, sizeof(*f));
	f->m = m;
	f->type = type;
	f->name = xstrdup(name);
	f->help = xstrdup(help);
	f->nlabels = nlabels;
	for (size_t i = 0; i < nlabels; i++)
		f->label_names[i] = xstrdup(label_names[i]);
	f->bounds = bounds;
	f->nbounds = nbounds;
	if (pthread_mutex_init(&f->mu, NULL) != 0)
		abort();
	hashmap_init(&f->series);

	m->families = xgrow(m->families, &m->families_cap, m->nfamilies + 1, sizeof(*m->families));
	memmove(m->families + pos + 1, m->families + pos, (m->nfamilies - pos) * sizeof(*m->families));
	m->families[pos] = f;
	m->nfamilies++;
	unlock(&m->mu);

	/* A family with labels can hit the series limit: show its drop count
	 * from the start, so increase() sees the first drop. */
	if (nlabels && m->dropped)
		metric_add(m->dropped, 0, METRIC_LABELS(name));
	return f;
}

struct metric_family *metrics_counter(struct metrics *m, const char *name, const char *help,
				      const char *const *label_names)
{
	return metrics_register(m, METRIC_COUNTER, name, help, label_names, NULL, 0);
}

struct metric_family *metrics_gauge(struct metrics *m, const char *name, const char *help,
				    const char *const *label_names)
{
	return metrics_register(m, METRIC_GAUGE, name, help, label_names, NULL, 0);
}

struct metric_family *metrics_summary(struct metrics *m, const char *name, const char *help,
				      const char *const *label_names)
{
	return metrics_register(m, METRIC_SUMMARY, name, help, label_names, NULL, 0);
}

struct metric_family *metrics_histogram(struct metrics *m, const char *name, const char *help,
					const char *const *label_names)
{
	return metrics_register(m, METRIC_HISTOGRAM, name, help, label_names, metrics_latency_bounds,
				METRICS_LATENCY_BUCKETS);
}

struct metric_family *metrics_histogram_bounds(struct metrics *m, const char *name, const char *help,
					       const char *const *label_names, const double *bounds,
					       size_t nbounds)
{
	return metrics_register(m, METRIC_HISTOGRAM, name, help, label_names, bounds, nbounds);
}

void metrics_add_collector(struct metrics *m, metrics_collect_fn collect, void *ctx)
{
	if (!collect)
		die("metrics_add_collector: NULL collector");
	lock(&m->mu);
	m->collectors = xgrow(m->collectors, &m->collectors_cap, m->ncollectors + 1, sizeof(*m->collectors));
	m->collectors[m->ncollectors++] = (struct collector){collect, ctx};
	unlock(&m->mu);
}

/* ---- series ---- */

/*
 * A series' label values, checked against the family, repaired to UTF-8,
 * and encoded as the hash key "<len>:<value>..." (unambiguous for any
 * values). Keys of up to sizeof(small) bytes need no allocation.
 */
struct series_key {
	const char *values[METRICS_MAX_LABELS]; /* borrowed or repaired[i] */
	char *repaired[METRICS_MAX_LABELS];
	char small[192];
	char *key; /* small or allocated */
};

static void series_key_init(struct series_key *k, const struct metric_family *f,
			    const char *const *label_values)
{
	size_t n = 0, len = 0;

	memset(k->repaired, 0, sizeof(k->repaired));
	for (; label_values && label_values[n]; n++) {
		if (n == f->nlabels)
			break;
		k->values[n] = label_values[n];
		if (!utf8_valid(k->values[n]))
			k->values[n] = k->repaired[n] = utf8_repair(k->values[n]);
		len += strlen(k->values[n]) + 24;
	}
	if (n != f->nlabels || (label_values && label_values[n]))
		die("%s: expected %zu label values, got %s%zu", f->name, f->nlabels,
		    n == f->nlabels ? "more than " : "", n);

	k->key = len + 1 <= sizeof(k->small) ? k->small : xmalloc(len + 1);
	char *p = k->key;
	*p = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t vl = strlen(k->values[i]);
		p += sprintf(p, "%zu:", vl);
		memcpy(p, k->values[i], vl + 1);
		p += vl;
	}
}

static void series_key_release(struct series_key *k)
{
	if (k->key != k->small)
		free(k->key);
	for (size_t i = 0; i < METRICS_MAX_LABELS; i++)
		free(k->repaired[i]);
}

/* The series for k, created if the limit allows; NULL when dropped. Call with f->mu held. */
static struct metric_series *series_lookup(struct metric_family *f, const struct series_key *k)
{
	struct metric_series *s = hashmap_get(&f->series, k->key);

	if (s)
		return s;
	if (hashmap_len(&f->series) >= atomic_load(&f->m->max_series))
		return NULL;
	size_t nb = f->nbounds;
	s = xcalloc(1, sizeof(*s) + nb * sizeof(s->buckets[0]));
	for (size_t i = 0; i < f->nlabels; i++)
		s->values[i] = xstrdup(k->values[i]);
	hashmap_put(&f->series, k->key, s);
	return s;
}

enum update_op { OP_ADD, OP_SET, OP_OBSERVE, OP_SUMMARY_SET, OP_HISTOGRAM_SET };

/* counts: OP_HISTOGRAM_SET's, f->nbounds + 1 of them. */
static void update(struct metric_family *f, enum update_op op, double v, uint64_t count,
		   const uint64_t *counts, const char *const *label_values)
{
	struct series_key k;
	bool dropped;

	series_key_init(&k, f, label_values);
	lock(&f->mu);
	struct metric_series *s = series_lookup(f, &k);
	dropped = s == NULL;
	if (s) {
		switch (op) {
		case OP_ADD:
			s->value += v;
			break;
		case OP_SET:
			s->value = v;
			break;
		case OP_OBSERVE:
			s->value += v;
			s->count++;
			if (f->type == METRIC_HISTOGRAM) {
				for (size_t i = 0; i < f->nbounds; i++) {
					if (v <= f->bounds[i]) {
						s->buckets[i]++;
						break;
					}
				}
			}
			break;
		case OP_SUMMARY_SET:
			s->value = v;
			s->count = count;
			break;
		case OP_HISTOGRAM_SET:
			s->value = v;
			s->count = counts[f->nbounds];
			for (size_t i = 0; i < f->nbounds; i++) {
				s->buckets[i] = counts[i];
				s->count += counts[i];
			}
			break;
		}
	}
	unlock(&f->mu);
	series_key_release(&k);
	if (dropped && f != f->m->dropped)
		metric_add(f->m->dropped, 1, METRIC_LABELS(f->name));
}

static void check_type(const struct metric_family *f, const char *op, bool ok)
{
	if (!ok)
		die("%s: %s on a %s", f->name, op, type_names[f->type]);
}

void metric_add(struct metric_family *f, double v, const char *const *label_values)
{
	check_type(f, "add", f->type == METRIC_COUNTER || f->type == METRIC_GAUGE);
	if (isnan(v) || (f->type == METRIC_COUNTER && v < 0))
		return;
	update(f, OP_ADD, v, 0, NULL, label_values);
}

void metric_set(struct metric_family *f, double v, const char *const *label_values)
{
	check_type(f, "set", f->type == METRIC_COUNTER || f->type == METRIC_GAUGE);
	if (f->type == METRIC_COUNTER && (isnan(v) || v < 0))
		return;
	update(f, OP_SET, v, 0, NULL, label_values);
}

void metric_observe(struct metric_family *f, double v, const char *const *label_values)
{
	check_type(f, "observe", f->type == METRIC_SUMMARY || f->type == METRIC_HISTOGRAM);
	if (isnan(v))
		return;
	update(f, OP_OBSERVE, v, 0, NULL, label_values);
}

void metric_summary_set(struct metric_family *f, double sum, uint64_t count, const char *const *label_values)
{
	check_type(f, "summary_set", f->type == METRIC_SUMMARY);
	update(f, OP_SUMMARY_SET, sum, count, NULL, label_values);
}

void metric_histogram_set(struct metric_family *f, const uint64_t *counts, size_t n, double sum,
			  const char *const *label_values)
{
	check_type(f, "histogram_set", f->type == METRIC_HISTOGRAM);
	if (n != f->nbounds + 1)
		die("%s: histogram_set with %zu buckets, the family has %zu and +Inf", f->name, n, f->nbounds);
	update(f, OP_HISTOGRAM_SET, sum, 0, counts, label_values);
}

void metric_reset(struct metric_family *f)
{
	lock(&f->mu);
	hashmap_release(&f->series, series_free);
	hashmap_init(&f->series);
	unlock(&f->mu);
}

double metric_value(struct metric_family *f, const char *const *label_values)
{
	struct series_key k;
	double v = 0;

	series_key_init(&k, f, label_values);
	lock(&f->mu);
	const struct metric_series *s = hashmap_get(&f->series, k.key);
	if (s)
		v = f->type == METRIC_COUNTER || f->type == METRIC_GAUGE ? s->value : (double)s->count;
	unlock(&f->mu);
	series_key_release(&k);
	return v;
}

/* ---- rendering ---- */

/* By label values; a family's series all have the same number (the rest are NULL). */
static int series_cmp(const void *a, const void *b)
{
	const struct metric_series *x = *(const struct metric_series *const *)a;
	const struct metric_series *y = *(const struct metric_series *const *)b;

	for (size_t i = 0; i < METRICS_MAX_LABELS && x->values[i]; i++) {
		int c = strcmp(x->values[i], y->values[i]);
		if (c)
			return c;
	}
	return 0;
}

/* name{l1="v1",...,extra_name="extra_value"} value\n */
static void put_sample(struct strbuf *sb, const struct metric_family *f, const char *suffix,
		       const struct metric_series *s, const char *extra_name, const char *extra_value,
		       const char *value)
{
	bool any = f->nlabels > 0 || extra_name;

	puts_sb(sb, f->name);
	puts_sb(sb, suffix);
	if (any) {
		put(sb, "{", 1);
		for (size_t i = 0; i < f->nlabels; i++) {
			if (i)
				put(sb, ",", 1);
			puts_sb(sb, f->label_names[i]);
			put(sb, "=\"", 2);
			put_escaped(sb, s->values[i], true);
			put(sb, "\"", 1);
		}
		if (extra_name) {
			if (f->nlabels)
				put(sb, ",", 1);
			puts_sb(sb, extra_name);
			put(sb, "=\"", 2);
			puts_sb(sb, extra_value);
			put(sb, "\"", 1);
		}
		put(sb, "}", 1);
	}
	put(sb, " ", 1);
	puts_sb(sb, value);
	put(sb, "\n", 1);
}

static void put_count(struct strbuf *sb, const struct metric_family *f, const char *suffix,
		      const struct metric_series *s, const char *extra_name, const char *extra_value,
		      uint64_t n)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, n);
	put_sample(sb, f, suffix, s, extra_name, extra_value, num);
}

static void render_series(struct strbuf *sb, const struct metric_family *f, const struct metric_series *s)
{
	char num[40];

	switch (f->type) {
	case METRIC_COUNTER:
	case METRIC_GAUGE:
		format_double(num, s->value);
		put_sample(sb, f, "", s, NULL, NULL, num);
		break;
	case METRIC_HISTOGRAM: {
		uint64_t cumulative = 0;
		for (size_t i = 0; i < f->nbounds; i++) {
			char le[40];
			cumulative += s->buckets[i];
			format_double(le, f->bounds[i]);

			put_count(sb, f, "_bucket", s, "le", le, cumulative);
		}
		put_count(sb, f, "_bucket", s, "le", "+Inf", s->count);
	}
		/* fall through */
	case METRIC_SUMMARY:
		format_double(num, s->value);
		put_sample(sb, f, "_sum", s, NULL, NULL, num);
		put_count(sb, f, "_count", s, NULL, NULL, s->count);
		break;
	}
}

/* Call with f->mu held. */
static void render_family(struct strbuf *sb, struct metric_family *f)
{
	size_t n = hashmap_len(&f->series), i = 0;
	struct hashmap_iter it;
	const char *key;
	void *value;

	if (!n)
		return;
	struct metric_series **all = xmalloc(n * sizeof(*all));
	hashmap_iter_init(&it, &f->series);
	while (hashmap_iter_next(&it, &key, &value))
		all[i++] = value;
	qsort(all, n, sizeof(*all), series_cmp);

	puts_sb(sb, "# HELP ");
	puts_sb(sb, f->name);
	put(sb, " ", 1);
	put_escaped(sb, f->help, false);
	puts_sb(sb, "\n# TYPE ");
	puts_sb(sb, f->name);
	put(sb, " ", 1);
	puts_sb(sb, type_names[f->type]);
	put(sb, "\n", 1);
	for (i = 0; i < n; i++)
		render_series(sb, f, all[i]);
	free(all);
}

char *metrics_render(struct metrics *m)
{
	struct strbuf sb = STRBUF_INIT;

	lock(&m->render_mu);

	/* Collectors may register families or add collectors: run them on a
	 * copy of the list, without m->mu. */
	lock(&m->mu);
	size_t nc = m->ncollectors;
	struct collector *cs = xmalloc((nc ? nc : 1) * sizeof(*cs));
	if (nc)
		memcpy(cs, m->collectors, nc * sizeof(*cs));
	unlock(&m->mu);
	for (size_t i = 0; i < nc; i++)
		cs[i].fn(cs[i].ctx, m);
	free(cs);

	/* Families are never freed before the registry, so a copy of the
	 * (sorted) pointer array stays valid without m->mu. */
	lock(&m->mu);
	size_t nf = m->nfamilies;
	struct metric_family **fs = xmalloc(nf * sizeof(*fs));
	memcpy(fs, m->families, nf * sizeof(*fs));
	unlock(&m->mu);
	for (size_t i = 0; i < nf; i++) {
		lock(&fs[i]->mu);
		render_family(&sb, fs[i]);
		unlock(&fs[i]->mu);
	}
	free(fs);

	unlock(&m->render_mu);
	return strbuf_detach(&sb);
}
