#include "controllers/autoresize/autoresize_act.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "client/quantity.h"
#include "controllers/autoresize/autoresize_rule.h"
#include "controllers/contract.h"
#include "controllers/set_index.h"
#include "runtime/events.h"
#include "util/duration.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "webhook/class_lookup.h"

/*
 * Policy annotations read per workload, the first by name (the API sends
 * annotations sorted): more templates than any workload has, so that one
 * workload with thousands of junk annotations costs a few entries of the
 * said-once memory (autoresize_said.h) and a few parses per poll.
 */
#define AUTORESIZE_POLICIES_MAX 32

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static const char *storage_request(const json_t *obj)
{
	return kube_obj_str(obj, "spec.resources.requests.storage");
}

/* What one template's decision works with. */
struct tpl {
	const json_t *w;     /* the StatefulSet or StatefulCluster */
	bool cluster;
	const char *ns, *name, *tpl;
	size_t index;        /* of the template in spec.volumeClaimTemplates */
	int64_t size;        /* the template's */
	struct autoresize_policy pol;
	bool recommend;
	/* Where the policy is written, for messages: the annotation <prefix><template>, or "<prefix>policy on Namespace shop" */
	char where[400];
	/* After a growth's message: "" for the workload's own policy, else " (policy: <where>)" */
	char by[420];
};

/* ---- saying things once ---- */

static char *said_key(const struct tpl *t, const char *what)
{
	return xasprintf("%s/%s/%s/%s", t->ns, t->name, t->tpl, what);
}

/*
 * An Event of reason unless the same was said last time for (t, what):
 * the same `same` (what the news is, e.g. the size at its maximum), or,
 * when same is NULL, the same message. Usage figures in a message change
 * at every poll; the news does not.
 */
