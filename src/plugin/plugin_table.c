#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_table.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

struct table {
	size_t ncols, nrows, cap;
	bool no_headers;
	char **cells; /* (nrows + 1) * ncols; row 0 the headers */
};

/* A cell holds cluster text: one line, nothing a terminal acts on (text_sanitize.h). New string. */
static char *one_line(const char *s)
{
	return text_sanitize(s ? s : "-", 0);
}

struct table *table_new(size_t ncols, const char *const *headers)
{
	struct table *t = xcalloc(1, sizeof(*t));
	t->ncols = ncols;
	table_add(t, headers);
	t->nrows = 0; /* the header row is row 0, not counted */
	return t;
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < (t->nrows + 1) * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

void table_add(struct table *t, const char *const *cells)
{
	size_t have = t->cells ? (t->nrows + 1) * t->ncols : 0;
	t->cells = xgrow(t->cells, &t->cap, have + t->ncols, sizeof(char *));
	for (size_t i = 0; i < t->ncols; i++)
		t->cells[have + i] = one_line(cells[i]);
	if (have)
		t->nrows++;
}

void table_hide_headers(struct table *t)
{
	t->no_headers = true;
}

size_t table_rows(const struct table *t)
{
	return t->nrows;
}

/* Columns on screen: UTF-8 continuation bytes take none. */
static size_t display_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

char *table_render(const struct table *t)
{
	size_t *width = xcalloc(t->ncols, sizeof(size_t));
	for (size_t r = t->no_headers ? 1 : 0; r <= t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t w = display_width(t->cells[r * t->ncols + c]);
			if (w > width[c])
				width[c] = w;
		}
	struct strbuf sb = STRBUF_INIT;
	for (size_t r = t->no_headers ? 1 : 0; r <= t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			if (c + 1 == t->ncols) {
				strbuf_appendf(&sb, "%s\n", cell);
			} else {
				size_t pad = width[c] - display_width(cell) + 3;
				strbuf_appendf(&sb, "%s%*s", cell, (int)pad, "");
			}
		}
	}
	free(width);
	return strbuf_detach(&sb);
}

char *table_ellipsize(const char *s, size_t max)
{
	if (!s)
		return xstrdup("-");
	if (strlen(s) <= max || max < 4)
		return xstrdup(s);
	size_t cut = max - 3;
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--;
	return xasprintf("%.*s...", (int)cut, s);
}
