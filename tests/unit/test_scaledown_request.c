/* The scale-down request parser: the jboss example, JSON and YAML, every refusal, every default and bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/scaledown/scaledown_request.h"
#include "util/strbuf.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* The example template of the jboss statefulset-scaledown-controller README, as users wrote it. */
static const char JBOSS_JSON[] = "{\n"
				 "  \"metadata\": {\n"
				 "    \"labels\": {\n"
				 "      \"app\": \"datastore-cleanup\"\n"
				 "    }\n"
				 "  },\n"
				 "  \"spec\": {\n"
				 "    \"containers\": [\n"
				 "      {\n"
				 "        \"name\": \"cleanup\",\n"
				 "        \"image\": \"my-cleanup-container\",\n"
				 "        \"volumeMounts\": [\n"
				 "          {\n"
				 "            \"name\": \"data\",\n"
				 "            \"mountPath\": \"/var/data\"\n"
				 "          }\n"
				 "        ]\n"
				 "      }\n"
				 "    ]\n"
				 "  }\n"
				 "}\n";

/* The same template in YAML. */
static const char JBOSS_YAML[] = "metadata:\n"
				 "  labels:\n"
				 "    app: datastore-cleanup\n"
				 "spec:\n"
				 "  containers:\n"
				 "  - name: cleanup\n"
				 "    image: my-cleanup-container\n"
				 "    volumeMounts:\n"
				 "    - name: data\n"
				 "      mountPath: /var/data\n";

#define MINIMAL "{\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"busybox\"}]}}"

/* ---- builders ---- */

/* A StatefulSet "datastore" with one volumeClaimTemplate "data" and no annotations. New reference. */
static json_t *sts_new(void)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{}}, s:{s:i, s:[{s:{s:s}}]}}", "apiVersion", "apps/v1",
			 "kind", "StatefulSet", "metadata", "name", "datastore", "namespace", "ns",
			 "annotations", "spec", "replicas", 3, "volumeClaimTemplates", "metadata", "name",
			 "data");
}

static void annotate(json_t *sts, const char *key, const char *value)
{
	json_object_set_new(json_object_get(json_object_get(sts, "metadata"), "annotations"), key,
			    json_string(value));
}

static void set_spec(json_t *sts, const char *field, const char *value)
{
	json_object_set_new(json_object_get(sts, "spec"), field, json_string(value));
}

static void set_when_scaled(json_t *sts, const char *value)
{
	json_object_set_new(json_object_get(sts, "spec"), "persistentVolumeClaimRetentionPolicy",
			    json_pack("{s:s, s:s}", "whenDeleted", "Retain", "whenScaled", value));
}

static json_t *sts_with_template(const char *tmpl)
{
	json_t *s = sts_new();
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE, tmpl);
	return s;
}

/* Parses s, which must be accepted; the caller releases req. */
static void parse_ok(const json_t *s, struct scaledown_request *req)
{
	struct refusal r;
	int rc = scaledown_request_parse(s, req, &r);
	if (rc != 0)
		print_error("unexpected refusal %s: %s\n", r.reason, r.message);
	assert_int_equal(rc, 0);
	assert_null(r.reason);
	assert_null(r.message);
	refusal_release(&r);
}

/*
 * Parses s, which must be refused with reason and a message containing
 * needle and naming annotation (when not NULL); req must come back empty.
 */
static void parse_refused(const json_t *s, const char *reason, const char *needle, const char *annotation)
{
	struct scaledown_request req;
	struct refusal r;
	int rc = scaledown_request_parse(s, &req, &r);
	assert_int_equal(rc, -1);
	assert_non_null(r.reason);
	assert_non_null(r.message);
	if (strcmp(r.reason, reason) || !strstr(r.message, needle) ||
	    (annotation && !strstr(r.message, annotation)))
		fail_msg("want %s with \"%s\" naming %s; got %s: %s", reason, needle,
			 annotation ? annotation : "-", r.reason, r.message);
	assert_false(req.enabled);
	assert_null(req.pod_template);
	scaledown_request_release(&req);
	refusal_release(&r);
	assert_null(r.message);
	assert_null(r.reason);
}

