/* The StatefulCluster's members, replaced, scaled, released and started: a part of the planner (cluster_plan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/cluster/cluster_plan_internal.h"
#include "util/xalloc.h"

/* What a retention policy does to a leaving member's claims, for the Events. */
const char *cluster_claims_fate(const char *policy)
{
	return !strcmp(policy, "Delete") ? "deleted" : "kept";
}

void cluster_replace_member(struct plan *p, struct action *a, const struct identity *id, const char *type,
			    const char *cause)
{
	long long members = (long long)json_array_size(json_object_get(p->state, "members"));
	if (members > p->s.replicas) {
		/* Scaling down anyway: this member is the one that goes, without a successor. */
		cluster_set_state(p, a, "RemoveMember", cluster_state_change(p, id->n, "Replaced", 0, NULL, 0));
		action_event(a, type, "MemberRemoved",
			     "member %s %s while scaling to %lld: removed, not replaced; "
			     "its claims are %s (whenReplaced: %s)",
			     id->name, cause, p->s.replicas, cluster_claims_fate(p->s.when_replaced), p->s.when_replaced);
	} else {
		char added[300];
		cluster_set_state(p, a, "ReplaceMember", cluster_state_change(p, id->n, "Replaced", 1, added, sizeof(added)));
		action_event(a, type, "MemberReplaced",
			     "member %s %s; replaced by %s with new claims; "
			     "its claims are %s (whenReplaced: %s)",
			     id->name, cause, added, cluster_claims_fate(p->s.when_replaced), p->s.when_replaced);
		action_count(a, "stateful_operator_cluster_member_replacements_total", 1);
	}
	cluster_forget_request(p, a, id);
}

bool cluster_replace_failed(struct plan *p, struct action *a)
{
	for (size_t i = 0; i < p->nids; i++) {
		struct identity *id = &p->ids[i];
		if (!id->member || !id->failure)
			continue;
		char *cause = xasprintf("failed (%s)", id->failure);
		cluster_replace_member(p, a, id, "Warning", cause);
		free(cause);
		return true;
	}
	return false;
}

bool cluster_scale(struct plan *p, struct action *a)
{
	long long members = (long long)json_array_size(json_object_get(p->state, "members"));
	if (members < p->s.replicas) {
		char added[1024];
		int add = (int)(p->s.replicas - members);
		cluster_set_state(p, a, "AddMembers", cluster_state_change(p, -1, NULL, add, added, sizeof(added)));
		action_event(a, "Normal", "MembersAdded", "scaling to %lld: new members %s", p->s.replicas, added);
		return true;
	}
	if (members > p->s.replicas) {
		const struct identity *victim = NULL;
		for (size_t i = 0; i < p->nids; i++)
			if (p->ids[i].member && cluster_goes_before(&p->ids[i], victim))
				victim = &p->ids[i];
		cluster_set_state(p, a, "RemoveMember", cluster_state_change(p, victim->n, "Scaled", 0, NULL, 0));
		action_event(a, "Normal", "MemberRemoved",
			     "scaling to %lld: member %s (%s) goes; its claims are %s (whenScaled: %s)", p->s.replicas,
			     victim->name, victim->ready ? "Ready" : "not Ready", cluster_claims_fate(p->s.when_scaled),
			     p->s.when_scaled);
		cluster_forget_request(p, a, victim);
		return true;
	}
	return false;
}

bool cluster_release(struct plan *p, struct action *a)
{
	for (size_t i = 0; i < p->nids; i++) {
		struct identity *id = &p->ids[i];
		if (id->member)
			continue;
		bool deleted = id->pod && cluster_in_array(p->in->deleted_uids, kube_obj_str(id->pod, "metadata.uid"));
		if (id->pod && !id->released && !kube_obj_terminating(id->pod) && !deleted) {
			/*
			 * A live pod of ours that the state neither lists nor released: the
			 * annotation was replaced by an older copy (a re-applied manifest).
			 * The pod is taken back in as a member, never deleted.
			 */
			json_t *st = json_deep_copy(p->state);
			json_array_append_new(json_object_get(st, "members"), json_integer(id->n));
			cluster_set_state(p, a, "RecoverMember", st);
			action_event(a, "Warning", "MemberRecovered",
				     "pod %s is this StatefulCluster's but annotation %s did not list it "
				     "(replaced by an older copy?): it is a member again",
				     id->name, ANNOTATION_CLUSTER_STATE);
			return true;
		}
		/* A pod stuck terminating on a lost node is force-deleted: its identity is never used again. */
		if (id->pod && (!kube_obj_terminating(id->pod) || id->node_lost) && !deleted) {
			action_delete(a, "DeleteFormerMember", &KUBE_PODS, id->pod);
			a->force = id->node_lost;
			return true;
		}
		if (!id->released)
			continue;
		const char *pol = !strcmp(id->released, "Replaced") ? p->s.when_replaced : p->s.when_scaled;
		if (!strcmp(pol, "Delete")) {
			if (id->pod)
				continue; /* the claims go once the pod is gone */
			for (int c = 0; c < id->nclaims; c++) {
				if (!kube_obj_terminating(id->claims[c])) {
					action_delete(a, "DeleteClaim", &KUBE_PVCS, id->claims[c]);
					return true;
				}
			}
		}
		/* Done with it: the identity is only a number past now. */
		json_t *st = json_deep_copy(p->state);
		char key[24];
		snprintf(key, sizeof(key), "%ld", id->n);
		json_object_del(json_object_get(st, "released"), key);
		cluster_set_state(p, a, "ForgetMember", st);
		return true;
	}
	return false;
}

