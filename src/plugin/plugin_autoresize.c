#include "plugin/plugin_autoresize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "client/quantity.h"
#include "controllers/autoresize/autoresize_policy.h"
#include "controllers/autoresize/autoresize_rule.h"
#include "controllers/autoresize/usage_published.h"
#include "plugin/plugin_status.h"
#include "util/duration.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"
#include "webhook/class_lookup.h"

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/*
 * The policy annotation's text as a row shows it: anyone's to write, so
 * clean (text_sanitize) and bounded (a longer one is refused unread anyway). New reference.
 */
static json_t *shown_policy(const char *policy_text)
{
	char *clean = text_sanitize(policy_text, AUTORESIZE_POLICY_TEXT_MAX);
	json_t *v = json_string(clean);
	free(clean);
	return v;
}

/* The granularity of class name (NULL: the default class) in classes; 1Gi when unknown. */
static int64_t granularity_of(const json_t *classes, const char *name)
{
	const json_t *sc = name && *name ? kube_list_find(classes, NULL, name) : class_default(classes);
	int64_t g = autoresize_quantity_bytes(kube_obj_annotation(sc, ANNOTATION_AUTORESIZE_GRANULARITY));
	return g > 0 ? g : AUTORESIZE_DEFAULT_GRANULARITY;
}

/*
 * The claims of template tpl of w in claims (<tpl>-<name>-<n>), with the
 * usage the operator published on them; the fullest in *fullest.
 */
static json_t *claims_usage(const json_t *w, const char *tpl, const json_t *claims, long long now_s,
			    const json_t **fullest_pvc, struct usage_published *fullest)
{
	const char *ns = kube_obj_str(w, "metadata.namespace");
	char *prefix = xasprintf("%s-%s-", tpl, or_empty(kube_obj_str(w, "metadata.name")));
	json_t *out = json_array();
	double best = -1;
	size_t i;
	const json_t *pvc;
	json_array_foreach(claims, i, pvc) {
		const char *name = kube_obj_str(pvc, "metadata.name");
		if (!name || strcmp(or_empty(kube_obj_str(pvc, "metadata.namespace")), or_empty(ns)) ||
		    kube_name_number(name, prefix, 9) < 0)
			continue;
		struct usage_published pu;
		if (usage_published_parse(kube_obj_annotation(pvc, ANNOTATION_USAGE), &pu) < 0) {
			json_array_append_new(out, json_pack("{s:s, s:n}", "claim", name, "usedRatio"));
			continue;
		}
		const struct volume_usage *v = &pu.usage;
		double total = (double)v->used_bytes + (double)v->available_bytes;
		double ratio = total > 0 ? (double)v->used_bytes / total : 0;
		char observed[32];
		rfc3339_format(pu.observed_s, observed);
		json_array_append_new(out, json_pack("{s:s, s:f, s:I, s:I, s:s, s:b}", "claim", name, "usedRatio", ratio,
						     "usedBytes", (json_int_t)v->used_bytes, "capacityBytes",
						     (json_int_t)v->capacity_bytes, "observed", observed, "stale",
						     now_s - pu.observed_s > USAGE_STALE_S));
		if (ratio > best) {
			best = ratio;
			*fullest = pu;
			*fullest_pvc = pvc;
		}
	}
	free(prefix);
	return out;
}

/* Where a rule comes from, for -o json|yaml: {"kind": "workload"|"namespace"|"storageclass", "name", "annotation"}. */
static json_t *source_json(const struct autoresize_rule *r, const json_t *w, const char *tpl, const char *class_name)
{
	const char *name = r->origin == AUTORESIZE_FROM_CLASS	  ? class_name
			   : r->origin == AUTORESIZE_FROM_NAMESPACE ? kube_obj_str(w, "metadata.namespace")
								    : kube_obj_str(w, "metadata.name");
	char *annotation = r->origin == AUTORESIZE_FROM_WORKLOAD ? xasprintf(ANNOTATION_AUTORESIZE_PREFIX "%s", tpl)
								  : xstrdup(ANNOTATION_AUTORESIZE_POLICY);
	json_t *v = json_pack("{s:s, s:s, s:s}", "kind", autoresize_origin_name(r->origin), "name", or_empty(name),
			      "annotation", annotation);
	free(annotation);
	return v;
}

