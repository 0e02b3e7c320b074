/*
 * YAML text -> a jansson tree: the YAML 1.2 core schema, anchors and
 * aliases, "<<" merge keys; the first document only. Used for kubeconfig
 * files and for the YAML users write into annotations. Also JSON text
 * under the same limits.
 *
 * The limits count each alias as a copy of what it names: an anchor
 * records the nodes and bytes its node expanded to, and every alias adds
 * them again to the document's totals. A billion-laughs document (ten
 * aliases of ten aliases of ...) is thus refused after a few hundred
 * events, with memory proportional to its text, instead of being accepted
 * as a small tree of shared references that the first deep copy or
 * json_dumps turns into gigabytes.
 */
#include "util/yaml_json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/json_budget.h"
#include "util/xalloc.h"

#define WUR __attribute__((warn_unused_result))

#define YAML_MAX_MERGED 100000u /* "<<" key copies per document */

/*
 * Annotation values: Kubernetes allows 256 KiB for all of an object's
 * annotations together, so no real value is larger. A Pod spec nests about
 * ten levels; 64 leaves room and keeps recursive code (jansson's copy and
 * dump) shallow. Real templates use a handful of anchors; 1000 also bounds
 * the anchor look-ups (each alias scans the anchors). 100,000 keys and
 * values and 1 MiB of their text is far beyond any Pod (etcd stores at most
 * 1.5 MiB per object, so a larger template could never become a pod) and
 * costs a deep copy some 10 MB at most. 8 MiB of parsed tree holds them
 * with room (250 KiB of Pod template costs 2.7 MiB, 100,000 numbers
 * 5.3 MiB; bench_parse_cost), where 250 KiB of "{}" would cost 20 MiB.
 */
const struct doc_limits doc_limits_annotation = {
	.max_bytes = 256u * 1024u,
	.max_depth = DOC_MAX_DEPTH,
	.max_aliases = 1000u,
	.max_nodes = 100000u,
	.max_expanded_bytes = 1024u * 1024u,
	.max_parsed_bytes = 8u * 1024u * 1024u,
	.budget = "the budget for an annotation",
};

/*
 * Files: the kubeconfig reader takes up to 16 MiB; aliases may expand that
 * fourfold. A file is the admin's, read once at start: its budget only
 * keeps a mistake from taking the whole memory limit.
 */
const struct doc_limits doc_limits_file = {
	.max_bytes = 16u * 1024u * 1024u,
	.max_depth = DOC_MAX_DEPTH,
	.max_aliases = 10000u,
	.max_nodes = 4u * 1000u * 1000u,
	.max_expanded_bytes = 64u * 1024u * 1024u,
	.max_parsed_bytes = 64u * 1024u * 1024u,
	.budget = "the budget for a file",
};

/* jansson reports out-of-memory as NULL / -1; the daemon aborts on OOM. */
static json_t *jcheck(json_t *v)
{
	if (!v) {
		fputs("stateful-operator: out of memory in jansson\n", stderr);
		abort();
	}
	return v;
}

static void jcheck_rc(int rc)
{
	if (rc != 0) {
		fputs("stateful-operator: out of memory in jansson\n", stderr);
		abort();
	}
}

