/*
 * StatefulCluster on the test bed (SPEC section "cluster", issue 7): the
 * API server refuses invalid specs naming the field; kubectl shows the
 * printer columns and scales through the scale subresource; members start
 * in parallel with the status right at each stage; the user's volumes,
 * labels and annotations reach the pods; deleting the StatefulCluster
 * applies whenDeleted; the seed's own example runs. Template changes:
 * it_cluster_update.c. Failures, lost nodes, slow starts and restarts with
 * a wiped status: it_cluster_faults.c. The steps they share:
 * support/cluster_steps.h.
 *
 * Order and concurrency are judged on watch records (support/itest.h
 * it_recorder): every change the API server made, ordered by
 * resourceVersion, so nothing falls between two samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_steps.h"
#include "controllers/cluster/cluster_plan.h"
#include "client/kube_object.h"

/* The status condition of type: its status ("True"/"False"), or NULL. Borrowed. */
static const char *condition_status(const json_t *stc, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(json_object_get(stc, "status"), "conditions"), i, c) {
		if (cl_str_is(kube_obj_str(c, "type"), type))
			return kube_obj_str(c, "status");
	}
	return NULL;
}

/* ---- the API server refuses invalid specs ---- */

static const struct invalid {
	const char *path;  /* under the object */
	const char *value; /* JSON; NULL: the field is left out */
	const char *field; /* the error must name it */
} invalid[] = {
	{"spec.replicas", "-1", "spec.replicas"},
	{"spec.template.metadata.labels", "{\"app\":\"other\"}", "spec.template.metadata.labels"},
	{"spec.updateStrategy.type", "\"Bogus\"", "spec.updateStrategy.type"},
	{"spec.persistentVolumeClaimRetentionPolicy.whenDeleted", "\"Bogus\"",
	 "spec.persistentVolumeClaimRetentionPolicy.whenDeleted"},
	{"spec.updateStrategy.rollingUpdate.maxUnavailable", "0", "spec.updateStrategy.rollingUpdate.maxUnavailable"},
	{"spec.selector", NULL, "spec.selector"},
};

static void test_invalid_specs_are_refused_naming_the_field(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-invalid");
	for (size_t k = 0; k < sizeof(invalid) / sizeof(invalid[0]); k++) {
		char name[32];
		snprintf(name, sizeof(name), "bad-%zu", k);
		json_t *stc = cl_manifest(name, 1, "data");
		if (invalid[k].value)
			cl_set(stc, invalid[k].path, json_loads(invalid[k].value, JSON_DECODE_ANY, NULL));
		else
			json_object_del(json_object_get(stc, "spec"), "selector");
		struct kube_error err;
		int rc = kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err);
		json_decref(stc);
		if (rc == 0)
			fail_msg("a StatefulCluster with %s = %s was accepted", invalid[k].path,
				 invalid[k].value ? invalid[k].value : "(none)");
		if (err.code != 422 || !strstr(err.message, invalid[k].field))
			fail_msg("%s = %s: HTTP %ld, message does not name %s: %s", invalid[k].path,
				 invalid[k].value ? invalid[k].value : "(none)", err.code, invalid[k].field, err.message);
		printf("# refused: %s\n", err.message);
	}
	/* The manifest the cases change is itself valid: each refusal is about its field. */
	json_t *good = cl_manifest("good", 1, "data");
	cl_create(t, good);
	json_decref(good);
}

/* ---- kubectl: printer columns and the scale subresource ---- */

/* Splits text into lines of whitespace-separated words: a new array of arrays of strings. */
static json_t *table(const char *text)
{
	json_t *rows = json_array();
	char *copy = xstrdup(text), *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *row = json_array();
		char *wsave = NULL;
		for (char *w = strtok_r(line, " \t", &wsave); w; w = strtok_r(NULL, " \t", &wsave))
			json_array_append_new(row, json_string(w));
		json_array_append_new(rows, row);
	}
	free(copy);
	return rows;
}

static const char *cell(const json_t *rows, size_t r, size_t c)
{
	return json_string_value(json_array_get(json_array_get(rows, r), c));
}