static const char *tmpl_str(const struct scaledown_request *req, const char *dotted)
{
	const json_t *cur = req->pod_template;
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", dotted);
	for (char *save = NULL, *p = strtok_r(buf, ".", &save); p && cur; p = strtok_r(NULL, ".", &save))
		cur = json_object_get(cur, p);
	return json_string_value(cur);
}

/* ---- accepted ---- */

static void test_no_template(void **state)
{
	(void)state;
	json_t *s = sts_new();
	/* The numeric annotations are not read when cleanup is off. */
	annotate(s, ANNOTATION_SCALEDOWN_PARALLELISM, "lots");
	set_when_scaled(s, "Delete");
	struct scaledown_request req;
	parse_ok(s, &req);
	assert_false(req.enabled);
	assert_null(req.pod_template);
	scaledown_request_release(&req);
	json_decref(s);

	/* No annotations at all, and no metadata at all. */
	s = json_pack("{s:{}}", "spec");
	parse_ok(s, &req);
	assert_false(req.enabled);
	scaledown_request_release(&req);
	json_decref(s);
}

static void test_jboss_json_legacy_key(void **state)
{
	(void)state;
	json_t *s = sts_new();
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, JBOSS_JSON);
	struct scaledown_request req;
	parse_ok(s, &req);
	assert_true(req.enabled);
	assert_non_null(req.pod_template);
	assert_string_equal(tmpl_str(&req, "spec.restartPolicy"), "Never");
	assert_string_equal(tmpl_str(&req, "metadata.labels.app"), "datastore-cleanup");
	const json_t *c = json_array_get(json_object_get(json_object_get(req.pod_template, "spec"), "containers"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "cleanup");
	assert_string_equal(json_string_value(json_object_get(c, "image")), "my-cleanup-container");
	const json_t *m = json_array_get(json_object_get(c, "volumeMounts"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "name")), "data");
	assert_string_equal(json_string_value(json_object_get(m, "mountPath")), "/var/data");
	assert_int_equal(json_object_size(req.pod_template), 2);
	/* Defaults. */
	assert_int_equal(req.parallelism, 1);
	assert_true(req.timeout_ms == 3600LL * 1000);
	assert_int_equal(req.max_attempts, 3);
	assert_false(req.parallel);
	/* The StatefulSet is not touched: the cache shares it. */
	assert_null(strstr(json_string_value(json_object_get(json_object_get(json_object_get(s, "metadata"),
									     "annotations"),
							     ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY)),
			   "restartPolicy"));
	scaledown_request_release(&req);
	assert_false(req.enabled);
	assert_null(req.pod_template);
	scaledown_request_release(&req); /* twice is harmless */
	json_decref(s);
}

static void test_jboss_yaml_same_as_json(void **state)
{
	(void)state;
	json_t *sj = sts_with_template(JBOSS_JSON);
	json_t *sy = sts_with_template(JBOSS_YAML);
	struct scaledown_request rj, ry;
	parse_ok(sj, &rj);
	parse_ok(sy, &ry);
	assert_true(ry.enabled);
	assert_string_equal(tmpl_str(&ry, "spec.restartPolicy"), "Never");
	assert_true(json_equal(rj.pod_template, ry.pod_template));
	scaledown_request_release(&rj);
	scaledown_request_release(&ry);
	json_decref(sj);
	json_decref(sy);
}

