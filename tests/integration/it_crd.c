/*
 * The StatefulCluster CRD as the tools see it, on the test bed (issue 30):
 * the pod template and claim template are typed (the Kubernetes schemas), so
 * kubectl apply (its default --validate=strict: fieldValidation=Strict)
 * refuses a typo in a container or claim field, naming it, and stores
 * nothing; without strict validation the unknown field is pruned, never
 * stored; a value of the wrong type, or one outside an enum of Kubernetes
 * (imagePullPolicy: Alwayss), is refused whatever the client asks.
 * What kubectl explain reads (the API server's OpenAPI v3) describes every
 * field of ours; kubectl get all and get stateful list StatefulClusters;
 * -o wide adds the available members, the first container, its image and
 * the update revision.
 * None of it needs the operator.
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
#include "client/kube_object.h"

/* The value at a dotted path of objects under obj, or NULL (borrowed). */
static json_t *at(json_t *obj, const char *path)
{
	char *copy = xstrdup(path), *save = NULL;
	for (char *k = strtok_r(copy, ".", &save); k && obj; k = strtok_r(NULL, ".", &save))
		obj = json_object_get(obj, k);
	free(copy);
	return obj;
}

/* The manifest's only container (borrowed). */
static json_t *container(json_t *stc)
{
	return json_array_get(at(stc, "spec.template.spec.containers"), 0);
}

/* The manifest's first claim template's spec (borrowed). */
static json_t *claim_spec(json_t *stc)
{
	return json_object_get(json_array_get(at(stc, "spec.volumeClaimTemplates"), 0), "spec");
}

/* kubectl apply [flags] of stc in t's namespace: its exit status, its output (stdout and stderr) in *out. */
static int kubectl_apply(struct cl_test *t, const json_t *stc, const char *flags, char **out)
{
	char *text = json_dumps(stc, JSON_COMPACT);
	int rc = it_sh_capture(out, "kubectl apply %s -n %s -f - 2>&1 <<'EOF'\n%s\nEOF\n", flags, t->ns, text);
	free(text);
	return rc;
}

/* ---- typos are refused, not stored ---- */

static const struct typo {
	const char *key;     /* set in the container, or (claim) in the claim template's spec */
	const char *value;   /* JSON */
	bool claim;          /* in the claim template */
	const char *unknown; /* the field the refusal must name */
	const char *leaf;    /* its last key, which must not be stored */
} typos[] = {
	{"imagePullPolicyy", "\"Always\"", false, "spec.template.spec.containers[0].imagePullPolicyy", "imagePullPolicyy"},
	{"ports", "[{\"containerPort\":80,\"protocoll\":\"UDP\"}]", false,
	 "spec.template.spec.containers[0].ports[0].protocoll", "protocoll"},
	{"readinessProbe", "{\"httpGet\":{\"port\":\"http\",\"pathh\":\"/\"}}", false,
	 "spec.template.spec.containers[0].readinessProbe.httpGet.pathh", "pathh"},
	{"storageClass", "\"fast\"", true, "spec.volumeClaimTemplates[0].spec.storageClass", "storageClass"},
};

static json_t *manifest_with_typo(const struct typo *ty)
{
	json_t *stc = cl_manifest("typo", 1, "data");
	json_t *value = json_loads(ty->value, JSON_DECODE_ANY, NULL);
	assert_non_null(value);
	json_object_set_new(ty->claim ? claim_spec(stc) : container(stc), ty->key, value);
	return stc;
}

static void test_typos_in_the_pod_and_claim_templates_are_refused(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-crd-typo");
	for (size_t k = 0; k < sizeof(typos) / sizeof(typos[0]); k++) {
		json_t *stc = manifest_with_typo(&typos[k]);
		char *out = NULL, want[256];
		snprintf(want, sizeof(want), "unknown field \"%s\"", typos[k].unknown);
		/* kubectl's default, --validate=strict */
		if (kubectl_apply(t, stc, "", &out) == 0)
			fail_msg("kubectl apply of %s accepted it:\n%s", typos[k].unknown, out);
		if (!strstr(out, want))
			fail_msg("kubectl apply of %s: the refusal does not say %s:\n%s", typos[k].unknown, want, out);
		printf("# refused: %s", out);
		free(out);
		json_t *stored = cl_get(t, "typo");
		if (stored)
			fail_msg("refused, yet StatefulCluster typo exists:\n%s", json_dumps(stored, JSON_INDENT(2)));
		/* --validate=false (fieldValidation=Ignore): stored, the unknown field pruned. */
		if (kubectl_apply(t, stc, "--validate=false", &out) != 0)
			fail_msg("kubectl apply --validate=false of %s failed:\n%s", typos[k].unknown, out);
		free(out);
		stored = cl_get(t, "typo");
		assert_non_null(stored);
		char *text = json_dumps(json_object_get(stored, "spec"), JSON_COMPACT), key[64];
		snprintf(key, sizeof(key), "\"%s\":", typos[k].leaf);
		if (strstr(text, key))
			fail_msg("%s was stored: %s", typos[k].unknown, text);
		free(text);
		json_decref(stored);
		if (it_sh("kubectl delete stc typo -n %s --wait=true >/dev/null", t->ns) != 0)
			fail_msg("kubectl delete stc typo failed");
		json_decref(stc);
	}
}