/* Sets *msg to a new "YAML error at line L, column C: ..." for mark. */
static void yaml_fail(char **msg, const yaml_mark_t *mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int yaml_too_large(char **msg, const yaml_mark_t *mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void yaml_fail(char **msg, const yaml_mark_t *mark, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *what = xvasprintf(fmt, ap);
	va_end(ap);
	*msg = xasprintf("YAML error at line %zu, column %zu: %s", mark->line + 1, mark->column + 1,
			 what);
	free(what);
}

/* Sets *msg to a new "YAML error at line L, column C: too large: ..."; returns DOC_TOO_LARGE. */
static int yaml_too_large(char **msg, const yaml_mark_t *mark, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *what = xvasprintf(fmt, ap);
	va_end(ap);
	*msg = xasprintf("YAML error at line %zu, column %zu: too large: %s", mark->line + 1,
			 mark->column + 1, what);
	free(what);
	return DOC_TOO_LARGE;
}

struct y2j_frame {
	json_t *node;       /* owned: the object or array being built */
	char *anchor;       /* owned; registered once the node is complete */
	char *key;          /* owned; mapping key waiting for its value */
	bool key_is_merge;  /* the pending key is a plain "<<" */
	json_t *merges;     /* owned array of "<<" sources, or NULL */
	size_t nodes0;      /* the document's expanded totals when this node opened */
	size_t bytes0;
};

struct y2j_anchor {
	char *name;         /* owned */
	json_t *value;      /* owned reference */
	size_t nodes;       /* what one alias of it expands to */
	size_t bytes;
};

struct y2j {
	const struct doc_limits *lim; /* borrowed */
	struct y2j_frame stack[DOC_MAX_DEPTH];
	size_t depth;
	struct y2j_anchor *anchors;
	size_t nanchors;
	size_t anchors_cap;
	json_t *root;       /* owned reference, set when the top node completes */
	size_t merged;      /* keys copied by "<<" so far, against YAML_MAX_MERGED */
	size_t refs;        /* anchors and aliases so far, against lim->max_aliases */
	size_t nodes;       /* keys and values so far, aliases expanded */
	size_t bytes;       /* their text, aliases expanded */
};

/*
 * Adds nodes and bytes to the document's expanded totals; refuses past the
 * limits. The totals never exceed the limits, so they cannot overflow.
 */
static WUR int y2j_charge(struct y2j *st, size_t nodes, size_t bytes, const yaml_mark_t *mark, char **msg)
{
	if (nodes > st->lim->max_nodes - st->nodes)
		return yaml_too_large(msg, mark,
				      "more than %zu keys and values once aliases are expanded (each alias "
				      "counts as a copy of what it names); use fewer aliases, or a smaller document",
				      st->lim->max_nodes);
	if (bytes > st->lim->max_expanded_bytes - st->bytes)
		return yaml_too_large(msg, mark,
				      "more than %zu bytes of keys and values once aliases are expanded (each "
				      "alias counts as a copy of what it names); use fewer aliases, or a smaller "
				      "document",
				      st->lim->max_expanded_bytes);
	st->nodes += nodes;
	st->bytes += bytes;
	return 0;
}

/* Counts one anchor or alias against lim->max_aliases. */
static WUR int y2j_count_ref(struct y2j *st, const yaml_mark_t *mark, char **msg)
{
	if (++st->refs > st->lim->max_aliases)
		return yaml_too_large(msg, mark,
				      "more than %zu anchors (&) and aliases (*); write the repeated parts out",
				      st->lim->max_aliases);
	return 0;
}

static void y2j_release(struct y2j *st)
{
	for (size_t i = 0; i < st->depth; i++) {
		json_decref(st->stack[i].node);
		json_decref(st->stack[i].merges);
		free(st->stack[i].anchor);
		free(st->stack[i].key);
	}
	st->depth = 0;
	for (size_t i = 0; i < st->nanchors; i++) {
		free(st->anchors[i].name);
		json_decref(st->anchors[i].value);
	}
	FREE_AND_NULL(st->anchors);
	st->nanchors = 0;
	json_decref(st->root);
	st->root = NULL;
}

/* Registers name -> v (borrowed; a reference is taken), which expands to nodes and bytes. */
static void y2j_anchor_add(struct y2j *st, const char *name, json_t *v, size_t nodes, size_t bytes)
{
	st->anchors = xgrow(st->anchors, &st->anchors_cap, st->nanchors + 1, sizeof(*st->anchors));
	st->anchors[st->nanchors].name = xstrdup(name);
	st->anchors[st->nanchors].value = json_incref(v);
	st->anchors[st->nanchors].nodes = nodes;
	st->anchors[st->nanchors].bytes = bytes;
	st->nanchors++;
}

/* The anchor an alias names (borrowed), or NULL. A redefined anchor means its latest node. */
static const struct y2j_anchor *y2j_anchor_find(const struct y2j *st, const char *name)
{
	for (size_t i = st->nanchors; i > 0; i--) {
		if (!strcmp(st->anchors[i - 1].name, name))
			return &st->anchors[i - 1];
	}
	return NULL;
}

/* True when the innermost open node is a mapping that expects a key next. */
static bool y2j_want_key(const struct y2j *st)
{
	if (st->depth == 0)
		return false;
	const struct y2j_frame *f = &st->stack[st->depth - 1];
	return json_is_object(f->node) && !f->key && !f->key_is_merge;
}

/* Adds a complete value to the innermost open node. Steals v. */
static WUR int y2j_add(struct y2j *st, json_t *v, const yaml_mark_t *mark, char **msg)
{
	if (st->depth == 0) {
		json_decref(st->root);
		st->root = v;
		return 0;
	}
	struct y2j_frame *f = &st->stack[st->depth - 1];
	if (json_is_array(f->node)) {
		jcheck_rc(json_array_append_new(f->node, v));
		return 0;
	}
	if (f->key_is_merge) {
		bool ok = json_is_object(v);
		if (json_is_array(v)) {
			ok = true;
			for (size_t i = 0; i < json_array_size(v); i++)
				ok = ok && json_is_object(json_array_get(v, i));
		}
		if (!ok) {
			json_decref(v);
			yaml_fail(msg, mark, "the value of a \"<<\" merge key must be a mapping "
				  "or a list of mappings");
			return -1;
		}
		if (!f->merges)
			f->merges = jcheck(json_array());
		jcheck_rc(json_array_append_new(f->merges, v));
		f->key_is_merge = false;
		return 0;
	}
	jcheck_rc(json_object_set_new_nocheck(f->node, f->key, v));
	FREE_AND_NULL(f->key);
	return 0;
}

static bool scalar_is(const char *s, size_t len, const char *const *words)
{
	for (; *words; words++) {
		if (strlen(*words) == len && !memcmp(s, *words, len))
			return true;
	}
	return false;
}

static const char *const yaml_nulls[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const yaml_trues[] = {"true", "True", "TRUE", NULL};
static const char *const yaml_falses[] = {"false", "False", "FALSE", NULL};

/* YAML 1.2 core schema integer; false when it is not one or does not fit. */
static bool yaml_core_int(const char *s, size_t len, json_int_t *out)
{
	int base = 10;
	const char *digits = s;
	size_t n = len;
	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		base = s[1] == 'o' ? 8 : 16;
		digits = s + 2;
		n = len - 2;
	} else if (len > 1 && (s[0] == '-' || s[0] == '+')) {
		digits = s + 1;
		n = len - 1;
	}
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)digits[i];
		bool ok = base == 16 ? isxdigit(c) : (c >= '0' && c < (base == 8 ? '8' : ':'));
		if (!ok)
			return false;
	}
	errno = 0;
	char *end = NULL;
	long long v = strtoll(base == 10 ? s : digits, &end, base);
	if (errno || end != s + len)
		return false;
	*out = (json_int_t)v;
	return true;
}

