/*
 * What `kubectl stateful status` says, gathered from the objects as the
 * API server sends them: a StatefulSet's resize-state and resize-status
 * (or its backup ConfigMap's, while the set is being re-created), its
 * scaledown-state and -status, a StatefulCluster's status, and the newest
 * Event of each. Rows are JSON objects, so -o json|yaml prints the same
 * thing the table shows:
 *
 *   {"namespace", "kind", "name", "operation", "phase", "progress", "age",
 *    "lastEvent", "message"?, "strategy"?, "started"?, "replicas"?: [{"ordinal", "stage", "bytes",
 *    "totalBytes", "files", "totalFiles", "percent", "bytesPerSecond"}]}
 *
 * Pure: no I/O; the time comes in. Thread-safe on objects nobody modifies.
 */
#ifndef SOP_PLUGIN_STATUS_H
#define SOP_PLUGIN_STATUS_H

#include <jansson.h>
#include <stdbool.h>

#include "plugin/plugin_output.h"
#include "plugin/plugin_progress.h"

/*
 * A resize as its state tells it. The annotations are anyone's to write:
 * every string is a clean copy (text_sanitize), owned, NULL when absent.
 */
struct resize_view {
	bool active;            /* a resize-state is present */
	json_t *state;          /* the parsed resize-state (owned), or NULL */
	char *phase;            /* Expanding, Copying, Failed, ... */
	char *strategy;         /* "copy" or "expand" */
	char *status;           /* resize-status, may be NULL */
	char *message;          /* Failed: why */
	char *started;          /* RFC 3339 */
	char *step;             /* copy: the batch's step */
	size_t nreplicas;       /* copy: every replica to copy, in order of the state */
	struct replica_progress *replicas; /* owned */
	long long ndone;
};

/*
 * Reads the resize of obj (a StatefulSet or its backup ConfigMap;
 * borrowed) into v. Without a state v->active is false.
 * Each replica's stage comes from the state; the caller turns a batch
 * replica into REPLICA_COPYING when its copy pod reports progress.
 * Release v.
 */
void resize_view_read(const json_t *obj, struct resize_view *v);
void resize_view_release(struct resize_view *v);
/* The replica of v with this ordinal, or NULL. */
struct replica_progress *resize_view_replica(struct resize_view *v, long long ordinal);

/* A row (new): age_s < 0 shows "-"; event (may be NULL) gives lastEvent. phase, progress and lastEvent are shown clean (text_sanitize). */
json_t *status_row_new(const char *ns, const char *kind, const char *name, const char *operation, const char *phase,
		       const char *progress, long long age_s, const json_t *event);

/* Seconds of an RFC 3339 UTC time, with or without a fraction ("...:05.123456Z"); -1 when not one. */
long long status_time_seconds(const char *text);

/* kubectl's age: "45s", "12m", "5h", "3d" (seconds < 0: "-"). Into buf; returns buf. */
char *status_age(long long seconds, char *buf, size_t size);

/*
 * The newest Event in events (an array; borrowed) about kind/name, by
 * lastTimestamp, else eventTime, else creationTimestamp; NULL when none.
 */
const json_t *status_last_event(const json_t *events, const char *kind, const char *name);

/* "Reason: message" of event, clean (text_sanitize): a new string, or NULL for NULL. */
char *status_event_text(const json_t *event);

/*
 * The rows of StatefulSet sts (borrowed): a resize (from v, read from the
 * set or its backup) and a cleanup when the operator has something to say
 * about them; with show_idle, one "Idle" row when it has nothing. events:
 * the namespace's Events (may be NULL). now_s: the time, in seconds.
 * Appends them to rows.
 */
void status_sts_rows(json_t *rows, const char *ns, const char *name, const json_t *sts, const struct resize_view *v,
		     const json_t *events, long long now_s, bool show_idle);

/* The row of StatefulCluster stc (borrowed), appended to rows. */
void status_stc_row(json_t *rows, const json_t *stc, const json_t *events, long long now_s);

/*
 * What `resize --wait` draws for StatefulSet name: a headline (the
 * resize-status, else the phase) and, for a copy, one progress line per
 * replica (progress_replica_line, width columns). A new array of strings.
 */
json_t *status_wait_frame(const char *name, const struct resize_view *v, int width);

/* The rows as a table (with a NAMESPACE column when with_namespace). New string. */
char *status_table(const json_t *rows, bool with_namespace);

/*
 * The rows as f asks: the table (with a NAMESPACE column when
 * with_namespace; -o wide adds STRATEGY and STARTED and shows the last
 * Event whole), the document, or -o name's lines (statefulset.apps/NAME,
 * statefulcluster.stateful-operator.io/NAME; an object once). 0 with *out
 * a new string, or -1 with *err a new message (a jsonpath evaluation).
 */
int status_render(const json_t *rows, const struct plugin_format *f, bool with_namespace, char **out, char **err)
	__attribute__((warn_unused_result));

#endif
