/* Helpers of the planner unit tests on a simulated cluster: see sim.h. */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_client.h"
#include "util/duration.h"
#include "util/xalloc.h"
#include "client/kube_object.h"
#include "controllers/pod_fields.h"

/* ---- strings ---- */

json_t *sim_json(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, text);
	return j;
}

bool sim_streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

bool sim_contains(const char *s, const char *needle)
{
	return s && strstr(s, needle);
}

const char *sim_or_dash(const char *s)
{
	return s ? s : "-";
}

/* ---- what a failure prints ---- */

void sim_trace_add(struct sim_trace *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = xvasprintf(fmt, ap);
	va_end(ap);
	size_t n = strlen(line);
	t->text = xrealloc(t->text, t->len + n + 1);
	memcpy(t->text + t->len, line, n + 1);
	t->len += n;
	free(line);
}

void sim_trace_release(struct sim_trace *t)
{
	FREE_AND_NULL(t->text);
	t->len = 0;
}

void sim_print_steps(const char *steps)
{
	fprintf(stderr, "---- steps ----\n%s---- end ----\n", steps ? steps : "");
}

/* ---- objects ---- */

json_t *sim_meta(const json_t *obj)
{
	return json_object_get(obj, "metadata");
}

const char *sim_label(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(sim_meta(obj), "labels"), key));
}

const char *sim_annotation(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(sim_meta(obj), "annotations"), key));
}

void sim_annotate(json_t *obj, const char *key, const char *value)
{
	if (!json_is_object(json_object_get(sim_meta(obj), "annotations")))
		json_object_set_new(sim_meta(obj), "annotations", json_object());
	json_t *ann = json_object_get(sim_meta(obj), "annotations");
	if (value)
		json_object_set_new(ann, key, json_string(value));
	else
		json_object_del(ann, key);
}

bool sim_terminating(const json_t *obj)
{
	return kube_obj_str(obj, "metadata.deletionTimestamp") != NULL;
}

void sim_mark_deleted(json_t *obj, long long ms)
{
	char ts[32];
	sim_rfc3339(ms, ts, sizeof(ts));
	json_object_set_new(sim_meta(obj), "deletionTimestamp", json_string(ts));
}

bool sim_owned_by(const json_t *obj, const char *uid, bool controller_only)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(sim_meta(obj), "ownerReferences"), i, ref) {
		if (sim_streq(kube_obj_str(ref, "uid"), uid) &&
		    (!controller_only || json_is_true(json_object_get(ref, "controller"))))
			return true;
	}
	return false;
}

json_t *sim_cached_pods(const json_t *pods)
{
	json_t *out = json_array();
	size_t i;
	const json_t *pod;
	json_array_foreach(pods, i, pod) {
		json_t *copy = json_deep_copy(pod);
		pod_fields_keep(copy);
		json_array_append_new(out, copy);
	}
	return out;
}

bool sim_mounts(const json_t *pod, const char *claim)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		if (sim_streq(kube_obj_str(v, "persistentVolumeClaim.claimName"), claim))
			return true;
	}
	return false;
}

bool sim_claims_there(const json_t *pvcs, const char *ns, const json_t *pod)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		const char *claim = kube_obj_str(v, "persistentVolumeClaim.claimName");
		const json_t *pvc = claim ? sim_find_in(pvcs, ns, claim) : NULL;
		if (claim && (!pvc || sim_terminating(pvc)))
			return false;
	}
	return true;
}

void sim_merge_patch(json_t *target, const json_t *patch)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)patch, k, v) {
		if (json_is_null(v)) {
			json_object_del(target, k);
		} else if (json_is_object(v)) {
			json_t *t = json_object_get(target, k);
			if (!json_is_object(t)) {
				t = json_object();
				json_object_set_new(target, k, t);
			}
			sim_merge_patch(t, v);
		} else {
			json_object_set_new(target, k, json_deep_copy(v));
		}
	}
}

bool sim_precondition_met(const json_t *obj, const char *uid, struct sim_trace *trace, int *conflicts)
{
	if (!obj) {
		sim_trace_add(trace, "      404\n");
		return false;
	}
	if (uid && !sim_streq(kube_obj_str(obj, "metadata.uid"), uid)) {
		(*conflicts)++;
		sim_trace_add(trace, "      409 uid precondition\n");
		return false;
	}
	return true;
}

/* ---- controllers every world has ---- */

/* A pod of pods that has not ended (Succeeded or Failed) mounts claim. */
static bool claim_in_use(const json_t *pods, const char *claim)
{
	size_t i;
	json_t *pod;
	json_array_foreach(pods, i, pod) {
		const char *phase = kube_obj_str(pod, "status.phase");
		if (!sim_streq(phase, "Failed") && !sim_streq(phase, "Succeeded") && sim_mounts(pod, claim))
			return true;
	}
	return false;
}

void sim_pvc_protection(json_t *pvcs, const char *ns, const json_t *pods, struct sim_trace *trace)
{
	for (size_t i = 0; i < json_array_size(pvcs);) {
		const json_t *pvc = json_array_get(pvcs, i);
		const char *name = kube_obj_str(pvc, "metadata.name");
		if (sim_terminating(pvc) && !claim_in_use(pods, name) &&
		    (!ns || sim_streq(kube_obj_str(pvc, "metadata.namespace"), ns))) {
			sim_trace_add(trace, "      ~ claim %s is gone\n", name);
			json_array_remove(pvcs, i);
			continue;
		}
		i++;
	}
}

/* ---- lists of objects ---- */

/* The first object of list whose string at path is value (and, unless ns is NULL, in namespace ns). */
static json_t *find_by(const json_t *list, const char *path, const char *value, const char *ns)
{
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o) {
		if (value && sim_streq(kube_obj_str(o, path), value) &&
		    (!ns || sim_streq(kube_obj_str(o, "metadata.namespace"), ns)))
			return o;
	}
	return NULL;
}

