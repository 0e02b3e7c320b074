/*
 * kubectl's JSONPath templates, the subset in plugin_jsonpath.h: parsed
 * once into a tree of text, paths and ranges, then evaluated over a
 * document.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_jsonpath.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

#define SUPPORTED "supported: .field, ['key'], [N], [*], {range ...}{end}, {\"literal\"}"

enum step_kind { STEP_KEY, STEP_INDEX, STEP_ALL };

struct step {
	enum step_kind kind;
	char *key; /* owned; STEP_KEY */
	long long index;
};

struct path {
	struct step *steps; /* owned */
	size_t n, cap;
};

enum node_kind { NODE_TEXT, NODE_PATH, NODE_RANGE };

struct node {
	enum node_kind kind;
	char *text;        /* owned; NODE_TEXT */
	struct path path;  /* NODE_PATH, NODE_RANGE */
	struct jsonpath *body; /* owned; NODE_RANGE: what is printed for each item */
};

struct jsonpath {
	struct node *nodes; /* owned */
	size_t n, cap;
};

struct parser {
	const char *start; /* the whole template, for messages */
	const char *p;
	char *err;
};

static void path_release(struct path *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->steps[i].key);
	free(p->steps);
}

void jsonpath_free(struct jsonpath *jp)
{
	if (!jp)
		return;
	for (size_t i = 0; i < jp->n; i++) {
		free(jp->nodes[i].text);
		path_release(&jp->nodes[i].path);
		jsonpath_free(jp->nodes[i].body);
	}
	free(jp->nodes);
	free(jp);
}

/* Notes the first error, at the parser's position. Returns -1. */
static int refuse(struct parser *ps, const char *what)
{
	if (!ps->err)
		ps->err = xasprintf("jsonpath template \"%s\": %s (at character %zu); " SUPPORTED, ps->start, what,
				    (size_t)(ps->p - ps->start) + 1);
	return -1;
}

static struct node *add_node(struct jsonpath *jp, enum node_kind kind)
{
	jp->nodes = xgrow(jp->nodes, &jp->cap, jp->n + 1, sizeof(*jp->nodes));
	struct node *n = &jp->nodes[jp->n++];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	return n;
}

