#include "cluster_steps.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "controllers/cluster/cluster_plan.h"
#include "util/strbuf.h"
#include "client/kube_object.h"

bool cl_str_is(const char *s, const char *want)
{
	return s && want && !strcmp(s, want);
}

/* ---- the fixture ---- */

int cl_setup(void **state)
{
	struct cl_test *t = xcalloc(1, sizeof(*t));
	t->admin = it_admin_client();
	*state = t;
	return 0;
}

int cl_teardown(void **state)
{
	struct cl_test *t = *state;
	if (t->d.pid > 0 && kill(t->d.pid, 0) == 0) {
		kill(t->d.pid, SIGKILL);
		waitpid(t->d.pid, NULL, 0);
		daemon_cleanup(&t->d);
	}
	t->d.pid = 0;
	/* A test that failed while recording leaves its recorders running. */
	if (t->pods)
		json_decref(it_recorder_stop(t->pods));
	if (t->pvcs)
		json_decref(it_recorder_stop(t->pvcs));
	if (t->clusters)
		json_decref(it_recorder_stop(t->clusters));
	/* A client of its own: the test's may be mid-way through whatever failed. */
	struct kube_client *admin = it_admin_client();
	if (t->ns) {
		/* Nobody confirms the deletion of a pod on a lost node: the namespace would hang on it. */
		if (t->nnodes)
			it_sh("kubectl delete pods --all -n %s --grace-period=0 --force --wait=false >/dev/null 2>&1", t->ns);
		it_namespace_delete(admin, t->ns);
		free(t->ns);
	}
	for (int i = 0; i < t->nnodes; i++) {
		/*
		 * Back into kwok's hands first: kwok sees only the nodes carrying
		 * its annotation, so without it kwok would miss the deletion and
		 * go on renewing (re-creating) the node's Lease for good.
		 */
		json_t *back = it_json("{\"metadata\":{\"annotations\":{\"kwok.x-k8s.io/node\":\"fake\"}}}");
		struct kube_error err;
		if (kube_patch(admin, &KUBE_NODES, NULL, t->nodes[i], NULL, KUBE_PATCH_MERGE, back, NULL, &err) < 0 &&
		    err.code != 404)
			fprintf(stderr, "warning: annotate node %s: %s\n", t->nodes[i], err.message);
		json_decref(back);
		if (kube_delete(admin, &KUBE_NODES, NULL, t->nodes[i], NULL, &err) < 0 && err.code != 404)
			fprintf(stderr, "warning: delete node %s: %s\n", t->nodes[i], err.message);
		free(t->nodes[i]);
	}
	kube_client_free(admin);
	json_decref(t->cluster_records);
	json_decref(t->pvc_records);
	json_decref(t->pod_records);
	kube_client_free(t->admin);
	free(t);
	*state = NULL;
	return 0;
}

void cl_namespace_new(struct cl_test *t, const char *prefix)
{
	t->ns = it_namespace_new(t->admin, prefix);
}

void cl_record(struct cl_test *t)
{
	t->pods = it_recorder_start(&KUBE_PODS, t->ns);
	t->pvcs = it_recorder_start(&KUBE_PVCS, t->ns);
	t->clusters = it_recorder_start(&KUBE_STATEFULCLUSTERS, t->ns);
}

void cl_stop_recording(struct cl_test *t)
{
	if (t->pods)
		t->pod_records = it_recorder_stop(t->pods);
	if (t->pvcs)
		t->pvc_records = it_recorder_stop(t->pvcs);
	if (t->clusters)
		t->cluster_records = it_recorder_stop(t->clusters);
	t->pods = t->pvcs = t->clusters = NULL;
}

void cl_operator_start(struct cl_test *t)
{
	t->d = daemon_start_operator_crashing(NULL);
}

void cl_operator_stop(struct cl_test *t)
{
	daemon_stop_operator(&t->d);
	t->d.pid = 0;
}

void cl_show_namespace(const char *ns)
{
	if (!ns)
		return;
	it_sh("kubectl get -n %s statefulclusters,pods,pvc,controllerrevisions -o wide >&2; "
	      "kubectl get -n %s events >&2; kubectl get -n %s statefulclusters -o yaml >&2",
	      ns, ns, ns);
}

