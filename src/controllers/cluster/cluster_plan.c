#include "controllers/cluster/cluster_plan.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/kube_object.h"
#include "client/label_selector.h"
#include "controllers/cluster/cluster_plan_internal.h"
#include "controllers/state_version.h"
#include "util/duration.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* ---- reading the spec ---- */

static const char *policy(const json_t *spec, const char *key)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(spec, "persistentVolumeClaimRetentionPolicy"), key));
	return v && !strcmp(v, "Delete") ? "Delete" : "Retain";
}

/* maxUnavailable: an integer, or a percentage of replicas rounded down; at least 1. */
static long long max_unavailable(const json_t *v, long long replicas)
{
	long long n = 1;
	if (json_is_integer(v)) {
		n = json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end = NULL;
		long long pct = strtoll(s, &end, 10);
		if (end && *end == '%')
			n = replicas * pct / 100;
	}
	return n < 1 ? 1 : n;
}

static void read_spec(const json_t *cluster, struct spec *s)
{
	const json_t *spec = json_object_get(cluster, "spec");
	memset(s, 0, sizeof(*s));
	const json_t *rolling = json_object_get(json_object_get(spec, "updateStrategy"), "rollingUpdate");
	const json_t *replace = json_object_get(spec, "replacement");
	s->replicas = kube_obj_int(spec, "replicas", NULL, 1);
	if (s->replicas < 0)
		s->replicas = 0;
	s->selector = json_object_get(spec, "selector");
	s->tmpl = json_object_get(spec, "template");
	s->vcts = json_object_get(spec, "volumeClaimTemplates");
	s->min_ready_ms = kube_obj_int(spec, "minReadySeconds", NULL, 0) * 1000;
	const char *type = kube_obj_str(spec, "updateStrategy.type");
	s->on_delete = type && !strcmp(type, "OnDelete");
	s->max_unavailable = max_unavailable(json_object_get(rolling, "maxUnavailable"), s->replicas);
	s->partition = kube_obj_int(rolling, "partition", NULL, 0);
	s->history = kube_obj_int(spec, "revisionHistoryLimit", NULL, CLUSTER_DEFAULT_HISTORY);
	s->when_deleted = policy(spec, "whenDeleted");
	s->when_scaled = policy(spec, "whenScaled");
	s->when_replaced = policy(spec, "whenReplaced");
	s->unhealthy_ms = kube_obj_int(replace, "unhealthyAfterSeconds", NULL, CLUSTER_DEFAULT_UNHEALTHY_S) * 1000;
	s->node_lost_ms = kube_obj_int(replace, "nodeLostAfterSeconds", NULL, CLUSTER_DEFAULT_NODE_LOST_S) * 1000;
	s->grace_ms = kube_obj_int(replace, "startupGraceSeconds", NULL, CLUSTER_DEFAULT_STARTUP_GRACE_S) * 1000;
	s->remove = json_object_get(spec, "removeMembers");
}

/* ---- the members as the cluster shows them ---- */

static void due_at(struct plan *p, long long ms)
{
	if (ms < p->due_ms)
		p->due_ms = ms;
}

static long long time_ms(const char *rfc3339)
{
	int64_t s = rfc3339_seconds(rfc3339);
	return s < 0 ? -1 : (long long)s * 1000;
}

static struct identity *identity_get(struct plan *p, long n)
{
	for (size_t i = 0; i < p->nids; i++)
		if (p->ids[i].n == n)
			return &p->ids[i];
	p->ids = xrealloc(p->ids, (p->nids + 1) * sizeof(*p->ids));
	struct identity *id = &p->ids[p->nids++];
	memset(id, 0, sizeof(*id));
	id->n = n;
	id->name = set_pod_name(p->name, n);
	id->claims = xcalloc(json_array_size(p->s.vcts) + 1, sizeof(*id->claims));
	return id;
}

static bool has_claim(const struct identity *id, const char *name)
{
	for (int i = 0; i < id->nclaims; i++)
		if (!strcmp(kube_obj_str(id->claims[i], "metadata.name"), name))
			return true;
	return false;
}

static int by_identity(const void *a, const void *b)
{
	long x = ((const struct identity *)a)->n, y = ((const struct identity *)b)->n;
	return x < y ? -1 : x > y;
}