/* A value of the wrong type is refused by the schema, whatever field validation the client asks for. */
static void test_wrong_types_in_the_pod_template_are_refused(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-crd-type");
	json_t *stc = cl_manifest("wrong", 1, NULL);
	json_object_set_new(container(stc), "ports", it_json("[{\"containerPort\":\"eighty\"}]"));
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) == 0)
		fail_msg("a StatefulCluster with containerPort \"eighty\" was accepted");
	if (err.code != 422 || !strstr(err.message, "spec.template.spec.containers[0].ports[0].containerPort"))
		fail_msg("containerPort \"eighty\": HTTP %ld, message does not name the field: %s", err.code, err.message);
	printf("# refused: %s\n", err.message);
	json_decref(stc);

	/* An enum of the Kubernetes API (scripts/crd-gen's enums.json): a typo is refused, naming the field. */
	stc = cl_manifest("enum", 1, NULL);
	json_object_set_new(container(stc), "imagePullPolicy", json_string("Alwayss"));
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) == 0)
		fail_msg("a StatefulCluster with imagePullPolicy \"Alwayss\" was accepted");
	if (err.code != 422 || !strstr(err.message, "spec.template.spec.containers[0].imagePullPolicy") ||
	    !strstr(err.message, "IfNotPresent"))
		fail_msg("imagePullPolicy \"Alwayss\": HTTP %ld, message does not name the field and its values: %s",
			 err.code, err.message);
	printf("# refused: %s\n", err.message);
	/* The empty string, which Kubernetes reads as unset (a toleration's effect "": every effect), is taken. */
	json_object_set_new(container(stc), "imagePullPolicy", json_string("IfNotPresent"));
	json_object_set_new(json_object_get(json_object_get(json_object_get(stc, "spec"), "template"), "spec"),
			    "tolerations", it_json("[{\"operator\":\"Exists\",\"effect\":\"\"}]"));
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) < 0)
		fail_msg("a StatefulCluster with a toleration of effect \"\" was refused: %s", err.message);
	json_decref(stc);
}

/*
 * The schema adds nothing to a template on the way in or out (no defaults):
 * a port without protocol stays as written, so a StatefulCluster stored
 * before this CRD reads back as it was, and its members do not roll.
 */
static void test_templates_read_back_as_written(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-crd-asis");
	json_t *stc = cl_manifest("asis", 1, NULL);
	json_object_set_new(container(stc), "ports", it_json("[{\"containerPort\":80}]"));
	json_object_set_new(at(stc, "spec.template.spec"), "imagePullSecrets", it_json("[{}]"));
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULCLUSTERS, t->ns, stc, NULL, &err) < 0)
		fail_msg("create: %s", err.message);
	json_t *got = cl_get(t, "asis");
	json_t *want_ports = it_json("[{\"containerPort\":80}]"), *want_secrets = it_json("[{}]");
	if (!json_equal(json_object_get(container(got), "ports"), want_ports) ||
	    !json_equal(at(got, "spec.template.spec.imagePullSecrets"), want_secrets)) {
		char *text = json_dumps(at(got, "spec.template.spec"), JSON_COMPACT);
		fail_msg("the template read back changed: %s", text);
	}
	json_decref(want_ports);
	json_decref(want_secrets);
	json_decref(got);
	json_decref(stc);
}

/* ---- what kubectl explain reads ---- */

/*
 * Appends to missing the path of every property under node (a schema of the
 * published OpenAPI document, borrowed) that has no description.
 */
static void find_undescribed(const json_t *node, const char *path, json_t *missing)
{
	const char *key;
	json_t *prop;
	json_object_foreach(json_object_get(node, "properties"), key, prop) {
		char *sub = xasprintf("%s.%s", path, key);
		const char *d = json_string_value(json_object_get(prop, "description"));
		if (!d || !*d)
			json_array_append_new(missing, json_string(sub));
		find_undescribed(prop, sub, missing);
		free(sub);
	}
	json_t *items = json_object_get(node, "items");
	if (items) {
		char *sub = xasprintf("%s[]", path);
		find_undescribed(items, sub, missing);
		free(sub);
	}
}