/* Member id's claim of template vct (borrowed from the inputs), or NULL. */
static const json_t *member_claim(const struct plan *p, const struct identity *id, const json_t *vct)
{
	char *claim = set_claim_name(kube_obj_str(vct, "metadata.name"), p->name, id->n);
	const json_t *found = NULL;
	for (int c = 0; c < id->nclaims; c++)
		if (!strcmp(kube_obj_str(id->claims[c], "metadata.name"), claim))
			found = id->claims[c];
	free(claim);
	return found;
}

/*
 * Every member's missing claims first, then the pods: the claims are being
 * bound while the pods are made (a pod made before its claim is bound
 * waits out the scheduler's backoff), and the creates of one kind go out
 * together (reconciler_ops.batch).
 */
bool cluster_start_members(struct plan *p, struct action *a)
{
	size_t t;
	const json_t *vct;
	for (size_t i = 0; i < p->nids; i++) {
		struct identity *id = &p->ids[i];
		if (!id->member)
			continue;
		json_array_foreach(p->s.vcts, t, vct) {
			if (!member_claim(p, id, vct)) {
				bool owned = !strcmp(p->s.when_deleted, "Delete");
				action_create(a, "CreateClaim", &KUBE_PVCS, cluster_member_claim(p->c, vct, id->n, owned));
				return true;
			}
		}
	}
	for (size_t i = 0; i < p->nids; i++) {
		struct identity *id = &p->ids[i];
		if (!id->member || id->pod || id->foreign)
			continue;
		bool claims_ready = true;
		json_array_foreach(p->s.vcts, t, vct) {
			if (kube_obj_terminating(member_claim(p, id, vct)))
				claims_ready = false; /* someone deletes it: the pod waits for a new one */
		}
		if (!claims_ready)
			continue;
		const char *rev = cluster_target_revision(p, id);
		const json_t *robj = cluster_find_revision(p, rev);
		const json_t *tmpl = robj ? json_object_get(json_object_get(robj, "data"), "template") : NULL;
		if (!tmpl)
			continue; /* its revision is not in the cache yet */
		action_create(a, "CreatePod", &KUBE_PODS, cluster_member_pod(p->c, tmpl, id->n, rev));
		return true;
	}
	return false;
}

bool cluster_fix_claim_owners(struct plan *p, struct action *a)
{
	bool want = !strcmp(p->s.when_deleted, "Delete");
	for (size_t i = 0; i < p->nids; i++) {
		const struct identity *id = &p->ids[i];
		for (int c = 0; c < id->nclaims; c++) {
			const json_t *obj = id->claims[c];
			if (kube_obj_terminating(obj) || kube_obj_owned_by(obj, p->uid) == want)
				continue;
			json_t *refs = json_array();
			size_t r;
			json_t *ref;
			json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), r, ref) {
				const char *u = kube_obj_str(ref, "uid");
				if (!u || strcmp(u, p->uid))
					json_array_append(refs, ref);
			}
			if (want)
				json_array_append_new(refs, cluster_owner_ref(p->c, false));
			const char *name = kube_obj_str(obj, "metadata.name");
			json_t *patch = json_pack("{s:{s:o}}", "metadata", "ownerReferences", refs);
			action_patch(a, want ? "OwnClaim" : "DisownClaim", &KUBE_PVCS, name, patch);
			action_patch_precondition(a, kube_obj_str(obj, "metadata.resourceVersion"), NULL);
			return true;
		}
	}
	return false;
}
