/*
 * JSON -> YAML text through libyaml's emitter (event API), so the quoting
 * and escaping rules are libyaml's, not ours; only the choice of plain or
 * double-quoted style is made here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/json_yaml.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

static const char *const typed_words[] = {
	"", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE",
	/* YAML 1.1 booleans: Go's yaml.v2 and PyYAML still read them so. */
	"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
	".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".nan", ".NaN", ".NAN",
	/* YAML 1.1's merge and value keys: a reader (ours too) gives "<<" a meaning. */
	"<<", "=", NULL,
};

bool yaml_plain_looks_typed(const char *s)
{
	for (size_t i = 0; typed_words[i]; i++)
		if (!strcmp(s, typed_words[i]))
			return true;
	/*
	 * Numbers and times of either YAML version (1e3, 1_000, 12:30, 0x1f,
	 * 0o17, 0b101, 2001-12-14, 2026-11-28T13:00:00Z): a sign, then digits
	 * and the marks numbers and times use (hex digits only after 0x), with
	 * a digit among them. Wider than needed ("1.2.3" is quoted too):
	 * quoting a string never changes it.
	 */
	const char *p = s + (*s == '-' || *s == '+');
	const char *marks = "._:+-eETtZz ";
	if (p[0] == '0' && strchr("xXoObB", p[1]) && p[1]) {
		marks = "_abcdefABCDEF";
		p += 2;
	}
	bool digit = false;
	for (; *p; p++) {
		if (*p >= '0' && *p <= '9')
			digit = true;
		else if (!strchr(marks, *p))
			return false;
	}
	return digit;
}

struct emitter {
	yaml_emitter_t e;
	struct strbuf out;
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct emitter *em = data;
	if (strbuf_add(&em->out, buffer, size) < 0)
		return 0;
	return 1;
}

/* libyaml fails only on misuse (events out of order) or out of memory: both abort here. */
static void emit(struct emitter *em, yaml_event_t *ev)
{
	if (!yaml_emitter_emit(&em->e, ev)) {
		fprintf(stderr, "json_to_yaml: libyaml: %s\n", em->e.problem ? em->e.problem : "emitter error");
		abort();
	}
}

static void scalar(struct emitter *em, const char *text, size_t len, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)len, 1, 1, style))
		abort();
	emit(em, &ev);
}

static void string_scalar(struct emitter *em, const char *s, size_t len)
{
	/* Controls, bidi marks and bad UTF-8 (text_sanitize changes them): escaped, so double quotes. */
	char *clean = text_sanitize(s, 0);
	bool plain = strlen(s) == len && clean && !strcmp(clean, s) && !yaml_plain_looks_typed(s);
	free(clean);
	scalar(em, s, len, plain ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void node(struct emitter *em, const json_t *v)
{
	yaml_event_t ev;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		yaml_mapping_style_t style = json_object_size(v) ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE;
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, style))
			abort();
		emit(em, &ev);
		const char *key;
		const json_t *x;
		json_object_foreach((json_t *)v, key, x) {
			string_scalar(em, key, strlen(key));
			node(em, x);
		}
		yaml_mapping_end_event_initialize(&ev);
		emit(em, &ev);
		break;
	}
	case JSON_ARRAY: {
		yaml_sequence_style_t style = json_array_size(v) ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE;
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, style))
			abort();
		emit(em, &ev);
		size_t i;
		const json_t *x;
		json_array_foreach(v, i, x)
			node(em, x);
		yaml_sequence_end_event_initialize(&ev);
		emit(em, &ev);
		break;
	}
	case JSON_STRING:
		string_scalar(em, json_string_value(v), json_string_length(v));
		break;
	default: {
		/* Numbers, booleans and null as JSON writes them: the core schema reads them back. */
		char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		scalar(em, text, strlen(text), YAML_PLAIN_SCALAR_STYLE);
		free(text);
		break;
	}
	}
}

char *json_to_yaml(const json_t *v)
{
	struct emitter em = {.out = STRBUF_INIT};
	yaml_event_t ev;
	if (!yaml_emitter_initialize(&em.e))
		abort();
	yaml_emitter_set_output(&em.e, write_handler, &em);
	yaml_emitter_set_unicode(&em.e, 1);
	yaml_emitter_set_width(&em.e, -1); /* no folding: a long value stays one line */
	yaml_emitter_set_indent(&em.e, 2);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	emit(&em, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	emit(&em, &ev);
	node(&em, v);
	yaml_document_end_event_initialize(&ev, 1);
	emit(&em, &ev);
	yaml_stream_end_event_initialize(&ev);
	emit(&em, &ev);
	yaml_emitter_delete(&em.e);
	return strbuf_detach(&em.out);
}
