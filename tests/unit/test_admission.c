/*
 * The admission webhook's decision on StatefulSet updates: a table of
 * updates and what the API server is told (allowed untouched, allowed with
 * a patch, denied with a message), and the patch applied to the object to
 * show it touches only the templates and the desired-templates annotation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_trust.h"
#include "util/base64.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "webhook/admission.h"
#include "webhook/template_fields.h"
#include "sim.h"

/* ---- fixtures ---- */

/* A template: name, size, then the rest of its spec (text after the resources member, "" for none). */
#define TMPL(name, size, more)                                                                        \
	"{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"" name "\"}," \
	"\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Filesystem\","                      \
	"\"resources\":{\"requests\":{\"storage\":\"" size "\"}}" more "},\"status\":{\"phase\":\"Pending\"}}"
/* A template with labels (a JSON object's text), no status. */
#define LABELLED(name, size, labels) \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":" labels "},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]," \
	"\"volumeMode\":\"Filesystem\",\"resources\":{\"requests\":{\"storage\":\"" size "\"}}}}"
#define DATA_10 "[" TMPL("data", "10Gi", "") "]"
#define FAST ",\"storageClassName\":\"fast\""
#define SLOW ",\"storageClassName\":\"slow\""
#define GOLD ",\"volumeAttributesClassName\":\"gold\""
#define SILVER ",\"volumeAttributesClassName\":\"silver\""
#define WITH_COPY_DENIAL "changes its volumeAttributesClassName in the same update as a change that copies"
#define COPY_AND_SHRINK "{\"stateful-operator.io/resize-strategy\":\"copy\",\"stateful-operator.io/allow-shrink\":\"true\"}"

static const char *CLASSES = "["
	"{\"metadata\":{\"name\":\"fast\",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}},"
	"\"allowVolumeExpansion\":true},"
	"{\"metadata\":{\"name\":\"slow\"},\"allowVolumeExpansion\":false}]";
static const char *ATTRIBUTE_CLASSES = "[{\"metadata\":{\"name\":\"gold\"}},{\"metadata\":{\"name\":\"silver\"}}]";


/* StatefulSet "web" running image, with annotations (JSON object text, NULL: none) and templates (NULL: none). */
static json_t *statefulset(const char *image, const char *annotations, const char *templates)
{
	char *text = xasprintf("{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\","
			       "\"namespace\":\"ns\",\"labels\":{\"app\":\"web\"}%s%s},\"spec\":{\"replicas\":3,"
			       "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"%s\",\"volumeMounts\":["
			       "{\"name\":\"data\",\"mountPath\":\"/data\"},{\"name\":\"db-wal\",\"mountPath\":\"/wal\"},"
			       "{\"name\":\"scratch\",\"mountPath\":\"/tmp\"}]}],\"volumes\":[{\"name\":\"scratch\","
			       "\"emptyDir\":{}}]}}%s%s}}",
			       annotations ? ",\"annotations\":" : "", annotations ? annotations : "", image,
			       templates ? ",\"volumeClaimTemplates\":" : "", templates ? templates : "");
	json_t *s = sim_json(text);
	free(text);
	return s;
}

/* The AdmissionReview of an UPDATE from old to new (both stolen). */
static json_t *review_of(const char *uid, json_t *old, json_t *new)
{
	json_t *r = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:o, s:o, s:b}}", "apiVersion",
			      "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", uid, "kind", "group",
			      "apps", "version", "v1", "kind", "StatefulSet", "operation", "UPDATE", "name", "web",
			      "namespace", "ns", "object", new, "oldObject", old, "dryRun", 0);
	assert_non_null(r);
	return r;
}

struct views {
	json_t *classes, *attribute_classes;
	struct admission_view view;
};

static void views_init(struct views *v)
{
	v->classes = sim_json(CLASSES);
	v->attribute_classes = sim_json(ATTRIBUTE_CLASSES);
	v->view = (struct admission_view){.storage_classes = v->classes, .attributes_classes = v->attribute_classes};
}

static void views_release(struct views *v)
{
	json_decref(v->classes);
	json_decref(v->attribute_classes);
}

/* ---- reading the answer ---- */

static const json_t *response_of(const json_t *answer)
{
	assert_string_equal(kube_obj_str(answer, "apiVersion"), "admission.k8s.io/v1");
	assert_string_equal(kube_obj_str(answer, "kind"), "AdmissionReview");
	const json_t *r = json_object_get(answer, "response");
	assert_true(json_is_object(r));
	return r;
}

