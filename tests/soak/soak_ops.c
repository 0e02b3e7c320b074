#include "soak_ops.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "cluster_steps.h"
#include "controllers/contract.h"
#include "itest.h"
#include "util/xalloc.h"

const char *const soak_op_names[OP_KINDS] = {
	"expand", "copy-rolling", "copy-offline", "copy-abort", "scaledown", "scaledown-fail", "cluster",
	"cluster-fail",
};

static bool is_resize(enum soak_op_kind k)
{
	return k == OP_EXPAND || k == OP_COPY_ROLLING || k == OP_COPY_OFFLINE || k == OP_COPY_ABORT;
}

static bool is_cluster(enum soak_op_kind k)
{
	return k == OP_CLUSTER || k == OP_CLUSTER_FAIL;
}

static int replicas_of(enum soak_op_kind k)
{
	return k == OP_SCALEDOWN || k == OP_SCALEDOWN_FAIL || is_cluster(k) ? 3 : 2;
}

int soak_op_create(struct kube_client *admin, const char *ns, struct soak_op *op)
{
	struct kube_error err;
	if (is_cluster(op->kind)) {
		json_t *stc = cl_manifest(op->name, 3, "data");
		int rc = kube_create(admin, &KUBE_STATEFULCLUSTERS, ns, stc, NULL, &err);
		json_decref(stc);
		if (rc < 0)
			fprintf(stderr, "soak: create StatefulCluster %s: %s\n", op->name, err.message);
		return rc < 0 ? -1 : 0;
	}
	json_t *sts = it_statefulset(op->name, replicas_of(op->kind), "Parallel", "data");
	json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	if (op->kind == OP_COPY_ROLLING || op->kind == OP_COPY_OFFLINE || op->kind == OP_COPY_ABORT) {
		json_object_set_new(json_object_get(tmpl, "spec"), "storageClassName", json_string("fixed"));
		it_set_annotation(sts, ANNOTATION_STRATEGY, "copy");
		/* Each copy takes a moment, so kills and faults land inside copies. */
		it_set_annotation(sts, ANNOTATION_COPY_POD_ANNOTATIONS, "{\"testbed.stateful-operator.io/delay\": \"2s\"}");
	}
	if (op->kind == OP_COPY_OFFLINE)
		it_set_annotation(sts, ANNOTATION_COPY_MODE, "offline");
	if (op->kind == OP_SCALEDOWN || op->kind == OP_SCALEDOWN_FAIL) {
		char *pod = it_testbed_pod_template("cleanup", op->kind == OP_SCALEDOWN ? "succeed" : "fail", "1s",
						    "soak cleanup", "data");
		it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE, pod);
		it_set_annotation(sts, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "1");
		free(pod);
	}
	int rc = kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err);
	json_decref(sts);
	if (rc < 0)
		fprintf(stderr, "soak: create StatefulSet %s: %s\n", op->name, err.message);
	return rc < 0 ? -1 : 0;
}

/* Claims data-<name>-<k> for k < n, Bound (bound) or merely present; with capacity size when size. */
static int claims_matching(struct kube_client *admin, const char *ns, const char *name, int n, const char *size)
{
	int count = 0;
	for (int k = 0; k < n; k++) {
		char claim[64];
		snprintf(claim, sizeof(claim), "data-%s-%d", name, k);
		json_t *pvc = it_get(admin, &KUBE_PVCS, ns, claim);
		const char *phase = kube_obj_str(pvc, "status.phase");
		const char *cap = kube_obj_str(pvc, "status.capacity.storage");
		count += phase && !strcmp(phase, "Bound") && (!size || (cap && !strcmp(cap, size)));
		json_decref(pvc);
	}
	return count;
}

static int ready_pods(struct kube_client *admin, const char *ns, const char *app)
{
	char selector[64];
	snprintf(selector, sizeof(selector), "app=%s", app);
	json_t *pods = it_list(admin, &KUBE_PODS, ns, selector);
	int ready = 0;
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) ready += kube_pod_ready(p);
	json_decref(pods);
	return ready;
}

static bool workload_ready(struct kube_client *admin, const char *ns, const struct soak_op *op)
{
	int n = replicas_of(op->kind);
	if (ready_pods(admin, ns, op->name) < n)
		return false;
	if (!is_cluster(op->kind))
		return claims_matching(admin, ns, op->name, n, NULL) == n;
	json_t *stc = it_get(admin, &KUBE_STATEFULCLUSTERS, ns, op->name);
	bool ready = json_integer_value(json_object_get(json_object_get(stc, "status"), "readyReplicas")) == n;
	json_decref(stc);
	return ready;
}

/* Member <name>-1's pod fails (the test bed's outcome annotation) as the cluster is asked for a fourth member. */
static void fail_member_and_grow(struct kube_client *admin, const char *ns, const char *name)
{
	char pod[64];
	snprintf(pod, sizeof(pod), "%s-1", name);
	it_merge_patch(admin, &KUBE_PODS, ns, pod, "{\"metadata\":{\"annotations\":{\"%s\":\"fail\"}}}",
		       CL_OUTCOME);
	it_merge_patch(admin, &KUBE_STATEFULCLUSTERS, ns, name, "{\"spec\":{\"replicas\":4}}");
}

static void ask(struct kube_client *admin, const char *ns, struct soak_op *op)
{
	if (is_resize(op->kind))
		it_merge_patch(admin, &KUBE_STATEFULSETS, ns, op->name,
			       "{\"metadata\":{\"annotations\":{\"resize.stateful-operator.io/data\":\"2Mi\"}}}");
	else if (op->kind == OP_CLUSTER)
		it_merge_patch(admin, &KUBE_STATEFULCLUSTERS, ns, op->name, "{\"spec\":{\"replicas\":2}}");
	else if (op->kind == OP_CLUSTER_FAIL)
		fail_member_and_grow(admin, ns, op->name);
	else
		it_merge_patch(admin, &KUBE_STATEFULSETS, ns, op->name, "{\"spec\":{\"replicas\":1}}");
}

