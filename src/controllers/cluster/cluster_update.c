/* The StatefulCluster's revisions and rolling update: a part of the planner (cluster_plan.h). */
#include <string.h>

#include "client/kube_object.h"
#include "controllers/cluster/cluster_plan_internal.h"

const json_t *cluster_find_revision(const struct plan *p, const char *name)
{
	const json_t *r = kube_list_find(p->in->revisions, NULL, name);
	return kube_obj_controlled_by(r, p->uid) ? r : NULL;
}

const char *cluster_target_revision(const struct plan *p, const struct identity *id)
{
	return !p->s.on_delete && id->rank < p->s.partition ? p->current_rev : p->update_rev;
}

bool cluster_roll(struct plan *p, struct action *a)
{
	if (p->s.on_delete)
		return false;
	const struct identity *pick = NULL;
	int down = cluster_members_down(p);
	for (size_t i = 0; i < p->nids; i++) {
		const struct identity *id = &p->ids[i];
		if (!id->member || !id->pod || id->going || cluster_at_revision(id, cluster_target_revision(p, id)))
			continue;
		if (cluster_goes_before(id, pick))
			pick = id;
	}
	if (!pick || down - (pick->available ? 0 : 1) + 1 > p->s.max_unavailable)
		return false;
	action_delete(a, "UpdateMember", &KUBE_PODS, pick->pod);
	action_event(a, "Normal", "MemberUpdating", "re-creating pod %s at revision %s (was %s)", pick->name,
		     cluster_target_revision(p, pick), pick->revision ? pick->revision : "unknown");
	return true;
}

static bool revision_in_use(const struct plan *p, const char *name)
{
	if (!name)
		return true; /* malformed: never deleted */
	if (!strcmp(name, p->update_rev) || (p->current_rev && !strcmp(name, p->current_rev)))
		return true;
	for (size_t i = 0; i < p->nids; i++)
		if (p->ids[i].pod && cluster_at_revision(&p->ids[i], name))
			return true;
	return false;
}

bool cluster_prune_revisions(struct plan *p, struct action *a)
{
	long long unused = 0;
	const json_t *oldest = NULL;
	size_t i;
	const json_t *r;
	json_array_foreach(p->in->revisions, i, r) {
		if (!kube_obj_controlled_by(r, p->uid) || kube_obj_terminating(r) ||
		    revision_in_use(p, kube_obj_str(r, "metadata.name")))
			continue;
		unused++;
		if (!oldest || kube_obj_int(r, "revision", NULL, 0) < kube_obj_int(oldest, "revision", NULL, 0))
			oldest = r;
	}
	if (unused <= p->s.history)
		return false;
	action_delete(a, "DeleteRevision", &KUBE_CONTROLLERREVISIONS, oldest);
	return true;
}

bool cluster_ensure_revision(struct plan *p, struct action *a)
{
	if (p->update_obj)
		return false;
	long long max = 0;
	size_t i;
	const json_t *r;
	json_array_foreach(p->in->revisions, i, r) {
		if (kube_obj_controlled_by(r, p->uid) && kube_obj_int(r, "revision", NULL, 0) > max)
			max = kube_obj_int(r, "revision", NULL, 0);
	}
	action_create(a, "CreateRevision", &KUBE_CONTROLLERREVISIONS, cluster_revision(p->c, p->hash, max + 1));
	return true;
}

/*
 * The revision the members below the partition keep: recorded when the
 * cluster is first seen, and moved to the update revision once every
 * member runs it.
 */
bool cluster_record_current_revision(struct plan *p, struct action *a)
{
	const char *have = json_string_value(json_object_get(p->state, "currentRevision"));
	const char *want = p->current_rev;
	bool all_updated = (long long)json_array_size(json_object_get(p->state, "members")) == p->s.replicas;
	for (size_t i = 0; i < p->nids && all_updated; i++)
		if (p->ids[i].member && !(p->ids[i].pod && cluster_at_revision(&p->ids[i], p->update_rev)))
			all_updated = false;
	if (all_updated)
		want = p->update_rev;
	if (have && !strcmp(have, want))
		return false;
	json_t *st = json_deep_copy(p->state);
	json_object_set_new(st, "currentRevision", json_string(want));
	cluster_set_state(p, a, "RecordRevision", st);
	return true;
}