/* The end of a row's progress that says where its policy comes from ("" for the workload's own). */
static void source_text(const struct autoresize_rule *r, const json_t *w, const char *class_name, char *buf,
			size_t size)
{
	if (r->origin == AUTORESIZE_FROM_NAMESPACE)
		snprintf(buf, size, "; policy of Namespace %s", or_empty(kube_obj_str(w, "metadata.namespace")));
	else if (r->origin == AUTORESIZE_FROM_CLASS)
		snprintf(buf, size, "; policy of StorageClass %s", or_empty(class_name));
	else
		buf[0] = '\0';
}

static void template_row(json_t *rows, const char *kind, const json_t *w, const char *tpl,
			 const struct autoresize_rule *r, const char *class_name, const json_t *vct,
			 const json_t *claims, const json_t *classes, const json_t *event, long long now_ms)
{
	const char *ns = kube_obj_str(w, "metadata.namespace");
	const char *name = kube_obj_str(w, "metadata.name");
	const char *policy_text = r->text;
	char op[300], from[400], where[400];
	snprintf(op, sizeof(op), "autoresize/%s", tpl);
	source_text(r, w, class_name, from, sizeof(from));
	autoresize_rule_where(r, tpl, ns, class_name, where, sizeof(where));
	struct autoresize_policy p = r->pol;
	if (r->why || !vct || p.off) {
		const char *phase = p.off && vct && !r->why ? "Off" : "Invalid";
		/* The workload's own refusal reads as before: the row names the template already. */
		char *msg = r->why && r->origin == AUTORESIZE_FROM_WORKLOAD ? xstrdup(r->why)
			    : r->why ? xasprintf("%s: %s", where, r->why)
			    : !vct  ? xasprintf("there is no volumeClaimTemplate named %s", tpl)
				    : xasprintf("mode=off in %s: no autoresize", where);
		json_t *row = status_row_new(ns, kind, name, op, phase, msg, -1, event);
		json_object_set_new(row, "policy", shown_policy(policy_text));
		json_object_set_new(row, "policySource", source_json(r, w, tpl, class_name));
		json_array_append_new(rows, row);
		free(msg);
		return;
	}
	const json_t *pvc = NULL;
	struct usage_published fullest;
	json_t *list = claims_usage(w, tpl, claims, now_ms / 1000, &pvc, &fullest);
	int64_t size = autoresize_quantity_bytes(kube_obj_str(vct, "spec.resources.requests.storage"));
	char *max = autoresize_bytes_text(p.max_bytes);
	char *progress;
	const char *phase;
	json_t *next = json_null(), *next_size = json_null();
	if (!pvc) {
		phase = "Unknown";
		/* Not an error: the operator publishes usage only when it reads it (a source, a poll done). */
		progress = xasprintf("usage unknown: not published on the claims (the operator publishes it at each poll "
				     "unless --autoresize-source=none); max %s%s",
				     max, from);
	} else {
		int64_t base = p.per_claim ? autoresize_quantity_bytes(kube_obj_str(pvc, "spec.resources.requests.storage")) : size;
		int64_t last = p.per_claim ? rfc3339_seconds(or_empty(kube_obj_annotation(pvc, ANNOTATION_AUTORESIZE_LAST))) * 1000
					   : autoresize_last_growth_ms(w, tpl);
		struct autoresize_decision d;
		autoresize_decide(&p, &fullest.usage, base, last > 0 ? last : 0, now_ms,
				  granularity_of(classes, kube_obj_str(pvc, "spec.storageClassName")), &d);
		char *cap = autoresize_bytes_text(base);
		char *used = autoresize_bytes_text(fullest.usage.used_bytes);
		long long age_s = now_ms / 1000 - fullest.observed_s;
		char age[32];
		status_age(age_s < 0 ? 0 : age_s, age, sizeof(age));
		char when[32] = "";
		const char *verdict = "";
		switch (d.verdict) {
		case AUTORESIZE_BELOW:
			phase = "Watching";
			verdict = "below every threshold";
			break;
		case AUTORESIZE_GROW: {
			phase = p.recommend_only ? "Recommend" : "Due";
			verdict = p.recommend_only ? "would grow (recommend-only)" : "grows at the operator's next poll";
			next = json_string("now");
			char *to = autoresize_bytes_text(d.new_bytes);
			next_size = json_string(to);
			free(to);
			break;
		}
		case AUTORESIZE_COOLDOWN:
			phase = "Cooldown";
			rfc3339_format(d.next_ms / 1000, when);
			verdict = "over a threshold; next growth after ";
			next = json_string(when);
			break;
		case AUTORESIZE_AT_MAX:
		default:
			phase = "AtMaximum";
			verdict = "over a threshold, at the maximum: no growth";
			break;
		}
		progress = xasprintf("%s used %.0f%% (%s of %s, %s ago%s), %s%s; max %s%s",
				     kube_obj_str(pvc, "metadata.name"), d.used_ratio * 100, used, cap, age,
				     age_s > USAGE_STALE_S ? ": stale" : "", verdict, when, max, from);
		free(cap);
		free(used);
	}
	json_t *row = status_row_new(ns, kind, name, op, phase, progress, -1, event);
	json_object_set_new(row, "policy", shown_policy(policy_text));
	json_object_set_new(row, "policySource", source_json(r, w, tpl, class_name));
	json_object_set_new(row, "claims", list);
	json_object_set_new(row, "nextGrowth", next);
	json_object_set_new(row, "nextSize", next_size);
	json_array_append_new(rows, row);
	free(progress);
	free(max);
}