static bool say(struct autoresize_ctx *ac, const struct tpl *t, const char *what, const char *same, const char *type,
		const char *reason, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static bool say(struct autoresize_ctx *ac, const struct tpl *t, const char *what, const char *same, const char *type,
		const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	char *key = said_key(t, what);
	bool said = autoresize_said_news(&ac->said, key, same ? same : msg);
	if (said) {
		event_record(ac->deps.base.events, t->w, type, reason, "%s", msg);
		log_info("autoresize", "%s/%s: %s: %s", t->ns, t->name, reason, msg);
	}
	free(key);
	free(msg);
	return said;
}

/* Forgets what was said of (t, what); true when something was. */
static bool unsay(struct autoresize_ctx *ac, const struct tpl *t, const char *what)
{
	char *key = said_key(t, what);
	bool was = autoresize_said_forget(&ac->said, key);
	free(key);
	return was;
}

/* ---- the cluster's facts ---- */

struct class_facts {
	char name[254];   /* the class's, or "(default)" */
	bool known;       /* namespace scope cannot read classes: the resize controller judges */
	bool expandable;
	int64_t granularity;
};

/* Facts of class name (NULL: the default class); sc receives the class (new reference, may be NULL). */
static void class_facts(struct autoresize_ctx *ac, const char *name, struct class_facts *f, json_t **sc)
{
	*sc = autoresize_class_of(ac, name);
	const char *known = *sc ? kube_obj_str(*sc, "metadata.name") : name;
	snprintf(f->name, sizeof(f->name), "%s", known && *known ? known : "(default)");
	f->known = *sc != NULL;
	f->expandable = !*sc || json_is_true(json_object_get(*sc, "allowVolumeExpansion"));
	int64_t g = autoresize_quantity_bytes(kube_obj_annotation(*sc, ANNOTATION_AUTORESIZE_GRANULARITY));
	f->granularity = g > 0 ? g : AUTORESIZE_DEFAULT_GRANULARITY;
}

/* The claims of the template: a set's replicas' (ordinals below replicas), a cluster's members'. New array. */
static json_t *claims_of(struct autoresize_ctx *ac, const struct tpl *t)
{
	json_t *out = json_array();
	char *prefix = xasprintf("%s-%s-", t->tpl, t->name);
	if (t->cluster) {
		char *key = xasprintf("%s/%s", t->ns, t->name);
		json_t *all = store_by_index(ac->pvcs, SET_INDEX, key);
		size_t i;
		json_t *pvc;
		json_array_foreach(all, i, pvc) {
			const char *n = kube_obj_str(pvc, "metadata.name");
			if (n && kube_name_number(n, prefix, 9) >= 0 && !kube_obj_terminating(pvc))
				json_array_append(out, pvc);
		}
		json_decref(all);
		free(key);
	} else {
		long long replicas = kube_obj_int(json_object_get(t->w, "spec"), "replicas", NULL, 1);
		for (long long i = 0; i < replicas && i < 100000; i++) {
			char *key = xasprintf("%s/%s%lld", t->ns, prefix, i);
			json_t *pvc = store_get(ac->pvcs, key);
			if (pvc)
				json_array_append_new(out, pvc);
			free(key);
		}
	}
	free(prefix);
	return out;
}

/* ---- writes ---- */

static void count(struct autoresize_ctx *ac, const char *mode)
{
	if (ac->autoresizes)
		metric_add(ac->autoresizes, 1, METRIC_LABELS(mode));
}

static int patch(struct autoresize_ctx *ac, const struct kube_resource *r, const char *ns, const char *name,
		 enum kube_patch_type type, json_t *body)
{
	struct kube_error err;
	int rc = kube_patch(ac->deps.base.client, r, ns, name, NULL, type, body, NULL, &err);
	json_decref(body);
	if (rc < 0 && err.code == 409)
		log_debug("autoresize", "%s/%s changed since the cache saw it; next poll", ns, name);
	else if (rc < 0)
		log_warn("autoresize", "%s/%s: patch failed: %s", ns, name, err.message);
	return rc;
}

/* A claim's request to size (in place), with the time of growth when it is a claim's own (scope=claim). */
static int grow_claim(struct autoresize_ctx *ac, const json_t *pvc, const char *size, const char *when)
{
	json_t *body = json_pack("{s:{s:s}, s:{s:{s:{s:s}}}}", "metadata", "resourceVersion",
				 or_empty(kube_obj_str(pvc, "metadata.resourceVersion")), "spec", "resources", "requests",
				 "storage", size);
	if (when)
		json_object_set_new(json_object_get(body, "metadata"), "annotations",
				    json_pack("{s:s}", ANNOTATION_AUTORESIZE_LAST, when));
	return patch(ac, &KUBE_PVCS, kube_obj_str(pvc, "metadata.namespace"), kube_obj_str(pvc, "metadata.name"),
		     KUBE_PATCH_MERGE, body);
}

/* The template's new size, with the time of growth, in one write (the resize controller does the rest). */
static int grow_template(struct autoresize_ctx *ac, const struct tpl *t, const char *size, const char *when)
{
	json_t *last = kube_obj_annotation_json(t->w, ANNOTATION_AUTORESIZE_LAST);
	if (!json_is_object(last)) {
		json_decref(last);
		last = json_object();
	}
	json_object_set_new(last, t->tpl, json_string(when));
	char *last_text = json_dumps(last, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(last);
	const char *rv = or_empty(kube_obj_str(t->w, "metadata.resourceVersion"));
	int rc;
	if (t->cluster) {
		/* Its template is ours to change (no immutable field): a JSON patch guarded by resourceVersion. */
		char *path = xasprintf("/spec/volumeClaimTemplates/%zu/spec/resources/requests/storage", t->index);
		json_t *ops = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}]", "op", "test", "path",
					"/metadata/resourceVersion", "value", rv, "op", "replace", "path", path,
					"value", size, "op", "add", "path",
					"/metadata/annotations/stateful-operator.io~1autoresize-last", "value", last_text);
		free(path);
		rc = patch(ac, &KUBE_STATEFULCLUSTERS, t->ns, t->name, KUBE_PATCH_JSON, ops);
	} else {
		char *key = xasprintf(RESIZE_ANNOTATION_PREFIX "%s", t->tpl);
		json_t *body = json_pack("{s:{s:s, s:{s:s, s:s}}}", "metadata", "resourceVersion", rv, "annotations",
					 key, size, ANNOTATION_AUTORESIZE_LAST, last_text);
		free(key);
		rc = patch(ac, &KUBE_STATEFULSETS, t->ns, t->name, KUBE_PATCH_MERGE, body);
	}
	free(last_text);
	return rc;
}