static void end(struct soak_op *op, enum soak_op_phase phase, const char *message, double now_ms)
{
	op->phase = phase;
	op->ended_ms = now_ms;
	if (message)
		op->message = xstrdup(message);
}

static void poll_resize(struct kube_client *admin, const char *ns, struct soak_op *op, double now_ms)
{
	json_t *sts = it_get(admin, &KUBE_STATEFULSETS, ns, op->name);
	const char *state = it_annotation(sts, ANNOTATION_RESIZE_STATE);
	const char *status = it_annotation(sts, ANNOTATION_RESIZE_STATUS);
	const char *size = kube_obj_str(json_array_get(json_object_get(json_object_get(sts, "spec"),
								       "volumeClaimTemplates"),
						       0),
					"spec.resources.requests.storage");
	if (!sts) {
		/* Gone for a moment: a re-create under way. */
	} else if (op->kind == OP_COPY_ABORT && state && !it_annotation(sts, ANNOTATION_ABORT)) {
		/*
		 * As soon as the resize is under way: the abort lands in a copy or
		 * just before one. The set may be gone by now (orphan-deleted for a
		 * copy): asked again at the next poll.
		 */
		json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", ANNOTATION_ABORT, "true");
		struct kube_error err;
		if (kube_patch(admin, &KUBE_STATEFULSETS, ns, op->name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) == 0)
			printf("# soak: %s: abort asked (%s)\n", op->name, status ? status : "no status yet");
		else if (err.code != 404)
			fail_msg("asking %s to abort: %s", op->name, err.message);
		json_decref(patch);
	} else if (status && !strncmp(status, "Failed", 6)) {
		end(op, PHASE_FAILED, status, now_ms);
	} else if (!state && op->kind == OP_COPY_ABORT && it_annotation(sts, ANNOTATION_ABORT)) {
		/* Aborted: the set as it was, or grown when the copy finished first. */
		end(op, PHASE_DONE, size && !strcmp(size, "2Mi") ? "finished before the abort" : "aborted", now_ms);
	} else if (!state && size && !strcmp(size, "2Mi") && claims_matching(admin, ns, op->name, 2, "2Mi") == 2) {
		end(op, PHASE_DONE, NULL, now_ms);
	}
	json_decref(sts);
}

static void poll_scaledown(struct kube_client *admin, const char *ns, struct soak_op *op, double now_ms)
{
	json_t *sts = it_get(admin, &KUBE_STATEFULSETS, ns, op->name);
	const char *status = it_annotation(sts, ANNOTATION_SCALEDOWN_STATUS);
	int left = 0;
	for (int k = 1; k < 3; k++) {
		char claim[64];
		snprintf(claim, sizeof(claim), "data-%s-%d", op->name, k);
		json_t *pvc = it_get(admin, &KUBE_PVCS, ns, claim);
		left += pvc != NULL;
		json_decref(pvc);
	}
	if (op->kind == OP_SCALEDOWN && left == 0 && !it_annotation(sts, ANNOTATION_SCALEDOWN_STATE))
		end(op, PHASE_DONE, NULL, now_ms);
	else if (op->kind == OP_SCALEDOWN_FAIL && status && strstr(status, "ordinal 1: Failed") &&
		 strstr(status, "ordinal 2: Failed") && left == 2)
		end(op, PHASE_DONE, status, now_ms); /* the failure as asked: given up, claims kept */
	json_decref(sts);
}

/*
 * Scaled to 2; or, with a failed member, 4 Ready members and the failed
 * one's pod gone: a new identity took its place (identities 0-4 used).
 */
static void poll_cluster(struct kube_client *admin, const char *ns, struct soak_op *op, double now_ms)
{
	int want = op->kind == OP_CLUSTER ? 2 : 4;
	json_t *stc = it_get(admin, &KUBE_STATEFULCLUSTERS, ns, op->name);
	const json_t *st = json_object_get(stc, "status");
	bool settled = json_integer_value(json_object_get(st, "replicas")) == want &&
		       json_integer_value(json_object_get(st, "readyReplicas")) == want &&
		       ready_pods(admin, ns, op->name) == want;
	if (settled && op->kind == OP_CLUSTER_FAIL) {
		char failed[64];
		snprintf(failed, sizeof(failed), "%s-1", op->name);
		json_t *pod = it_get(admin, &KUBE_PODS, ns, failed);
		settled = !pod && json_integer_value(json_object_get(st, "nextIdentity")) == 5;
		json_decref(pod);
	}
	if (settled)
		end(op, PHASE_DONE, NULL, now_ms);
	json_decref(stc);
}

void soak_op_poll(struct kube_client *admin, const char *ns, struct soak_op *op, double now_ms)
{
	if (op->phase == PHASE_CREATED) {
		if (workload_ready(admin, ns, op)) {
			ask(admin, ns, op);
			op->phase = PHASE_ASKED;
			op->asked_ms = now_ms;
		}
	} else if (op->phase == PHASE_ASKED) {
		if (is_resize(op->kind)) {
			poll_resize(admin, ns, op, now_ms);
		} else if (is_cluster(op->kind)) {
			poll_cluster(admin, ns, op, now_ms);
		} else {
			poll_scaledown(admin, ns, op, now_ms);
		}
	}
}