static void test_both_keys_ours_wins(void **state)
{
	(void)state;
	json_t *s = sts_new();
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, JBOSS_JSON);
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE,
		 "spec:\n  containers:\n  - name: ours\n    image: ours:1\n");
	struct scaledown_request req;
	parse_ok(s, &req);
	const json_t *c = json_array_get(json_object_get(json_object_get(req.pod_template, "spec"), "containers"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "ours");
	assert_null(tmpl_str(&req, "metadata.labels.app"));
	assert_true(json_is_object(json_object_get(req.pod_template, "metadata")));
	scaledown_request_release(&req);

	/* A broken legacy value does not matter when ours is there. */
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, "{not json");
	parse_ok(s, &req);
	assert_true(req.enabled);
	scaledown_request_release(&req);

	/* ... but a broken one of ours is refused even when the legacy one is fine. */
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, JBOSS_JSON);
	annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE, "{not json");
	parse_refused(s, "ScaledownTemplateInvalid", "JSON", ANNOTATION_SCALEDOWN_TEMPLATE);
	json_decref(s);
}

static void test_pod_kind_status_and_restart_never(void **state)
{
	(void)state;
	json_t *s = sts_with_template("apiVersion: v1\n"
				      "kind: Pod\n"
				      "metadata:\n  annotations:\n    sidecar.istio.io/inject: \"false\"\n"
				      "spec:\n"
				      "  restartPolicy: Never\n"
				      "  volumes:\n  - name: scratch\n    emptyDir: {}\n"
				      "  containers:\n  - name: c\n    image: busybox\n"
				      "status:\n  phase: Running\n");
	struct scaledown_request req;
	parse_ok(s, &req);
	assert_string_equal(tmpl_str(&req, "spec.restartPolicy"), "Never");
	const json_t *ann = json_object_get(json_object_get(req.pod_template, "metadata"), "annotations");
	assert_string_equal(json_string_value(json_object_get(ann, "sidecar.istio.io/inject")), "false");
	/* Only metadata and spec come through. */
	assert_int_equal(json_object_size(req.pod_template), 2);
	assert_null(json_object_get(req.pod_template, "status"));
	assert_null(json_object_get(req.pod_template, "kind"));
	/* A volume of its own, named unlike any claim template, is kept. */
	const json_t *vols = json_object_get(json_object_get(req.pod_template, "spec"), "volumes");
	assert_int_equal(json_array_size(vols), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(vols, 0), "name")), "scratch");
	scaledown_request_release(&req);
	json_decref(s);
}

/* null is absent to the API server: a null restartPolicy would become Always, so it becomes Never. */
static void test_null_fields_are_absent(void **state)
{
	(void)state;
	json_t *s = sts_with_template("metadata:\nkind:\nspec:\n  restartPolicy: null\n  volumes: ~\n"
				      "  containers:\n  - name: c\n    image: busybox\n");
	struct scaledown_request req;
	parse_ok(s, &req);
	assert_string_equal(tmpl_str(&req, "spec.restartPolicy"), "Never");
	assert_true(json_is_object(json_object_get(req.pod_template, "metadata")));
	scaledown_request_release(&req);
	json_decref(s);
}

/* ---- refusals ---- */

struct refusal_case {
	const char *tmpl;
	const char *reason;
	const char *needle;
};

