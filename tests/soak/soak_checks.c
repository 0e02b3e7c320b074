#include "soak_checks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "itest.h"
#include "util/xalloc.h"

/* A failed cleanup's pod goes once its failure is on record, which may come after the operation was seen to end. */
#define CLEANUP_POD_GONE_MS 60000L

static void violation(json_t *violations, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(json_t *violations, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(violations, json_string(buf));
}

void soak_check_ended(const struct soak_op *ops, int n, json_t *violations)
{
	for (int i = 0; i < n; i++) {
		if (ops[i].phase == PHASE_FAILED && (!ops[i].message || !*ops[i].message))
			violation(violations, "%s (%s) failed without a message", ops[i].name, soak_op_names[ops[i].kind]);
		else if (ops[i].phase != PHASE_DONE && ops[i].phase != PHASE_FAILED)
			violation(violations, "%s (%s) did not end (%s)", ops[i].name, soak_op_names[ops[i].kind],
				  ops[i].phase == PHASE_CREATED ? "never ready" : "asked, never completed");
	}
}

/* The end of a life in rv terms: its deletion's start, or forever. */
static long long life_end(const json_t *life)
{
	long long end = json_integer_value(json_object_get(life, "deleting_rv"));
	return end ? end : INT64_MAX;
}

/*
 * Lives (it_lives) grouped by key (a new string per life, NULL: not
 * grouped): any two of one group alive at once is a violation.
 */
static void never_two(const json_t *lives, char *(*key_of)(const json_t *obj), const char *what, json_t *violations)
{
	size_t n = json_array_size(lives);
	for (size_t i = 0; i < n; i++) {
		const json_t *a = json_array_get(lives, i);
		char *ka = key_of(json_object_get(a, "first"));
		for (size_t j = i + 1; ka && j < n; j++) {
			const json_t *b = json_array_get(lives, j);
			char *kb = key_of(json_object_get(b, "first"));
			long long a0 = json_integer_value(json_object_get(a, "added_rv"));
			long long b0 = json_integer_value(json_object_get(b, "added_rv"));
			if (kb && !strcmp(ka, kb) && a0 < life_end(b) && b0 < life_end(a))
				violation(violations, "two %s for %s at once: %s and %s", what, ka,
					  json_string_value(json_object_get(a, "name")),
					  json_string_value(json_object_get(b, "name")));
			free(kb);
		}
		free(ka);
	}
}

static char *copy_job_key(const json_t *job)
{
	const char *set = it_label(job, LABEL_COPY_OF), *ordinal = it_label(job, LABEL_RESIZE_ORDINAL);
	return set && ordinal ? xasprintf("%s/%s", set, ordinal) : NULL;
}

static char *cleanup_pod_key(const json_t *pod)
{
	const char *set = it_label(pod, LABEL_CLEANUP_FOR), *ordinal = it_annotation(pod, ANNOTATION_CLEANUP_ORDINAL);
	return set && ordinal ? xasprintf("%s/%s", set, ordinal) : NULL;
}

static char *member_key(const json_t *pod)
{
	const char *member = it_label(pod, LABEL_CLUSTER_MEMBER);
	return member ? xstrdup(member) : NULL;
}

void soak_check_never_two(const json_t *job_records, const json_t *pod_records, json_t *violations)
{
	json_t *jobs = it_lives(job_records, LABEL_COPY_OF, NULL);
	json_t *cleanups = it_lives(pod_records, LABEL_CLEANUP_FOR, NULL);
	json_t *members = it_lives(pod_records, LABEL_CLUSTER_MEMBER, NULL);
	never_two(jobs, copy_job_key, "copy Jobs", violations);
	never_two(cleanups, cleanup_pod_key, "cleanup pods", violations);
	never_two(members, member_key, "pods of one identity", violations);
	json_decref(jobs);
	json_decref(cleanups);
	json_decref(members);
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

/* The identity an Event of a member leaving names ("member <name> ..."): a new string, or NULL. */
static char *leaving_member(const json_t *event)
{
	const char *msg = kube_obj_str(event, "message");
	const char *p = msg ? strstr(msg, "member ") : NULL;
	if (!p)
		return NULL;
	p += strlen("member ");
	size_t n = strcspn(p, " ");
	return n ? xstrndup(p, n) : NULL;
}

void soak_check_identities(struct kube_client *admin, const char *ns, const json_t *pod_records, json_t *violations)
{
	json_t *events = it_list(admin, &KUBE_EVENTS, ns, NULL);
	json_t *members = it_lives(pod_records, LABEL_CLUSTER_MEMBER, NULL);
	size_t i, j;
	json_t *ev, *life;
	int left = 0, matched = 0;
	json_array_foreach(events, i, ev) {
		const char *reason = str_or_empty(kube_obj_str(ev, "reason"));
		if (strcmp(reason, "MemberReplaced") && strcmp(reason, "MemberRemoved"))
			continue;
		char *gone = leaving_member(ev);
		left += gone != NULL;
		/* Its revision: after the state change that released the identity (a later count raises it). */
		long long said = strtoll(str_or_empty(kube_obj_str(ev, "metadata.resourceVersion")), NULL, 10);
		json_array_foreach(members, j, life) {
			const char *id = it_label(json_object_get(life, "first"), LABEL_CLUSTER_MEMBER);
			bool same = gone && id && !strcmp(id, gone);
			matched += same;
			if (same && json_integer_value(json_object_get(life, "added_rv")) > said)
				violation(violations, "identity %s used again: pod %s (uid %s) created after %s said it left",
					  gone, json_string_value(json_object_get(life, "name")),
					  json_string_value(json_object_get(life, "uid")), reason);
		}
		free(gone);
	}
	/* A figure, so that a check that compares nothing shows: pods of identities that left, seen before. */
	printf("# soak: %d identities said to leave, %d of their pods recorded\n", left, matched);
	json_decref(members);
	json_decref(events);
}

/* The ordinals whose claims op must keep: [0, *to). */
static void kept_claims(const struct soak_op *op, int *to)
{
	switch (op->kind) {
	case OP_SCALEDOWN:
		*to = op->phase == PHASE_DONE ? 1 : 3; /* cleaned up: only replica 0's */
		break;
	case OP_SCALEDOWN_FAIL:
		*to = 3; /* given up: all kept */
		break;
	case OP_CLUSTER:
		*to = 0; /* identities, not ordinals: the PV check covers them */
		break;
	case OP_CLUSTER_FAIL:
		*to = op->phase == PHASE_DONE ? 2 : 0; /* whenReplaced Retain: the failed member 1's claim stays */
		break;
	default:
		*to = op->phase == PHASE_CREATED ? 0 : 2;
	}
}

void soak_check_claims(struct kube_client *admin, const char *ns, const struct soak_op *ops, int n,
		       json_t *violations)
{
	for (int i = 0; i < n; i++) {
		int to;
		kept_claims(&ops[i], &to);
		for (int k = 0; k < to; k++) {
			char claim[64];
			snprintf(claim, sizeof(claim), "data-%s-%d", ops[i].name, k);
			json_t *pvc = it_get(admin, &KUBE_PVCS, ns, claim);
			if (!pvc)
				violation(violations, "claim %s of %s (%s) is gone", claim, ops[i].name,
					  soak_op_names[ops[i].kind]);
			json_decref(pvc);
		}
	}
	json_t *pvcs = it_list(admin, &KUBE_PVCS, ns, NULL);
	size_t i;
	json_t *pvc;
	json_array_foreach(pvcs, i, pvc) {
		const char *volume = kube_obj_str(pvc, "spec.volumeName");
		if (!volume || !*volume)
			continue;
		json_t *pv = it_get(admin, &KUBE_PVS, NULL, volume);
		const char *ref = kube_obj_str(pv, "spec.claimRef.uid");
		if (!pv || !ref || strcmp(ref, kube_obj_str(pvc, "metadata.uid")))
			violation(violations, "claim %s names volume %s, which is %s", kube_obj_str(pvc, "metadata.name"),
				  volume, pv ? "bound to another claim" : "gone");
		json_decref(pv);
	}
	json_decref(pvcs);
}

static bool has_our_finalizer(const json_t *obj)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f) {
		const char *s = json_string_value(f);
		if (s && !strncmp(s, "stateful-operator.io/", strlen("stateful-operator.io/")))
			return true;
	}
	return false;
}

