/*
 * `kubectl stateful resize sts/NAME TEMPLATE=SIZE`: checks the set and
 * the template, sets the annotations (the same ones a user would write,
 * README "Resizing StatefulSet volumes"), and with --wait follows the
 * resize to its end: exit 0 when it completed, 1 with the operator's own
 * message when it failed, was refused or aborted.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_session.h"
#include "plugin/plugin_draw.h"
#include "util/clock.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

#define WAIT_POLL_MS 1000
/* The state goes a moment before the Event that says how it ended is written. */
#define ENDING_EVENT_GRACE_MS 5000

/* The volumeClaimTemplate named tmpl of sts, or NULL. */
static const json_t *find_template(const json_t *sts, const char *tmpl)
{
	return kube_array_find(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), "metadata.name",
			       tmpl);
}

/*
 * sts's template already has the size (and class, when one is asked) and
 * no resize is under way: the request changes nothing the operator would
 * act on.
 */
static bool already_there(const json_t *sts, const struct plugin_args *a)
{
	const json_t *t = find_template(sts, a->template_name);
	struct quantity have;
	const char *cls = kube_obj_str(t, "spec.storageClassName");
	if (kube_obj_annotation(sts, ANNOTATION_RESIZE_STATE) ||
	    quantity_parse(kube_obj_str(t, "spec.resources.requests.storage"), &have, NULL) < 0 ||
	    quantity_cmp(&have, &a->size) != 0)
		return false;
	return !a->storage_class || (cls && !strcmp(cls, a->storage_class));
}

static char *template_names(const json_t *sts)
{
	char *out = xstrdup("");
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), i, t) {
		char *n = xasprintf("%s%s%s", out, i ? ", " : "", kube_obj_str(t, "metadata.name"));
		free(out);
		out = n;
	}
	return out;
}

/* The Events about StatefulSet name: the list's items (a new reference), or NULL. */
static json_t *set_events(struct plugin_session *s, const char *name)
{
	char *field = xasprintf("involvedObject.name=%s,involvedObject.kind=StatefulSet", name);
	struct kube_list_options lo = {.field_selector = field};
	json_t *list = NULL, *items = NULL;
	struct kube_error err;
	if (kube_list_page(s->client, &KUBE_EVENTS, s->ns, &lo, &list, &err) == 0)
		items = json_incref(json_object_get(list, "items"));
	json_decref(list);
	free(field);
	return items;
}

json_t *plugin_resize_events_before(struct plugin_session *s, const char *name)
{
	json_t *seen = json_object();
	json_t *items = set_events(s, name);
	size_t i;
	json_t *e;
	json_array_foreach(items, i, e) {
		const char *ev = kube_obj_str(e, "metadata.name");
		if (ev)
			json_object_set_new(seen, ev, json_pack("{s:I, s:s?}", "count",
								(json_int_t)kube_obj_int(e, "count", NULL, 1), "message",
								kube_obj_str(e, "message")));
	}
	json_decref(items);
	return seen;
}

/*
 * Event e was there before the request (had: what before said of it). An
 * end (completed, failed, aborted) happens once per resize, so a higher
 * count is this one's; a refusal is said again at every look while the
 * old request stands, so only another message is about this one.
 */
static bool was_there(const json_t *had, const json_t *e, const char *reason)
{
	if (!had)
		return false;
	bool end = reason && (!strcmp(reason, "ResizeCompleted") || !strcmp(reason, "ResizeFailed") ||
			      !strcmp(reason, "ResizeAborted"));
	if (end)
		return kube_obj_int(had, "count", NULL, 1) == kube_obj_int(e, "count", NULL, 1);
	const char *then = kube_obj_str(had, "message"), *now = kube_obj_str(e, "message");
	return then && now && !strcmp(then, now);
}

/*
 * The Event about sts since since_s that ends the wait, not one of before
 * (name -> count: Events have whole seconds, so one of an earlier resize can
 * share the request's second): a new reference, or NULL; *ok for a completion.
 */
static json_t *ending_event(struct plugin_session *s, const char *name, long long since_s, const json_t *before,
			    bool *ok)
{
	json_t *items = set_events(s, name), *found = NULL;
	long long best = -1;
	size_t i;
	json_t *e;
	json_array_foreach(items, i, e) {
		const char *reason = kube_obj_str(e, "reason");
		if (was_there(json_object_get(before, kube_obj_str(e, "metadata.name")), e, reason))
			continue;
		const char *type = kube_obj_str(e, "type");
		long long t = status_time_seconds(kube_obj_str(e, "lastTimestamp"));
		if (t < 0)
			t = status_time_seconds(kube_obj_str(e, "eventTime"));
		if (!reason || t < since_s || t < best || strncmp(reason, "Resize", 6))
			continue;
		bool completed = !strcmp(reason, "ResizeCompleted");
		bool failed = type && !strcmp(type, "Warning");
		if (!completed && !failed)
			continue;
		json_decref(found);
		found = json_incref(e);
		best = t;
		*ok = completed;
	}
	json_decref(items);
	return found;
}

