#include "client/list_scan.h"

#include <stdbool.h>
#include <string.h>

/*
 * The API server decodes JSON with Go's encoding/json, which stops at
 * 10,000 levels, and custom resources nest as deep as their unknown
 * fields do: the scanner hands over whatever the server can send, and the
 * parser of the item (jansson, 2048 levels) refuses what is too deep with
 * its own words. One bit a level: '{' or '['.
 */
#define MAX_DEPTH 10000

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* s[i] is '"': the index after the closing quote, or 0. */
static size_t string_end(const char *s, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
		else if ((unsigned char)s[i] < 0x20)
			return 0; /* raw control characters are not allowed in strings */
	}
	return 0;
}

size_t json_value_span(const char *s, size_t len)
{
	size_t i = skip_ws(s, len, 0);
	if (i >= len)
		return 0;
	unsigned char is_object[(MAX_DEPTH + 7) / 8] = {0}; /* bit d: level d opened with '{' */
	int depth = 0;
	for (;;) {
		if (i >= len)
			return 0;
		char c = s[i];
		if (c == '"') {
			i = string_end(s, len, i);
			if (!i)
				return 0;
		} else if (c == '{' || c == '[') {
			if (depth == MAX_DEPTH)
				return 0;
			unsigned char bit = (unsigned char)(1u << (depth % 8));
			if (c == '{')
				is_object[depth / 8] |= bit;
			else
				is_object[depth / 8] &= (unsigned char)~bit;
			depth++;
			i++;
		} else if (c == '}' || c == ']') {
			if (!depth)
				return 0;
			bool object = is_object[(depth - 1) / 8] & (1u << ((depth - 1) % 8));
			if (object != (c == '}'))
				return 0;
			depth--;
			i++;
		} else if (c == ',' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			if (!depth)
				return 0; /* a separator outside any container ends nothing */
			i++;
			continue;
		} else {
			/* A number or literal: runs until a delimiter. */
			size_t start = i;
			while (i < len && !strchr(",:]} \t\r\n", s[i]) && s[i] != '"' && s[i] != '{' &&
			       s[i] != '[')
				i++;
			if (i == start)
				return 0;
			if (!depth)
				return i;
			continue;
		}
		if (!depth)
			return i;
	}
}

static bool key_is(const char *s, size_t start, size_t end, const char *key)
{
	size_t n = strlen(key);
	return end - start == n + 2 && !memcmp(s + start + 1, key, n);
}

int list_scan(const char *s, size_t len, list_item_fn item, void *ctx, const char **meta,
	      size_t *meta_len)
{
	if (meta) {
		*meta = NULL;
		*meta_len = 0;
	}
	bool saw_items = false;
	size_t i = skip_ws(s, len, 0);
	if (i >= len || s[i] != '{')
		return -1;
	i = skip_ws(s, len, i + 1);
	if (i < len && s[i] == '}')
		return -1; /* an empty object has no items */
	for (;;) {
		if (i >= len || s[i] != '"')
			return -1;
		size_t kend = string_end(s, len, i);
		if (!kend)
			return -1;
		size_t kstart = i;
		i = skip_ws(s, len, kend);
		if (i >= len || s[i] != ':')
			return -1;
		i = skip_ws(s, len, i + 1);
		if (key_is(s, kstart, kend, "items")) {
			if (i >= len || s[i] != '[')
				return -1;
			saw_items = true;
			i = skip_ws(s, len, i + 1);
			if (i < len && s[i] == ']') {
				i++;
			} else {
				for (;;) {
					size_t n = json_value_span(s + i, len - i);
					if (!n)
						return -1;
					int rc = item(ctx, s + i, n);
					if (rc)
						return rc;
					i = skip_ws(s, len, i + n);
					if (i < len && s[i] == ',') {
						i = skip_ws(s, len, i + 1);
						continue;
					}
					if (i < len && s[i] == ']') {
						i++;
						break;
					}
					return -1;
				}
			}
		} else {
			size_t n = json_value_span(s + i, len - i);
			if (!n)
				return -1;
			if (meta && key_is(s, kstart, kend, "metadata")) {
				*meta = s + i;
				*meta_len = n;
			}
			i += n;
		}
		i = skip_ws(s, len, i);
		if (i < len && s[i] == ',') {
			i = skip_ws(s, len, i + 1);
			continue;
		}
		if (i < len && s[i] == '}')
			return saw_items ? 0 : -1;
		return -1;
	}
}

const char *json_member_span(const char *s, size_t len, const char *key, size_t *value_len)
{
	size_t i = skip_ws(s, len, 0);
	if (i >= len || s[i] != '{')
		return NULL;
	i = skip_ws(s, len, i + 1);
	while (i < len && s[i] == '"') {
		size_t kend = string_end(s, len, i);
		if (!kend)
			return NULL;
		size_t kstart = i;
		i = skip_ws(s, len, kend);
		if (i >= len || s[i] != ':')
			return NULL;
		i = skip_ws(s, len, i + 1);
		size_t n = json_value_span(s + i, len - i);
		if (!n)
			return NULL;
		if (key_is(s, kstart, kend, key)) {
			*value_len = n;
			return s + i;
		}
		i = skip_ws(s, len, i + n);
		if (i >= len || s[i] != ',')
			return NULL;
		i = skip_ws(s, len, i + 1);
	}
	return NULL;
}