static struct step *add_step(struct path *p, enum step_kind kind)
{
	p->steps = xgrow(p->steps, &p->cap, p->n + 1, sizeof(*p->steps));
	struct step *s = &p->steps[p->n++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

static void skip_spaces(struct parser *ps)
{
	while (*ps->p == ' ')
		ps->p++;
}

/* A quoted literal at ps->p ('...' or "..."), escapes \n \t \r \\ \" \': a new string, or NULL after refuse. */
static char *quoted(struct parser *ps)
{
	char q = *ps->p++;
	struct strbuf sb = STRBUF_INIT;
	for (; *ps->p && *ps->p != q; ps->p++) {
		char c = *ps->p;
		if (c == '\\') {
			switch (*++ps->p) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '\\': case '"': case '\'': c = *ps->p; break;
			default:
				strbuf_release(&sb);
				refuse(ps, "unknown escape in a quoted literal (use \\n, \\t, \\r, \\\\, \\\" or \\')");
				return NULL;
			}
		}
		strbuf_appendf(&sb, "%c", c);
	}
	if (!*ps->p) {
		strbuf_release(&sb);
		refuse(ps, "quoted literal not closed");
		return NULL;
	}
	ps->p++;
	return strbuf_detach(&sb);
}

/* [...] after a path's start: [*], [N], ['key'], ["key"]. */
static int bracket(struct parser *ps, struct path *path)
{
	ps->p++;
	if (*ps->p == '*' && ps->p[1] == ']') {
		add_step(path, STEP_ALL);
		ps->p += 2;
		return 0;
	}
	if (*ps->p == '\'' || *ps->p == '"') {
		char *key = quoted(ps);
		if (!key)
			return -1;
		add_step(path, STEP_KEY)->key = key;
	} else if (*ps->p == '?') {
		return refuse(ps, "filters [?(...)] are not supported");
	} else if (*ps->p == '-' || isdigit((unsigned char)*ps->p)) {
		char *end;
		long long v = strtoll(ps->p, &end, 10);
		if (end == ps->p + (*ps->p == '-'))
			return refuse(ps, "expected an index after '['");
		ps->p = end;
		if (*ps->p == ':')
			return refuse(ps, "slices [a:b] are not supported");
		add_step(path, STEP_INDEX)->index = v;
	} else if (*ps->p == ':') {
		return refuse(ps, "slices [a:b] are not supported");
	} else {
		return refuse(ps, "expected *, an index or a quoted key after '['");
	}
	if (*ps->p == ',')
		return refuse(ps, "unions [a,b] are not supported");
	if (*ps->p != ']')
		return refuse(ps, "expected ']'");
	ps->p++;
	return 0;
}

/* .name, with "\." for a dot inside the name (kubectl's way to reach "example.com/key"). */
static int dotted(struct parser *ps, struct path *path)
{
	ps->p++;
	if (*ps->p == '.')
		return refuse(ps, "recursive descent \"..\" is not supported");
	if (*ps->p == '*')
		return refuse(ps, "\".*\" is not supported; use [*]");
	struct strbuf sb = STRBUF_INIT;
	while (*ps->p && !strchr(".[}) ", *ps->p)) {
		if (*ps->p == '\\' && ps->p[1] == '.')
			ps->p++;
		strbuf_appendf(&sb, "%c", *ps->p++);
	}
	if (!sb.len) {
		strbuf_release(&sb);
		/* "{.}" alone: the current object. */
		if (*ps->p == '}' || *ps->p == ' ')
			return 0;
		return refuse(ps, "expected a field name after '.'");
	}
	add_step(path, STEP_KEY)->key = strbuf_detach(&sb);
	return 0;
}

/* A path up to the closing brace (or a space before it). */
static int parse_path(struct parser *ps, struct path *path)
{
	if (*ps->p == '$' || *ps->p == '@')
		ps->p++;
	else if (*ps->p != '.' && *ps->p != '[')
		return refuse(ps, "expected .field, [...] or a \"quoted literal\" after '{'");
	while (*ps->p && *ps->p != '}' && *ps->p != ' ') {
		int rc = *ps->p == '.' ? dotted(ps, path) : *ps->p == '[' ? bracket(ps, path) : -2;
		if (rc == -2)
			return refuse(ps, *ps->p == '(' || *ps->p == ')' ? "expressions (...) are not supported"
									   : "unexpected character in a path");
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int close_brace(struct parser *ps)
{
	skip_spaces(ps);
	if (*ps->p != '}')
		return refuse(ps, *ps->p ? "expected '}'" : "'{' not closed");
	ps->p++;
	return 0;
}

/* word at ps->p, followed by one of after (a path may follow "range" without a space: {range[*]}). */
static bool keyword(struct parser *ps, const char *word, const char *after)
{
	size_t n = strlen(word);
	if (strncmp(ps->p, word, n) || !ps->p[n] || !strchr(after, ps->p[n]))
		return false;
	ps->p += n;
	skip_spaces(ps);
	return true;
}

/* Text and {...} up to the end, or up to {end} when in_range. */
static int parse_seq(struct parser *ps, struct jsonpath *jp, bool in_range)
{
	for (;;) {
		if (!*ps->p)
			return in_range ? refuse(ps, "{range} without {end}") : 0;
		if (*ps->p != '{') {
			const char *brace = strchr(ps->p, '{');
			size_t len = brace ? (size_t)(brace - ps->p) : strlen(ps->p);
			add_node(jp, NODE_TEXT)->text = xstrndup(ps->p, len);
			ps->p += len;
			continue;
		}
		ps->p++;
		skip_spaces(ps);
		if (keyword(ps, "end", " }")) {
			if (!in_range)
				return refuse(ps, "{end} without {range}");
			return close_brace(ps);
		}
		if (keyword(ps, "range", " .[$@")) {
			struct node *n = add_node(jp, NODE_RANGE);
			n->body = xcalloc(1, sizeof(*n->body));
			if (parse_path(ps, &n->path) < 0 || close_brace(ps) < 0 || parse_seq(ps, n->body, true) < 0)
				return -1;
			continue;
		}
		if (*ps->p == '"' || *ps->p == '\'') {
			char *text = quoted(ps);
			if (!text)
				return -1;
			add_node(jp, NODE_TEXT)->text = text;
		} else if (parse_path(ps, &add_node(jp, NODE_PATH)->path) < 0) {
			return -1;
		}
		if (close_brace(ps) < 0)
			return -1;
	}
}

int jsonpath_parse(const char *template, struct jsonpath **out, char **err)
{
	struct parser ps = {.start = template, .p = template};
	struct jsonpath *jp = xcalloc(1, sizeof(*jp));
	*out = NULL;
	if (parse_seq(&ps, jp, false) < 0) {
		jsonpath_free(jp);
		*err = ps.err;
		return -1;
	}
	*out = jp;
	return 0;
}

/* ---- evaluation ---- */

/* The values path reaches from cur: a new array (of references into the document). */
static int eval_path(const struct path *path, const json_t *cur, json_t **out, char **err)
{
	json_t *now = json_array();
	json_array_append(now, (json_t *)cur);
	for (size_t i = 0; i < path->n; i++) {
		const struct step *s = &path->steps[i];
		json_t *next = json_array();
		size_t k;
		json_t *v;
		json_array_foreach(now, k, v) {
			if (s->kind == STEP_KEY) {
				json_t *x = json_object_get(v, s->key);
				if (x)
					json_array_append(next, x);
			} else if (s->kind == STEP_ALL) {
				size_t j;
				json_t *x;
				const char *key;
				if (json_is_array(v))
					json_array_foreach(v, j, x)
						json_array_append(next, x);
				else if (json_is_object(v))
					json_object_foreach(v, key, x)
						json_array_append(next, x);
			} else if (json_is_array(v)) {
				long long len = (long long)json_array_size(v);
				long long at = s->index < 0 ? len + s->index : s->index;
				if (at < 0 || at >= len) {
					*err = xasprintf("jsonpath: index [%lld] is out of range (%lld item%s)", s->index, len,
							 len == 1 ? "" : "s");
					json_decref(next);
					json_decref(now);
					return -1;
				}
				json_array_append(next, json_array_get(v, (size_t)at));
			}
		}
		json_decref(now);
		now = next;
	}
	*out = now;
	return 0;
}

/* One value as kubectl prints it: strings bare, the rest as compact JSON; clean of controls. */
static void print_value(struct strbuf *sb, const json_t *v)
{
	if (json_is_string(v)) {
		char *clean = text_sanitize(json_string_value(v), 0);
		strbuf_appendf(sb, "%s", clean);
		free(clean);
		return;
	}
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	char *shown = text_escape_json(text ? text : "");
	strbuf_appendf(sb, "%s", shown);
	free(shown);
	free(text);
}

static int eval_seq(const struct jsonpath *jp, const json_t *cur, struct strbuf *sb, char **err)
{
	for (size_t i = 0; i < jp->n; i++) {
		const struct node *n = &jp->nodes[i];
		if (n->kind == NODE_TEXT) {
			strbuf_appendf(sb, "%s", n->text);
			continue;
		}
		json_t *found = NULL;
		if (eval_path(&n->path, cur, &found, err) < 0)
			return -1;
		/* {range .items} over one array goes through its items, as {range .items[*]} does. */
		json_t *items = found;
		bool last_all = n->path.n && n->path.steps[n->path.n - 1].kind == STEP_ALL;
		if (n->kind == NODE_RANGE && !last_all && json_array_size(found) == 1)
			items = json_array_get(found, 0);
		size_t k;
		json_t *v;
		int rc = 0;
		if (n->kind == NODE_RANGE && !json_is_array(items)) {
			*err = xstrdup("jsonpath: {range} needs a list (end the path with [*])");
			rc = -1;
		} else {
			json_array_foreach(items, k, v) {
				if (n->kind == NODE_RANGE) {
					if ((rc = eval_seq(n->body, v, sb, err)) < 0)
						break;
				} else {
					if (k)
						strbuf_appendf(sb, " ");
					print_value(sb, v);
				}
			}
		}
		json_decref(found);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int jsonpath_eval(const struct jsonpath *jp, const json_t *doc, char **out, char **err)
{
	struct strbuf sb = STRBUF_INIT;
	*out = NULL;
	if (eval_seq(jp, doc, &sb, err) < 0) {
		strbuf_release(&sb);
		return -1;
	}
	*out = strbuf_detach(&sb);
	return 0;
}