/* ---- manifests ---- */

void cl_set(json_t *obj, const char *path, json_t *value)
{
	char *copy = xstrdup(path), *save = NULL;
	char *part = strtok_r(copy, ".", &save);
	for (char *next = strtok_r(NULL, ".", &save); next; part = next, next = strtok_r(NULL, ".", &save)) {
		json_t *child = json_object_get(obj, part);
		if (!json_is_object(child))
			json_object_set_new(obj, part, child = json_object());
		obj = child;
	}
	json_object_set_new(obj, part, value);
	free(copy);
}

void cl_template_annotate(json_t *stc, const char *key, const char *value)
{
	json_t *meta = json_object_get(json_object_get(json_object_get(stc, "spec"), "template"), "metadata");
	if (!meta)
		fail_msg("manifest without spec.template.metadata");
	json_t *ann = json_object_get(meta, "annotations");
	if (!json_is_object(ann))
		json_object_set_new(meta, "annotations", ann = json_object());
	json_object_set_new(ann, key, json_string(value));
}

json_t *cl_manifest(const char *name, int replicas, const char *claims)
{
	json_t *stc = it_json("{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\"},"
			      "\"spec\":{\"replicas\":%d,\"serviceName\":\"%s\","
			      "\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
			      "\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},"
			      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\",\"volumeMounts\":[]}]}},"
			      "\"volumeClaimTemplates\":[]}}",
			      CLUSTER_API_VERSION, CLUSTER_KIND, name, replicas, name, name, name);
	json_t *spec = json_object_get(stc, "spec");
	json_t *mounts = json_object_get(
		json_array_get(json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "containers"), 0),
		"volumeMounts");
	json_t *templates = json_object_get(spec, "volumeClaimTemplates");
	char *copy = claims ? xstrdup(claims) : NULL, *save = NULL;
	for (char *c = copy ? strtok_r(copy, ",", &save) : NULL; c; c = strtok_r(NULL, ",", &save)) {
		json_array_append_new(templates, it_json("{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"accessModes\":"
							 "[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":"
							 "\"1Mi\"}}}}",
							 c));
		json_array_append_new(mounts, it_json("{\"name\":\"%s\",\"mountPath\":\"/var/%s\"}", c, c));
	}
	free(copy);
	return stc;
}

/* ---- the StatefulCluster ---- */

void cl_create(struct cl_test *t, const json_t *stc)
{
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) < 0)
		fail_msg("create StatefulCluster %s: %s", kube_obj_str(stc, "metadata.name"), err.message);
}

json_t *cl_get(struct cl_test *t, const char *name)
{
	return it_get(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, name);
}

long long cl_patch(struct cl_test *t, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	json_t *patch = it_json("%s", text), *out = NULL;
	struct kube_error err;
	if (kube_patch(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, name, NULL, KUBE_PATCH_MERGE, patch, &out, &err) < 0)
		fail_msg("patch StatefulCluster %s with %s: %s", name, text, err.message);
	const char *rv = kube_obj_str(out, "metadata.resourceVersion");
	long long n = rv ? strtoll(rv, NULL, 10) : 0;
	json_decref(out);
	json_decref(patch);
	free(text);
	return n;
}

long long cl_int_at(const json_t *obj, const char *path)
{
	const json_t *v = obj;
	char *copy = xstrdup(path), *save = NULL;
	for (char *part = strtok_r(copy, ".", &save); part && v; part = strtok_r(NULL, ".", &save))
		v = json_object_get(v, part);
	free(copy);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

char *cl_member_list(const json_t *stc)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(json_object_get(stc, "status"), "members"), i, m) {
		const char *id = kube_obj_str(m, "identity");
		if ((i && strbuf_addstr(&sb, ",") < 0) || strbuf_addstr(&sb, id ? id : "?") < 0)
			abort();
	}
	return strbuf_detach(&sb);
}

struct settle {
	struct cl_test *t;
	const char *name;
	int replicas;
	const char *ids; /* NULL: any */
	char *why;       /* what is not yet right (new string) */
};