/* YAML 1.2 core schema float, finite values only (JSON has no inf/nan). */
static bool yaml_core_float(const char *s, size_t len, double *out)
{
	size_t i = 0, int_digits = 0, frac_digits = 0;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < len && isdigit((unsigned char)s[i])) {
		i++;
		int_digits++;
	}
	if (i < len && s[i] == '.') {
		i++;
		while (i < len && isdigit((unsigned char)s[i])) {
			i++;
			frac_digits++;
		}
	}
	if (int_digits == 0 && frac_digits == 0)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		size_t exp_digits = 0;
		while (i < len && isdigit((unsigned char)s[i])) {
			i++;
			exp_digits++;
		}
		if (exp_digits == 0)
			return false;
	}
	if (i != len)
		return false;
	char *end = NULL;
	double v = strtod(s, &end);
	if (end != s + len || !isfinite(v))
		return false;
	*out = v;
	return true;
}

/* Scalar event -> new JSON value. Untagged plain scalars are resolved by the core schema. */
static WUR int yaml_scalar_value(const yaml_event_t *ev, json_t **out, char **msg)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	const char *want = NULL; /* core type asked for by an explicit tag */
	static const char core_prefix[] = "tag:yaml.org,2002:";
	json_int_t iv;
	double dv;

	if (tag) {
		if (strncmp(tag, core_prefix, sizeof(core_prefix) - 1) != 0) {
			*out = jcheck(json_stringn_nocheck(s, len)); /* "!" and local tags */
			return 0;
		}
		want = tag + sizeof(core_prefix) - 1;
		if (strcmp(want, "null") && strcmp(want, "bool") && strcmp(want, "int") &&
		    strcmp(want, "float")) {
			*out = jcheck(json_stringn_nocheck(s, len)); /* str, binary, timestamp, ... */
			return 0;
		}
	} else if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !ev->data.scalar.plain_implicit) {
		*out = jcheck(json_stringn_nocheck(s, len));
		return 0;
	}

	if ((!want || !strcmp(want, "null")) && scalar_is(s, len, yaml_nulls)) {
		*out = json_null();
		return 0;
	}
	if ((!want || !strcmp(want, "bool")) && scalar_is(s, len, yaml_trues)) {
		*out = json_true();
		return 0;
	}
	if ((!want || !strcmp(want, "bool")) && scalar_is(s, len, yaml_falses)) {
		*out = json_false();
		return 0;
	}
	if ((!want || !strcmp(want, "int")) && yaml_core_int(s, len, &iv)) {
		*out = jcheck(json_integer(iv));
		return 0;
	}
	if ((!want || !strcmp(want, "float")) && yaml_core_float(s, len, &dv)) {
		*out = jcheck(json_real(dv));
		return 0;
	}
	if (want) {
		yaml_fail(msg, &ev->start_mark, "value is not a valid !!%s", want);
		return -1;
	}
	*out = jcheck(json_stringn_nocheck(s, len));
	return 0;
}

