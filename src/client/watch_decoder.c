#include "client/watch_decoder.h"

#include <stdint.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/kube_client_internal.h"
#include "util/xalloc.h"

void watch_decoder_init(struct watch_decoder *d)
{
	strbuf_init(&d->pending, WATCH_EVENT_MAX);
	d->on_oversize = NULL;
}

void watch_decoder_release(struct watch_decoder *d)
{
	strbuf_release(&d->pending);
}

/* kube_object_limits, but a level more: the event wraps the object. */
static const struct doc_limits event_limits = {
	.max_bytes = WATCH_EVENT_MAX,
	.max_depth = DOC_MAX_DEPTH,
	.max_nodes = SIZE_MAX,
	.max_expanded_bytes = WATCH_EVENT_MAX,
	.max_parsed_bytes = KUBE_OBJECT_MAX_PARSED,
	.budget = "the budget for an object from the API server",
};

/* Decodes one line, within a slot (KUBE_OBJECT_PARSES_AT_ONCE); blank lines (keep-alives) are skipped. */
static int deliver(struct watch_decoder *d, const char *line, size_t len, watch_event_fn fn, void *ctx, char **err)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	json_t *ev = NULL;
	char *msg = NULL;
	int rc = 0;
	kube__object_slot_take();
	int jrc = json_load_limited(line, len, 0, &event_limits, &ev, &msg);
	if (jrc == DOC_TOO_LARGE && d->on_oversize) {
		/* Out of the slot: the callback may log and record an Event. */
		kube__object_slot_give();
		char type[16];
		struct kube_object_id id;
		kube_watch_event_peek(line, len, type, sizeof(type), &id);
		rc = d->on_oversize(ctx, type, &id, msg) ? 1 : 0;
		free(msg);
		return rc;
	} else if (jrc < 0) {
		*err = xasprintf("watch event is %s: %s", jrc == DOC_TOO_LARGE ? "refused" : "not JSON", msg);
		rc = -1;
	} else {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *object = json_object_get(ev, "object");
		if (!type || !json_is_object(object)) {
			*err = xstrdup("watch event lacks a type or an object");
			rc = -1;
		} else if (fn(ctx, type, object)) {
			rc = 1;
		}
	}
	json_decref(ev);
	kube__object_slot_give();
	free(msg);
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
		int rc = deliver(d, d->pending.buf, d->pending.len, fn, ctx, err);
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
