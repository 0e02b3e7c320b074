/*
 * Records Kubernetes Events (core/v1) about objects, the way kubectl
 * describe shows them. A repeat of the same event (same object, type,
 * reason and message) within 10 minutes is not created again: the existing
 * Event's count and lastTimestamp are patched (client-go's correlator does
 * the same). Each object may emit a burst of 25 events, then one every 5
 * seconds; events over that are dropped and logged, so a reconcile loop
 * cannot flood the API server. Every event is also logged.
 *
 * A message is shown as text_sanitize (util/text_sanitize.h) makes it: one
 * line, no control a terminal acts on (kubectl describe and kubectl
 * stateful print it), at most EVENT_MESSAGE_MAX bytes (Kubernetes' own
 * limit for an Event's note), whatever outside text it quotes.
 *
 * Threads: event_record may be called from any thread.
 */
#ifndef SOP_RUNTIME_EVENTS_H
#define SOP_RUNTIME_EVENTS_H

#include <jansson.h>

#include "client/kube_client.h"

#define EVENT_NORMAL "Normal"
#define EVENT_WARNING "Warning"
#define EVENT_MESSAGE_MAX 1024

struct event_recorder;

/* client borrowed; component e.g. "stateful-operator", instance e.g. the pod name. */
struct event_recorder *event_recorder_new(struct kube_client *client, const char *component,
					  const char *instance);
void event_recorder_free(struct event_recorder *r);

/*
 * Records an event about obj (borrowed; needs kind, apiVersion and
 * metadata). type is EVENT_NORMAL or EVENT_WARNING, reason CamelCase.
 * Returns 0 when recorded or deduplicated, 1 when rate-limited, -1 when
 * the API refused (logged).
 */
int event_record(struct event_recorder *r, const json_t *obj, const char *type, const char *reason,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