static const struct refusal_case template_refusals[] = {
	/* Neither JSON nor YAML; JSON-looking text gets the JSON error with its position. */
	{"{\"spec\": {\"containers\": [}", "ScaledownTemplateInvalid", "line 1, column"},
	{"{\n  \"spec\": 1,\n  \"spec\": 2\n}", "ScaledownTemplateInvalid", "not valid JSON"},
	{"spec:\n  containers: [\n  - a\n", "ScaledownTemplateInvalid", "YAML"},
	{"spec: *nowhere\n", "ScaledownTemplateInvalid", "line 1"},
	/* Not a Pod. */
	{"[1, 2]", "ScaledownTemplateNotAPod", "holds an array"},
	{"just words", "ScaledownTemplateNotAPod", "holds a string"},
	{"", "ScaledownTemplateNotAPod", "holds nothing"},
	{"42", "ScaledownTemplateNotAPod", "holds a number"},
	{"kind: Job\napiVersion: batch/v1\nspec:\n  template: {}\n", "ScaledownTemplateNotAPod", "kind \"Job\""},
	{"{\"kind\": 7, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}", "ScaledownTemplateNotAPod", "kind a number"},
	{"{\"kind\": \"Pod\", \"apiVersion\": \"apps/v1\", \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}", "ScaledownTemplateNotAPod",
	 "apiVersion \"apps/v1\""},
	/* No containers. */
	{"{\"metadata\": {\"labels\": {\"a\": \"b\"}}}", "ScaledownTemplateNoContainers", "spec.containers"},
	{"{\"spec\": {}}", "ScaledownTemplateNoContainers", "at least one container"},
	{"{\"spec\": {\"containers\": []}}", "ScaledownTemplateNoContainers", "at least one container"},
	{"{\"spec\": {\"containers\": null}}", "ScaledownTemplateNoContainers", "at least one container"},
	{"spec:\n", "ScaledownTemplateNoContainers", "at least one container"},
	/* Malformed fields, naming where. */
	{"{\"metadata\": [], \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}", "ScaledownTemplateInvalid", "metadata is an array"},
	{"{\"spec\": \"run it\"}", "ScaledownTemplateInvalid", "spec is a string"},
	{"{\"spec\": {\"containers\": {\"name\": \"c\"}}}", "ScaledownTemplateInvalid", "spec.containers is an object"},
	{"{\"spec\": {\"containers\": [{\"name\": \"a\", \"image\": \"i\"}, {\"name\": \"b\"}]}}",
	 "ScaledownTemplateInvalid", "spec.containers[1] (\"b\") has no image"},
	{"{\"spec\": {\"containers\": [{\"image\": \"i\"}]}}", "ScaledownTemplateInvalid",
	 "spec.containers[0] has no name"},
	{"{\"spec\": {\"containers\": [{\"name\": \"\", \"image\": \"i\"}]}}", "ScaledownTemplateInvalid",
	 "spec.containers[0] has no name"},
	{"{\"spec\": {\"containers\": [{\"name\": \"a\", \"image\": 3}]}}", "ScaledownTemplateInvalid",
	 "spec.containers[0] (\"a\") has no image"},
	{"{\"spec\": {\"containers\": [\"busybox\"]}}", "ScaledownTemplateInvalid", "spec.containers[0] is a string"},
	{"{\"spec\": {\"volumes\": {}, \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}}",
	 "ScaledownTemplateInvalid", "spec.volumes is an object"},
	/* restartPolicy. */
	{"{\"spec\": {\"restartPolicy\": \"Always\", \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}}",
	 "ScaledownTemplateRestartPolicy", "restartPolicy is \"Always\""},
	{"{\"spec\": {\"restartPolicy\": \"OnFailure\", \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}}",
	 "ScaledownTemplateRestartPolicy", "use Never or leave restartPolicy out"},
	{"{\"spec\": {\"restartPolicy\": 1, \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}}",
	 "ScaledownTemplateRestartPolicy", "restartPolicy is a number"},
	/* A volume named like the claim template "data". */
	{"spec:\n  volumes:\n  - name: scratch\n    emptyDir: {}\n  - name: data\n    emptyDir: {}\n"
	 "  containers:\n  - name: c\n    image: busybox\n",
	 "ScaledownTemplateVolumeConflict", "spec.volumes[1] is named \"data\""},
};

static void test_template_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < NITEMS(template_refusals); i++) {
		const struct refusal_case *c = &template_refusals[i];
		print_message("case %zu: %s\n", i, c->reason);
		json_t *s = sts_with_template(c->tmpl);
		parse_refused(s, c->reason, c->needle, ANNOTATION_SCALEDOWN_TEMPLATE);
		json_decref(s);
		/* The legacy key is named when it is the one used. */
		s = sts_new();
		annotate(s, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY, c->tmpl);
		parse_refused(s, c->reason, c->needle, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY);
		json_decref(s);
	}
}