static WUR int y2j_scalar(struct y2j *st, const yaml_event_t *ev, char **msg)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *anchor = (const char *)ev->data.scalar.anchor;

	if (anchor && y2j_count_ref(st, &ev->start_mark, msg) < 0)
		return DOC_TOO_LARGE;
	if (y2j_charge(st, 1, len, &ev->start_mark, msg) < 0)
		return DOC_TOO_LARGE;
	if (y2j_want_key(st)) {
		struct y2j_frame *f = &st->stack[st->depth - 1];
		if (memchr(s, '\0', len)) {
			yaml_fail(msg, &ev->start_mark, "mapping key contains a NUL character");
			return -1;
		}
		if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag &&
		    len == 2 && !memcmp(s, "<<", 2)) {
			f->key_is_merge = true;
			return 0;
		}
		if (json_object_get(f->node, s)) {
			yaml_fail(msg, &ev->start_mark, "duplicate key \"%s\"", s);
			return -1;
		}
		if (anchor) {
			json_t *k = jcheck(json_string_nocheck(s));
			y2j_anchor_add(st, anchor, k, 1, len);
			json_decref(k);
		}
		f->key = xstrndup(s, len);
		return 0;
	}

	json_t *v = NULL;
	if (yaml_scalar_value(ev, &v, msg) < 0)
		return -1;
	if (anchor)
		y2j_anchor_add(st, anchor, v, 1, len);
	return y2j_add(st, v, &ev->start_mark, msg);
}