static bool not_yet(struct settle *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool not_yet(struct settle *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(s->why);
	s->why = xvasprintf(fmt, ap);
	va_end(ap);
	return false;
}

/* The status of stc says it has settled at s->replicas members (s->ids when given). */
static bool status_settled(struct settle *s, const json_t *stc)
{
	const json_t *st = json_object_get(stc, "status");
	if (cl_int_at(stc, "status.observedGeneration") != cl_int_at(stc, "metadata.generation"))
		return not_yet(s, "status.observedGeneration %lld, generation %lld", cl_int_at(stc, "status.observedGeneration"),
			       cl_int_at(stc, "metadata.generation"));
	static const char *const counts[] = {"replicas", "readyReplicas", "availableReplicas", "updatedReplicas",
					     "currentReplicas"};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (cl_int_at(st, counts[i]) != s->replicas)
			return not_yet(s, "status.%s %lld, want %d", counts[i], cl_int_at(st, counts[i]), s->replicas);
	if (!cl_str_is(kube_obj_str(st, "currentRevision"), kube_obj_str(st, "updateRevision")))
		return not_yet(s, "status.currentRevision is not status.updateRevision");
	const json_t *members = json_object_get(st, "members");
	if ((int)json_array_size(members) != s->replicas)
		return not_yet(s, "%zu status.members", json_array_size(members));
	size_t i;
	const json_t *m;
	json_array_foreach(members, i, m) {
		if (!json_is_true(json_object_get(m, "ready")))
			return not_yet(s, "member %s not ready in status", kube_obj_str(m, "identity"));
	}
	if (s->ids) {
		char *list = cl_member_list(stc);
		bool same = !strcmp(list, s->ids);
		if (!same)
			not_yet(s, "status.members %s, want %s", list, s->ids);
		free(list);
		if (!same)
			return false;
	}
	return true;
}

/* The pods are exactly s->replicas (named s->ids), each Ready at the update revision. */
static bool pods_settled(struct settle *s, const json_t *stc)
{
	const char *rev = kube_obj_str(stc, "status.updateRevision");
	json_t *pods = cl_member_pods(s->t, s->name);
	bool ok = (int)json_array_size(pods) == s->replicas || not_yet(s, "%zu pods", json_array_size(pods));
	size_t i;
	json_t *p;
	json_array_foreach(pods, i, p) {
		const char *name = kube_obj_str(p, "metadata.name");
		if (!ok)
			break;
		if (!cl_pod_ready(p))
			ok = not_yet(s, "pod %s not Ready (or being deleted)", name);
		else if (!cl_str_is(it_label(p, LABEL_REVISION_HASH), rev))
			ok = not_yet(s, "pod %s at revision %s, want %s", name, it_label(p, LABEL_REVISION_HASH), rev);
		else if (s->ids) {
			/* Its name is one of the identities (a whole item of the comma-separated list). */
			char *list = xasprintf(",%s,", s->ids), *item = xasprintf(",%s,", name);
			if (!strstr(list, item))
				ok = not_yet(s, "pod %s is not one of %s", name, s->ids);
			free(item);
			free(list);
		}
	}
	json_decref(pods);
	return ok;
}

static bool settled(void *ctx)
{
	struct settle *s = ctx;
	json_t *stc = cl_get(s->t, s->name);
	bool ok = stc ? status_settled(s, stc) && pods_settled(s, stc) : not_yet(s, "no StatefulCluster");
	json_decref(stc);
	return ok;
}

json_t *cl_wait_settled(struct cl_test *t, const char *name, int replicas, const char *ids)
{
	struct settle s = {t, name, replicas, ids, NULL};
	if (!it_wait_every(settled, &s, CL_WAIT_MS, CL_POLL_MS))
		cl_fail_with_log(t, "%s did not settle at %d members%s%s: %s", name, replicas, ids ? " " : "",
				 ids ? ids : "", s.why ? s.why : "?");
	free(s.why);
	return cl_get(t, name);
}

/* ---- pods and claims ---- */

bool cl_pod_ready(const json_t *pod)
{
	return pod && kube_obj_condition(pod, "Ready", NULL) && !kube_obj_str(pod, "metadata.deletionTimestamp");
}

json_t *cl_member_pods(struct cl_test *t, const char *name)
{
	char *selector = xasprintf("%s=%s", LABEL_CLUSTER, name);
	json_t *pods = it_list(t->admin, &KUBE_PODS, t->ns, selector);
	free(selector);
	return pods;
}

void cl_fail_pod(struct cl_test *t, const char *pod)
{
	it_merge_patch(t->admin, &KUBE_PODS, t->ns, pod, "{\"metadata\":{\"annotations\":{\"%s\":\"fail\"}}}", CL_OUTCOME);
}

void cl_delete_pod(struct cl_test *t, const char *pod)
{
	struct kube_error err;
	if (kube_delete(t->admin, &KUBE_PODS, t->ns, pod, NULL, &err) < 0)
		fail_msg("delete pod %s: %s", pod, err.message);
}

char *cl_claim_uid(struct cl_test *t, const char *claim)
{
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
	char *uid = pvc ? xstrdup(kube_obj_str(pvc, "metadata.uid")) : NULL;
	json_decref(pvc);
	return uid;
}

void cl_expect_claim_kept(struct cl_test *t, const char *claim, const char *uid)
{
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
	if (!pvc)
		cl_fail_with_log(t, "claim %s is gone", claim);
	if (!cl_str_is(kube_obj_str(pvc, "metadata.uid"), uid))
		cl_fail_with_log(t, "claim %s was replaced (UID %s, was %s)", claim, kube_obj_str(pvc, "metadata.uid"), uid);
	if (kube_obj_str(pvc, "metadata.deletionTimestamp"))
		cl_fail_with_log(t, "claim %s is being deleted", claim);
	json_decref(pvc);
}

struct named {
	struct cl_test *t;
	const char *name;
};

static bool claim_gone(void *ctx)
{
	struct named *n = ctx;
	json_t *pvc = it_get(n->t->admin, &KUBE_PVCS, n->t->ns, n->name);
	json_decref(pvc);
	return pvc == NULL;
}

void cl_wait_claim_gone(struct cl_test *t, const char *claim)
{
	struct named n = {t, claim};
	cl_wait_or_fail(t, claim_gone, &n, "claim %s is still there", claim);
}

/* The member entry of status for pod (borrowed), or NULL. */
static const json_t *status_member(const json_t *stc, const char *pod)
{
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(json_object_get(stc, "status"), "members"), i, m) {
		if (cl_str_is(kube_obj_str(m, "pod"), pod))
			return m;
	}
	return NULL;
}