static void no_items(struct kube_client *admin, const struct kube_resource *r, const char *ns, const char *selector,
		     const char *what, json_t *violations)
{
	json_t *items = it_list(admin, r, ns, selector);
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o) violation(violations, "%s left: %s", what, kube_obj_str(o, "metadata.name"));
	json_decref(items);
}

/*
 * A copy that failed or was aborted keeps the old volumes of the replicas
 * it had copied before, for the user: allowed where the claim it held is
 * now on another volume (that replica was copied), never for the replica
 * that was in flight, which went back to its own volume.
 */
static bool kept_for_user(struct kube_client *admin, const json_t *pv, const char *claim, const struct soak_op *ops,
			  int n)
{
	const char *set = it_label(pv, LABEL_OLD_VOLUME);
	const struct soak_op *op = NULL;
	for (int i = 0; set && i < n && !op; i++)
		if (!strcmp(ops[i].name, set))
			op = &ops[i];
	bool stopped = op && (op->phase == PHASE_FAILED || (op->message && !strcmp(op->message, "aborted")));
	const char *slash = strchr(claim, '/');
	if (!stopped || !slash)
		return false;
	char *ns = xstrndup(claim, (size_t)(slash - claim));
	json_t *pvc = it_get(admin, &KUBE_PVCS, ns, slash + 1);
	const char *now_on = kube_obj_str(pvc, "spec.volumeName");
	bool copied = now_on && *now_on && strcmp(now_on, kube_obj_str(pv, "metadata.name"));
	json_decref(pvc);
	free(ns);
	return copied;
}