static void collect(struct plan *p)
{
	size_t i, j;
	const json_t *o, *t;
	json_array_foreach(p->in->pods, i, o) {
		long n = cluster_identity_of(kube_obj_str(o, "metadata.name"), NULL, p->name);
		if (n < 0)
			continue;
		struct identity *id = identity_get(p, n);
		if (kube_obj_controlled_by(o, p->uid))
			id->pod = o;
		else
			id->foreign = o;
	}
	json_array_foreach(p->s.vcts, j, t) {
		const char *tname = kube_obj_str(t, "metadata.name");
		if (!tname)
			continue;
		json_array_foreach(p->in->pvcs, i, o) {
			long n = cluster_identity_of(kube_obj_str(o, "metadata.name"), tname, p->name);
			/* Ours carry the cluster label: a claim of the same name made otherwise is left alone. */
			const char *owner = kube_obj_label(o, LABEL_CLUSTER);
			if (n < 0)
				continue;
			if (!owner || strcmp(owner, p->name)) {
				/* Not ours, but the name is taken: new identities must go past it. */
				if (n > p->foreign_max)
					p->foreign_max = n;
				continue;
			}
			struct identity *id = identity_get(p, n);
			/*
			 * A claim listed twice (no cache holds two objects of one name, but
			 * the planner must not write past claims on the word of its input)
			 * counts once: claims holds one per template.
			 */
			if (!has_claim(id, kube_obj_str(o, "metadata.name")))
				id->claims[id->nclaims++] = o;
		}
	}
}

/* Health of a member's pod: ready, available, and whether (or when) it counts as failed. */
static void assess(struct plan *p, struct identity *id)
{
	const json_t *pod = id->pod;
	const char *uid = kube_obj_str(pod, "metadata.uid");
	id->going = kube_obj_terminating(pod) || cluster_in_array(p->in->deleted_uids, uid);
	id->revision = kube_obj_label(pod, LABEL_REVISION_HASH);
	const json_t *ready = cluster_condition(pod, "Ready");
	const char *phase = kube_obj_str(pod, "status.phase");
	long long ready_since = time_ms(kube_obj_str(ready, "lastTransitionTime"));
	/* Not kube_pod_ready: going is also a pod we deleted that the cache does not show going yet. */
	id->ready = !id->going && kube_obj_condition(pod, "Ready", NULL);
	if (id->ready) {
		long long at = ready_since + p->s.min_ready_ms; /* available from then */
		id->available = p->s.min_ready_ms == 0 || (ready_since >= 0 && at <= p->in->now_ms);
		if (!id->available && ready_since >= 0)
			due_at(p, at);
	}

	/*
	 * A pod being deleted ends Failed too (its containers die of the
	 * SIGTERM): that is a restart, not a failure of the member.
	 */
	if (phase && !strcmp(phase, "Failed") && !id->going) {
		const char *reason = kube_obj_str(pod, "status.reason");
		/* The kubelet's words, or whoever may write the pod's status: clean and bounded in the cluster's status. */
		char *msg = text_sanitize(kube_obj_str(pod, "status.message"), TEXT_QUOTE_MAX);
		id->failure = xasprintf("pod %s %s%s%s", id->name, reason && !strcmp(reason, "Evicted") ? "was evicted" : "failed",
					msg ? ": " : "", msg ? msg : "");
		free(msg);
		return;
	}
	const char *node_name = kube_obj_str(pod, "spec.nodeName");
	if (node_name && p->in->nodes) {
		const json_t *node = kube_list_find(p->in->nodes, NULL, node_name);
		const json_t *nready = cluster_condition(node, "Ready");
		const char *st = kube_obj_str(nready, "status");
		if (!node) {
			/*
			 * Gone, or not yet in the cache: lost only once the pod stopped
			 * being Ready (its kubelet went with the node), for nodeLostAfterSeconds.
			 */
			const char *pst = kube_obj_str(ready, "status");
			if (pst && strcmp(pst, "True") && ready_since >= 0) {
				id->node_lost = true;
				if (ready_since + p->s.node_lost_ms <= p->in->now_ms) {
					id->failure = xasprintf("its node %s is gone", node_name);
					return;
				}
				due_at(p, ready_since + p->s.node_lost_ms);
			}
		} else if (!st || strcmp(st, "True")) {
			id->node_lost = true;
			long long since = time_ms(kube_obj_str(nready, "lastTransitionTime"));
			if (since < 0) /* no transition time: its last heartbeat, or lost already */
				since = time_ms(kube_obj_str(nready, "lastHeartbeatTime"));
			if (since + p->s.node_lost_ms <= p->in->now_ms) {
				id->failure = xasprintf("its node %s has not been Ready for %llds (nodeLostAfterSeconds)",
							node_name, p->s.node_lost_ms / 1000);
				return;
			}
			due_at(p, since + p->s.node_lost_ms);
		}
	}
	if (id->ready || id->going)
		return;
	/* Not Ready: counted from when it stopped being Ready, never before the start-up grace ended. */
	long long started = time_ms(kube_obj_str(pod, "status.startTime"));
	if (started < 0)
		started = time_ms(kube_obj_str(pod, "metadata.creationTimestamp"));
	if (started < 0)
		return;
	long long from = started + p->s.grace_ms;
	if (ready_since > from)
		from = ready_since;
	if (from + p->s.unhealthy_ms <= p->in->now_ms)
		id->failure = xasprintf("pod %s has not been Ready for %llds (unhealthyAfterSeconds)", id->name,
					p->s.unhealthy_ms / 1000);
	else
		due_at(p, from + p->s.unhealthy_ms);
}