/* ---- deciding ---- */

/* Which of two decisions to act on: growth first, then the one at its maximum, then the fullest. */
static bool better(const struct autoresize_decision *a, const struct autoresize_decision *b)
{
	static const int rank[] = {[AUTORESIZE_BELOW] = 0, [AUTORESIZE_COOLDOWN] = 1, [AUTORESIZE_AT_MAX] = 2,
				   [AUTORESIZE_GROW] = 3};
	if (rank[a->verdict] != rank[b->verdict])
		return rank[a->verdict] > rank[b->verdict];
	return a->used_ratio > b->used_ratio;
}

/*
 * An operation on the set is under way, or one the user asked for waits:
 * a growth now would race it. Pending: the resize annotation of tpl asks
 * another size than the template's, the webhook recorded templates, or a
 * claim is still below the template or still expanding.
 */
static const char *busy(const struct tpl *t, const json_t *claims)
{
	if (kube_obj_annotation(t->w, ANNOTATION_RESIZE_STATE))
		return "a resize is under way";
	if (kube_obj_annotation(t->w, ANNOTATION_DESIRED_TEMPLATES))
		return "applied templates wait to be carried out";
	char *key = xasprintf(RESIZE_ANNOTATION_PREFIX "%s", t->tpl);
	int64_t asked = autoresize_quantity_bytes(kube_obj_annotation(t->w, key));
	free(key);
	if (asked > 0 && asked != t->size)
		return "a resize annotation asks for another size";
	size_t i;
	const json_t *pvc;
	json_array_foreach(claims, i, pvc) {
		int64_t request = autoresize_quantity_bytes(storage_request(pvc));
		int64_t capacity = autoresize_quantity_bytes(kube_obj_str(pvc, "status.capacity.storage"));
		if (request < t->size || capacity < request)
			return "a claim is still growing";
	}
	return NULL;
}

/* A StatefulCluster's claims below its template grow in place (its controller makes claims, never resizes them). */
static void catch_up_cluster_claims(struct autoresize_ctx *ac, const struct tpl *t, const json_t *claims)
{
	size_t i;
	const json_t *pvc;
	json_array_foreach(claims, i, pvc) {
		if (autoresize_quantity_bytes(storage_request(pvc)) >= t->size || t->recommend)
			continue;
		struct class_facts f;
		json_t *sc;
		class_facts(ac, kube_obj_str(pvc, "spec.storageClassName"), &f, &sc);
		if (f.expandable && grow_claim(ac, pvc, storage_request(json_array_get(json_object_get(
									    json_object_get(t->w, "spec"),
									    "volumeClaimTemplates"),
								    t->index)),
					       NULL) == 0)
			log_info("autoresize", "%s/%s: claim %s grows to its template's size", t->ns, t->name,
				 kube_obj_str(pvc, "metadata.name"));
		json_decref(sc);
	}
}