static void test_template_not_a_string(void **state)
{
	(void)state;
	json_t *s = sts_new();
	json_object_set_new(json_object_get(json_object_get(s, "metadata"), "annotations"),
			    ANNOTATION_SCALEDOWN_TEMPLATE, json_pack("{s:{}}", "spec"));
	parse_refused(s, "ScaledownTemplateInvalid", "must be a string", ANNOTATION_SCALEDOWN_TEMPLATE);
	json_decref(s);
}

static void test_when_scaled(void **state)
{
	(void)state;
	json_t *s = sts_with_template(MINIMAL);
	set_when_scaled(s, "Delete");
	parse_refused(s, "ScaledownWhenScaledDelete", "set whenScaled to Retain", ANNOTATION_SCALEDOWN_TEMPLATE);
	set_when_scaled(s, "Retain");
	struct scaledown_request req;
	parse_ok(s, &req);
	assert_true(req.enabled);
	scaledown_request_release(&req);
	json_decref(s);
}

/* ---- numeric annotations ---- */

struct number_case {
	const char *key;
	const char *value;
	bool ok;
	long long want;
	const char *needle; /* when refused */
};

static const struct number_case numbers[] = {
	{ANNOTATION_SCALEDOWN_PARALLELISM, "1", true, 1, NULL},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "7", true, 7, NULL},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "1000", true, 1000, NULL},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "0", false, 0, "from 1 to 1000"},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "1001", false, 0, "out of range"},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "-1", false, 0, "\"-1\"; use a whole number"},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "2.5", false, 0, "whole number"},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "", false, 0, "whole number"},
	{ANNOTATION_SCALEDOWN_PARALLELISM, " 3", false, 0, "whole number"},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "all", false, 0, "\"all\""},
	{ANNOTATION_SCALEDOWN_PARALLELISM, "99999999999999999999", false, 0, "from 1 to 1000"},
	{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "1", true, 1, NULL},
	{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "100", true, 100, NULL},
	{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "0", false, 0, "from 1 to 100"},
	{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "101", false, 0, "out of range"},
	{ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, "three", false, 0, "whole number"},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "1s", true, 1000, NULL},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "90m", true, 90LL * 60 * 1000, NULL},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "1h30m", true, 90LL * 60 * 1000, NULL},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "24h", true, 24LL * 3600 * 1000, NULL},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "999ms", false, 0, "at least 1s"},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "0s", false, 0, "at least 1s"},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "-5m", false, 0, "-5m"},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "10", false, 0, "not a duration"},
	{ANNOTATION_SCALEDOWN_TIMEOUT, "soon", false, 0, "write it like"},
};

static long long field_of(const struct scaledown_request *req, const char *key)
{
	if (!strcmp(key, ANNOTATION_SCALEDOWN_PARALLELISM))
		return req->parallelism;
	if (!strcmp(key, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS))
		return req->max_attempts;
	return req->timeout_ms;
}

static void test_numeric_bounds(void **state)
{
	(void)state;
	for (size_t i = 0; i < NITEMS(numbers); i++) {
		const struct number_case *c = &numbers[i];
		print_message("case %zu: %s=\"%s\"\n", i, c->key, c->value);
		json_t *s = sts_with_template(JBOSS_JSON);
		annotate(s, c->key, c->value);
		/* Parallel, so the parallelism read is the one returned (OrderedReady is always 1). */
		set_spec(s, "podManagementPolicy", "Parallel");
		if (c->ok) {
			struct scaledown_request req;
			parse_ok(s, &req);
			assert_true(field_of(&req, c->key) == c->want);
			scaledown_request_release(&req);
		} else {
			parse_refused(s, "ScaledownInvalidAnnotation", c->needle, c->key);
		}
		json_decref(s);
	}
}

static void test_numeric_not_a_string(void **state)
{
	(void)state;
	const char *keys[] = {ANNOTATION_SCALEDOWN_PARALLELISM, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS,
			      ANNOTATION_SCALEDOWN_TIMEOUT};
	for (size_t i = 0; i < NITEMS(keys); i++) {
		json_t *s = sts_with_template(MINIMAL);
		json_object_set_new(json_object_get(json_object_get(s, "metadata"), "annotations"), keys[i],
				    json_integer(5));
		parse_refused(s, "ScaledownInvalidAnnotation", "a number", keys[i]);
		json_decref(s);
	}
}

