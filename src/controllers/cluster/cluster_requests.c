/*
 * The members the user names (`kubectl stateful members remove|replace`): a
 * part of the planner (cluster_plan.h).
 *
 *   spec.removeMembers   identities that must not be members: each member
 *                        named leaves (released "Scaled": its claims follow
 *                        whenScaled) and replicas then counts the others, so
 *                        with replicas lowered by as many exactly those go.
 *                        A former member named stays accepted (the list may
 *                        keep it: GitOps re-applies it); a name this cluster
 *                        never handed out refuses the spec.
 *   replace-members      annotation "<name>-<n>[,...]": each member named is
 *                        replaced by a new identity with new claims (its own
 *                        follow whenReplaced), as a failed one is, while at
 *                        most maxUnavailable members are down; its name is
 *                        taken out in the same patch. A value naming anything
 *                        but members is refused and removed, nothing replaced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/cluster/cluster_plan_internal.h"
#include "util/strbuf.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* A name quoted back in an Event: member names have at most 63 bytes. */
#define QUOTE_MAX 80

/* The member of that name (borrowed), or NULL. */
static const struct identity *member_named(const struct plan *p, const char *name)
{
	long n = name ? cluster_identity_of(name, NULL, p->name) : -1;
	for (size_t i = 0; i < p->nids && n >= 0; i++)
		if (p->ids[i].n == n && p->ids[i].member)
			return &p->ids[i];
	return NULL;
}

/* The members' names, "x-0, x-2", or "none": a new string. */
static char *member_names(const struct plan *p)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < p->nids; i++)
		if (p->ids[i].member)
			strbuf_appendf(&sb, "%s%s", sb.len ? ", " : "", p->ids[i].name);
	if (!sb.len)
		strbuf_appendf(&sb, "none");
	return strbuf_detach(&sb);
}

bool cluster_refuse_removals(struct plan *p, struct action *a)
{
	long long next = json_integer_value(json_object_get(p->state, "next"));
	size_t i;
	const json_t *v;
	json_array_foreach(p->s.remove, i, v) {
		const char *name = json_string_value(v);
		long n = name ? cluster_identity_of(name, NULL, p->name) : -1;
		if (n >= 0 && n < next)
			continue; /* a member, or a former one */
		char *quoted = text_sanitize(name ? name : "(not a string)", QUOTE_MAX);
		char *members = member_names(p);
		a->verb = ACTION_REFUSE;
		action_event(a, "Warning", "InvalidSpec",
			     "spec.removeMembers: \"%s\" is not a member of this StatefulCluster (members: %s): "
			     "correct or drop that entry; nothing changes until then",
			     quoted, members);
		free(quoted);
		free(members);
		return true;
	}
	return false;
}

bool cluster_remove_named(struct plan *p, struct action *a)
{
	for (size_t i = 0; i < p->nids; i++) {
		const struct identity *id = &p->ids[i];
		if (!id->member || !cluster_in_array(p->s.remove, id->name))
			continue;
		cluster_set_state(p, a, "RemoveMember", cluster_state_change(p, id->n, "Scaled", 0, NULL, 0));
		action_event(a, "Normal", "MemberRemoved",
			     "spec.removeMembers names member %s (%s): it goes (replicas %lld); "
			     "its claims are %s (whenScaled: %s)",
			     id->name, id->ready ? "Ready" : "not Ready", p->s.replicas,
			     cluster_claims_fate(p->s.when_scaled), p->s.when_scaled);
		cluster_forget_request(p, a, id);
		return true;
	}
	return false;
}

/* A request naming what is not a member (bad, borrowed): refused, and removed in a SetState step. */
static void refuse_request(struct plan *p, struct action *a, const char *bad, size_t count)
{
	char *quoted = text_sanitize(bad, QUOTE_MAX);
	char *members = member_names(p);
	char *what = count > CLUSTER_MAX_REQUESTED ? xasprintf("more than %d names", CLUSTER_MAX_REQUESTED)
		     : !*quoted			  ? xstrdup("an empty name")
						  : xasprintf("\"%s\" is not a member of this StatefulCluster", quoted);
	cluster_set_state(p, a, "RefuseReplace", json_deep_copy(p->state));
	cluster_set_request(a, NULL);
	action_event(a, "Warning", "ReplaceRefused",
		     "annotation %s: %s (members: %s): nothing was replaced and the annotation is removed; "
		     "name members, comma-separated (kubectl stateful members replace stc/%s MEMBER)",
		     ANNOTATION_CLUSTER_REPLACE, what, members, p->name);
	free(what);
	free(quoted);
	free(members);
}

bool cluster_replace_requested(struct plan *p, struct action *a)
{
	json_t *names = cluster_requested_names(p);
	if (!names)
		return false;
	size_t i;
	const json_t *v;
	json_array_foreach(names, i, v) {
		if (json_array_size(names) > CLUSTER_MAX_REQUESTED || !member_named(p, json_string_value(v))) {
			refuse_request(p, a, json_string_value(v), json_array_size(names));
			json_decref(names);
			return true;
		}
	}
	/* As a rolling update: the member replaced counts as down until its successor is available. */
	int down = cluster_members_down(p);
	bool chose = false;
	json_array_foreach(names, i, v) {
		const struct identity *id = member_named(p, json_string_value(v));
		if (down - (cluster_member_down(id) ? 1 : 0) + 1 > p->s.max_unavailable) {
			if (!p->replace_held) {
				p->replace_held = id;
				p->down = down;
			}
			continue;
		}
		cluster_replace_member(p, a, id, "Normal", "was asked to be rebuilt (annotation " ANNOTATION_CLUSTER_REPLACE ")");
		chose = true;
		break;
	}
	json_decref(names);
	return chose;
}

void cluster_replace_waiting(const struct plan *p, struct action *a)
{
	action_event(a, "Normal", "ReplaceWaiting",
		     "replacing member %s (annotation %s) waits: %d member(s) unavailable, maxUnavailable %lld",
		     p->replace_held->name, ANNOTATION_CLUSTER_REPLACE, p->down, p->s.max_unavailable);
}