static void act_on_claim(struct autoresize_ctx *ac, const struct tpl *t, const json_t *pvc,
			 const struct autoresize_decision *d, const struct class_facts *f)
{
	const char *claim = kube_obj_str(pvc, "metadata.name");
	/* What is said of this claim: at its maximum, not possible, recommended (each its own news). */
	char at_max[300], possible[300], recommend[300];
	snprintf(at_max, sizeof(at_max), "claim %s max", claim);
	snprintf(possible, sizeof(possible), "claim %s possible", claim);
	snprintf(recommend, sizeof(recommend), "claim %s recommend", claim);
	char *from = autoresize_bytes_text(autoresize_quantity_bytes(storage_request(pvc)));
	char *to = autoresize_bytes_text(d->new_bytes);
	if (d->verdict != AUTORESIZE_AT_MAX)
		unsay(ac, t, at_max);
	if (d->verdict == AUTORESIZE_AT_MAX) {
		say(ac, t, at_max, from, "Warning", "AutoResizeAtMaximum",
		    "claim %s: %s, but it is at the policy's maximum %s; it does not grow. Raise max= in %s, or free space",
		    claim, d->trigger, from, t->where);
	} else if (d->verdict == AUTORESIZE_GROW && !f->expandable) {
		say(ac, t, possible, "not expandable", "Warning", "AutoResizeNotPossible",
		    "claim %s: %s, but StorageClass %s does not allow expansion, and scope=claim grows in place only; "
		    "use scope=template with allow-copy=true",
		    claim, d->trigger, f->name);
	} else if (d->verdict == AUTORESIZE_GROW) {
		unsay(ac, t, possible);
		int64_t capacity = autoresize_quantity_bytes(kube_obj_str(pvc, "status.capacity.storage"));
		bool growing = capacity < autoresize_quantity_bytes(storage_request(pvc)); /* from the last time */
		if (!growing && t->recommend) {
			if (say(ac, t, recommend, to, "Normal", "AutoResizeRecommended",
				"claim %s: %s: it would grow from %s to %s (recommend-only: nothing changed)%s", claim,
				d->trigger, from, to, t->by))
				count(ac, "recommend");
		} else if (!growing) {
			char now[32];
			rfc3339_format(clock_wall_ms() / 1000, now);
			if (grow_claim(ac, pvc, to, now) == 0) {
				event_record(ac->deps.base.events, t->w, "Normal", "AutoResizeTriggered",
					     "claim %s: %s: growing it from %s to %s in place (scope=claim: the template "
					     "stays as it is)%s",
					     claim, d->trigger, from, to, t->by);
				count(ac, "grow");
			}
		}
	}
	free(from);
	free(to);
}

static void act_on_template(struct autoresize_ctx *ac, const struct tpl *t, const json_t *claims,
			    const char *claim, const struct autoresize_decision *d, const struct class_facts *f)
{
	if (d->verdict != AUTORESIZE_AT_MAX)
		unsay(ac, t, "max");
	if (d->verdict == AUTORESIZE_COOLDOWN) {
		char next[32];
		rfc3339_format(d->next_ms / 1000, next);
		log_debug("autoresize", "%s/%s: %s: %s; cooldown until %s", t->ns, t->name, claim, d->trigger, next);
		return;
	}
	char *from = autoresize_bytes_text(t->size);
	if (d->verdict == AUTORESIZE_AT_MAX) {
		say(ac, t, "max", from, "Warning", "AutoResizeAtMaximum",
		    "%s: %s, but template %s is at the policy's maximum %s; it does not grow. Raise max= in %s, or free "
		    "space",
		    claim, d->trigger, t->tpl, from, t->where);
	}
	if (d->verdict != AUTORESIZE_GROW) {
		free(from);
		return;
	}
	const char *strategy = t->cluster ? NULL : kube_obj_annotation(t->w, ANNOTATION_STRATEGY);
	bool by_copy = (f->known && !f->expandable) || (strategy && !strcmp(strategy, "copy"));
	if (by_copy && (!t->pol.allow_copy || t->cluster)) {
		say(ac, t, "possible", f->name, "Warning", "AutoResizeNotPossible",
		    "%s: %s, but template %s can grow only by copy (%s) and %s; nothing changed",
		    claim, d->trigger, t->tpl,
		    f->known && !f->expandable ? "its StorageClass does not allow expansion" : "resize-strategy is copy",
		    t->cluster ? "a StatefulCluster's volumes grow in place only"
			       : "the policy does not allow it: add allow-copy=true (each replica restarts once)");
		free(from);
		return;
	}
	unsay(ac, t, "possible");
	const char *why = busy(t, claims);
	if (why) {
		log_debug("autoresize", "%s/%s: %s: %s; not now: %s", t->ns, t->name, claim, d->trigger, why);
		free(from);
		return;
	}
	char *to = autoresize_bytes_text(d->new_bytes);
	const char *how = by_copy ? "by copy, one replica at a time" : "in place";
	if (t->recommend) {
		if (say(ac, t, "recommend", to, "Normal", "AutoResizeRecommended",
		    "%s: %s: template %s and its %zu claim%s would grow from %s to %s %s (recommend-only: nothing "
		    "changed)%s",
		    claim, d->trigger, t->tpl, json_array_size(claims), json_array_size(claims) == 1 ? "" : "s", from, to,
		    how, t->by))
			count(ac, "recommend");
	} else {
		char now[32];
		rfc3339_format(clock_wall_ms() / 1000, now);
		if (grow_template(ac, t, to, now) == 0) {
			event_record(ac->deps.base.events, t->w, "Normal", "AutoResizeTriggered",
				     "%s: %s: growing template %s and its %zu claim%s from %s to %s %s%s", claim, d->trigger,
				     t->tpl, json_array_size(claims), json_array_size(claims) == 1 ? "" : "s", from, to, how,
				     t->by);
			count(ac, "grow");
		}
	}
	free(from);
	free(to);
}