static void test_parallel_policy(void **state)
{
	(void)state;
	struct scaledown_request req;

	json_t *s = sts_with_template(MINIMAL);
	set_spec(s, "podManagementPolicy", "Parallel");
	parse_ok(s, &req);
	assert_true(req.parallel);
	assert_int_equal(req.parallelism, INT_MAX);
	scaledown_request_release(&req);

	annotate(s, ANNOTATION_SCALEDOWN_PARALLELISM, "4");
	parse_ok(s, &req);
	assert_true(req.parallel);
	assert_int_equal(req.parallelism, 4);
	scaledown_request_release(&req);

	/* OrderedReady, spelled out or left to default: one at a time unless asked. */
	set_spec(s, "podManagementPolicy", "OrderedReady");
	json_object_del(json_object_get(json_object_get(s, "metadata"), "annotations"),
			ANNOTATION_SCALEDOWN_PARALLELISM);
	parse_ok(s, &req);
	assert_false(req.parallel);
	assert_int_equal(req.parallelism, 1);
	scaledown_request_release(&req);

	/* OrderedReady stays one at a time whatever the annotation says (SPEC "scaledown"). */
	annotate(s, ANNOTATION_SCALEDOWN_PARALLELISM, "4");
	parse_ok(s, &req);
	assert_false(req.parallel);
	assert_int_equal(req.parallelism, 1);
	scaledown_request_release(&req);
	json_decref(s);
}

/* ---- the StatefulSet's selector ---- */

/* Sets the StatefulSet's spec.selector to selector (JSON). */
static void set_selector(json_t *sts, const char *selector)
{
	json_error_t err;
	json_t *sel = json_loads(selector, 0, &err);
	if (!sel)
		fail_msg("bad test selector %s: %s", selector, err.text);
	json_object_set_new(json_object_get(sts, "spec"), "selector", sel);
}

#define TEMPLATE_LABELLED(labels) \
	"{\"metadata\": {\"labels\": " labels "}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}"

struct selector_case {
	const char *selector;
	const char *tmpl;
	const char *reason; /* NULL: accepted */
	const char *needle;
};

static const struct selector_case selector_cases[] = {
	/* The StatefulSet would adopt a pod its selector matches, then delete it as surplus. */
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", TEMPLATE_LABELLED("{\"app\": \"datastore\"}"),
	 "ScaledownTemplateMatchesSelector", "selector"},
	{"{\"matchLabels\": {\"app\": \"datastore\"}}",
	 TEMPLATE_LABELLED("{\"app\": \"datastore\", \"role\": \"cleanup\"}"), "ScaledownTemplateMatchesSelector",
	 "selector"},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"db\", \"datastore\"]}]}",
	 TEMPLATE_LABELLED("{\"app\": \"datastore\"}"), "ScaledownTemplateMatchesSelector", "selector"},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}]}",
	 TEMPLATE_LABELLED("{\"app\": \"anything\"}"), "ScaledownTemplateMatchesSelector", "selector"},
	{"{\"matchLabels\": {\"app\": \"datastore\"}, \"matchExpressions\": [{\"key\": \"tier\", \"operator\": "
	 "\"NotIn\", \"values\": [\"web\"]}]}",
	 TEMPLATE_LABELLED("{\"app\": \"datastore\", \"tier\": \"db\"}"), "ScaledownTemplateMatchesSelector",
	 "selector"},
	/* Labels of its own: accepted. The jboss example is exactly this case. */
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", JBOSS_JSON, NULL, NULL},
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", JBOSS_YAML, NULL, NULL},
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", MINIMAL, NULL, NULL},
	{"{\"matchLabels\": {\"app\": \"datastore\", \"tier\": \"db\"}}", TEMPLATE_LABELLED("{\"app\": \"datastore\"}"),
	 NULL, NULL},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"db\", \"datastore\"]}]}",
	 TEMPLATE_LABELLED("{\"app\": \"datastore-cleanup\"}"), NULL, NULL},
	{"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}]}",
	 TEMPLATE_LABELLED("{\"job\": \"cleanup\"}"), NULL, NULL},
	{"{\"matchLabels\": {\"app\": \"datastore\"}, \"matchExpressions\": [{\"key\": \"tier\", \"operator\": "
	 "\"NotIn\", \"values\": [\"web\"]}]}",
	 TEMPLATE_LABELLED("{\"app\": \"datastore\", \"tier\": \"web\"}"), NULL, NULL},
	/* Labels that are not an object of strings. */
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", TEMPLATE_LABELLED("[\"app\"]"), "ScaledownTemplateInvalid",
	 "metadata.labels is an array"},
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", TEMPLATE_LABELLED("\"app=cleanup\""),
	 "ScaledownTemplateInvalid", "metadata.labels is a string"},
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", TEMPLATE_LABELLED("{\"app\": \"x\", \"n\": 1}"),
	 "ScaledownTemplateInvalid", "metadata.labels.n is a number"},
	{"{\"matchLabels\": {\"app\": \"datastore\"}}", TEMPLATE_LABELLED("{\"app\": {\"x\": \"y\"}}"),
	 "ScaledownTemplateInvalid", "metadata.labels.app is an object"},
};