static WUR int y2j_start(struct y2j *st, const yaml_event_t *ev, bool mapping, char **msg)
{
	const yaml_char_t *anchor = mapping ? ev->data.mapping_start.anchor
					    : ev->data.sequence_start.anchor;
	if (y2j_want_key(st)) {
		yaml_fail(msg, &ev->start_mark,
			  "a mapping key must be a plain value, not a list or a mapping");
		return -1;
	}
	size_t max_depth = st->lim->max_depth < DOC_MAX_DEPTH ? st->lim->max_depth : DOC_MAX_DEPTH;
	if (st->depth == max_depth)
		return yaml_too_large(msg, &ev->start_mark,
				      "mappings and lists nested deeper than %zu levels; flatten the document",
				      max_depth);
	if (anchor && y2j_count_ref(st, &ev->start_mark, msg) < 0)
		return DOC_TOO_LARGE;
	size_t nodes0 = st->nodes, bytes0 = st->bytes;
	if (y2j_charge(st, 1, 0, &ev->start_mark, msg) < 0)
		return DOC_TOO_LARGE;
	struct y2j_frame *f = &st->stack[st->depth++];
	memset(f, 0, sizeof(*f));
	f->nodes0 = nodes0;
	f->bytes0 = bytes0;
	f->node = jcheck(mapping ? json_object() : json_array());
	f->anchor = anchor ? xstrdup((const char *)anchor) : NULL;
	return 0;
}

/*
 * Applies "<<" sources: explicit keys win, then earlier sources over later
 * ones. Refuses to copy more than YAML_MAX_MERGED keys in all, so aliases
 * cannot make the work grow far beyond the input.
 */
static WUR int y2j_apply_merges(struct y2j *st, json_t *obj, json_t *merges, const yaml_mark_t *mark,
			    char **msg)
{
	for (size_t i = 0; i < json_array_size(merges); i++) {
		json_t *src = json_array_get(merges, i);
		size_t n = json_is_array(src) ? json_array_size(src) : 1;
		for (size_t j = 0; j < n; j++) {
			json_t *m = json_is_array(src) ? json_array_get(src, j) : src;
			const char *k;
			json_t *v;
			st->merged += json_object_size(m);
			if (st->merged > YAML_MAX_MERGED)
				return yaml_too_large(msg, mark, "\"<<\" merge keys copy more than %u keys; "
						      "write the keys out, or merge fewer",
						      YAML_MAX_MERGED);
			json_object_foreach(m, k, v) {
				if (!json_object_get(obj, k))
					jcheck_rc(json_object_set_nocheck(obj, k, v));
			}
		}
	}
	return 0;
}

static WUR int y2j_end(struct y2j *st, const yaml_event_t *ev, char **msg)
{
	struct y2j_frame f = st->stack[--st->depth];
	int r = f.merges ? y2j_apply_merges(st, f.node, f.merges, &ev->start_mark, msg) : 0;
	if (r < 0) {
		json_decref(f.node);
		json_decref(f.merges);
		free(f.key);
		free(f.anchor);
		return r;
	}
	json_decref(f.merges);
	free(f.key);
	/*
	 * What the node expanded to, its own aliases included; "<<" sources
	 * were counted where they were written, and the merged keys are no more.
	 */
	if (f.anchor)
		y2j_anchor_add(st, f.anchor, f.node, st->nodes - f.nodes0, st->bytes - f.bytes0);
	free(f.anchor);
	return y2j_add(st, f.node, &ev->start_mark, msg);
}

static WUR int y2j_alias(struct y2j *st, const yaml_event_t *ev, char **msg)
{
	const char *name = (const char *)ev->data.alias.anchor;
	if (y2j_count_ref(st, &ev->start_mark, msg) < 0)
		return DOC_TOO_LARGE;
	const struct y2j_anchor *a = y2j_anchor_find(st, name);
	if (!a) {
		yaml_fail(msg, &ev->start_mark, "alias *%s names no anchor defined before it", name);
		return -1;
	}
	json_t *v = a->value;
	if (y2j_charge(st, a->nodes, a->bytes, &ev->start_mark, msg) < 0)
		return DOC_TOO_LARGE;
	if (y2j_want_key(st)) {
		if (!json_is_string(v)) {
			yaml_fail(msg, &ev->start_mark,
				  "alias *%s used as a mapping key does not name a string", name);
			return -1;
		}
		struct y2j_frame *f = &st->stack[st->depth - 1];
		const char *k = json_string_value(v);
		if (json_object_get(f->node, k)) {
			yaml_fail(msg, &ev->start_mark, "duplicate key \"%s\"", k);
			return -1;
		}
		f->key = xstrdup(k);
		return 0;
	}
	return y2j_add(st, json_incref(v), &ev->start_mark, msg);
}