/*
 * The source's failure that concerns t: the one naming a node its pods run
 * on ("node <name>: ..."), else the first (Prometheus has one for all).
 */
static const char *failure_for(struct autoresize_ctx *ac, const struct poll *p, const struct tpl *t)
{
	const char *found = NULL;
	char *key = xasprintf("%s/%s", t->ns, t->name);
	json_t *pods = store_by_index(ac->pods, SET_INDEX, key);
	size_t i, j;
	const json_t *pod, *e;
	json_array_foreach(pods, i, pod) {
		char *prefix = xasprintf("node %s: ", or_empty(kube_obj_str(pod, "spec.nodeName")));
		json_array_foreach(p->errors, j, e)
			if (!found && !strncmp(or_empty(json_string_value(e)), prefix, strlen(prefix)))
				found = json_string_value(e);
		free(prefix);
	}
	json_decref(pods);
	free(key);
	return found ? found : json_string_value(json_array_get(p->errors, 0));
}

static void consider_template(struct autoresize_ctx *ac, struct poll *p, struct tpl *t, const json_t *vct)
{
	t->size = autoresize_quantity_bytes(storage_request(vct));
	if (t->size <= 0) {
		say(ac, t, "policy", NULL, "Warning", "AutoResizePolicyInvalid",
		    "%s: template %s asks for no storage size the policy could grow", t->where, t->tpl);
		return;
	}
	json_t *claims = claims_of(ac, t);
	if (t->cluster)
		catch_up_cluster_claims(ac, t, claims);
	struct autoresize_decision best = {.verdict = AUTORESIZE_BELOW, .used_ratio = -1};
	struct class_facts best_class = {0};
	const char *best_claim = NULL;
	size_t with_usage = 0;
	int64_t last = autoresize_last_growth_ms(t->w, t->tpl);
	size_t i;
	const json_t *pvc;
	json_array_foreach(claims, i, pvc) {
		const char *claim = kube_obj_str(pvc, "metadata.name");
		char *key = xasprintf("%s/%s", t->ns, claim);
		struct volume_usage u;
		bool known = usage_from_json(json_object_get(p->table, key), &u);
		free(key);
		if (!known)
			continue;
		with_usage++;
		struct class_facts f;
		json_t *sc;
		class_facts(ac, kube_obj_str(pvc, "spec.storageClassName"), &f, &sc);
		struct autoresize_decision d;
		if (t->pol.per_claim) {
			int64_t claim_last = rfc3339_seconds(or_empty(kube_obj_annotation(pvc, ANNOTATION_AUTORESIZE_LAST)));
			autoresize_decide(&t->pol, &u, autoresize_quantity_bytes(storage_request(pvc)), claim_last > 0 ? claim_last * 1000 : 0,
					  p->now_ms, f.granularity, &d);
			act_on_claim(ac, t, pvc, &d, &f);
		} else {
			autoresize_decide(&t->pol, &u, t->size, last, p->now_ms, f.granularity, &d);
			if (better(&d, &best)) {
				best = d;
				best_claim = claim;
				best_class = f;
			}
		}
		if (ac->usage_ratio)
			metric_set(ac->usage_ratio, d.used_ratio, METRIC_LABELS(t->ns, claim));
		json_decref(sc);
	}
	if (!with_usage) {
		if (json_array_size(p->errors) && json_array_size(claims))
			/* Once until it is back: a failure's words change with each try ("after 3 ms"). */
			say(ac, t, "usage", "unavailable", "Warning", "UsageUnavailable",
			    "cannot read the usage of the claims of template %s: %s; no growth until it can be read",
			    t->tpl, failure_for(ac, p, t));
		json_decref(claims);
		return;
	}
	if (unsay(ac, t, "usage"))
		event_record(ac->deps.base.events, t->w, "Normal", "UsageAvailable",
			     "the usage of the claims of template %s can be read again", t->tpl);
	if (!t->pol.per_claim && best_claim)
		act_on_template(ac, t, claims, best_claim, &best, &best_class);
	json_decref(claims);
}

