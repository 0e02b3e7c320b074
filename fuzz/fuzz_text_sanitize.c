/*
 * The sanitizer of outside text (util/text_sanitize.c) on any bytes: what
 * it returns is valid UTF-8 with no C0 control, DEL, C1 control or
 * bidirectional control in it, at most the bound (cut at a character
 * boundary), and sanitizing it again changes nothing; the JSON escaping
 * of any string jansson holds reads back as the same string.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "util/text_sanitize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* No byte a terminal acts on; every sequence well-formed (text_utf8_len). */
static void check_inert(const char *s)
{
	for (const char *p = s; *p;) {
		size_t n = text_utf8_len(p);
		FUZZ_CHECK(n > 0, "the output is well-formed UTF-8");
		const unsigned char *u = (const unsigned char *)p;
		FUZZ_CHECK(!(n == 1 && (u[0] < 0x20 || u[0] == 0x7f)), "no C0 control, no DEL");
		FUZZ_CHECK(!(n == 2 && u[0] == 0xc2 && u[1] <= 0x9f), "no C1 control");
		FUZZ_CHECK(!(n == 2 && u[0] == 0xd8 && u[1] == 0x9c), "no U+061C");
		FUZZ_CHECK(!(n == 3 && u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0x8e || u[2] == 0x8f)), "no LRM, RLM");
		FUZZ_CHECK(!(n == 3 && u[0] == 0xe2 && u[1] == 0x80 && u[2] >= 0xa8 && u[2] <= 0xae),
			   "no U+2028..U+202E");
		FUZZ_CHECK(!(n == 3 && u[0] == 0xe2 && u[1] == 0x81 && u[2] >= 0xa6 && u[2] <= 0xa9), "no isolates");
		p += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	/* The first byte picks a bound, 0 (none) or 1 to 255; the rest is the text. */
	size_t max = data[0];
	char *text = fuzz_string(data + 1, size - 1);

	char *clean = text_sanitize(text, max);
	check_inert(clean);
	if (max)
		FUZZ_CHECK(strlen(clean) <= max, "the bound holds");
	char *again = text_sanitize(clean, max);
	FUZZ_CHECK(strcmp(clean, again) == 0, "clean text comes back unchanged");
	json_t *s = json_string(clean);
	FUZZ_CHECK(s != NULL, "jansson takes it (valid UTF-8)");
	json_decref(s);
	free(again);
	free(clean);

	char *repaired = text_utf8_repair(text);
	json_t *value = json_string(repaired ? repaired : text);
	FUZZ_CHECK(value != NULL, "repaired text is valid UTF-8");
	json_t *doc = json_pack("[O, {s:O}]", value, "k", value);
	char *dumped = json_dumps(doc, JSON_INDENT(1));
	char *shown = text_escape_json(dumped);
	json_t *back = json_loads(shown, 0, NULL);
	FUZZ_CHECK(back != NULL && json_equal(back, doc), "the escaped document reads back the same");
	json_decref(back);
	free(shown);
	free(dumped);
	json_decref(doc);
	json_decref(value);
	free(repaired);
	free(text);
	return 0;
}
