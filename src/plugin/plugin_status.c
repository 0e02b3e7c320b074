/*
 * Status rows from the objects. A row is written only when the operator
 * has something to say (a state or a status annotation), so `status`
 * over a namespace lists work under way and what is left to read, not
 * every StatefulSet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_output.h"
#include "plugin/plugin_status.h"
#include "plugin/plugin_table.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* Seconds of an RFC 3339 UTC time, with or without a fraction ("...:05.123456Z"); -1 when not one. */
long long status_time_seconds(const char *text)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!text)
		return -1;
	const char *end = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -1;
	if (*end == '.')
		for (end++; *end >= '0' && *end <= '9'; end++)
			;
	if (strcmp(end, "Z") != 0)
		return -1;
	return (long long)timegm(&tm);
}

char *status_age(long long seconds, char *buf, size_t size)
{
	if (seconds < 0)
		snprintf(buf, size, "-");
	else if (seconds < 120)
		snprintf(buf, size, "%llds", seconds);
	else if (seconds < 2 * 3600)
		snprintf(buf, size, "%lldm", seconds / 60);
	else if (seconds < 2 * 86400)
		snprintf(buf, size, "%lldh", seconds / 3600);
	else
		snprintf(buf, size, "%lldd", seconds / 86400);
	return buf;
}

static long long age_since(const char *when, long long now_s)
{
	long long t = status_time_seconds(when);
	return t < 0 ? -1 : now_s - t;
}

/* ---- the resize ---- */

static bool in_array(const json_t *arr, long long v)
{
	size_t i;
	const json_t *x;
	json_array_foreach(arr, i, x)
		if (json_is_integer(x) && json_integer_value(x) == v)
			return true;
	return false;
}

/* A replica in the batch: still getting ready, copying, or past its copy. */
static enum replica_stage batch_stage(const char *step)
{
	if (!step)
		return REPLICA_STARTING;
	if (!strcmp(step, "Swap") || !strcmp(step, "Restart") || !strcmp(step, "Ready"))
		return REPLICA_FINISHING;
	return REPLICA_STARTING;
}

void resize_view_read(const json_t *obj, struct resize_view *v)
{
	memset(v, 0, sizeof(*v));
	v->status = text_sanitize(kube_obj_annotation(obj, ANNOTATION_RESIZE_STATUS), 0);
	const char *text = kube_obj_annotation(obj, ANNOTATION_RESIZE_STATE);
	json_t *st = text ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(st)) {
		json_decref(st);
		return;
	}
	v->active = true;
	v->state = st;
	/* The state is JSON in an annotation: "\u001b" in it is an ESC once parsed. */
	v->phase = text_sanitize(kube_obj_str(st, "phase"), 0);
	v->strategy = text_sanitize(kube_obj_str(st, "strategy"), 0);
	v->message = text_sanitize(kube_obj_str(st, "message"), 0);
	v->started = text_sanitize(kube_obj_str(st, "started"), 0);
	const json_t *batch = json_object_get(st, "batch");
	v->step = text_sanitize(kube_obj_str(batch, "step"), 0);
	const json_t *ords = json_object_get(st, "ordinals");
	const json_t *done = json_object_get(st, "done");
	const json_t *in_batch = json_object_get(batch, "ordinals");
	v->replicas = xcalloc(json_array_size(ords) + 1, sizeof(*v->replicas));
	size_t i;
	const json_t *o;
	json_array_foreach(ords, i, o) {
		if (!json_is_integer(o))
			continue;
		struct replica_progress *r = &v->replicas[v->nreplicas++];
		r->ordinal = json_integer_value(o);
		r->per_s = -1;
		if (in_array(done, r->ordinal)) {
			r->stage = REPLICA_DONE;
			v->ndone++;
		} else if (in_array(in_batch, r->ordinal)) {
			r->stage = batch_stage(v->step);
			r->step = v->step;
		} else {
			r->stage = REPLICA_WAITING;
		}
	}
}

void resize_view_release(struct resize_view *v)
{
	free(v->replicas);
	json_decref(v->state);
	free(v->phase);
	free(v->strategy);
	free(v->status);
	free(v->message);
	free(v->started);
	free(v->step);
	memset(v, 0, sizeof(*v));
}

