/*
 * Splits a Kubernetes watch stream (one JSON event object per line) into
 * events, whatever way the bytes were cut into reads: an event split
 * across reads waits for its end; several in one read are all delivered.
 * Not thread-safe; one decoder per stream.
 */
#ifndef SOP_CLIENT_WATCH_DECODER_H
#define SOP_CLIENT_WATCH_DECODER_H

#include <jansson.h>
#include <stddef.h>

#include "client/object_peek.h"
#include "util/strbuf.h"

/*
 * A single event larger than this ends the stream with an error. An event
 * is one object: etcd stores at most 1.5 MiB per object, and the API
 * server's JSON writes each <, > and & as \u003c (six bytes), so one
 * object can take 9 MiB as JSON; 10 MiB holds any. The buffer (capped at
 * that) and the parsed event must fit the 128 Mi memory limit, next to the
 * caches.
 */
#define WATCH_EVENT_MAX (10u << 20)

struct watch_decoder {
	struct strbuf pending; /* bytes of an event not yet complete */
	/*
	 * Called (with feed's ctx) for an event whose tree would pass
	 * KUBE_OBJECT_MAX_PARSED: it is skipped, the stream goes on. NULL:
	 * such an event ends the stream with an error.
	 */
	kube_oversize_fn on_oversize;
};

/* type: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR; object borrowed for the call. */
typedef int (*watch_event_fn)(void *ctx, const char *type, json_t *object);

void watch_decoder_init(struct watch_decoder *d);
void watch_decoder_release(struct watch_decoder *d);

/*
 * Feeds bytes. Calls fn for every complete event (parsed under
 * kube_object_limits, one event at a time in the process with the LIST
 * items: KUBE_OBJECT_PARSES_AT_ONCE). Returns 0; 1 when fn asked to stop
 * (the rest is dropped); -1 on a malformed event or one over
 * WATCH_EVENT_MAX, with *err a new message.
 */
int watch_decoder_feed(struct watch_decoder *d, const char *data, size_t len, watch_event_fn fn,
		       void *ctx, char **err) __attribute__((warn_unused_result));

/* For an ERROR event's object (a Status): its code, or 0. */
long watch_error_code(const json_t *object);

#endif