/* The decoded patch text of an answer (new string), or NULL when it has none. */
static char *patch_text(const json_t *answer)
{
	const json_t *r = response_of(answer);
	const char *b64 = kube_obj_str(r, "patch");
	if (!b64) {
		assert_null(json_object_get(r, "patchType"));
		return NULL;
	}
	assert_string_equal(kube_obj_str(r, "patchType"), "JSONPatch");
	size_t len;
	char *text = base64_decode(b64, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	return text;
}

/* RFC 6901 reference token, unescaped (new string). */
static char *unescape_token(const char *s, size_t n)
{
	char *out = xmalloc(n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '~') {
			assert_true(i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1'));
			*o++ = s[++i] == '0' ? '~' : '/';
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* A JSON Patch applier for what the webhook may send: add and remove of object members. */
static void apply_patch(json_t *doc, const json_t *patch)
{
	size_t i;
	json_t *op;
	assert_true(json_is_array(patch));
	json_array_foreach(patch, i, op) {
		const char *verb = kube_obj_str(op, "op"), *path = kube_obj_str(op, "path");
		assert_non_null(verb);
		assert_non_null(path);
		assert_int_equal(path[0], '/');
		json_t *parent = doc;
		const char *tok = path + 1;
		const char *slash;
		while ((slash = strchr(tok, '/'))) {
			char *key = unescape_token(tok, (size_t)(slash - tok));
			parent = json_object_get(parent, key);
			if (!json_is_object(parent))
				fail_msg("patch path %s: no object at %s", path, key);
			free(key);
			tok = slash + 1;
		}
		char *key = unescape_token(tok, strlen(tok));
		if (!strcmp(verb, "add")) {
			assert_non_null(json_object_get(op, "value"));
			json_object_set(parent, key, json_object_get(op, "value"));
		} else if (!strcmp(verb, "remove")) {
			if (json_object_del(parent, key) < 0)
				fail_msg("patch removes %s, which is absent", path);
		} else {
			fail_msg("unexpected patch op %s", verb);
		}
		free(key);
	}
}

/* new after the answer's patch (new reference). */
static json_t *patched_object(const json_t *answer, const json_t *new)
{
	char *text = patch_text(answer);
	assert_non_null(text);
	json_t *patch = sim_json(text);
	json_t *obj = json_deep_copy(new);
	apply_patch(obj, patch);
	json_decref(patch);
	free(text);
	return obj;
}

static const char *message_of(const json_t *answer)
{
	return kube_obj_str(response_of(answer), "status.message");
}

static bool warnings_contain(const json_t *answer, const char *needle)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(response_of(answer), "warnings"), i, w) {
		if (json_is_string(w) && strstr(json_string_value(w), needle))
			return true;
	}
	return false;
}

/* ---- the table ---- */

enum outcome { PASS, MUTATE, DENY };

struct update_case {
	const char *what;
	const char *old_templates; /* JSON array text; NULL: the stored set has none */
	const char *new_templates;
	const char *annotations; /* of the applied object; NULL: none */
	enum outcome expect;
	const char *needles[5]; /* DENY: all in the message; MUTATE: each in some warning */
};

static const struct update_case cases[] = {
	{"growth", DATA_10, "[" TMPL("data", "20Gi", "") "]", NULL, MUTATE,
	 {"volumeClaimTemplate data 10Gi -> 20Gi will be resized by the operator", "resize-status"}},
	{"growth written in another unit", DATA_10, "[" TMPL("data", "21474836480", "") "]", NULL, MUTATE,
	 {"10Gi -> 21474836480 will be resized"}},
	{"the same size written in another unit: nothing to do", DATA_10, "[" TMPL("data", "10240Mi", "") "]", NULL,
	 MUTATE, {"kept as stored"}},
	{"the same size in another unit, and labels", DATA_10,
	 "[" LABELLED("data", "10240Mi", "{\"a\":\"b\"}") "]",
	 NULL, MUTATE, {"data 10Gi -> 10240Mi (same size), labels/annotations will be changed"}},
	{"default class named in the class annotation", DATA_10, "[" TMPL("data", "20Gi", "") "]",
	 "{\"storage-class.stateful-operator.io/data\":\"fast\"}", MUTATE, {"data 10Gi -> 20Gi will be resized"}},
	{"size and labels", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\",\"annotations\":{\"backup\":\"daily\"}},\"spec\":{\"accessModes\":"
	 "[\"ReadWriteOnce\"],\"volumeMode\":\"Filesystem\",\"resources\":{\"requests\":{\"storage\":\"20Gi\"}}}}]",
	 NULL, MUTATE, {"data 10Gi -> 20Gi, labels/annotations will be changed"}},
	{"shrink without the annotations", DATA_10, "[" TMPL("data", "5Gi", "") "]", NULL, DENY,
	 {"volumeClaimTemplate \"data\": 10Gi -> 5Gi is a shrink", "stateful-operator.io/resize-strategy: copy",
	  "stateful-operator.io/allow-shrink: \"true\""}},
	{"shrink with allow-shrink but strategy auto", DATA_10, "[" TMPL("data", "5Gi", "") "]",
	 "{\"stateful-operator.io/allow-shrink\":\"true\"}", DENY, {"10Gi -> 5Gi is a shrink"}},
	{"shrink with copy and allow-shrink (added by the same manifest)", DATA_10, "[" TMPL("data", "5Gi", "") "]",
	 "{\"stateful-operator.io/resize-strategy\":\"copy\",\"stateful-operator.io/allow-shrink\":\"true\"}", MUTATE,
	 {"data 10Gi -> 5Gi"}},
	{"size zero", DATA_10, "[" TMPL("data", "0", "") "]", NULL, DENY, {"\"data\"", "size 0 is not above zero"}},
	{"negative size", DATA_10, "[" TMPL("data", "-1Gi", "") "]", NULL, DENY, {"-1Gi", "not above zero"}},
	{"class change", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "10Gi", SLOW) "]", NULL, MUTATE,
	 {"StorageClass fast -> slow", "will be changed by the operator"}},
	{"class set where the default was used", DATA_10, "[" TMPL("data", "10Gi", SLOW) "]", NULL, MUTATE,
	 {"StorageClass (default) -> slow"}},
	{"unknown class", "[" TMPL("data", "10Gi", FAST) "]",
	 "[" TMPL("data", "10Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, DENY,
	 {"\"data\"", "StorageClass \"nvme\" does not exist", "existing: fast, slow"}},
	{"expand with a class change", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "20Gi", SLOW) "]",
	 "{\"stateful-operator.io/resize-strategy\":\"expand\"}", DENY,
	 {"\"data\"", "fast -> slow", "\"expand\"", "use strategy copy or auto"}},
	{"expand on a class that cannot expand", "[" TMPL("data", "10Gi", SLOW) "]",
	 "[" TMPL("data", "20Gi", SLOW) "]", "{\"stateful-operator.io/resize-strategy\":\"expand\"}", DENY,
	 {"\"data\"", "StorageClass slow does not allow volume expansion", "use strategy copy or auto"}},
	{"auto on a class that cannot expand (copies)", "[" TMPL("data", "10Gi", SLOW) "]",
	 "[" TMPL("data", "20Gi", SLOW) "]", NULL, MUTATE, {"10Gi -> 20Gi"}},
	{"expand on the default class, which can", DATA_10, "[" TMPL("data", "20Gi", "") "]",
	 "{\"stateful-operator.io/resize-strategy\":\"expand\"}", MUTATE, {"10Gi -> 20Gi"}},
	{"strategy misspelt", DATA_10, "[" TMPL("data", "20Gi", "") "]",
	 "{\"stateful-operator.io/resize-strategy\":\"expnad\"}", DENY, {"\"expnad\"", "use auto, expand or copy"}},
	{"attributes class change", "[" TMPL("data", "10Gi", ",\"volumeAttributesClassName\":\"silver\"") "]",
	 "[" TMPL("data", "10Gi", ",\"volumeAttributesClassName\":\"gold\"") "]", NULL, MUTATE,
	 {"VolumeAttributesClass silver -> gold"}},
	{"unknown attributes class", DATA_10, "[" TMPL("data", "10Gi", ",\"volumeAttributesClassName\":\"bronze\"") "]",
	 NULL, DENY, {"\"data\"", "VolumeAttributesClass \"bronze\" does not exist", "existing: gold, silver"}},
	/* An attributes class set with a change that copies: the resize controller would refuse it (resize_plan.c). */
	{"attributes class and StorageClass of one template", "[" TMPL("data", "10Gi", FAST SILVER) "]",
	 "[" TMPL("data", "10Gi", SLOW GOLD) "]", NULL, DENY,
	 {"volumeClaimTemplate \"data\" changes its volumeAttributesClassName",
	  "copies the data of volumeClaimTemplate \"data\" (another StorageClass)", "one after the other"}},
	{"attributes class of one template, a shrink of another", "[" TMPL("data", "10Gi", SILVER) "," TMPL("logs", "2Gi", "") "]",
	 "[" TMPL("data", "10Gi", GOLD) "," TMPL("logs", "1Gi", "") "]", COPY_AND_SHRINK, DENY,
	 {"volumeClaimTemplate \"data\" changes", "\"logs\" (a smaller size)", "one after the other"}},
	{"attributes class and growth on a class that cannot expand", "[" TMPL("data", "10Gi", SLOW SILVER) "]",
	 "[" TMPL("data", "20Gi", SLOW GOLD) "]", NULL, DENY,
	 {"\"data\" (growth on a StorageClass that cannot expand)", "one after the other"}},
	{"attributes class and growth under strategy copy", "[" TMPL("data", "10Gi", FAST SILVER) "]",
	 "[" TMPL("data", "20Gi", FAST GOLD) "]", "{\"stateful-operator.io/resize-strategy\":\"copy\"}", DENY,
	 {"\"data\" (resize-strategy copy)"}},
	{"attributes class and a resize annotation that copies another template",
	 "[" TMPL("data", "10Gi", SILVER) "," TMPL("logs", "1Gi", SLOW) "]",
	 "[" TMPL("data", "10Gi", GOLD) "," TMPL("logs", "1Gi", SLOW) "]", "{\"resize.stateful-operator.io/logs\":\"5Gi\"}",
	 DENY, {"\"data\" changes", "\"logs\" (growth on a StorageClass that cannot expand)"}},
	{"attributes class and growth in place: one resize", "[" TMPL("data", "10Gi", SILVER) "]",
	 "[" TMPL("data", "20Gi", GOLD) "]", NULL, MUTATE, {"data 10Gi -> 20Gi, VolumeAttributesClass silver -> gold"}},
	{"attributes class unset with a StorageClass change: the claims' class is not changed", "[" TMPL("data", "10Gi", FAST SILVER) "]",
	 "[" TMPL("data", "10Gi", SLOW) "]", NULL, MUTATE, {"StorageClass fast -> slow, VolumeAttributesClass silver -> (none)"}},
	{"attributes class under strategy copy, nothing else asked: in place", "[" TMPL("data", "10Gi", SILVER) "]",
	 "[" TMPL("data", "10Gi", GOLD) "]", "{\"stateful-operator.io/resize-strategy\":\"copy\"}", MUTATE,
	 {"VolumeAttributesClass silver -> gold"}},
	{"attributes class of one template, a template added: no copy", "[" TMPL("data", "10Gi", SILVER) "]",
	 "[" TMPL("data", "10Gi", GOLD) "," TMPL("logs", "1Gi", SLOW) "]", NULL, MUTATE, {"silver -> gold", "logs will be added"}},
	{"labels only", DATA_10,
	 "[" LABELLED("data", "10Gi", "{\"tier\":\"db\"}") "]",
	 NULL, MUTATE, {"volumeClaimTemplate data labels/annotations will be changed"}},
	{"template added", DATA_10, "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]", NULL, MUTATE,
	 {"volumeClaimTemplate logs will be added"}},
	{"first template added", NULL, DATA_10, NULL, MUTATE, {"volumeClaimTemplate data will be added"}},
	{"template added with a name that is no DNS label", DATA_10,
	 "[" TMPL("data", "10Gi", "") "," TMPL("Logs_1", "1Gi", "") "]", NULL, DENY, {"\"Logs_1\"", "DNS label"}},
	{"template added with an unknown class", DATA_10,
	 "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, DENY,
	 {"\"logs\"", "\"nvme\" does not exist"}},
	{"template removed", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]", DATA_10, NULL, MUTATE,
	 {"volumeClaimTemplate logs will be removed", "claims are kept"}},
	{"template removed while a container still mounts it", "[" TMPL("data", "10Gi", "") "," TMPL("db-wal", "1Gi", "") "]",
	 DATA_10, NULL, DENY, {"\"db-wal\" is removed but container c still mounts it", "remove the volumeMount"}},
	{"template removed, a pod volume of that name stands in", "[" TMPL("data", "10Gi", "") "," TMPL("scratch", "1Gi", "") "]",
	 DATA_10, NULL, MUTATE, {"scratch will be removed"}},
	{"template removed, its resize annotation kept", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 DATA_10, "{\"resize.stateful-operator.io/logs\":\"2Gi\"}", DENY,
	 {"\"logs\" is removed but annotation resize.stateful-operator.io/logs still asks", "remove the annotation"}},
	{"accessModes change", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteMany\"],\"volumeMode\":\"Filesystem\","
	 "\"resources\":{\"requests\":{\"storage\":\"20Gi\"}}}}]",
	 NULL, DENY, {"\"data\"", "spec.accessModes cannot change", "spec.storageClassName", "metadata.labels"}},
	{"limits added", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Filesystem\","
	 "\"resources\":{\"requests\":{\"storage\":\"10Gi\"},\"limits\":{\"storage\":\"20Gi\"}}}}]",
	 NULL, DENY, {"spec.resources.limits cannot change"}},
	{"dataSource and volumeMode changed", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Block\","
	 "\"dataSource\":{\"kind\":\"VolumeSnapshot\",\"name\":\"s\"},\"resources\":{\"requests\":{\"storage\":\"10Gi\"}}}}]",
	 NULL, DENY, {"spec.volumeMode, spec.dataSource cannot change"}},
	{"other metadata", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\",\"finalizers\":[\"x\"]},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
	 "\"volumeMode\":\"Filesystem\",\"resources\":{\"requests\":{\"storage\":\"20Gi\"}}}}]",
	 NULL, DENY, {"metadata.finalizers cannot change"}},
	{"resize annotation disagrees", DATA_10, "[" TMPL("data", "20Gi", "") "]",
	 "{\"resize.stateful-operator.io/data\":\"30Gi\"}", DENY,
	 {"resize.stateful-operator.io/data is \"30Gi\"", "asks for 20Gi", "remove the annotation or make it agree"}},
	{"resize annotation agrees (another unit)", DATA_10, "[" TMPL("data", "20Gi", "") "]",
	 "{\"resize.stateful-operator.io/data\":\"20480Mi\"}", MUTATE, {"10Gi -> 20Gi"}},
	{"class annotation disagrees", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "20Gi", FAST) "]",
	 "{\"storage-class.stateful-operator.io/data\":\"slow\"}", DENY,
	 {"storage-class.stateful-operator.io/data is \"slow\"", "remove the annotation or make it agree"}},
	{"class annotation agrees", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "10Gi", SLOW) "]",
	 "{\"storage-class.stateful-operator.io/data\":\"slow\"}", MUTATE, {"fast -> slow"}},
	{"annotation of a template this update leaves alone", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 "[" TMPL("data", "20Gi", "") "," TMPL("logs", "1Gi", "") "]", "{\"resize.stateful-operator.io/logs\":\"5Gi\"}",
	 MUTATE, {"data 10Gi -> 20Gi"}},
	{"every problem named at once", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 "[" TMPL("data", "5Gi", "") "," TMPL("logs", "1Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, DENY,
	 {"10Gi -> 5Gi is a shrink", "; ", "\"nvme\" does not exist"}},
	{"equal templates", DATA_10, DATA_10, NULL, PASS, {NULL}},
	{"equal but for status and kind", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Filesystem\","
	 "\"resources\":{\"requests\":{\"storage\":\"10Gi\"}}}}]",
	 NULL, MUTATE, {"kept as stored"}},
	{"opt-out annotation ignore", DATA_10, "[" TMPL("data", "20Gi", "") "]",
	 "{\"stateful-operator.io/ignore\":\"true\"}", PASS, {NULL}},
	{"not understood: a template without a name", DATA_10, "[{\"spec\":{}}]", NULL, PASS, {NULL}},
	{"a name twice", DATA_10, "[" TMPL("data", "20Gi", "") "," TMPL("data", "30Gi", "") "]", NULL, DENY,
	 {"\"data\" appears twice"}},
};