struct replica_progress *resize_view_replica(struct resize_view *v, long long ordinal)
{
	for (size_t i = 0; i < v->nreplicas; i++)
		if (v->replicas[i].ordinal == ordinal)
			return &v->replicas[i];
	return NULL;
}

static const char *stage_name(enum replica_stage s)
{
	switch (s) {
	case REPLICA_WAITING: return "Waiting";
	case REPLICA_STARTING: return "Starting";
	case REPLICA_COPYING: return "Copying";
	case REPLICA_FINISHING: return "Finishing";
	case REPLICA_DONE: return "Done";
	}
	return "?";
}

/* The progress column of a copy: "replica 2/3" and the bytes of the one copying. */
static char *copy_progress_text(const struct resize_view *v)
{
	const struct replica_progress *busy = NULL;
	for (size_t i = 0; i < v->nreplicas; i++)
		if (v->replicas[i].stage == REPLICA_COPYING)
			busy = &v->replicas[i];
	long long n = (long long)v->nreplicas;
	long long at = v->ndone < n ? v->ndone + 1 : n;
	if (!busy)
		return xasprintf("replica %lld/%lld%s%s", at, n, v->step ? ": " : "", v->step ? v->step : "");
	char done[24], total[24], rate[32];
	const struct copy_progress *c = &busy->copy;
	return xasprintf("replica %lld/%lld: %s/%s (%d%%), %lld/%lld files, %s", at, n,
			 progress_bytes(c->bytes, done, sizeof(done)), progress_bytes(c->total_bytes, total, sizeof(total)),
			 progress_percent(c->bytes, c->total_bytes), c->files, c->total_files,
			 progress_rate_text(busy->per_s, rate, sizeof(rate)));
}

