#include "client/watch_decoder.h"

#include <string.h>

#include "util/xalloc.h"

void watch_decoder_init(struct watch_decoder *d)
{
	strbuf_init(&d->pending, WATCH_EVENT_MAX);
}

void watch_decoder_release(struct watch_decoder *d)
{
	strbuf_release(&d->pending);
}

/* Decodes one line; blank lines (keep-alives) are skipped. */
static int deliver(const char *line, size_t len, watch_event_fn fn, void *ctx, char **err)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	json_error_t jerr;
	json_t *ev = json_loadb(line, len, 0, &jerr);
	if (!ev) {
		*err = xasprintf("watch event is not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
				 jerr.column);
		return -1;
	}
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *object = json_object_get(ev, "object");
	int rc = 0;
	if (!type || !json_is_object(object)) {
		*err = xstrdup("watch event lacks a type or an object");
		rc = -1;
	} else if (fn(ctx, type, object)) {
		rc = 1;
	}
	json_decref(ev);
	return rc;
}

int watch_decoder_feed(struct watch_decoder *d, const char *data, size_t len, watch_event_fn fn,
		       void *ctx, char **err)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		if (strbuf_add(&d->pending, data, take) < 0) {
			*err = xasprintf("watch event larger than %u bytes", WATCH_EVENT_MAX);
			return -1;
		}
		if (!nl)
			return 0;
		data += take + 1;
		len -= take + 1;
		int rc = deliver(d->pending.buf, d->pending.len, fn, ctx, err);
		strbuf_reset(&d->pending);
		if (rc)
			return rc;
	}
	return 0;
}

long watch_error_code(const json_t *object)
{
	return (long)json_integer_value(json_object_get(object, "code"));
}