/*
 * The same updates as the view of an operator in namespace scope has them:
 * no StorageClasses (a Role cannot grant them). The resize controller then
 * refuses every resize (ResizeStorageClassUnknown), so a new size or class
 * is denied; what it carries out without a resize still passes.
 */
static const struct update_case namespace_cases[] = {
	{"namespace scope: growth", DATA_10, "[" TMPL("data", "20Gi", "") "]", NULL, DENY,
	 {"volumeClaimTemplate \"data\": a new size or StorageClass needs a resize",
	  "runs in namespace scope and cannot read StorageClasses", "cannot resize", "deploy/overlays/cluster",
	  "scope=cluster"},},
	{"namespace scope: class change", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "10Gi", SLOW) "]", NULL,
	 DENY, {"\"data\"", "namespace scope"}},
	{"namespace scope: class set where the default was used", DATA_10, "[" TMPL("data", "10Gi", SLOW) "]", NULL, DENY,
	 {"\"data\"", "namespace scope"}},
	{"namespace scope: shrink with copy and allow-shrink", DATA_10, "[" TMPL("data", "5Gi", "") "]", COPY_AND_SHRINK,
	 DENY, {"\"data\"", "namespace scope"}},
	{"namespace scope: two templates grown, both named", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 "[" TMPL("data", "20Gi", "") "," TMPL("logs", "2Gi", "") "]", NULL, DENY,
	 {"volumeClaimTemplate \"data\", \"logs\": a new size"}},
	{"namespace scope: labels, and a resize annotation on another template", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 "[" LABELLED("data", "10Gi", "{\"tier\":\"db\"}") "," TMPL("logs", "1Gi", "") "]",
	 "{\"resize.stateful-operator.io/logs\":\"5Gi\"}", DENY, {"volumeClaimTemplate \"logs\": a new size"}},
	{"namespace scope: labels only", DATA_10,
	 "[" LABELLED("data", "10Gi", "{\"tier\":\"db\"}") "]",
	 NULL, MUTATE, {"volumeClaimTemplate data labels/annotations will be changed"}},
	{"namespace scope: the same size in another unit, and labels", DATA_10,
	 "[" LABELLED("data", "10240Mi", "{\"a\":\"b\"}") "]",
	 NULL, MUTATE, {"(same size), labels/annotations will be changed"}},
	{"namespace scope: attributes class alone", "[" TMPL("data", "10Gi", SILVER) "]", "[" TMPL("data", "10Gi", GOLD) "]",
	 NULL, MUTATE, {"VolumeAttributesClass silver -> gold"}},
	{"namespace scope: template added on a class not checked", DATA_10,
	 "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, MUTATE,
	 {"volumeClaimTemplate logs will be added"}},
	{"namespace scope: template removed", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]", DATA_10, NULL,
	 MUTATE, {"volumeClaimTemplate logs will be removed"}},
};

static void expect_case(const struct update_case *c, const json_t *answer, const json_t *new,
			const json_t *old)
{
	const json_t *r = response_of(answer);
	bool allowed = json_is_true(json_object_get(r, "allowed"));
	char *patch = patch_text(answer);
	if (c->expect == DENY) {
		if (allowed)
			fail_msg("%s: allowed, want denied", c->what);
		assert_null(patch);
		assert_int_equal(kube_obj_int(r, "status", "code", 0), 422);
		assert_string_equal(kube_obj_str(r, "status.reason"), "Invalid");
		for (int i = 0; i < 5 && c->needles[i]; i++)
			if (!strstr(message_of(answer), c->needles[i]))
				fail_msg("%s: message \"%s\" does not say \"%s\"", c->what, message_of(answer), c->needles[i]);
		return;
	}
	if (!allowed)
		fail_msg("%s: denied (%s), want allowed", c->what, message_of(answer));
	if (c->expect == PASS) {
		if (patch)
			fail_msg("%s: patched (%s), want untouched", c->what, patch);
		assert_null(json_object_get(r, "warnings"));
		return;
	}
	if (!patch)
		fail_msg("%s: untouched, want a patch", c->what);
	free(patch);
	for (int i = 0; i < 5 && c->needles[i]; i++)
		if (!warnings_contain(answer, c->needles[i]))
			fail_msg("%s: no warning says \"%s\"", c->what, c->needles[i]);
	/* The object the API server stores: the stored templates, exactly. */
	json_t *obj = patched_object(answer, new);
	const json_t *kept = json_object_get(json_object_get(obj, "spec"), "volumeClaimTemplates");
	const json_t *stored = json_object_get(json_object_get(old, "spec"), "volumeClaimTemplates");
	if (!(kept == stored || (kept && stored && json_equal(kept, stored))))
		fail_msg("%s: the patched object's templates are not the stored ones", c->what);
	json_decref(obj);
}