/* `kubectl get stc` shows the header and one row: name, want (desired), ready, updated. */
static void expect_kubectl_row(struct cl_test *t, const char *name, const char *want)
{
	char *out = it_sh_output("kubectl get stc -n %s", t->ns);
	json_t *rows = table(out);
	static const char *const header[] = {"NAME", "DESIRED", "READY", "UPDATED", "AGE"};
	if (json_array_size(rows) != 2 || json_array_size(json_array_get(rows, 0)) != 5 ||
	    json_array_size(json_array_get(rows, 1)) != 5)
		fail_msg("kubectl get stc: want a header and one row of 5 columns:\n%s", out);
	for (size_t c = 0; c < 5; c++)
		if (!cl_str_is(cell(rows, 0, c), header[c]))
			fail_msg("kubectl get stc: column %zu is %s, want %s:\n%s", c, cell(rows, 0, c), header[c], out);
	if (!cl_str_is(cell(rows, 1, 0), name) || !cl_str_is(cell(rows, 1, 1), want) ||
	    !cl_str_is(cell(rows, 1, 2), want) || !cl_str_is(cell(rows, 1, 3), want))
		fail_msg("kubectl get stc: want %s with %s desired, ready and updated:\n%s", name, want, out);
	printf("# %s\n", out);
	json_decref(rows);
	free(out);
}

static void test_kubectl_shows_columns_and_scales(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-kubectl");
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 3, NULL);
	cl_create(t, stc);
	json_decref(stc);
	json_decref(cl_wait_settled(t, "x", 3, "x-0,x-1,x-2"));
	expect_kubectl_row(t, "x", "3");

	if (it_sh("kubectl scale stc/x --replicas=5 -n %s", t->ns) != 0)
		cl_fail_with_log(t, "kubectl scale stc/x --replicas=5 failed");
	json_decref(cl_wait_settled(t, "x", 5, "x-0,x-1,x-2,x-3,x-4"));
	expect_kubectl_row(t, "x", "5");
	/* What kubectl scale and an autoscaler read: the scale subresource, its selector from status. */
	char *path = kube_resource_path(&KUBE_STATEFULCLUSTERS, t->ns, "x", "scale");
	json_t *scale = NULL;
	struct kube_error err;
	if (kube_request(t->admin, "GET", path, NULL, NULL, &scale, &err) < 0)
		fail_msg("GET %s: %s", path, err.message);
	assert_int_equal(cl_int_at(scale, "spec.replicas"), 5);
	assert_int_equal(cl_int_at(scale, "status.replicas"), 5);
	assert_string_equal(kube_obj_str(scale, "status.selector"), "app=x");
	json_decref(scale);
	free(path);
	cl_operator_stop(t);
}

/* ---- members start in parallel; the status is right at each stage ---- */

/* Asserts what every status the StatefulCluster ever had must hold, and that it went through `starting`. */
static void expect_status_stages(const json_t *records, int replicas)
{
	long long last_ready = 0;
	bool starting = false;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		const json_t *stc = json_object_get(r, "object");
		const json_t *st = json_object_get(stc, "status");
		if (cl_int_at(st, "replicas") < 0)
			continue; /* not written yet */
		long long reps = cl_int_at(st, "replicas"), ready = cl_int_at(st, "readyReplicas");
		long long avail = cl_int_at(st, "availableReplicas"), updated = cl_int_at(st, "updatedReplicas");
		if (reps > replicas || ready > reps || avail > ready || updated > reps || ready < last_ready)
			fail_msg("status at rv %lld: replicas %lld, ready %lld, available %lld, updated %lld (ready was %lld)",
				 (long long)json_integer_value(json_object_get(r, "rv")), reps, ready, avail, updated, last_ready);
		last_ready = ready;
		/* Every pod made, none Ready yet: that stage must show, with its conditions. */
		if (reps == replicas && ready == 0 && updated == replicas &&
		    (int)json_array_size(json_object_get(st, "members")) == replicas) {
			starting = true;
			assert_string_equal(condition_status(stc, "Available"), "False");
			assert_string_equal(condition_status(stc, "Progressing"), "True");
		}
	}
	if (!starting)
		fail_msg("no status showed %d members with pods, none Ready", replicas);
}