/* The claim pod mounts as volume (NULL when none). Borrowed. */
static const char *volume_claim(const json_t *pod, const char *volume)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		if (cl_str_is(json_string_value(json_object_get(v, "name")), volume))
			return kube_obj_str(v, "persistentVolumeClaim.claimName");
	}
	return NULL;
}

static void expect_controller_ref(const json_t *pod, const json_t *stc)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref) {
		if (json_is_true(json_object_get(ref, "controller"))) {
			if (!cl_str_is(kube_obj_str(ref, "kind"), CLUSTER_KIND) ||
			    !cl_str_is(kube_obj_str(ref, "apiVersion"), CLUSTER_API_VERSION) ||
			    !cl_str_is(kube_obj_str(ref, "uid"), kube_obj_str(stc, "metadata.uid")))
				fail_msg("pod %s: its controller is %s %s, not this StatefulCluster",
					 kube_obj_str(pod, "metadata.name"), kube_obj_str(ref, "kind"), kube_obj_str(ref, "name"));
			return;
		}
	}
	fail_msg("pod %s has no controller owner reference", kube_obj_str(pod, "metadata.name"));
}

void cl_expect_member_pods(struct cl_test *t, const json_t *stc)
{
	const char *name = kube_obj_str(stc, "metadata.name");
	const json_t *spec = json_object_get(stc, "spec");
	char *prefix = xasprintf("%s-", name);
	json_t *pods = cl_member_pods(t, name);
	size_t i, k;
	json_t *pod;
	const char *key;
	json_t *value;
	json_array_foreach(pods, i, pod) {
		const char *pn = kube_obj_str(pod, "metadata.name");
		const char *n = pn + strlen(prefix);
		if (strncmp(pn, prefix, strlen(prefix)) || !*n || strspn(n, "0123456789") != strlen(n))
			fail_msg("pod %s is not named %s<n>", pn, prefix);
		if (!cl_str_is(kube_obj_str(pod, "spec.hostname"), pn))
			fail_msg("pod %s: hostname %s", pn, kube_obj_str(pod, "spec.hostname"));
		const char *service = kube_obj_str(spec, "serviceName");
		if (service && !cl_str_is(kube_obj_str(pod, "spec.subdomain"), service))
			fail_msg("pod %s: subdomain %s, want %s", pn, kube_obj_str(pod, "spec.subdomain"), service);
		expect_controller_ref(pod, stc);
		json_object_foreach(json_object_get(json_object_get(spec, "selector"), "matchLabels"), key, value) {
			if (!cl_str_is(it_label(pod, key), json_string_value(value)))
				fail_msg("pod %s: label %s is %s, the selector wants %s", pn, key, it_label(pod, key),
					 json_string_value(value));
		}
		if (!cl_str_is(it_label(pod, LABEL_CLUSTER), name) || !cl_str_is(it_label(pod, LABEL_CLUSTER_MEMBER), pn))
			fail_msg("pod %s: labels %s=%s, %s=%s", pn, LABEL_CLUSTER, it_label(pod, LABEL_CLUSTER),
				 LABEL_CLUSTER_MEMBER, it_label(pod, LABEL_CLUSTER_MEMBER));
		const json_t *m = status_member(stc, pn);
		if (!m)
			fail_msg("pod %s is not in status.members", pn);
		if (!cl_str_is(it_label(pod, LABEL_REVISION_HASH), kube_obj_str(m, "revision")))
			fail_msg("pod %s: %s %s, status says %s", pn, LABEL_REVISION_HASH, it_label(pod, LABEL_REVISION_HASH),
				 kube_obj_str(m, "revision"));
		if (!cl_str_is(kube_obj_str(m, "node"), kube_obj_str(pod, "spec.nodeName")))
			fail_msg("pod %s: on node %s, status says %s", pn, kube_obj_str(pod, "spec.nodeName"),
				 kube_obj_str(m, "node"));
		const json_t *vct;
		json_array_foreach(json_object_get(spec, "volumeClaimTemplates"), k, vct) {
			const char *tmpl = kube_obj_str(vct, "metadata.name");
			char *claim = xasprintf("%s-%s", tmpl, pn);
			if (!cl_str_is(volume_claim(pod, tmpl), claim))
				fail_msg("pod %s: volume %s mounts %s, want %s", pn, tmpl,
					 volume_claim(pod, tmpl) ? volume_claim(pod, tmpl) : "nothing", claim);
			free(claim);
		}
	}
	json_decref(pods);
	free(prefix);
}