static void run_table(const struct update_case *table, size_t n, const struct admission_view *view)
{
	for (size_t i = 0; i < n; i++) {
		const struct update_case *c = &table[i];
		json_t *old = statefulset("app:1", NULL, c->old_templates);
		json_t *new = statefulset("app:1", c->annotations, c->new_templates);
		json_t *review = review_of("uid-1", json_incref(old), json_incref(new));
		json_t *answer = admission_review(review, view);
		assert_non_null(answer);
		expect_case(c, answer, new, old);
		json_decref(answer);
		json_decref(review);
		json_decref(old);
		json_decref(new);
	}
}

static void test_update_table(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	run_table(cases, sizeof(cases) / sizeof(cases[0]), &v.view);
	struct admission_view ns = {.storage_classes = NULL, .attributes_classes = v.attribute_classes};
	run_table(namespace_cases, sizeof(namespace_cases) / sizeof(namespace_cases[0]), &ns);
	views_release(&v);
}

/* The answer to an update from old_templates to new_templates; view NULL: nothing known of the cluster. */
static json_t *answer_update(const char *old_templates, const char *new_templates, const char *annotations,
			     const struct admission_view *view)
{
	json_t *review = review_of("uid-2", statefulset("app:1", NULL, old_templates),
				   statefulset("app:1", annotations, new_templates));
	json_t *answer = admission_review(review, view);
	json_decref(review);
	return answer;
}

/*
 * Without VolumeAttributesClasses, naming one is denied; without
 * StorageClasses known (namespace scope), no resize is possible, and an
 * added template's class goes unchecked.
 */
static void test_what_the_cluster_lacks(void **state)
{
	(void)state;
	struct admission_view none = {.storage_classes = NULL};
	json_t *a = answer_update(DATA_10, "[" TMPL("data", "10Gi", ",\"volumeAttributesClassName\":\"gold\"") "]", NULL,
				  &none);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "this cluster serves no VolumeAttributesClass"));
	json_decref(a);

	a = answer_update(DATA_10, "[" TMPL("data", "20Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, &none);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "namespace scope and cannot read StorageClasses"));
	assert_null(strstr(message_of(a), "does not exist"));
	json_decref(a);

	a = answer_update(DATA_10, "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", ",\"storageClassName\":\"nvme\"") "]",
			  NULL, &none);
	assert_true(json_is_true(json_object_get(response_of(a), "allowed")));
	json_decref(a);

	/* The cluster has classes but no default: a template without a class cannot be resized. */
	json_t *classes = sim_json("[{\"metadata\":{\"name\":\"slow\"}}]");
	struct admission_view no_default = {.storage_classes = classes};
	a = answer_update(DATA_10, "[" TMPL("data", "20Gi", "") "]", NULL, &no_default);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "no default one (existing: slow)"));
	json_decref(a);
	json_decref(classes);
}

/*
 * Namespace scope: no StorageClasses (a Role cannot grant them), but the
 * VolumeAttributesClasses the webhook's ClusterRole grants. Attributes
 * classes are checked; a change that needs a resize (here a copy, with an
 * attributes class) is denied as one the operator cannot make there, and
 * only that is said: fixing the rest would not make it possible.
 */
static void test_namespace_scope(void **state)
{
	(void)state;
	json_t *attributes = sim_json(ATTRIBUTE_CLASSES);
	struct admission_view ns = {.storage_classes = NULL, .attributes_classes = attributes};
	json_t *a = answer_update("[" TMPL("data", "10Gi", SILVER) "]", "[" TMPL("data", "10Gi", GOLD) "]", NULL, &ns);
	assert_true(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_true(warnings_contain(a, "VolumeAttributesClass silver -> gold"));
	json_decref(a);

	a = answer_update(DATA_10, "[" TMPL("data", "10Gi", ",\"volumeAttributesClassName\":\"bronze\"") "]", NULL, &ns);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "VolumeAttributesClass \"bronze\" does not exist (existing: gold, silver)"));
	json_decref(a);

	a = answer_update("[" TMPL("data", "10Gi", FAST SILVER) "]", "[" TMPL("data", "10Gi", SLOW GOLD) "]", NULL, &ns);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "volumeClaimTemplate \"data\": a new size or StorageClass needs a resize"));
	assert_non_null(strstr(message_of(a), "run it with cluster RBAC"));
	assert_null(strstr(message_of(a), WITH_COPY_DENIAL));
	json_decref(a);

	/* Served, but the operator may not list them (no ClusterRole): denied, saying what to grant. */
	struct admission_view unreadable = {.attributes_classes_unreadable = true};
	a = answer_update(DATA_10, "[" TMPL("data", "10Gi", GOLD) "]", NULL, &unreadable);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "may not list VolumeAttributesClasses"));
	assert_non_null(strstr(message_of(a), "stateful-operator-webhook"));
	json_decref(a);
	json_decref(attributes);
}

/* ---- the same judgement as the resize controller ---- */

struct copy_update {
	const char *what;
	const char *old_templates, *new_templates, *annotations;
	bool refused; /* what both must say */
};

static const struct copy_update copy_updates[] = {
	{"attributes class and StorageClass", "[" TMPL("data", "1Gi", FAST SILVER) "]",
	 "[" TMPL("data", "1Gi", SLOW GOLD) "]", NULL, true},
	{"attributes class of one, shrink of another", "[" TMPL("data", "1Gi", SILVER) "," TMPL("logs", "2Gi", "") "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", "") "]", COPY_AND_SHRINK, true},
	{"attributes class and growth on a class that cannot expand", "[" TMPL("data", "1Gi", SLOW SILVER) "]",
	 "[" TMPL("data", "2Gi", SLOW GOLD) "]", NULL, true},
	{"attributes class and growth on the default class, which expands", "[" TMPL("data", "1Gi", SILVER) "]",
	 "[" TMPL("data", "2Gi", GOLD) "]", NULL, false},
	{"attributes class and growth under strategy copy", "[" TMPL("data", "1Gi", FAST SILVER) "]",
	 "[" TMPL("data", "2Gi", FAST GOLD) "]", "{\"stateful-operator.io/resize-strategy\":\"copy\"}", true},
	{"attributes class under strategy copy, nothing else", "[" TMPL("data", "1Gi", SILVER) "]",
	 "[" TMPL("data", "1Gi", GOLD) "]", "{\"stateful-operator.io/resize-strategy\":\"copy\"}", false},
	{"attributes class unset with a StorageClass change", "[" TMPL("data", "1Gi", FAST SILVER) "]",
	 "[" TMPL("data", "1Gi", SLOW) "]", NULL, false},
	{"attributes class set where there was none, growth of another on slow",
	 "[" TMPL("data", "1Gi", "") "," TMPL("logs", "1Gi", SLOW) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "3Gi", SLOW) "]", NULL, true},
	{"attributes class, and a resize annotation growing another on slow",
	 "[" TMPL("data", "1Gi", SILVER) "," TMPL("logs", "1Gi", SLOW) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", SLOW) "]", "{\"resize.stateful-operator.io/logs\":\"5Gi\"}",
	 true},
	{"attributes class, and a class annotation on another", "[" TMPL("data", "1Gi", SILVER) "," TMPL("logs", "1Gi", FAST) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", FAST) "]",
	 "{\"storage-class.stateful-operator.io/logs\":\"slow\"}", true},
	{"attributes class of one, a template added on slow", "[" TMPL("data", "1Gi", SILVER) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", SLOW) "]", NULL, false},
	{"StorageClass change alone", "[" TMPL("data", "1Gi", FAST) "]", "[" TMPL("data", "1Gi", SLOW) "]", NULL, false},
};

/* ---- one judgement: the webhook on an update, the controller on the annotation written by hand ---- */