/* A new message: the tree would pass lim's max_parsed_bytes. */
static char *parsed_too_large(const char *format, const struct doc_limits *lim)
{
	return xasprintf("%s error: too large: its parsed tree takes more than %zu bytes of memory, %s; "
			 "write a smaller document",
			 format, lim->max_parsed_bytes, lim->budget ? lim->budget : "the parse budget");
}

/* A new message for a libyaml parse failure, with line and column. */
static char *yaml_problem(const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "unknown problem";
	if (p->error == YAML_READER_ERROR)
		return xasprintf("YAML input error at byte %zu: %s", p->problem_offset, problem);
	if (p->context)
		return xasprintf("YAML syntax error at line %zu, column %zu: %s %s (line %zu, column %zu)",
				 p->problem_mark.line + 1, p->problem_mark.column + 1, problem,
				 p->context, p->context_mark.line + 1, p->context_mark.column + 1);
	return xasprintf("YAML syntax error at line %zu, column %zu: %s",
			 p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

int yaml_to_json(const char *text, size_t len, json_t **out, char **msg)
{
	return yaml_to_json_limited(text, len, &doc_limits_file, out, msg);
}

/*
 * Converts the first YAML document of text to JSON under lim. On success
 * *out is a new reference (JSON null for an empty document); on failure
 * *msg is a new message with the line and column, without a file prefix.
 */
int yaml_to_json_limited(const char *text, size_t len, const struct doc_limits *lim, json_t **out,
			 char **msg)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	bool have_ev = false, done = false;
	struct y2j st;
	int rc = DOC_INVALID;

	*out = NULL;
	if (len > lim->max_bytes) {
		*msg = xasprintf("YAML error: too large: %zu bytes, more than the %zu read; shorten it", len,
				 lim->max_bytes);
		return DOC_TOO_LARGE;
	}
	memset(&st, 0, sizeof(st));
	st.lim = lim;
	if (!yaml_parser_initialize(&parser)) {
		fputs("stateful-operator: out of memory in libyaml\n", stderr);
		abort();
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	struct json_budget budget;
	json_budget_open(&budget, lim->max_parsed_bytes ? lim->max_parsed_bytes : SIZE_MAX);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			*msg = yaml_problem(&parser);
			goto out;
		}
		have_ev = true;
		int r = 0;
		switch (ev.type) {
		case YAML_DOCUMENT_END_EVENT: /* the first document is the kubeconfig */
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_SCALAR_EVENT:
			r = y2j_scalar(&st, &ev, msg);
			break;
		case YAML_SEQUENCE_START_EVENT:
			r = y2j_start(&st, &ev, false, msg);
			break;
		case YAML_MAPPING_START_EVENT:
			r = y2j_start(&st, &ev, true, msg);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			r = y2j_end(&st, &ev, msg);
			break;
		case YAML_ALIAS_EVENT:
			r = y2j_alias(&st, &ev, msg);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		have_ev = false;
		if (r < 0) {
			rc = r;
			goto out;
		}
		if (budget.overrun) {
			*msg = parsed_too_large("YAML", lim);
			rc = DOC_TOO_LARGE;
			goto out;
		}
	}
	*out = st.root ? st.root : json_null();
	st.root = NULL;
	rc = 0;
out:
	json_budget_close(&budget);
	if (have_ev)
		yaml_event_delete(&ev);
	y2j_release(&st);
	yaml_parser_delete(&parser);
	return rc;
}

/*
 * Checks JSON text against lim before it is parsed: nesting depth, and
 * values counted as 1 + containers + commas (exact for non-empty
 * containers, more for empty ones). Brackets and commas inside strings do
 * not count. Text that is not JSON gets numbers that mean nothing, so the
 * caller looks at them only for text that opens like JSON.
 */
static WUR int json_prescan(const char *text, size_t len, const struct doc_limits *lim, char **msg)
{
	size_t depth = 0, nodes = 1, line = 1, col = 0;
	bool in_string = false, escaped = false;
	size_t max_depth = lim->max_depth < DOC_MAX_DEPTH ? lim->max_depth : DOC_MAX_DEPTH;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		col++;
		if (c == '\n') {
			line++;
			col = 0;
		}
		if (in_string) {
			if (escaped)
				escaped = false;
			else if (c == '\\')
				escaped = true;
			else if (c == '"')
				in_string = false;
			continue;
		}
		switch (c) {
		case '"':
			in_string = true;
			break;
		case '{':
		case '[':
			if (++depth > max_depth) {
				*msg = xasprintf("JSON error at line %zu, column %zu: too large: objects and "
						 "arrays nested deeper than %zu levels; flatten the document",
						 line, col, max_depth);
				return DOC_TOO_LARGE;
			}
			nodes++;
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			break;
		case ',':
			nodes++;
			break;
		default:
			break;
		}
		if (nodes > lim->max_nodes) {
			*msg = xasprintf("JSON error at line %zu, column %zu: too large: more than %zu values; "
					 "write a smaller document",
					 line, col, lim->max_nodes);
			return DOC_TOO_LARGE;
		}
	}
	return 0;
}