/* kubectl explain <what> prints each of want (NULL-terminated); retried while the API server publishes the CRD. */
static void expect_explain(const char *what, const char *const *want)
{
	char *out = NULL;
	for (int tries = 0;; tries++) {
		free(out);
		out = NULL;
		int rc = it_sh_capture(&out, "kubectl explain %s 2>&1", what);
		bool all = rc == 0;
		for (const char *const *w = want; all && *w; w++)
			all = strstr(out, *w) != NULL;
		if (all)
			break;
		if (tries == 30)
			fail_msg("kubectl explain %s does not say all of what it should (first: %s):\n%s", what, want[0], out);
		it_sleep_ms(1000);
	}
	printf("# kubectl explain %s: ok\n", what);
	free(out);
}

static void test_kubectl_explain_describes_every_field(void **state)
{
	(void)state;
	static const char *const replacement[] = {
		"When a member counts as failed", "unhealthyAfterSeconds", "How long a pod may stay not Ready",
		"nodeLostAfterSeconds", "startupGraceSeconds", NULL};
	static const char *const status[] = {"What the operator last saw", "readyReplicas", "Members whose pod is Ready",
					     "nextIdentity", "The n the next new member gets", "conditions", NULL};
	static const char *const pull[] = {"Image pull policy", NULL};
	static const char *const claim[] = {"storageClassName", "accessModes", NULL};
	expect_explain("stc.spec.replacement", replacement);
	expect_explain("stc.status", status);
	expect_explain("stc.spec.template.spec.containers.imagePullPolicy", pull);
	expect_explain("stc.spec.volumeClaimTemplates.spec", claim);

	/* Every property kubectl explain can reach has a description (the published schema). */
	char *doc = it_sh_output("kubectl get --raw /openapi/v3/apis/stateful-operator.io/v1alpha1");
	json_t *api = it_json("%s", doc);
	free(doc);
	const json_t *schema =
		json_object_get(at(api, "components.schemas"), "io.stateful-operator.v1alpha1.StatefulCluster");
	assert_non_null(schema);
	json_t *missing = json_array();
	find_undescribed(json_object_get(json_object_get(schema, "properties"), "spec"), "spec", missing);
	find_undescribed(json_object_get(json_object_get(schema, "properties"), "status"), "status", missing);
	if (json_array_size(missing) > 0)
		fail_msg("%zu fields have no description: %s", json_array_size(missing), json_dumps(missing, 0));
	json_decref(missing);
	json_decref(api);
}

/* ---- kubectl get all, the category, -o wide ---- */

static void test_kubectl_get_all_and_wide_columns(void **state)
{
	struct cl_test *t = *state;
	cl_namespace_new(t, "it-crd-get");
	json_t *stc = cl_manifest("x", 0, NULL);
	cl_create(t, stc);
	json_decref(stc);
	/* A discovery cache of its own: kubectl keeps what it found for hours, the categories too. */
	char cache[] = "/tmp/it-crd-cache-XXXXXX";
	assert_non_null(mkdtemp(cache));
	char *out = it_sh_output("kubectl get all --cache-dir %s -n %s -o name", cache, t->ns);
	if (!strstr(out, "statefulcluster.stateful-operator.io/x"))
		fail_msg("kubectl get all does not list the StatefulCluster:\n%s", out);
	free(out);
	out = it_sh_output("kubectl get stateful --cache-dir %s -n %s -o name", cache, t->ns);
	if (strcmp(out, "statefulcluster.stateful-operator.io/x") != 0)
		fail_msg("kubectl get stateful (the category): want the StatefulCluster alone:\n%s", out);
	free(out);
	/* The normal columns, then those of priority 1. */
	out = it_sh_output("kubectl get stc x -n %s -o wide | head -1 | tr -s ' '", t->ns);
	assert_string_equal(out, "NAME DESIRED READY UPDATED AGE AVAILABLE CONTAINER IMAGE REVISION");
	free(out);
	/* Empty cells (no status without the operator) are blanks: name, desired, age, container, image. */
	out = it_sh_output("kubectl get stc x -n %s -o wide --no-headers | tr -s ' ' | cut -d' ' -f1,2,4,5", t->ns);
	assert_string_equal(out, "x 0 c pause");
	free(out);
	out = it_sh_output("kubectl get stc x -n %s | head -1 | tr -s ' '", t->ns);
	assert_string_equal(out, "NAME DESIRED READY UPDATED AGE");
	free(out);
	it_sh("rm -rf %s", cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cl_unit_test(test_typos_in_the_pod_and_claim_templates_are_refused),
		cl_unit_test(test_wrong_types_in_the_pod_template_are_refused),
		cl_unit_test(test_templates_read_back_as_written),
		cl_unit_test(test_kubectl_explain_describes_every_field),
		cl_unit_test(test_kubectl_get_all_and_wide_columns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
