/*
 * Who an object is, read from its JSON text without parsing the rest: for
 * an object too large to parse (over KUBE_OBJECT_MAX_PARSED), so that it
 * can be named in a log line and an Event, and taken out of a cache by key.
 * metadata.managedFields and the rest are skipped over, never built: the
 * cost is a scan of the text and a few short strings. Pure; thread-safe.
 */
#ifndef SOP_CLIENT_OBJECT_PEEK_H
#define SOP_CLIENT_OBJECT_PEEK_H

#include <stdbool.h>
#include <stddef.h>

/* Each "" when absent, not a string, or longer than its field (the API server allows none of that). */
struct kube_object_id {
	char namespace[64];         /* namespaces are DNS labels: at most 63 */
	char name[254];             /* at most 253 */
	char uid[64];
	char resource_version[64];
};

/*
 * An object left out for its size: type is the watch event's (NULL for a
 * LIST item), id what could be read of it, why the budget's message.
 * Everything borrowed for the call. Returns 0 to go on, non-zero to end
 * the watch (or fail the LIST page).
 */
typedef int (*kube_oversize_fn)(void *ctx, const char *type, const struct kube_object_id *id,
				 const char *why);

/* Fills id from the object text[0..len). Returns whether it found a name. */
bool kube_object_id_peek(const char *text, size_t len, struct kube_object_id *id);

/*
 * A watch event's type (into type, size n) and its object's identity.
 * Returns whether both the type and a name were found.
 */
bool kube_watch_event_peek(const char *text, size_t len, char *type, size_t n, struct kube_object_id *id);

#endif