/* The text json_load_limited hands jansson, JSON_BUDGET_CHUNK at a time, until the budget is overrun. */
struct json_feed {
	const char *text;
	size_t len, off;
	struct json_budget budget;
};

static size_t feed_text(void *buffer, size_t size, void *data)
{
	struct json_feed *f = data;
	if (f->budget.overrun)
		return (size_t)-1; /* jansson ends the parse and frees what it built */
	size_t n = f->len - f->off;
	if (n > size)
		n = size;
	if (n > JSON_BUDGET_CHUNK)
		n = JSON_BUDGET_CHUNK;
	memcpy(buffer, f->text + f->off, n);
	f->off += n;
	return n;
}

int json_load_limited(const char *text, size_t len, size_t flags, const struct doc_limits *lim,
		      json_t **out, char **msg)
{
	*out = NULL;
	/* Without aliases the text is its own expansion: both byte limits apply to it. */
	size_t max_bytes = lim->max_bytes < lim->max_expanded_bytes ? lim->max_bytes : lim->max_expanded_bytes;
	if (len > max_bytes) {
		*msg = xasprintf("JSON error: too large: %zu bytes, more than the %zu read; shorten it", len,
				 max_bytes);
		return DOC_TOO_LARGE;
	}
	size_t skip = 0;
	while (skip < len && (text[skip] == ' ' || text[skip] == '\t' || text[skip] == '\r' ||
			      text[skip] == '\n'))
		skip++;
	if (skip < len && (text[skip] == '{' || text[skip] == '[') && json_prescan(text, len, lim, msg) < 0)
		return DOC_TOO_LARGE;
	json_error_t jerr;
	size_t limit = lim->max_parsed_bytes ? lim->max_parsed_bytes : SIZE_MAX;
	size_t headroom = json_budget_headroom(text, len);
	if (headroom >= limit) {
		*msg = xasprintf("JSON error: too large: a string or value so long that reading it takes more than %zu "
				 "bytes of memory, %s; write a smaller document",
				 limit, lim->budget ? lim->budget : "the parse budget");
		return DOC_TOO_LARGE;
	}
	/* Stopped headroom short of the limit, the parse ends within it (json_budget.h). */
	struct json_feed feed = {.text = text, .len = len};
	json_budget_open(&feed.budget, limit - headroom);
	*out = json_load_callback(feed_text, &feed, flags, &jerr);
	json_budget_close(&feed.budget);
	if (feed.budget.overrun) {
		/* Fed in full, jansson may have built it all the same; either way, refused. */
		json_decref(*out);
		*out = NULL;
		*msg = parsed_too_large("JSON", lim);
		return DOC_TOO_LARGE;
	}
	if (*out)
		return 0;
	if (json_error_code(&jerr) == json_error_out_of_memory) {
		fputs("stateful-operator: out of memory in jansson\n", stderr);
		abort();
	}
	*msg = xasprintf("%s at line %d, column %d", jerr.text, jerr.line, jerr.column);
	return DOC_INVALID;
}