/* 64 characters: one more than a DNS label may have. */
#define LONG_NAME "a123456789b123456789c123456789d123456789e123456789f123456789abcd"
/* Stands for ADMISSION_MAX_TEMPLATES + 1 templates, built at run time. */
#define MANY "many"

struct judged_case {
	const char *what;
	const char *old_templates, *new_templates, *annotations;
	bool denied;        /* what both must say */
	const char *needle; /* denied: in the webhook's message */
	bool by_hand_only;  /* what the webhook records drops it: only a hand-written annotation asks it */
};

static const struct judged_case judged_cases[] = {
	{"a good resize", DATA_10, "[" TMPL("data", "20Gi", "") "]", NULL, false, NULL, false},
	{"a class change", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "10Gi", SLOW) "]", NULL, false, NULL, false},
	{"a template added", DATA_10, "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]", NULL, false, NULL, false},
	{"a template removed that no container mounts", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 DATA_10, NULL, false, NULL, false},
	{"labels only", DATA_10, "[" LABELLED("data", "10Gi", "{\"tier\":\"db\"}") "]", NULL, false, NULL, false},
	{"a shrink with copy and allow-shrink", DATA_10, "[" TMPL("data", "5Gi", "") "]", COPY_AND_SHRINK, false, NULL, false},
	{"a name that is no DNS label", DATA_10, "[" TMPL("data", "10Gi", "") "," TMPL("Data_1", "1Gi", "") "]", NULL,
	 true, "volumeClaimTemplate name \"Data_1\" is not a DNS label", false},
	{"a name too long", DATA_10, "[" TMPL("data", "10Gi", "") "," TMPL(LONG_NAME, "1Gi", "") "]", NULL, true,
	 "\"" LONG_NAME "\" is not a DNS label", false},
	{"a template removed while a container mounts it",
	 "[" TMPL("data", "10Gi", "") "," TMPL("db-wal", "1Gi", "") "]", DATA_10, NULL, true,
	 "\"db-wal\" is removed but container c still mounts it", false},
	{"an unchangeable field changed", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteMany\"],\"volumeMode\":\"Filesystem\","
	 "\"resources\":{\"requests\":{\"storage\":\"10Gi\"}}}}]",
	 NULL, true, "spec.accessModes cannot change", false},
	{"limits added", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Filesystem\","
	 "\"resources\":{\"requests\":{\"storage\":\"10Gi\"},\"limits\":{\"storage\":\"20Gi\"}}}}]",
	 NULL, true, "spec.resources.limits cannot change", false},
	{"other metadata changed", DATA_10,
	 "[{\"metadata\":{\"name\":\"data\",\"finalizers\":[\"x\"]},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
	 "\"volumeMode\":\"Filesystem\",\"resources\":{\"requests\":{\"storage\":\"20Gi\"}}}}]",
	 NULL, true, "metadata.finalizers cannot change", true},
	{"a name twice", DATA_10, "[" TMPL("data", "20Gi", "") "," TMPL("data", "30Gi", "") "]", NULL, true,
	 "\"data\" appears twice", false},
	{"too many templates", DATA_10, MANY, NULL, true, "the operator changes at most 16", false},
	{"a shrink without copy and allow-shrink", DATA_10, "[" TMPL("data", "5Gi", "") "]", NULL, true,
	 "10Gi -> 5Gi is a shrink", false},
	{"size zero", DATA_10, "[" TMPL("data", "0", "") "]", NULL, true, "size 0 is not above zero", false},
	{"an unknown StorageClass", "[" TMPL("data", "10Gi", FAST) "]",
	 "[" TMPL("data", "10Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, true,
	 "StorageClass \"nvme\" does not exist", false},
	{"a template added in an unknown StorageClass", DATA_10,
	 "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", ",\"storageClassName\":\"nvme\"") "]", NULL, true,
	 "\"logs\": StorageClass \"nvme\" does not exist", false},
	{"expand with a class change", "[" TMPL("data", "10Gi", FAST) "]", "[" TMPL("data", "20Gi", SLOW) "]",
	 "{\"stateful-operator.io/resize-strategy\":\"expand\"}", true, "use strategy copy or auto", false},
	{"an attributes class with a change that copies", "[" TMPL("data", "10Gi", FAST SILVER) "]",
	 "[" TMPL("data", "10Gi", SLOW GOLD) "]", NULL, true, WITH_COPY_DENIAL, false},
	{"a template removed, its resize annotation kept", "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]",
	 DATA_10, "{\"resize.stateful-operator.io/logs\":\"2Gi\"}", true,
	 "\"logs\" is removed but annotation resize.stateful-operator.io/logs still asks", false},
};

/* ADMISSION_MAX_TEMPLATES + 1 templates v0, v1...: a new string. */
static char *many_templates(void)
{
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i <= ADMISSION_MAX_TEMPLATES; i++)
		strbuf_appendf(&sb, "%s{\"metadata\":{\"name\":\"v%d\"},\"spec\":{\"resources\":{\"requests\":"
				    "{\"storage\":\"1Gi\"}}}}", i ? "," : "[", i);
	strbuf_appendf(&sb, "]");
	return strbuf_detach(&sb);
}

/* templates (JSON text) as the webhook records them: a new string. */
static char *recorded_form(const char *templates)
{
	json_t *list = sim_json(templates);
	char *text = template_desired_text(list);
	json_decref(list);
	return text;
}

/* The resize controller's first step on the stored set (old templates) annotated with desired: into *a. */
static void controller_plan(const char *annotations, const char *old_templates, const char *desired,
			    const json_t *classes, struct action *a)
{
	json_t *sts = statefulset("app:1", annotations ? annotations : "{}", old_templates);
	json_object_set_new(json_object_get(json_object_get(sts, "metadata"), "annotations"),
			    ANNOTATION_DESIRED_TEMPLATES, json_string(desired));
	json_t *none = json_array();
	struct resize_inputs in = {.sts = sts, .pvcs = none, .pods = none, .storage_classes = classes, .pvs = none,
				   .jobs = none};
	action_init(a);
	resize_plan(&in, 1795262400000LL, a);
	json_decref(none);
	json_decref(sts);
}

/*
 * The controller given desired (as the webhook records it, or as written
 * by hand) agrees with the webhook's answer: both allow (the controller
 * starts, or has nothing to do), or both refuse with the same message (a
 * Warning that changes nothing, and the resize-status says it).
 */
static void expect_controller_agrees(const char *what, const char *annotations, const char *old_templates,
				     const char *desired, const json_t *answer, const json_t *classes)
{
	bool denied = !json_is_true(json_object_get(response_of(answer), "allowed"));
	const char *msg = message_of(answer);
	struct action a;
	controller_plan(annotations, old_templates, desired, classes, &a);
	bool refused = a.verb == ACTION_REFUSE;
	if (refused != denied)
		fail_msg("%s: the webhook %s (%s), the controller %s (%s: %s)", what, denied ? "denies" : "allows",
			 msg ? msg : "-", refused ? "refuses" : "starts", a.event_reason ? a.event_reason : "-",
			 a.event_message ? a.event_message : "-");
	if (denied) {
		if (strcmp(a.event_type, "Warning") || strcmp(a.event_reason, "ResizeInvalidTemplates") ||
		    !strstr(a.event_message, msg))
			fail_msg("%s: the controller's %s %s says \"%s\", not the webhook's \"%s\"", what, a.event_type,
				 a.event_reason, a.event_message, msg);
		if (!a.status || !strstr(a.status, msg))
			fail_msg("%s: resize-status \"%s\" does not say \"%s\"", what, a.status ? a.status : "-", msg);
		assert_null(a.state);
	}
	action_release(&a);
}

/* expect_controller_agrees with new_templates recorded by the webhook, then written by hand as they are. */
static void expect_both_forms_agree(const char *what, const char *annotations, const char *old_templates,
				    const char *new_templates, const json_t *answer, const json_t *classes)
{
	char *recorded = recorded_form(new_templates);
	char *label = xasprintf("%s (as recorded)", what);
	expect_controller_agrees(label, annotations, old_templates, recorded, answer, classes);
	free(label);
	label = xasprintf("%s (written by hand)", what);
	expect_controller_agrees(label, annotations, old_templates, new_templates, answer, classes);
	free(label);
	free(recorded);
}