/*
 * The workload's own policies (the first AUTORESIZE_POLICIES_MAX by name)
 * of its templates: "<template>" -> text (new object). Those that name no
 * template are refused here; *count: how many there are in all.
 */
static json_t *own_policies(struct autoresize_ctx *ac, struct tpl *t, const json_t *vcts, size_t *count)
{
	json_t *own = json_object();
	size_t plen = strlen(ANNOTATION_AUTORESIZE_PREFIX);
	const char *key;
	const json_t *v;
	*count = 0;
	json_object_foreach((json_t *)kube_obj_annotations(t->w), key, v) {
		if (strncmp(key, ANNOTATION_AUTORESIZE_PREFIX, plen) || !strcmp(key, ANNOTATION_AUTORESIZE_GRANULARITY))
			continue;
		if (++*count > AUTORESIZE_POLICIES_MAX)
			continue;
		t->tpl = key + plen;
		if (kube_list_find(vcts, NULL, t->tpl)) {
			json_object_set_new(own, t->tpl, json_string(or_empty(json_string_value(v))));
			continue;
		}
		char *why = NULL;
		if (autoresize_policy_parse(or_empty(json_string_value(v)), &t->pol, &why) < 0)
			say(ac, t, "policy", NULL, "Warning", "AutoResizePolicyInvalid",
			    "%s: %s; no autoresize until it is fixed", key, why);
		else
			say(ac, t, "policy", NULL, "Warning", "AutoResizePolicyInvalid",
			    "%s: there is no volumeClaimTemplate named %s; no autoresize until it is fixed", key, t->tpl);
		free(why);
	}
	return own;
}