static void test_template_matches_selector(void **state)
{
	(void)state;
	for (size_t i = 0; i < NITEMS(selector_cases); i++) {
		const struct selector_case *c = &selector_cases[i];
		print_message("case %zu: %s\n", i, c->reason ? c->reason : "accepted");
		for (int legacy = 0; legacy < 2; legacy++) {
			const char *key = legacy ? ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY : ANNOTATION_SCALEDOWN_TEMPLATE;
			json_t *s = sts_new();
			annotate(s, key, c->tmpl);
			set_selector(s, c->selector);
			if (c->reason) {
				parse_refused(s, c->reason, c->needle, key);
			} else {
				struct scaledown_request req;
				parse_ok(s, &req);
				assert_true(req.enabled);
				scaledown_request_release(&req);
			}
			json_decref(s);
		}
	}
}

/* ---- limits on the template text (issue 12) ---- */

static void sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	assert_int_equal(strbuf_addstr(sb, buf), 0);
}

/*
 * A valid Pod template carrying a billion laughs under spec.x: ten lists of
 * ten aliases of the list before, 10^10 strings in under 700 bytes. Read as
 * shared references it looked small; the cleanup pod's deep copy and body
 * took the operator past 1 GiB. It is refused as it is read.
 */
static void test_template_alias_bomb(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	sb_addf(&sb, "spec:\n  containers:\n  - name: c\n    image: busybox\n  x:\n");
	sb_addf(&sb, "    a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
	for (int i = 1; i < 10; i++) {
		sb_addf(&sb, "    a%d: &a%d [", i, i);
		for (int j = 0; j < 10; j++)
			sb_addf(&sb, "%s*a%d", j ? ", " : "", i - 1);
		sb_addf(&sb, "]\n");
	}
	assert_true(sb.len < 700);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	json_t *s = sts_with_template(sb.buf);
	parse_refused(s, "ScaledownTemplateTooLarge", "once aliases are expanded", ANNOTATION_SCALEDOWN_TEMPLATE);
	json_decref(s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 < 1.0);
	strbuf_release(&sb);
}

/* Deep JSON (70 and 70,000 levels) and deep YAML are refused, naming the limit. */
static void test_template_too_deep(void **state)
{
	(void)state;
	for (int depth = 70; depth <= 100000; depth *= 1000) {
		struct strbuf sb = STRBUF_INIT;
		sb_addf(&sb, "{\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}], \"x\": ");
		for (int i = 0; i < depth; i++)
			assert_int_equal(strbuf_addstr(&sb, "["), 0);
		for (int i = 0; i < depth; i++)
			assert_int_equal(strbuf_addstr(&sb, "]"), 0);
		sb_addf(&sb, "}}");
		json_t *s = sts_with_template(sb.buf);
		parse_refused(s, "ScaledownTemplateTooLarge", "nested deeper than 64 levels",
			      ANNOTATION_SCALEDOWN_TEMPLATE);
		json_decref(s);
		strbuf_release(&sb);
	}
	struct strbuf sb = STRBUF_INIT;
	sb_addf(&sb, "spec:\n  containers:\n  - name: c\n    image: i\n  x:\n");
	for (int i = 0; i < 70; i++)
		sb_addf(&sb, "%*sk:\n", i + 4, "");
	json_t *s = sts_with_template(sb.buf);
	parse_refused(s, "ScaledownTemplateTooLarge", "nested deeper than 64 levels", ANNOTATION_SCALEDOWN_TEMPLATE);
	json_decref(s);
	strbuf_release(&sb);
}

/* An ordinary template with a couple of aliases and a merge key is still read, aliases resolved. */
static void test_template_with_aliases(void **state)
{
	(void)state;
	static const char tmpl[] = "metadata:\n"
				   "  labels: &labels\n"
				   "    app: datastore-cleanup\n"
				   "  annotations: *labels\n"
				   "spec:\n"
				   "  containers:\n"
				   "  - &c\n"
				   "    name: cleanup\n"
				   "    image: my-cleanup\n"
				   "    volumeMounts: [{name: data, mountPath: /var/data}]\n"
				   "  - <<: *c\n"
				   "    name: second\n";
	json_t *s = sts_with_template(tmpl);
	struct scaledown_request req;
	parse_ok(s, &req);
	assert_true(req.enabled);
	const json_t *c1 = json_array_get(json_object_get(json_object_get(req.pod_template, "spec"), "containers"), 1);
	assert_string_equal(json_string_value(json_object_get(c1, "name")), "second");
	assert_string_equal(json_string_value(json_object_get(c1, "image")), "my-cleanup");
	assert_string_equal(tmpl_str(&req, "metadata.annotations.app"), "datastore-cleanup");
	scaledown_request_release(&req);
	json_decref(s);
}

/*
 * YAML in flow style opens like JSON; brackets in its single-quoted strings
 * look like nesting to the JSON check, but the YAML reader counts right.
 */
static void test_template_flow_yaml_with_brackets(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	sb_addf(&sb, "{spec: {containers: [{name: c, image: i, args: ['");
	for (int i = 0; i < 70; i++)
		assert_int_equal(strbuf_addstr(&sb, "["), 0);
	sb_addf(&sb, "']}]}}");
	json_t *s = sts_with_template(sb.buf);
	struct scaledown_request req;
	parse_ok(s, &req);
	const json_t *c0 = json_array_get(json_object_get(json_object_get(req.pod_template, "spec"), "containers"), 0);
	assert_int_equal(json_string_length(json_array_get(json_object_get(c0, "args"), 0)), 70);
	scaledown_request_release(&req);
	json_decref(s);
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_template),
		cmocka_unit_test(test_jboss_json_legacy_key),
		cmocka_unit_test(test_jboss_yaml_same_as_json),
		cmocka_unit_test(test_both_keys_ours_wins),
		cmocka_unit_test(test_pod_kind_status_and_restart_never),
		cmocka_unit_test(test_null_fields_are_absent),
		cmocka_unit_test(test_template_refusals),
		cmocka_unit_test(test_template_not_a_string),
		cmocka_unit_test(test_when_scaled),
		cmocka_unit_test(test_numeric_bounds),
		cmocka_unit_test(test_numeric_not_a_string),
		cmocka_unit_test(test_parallel_policy),
		cmocka_unit_test(test_template_matches_selector),
		cmocka_unit_test(test_template_alias_bomb),
		cmocka_unit_test(test_template_too_deep),
		cmocka_unit_test(test_template_with_aliases),
		cmocka_unit_test(test_template_flow_yaml_with_brackets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