static void test_desired_templates_judged_alike(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	char *many = many_templates();
	for (size_t i = 0; i < sizeof(judged_cases) / sizeof(judged_cases[0]); i++) {
		const struct judged_case *c = &judged_cases[i];
		const char *new_templates = strcmp(c->new_templates, MANY) ? c->new_templates : many;
		json_t *answer = answer_update(c->old_templates, new_templates, c->annotations, &v.view);
		bool denied = !json_is_true(json_object_get(response_of(answer), "allowed"));
		const char *msg = message_of(answer);
		if (denied != c->denied || (denied && !strstr(msg, c->needle)))
			fail_msg("%s: the webhook %s (%s); want %s saying \"%s\"", c->what, denied ? "denies" : "allows",
				 msg ? msg : "-", c->denied ? "denied" : "allowed", c->needle ? c->needle : "");
		if (c->by_hand_only)
			expect_controller_agrees(c->what, c->annotations, c->old_templates, new_templates, answer,
						 v.classes);
		else
			expect_both_forms_agree(c->what, c->annotations, c->old_templates, new_templates, answer,
						v.classes);
		json_decref(answer);
	}
	free(many);
	views_release(&v);
}

/*
 * Namespace scope: the controller, without StorageClasses, judges the
 * desired templates as the webhook there does (a new size or class is
 * refused, saying why); what the webhook allows, the controller starts.
 */
static void test_namespace_scope_as_the_controller_judges(void **state)
{
	(void)state;
	json_t *attributes = sim_json(ATTRIBUTE_CLASSES);
	struct admission_view ns = {.storage_classes = NULL, .attributes_classes = attributes};
	for (size_t i = 0; i < sizeof(namespace_cases) / sizeof(namespace_cases[0]); i++) {
		const struct update_case *c = &namespace_cases[i];
		json_t *a = answer_update(c->old_templates, c->new_templates, c->annotations, &ns);
		expect_both_forms_agree(c->what, c->annotations, c->old_templates, c->new_templates, a, NULL);
		json_decref(a);
	}
	json_decref(attributes);
}

/*
 * An attributes class change with a copy: the webhook denies it exactly
 * when the copy would come with it (either changing its condition alone
 * fails), and the controller, given it recorded, refuses it alike.
 */
static void test_attributes_class_with_a_copy_as_the_controller_judges(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	for (size_t i = 0; i < sizeof(copy_updates) / sizeof(copy_updates[0]); i++) {
		const struct copy_update *u = &copy_updates[i];
		json_t *a = answer_update(u->old_templates, u->new_templates, u->annotations, &v.view);
		const char *msg = message_of(a);
		bool webhook = !json_is_true(json_object_get(response_of(a), "allowed")) && msg &&
			       strstr(msg, WITH_COPY_DENIAL);
		if (webhook != u->refused)
			fail_msg("%s: webhook %s; want %s", u->what, webhook ? "denies" : "allows",
				 u->refused ? "denied" : "allowed");
		expect_both_forms_agree(u->what, u->annotations, u->old_templates, u->new_templates, a, v.classes);
		json_decref(a);
	}
	views_release(&v);
}

/* More than ADMISSION_MAX_TEMPLATES templates: refused, naming the limit. */
static void test_too_many_templates(void **state)
{
	(void)state;
	char buf[4096] = "[";
	for (int i = 0; i <= ADMISSION_MAX_TEMPLATES; i++) {
		char one[256];
		snprintf(one, sizeof(one), "%s{\"metadata\":{\"name\":\"v%d\"},\"spec\":{\"resources\":{\"requests\":"
			 "{\"storage\":\"1Gi\"}}}}", i ? "," : "", i);
		strcat(buf, one);
	}
	strcat(buf, "]");
	struct views v;
	views_init(&v);
	json_t *a = answer_update(DATA_10, buf, NULL, &v.view);
	assert_false(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_non_null(strstr(message_of(a), "at most 16"));
	json_decref(a);
	views_release(&v);
}

/*
 * The image changes along with a template: the patch has exactly two ops,
 * on the templates and the annotation, and the image goes through.
 */
static void test_image_and_template_change(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	json_t *old = statefulset("app:1", "{\"team\":\"a\"}", DATA_10);
	json_t *new = statefulset("app:2", "{\"team\":\"a\"}", "[" TMPL("data", "20Gi", "") "]");
	json_t *review = review_of("uid-3", json_incref(old), json_incref(new));
	json_t *answer = admission_review(review, &v.view);

	char *text = patch_text(answer);
	json_t *patch = sim_json(text);
	assert_int_equal(json_array_size(patch), 2);
	assert_string_equal(kube_obj_str(json_array_get(patch, 0), "op"), "add");
	assert_string_equal(kube_obj_str(json_array_get(patch, 0), "path"), "/spec/volumeClaimTemplates");
	assert_string_equal(kube_obj_str(json_array_get(patch, 1), "op"), "add");
	assert_string_equal(kube_obj_str(json_array_get(patch, 1), "path"),
			    "/metadata/annotations/stateful-operator.io~1desired-volume-claim-templates");

	json_t *obj = patched_object(answer, new);
	/* What the API server stores is the applied object with two differences. */
	json_t *want = json_deep_copy(new);
	json_object_set(json_object_get(want, "spec"), "volumeClaimTemplates",
			json_object_get(json_object_get(old, "spec"), "volumeClaimTemplates"));
	const char *desired = kube_obj_annotation(obj, ANNOTATION_DESIRED_TEMPLATES);
	assert_non_null(desired);
	json_object_set_new(json_object_get(json_object_get(want, "metadata"), "annotations"),
			    ANNOTATION_DESIRED_TEMPLATES, json_string(desired));
	assert_true(json_equal(obj, want));
	const json_t *containers = json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec");
	containers = json_object_get(containers, "containers");
	assert_string_equal(kube_obj_str(json_array_get(containers, 0), "image"), "app:2");
	json_decref(want);
	json_decref(obj);
	json_decref(patch);
	free(text);
	json_decref(answer);
	json_decref(review);
	json_decref(old);
	json_decref(new);
	views_release(&v);
}

/*
 * The desired-templates annotation: the applied templates in their order,
 * each reduced to metadata name/labels/annotations and spec, keys sorted,
 * compact; the same manifest applied again gives the same bytes.
 */
static void test_desired_text_is_stable(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	const char *applied = "[" TMPL("logs", "2Gi", "") ","
			      "{\"metadata\":{\"name\":\"data\",\"labels\":{},\"annotations\":{\"b\":\"2\",\"a\":\"1\"},"
			      "\"creationTimestamp\":null},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"20Gi\"}},"
			      "\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Filesystem\"},\"status\":{\"phase\":\"Pending\"}}]";
	json_t *a1 = answer_update("[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]", applied, NULL, &v.view);
	json_t *old = statefulset("app:1", NULL, "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]");
	json_t *new = statefulset("app:9", NULL, applied);
	json_t *review = review_of("another-uid", old, json_incref(new));
	json_t *a2 = admission_review(review, &v.view);

	char *p1 = patch_text(a1), *p2 = patch_text(a2);
	assert_string_equal(p1, p2);
	json_t *obj = patched_object(a2, new);
	assert_string_equal(kube_obj_annotation(obj, ANNOTATION_DESIRED_TEMPLATES),
			    "[{\"metadata\":{\"name\":\"logs\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
			    "\"resources\":{\"requests\":{\"storage\":\"2Gi\"}},\"volumeMode\":\"Filesystem\"}},"
			    "{\"metadata\":{\"annotations\":{\"a\":\"1\",\"b\":\"2\"},\"name\":\"data\"},"
			    "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"20Gi\"}},"
			    "\"volumeMode\":\"Filesystem\"}}]");
	/* The object had no annotations: the patch adds the whole map. */
	assert_int_equal(json_object_size(kube_obj_annotations(obj)), 1);
	assert_non_null(strstr(p1, "\"path\":\"/metadata/annotations\""));

	/* Re-applied once recorded (the stored object now carries it): the same patch, the same annotation. */
	json_t *stored = statefulset("app:1", NULL, "[" TMPL("data", "10Gi", "") "," TMPL("logs", "1Gi", "") "]");
	json_object_set_new(json_object_get(stored, "metadata"), "annotations",
			    json_pack("{s:s}", ANNOTATION_DESIRED_TEMPLATES,
				      kube_obj_annotation(obj, ANNOTATION_DESIRED_TEMPLATES)));
	json_t *again = json_deep_copy(new);
	json_object_set(json_object_get(again, "metadata"), "annotations",
			json_object_get(json_object_get(stored, "metadata"), "annotations"));
	json_t *review3 = review_of("third", stored, json_incref(again));
	json_t *a3 = admission_review(review3, &v.view);
	json_t *obj3 = patched_object(a3, again);
	assert_string_equal(kube_obj_annotation(obj3, ANNOTATION_DESIRED_TEMPLATES),
			    kube_obj_annotation(obj, ANNOTATION_DESIRED_TEMPLATES));

	json_decref(obj3);
	json_decref(a3);
	json_decref(review3);
	json_decref(again);
	json_decref(obj);
	free(p1);
	free(p2);
	json_decref(a1);
	json_decref(a2);
	json_decref(review);
	json_decref(new);
	views_release(&v);
}

/* The first template of a set that had none: the patch removes the field again. */
static void test_first_template_removed_again(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	json_t *a = answer_update(NULL, DATA_10, "{}", &v.view);
	char *text = patch_text(a);
	json_t *patch = sim_json(text);
	assert_string_equal(kube_obj_str(json_array_get(patch, 0), "op"), "remove");
	assert_string_equal(kube_obj_str(json_array_get(patch, 0), "path"), "/spec/volumeClaimTemplates");
	json_decref(patch);
	free(text);
	json_decref(a);
	views_release(&v);
}

/* The uid is echoed; a dry run gets the same answer as the real update. */
static void test_uid_and_dry_run(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	json_t *review = review_of("5f3c-uid", statefulset("app:1", NULL, DATA_10),
				   statefulset("app:1", NULL, "[" TMPL("data", "20Gi", "") "]"));
	json_t *wet = admission_review(review, &v.view);
	json_object_set_new(json_object_get(review, "request"), "dryRun", json_true());
	json_t *dry = admission_review(review, &v.view);
	assert_string_equal(kube_obj_str(response_of(wet), "uid"), "5f3c-uid");
	assert_true(json_equal(wet, dry));
	json_decref(wet);
	json_decref(dry);

	/* Denials and untouched answers echo it too. */
	json_object_set_new(json_object_get(json_object_get(json_object_get(review, "request"), "object"), "metadata"),
			    "labels", json_pack("{s:s}", LABEL_WEBHOOK, WEBHOOK_DISABLED));
	json_t *out = admission_review(review, &v.view);
	assert_string_equal(kube_obj_str(response_of(out), "uid"), "5f3c-uid");
	assert_true(json_is_true(json_object_get(response_of(out), "allowed")));
	char *patch = patch_text(out);
	assert_null(patch);
	json_decref(out);
	json_decref(review);
	views_release(&v);
}

/* What is not a StatefulSet template update passes untouched, whatever the templates say. */
static void test_passes_untouched(void **state)
{
	(void)state;
	struct views v;
	views_init(&v);
	const char *edits[][2] = {
		{"operation", "CREATE"}, {"kind.kind", "Deployment"}, {"kind.group", ""}, {"subResource", "scale"},
		{"label", WEBHOOK_DISABLED},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		/* A shrink: denied if the webhook looked at it. */
		json_t *review = review_of("u", statefulset("app:1", NULL, DATA_10),
					   statefulset("app:1", NULL, "[" TMPL("data", "1Gi", "") "]"));
		json_t *req = json_object_get(review, "request");
		if (!strcmp(edits[i][0], "operation") || !strcmp(edits[i][0], "subResource"))
			json_object_set_new(req, edits[i][0], json_string(edits[i][1]));
		else if (!strcmp(edits[i][0], "label"))
			json_object_set_new(json_object_get(json_object_get(req, "object"), "metadata"), "labels",
					    json_pack("{s:s}", LABEL_WEBHOOK, edits[i][1]));
		else
			json_object_set_new(json_object_get(req, "kind"), edits[i][0] + 5, json_string(edits[i][1]));
		json_t *a = admission_review(review, &v.view);
		if (!json_is_true(json_object_get(response_of(a), "allowed")))
			fail_msg("%s=%s: denied", edits[i][0], edits[i][1]);
		char *patch = patch_text(a);
		if (patch)
			fail_msg("%s=%s: patched %s", edits[i][0], edits[i][1], patch);
		json_decref(a);
		json_decref(review);
	}
	views_release(&v);
}

/* A body that is no AdmissionReview v1 gets a 400 answer, never a crash. */
static void test_not_a_review(void **state)
{
	(void)state;
	const char *bodies[] = {
		"[]", "{}", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":{\"uid\":\"x\"}}",
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":7}}",
		"{\"apiVersion\":\"v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"x\"}}",
	};
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		json_t *body = sim_json(bodies[i]);
		json_t *a = admission_review(body, NULL);
		const json_t *r = response_of(a);
		if (json_is_true(json_object_get(r, "allowed")) || kube_obj_int(r, "status", "code", 0) != 400)
			fail_msg("%s: not answered with 400", bodies[i]);
		json_decref(a);
		json_decref(body);
	}
	json_t *a = admission_review(NULL, NULL);
	assert_int_equal(kube_obj_int(response_of(a), "status", "code", 0), 400);
	json_decref(a);

	/* A review whose objects are missing is understood enough to let through. */
	json_t *body = sim_json("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
			     "{\"uid\":\"x\",\"operation\":\"UPDATE\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\","
			     "\"kind\":\"StatefulSet\"}}}");
	a = admission_review(body, NULL);
	assert_true(json_is_true(json_object_get(response_of(a), "allowed")));
	assert_string_equal(kube_obj_str(response_of(a), "uid"), "x");
	json_decref(a);
	json_decref(body);
}