void autoresize_consider(struct autoresize_ctx *ac, struct poll *p, const json_t *w, bool cluster)
{
	if (kube_obj_annotation_true(w, ANNOTATION_IGNORE))
		return;
	struct tpl t = {.w = w, .cluster = cluster, .ns = kube_obj_str(w, "metadata.namespace"),
			.name = kube_obj_str(w, "metadata.name"), .recommend = ac->deps.recommend_only};
	if (!t.ns || !t.name)
		return;
	const json_t *vcts = json_object_get(json_object_get(w, "spec"), "volumeClaimTemplates");
	size_t policies;
	json_t *own = own_policies(ac, &t, vcts, &policies);
	json_t *ns_obj = autoresize_namespace_of(ac, t.ns);
	size_t i;
	const json_t *vct;
	json_array_foreach(vcts, i, vct) {
		t.tpl = kube_obj_str(vct, "metadata.name");
		if (!t.tpl)
			continue;
		t.index = i;
		json_t *sc = autoresize_template_class(ac, vct);
		struct autoresize_rule r;
		autoresize_rule_resolve(json_string_value(json_object_get(own, t.tpl)), autoresize_rule_text(ns_obj),
					autoresize_rule_text(sc), &r);
		autoresize_rule_where(&r, t.tpl, t.ns, kube_obj_str(sc, "metadata.name"), t.where, sizeof(t.where));
		if (r.origin == AUTORESIZE_FROM_WORKLOAD)
			t.by[0] = '\0';
		else
			snprintf(t.by, sizeof(t.by), " (policy: %s)", t.where);
		json_decref(sc);
		if (r.origin == AUTORESIZE_FROM_WORKLOAD && r.why)
			say(ac, &t, "policy", NULL, "Warning", "AutoResizePolicyInvalid",
			    "%s: %s; no autoresize until it is fixed", t.where, r.why);
		else if (r.origin != AUTORESIZE_FROM_NONE)
			/* A namespace's or class's refusal is said on that object (autoresize_check_sources). */
			unsay(ac, &t, "policy");
		if (autoresize_rule_active(&r)) {
			t.pol = r.pol;
			t.recommend = ac->deps.recommend_only || t.pol.recommend_only;
			consider_template(ac, p, &t, vct);
		}
		autoresize_rule_release(&r);
	}
	json_decref(ns_obj);
	json_decref(own);
	/* Of the workload as a whole: template "*" (no annotation name is). */
	t.tpl = "*";
	if (policies <= AUTORESIZE_POLICIES_MAX)
		unsay(ac, &t, "policies");
	else
		say(ac, &t, "policies", NULL, "Warning", "AutoResizePolicyInvalid",
		    "%zu " ANNOTATION_AUTORESIZE_PREFIX " annotations: only the first %d by name are read; remove those "
		    "that name no volumeClaimTemplate",
		    policies, AUTORESIZE_POLICIES_MAX);
}

/* The refusals of the policies of one kind of source (Namespaces or StorageClasses) in s. */
static void check_sources_of(struct autoresize_ctx *ac, struct store *s, const char *kind, const char *covers,
			     json_t *live)
{
	json_t *objs = autoresize_sources(s);
	size_t i;
	const json_t *obj;
	json_array_foreach(objs, i, obj) {
		/* The subject "!<Kind>/<name>/policy": no namespace starts with "!", so no workload's is the same. */
		char ns[32];
		snprintf(ns, sizeof(ns), "!%s", kind);
		struct tpl t = {.w = obj, .ns = ns, .name = kube_obj_str(obj, "metadata.name"), .tpl = "policy"};
		if (!t.name)
			continue;
		char *subject = xasprintf("%s/%s/%s", t.ns, t.name, t.tpl);
		json_object_set_new(live, subject, json_true());
		free(subject);
		struct autoresize_policy pol;
		char *why = NULL;
		if (autoresize_policy_parse(autoresize_rule_text(obj), &pol, &why) < 0)
			say(ac, &t, "invalid", NULL, "Warning", "AutoResizePolicyInvalid",
			    ANNOTATION_AUTORESIZE_POLICY ": %s; %s until it is fixed (nothing else changes)", why, covers);
		else
			unsay(ac, &t, "invalid");
		free(why);
	}
	json_decref(objs);
}

void autoresize_check_sources(struct autoresize_ctx *ac, json_t *live)
{
	check_sources_of(ac, ac->namespaces, "Namespace", "no template in this namespace without a policy of its own "
							   "grows by it, nor by its StorageClass's",
			 live);
	check_sources_of(ac, ac->classes, "StorageClass", "no claim of this class grows by it", live);
}