static void test_members_start_in_parallel_with_right_counts(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-parallel");
	cl_record(t);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 3, "data");
	/* Running at once, Ready only after 4 s: time to see whether every pod came before any was Ready. */
	cl_template_annotate(stc, CL_READY_AFTER, "4s");
	cl_create(t, stc);
	json_decref(stc);
	stc = cl_wait_settled(t, "x", 3, "x-0,x-1,x-2");
	it_wait_ready_and_bound(t->admin, t->ns, 3, 3, CL_WAIT_MS);
	cl_stop_recording(t);

	json_t *lives = it_lives(t->pod_records, LABEL_CLUSTER, "x");
	assert_int_equal(json_array_size(lives), 3);
	long long last_added = 0, first_ready = 0;
	size_t i;
	json_t *l;
	json_array_foreach(lives, i, l) {
		long long added = json_integer_value(json_object_get(l, "added_rv")), ready_rv;
		double ready_ms;
		if (!cl_first_ready(t->pod_records, json_string_value(json_object_get(l, "uid")), &ready_rv, &ready_ms))
			fail_msg("pod %s was never Ready", json_string_value(json_object_get(l, "name")));
		if (added > last_added)
			last_added = added;
		if (!first_ready || ready_rv < first_ready)
			first_ready = ready_rv;
	}
	if (last_added > first_ready)
		fail_msg("a pod was Ready (rv %lld) before the last one was created (rv %lld): not in parallel",
			 first_ready, last_added);
	expect_status_stages(t->cluster_records, 3);

	/* The settled status, field by field. */
	const json_t *st = json_object_get(stc, "status");
	assert_string_equal(kube_obj_str(st, "currentRevision"), kube_obj_str(st, "updateRevision"));
	assert_string_equal(kube_obj_str(st, "selector"), "app=x");
	assert_int_equal(cl_int_at(st, "nextIdentity"), 3);
	assert_string_equal(condition_status(stc, "Available"), "True");
	assert_string_equal(condition_status(stc, "Progressing"), "False");
	assert_string_equal(condition_status(stc, "ReplicaFailure"), "False");
	json_t *m;
	json_array_foreach(json_object_get(st, "members"), i, m) {
		assert_string_equal(kube_obj_str(m, "pod"), kube_obj_str(m, "identity"));
		assert_string_equal(kube_obj_str(m, "phase"), "Running");
		assert_string_equal(kube_obj_str(m, "revision"), kube_obj_str(st, "updateRevision"));
		assert_non_null(kube_obj_str(m, "node"));
	}
	cl_expect_member_pods(t, stc);
	cl_expect_events(t, "MembersAdded", "x", "Normal");
	json_decref(lives);
	json_decref(stc);
	cl_operator_stop(t);
}

/* ---- the user's volumes, labels and annotations reach the pods ---- */

/* The volume of pod named name (borrowed), or NULL. */
static const json_t *pod_volume(const json_t *pod, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		if (cl_str_is(kube_obj_str(v, "name"), name))
			return v;
	}
	return NULL;
}

static void test_user_volumes_labels_and_annotations_survive(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-volumes");
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 2, "data");
	json_t *tmpl = json_object_get(json_object_get(stc, "spec"), "template");
	cl_set(tmpl, "metadata.labels.tier", json_string("db"));
	cl_template_annotate(stc, "example.com/owner", "team-a");
	cl_set(tmpl, "spec.volumes",
	       it_json("[{\"name\":\"scratch\",\"emptyDir\":{}},"
		       "{\"name\":\"settings\",\"configMap\":{\"name\":\"x-settings\",\"optional\":true}}]"));
	json_t *mounts = json_object_get(json_array_get(json_object_get(json_object_get(tmpl, "spec"), "containers"), 0),
					 "volumeMounts");
	json_array_append_new(mounts, it_json("{\"name\":\"scratch\",\"mountPath\":\"/scratch\"}"));
	json_array_append_new(mounts, it_json("{\"name\":\"settings\",\"mountPath\":\"/etc/settings\"}"));
	cl_create(t, stc);
	json_decref(stc);
	stc = cl_wait_settled(t, "x", 2, "x-0,x-1");
	cl_expect_member_pods(t, stc);

	json_t *pods = cl_member_pods(t, "x");
	assert_int_equal(json_array_size(pods), 2);
	size_t i;
	json_t *pod;
	json_array_foreach(pods, i, pod) {
		const char *name = kube_obj_str(pod, "metadata.name");
		if (!cl_str_is(it_label(pod, "tier"), "db") || !cl_str_is(it_label(pod, "app"), "x"))
			fail_msg("pod %s lost the template's labels", name);
		if (!cl_str_is(it_annotation(pod, "example.com/owner"), "team-a"))
			fail_msg("pod %s lost the template's annotation", name);
		const json_t *scratch = pod_volume(pod, "scratch"), *settings = pod_volume(pod, "settings");
		if (!scratch || !json_is_object(json_object_get(scratch, "emptyDir")))
			fail_msg("pod %s lost the emptyDir volume scratch", name);
		if (!settings || !cl_str_is(kube_obj_str(settings, "configMap.name"), "x-settings"))
			fail_msg("pod %s lost the configMap volume settings", name);
		char *claim = xasprintf("data-%s", name);
		if (!cl_str_is(kube_obj_str(pod_volume(pod, "data"), "persistentVolumeClaim.claimName"), claim))
			fail_msg("pod %s does not mount %s as data", name, claim);
		free(claim);
		/* The template's three mounts (the API server adds its service account token mount too). */
		const json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
		int ours = 0;
		size_t m;
		json_t *mount;
		json_array_foreach(json_object_get(c, "volumeMounts"), m, mount) {
			const char *mn = kube_obj_str(mount, "name");
			ours += cl_str_is(mn, "data") || cl_str_is(mn, "scratch") || cl_str_is(mn, "settings");
		}
		assert_int_equal(ours, 3);
	}
	json_decref(pods);
	json_decref(stc);
	cl_operator_stop(t);
}