/* ---- the state ---- */

/* The highest identity any pod or claim shows, or -1. */
static long highest_seen(const struct plan *p)
{
	long max = p->foreign_max;
	for (size_t i = 0; i < p->nids; i++)
		if ((p->ids[i].pod || p->ids[i].nclaims) && p->ids[i].n > max)
			max = p->ids[i].n;
	return max;
}

/* Reads the state annotation; rebuilds it from the pods and claims when missing or unreadable. */
static void read_state(struct plan *p)
{
	json_t *st = kube_obj_annotation_json(p->c, ANNOTATION_CLUSTER_STATE);
	long long seen_next = highest_seen(p) + 1;
	long long status_next = kube_obj_int(p->c, "status", "nextIdentity", 0);
	long long least = seen_next > status_next ? seen_next : status_next;
	if (json_is_object(st) && json_is_integer(json_object_get(st, "next")) &&
	    json_is_array(json_object_get(st, "members"))) {
		if (!json_is_object(json_object_get(st, "released")))
			json_object_set_new(st, "released", json_object());
		long long next = json_integer_value(json_object_get(st, "next"));
		/* Never behind what exists: an identity in use is never handed out again. */
		if (next < least) {
			json_object_set_new(st, "next", json_integer(least));
			p->state_rebuilt = true;
		}
		p->state = st;
		return;
	}
	json_decref(st);
	/* A failed pod's member stays one: it is then replaced as any, its claims following whenReplaced. */
	json_t *members = json_array();
	for (size_t i = 0; i < p->nids; i++) {
		const struct identity *id = &p->ids[i];
		if (id->pod && !kube_obj_terminating(id->pod))
			json_array_append_new(members, json_integer(id->n));
	}
	p->state = json_pack("{s:I, s:o, s:o}", "next", (json_int_t)least, "members", members, "released",
			     json_object());
	p->state_rebuilt = true;
}

static void apply_state(struct plan *p)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(p->state, "members"), i, v)
		identity_get(p, (long)json_integer_value(v))->member = true;
	const char *k;
	json_object_foreach(json_object_get(p->state, "released"), k, v) {
		long n = (long)kube_name_number(k, "", MAX_IDENTITY_DIGITS);
		if (n >= 0)
			identity_get(p, n)->released = json_string_value(v);
	}
	if (p->nids > 1)
		qsort(p->ids, p->nids, sizeof(*p->ids), by_identity);
	int rank = 0;
	for (i = 0; i < p->nids; i++)
		if (p->ids[i].member)
			p->ids[i].rank = rank++;
}

/* ---- the plan ---- */