/* The class of a template's claims in classes: its storageClassName, the default class when it names none. */
static const json_t *template_class(const json_t *classes, const json_t *vct)
{
	const json_t *name = json_object_get(json_object_get(vct, "spec"), "storageClassName");
	if (json_is_string(name))
		return *json_string_value(name) ? kube_list_find(classes, NULL, json_string_value(name)) : NULL;
	return class_default(classes);
}

void status_autoresize_rows(json_t *rows, const char *kind, const json_t *w, const json_t *claims,
			    const json_t *classes, const json_t *namespace, const json_t *events, long long now_ms)
{
	const json_t *ev = status_last_event(events, strcmp(kind, "stc") ? "StatefulSet" : "StatefulCluster",
					     kube_obj_str(w, "metadata.name"));
	const json_t *vcts = json_object_get(json_object_get(w, "spec"), "volumeClaimTemplates");
	size_t plen = strlen(ANNOTATION_AUTORESIZE_PREFIX);
	const char *key;
	const json_t *v;
	/* The workload's own policies that name no template: refused, as the operator does. */
	json_object_foreach((json_t *)kube_obj_annotations(w), key, v) {
		if (strncmp(key, ANNOTATION_AUTORESIZE_PREFIX, plen) || !strcmp(key, ANNOTATION_AUTORESIZE_GRANULARITY))
			continue;
		const char *tpl = key + plen;
		if (kube_list_find(vcts, NULL, tpl))
			continue;
		struct autoresize_rule r;
		autoresize_rule_resolve(or_empty(json_string_value(v)), NULL, NULL, &r);
		template_row(rows, kind, w, tpl, &r, NULL, NULL, claims, classes, ev, now_ms);
		autoresize_rule_release(&r);
	}
	size_t i;
	const json_t *vct;
	json_array_foreach(vcts, i, vct) {
		const char *tpl = kube_obj_str(vct, "metadata.name");
		if (!tpl)
			continue;
		char *own = xasprintf(ANNOTATION_AUTORESIZE_PREFIX "%s", tpl);
		const json_t *sc = template_class(classes, vct);
		struct autoresize_rule r;
		autoresize_rule_resolve(kube_obj_annotation(w, own), autoresize_rule_text(namespace),
					autoresize_rule_text(sc), &r);
		if (r.origin != AUTORESIZE_FROM_NONE)
			template_row(rows, kind, w, tpl, &r, kube_obj_str(sc, "metadata.name"), vct, claims, classes, ev,
				     now_ms);
		autoresize_rule_release(&r);
		free(own);
	}
}
