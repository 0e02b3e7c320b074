#include "controllers/cluster/cluster_plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "client/label_selector.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* ---- the selector as status.selector shows it ---- */

char *cluster_selector_string(const json_t *selector)
{
	if (!label_selector_valid(selector))
		return NULL;
	struct strbuf sb = STRBUF_INIT;
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)json_object_get(selector, "matchLabels"), k, v)
		strbuf_appendf(&sb, "%s%s=%s", sb.len ? "," : "", k, json_string_value(v));
	size_t i, j;
	const json_t *e, *x;
	json_array_foreach(json_object_get(selector, "matchExpressions"), i, e) {
		const char *key = kube_obj_str(e, "key"), *op = kube_obj_str(e, "operator");
		const char *sep = sb.len ? "," : "";
		if (!strcmp(op, "Exists")) {
			strbuf_appendf(&sb, "%s%s", sep, key);
		} else if (!strcmp(op, "DoesNotExist")) {
			strbuf_appendf(&sb, "%s!%s", sep, key);
		} else {
			strbuf_appendf(&sb, "%s%s %s (", sep, key, !strcmp(op, "In") ? "in" : "notin");
			json_array_foreach(json_object_get(e, "values"), j, x)
				strbuf_appendf(&sb, "%s%s", j ? "," : "", json_string_value(x));
			strbuf_appendf(&sb, ")");
		}
	}
	return strbuf_detach(&sb);
}

/* ---- status ---- */

/* Condition type as it should be; its lastTransitionTime kept from cluster's while its status holds. */
static json_t *condition_new(const json_t *cluster, const char *type, bool status, const char *reason,
			     const char *message, const char *now, long long generation)
{
	const char *st = status ? "True" : "False";
	const json_t *c = cluster_condition(cluster, type);
	const char *was = kube_obj_str(c, "status"), *since = kube_obj_str(c, "lastTransitionTime");
	if (!was || strcmp(was, st) || !since)
		since = now;
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", type, "status", st, "reason", reason, "message",
			 message, "lastTransitionTime", since, "observedGeneration", (json_int_t)generation);
}

json_t *cluster_desired_status(const struct plan *p)
{
	long long replicas = 0, ready = 0, available = 0, updated = 0, current = 0, members = 0;
	json_t *list = json_array();
	for (size_t i = 0; i < p->nids; i++) {
		const struct identity *id = &p->ids[i];
		if (!id->member)
			continue;
		members++;
		json_t *m = json_pack("{s:s, s:b}", "identity", id->name, "ready", id->ready);
		if (id->pod) {
			replicas++;
			ready += id->ready;
			available += id->available;
			updated += cluster_at_revision(id, p->update_rev);
			json_object_set_new(m, "pod", json_string(id->name));
			const char *node = kube_obj_str(id->pod, "spec.nodeName");
			if (node)
				json_object_set_new(m, "node", json_string(node));
			if (id->revision)
				json_object_set_new(m, "revision", json_string(id->revision));
			const char *phase = kube_obj_str(id->pod, "status.phase");
			json_object_set_new(m, "phase", json_string(id->going ? "Terminating" : phase ? phase : "Pending"));
		}
		json_array_append_new(list, m);
	}
	const char *current_rev = updated == p->s.replicas && members == p->s.replicas ? p->update_rev : p->current_rev;
	for (size_t i = 0; i < p->nids; i++)
		current += p->ids[i].member && p->ids[i].pod && cluster_at_revision(&p->ids[i], current_rev);
	char now[32];
	time_t t = (time_t)(p->in->now_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	long long gen = kube_obj_int(p->c, "metadata", "generation", 0);
	long long need = p->s.replicas - (p->s.on_delete ? 0 : p->s.max_unavailable);
	if (need < 0)
		need = 0;
	json_t *conds = json_array();
	char msg[256];
	snprintf(msg, sizeof(msg), "%lld of %lld members available (at least %lld wanted)", available, p->s.replicas,
		 need);
	json_array_append_new(conds, condition_new(p->c, "Available", available >= need,
						   available >= need ? "MinimumMembersAvailable" : "MembersUnavailable",
						   msg, now, gen));
	bool steady = members == p->s.replicas && replicas == members && ready == members && updated == members;
	const char *why = members != p->s.replicas ? "Scaling" : updated != members ? "RollingUpdate" :
			  replicas != members || ready != members ? "MembersStarting" : "Complete";
	snprintf(msg, sizeof(msg), "%lld members, %lld with pods, %lld Ready, %lld at revision %s", members, replicas,
		 ready, updated, p->update_rev);
	json_array_append_new(conds, condition_new(p->c, "Progressing", !steady, why, msg, now, gen));
	const char *fail = p->in->create_error;
	char *taken = NULL;
	for (size_t i = 0; i < p->nids && !fail; i++)
		if (p->ids[i].member && p->ids[i].foreign)
			fail = taken = xasprintf("pod %s exists and is not this StatefulCluster's", p->ids[i].name);
	json_array_append_new(conds, condition_new(p->c, "ReplicaFailure", fail != NULL, fail ? "CreateFailed" : "None",
						   fail ? fail : "every member's pod could be created", now, gen));
	free(taken);
	char *selector = cluster_selector_string(p->s.selector);
	json_t *st = json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:I, s:s?, s:I, s:o, s:o}", "replicas",
			       (json_int_t)replicas, "readyReplicas", (json_int_t)ready, "availableReplicas",
			       (json_int_t)available, "updatedReplicas", (json_int_t)updated, "currentReplicas",
			       (json_int_t)current, "currentRevision", current_rev, "updateRevision", p->update_rev,
			       "observedGeneration", (json_int_t)gen, "selector", selector, "nextIdentity",
			       json_integer_value(json_object_get(p->state, "next")), "members", list, "conditions", conds);
	free(selector);
	return st;
}

bool cluster_status_differs(const json_t *have, const json_t *want)
{
	if (!have)
		return true;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)want, k, v) {
		if (!json_equal(v, json_object_get(have, k)))
			return true;
	}
	return false;
}