json_t *sim_find(const json_t *list, const char *name)
{
	return find_by(list, "metadata.name", name, NULL);
}

json_t *sim_find_in(const json_t *list, const char *ns, const char *name)
{
	return find_by(list, "metadata.name", name, ns);
}

json_t *sim_find_uid(const json_t *list, const char *uid)
{
	return find_by(list, "metadata.uid", uid, NULL);
}

void sim_remove(json_t *list, const json_t *obj)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		if (json_array_get(list, i) == obj) {
			json_array_remove(list, i);
			return;
		}
	}
}

bool sim_in_array(const json_t *arr, const char *s)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		if (sim_streq(json_string_value(e), s))
			return true;
	}
	return false;
}

/* ---- names ---- */

long sim_number_after(const char *s, const char *prefix, size_t max_digits)
{
	size_t n = strlen(prefix);
	if (!s || strncmp(s, prefix, n))
		return -1;
	s += n;
	if (!*s || strspn(s, "0123456789") != strlen(s) || (s[0] == '0' && s[1]) || strlen(s) > max_digits)
		return -1;
	return atol(s);
}

/* ---- the clock ---- */

void sim_rfc3339(long long ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

long long sim_time_ms(const char *s)
{
	int64_t sec = s ? rfc3339_seconds(s) : -1;
	return sec < 0 ? -1 : (long long)sec * 1000;
}

/* ---- counters and the history ---- */

void sim_count(json_t *counts, const char *key)
{
	json_object_set_new(counts, key, json_integer(json_integer_value(json_object_get(counts, key)) + 1));
}

int sim_counted(const json_t *counts, const char *key)
{
	return (int)json_integer_value(json_object_get(counts, key));
}

static bool entry_is(const json_t *e, const char *what)
{
	return sim_streq(kube_obj_str(e, "what"), what) || sim_streq(kube_obj_str(e, "step"), what);
}

int sim_seen_at(const json_t *history, const char *what, const char *object, int from)
{
	for (size_t i = (size_t)from; i < json_array_size(history); i++) {
		const json_t *e = json_array_get(history, i);
		if (entry_is(e, what) && (!object || sim_streq(kube_obj_str(e, "object"), object)))
			return (int)i;
	}
	return -1;
}

int sim_seen_count(const json_t *history, const char *what, int from)
{
	int n = 0;
	for (size_t i = (size_t)from; i < json_array_size(history); i++)
		n += entry_is(json_array_get(history, i), what);
	return n;
}

int sim_events(const json_t *history, const char *type, const char *reason, const char *needle)
{
	int n = 0;
	size_t i;
	json_t *e;
	json_array_foreach(history, i, e) {
		n += sim_streq(kube_obj_str(e, "reason"), reason) && (!type || sim_streq(kube_obj_str(e, "type"), type)) &&
		     (!needle || sim_contains(kube_obj_str(e, "message"), needle));
	}
	return n;
}

/* ---- steps planned ---- */

void sim_steps_note(struct sim_steps *s, const struct sim_trace *trace, char *seen, char *again)
{
	free(s->before);
	s->before = s->seen;
	s->seen = seen;
	free(s->again);
	s->again = again;
	if (strcmp(s->seen, s->again))
		sim_fail(trace->text, "the same inputs gave two steps:\n  %s\n  %s", s->seen, s->again);
}

bool sim_steps_repeated(const struct sim_steps *s)
{
	return s->before && s->seen && !strcmp(s->before, s->seen);
}

void sim_steps_restart(struct sim_steps *s)
{
	FREE_AND_NULL(s->seen);
}

void sim_steps_release(struct sim_steps *s)
{
	FREE_AND_NULL(s->seen);
	FREE_AND_NULL(s->again);
	FREE_AND_NULL(s->before);
}

void sim_check_event(const struct sim_trace *trace, const char *type, const char *reason, const char *message)
{
	if (!reason)
		return;
	if (!sim_streq(type, "Normal") && !sim_streq(type, "Warning"))
		sim_fail(trace->text, "event %s of type %s", reason, sim_or_dash(type));
	if (!message || !*message)
		sim_fail(trace->text, "event %s without a message", reason);
}

/* ---- the world as the API server holds it ---- */

char *sim_dump(const json_t *const *objs, size_t n)
{
	char *d = xstrdup("");
	for (size_t i = 0; i < n; i++) {
		char *o = objs[i] ? json_dumps(objs[i], JSON_COMPACT | JSON_SORT_KEYS) : xstrdup("gone");
		char *more = xasprintf("%s%s%s", d, i ? "\n" : "", o);
		free(o);
		free(d);
		d = more;
	}
	return d;
}

/* ---- crash safety ---- */

void sim_every_step_twice(void *world, size_t n, void (*play)(void *world, size_t i, bool twice, struct sim_play *p),
			  void (*release)(void *world))
{
	for (size_t i = 0; i < n; i++) {
		struct sim_play once = {0}, twice = {0};
		play(world, i, false, &once);
		release(world);
		play(world, i, true, &twice);
		if (!twice.conflicts) {
			free(once.end);
			free(twice.end);
			sim_fail(twice.steps, "%s: the repeated steps met nothing", twice.label);
		}
		if (strcmp(once.end, twice.end)) {
			fprintf(stderr, "once:\n%s\ntwice:\n%s\n", once.end, twice.end);
			free(once.end);
			free(twice.end);
			sim_fail(twice.steps, "%s: every step twice ends elsewhere", twice.label);
		}
		free(once.end);
		free(twice.end);
		release(world);
	}
}