/* Writes frame over what d drew before. */
static void draw(struct wait_drawer *d, json_t *frame)
{
	char *bytes = wait_drawer_render(d, frame);
	fputs(bytes, stdout);
	fflush(stdout);
	free(bytes);
}

/* Off a terminal a line changes with its rate every reading: the lines compared leave it out. */
static json_t *frame_for(const char *name, struct resize_view *v, const struct wait_drawer *d)
{
	if (d->tty)
		return status_wait_frame(name, v, d->width);
	for (size_t i = 0; i < v->nreplicas; i++)
		v->replicas[i].per_s = -1;
	return status_wait_frame(name, v, 100);
}

int plugin_wait_resize(struct plugin_session *s, const char *name, const char *stale_started, long long since_s,
		       const json_t *before)
{
	struct wait_drawer d = {.tty = s->tty, .width = s->width};
	struct progress_rate *rates = NULL;
	size_t nrates = 0;
	bool seen = false;
	double gone_at = 0; /* when the state was first seen gone */
	double deadline = s->args->timeout_ms ? clock_mono_ms() + (double)s->args->timeout_ms : 0;
	int rc = -1;
	while (rc < 0) {
		json_t *holder = NULL;
		struct resize_view v;
		plugin_read_resize(s, name, &v, &holder);
		bool ours = v.active && (!stale_started || !v.started || strcmp(stale_started, v.started));
		if (ours) {
			seen = true;
			if (v.nreplicas > nrates) {
				rates = xrealloc(rates, v.nreplicas * sizeof(*rates));
				memset(rates + nrates, 0, (v.nreplicas - nrates) * sizeof(*rates));
				nrates = v.nreplicas;
			}
			plugin_read_copy_progress(s, s->ns, name, &v, rates, (long long)clock_mono_ms());
			json_t *frame = frame_for(name, &v, &d);
			draw(&d, frame);
			json_decref(frame);
			if (v.phase && !strcmp(v.phase, "Failed")) {
				plugin_error("resize of sts/%s failed: %s", name, v.message ? v.message : v.status ? v.status : "");
				rc = PLUGIN_EXIT_FAILED;
			}
		}
		if (rc < 0 && !ours) {
			bool ok = false;
			json_t *ev = ending_event(s, name, since_s, before, &ok);
			if (ev && ok) {
				char *msg = text_sanitize(kube_obj_str(ev, "message"), 0);
				printf("sts/%s: resize completed (%s)\n", name, msg ? msg : "");
				free(msg);
				rc = PLUGIN_EXIT_OK;
			} else if (ev) {
				plugin_error("resize of sts/%s: %s: %s", name, kube_obj_str(ev, "reason"), kube_obj_str(ev, "message"));
				rc = PLUGIN_EXIT_FAILED;
			} else if (seen && holder && !v.active && gone_at == 0) {
				gone_at = clock_mono_ms();
			} else if (gone_at > 0 && clock_mono_ms() - gone_at > ENDING_EVENT_GRACE_MS) {
				/* The state went and no Event we could read says how: it finished. */
				printf("sts/%s: resize finished\n", name);
				rc = PLUGIN_EXIT_OK;
			}
			json_decref(ev);
		}
		resize_view_release(&v);
		json_decref(holder);
		if (rc < 0 && deadline && clock_mono_ms() > deadline) {
			plugin_error("sts/%s: still resizing after --timeout; it goes on (kubectl stateful status sts/%s)",
				     name, name);
			rc = PLUGIN_EXIT_TIMEOUT;
		}
		if (rc < 0)
			clock_sleep_ms(WAIT_POLL_MS);
	}
	free(rates);
	wait_drawer_release(&d);
	return rc;
}

/*
 * 0 when no resize is under way on StatefulSet name (none, or one that
 * Failed: a new size starts over), with *stale its start time (new string
 * or NULL); else an exit status after saying why.
 */
static int check_no_resize(struct plugin_session *s, const char *name, char **stale)
{
	json_t *holder = NULL;
	struct resize_view v;
	*stale = NULL;
	int code = plugin_open_resize(s, name, &v, &holder);
	if (code)
		return code;
	if (v.active && (!v.phase || strcmp(v.phase, "Failed"))) {
		/* One resize at a time: a new size in the middle of one would be carried out by neither. */
		plugin_error("sts/%s has a resize under way (%s); follow it with kubectl stateful status sts/%s, or "
			     "stop it with kubectl stateful abort sts/%s",
			     name, v.status ? v.status : v.phase ? v.phase : "state recorded", name, name);
		code = PLUGIN_EXIT_FAILED;
	} else if (v.started) {
		*stale = xstrdup(v.started);
	}
	resize_view_release(&v);
	json_decref(holder);
	return code;
}

