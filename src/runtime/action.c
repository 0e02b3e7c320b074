#include "runtime/action.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/merge_patch.h"
#include "util/log.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

void action_init(struct action *a)
{
	memset(a, 0, sizeof(*a));
	a->verb = ACTION_NOTHING;
}

void action_release(struct action *a)
{
	json_decref(a->body);
	json_decref(a->state);
	json_decref(a->created);
	free(a->event_message);
	free(a->status);
	action_init(a);
}

const char *action_verb_name(enum action_verb v)
{
	static const char *const names[] = {"Nothing", "Refuse", "Wait", "Create", "Patch", "Delete", "Own"};
	return (size_t)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

const char *action_name(const struct action *a)
{
	return a->what ? a->what : action_verb_name(a->verb);
}

void action_event(struct action *a, const char *type, const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	a->event_type = type;
	a->event_reason = reason;
	free(a->event_message);
	a->event_message = xvasprintf(fmt, ap);
	va_end(ap);
}

void action_status(struct action *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *raw = xvasprintf(fmt, ap);
	va_end(ap);
	free(a->status);
	/* A status annotation may quote outside text: one clean line, bounded, like an Event's message. */
	a->status = text_sanitize(raw, ACTION_STATUS_MAX);
	free(raw);
}

void action_wait(struct action *a, long ms)
{
	a->verb = ACTION_WAIT;
	a->requeue_ms = ms;
}

void action_count(struct action *a, const char *family, long long by)
{
	for (int i = 0; i < ACTION_MAX_COUNTS; i++) {
		if (!a->counts[i].family || !strcmp(a->counts[i].family, family)) {
			a->counts[i].family = family;
			a->counts[i].by += by;
			return;
		}
	}
}

void action_observe(struct action *a, const char *family, const char *label, double v)
{
	a->observed.family = family;
	a->observed.label = label;
	a->observed.v = v;
}

static void object(struct action *a,
 enum action_verb verb, const char *what, const struct kube_resource *r,
		   const char *name, json_t *body)
{
	a->verb = verb;
	a->what = what;
	a->resource = r;
	snprintf(a->name, sizeof(a->name), "%s", name ? name : "");
	json_decref(a->body);
	a->body = body;
}

void action_create(struct action *a, const char *what, const struct kube_resource *r, json_t *body)
{
	object(a, ACTION_CREATE, what, r, kube_obj_str(body, "metadata.name"), body);
}

void action_patch(struct action *a, const char *what, const struct kube_resource *r, const char *name, json_t *body)
{
	object(a, ACTION_PATCH, what, r, name, body);
	a->patch_type = KUBE_PATCH_MERGE;
}

void action_delete(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj)
{
	object(a, ACTION_DELETE, what, r, kube_obj_str(obj, "metadata.name"), NULL);
	const char *uid = kube_obj_str(obj, "metadata.uid");
	snprintf(a->uid, sizeof(a->uid), "%s", uid ? uid : "");
}

void action_patch_precondition(struct action *a, const char *resource_version, const char *uid)
{
	if (!json_is_object(a->body))
		return;
	json_t *meta = json_object_get(a->body, "metadata");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(a->body, "metadata", meta);
	}
	if (resource_version)
		json_object_set_new(meta, "resourceVersion", json_string(resource_version));
	if (uid)
		json_object_set_new(meta, "uid", json_string(uid));
}

/*
 * Whether a write whose answer was lost took effect, from a fresh read. A
 * merge patch holds once the object shows it; a named create whose 409 the
 * planner takes for done is done once the object exists. Without this the
 * step's Event and counts were lost when the write had in fact been done:
 * the next pass sees the step behind it (it_faults lost a ResizeStarted
 * when the start's state patch was cut after it was sent: its guarded
 * repeat met its own change, 409).
 */
static bool write_took_effect(struct kube_client *client, const char *ns, const struct action *a)
{
	bool patch = a->verb == ACTION_PATCH && a->patch_type == KUBE_PATCH_MERGE &&
		     (!a->subresource || !strcmp(a->subresource, "status")); /* a read shows the status too */
	bool create = a->verb == ACTION_CREATE && a->name[0] && (a->answers & ACTION_OK_409);
	if (!patch && !create)
		return false;
	json_t *obj = NULL;
	struct kube_error err;
	if (kube_get(client, a->resource, ns, a->name, &obj, &err) < 0)
		return false;
	bool done = create || merge_patch_holds(obj, a->body);
	json_decref(obj);
	return done;
}

int action_perform(struct kube_client *client, const char *ns, struct action *a, bool *stale,
		   struct kube_error *err)
{
	const char *in_ns = a->resource && a->resource->namespaced ? ns : NULL;
	int r = 0;
	switch (a->verb) {
	case ACTION_NOTHING:
	case ACTION_REFUSE:
	case ACTION_WAIT:
	case ACTION_OWN:
		return 0;
	case ACTION_CREATE:
		json_decref(a->created);
		a->created = NULL;
		r = kube_create(client, a->resource, in_ns, a->body, &a->created, err);
		break;
	case ACTION_PATCH:
		r = kube_patch(client, a->resource, in_ns, a->name, a->subresource, a->patch_type, a->body, NULL, err);
		break;
	case ACTION_DELETE: {
		long zero = 0;
		struct kube_delete_options o = {
			.propagation_policy = a->propagation,
			.precondition_uid = a->uid[0] ? a->uid : NULL,
			.precondition_resource_version = a->resource_version[0] ? a->resource_version : NULL,
			.grace_period_seconds = a->force ? &zero : NULL,
		};
		r = kube_delete(client, a->resource, in_ns, a->name, &o, err);
		break;
	}
	}
	if (r == 0)
		return 0;
	if (err->maybe_done && write_took_effect(client, in_ns, a)) {
		log_info("action", "%s %s: %s; a fresh read shows it done", action_name(a), a->name, err->message);
		return 0;
	}
	unsigned ok = err->code == 404 ? ACTION_OK_404 : err->code == 409 ? ACTION_OK_409 : 0;
	unsigned moved = err->code == 404 ? ACTION_STALE_404 : err->code == 409 ? ACTION_STALE_409 : 0;
	if (a->answers & ok)
		return 0;
	if (a->answers & moved) {
		*stale = true;
		return 0;
	}
	return r;
}