/* Odd shapes (the caller's JSON is anything the network sent): an answer every time, never a crash. */
static void test_odd_shapes(void **state)
{
	(void)state;
	const char *templates[] = {
		"{}", "null", "[1]", "[{\"metadata\":null}]", "[{\"metadata\":{\"name\":7}}]",
		"[{\"metadata\":{\"name\":\"data\",\"labels\":\"x\"},\"spec\":\"s\"}]",
		"[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":20}}}}]",
		"[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":[]}}]",
		"[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"storageClassName\":null,\"resources\":{\"requests\":"
		"{\"storage\":\"1Gi\"}}}}]",
	};
	json_t *classes = sim_json("[1, {\"metadata\":7}, {\"metadata\":{\"name\":\"fast\"}}]");
	struct admission_view odd = {.storage_classes = classes, .attributes_classes = classes};
	for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]); i++) {
		for (int old_side = 0; old_side < 2; old_side++) {
			json_t *a = answer_update(old_side ? templates[i] : DATA_10, old_side ? DATA_10 : templates[i],
						  "{\"stateful-operator.io/resize-strategy\":\"expand\"}", &odd);
			const json_t *r = response_of(a);
			assert_true(json_is_boolean(json_object_get(r, "allowed")));
			assert_string_equal(kube_obj_str(r, "uid"), "uid-2");
			free(patch_text(a));
			json_decref(a);
		}
	}
	json_decref(classes);
}

/* The manifest and the test registration read this one text: it must keep its has() guards. */
static void test_match_condition(void **state)
{
	(void)state;
	assert_non_null(strstr(ADMISSION_MATCH_CONDITION, "has(object.spec.volumeClaimTemplates)"));
	assert_non_null(strstr(ADMISSION_MATCH_CONDITION, "has(oldObject.spec.volumeClaimTemplates)"));
}

/* ---- the create guard ---- */

#define OPERATOR "system:serviceaccount:stateful-operator-system:stateful-operator"
#define BACKUP_UID "uid-cm-1"

struct guard {
	struct state_seal *seal;
	json_t *backup; /* ConfigMap web-sts-backup, as the cache holds it */
	int asked;
	struct admission_view view;
};

/* admission_view.saved_copy: the fixture's backup for ns/web. */
static json_t *saved_copy_of_web(void *ctx, const char *ns, const char *name)
{
	struct guard *g = ctx;
	g->asked++;
	return !strcmp(ns, "ns") && !strcmp(name, "web") ? json_incref(g->backup) : NULL;
}

/* The backup of ns/web as Save leaves it: the saved set and its state, sealed for the ConfigMap itself. */
static json_t *sealed_backup(const struct state_seal *s, const char *uid)
{
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:s}}", "apiVersion", "v1",
			       "kind", "ConfigMap", "metadata", "namespace", "ns", "name", "web" BACKUP_SUFFIX, "uid", uid,
			       "resourceVersion", "7", "labels", LABEL_SAVED_STATEFULSET, "web", "annotations",
			       ANNOTATION_RESIZE_STATE, "{\"phase\":\"Copying\"}", "data", BACKUP_KEY,
			       "{\"kind\":\"StatefulSet\"}");
	struct state_seal_scope own = {"ns", "web", STATE_SEAL_OBJECT, uid};
	resize_trust_seal_backup(s, cm, &own);
	return cm;
}