static json_t *replicas_json(const struct resize_view *v)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < v->nreplicas; i++) {
		const struct replica_progress *r = &v->replicas[i];
		json_t *o = json_pack("{s:I, s:s}", "ordinal", (json_int_t)r->ordinal, "stage", stage_name(r->stage));
		if (r->stage == REPLICA_COPYING) {
			json_object_set_new(o, "bytes", json_integer(r->copy.bytes));
			json_object_set_new(o, "totalBytes", json_integer(r->copy.total_bytes));
			json_object_set_new(o, "files", json_integer(r->copy.files));
			json_object_set_new(o, "totalFiles", json_integer(r->copy.total_files));
			json_object_set_new(o, "percent", json_integer(progress_percent(r->copy.bytes, r->copy.total_bytes)));
			if (r->per_s >= 0)
				json_object_set_new(o, "bytesPerSecond", json_integer((json_int_t)r->per_s));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *status_row_new(const char *ns, const char *kind, const char *name, const char *operation, const char *phase,
		       const char *progress, long long age_s, const json_t *event)
{
	char age[16];
	char *ev = status_event_text(event);
	/* The progress quotes annotations and statuses (a scaledown-status, a condition's message): shown clean. */
	char *shown_phase = text_sanitize(phase ? phase : "Unknown", 0), *shown_progress = text_sanitize(progress, 0);
	json_t *row = json_pack("{s:s?, s:s, s:s, s:s, s:s, s:s?, s:s, s:s?}", "namespace", ns, "kind", kind, "name", name,
				"operation", operation, "phase", shown_phase, "progress", shown_progress, "age",
				status_age(age_s, age, sizeof(age)), "lastEvent", ev);
	free(shown_progress);
	free(shown_phase);
	free(ev);
	return row;
}

const json_t *status_last_event(const json_t *events, const char *kind, const char *name)
{
	const json_t *best = NULL;
	long long best_t = -2;
	size_t i;
	const json_t *e;
	json_array_foreach(events, i, e) {
		if (!name || strcmp(name, kube_obj_str(e, "involvedObject.name") ? kube_obj_str(e, "involvedObject.name") : "") ||
		    strcmp(kind, kube_obj_str(e, "involvedObject.kind") ? kube_obj_str(e, "involvedObject.kind") : ""))
			continue;
		long long t = status_time_seconds(kube_obj_str(e, "lastTimestamp"));
		if (t < 0)
			t = status_time_seconds(kube_obj_str(e, "eventTime"));
		if (t < 0)
			t = status_time_seconds(kube_obj_str(e, "metadata.creationTimestamp"));
		/* Later in the list wins a tie: the API lists in creation order. */
		if (t >= best_t) {
			best = e;
			best_t = t;
		}
	}
	return best;
}

char *status_event_text(const json_t *event)
{
	if (!event)
		return NULL;
	const char *reason = kube_obj_str(event, "reason");
	const char *msg = kube_obj_str(event, "message");
	/* Anyone who may create Events in the namespace writes both. */
	char *raw = xasprintf("%s: %s", reason ? reason : "?", msg ? msg : "");
	char *text = text_sanitize(raw, 0);
	free(raw);
	return text;
}

void status_sts_rows(json_t *rows, const char *ns, const char *name, const json_t *sts, const struct resize_view *v,
		     const json_t *events, long long now_s, bool show_idle)
{
	const json_t *ev = status_last_event(events, "StatefulSet", name);
	bool any = false;
	if (v && (v->active || v->status)) {
		bool copy = v->strategy && !strcmp(v->strategy, "copy");
		bool failed = v->phase && !strcmp(v->phase, "Failed");
		char *progress = failed	  ? xstrdup(v->message ? v->message : v->status ? v->status : "")
				 : copy && v->active ? copy_progress_text(v)
						     : xstrdup(v->status ? v->status : "");
		char op[32];
		snprintf(op, sizeof(op), "resize%s%s", v->strategy ? "/" : "", v->strategy ? v->strategy : "");
		json_t *row = status_row_new(ns, "sts", name, op, v->active ? v->phase : "Done", progress,
				      age_since(v->started, now_s), ev);
		if (failed && v->message)
			json_object_set_new(row, "message", json_string(v->message));
		if (copy && v->nreplicas)
			json_object_set_new(row, "replicas", replicas_json(v));
		if (v->strategy)
			json_object_set_new(row, "strategy", json_string(v->strategy));
		if (v->started)
			json_object_set_new(row, "started", json_string(v->started));
		json_array_append_new(rows, row);
		free(progress);
		any = true;
	}
	const char *sd_status = kube_obj_annotation(sts, ANNOTATION_SCALEDOWN_STATUS);
	const char *sd_state = kube_obj_annotation(sts, ANNOTATION_SCALEDOWN_STATE);
	if (sd_status || sd_state) {
		const char *phase = sd_status && !strncmp(sd_status, "Failed", 6) ? "Failed" : sd_status ? "Running" : "Idle";
		json_t *row = status_row_new(ns, "sts", name, "cleanup", phase, sd_status ? sd_status : "attempts recorded", -1, ev);
		json_array_append_new(rows, row);
		any = true;
	}
	if (!any && show_idle)
		json_array_append_new(rows, status_row_new(ns, "sts", name, "-", "Idle", "nothing under way", -1, ev));
}

void status_stc_row(json_t *rows, const json_t *stc, const json_t *events, long long now_s)
{
	const char *name = kube_obj_str(stc, "metadata.name");
	const char *ns = kube_obj_str(stc, "metadata.namespace");
	const json_t *status = json_object_get(stc, "status");
	long long want = kube_obj_int(stc, "spec", "replicas", 1);
	long long ready = kube_obj_int(status, "readyReplicas", NULL, 0);
	long long updated = kube_obj_int(status, "updatedReplicas", NULL, 0);
	const char *msg = NULL;
	const char *phase = "Ready";
	const char *since = kube_obj_str(stc, "metadata.creationTimestamp");
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(status, "conditions"), i, c) {
		const char *type = kube_obj_str(c, "type");
		bool is_true = !strcmp(kube_obj_str(c, "status") ? kube_obj_str(c, "status") : "", "True");
		if (type && !strcmp(type, "ReplicaFailure") && is_true) {
			phase = "ReplicaFailure";
			msg = kube_obj_str(c, "message");
			since = kube_obj_str(c, "lastTransitionTime");
			break;
		}
		if (type && !strcmp(type, "Progressing") && is_true) {
			phase = "Progressing";
			since = kube_obj_str(c, "lastTransitionTime");
		}
		if (type && !strcmp(type, "Available") && !is_true && strcmp(phase, "Progressing")) {
			phase = "Unavailable";
			since = kube_obj_str(c, "lastTransitionTime");
		}
	}
	char *progress = msg ? xasprintf("ready %lld/%lld, updated %lld/%lld: %s", ready, want, updated, want, msg)
			     : xasprintf("ready %lld/%lld, updated %lld/%lld", ready, want, updated, want);
	json_array_append_new(rows, status_row_new(ns, "stc", name, "cluster", phase, progress, age_since(since, now_s),
					    status_last_event(events, CLUSTER_KIND, name)));
	free(progress);
}

json_t *status_wait_frame(const char *name, const struct resize_view *v, int width)
{
	json_t *lines = json_array();
	const char *head = v->status ? v->status : v->phase ? v->phase : "waiting for the operator";
	json_array_append_new(lines, json_sprintf("sts/%s: %s", name, head));
	for (size_t i = 0; v->active && i < v->nreplicas; i++) {
		char *line = progress_replica_line(name, &v->replicas[i], width);
		json_array_append_new(lines, json_sprintf("  %s", line));
		free(line);
	}
	return lines;
}

/* The table; wide: STRATEGY and STARTED, and the last Event whole. */
static char *table_text(const json_t *rows, bool with_namespace, const struct plugin_format *f)
{
	bool wide = f->output == PLUGIN_OUT_WIDE;
	static const char *const headers[] = {"NAMESPACE", "NAME",     "OPERATION", "PHASE",     "PROGRESS",
					      "AGE",       "STRATEGY", "STARTED",   "LAST EVENT"};
	static const char *const narrow_headers[] = {"NAMESPACE", "NAME", "OPERATION", "PHASE",
						     "PROGRESS",  "AGE",  "LAST EVENT"};
	const char *const *h = wide ? headers : narrow_headers;
	size_t ncols = wide ? 9 : 7;
	struct table *t = table_new(ncols - !with_namespace, with_namespace ? h : h + 1);
	if (f->no_headers)
		table_hide_headers(t);
	size_t i;
	const json_t *row;
	json_array_foreach(rows, i, row) {
		char *kn = xasprintf("%s/%s", kube_obj_str(row, "kind"), kube_obj_str(row, "name"));
		char *ev = wide ? xstrdup(kube_obj_str(row, "lastEvent") ? kube_obj_str(row, "lastEvent") : "-")
				: table_ellipsize(kube_obj_str(row, "lastEvent"), 80);
		const char *cells[] = {kube_obj_str(row, "namespace"), kn, kube_obj_str(row, "operation"),
				       kube_obj_str(row, "phase"), kube_obj_str(row, "progress"), kube_obj_str(row, "age"),
				       wide ? kube_obj_str(row, "strategy") : ev, kube_obj_str(row, "started"), ev};
		table_add(t, with_namespace ? cells : cells + 1);
		free(ev);
		free(kn);
	}
	char *out = table_render(t);
	table_free(t);
	return out;
}

char *status_table(const json_t *rows, bool with_namespace)
{
	struct plugin_format f = {.output = PLUGIN_OUT_TABLE};
	return table_text(rows, with_namespace, &f);
}

static char *object_of(const json_t *row)
{
	return xasprintf("%s/%s", plugin_kind_resource(kube_obj_str(row, "kind")), kube_obj_str(row, "name"));
}

static char *listing_table(const json_t *rows, const struct plugin_format *f, const void *with_namespace)
{
	return table_text(rows, *(const bool *)with_namespace, f);
}

int status_render(const json_t *rows, const struct plugin_format *f, bool with_namespace, char **out, char **err)
{
	const struct plugin_listing listing = {.name_of = object_of, .table = listing_table, .ctx = &with_namespace};
	return plugin_render(rows, f, &listing, out, err);
}