/* ---- what the recorders saw ---- */

json_t *cl_names_seen(const json_t *records, const char *name)
{
	json_t *lives = it_lives(records, LABEL_CLUSTER, name), *seen = json_object();
	size_t i;
	json_t *l;
	json_array_foreach(lives, i, l) {
		const char *n = json_string_value(json_object_get(l, "name"));
		json_object_set_new(seen, n, json_integer(json_integer_value(json_object_get(seen, n)) + 1));
	}
	json_decref(lives);
	return seen;
}

bool cl_first_ready(const json_t *records, const char *uid, long long *rv, double *at_ms)
{
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		const json_t *obj = json_object_get(r, "object");
		if (cl_str_is(kube_obj_str(obj, "metadata.uid"), uid) && kube_obj_condition(obj, "Ready", NULL)) {
			*rv = (long long)json_integer_value(json_object_get(r, "rv"));
			*at_ms = json_real_value(json_object_get(r, "at_ms"));
			return true;
		}
	}
	return false;
}

void cl_expect_events(struct cl_test *t, const char *reason, const char *object, const char *type)
{
	char *selector = xasprintf("reason=%s,involvedObject.name=%s", reason, object);
	json_t *ev = it_events(t->admin, t->ns, selector);
	if (!json_array_size(ev))
		cl_fail_with_log(t, "no %s Event about %s", reason, object);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) {
		if (!cl_str_is(kube_obj_str(e, "type"), type))
			fail_msg("%s Event about %s is %s, want %s", reason, object, kube_obj_str(e, "type"), type);
	}
	json_decref(ev);
	free(selector);
}