/* Sets the annotations (patch) on sts and, with --wait, follows the resize. */
static int request(struct plugin_session *s, const json_t *sts, const json_t *patch, const char *size,
		   const char *stale)
{
	const struct plugin_args *a = s->args;
	int code = 0;
	/* Events from this second on may be about this request (they have whole seconds), but those already there. */
	json_t *before = plugin_resize_events_before(s, a->name);
	long long since = (long long)time(NULL);
	struct kube_error err;
	if (kube_patch(s->client, &KUBE_STATEFULSETS, s->ns, a->name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0) {
		plugin_error("annotating sts/%s: %s", a->name, err.message);
		code = PLUGIN_EXIT_FAILED;
	} else {
		printf("sts/%s: resize of template %s to %s requested%s%s\n", a->name, a->template_name, size,
		       a->storage_class ? ", class " : "", a->storage_class ? a->storage_class : "");
		fflush(stdout);
		bool wait = a->wait == PLUGIN_WAIT_ON || (a->wait == PLUGIN_WAIT_AUTO && s->tty);
		if (wait && already_there(sts, a)) {
			/* The operator starts nothing for a template that already asks for this. */
			printf("sts/%s: template %s already asks for %s%s%s; nothing to wait for\n", a->name, a->template_name,
			       size, a->storage_class ? " in class " : "", a->storage_class ? a->storage_class : "");
		} else if (wait)
			code = plugin_wait_resize(s, a->name, stale, since, before);
	}
	json_decref(before);
	return code;
}

/*
 * The annotations of patch (borrowed) as `kubectl annotate` spells them,
 * one per line: key=value, or key- for one removed. With obj (the object
 * the API server returned) each value is what it holds now.
 */
static void print_annotations(const json_t *patch, const json_t *obj)
{
	const char *key;
	const json_t *v;
	json_object_foreach(json_object_get(json_object_get((json_t *)patch, "metadata"), "annotations"), key, v) {
		const char *now = obj ? kube_obj_annotation(obj, key) : json_string_value(v);
		/* The server's copy is anyone's to have written meanwhile: shown clean. */
		char *shown = text_sanitize(now, 0);
		if (shown)
			printf("  %s=%s\n", key, shown);
		else
			printf("  %s-\n", key);
		free(shown);
	}
}

/* --dry-run: says what the patch would set; server: sends it with dryRun=All (the client's option). */
static int dry_run(struct plugin_session *s, const json_t *patch, const char *size)
{
	const struct plugin_args *a = s->args;
	if (a->dry_run == PLUGIN_DRY_RUN_CLIENT) {
		printf("sts/%s: resize of template %s to %s (dry run: nothing sent); annotations it would set:\n", a->name,
		       a->template_name, size);
		print_annotations(patch, NULL);
		return 0;
	}
	json_t *obj = NULL;
	struct kube_error err;
	if (kube_patch(s->client, &KUBE_STATEFULSETS, s->ns, a->name, NULL, KUBE_PATCH_MERGE, patch, &obj, &err) < 0) {
		plugin_error("annotating sts/%s (dry run, server): %s", a->name, err.message);
		return PLUGIN_EXIT_FAILED;
	}
	printf("sts/%s: resize of template %s to %s accepted by the API server and admission (dry run: nothing "
	       "stored); the set would have:\n",
	       a->name, a->template_name, size);
	print_annotations(patch, obj);
	json_decref(obj);
	return 0;
}

int plugin_cmd_resize(struct plugin_session *s)
{
	const struct plugin_args *a = s->args;
	char *stale = NULL;
	int code = check_no_resize(s, a->name, &stale);
	if (code)
		return code;
	json_t *sts = plugin_get(s, &KUBE_STATEFULSETS, a->name, &code);
	if (!sts) {
		free(stale);
		return code;
	}
	if (!find_template(sts, a->template_name)) {
		char *names = template_names(sts);
		plugin_error("sts/%s has no volumeClaimTemplate \"%s\"%s%s", a->name, a->template_name,
			     *names ? "; it has: " : " (it has none)", names);
		free(names);
		free(stale);
		json_decref(sts);
		return PLUGIN_EXIT_USAGE;
	}
	if ((code = plugin_require_operator(s))) {
		free(stale);
		json_decref(sts);
		return code;
	}

	char *size_key = xasprintf("%s%s", RESIZE_ANNOTATION_PREFIX, a->template_name);
	char *class_key = xasprintf("%s%s", CLASS_ANNOTATION_PREFIX, a->template_name);
	char *size = quantity_format(&a->size);
	json_t *ann = json_pack("{s:s}", size_key, size);
	if (a->strategy)
		json_object_set_new(ann, ANNOTATION_STRATEGY, json_string(a->strategy));
	if (a->storage_class)
		json_object_set_new(ann, class_key, json_string(a->storage_class));
	/* An abort asked before would stop this resize at once. */
	if (kube_obj_annotation(sts, ANNOTATION_ABORT))
		json_object_set_new(ann, ANNOTATION_ABORT, json_null());
	/* The UID: the set that was checked is the one annotated. */
	json_t *patch = json_pack("{s:{s:o, s:s}}", "metadata", "annotations", ann, "uid", kube_obj_str(sts, "metadata.uid"));
	if (a->dry_run)
		code = dry_run(s, patch, size);
	else
		code = request(s, sts, patch, size, stale);
	json_decref(patch);
	free(size);
	free(class_key);
	free(size_key);
	free(stale);
	json_decref(sts);
	return code;
}
