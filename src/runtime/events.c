#include "runtime/events.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/duration.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define DEDUPE_WINDOW_SECONDS 600
#define BURST 25
#define REFILL_SECONDS 5.0
#define CACHE_MAX 4096 /* entries per map before it is cleared */

struct seen_event {
	char *name;      /* the Event object's name */
	char *namespace;
	long count;
	time_t last;
};

struct bucket {
	double tokens;
	double at;       /* monotonic seconds of the last refill */
};

struct event_recorder {
	struct kube_client *client;
	char *component;
	char *instance;
	pthread_mutex_t lock;
	struct hashmap seen;    /* uid|type|reason|message -> struct seen_event */
	struct hashmap buckets; /* uid -> struct bucket */
};

static void seen_free(void *p)
{
	struct seen_event *s = p;
	free(s->name);
	free(s->namespace);
	free(s);
}

struct event_recorder *event_recorder_new(struct kube_client *client, const char *component,
					  const char *instance)
{
	struct event_recorder *r = xcalloc(1, sizeof(*r));
	r->client = client;
	r->component = xstrdup(component);
	r->instance = xstrdup(instance ? instance : component);
	pthread_mutex_init(&r->lock, NULL);
	hashmap_init(&r->seen);
	hashmap_init(&r->buckets);
	return r;
}

void event_recorder_free(struct event_recorder *r)
{
	if (!r)
		return;
	hashmap_release(&r->seen, seen_free);
	hashmap_release(&r->buckets, free);
	pthread_mutex_destroy(&r->lock);
	free(r->component);
	free(r->instance);
	free(r);
}

/* Token bucket per object; caller holds the lock. */
static bool take_token(struct event_recorder *r, const char *uid)
{
	double now = clock_mono_ms() / 1e3;
	struct bucket *b = hashmap_get(&r->buckets, uid);
	if (!b) {
		if (hashmap_len(&r->buckets) >= CACHE_MAX)
			hashmap_release(&r->buckets, free);
		b = xmalloc(sizeof(*b));
		b->tokens = BURST;
		b->at = now;
		hashmap_put(&r->buckets, uid, b);
	}
	b->tokens += (now - b->at) / REFILL_SECONDS;
	if (b->tokens > BURST)
		b->tokens = BURST;
	b->at = now;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

static json_t *involved_object(const json_t *obj)
{
	json_t *ref = json_object();
	static const char *const fields[][2] = {
		{"kind", "kind"},
		{"apiVersion", "apiVersion"},
		{"metadata.name", "name"},
		{"metadata.namespace", "namespace"},
		{"metadata.uid", "uid"},
		{"metadata.resourceVersion", "resourceVersion"},
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *v = kube_obj_str(obj, fields[i][0]);
		if (v)
			json_object_set_new(ref, fields[i][1], json_string(v));
	}
	return ref;
}

/* PATCHes count and lastTimestamp of an event seen before. 0, or -1 (gone: create anew). */
static int bump(struct event_recorder *r, const struct seen_event *s, long count, const char *when)
{
	json_t *patch = json_pack("{s:I, s:s}", "count", (json_int_t)count, "lastTimestamp", when);
	struct kube_error err;
	int rc = kube_patch(r->client, &KUBE_EVENTS, s->namespace, s->name, NULL, KUBE_PATCH_MERGE,
			    patch, NULL, &err);
	json_decref(patch);
	return rc < 0 ? -1 : 0;
}

static int create(struct event_recorder *r, const json_t *obj, const char *ns, const char *type,
		  const char *reason, const char *msg, const char *when, char **name_out)
{
	const char *objname = kube_obj_str(obj, "metadata.name");
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char *name = xasprintf("%s.%llx", objname ? objname : "unknown",
			       (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, "
			       "s:i, s:s, s:s}",
			       "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
			       "namespace", ns, "involvedObject", involved_object(obj), "reason",
			       reason, "message", msg, "type", type, "source", "component",
			       r->component, "host", r->instance, "firstTimestamp", when,
			       "lastTimestamp", when, "count", 1, "reportingComponent", r->component,
			       "reportingInstance", r->instance);
	struct kube_error err;
	/* The name is this recorder's alone (the clock in ns), so a resend is harmless. */
	int rc = ev ? kube_create_named(r->client, &KUBE_EVENTS, ns, ev, &err) : -1;
	if (rc < 0) {
		log_warn("events", "cannot record event %s on %s: %s", reason, objname ? objname : "?",
			 ev ? err.message : "cannot build event");
		free(name);
	} else {
		*name_out = name;
	}
	json_decref(ev);
	return rc < 0 ? -1 : 0;
}

int event_record(struct event_recorder *r, const json_t *obj, const char *type, const char *reason,
		 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *raw = xvasprintf(fmt, ap);
	va_end(ap);
	/* Messages quote outside text (termination messages, API and kubelet errors): shown clean, bounded. */
	char *msg = text_sanitize(raw, EVENT_MESSAGE_MAX);
	free(raw);
	const char *kind = kube_obj_str(obj, "kind");
	const char *name = kube_obj_str(obj, "metadata.name");
	const char *ns = kube_obj_str(obj, "metadata.namespace");
	const char *uid = kube_obj_str(obj, "metadata.uid");
	if (!ns || !*ns)
		ns = "default"; /* events about cluster-scoped objects */
	char *ident = uid ? xstrdup(uid) : xasprintf("%s/%s/%s", kind ? kind : "", ns, name ? name : "");
	log_msg(strcmp(type, EVENT_WARNING) ? LOG_INFO : LOG_WARN, "event", "%s %s/%s: %s: %s",
		kind ? kind : "object", ns, name ? name : "?", reason, msg);

	char *dedupe = xasprintf("%s|%s|%s|%s", ident, type, reason, msg);
	time_t now = time(NULL);
	char when[32];
	rfc3339_format(now, when);
	int rc = 0;

	pthread_mutex_lock(&r->lock);
	if (!take_token(r, ident)) {
		pthread_mutex_unlock(&r->lock);
		log_debug("events", "rate limit: dropped %s on %s/%s", reason, ns, name ? name : "?");
		rc = 1;
		goto out;
	}
	struct seen_event *s = hashmap_get(&r->seen, dedupe);
	if (s && now - s->last <= DEDUPE_WINDOW_SECONDS) {
		s->count++;
		s->last = now;
		struct seen_event copy = {xstrdup(s->name), xstrdup(s->namespace), s->count, now};
		pthread_mutex_unlock(&r->lock);
		rc = bump(r, &copy, copy.count, when);
		free(copy.name);
		free(copy.namespace);
		if (rc == 0)
			goto out;
		pthread_mutex_lock(&r->lock);
		seen_free(hashmap_remove(&r->seen, dedupe));
	}
	pthread_mutex_unlock(&r->lock);

	char *created = NULL;
	rc = create(r, obj, ns, type, reason, msg, when, &created);
	if (rc == 0) {
		struct seen_event *n = xcalloc(1, sizeof(*n));
		n->name = created;
		n->namespace = xstrdup(ns);
		n->count = 1;
		n->last = now;
		pthread_mutex_lock(&r->lock);
		if (hashmap_len(&r->seen) >= CACHE_MAX)
			hashmap_release(&r->seen, seen_free);
		struct seen_event *replaced = hashmap_put(&r->seen, dedupe, n);
		if (replaced)
			seen_free(replaced);
		pthread_mutex_unlock(&r->lock);
	}
out:
	free(dedupe);
	free(ident);
	free(msg);
	return rc;
}