/* ---- deleting the StatefulCluster applies whenDeleted ---- */

static bool owned_by(const json_t *obj, const char *uid)
{
	size_t i;
	json_t *ref;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref) {
		if (cl_str_is(kube_obj_str(ref, "uid"), uid))
			return true;
	}
	return false;
}

struct owners {
	struct cl_test *t;
	const char *uid;
	bool want;
};

/* Both claims of x carry an owner reference to the cluster exactly when want. */
static bool claims_owned(void *ctx)
{
	struct owners *o = ctx;
	bool ok = true;
	for (int n = 0; n < 2; n++) {
		char name[32];
		snprintf(name, sizeof(name), "data-x-%d", n);
		json_t *pvc = it_get(o->t->admin, &KUBE_PVCS, o->t->ns, name);
		ok = ok && pvc && owned_by(pvc, o->uid) == o->want;
		json_decref(pvc);
	}
	return ok;
}

/* The StatefulCluster x, its pods and its revisions are gone. */
static bool cluster_gone(void *ctx)
{
	struct cl_test *t = ctx;
	json_t *stc = cl_get(t, "x");
	json_t *pods = cl_member_pods(t, "x");
	char *selector = xasprintf("%s=x", LABEL_CLUSTER);
	json_t *revs = it_list(t->admin, &KUBE_CONTROLLERREVISIONS, t->ns, selector);
	bool gone = !stc && !json_array_size(pods) && !json_array_size(revs);
	free(selector);
	json_decref(revs);
	json_decref(pods);
	json_decref(stc);
	return gone;
}

/*
 * x with 2 members and claims created with whenDeleted first, switched to
 * then (when not NULL) before the StatefulCluster is deleted; the claims
 * must end as then (or first) says.
 */