static bool refuse(struct plan *p, struct action *a)
{
	const char *why = NULL;
	bool empty = !json_object_size(json_object_get(p->s.selector, "matchLabels")) &&
		     !json_array_size(json_object_get(p->s.selector, "matchExpressions"));
	if (!label_selector_valid(p->s.selector) || empty)
		why = "spec.selector is missing, empty or malformed: give it matchLabels the pods carry";
	else if (!json_is_object(p->s.tmpl) || !json_array_size(json_object_get(json_object_get(p->s.tmpl, "spec"), "containers")))
		why = "spec.template has no containers";
	json_t *labels = why ? NULL : cluster_pod_labels(p->c, p->s.tmpl, NULL);
	if (labels && !label_selector_matches(p->s.selector, labels))
		why = "spec.selector does not select the pods spec.template makes: make the template's labels match it";
	json_decref(labels);
	if (!why)
		return false;
	a->verb = ACTION_REFUSE;
	action_event(a, "Warning", "InvalidSpec", "%s", why);
	return true;
}

void cluster_plan(const struct cluster_inputs *in, struct action *a)
{
	action_init(a);
	/* Gone or going: the garbage collector takes its pods, revisions and the claims it owns. */
	if (!in->cluster || kube_obj_terminating(in->cluster))
		return;
	struct plan p = {.in = in, .c = in->cluster, .due_ms = LLONG_MAX, .foreign_max = -1};
	p.ns = kube_obj_str(in->cluster, "metadata.namespace");
	p.name = kube_obj_str(in->cluster, "metadata.name");
	p.uid = kube_obj_str(in->cluster, "metadata.uid");
	if (!p.ns || !p.name || !p.uid)
		return;
	read_spec(in->cluster, &p.s);
	if (refuse(&p, a))
		return;
	/* A state a newer operator wrote: this one must not rebuild it from the pods as if it were lost. */
	if (state_version_refuse(in->cluster, ANNOTATION_CLUSTER_STATE, CLUSTER_KIND, a))
		return;
	collect(&p);
	read_state(&p);
	apply_state(&p);
	cluster_template_hash(p.s.tmpl, p.hash);
	p.update_rev = cluster_revision_name(p.name, p.hash);
	p.update_obj = cluster_find_revision(&p, p.update_rev);
	/* The state keeps it too: a partition must hold through a status wipe. */
	const char *cur = json_string_value(json_object_get(p.state, "currentRevision"));
	if (!cur || !cluster_find_revision(&p, cur))
		cur = kube_obj_str(in->cluster, "status.currentRevision");
	p.current_rev = cur && cluster_find_revision(&p, cur) ? cur : p.update_rev;
	for (size_t i = 0; i < p.nids; i++)
		if (p.ids[i].pod)
			assess(&p, &p.ids[i]);

	if (p.state_rebuilt) {
		cluster_set_state(&p, a, "RebuildState", json_incref(p.state));
		if (highest_seen(&p) >= 0)
			action_event(a, "Normal", "StateRebuilt",
				     "identity state rebuilt from the pods and claims: next identity %s-%lld", p.name,
				     (long long)json_integer_value(json_object_get(p.state, "next")));
	} else if (!(cluster_refuse_removals(&p, a) || cluster_ensure_revision(&p, a) ||
		     cluster_record_current_revision(&p, a) || cluster_remove_named(&p, a) || cluster_replace_failed(&p, a) ||
		     cluster_release(&p, a) || cluster_replace_requested(&p, a) || cluster_scale(&p, a) ||
		     cluster_start_members(&p, a) || cluster_roll(&p, a) || cluster_fix_claim_owners(&p, a) ||
		     cluster_prune_revisions(&p, a))) {
		json_t *st = cluster_desired_status(&p);
		if (cluster_status_differs(json_object_get(in->cluster, "status"), st)) {
			cluster_patch(&p, a, "UpdateStatus", json_pack("{s:o}", "status", st));
			a->subresource = "status";
		} else {
			json_decref(st);
			if (p.due_ms != LLONG_MAX)
				a->verb = ACTION_WAIT;
			if (p.replace_held)
				cluster_replace_waiting(&p, a);
		}
	}
	/* Conflict, already there, already gone: the cluster moved on; look again. */
	a->answers = ACTION_STALE_404 | ACTION_STALE_409;
	if (p.due_ms != LLONG_MAX) {
		long long left = p.due_ms - in->now_ms;
		a->requeue_ms = left < 1 ? 1 : left > LONG_MAX ? LONG_MAX : (long)left;
	}
	for (size_t i = 0; i < p.nids; i++) {
		free(p.ids[i].name);
		free(p.ids[i].claims);
		free(p.ids[i].failure);
	}
	free(p.ids);
	free(p.update_rev);
	json_decref(p.state);
}
