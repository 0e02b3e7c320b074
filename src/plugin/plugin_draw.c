#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_draw.h"
#include "plugin/plugin_table.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/*
 * The frame's lines as they may be shown: they quote cluster text (a
 * resize-status, a step), so each is one line with no control in it. The
 * only escape sequences written are the drawer's own. New array.
 */
static json_t *shown_lines(const json_t *frame)
{
	json_t *out = json_array();
	size_t i;
	const json_t *line;
	json_array_foreach(frame, i, line) {
		char *clean = text_sanitize(json_string_value(line) ? json_string_value(line) : "", 0);
		json_array_append_new(out, json_string(clean));
		free(clean);
	}
	return out;
}

char *wait_drawer_render(struct wait_drawer *d, json_t *frame)
{
	struct strbuf sb = STRBUF_INIT;
	json_t *shown = shown_lines(frame);
	size_t i, n = json_array_size(shown);
	json_t *line;
	if (d->tty) {
		if (d->drawn)
			strbuf_appendf(&sb, "\033[%zuA", d->drawn);
		json_array_foreach(shown, i, line) {
			char *cut = table_ellipsize(json_string_value(line), d->width > 4 ? (size_t)d->width - 1 : 3);
			strbuf_appendf(&sb, "\r\033[2K%s\n", cut);
			free(cut);
		}
		/* A shorter frame: the lines left over are erased, the cursor goes back under the frame. */
		for (size_t k = n; k < d->drawn; k++)
			strbuf_appendf(&sb, "\r\033[2K\n");
		if (d->drawn > n)
			strbuf_appendf(&sb, "\033[%zuA", d->drawn - n);
		d->drawn = n;
	} else {
		json_array_foreach(shown, i, line) {
			const char *was = json_string_value(json_array_get(d->printed, i));
			if (!was || strcmp(was, json_string_value(line)))
				strbuf_appendf(&sb, "%s\n", json_string_value(line));
		}
		json_decref(d->printed);
		d->printed = json_incref(shown);
	}
	json_decref(shown);
	return sb.buf ? strbuf_detach(&sb) : xstrdup("");
}

void wait_drawer_release(struct wait_drawer *d)
{
	json_decref(d->printed);
	d->printed = NULL;
}