static void delete_the_cluster(struct cl_test *t, const char *prefix, const char *first, const char *then)
{
	cl_namespace_new(t, prefix);
	cl_operator_start(t);
	json_t *stc = cl_manifest("x", 2, "data");
	cl_set(stc, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", json_string(first));
	cl_create(t, stc);
	json_decref(stc);
	stc = cl_wait_settled(t, "x", 2, "x-0,x-1");
	it_wait_ready_and_bound(t->admin, t->ns, 2, 2, CL_WAIT_MS);
	const char *policy = then ? then : first;
	bool del = !strcmp(policy, "Delete");
	struct owners o = {t, kube_obj_str(stc, "metadata.uid"), !strcmp(first, "Delete")};
	cl_wait_or_fail(t, claims_owned, &o, "claims %s an owner reference with whenDeleted %s",
			o.want ? "lack" : "carry", first);
	if (then) {
		cl_patch(t, "x", "{\"spec\":{\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":\"%s\"}}}", then);
		o.want = del;
		cl_wait_or_fail(t, claims_owned, &o, "claims did not follow whenDeleted %s", then);
	}
	char *uid0 = cl_claim_uid(t, "data-x-0"), *uid1 = cl_claim_uid(t, "data-x-1");

	struct kube_delete_options bg = {.propagation_policy = "Background"};
	struct kube_error err;
	if (kube_delete(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, "x", &bg, &err) < 0)
		fail_msg("delete StatefulCluster x: %s", err.message);
	cl_wait_or_fail(t, cluster_gone, t, "x, its pods or its revisions are still there");
	if (del) {
		cl_wait_claim_gone(t, "data-x-0");
		cl_wait_claim_gone(t, "data-x-1");
	} else {
		it_sleep_ms(3000); /* a wrong deletion by the garbage collector would show by now */
		cl_expect_claim_kept(t, "data-x-0", uid0);
		cl_expect_claim_kept(t, "data-x-1", uid1);
	}
	free(uid1);
	free(uid0);
	json_decref(stc);
	cl_operator_stop(t);
}

static void test_deletion_with_when_deleted_delete_removes_the_claims(void **state)
{
	delete_the_cluster(*state, "it-stc-del", "Delete", NULL);
}

static void test_deletion_with_when_deleted_retain_keeps_the_claims(void **state)
{
	delete_the_cluster(*state, "it-stc-retain", "Retain", NULL);
}

static void test_deletion_after_switching_to_delete_removes_the_claims(void **state)
{
	delete_the_cluster(*state, "it-stc-switch", "Retain", "Delete");
}

/* ---- the seed's own example, with our apiVersion ---- */

#define SEED_EXAMPLE                                  \
	"apiVersion: stateful-operator.io/v1alpha1\n" \
	"kind: StatefulCluster\n"                     \
	"metadata:\n"                                 \
	"  name: coder\n"                             \
	"spec:\n"                                     \
	"  replicas: 3\n"                             \
	"  selector:\n"                               \
	"    matchLabels:\n"                          \
	"      app: coder\n"                          \
	"      enge.me/statefulcluster: coder\n"      \
	"  template:\n"                               \
	"    spec:\n"                                 \
	"      containers:\n"                         \
	"      - args:\n"                             \
	"        - --allow-http\n"                    \
	"        - --no-auth\n"                       \
	"        - --host\n"                          \
	"        - 0.0.0.0\n"                         \
	"        image: codercom/code-server\n"       \
	"        name: coder-stateful\n"              \
	"        ports:\n"                            \
	"        - containerPort: 8443\n"             \
	"          name: https\n"                     \
	"        volumeMounts:\n"                     \
	"        - mountPath: /home/coder/project\n"  \
	"          name: data\n"                      \
	"  volumeClaimTemplates:\n"                   \
	"  - metadata:\n"                             \
	"      name: data\n"                          \
	"    spec:\n"                                 \
	"      accessModes:\n"                        \
	"      - ReadWriteOnce\n"                     \
	"      resources:\n"                          \
	"        requests:\n"                         \
	"          storage: 1Gi\n"

static void test_seed_example_runs(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-stc-seed");
	cl_operator_start(t);
	/* As a user would: kubectl apply of the README's manifest. */
	if (it_sh("kubectl apply -n %s -f - >/dev/null <<'EOF'\n" SEED_EXAMPLE "EOF\n", t->ns) != 0)
		fail_msg("kubectl apply of the seed example failed");
	json_t *stc = cl_wait_settled(t, "coder", 3, "coder-0,coder-1,coder-2");
	it_wait_ready_and_bound(t->admin, t->ns, 3, 3, CL_WAIT_MS);
	cl_expect_member_pods(t, stc);
	json_t *pods = cl_member_pods(t, "coder");
	size_t i;
	json_t *pod;
	json_array_foreach(pods, i, pod) {
		/* The template has no labels: the pods get the selector's. */
		assert_true(cl_str_is(it_label(pod, "app"), "coder"));
		assert_true(cl_str_is(it_label(pod, "enge.me/statefulcluster"), "coder"));
		const json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
		assert_true(cl_str_is(kube_obj_str(c, "image"), "codercom/code-server"));
		assert_int_equal(json_array_size(json_object_get(c, "args")), 4);
	}
	for (int n = 0; n < 3; n++) {
		char claim[32];
		snprintf(claim, sizeof(claim), "data-coder-%d", n);
		json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
		assert_true(pvc && cl_str_is(kube_obj_str(pvc, "status.phase"), "Bound"));
		assert_true(cl_str_is(kube_obj_str(pvc, "spec.resources.requests.storage"), "1Gi"));
		json_decref(pvc);
	}
	json_decref(pods);
	json_decref(stc);
	cl_operator_stop(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cl_unit_test(test_invalid_specs_are_refused_naming_the_field),
		cl_unit_test(test_kubectl_shows_columns_and_scales),
		cl_unit_test(test_members_start_in_parallel_with_right_counts),
		cl_unit_test(test_user_volumes_labels_and_annotations_survive),
		cl_unit_test(test_deletion_with_when_deleted_delete_removes_the_claims),
		cl_unit_test(test_deletion_with_when_deleted_retain_keeps_the_claims),
		cl_unit_test(test_deletion_after_switching_to_delete_removes_the_claims),
		cl_unit_test(test_seed_example_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