/* The operator's marks on a PV it took over for a copy (resize_swap.c): which one it still carries, or NULL. */
static const char *copy_mark(const json_t *pv)
{
	static const char *const marks[] = {ANNOTATION_TAKEN_FOR, ANNOTATION_RECLAIM_POLICY};
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (it_annotation(pv, marks[i]))
			return marks[i];
	return NULL;
}

/*
 * PVs of the namespace (claimRef, or taken for one of its sets) still
 * marked as taken over by a copy. Old volumes are left out: the rule above
 * judges them, and one kept for the user keeps its marks with it.
 */
static void marked_volumes(struct kube_client *admin, const char *ns, json_t *violations)
{
	json_t *pvs = it_list(admin, &KUBE_PVS, NULL, NULL);
	char *taken_prefix = xasprintf("%s/", ns);
	size_t i;
	json_t *pv;
	json_array_foreach(pvs, i, pv) {
		const char *mark = copy_mark(pv), *taken = str_or_empty(it_annotation(pv, ANNOTATION_TAKEN_FOR));
		bool ours = !strcmp(str_or_empty(kube_obj_str(pv, "spec.claimRef.namespace")), ns) ||
			    !strncmp(taken, taken_prefix, strlen(taken_prefix));
		if (mark && ours && !it_label(pv, LABEL_OLD_VOLUME))
			violation(violations, "volume %s (claim %s) still carries %s", kube_obj_str(pv, "metadata.name"),
				  str_or_empty(kube_obj_str(pv, "spec.claimRef.name")), mark);
	}
	free(taken_prefix);
	json_decref(pvs);
}

struct in_namespace {
	struct kube_client *admin;
	const char *ns;
};

static bool no_cleanup_pods(void *ctx)
{
	struct in_namespace *in = ctx;
	json_t *pods = it_list(in->admin, &KUBE_PODS, in->ns, LABEL_CLEANUP_FOR);
	bool none = json_array_size(pods) == 0;
	json_decref(pods);
	return none;
}

void soak_check_leftovers(struct kube_client *admin, const char *ns, const struct soak_op *ops, int n,
			  json_t *violations)
{
	no_items(admin, &KUBE_CONFIGMAPS, ns, LABEL_SAVED_STATEFULSET, "saved StatefulSet", violations);
	no_items(admin, &KUBE_JOBS, ns, LABEL_COPY_OF, "copy Job", violations);
	struct in_namespace in = {admin, ns};
	it_wait_every(no_cleanup_pods, &in, CLEANUP_POD_GONE_MS, 2000);
	no_items(admin, &KUBE_PODS, ns, LABEL_CLEANUP_FOR, "cleanup pod", violations);
	marked_volumes(admin, ns, violations);
	json_t *old = it_list(admin, &KUBE_PVS, NULL, LABEL_OLD_VOLUME);
	size_t j;
	json_t *pv;
	json_array_foreach(old, j, pv) {
		const char *claim = str_or_empty(it_annotation(pv, ANNOTATION_OLD_CLAIM)); /* ns/claim */
		if (!strncmp(claim, ns, strlen(ns)) && claim[strlen(ns)] == '/' && !kept_for_user(admin, pv, claim, ops, n))
			violation(violations, "old volume left: %s", kube_obj_str(pv, "metadata.name"));
	}
	json_decref(old);
	static const struct kube_resource *const kinds[] = {&KUBE_PVCS, &KUBE_STATEFULSETS, &KUBE_PODS};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		json_t *items = it_list(admin, kinds[k], ns, NULL);
		size_t i;
		json_t *o;
		json_array_foreach(items, i, o) {
			const char *name = kube_obj_str(o, "metadata.name");
			size_t len = strlen(name);
			if (kinds[k] == &KUBE_PVCS && len > 5 && !strcmp(name + len - 5, "-copy"))
				violation(violations, "temporary claim left: %s", name);
			if (kube_obj_str(o, "metadata.deletionTimestamp") && has_our_finalizer(o))
				violation(violations, "%s in deletion still holds our finalizer", name);
		}
		json_decref(items);
	}
}