static void guard_init(struct guard *g)
{
	unsigned char key[STATE_SEAL_KEY_BYTES];
	memset(key, 5, sizeof(key));
	g->seal = state_seal_new(key);
	g->backup = sealed_backup(g->seal, BACKUP_UID);
	g->asked = 0;
	g->view = (struct admission_view){.saved_copy = saved_copy_of_web,
					  .saved_copy_ctx = g,
					  .seal = g->seal,
					  .operator_user = OPERATOR};
}

static void guard_release(struct guard *g)
{
	json_decref(g->backup);
	state_seal_free(g->seal);
}

/* The AdmissionReview of a CREATE of obj (stolen) by user. */
static json_t *create_review(json_t *obj, const char *user)
{
	json_t *r = review_of("c-1", json_null(), obj);
	json_t *req = json_object_get(r, "request");
	json_object_set_new(req, "operation", json_string("CREATE"));
	json_object_set_new(req, "userInfo", json_pack("{s:s, s:[s]}", "username", user, "groups", "system:authenticated"));
	json_object_del(req, "oldObject");
	return r;
}

/* Set web carrying resize state text, sealed (when bond >= 0) as bond to uid. New object. */
static json_t *set_with_state(const struct state_seal *s, int bond, const char *uid)
{
	json_t *sts = statefulset("db:2", "{\"stateful-operator.io/resize-state\":\"{\\\"phase\\\":\\\"Copying\\\"}\"}",
				  DATA_10);
	if (bond >= 0) {
		struct state_seal_scope scope = {"ns", "web", (enum state_seal_bond)bond, uid};
		state_seal_annotate(s, json_object_get(json_object_get(sts, "metadata"), "annotations"), &scope,
				    ANNOTATION_RESIZE_STATE);
	}
	return sts;
}

/* The guard's answer to a create of sts (stolen) by user: true when allowed. *answer: a new reference. */
static bool guard_allows(struct guard *g, json_t *sts, const char *user, json_t **answer)
{
	json_t *review = create_review(sts, user);
	json_t *a = admission_review(review, &g->view);
	json_decref(review);
	bool ok = json_is_true(json_object_get(response_of(a), "allowed"));
	if (!ok) {
		assert_int_equal(json_integer_value(json_object_get(json_object_get(response_of(a), "status"), "code")),
				 409);
		assert_non_null(strstr(message_of(a), "re-creates it in a moment"));
		assert_non_null(strstr(message_of(a), "web-sts-backup"));
	} else {
		assert_null(json_object_get(response_of(a), "patch"));
	}
	if (answer)
		*answer = a;
	else
		json_decref(a);
	return ok;
}

/* A StatefulSet a resize has deleted: only the operator's own re-create gets through. */
static void test_create_while_a_resize_recreates_the_set(void **state)
{
	(void)state;
	struct guard g;
	guard_init(&g);
	/* A GitOps tool healing the "missing" set. */
	assert_false(guard_allows(&g, statefulset("db:2", NULL, DATA_10), "argocd", NULL));
	assert_int_equal(g.asked, 1);
	/* The operator's own: its identity, its state sealed for a re-create from this very copy. */
	assert_true(guard_allows(&g, set_with_state(g.seal, STATE_SEAL_RECREATED_FROM, BACKUP_UID), OPERATOR, NULL));
	/* Another set, no saved copy: created as usual, untouched. */
	json_t *other = statefulset("db:2", NULL, DATA_10);
	json_object_set_new(json_object_get(other, "metadata"), "name", json_string("db"));
	assert_true(guard_allows(&g, other, "argocd", NULL));
	/* Opted out: never refused. */
	json_t *out = statefulset("db:2", NULL, DATA_10);
	json_object_set_new(json_object_get(json_object_get(out, "metadata"), "labels"), LABEL_WEBHOOK,
			    json_string(WEBHOOK_DISABLED));
	assert_true(guard_allows(&g, out, "argocd", NULL));
	guard_release(&g);
}

/*
 * Finding 7: the resize-state text alone, or the operator's sealed state
 * copied by another user, is no pass; nor a state sealed for anything but a
 * re-create from this copy.
 */
static void test_create_guard_checks_the_seal_and_the_requester(void **state)
{
	(void)state;
	struct guard g;
	guard_init(&g);
	/* Any state text, no seal: the old guard let it through from anyone. */
	assert_false(guard_allows(&g, set_with_state(g.seal, -1, NULL), "jane", NULL));
	assert_false(guard_allows(&g, set_with_state(g.seal, -1, NULL), OPERATOR, NULL));
	/* The operator's re-create, copied by another user (sealed right, sent by the wrong one). */
	assert_false(guard_allows(&g, set_with_state(g.seal, STATE_SEAL_RECREATED_FROM, BACKUP_UID), "jane", NULL));
	/* Sealed for a re-create from another copy, or as the set before it was deleted: no. */
	assert_false(guard_allows(&g, set_with_state(g.seal, STATE_SEAL_RECREATED_FROM, "uid-cm-0"), OPERATOR, NULL));
	assert_false(guard_allows(&g, set_with_state(g.seal, STATE_SEAL_OBJECT, "uid-set-1"), OPERATOR, NULL));
	/* The operator's identity not known: the seal alone decides. */
	g.view.operator_user = NULL;
	assert_true(guard_allows(&g, set_with_state(g.seal, STATE_SEAL_RECREATED_FROM, BACKUP_UID), "jane", NULL));
	assert_false(guard_allows(&g, set_with_state(g.seal, -1, NULL), "jane", NULL));
	guard_release(&g);
}

/*
 * Finding 7: a ConfigMap of the saved copy's name that the operator did not
 * seal (anyone who may create ConfigMaps can make one) holds no create
 * back: allowed, with a warning that says why.
 */
static void test_forged_saved_copy_blocks_nothing(void **state)
{
	(void)state;
	struct guard g;
	guard_init(&g);
	json_t *seals[] = {
		/* No seal at all. */
		json_pack("{s:{s:s, s:s, s:s, s:{s:s}}, s:{s:s}}", "metadata", "namespace", "ns", "name",
			  "web" BACKUP_SUFFIX, "uid", "uid-cm-9", "labels", LABEL_SAVED_STATEFULSET, "web", "data",
			  BACKUP_KEY, "{}"),
		/* A real copy's content, in another ConfigMap (another UID). */
		json_deep_copy(g.backup),
		/* Sealed with another key. */
		NULL,
	};
	json_object_set_new(json_object_get(seals[1], "metadata"), "uid", json_string("uid-cm-2"));
	unsigned char other[STATE_SEAL_KEY_BYTES];
	memset(other, 6, sizeof(other));
	struct state_seal *wrong = state_seal_new(other);
	seals[2] = sealed_backup(wrong, BACKUP_UID);
	for (size_t i = 0; i < sizeof(seals) / sizeof(seals[0]); i++) {
		json_decref(g.backup);
		g.backup = seals[i];
		json_t *a = NULL;
		assert_true(guard_allows(&g, statefulset("db:2", NULL, DATA_10), "jane", &a));
		assert_true(warnings_contain(a, "does not carry the operator's seal"));
		json_decref(a);
	}
	state_seal_free(wrong);
	guard_release(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_table),
		cmocka_unit_test(test_what_the_cluster_lacks),
		cmocka_unit_test(test_namespace_scope),
		cmocka_unit_test(test_namespace_scope_as_the_controller_judges),
		cmocka_unit_test(test_attributes_class_with_a_copy_as_the_controller_judges),
		cmocka_unit_test(test_desired_templates_judged_alike),
		cmocka_unit_test(test_too_many_templates),
		cmocka_unit_test(test_image_and_template_change),
		cmocka_unit_test(test_desired_text_is_stable),
		cmocka_unit_test(test_first_template_removed_again),
		cmocka_unit_test(test_uid_and_dry_run),
		cmocka_unit_test(test_passes_untouched),
		cmocka_unit_test(test_not_a_review),
		cmocka_unit_test(test_odd_shapes),
		cmocka_unit_test(test_match_condition),
		cmocka_unit_test(test_create_while_a_resize_recreates_the_set),
		cmocka_unit_test(test_create_guard_checks_the_seal_and_the_requester),
		cmocka_unit_test(test_forged_saved_copy_blocks_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