/* ---- nodes the test owns ---- */

/* Ready, and no taint but the pool's (the node lifecycle controller has lifted its not-ready taint). */
static bool node_schedulable(void *ctx)
{
	struct named *n = ctx;
	json_t *node = it_get(n->t->admin, &KUBE_NODES, NULL, n->name);
	bool ok = node && kube_obj_condition(node, "Ready", NULL);
	size_t i;
	json_t *taint;
	json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, taint)
		ok = ok && cl_str_is(kube_obj_str(taint, "key"), CL_POOL);
	json_decref(node);
	return ok;
}

const char *cl_node_create(struct cl_test *t, const char *suffix, const char *pool)
{
	if (t->nnodes == CL_MAX_NODES)
		fail_msg("a test may make at most %d nodes", CL_MAX_NODES);
	char *name = xasprintf("%s-%s", t->ns, suffix);
	/* Like scripts/local-cluster's kwok-node-0: the annotation has kwok run it. */
	json_t *node = it_json(
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
		"\"annotations\":{\"kwok.x-k8s.io/node\":\"fake\",\"node.alpha.kubernetes.io/ttl\":\"0\"},"
		"\"labels\":{\"type\":\"kwok\",\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\","
		"\"kubernetes.io/arch\":\"amd64\",\"%s\":\"%s\"}},"
		"\"spec\":{\"taints\":[{\"key\":\"%s\",\"value\":\"%s\",\"effect\":\"NoSchedule\"}]},"
		"\"status\":{\"allocatable\":{\"cpu\":\"1000\",\"memory\":\"4Ti\",\"pods\":\"10000\"},"
		"\"capacity\":{\"cpu\":\"1000\",\"memory\":\"4Ti\",\"pods\":\"10000\"}}}",
		name, name, CL_POOL, pool, CL_POOL, pool);
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_NODES, NULL, node, NULL, &err) < 0)
		fail_msg("create node %s: %s", name, err.message);
	json_decref(node);
	t->nodes[t->nnodes++] = name;
	struct named n = {t, name};
	cl_wait_or_fail(t, node_schedulable, &n, "node %s is not Ready and untainted", name);
	return name;
}

void cl_node_lose(struct cl_test *t, const char *node)
{
	/* First out of kwok's hands: it would set a NotReady node Ready again. Cordoned: nothing new goes there. */
	it_merge_patch(t->admin, &KUBE_NODES, NULL, node,
		       "{\"metadata\":{\"annotations\":{\"kwok.x-k8s.io/node\":null}},\"spec\":{\"unschedulable\":true}}");
	json_t *obj = it_get(t->admin, &KUBE_NODES, NULL, node);
	if (!obj)
		fail_msg("node %s is gone", node);
	char now[32];
	time_t secs = time(NULL);
	struct tm tm;
	gmtime_r(&secs, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *conditions = json_deep_copy(json_object_get(json_object_get(obj, "status"), "conditions"));
	bool found = false;
	size_t i;
	json_t *c;
	json_array_foreach(conditions, i, c) {
		if (!cl_str_is(kube_obj_str(c, "type"), "Ready"))
			continue;
		found = true;
		json_object_set_new(c, "status", json_string("False"));
		json_object_set_new(c, "reason", json_string("KubeletNotReady"));
		json_object_set_new(c, "message", json_string("lost by the test"));
		json_object_set_new(c, "lastTransitionTime", json_string(now));
		json_object_set_new(c, "lastHeartbeatTime", json_string(now));
	}
	if (!found)
		fail_msg("node %s has no Ready condition", node);
	json_t *patch = json_pack("{s:{s:o}}", "status", "conditions", conditions);
	struct kube_error err;
	if (kube_patch(t->admin, &KUBE_NODES, NULL, node, "status", KUBE_PATCH_MERGE, patch, NULL, &err) < 0)
		fail_msg("patch the status of node %s: %s", node, err.message);
	json_decref(patch);
	json_decref(obj);
}
