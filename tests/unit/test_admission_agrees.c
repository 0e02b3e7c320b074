/*
 * The webhook and the resize controller agree on an attributes class change
 * together with a copy: for each update, the webhook denies it for that
 * reason exactly when the controller, given the applied templates as the
 * desired ones, would refuse to start with ResizeAttributesClassWithCopy.
 * Either side changing its condition alone fails here.
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
#include "util/xalloc.h"
#include "webhook/admission.h"

#define NOW_MS 1795262400000LL
#define WEBHOOK_SAYS "changes its volumeAttributesClassName in the same update as a change that copies"

/* A template: name, size, then the rest of its spec ("" for none). */
#define TMPL(name, size, more)                                                                        \
	"{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"               \
	"\"volumeMode\":\"Filesystem\",\"resources\":{\"requests\":{\"storage\":\"" size "\"}}" more "}}"
#define FAST ",\"storageClassName\":\"fast\""
#define SLOW ",\"storageClassName\":\"slow\""
#define GOLD ",\"volumeAttributesClassName\":\"gold\""
#define SILVER ",\"volumeAttributesClassName\":\"silver\""
#define COPY "{\"stateful-operator.io/resize-strategy\":\"copy\"}"
#define COPY_AND_SHRINK "{\"stateful-operator.io/resize-strategy\":\"copy\",\"stateful-operator.io/allow-shrink\":\"true\"}"

static const char CLASSES[] = "["
	"{\"metadata\":{\"name\":\"fast\",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}},"
	"\"allowVolumeExpansion\":true},"
	"{\"metadata\":{\"name\":\"slow\"},\"allowVolumeExpansion\":false}]";
static const char ATTRIBUTE_CLASSES[] = "[{\"metadata\":{\"name\":\"gold\"}},{\"metadata\":{\"name\":\"silver\"}}]";

struct update {
	const char *what;
	const char *old_templates, *new_templates; /* JSON arrays */
	const char *annotations;                   /* of the applied object; NULL: none */
	bool refused;                              /* what both must say */
};

static const struct update updates[] = {
	{"attributes class and StorageClass", "[" TMPL("data", "1Gi", FAST SILVER) "]",
	 "[" TMPL("data", "1Gi", SLOW GOLD) "]", NULL, true},
	{"attributes class of one, shrink of another", "[" TMPL("data", "1Gi", SILVER) "," TMPL("logs", "2Gi", "") "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", "") "]", COPY_AND_SHRINK, true},
	{"attributes class and growth on a class that cannot expand", "[" TMPL("data", "1Gi", SLOW SILVER) "]",
	 "[" TMPL("data", "2Gi", SLOW GOLD) "]", NULL, true},
	{"attributes class and growth on the default class, which expands", "[" TMPL("data", "1Gi", SILVER) "]",
	 "[" TMPL("data", "2Gi", GOLD) "]", NULL, false},
	{"attributes class and growth under strategy copy", "[" TMPL("data", "1Gi", FAST SILVER) "]",
	 "[" TMPL("data", "2Gi", FAST GOLD) "]", COPY, true},
	{"attributes class under strategy copy, nothing else", "[" TMPL("data", "1Gi", SILVER) "]",
	 "[" TMPL("data", "1Gi", GOLD) "]", COPY, false},
	{"attributes class unset with a StorageClass change", "[" TMPL("data", "1Gi", FAST SILVER) "]",
	 "[" TMPL("data", "1Gi", SLOW) "]", NULL, false},
	{"attributes class set where there was none, growth of another on slow",
	 "[" TMPL("data", "1Gi", "") "," TMPL("logs", "1Gi", SLOW) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "3Gi", SLOW) "]", NULL, true},
	{"attributes class, and a resize annotation growing another on slow",
	 "[" TMPL("data", "1Gi", SILVER) "," TMPL("logs", "1Gi", SLOW) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", SLOW) "]", "{\"resize.stateful-operator.io/logs\":\"5Gi\"}",
	 true},
	{"attributes class, and a class annotation on another",
	 "[" TMPL("data", "1Gi", SILVER) "," TMPL("logs", "1Gi", FAST) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", FAST) "]",
	 "{\"storage-class.stateful-operator.io/logs\":\"slow\"}", true},
	{"attributes class of one, a template added on slow", "[" TMPL("data", "1Gi", SILVER) "]",
	 "[" TMPL("data", "1Gi", GOLD) "," TMPL("logs", "1Gi", SLOW) "]", NULL, false},
	{"StorageClass change alone", "[" TMPL("data", "1Gi", FAST) "]", "[" TMPL("data", "1Gi", SLOW) "]", NULL, false},
};

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);
	if (!j)
		fail_msg("fixture %s: %s", text, err.text);
	return j;
}

/* StatefulSet ns/web (2 replicas) with templates and annotations (JSON text; NULL: none). New reference. */
static json_t *web(const char *templates, const char *annotations)
{
	json_t *sts = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:i, s:s, s:o}}", "apiVersion", "apps/v1",
				"kind", "StatefulSet", "metadata", "name", "web", "namespace", "ns", "uid", "uid-1",
				"resourceVersion", "10", "spec", "replicas", 2, "serviceName", "web",
				"volumeClaimTemplates", parse(templates));
	json_object_set_new(json_object_get(sts, "metadata"), "annotations",
			    annotations ? parse(annotations) : json_object());
	return sts;
}

static bool webhook_refuses(const struct update *u, const json_t *classes, const json_t *attributes)
{
	json_t *review = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:o, s:o}}", "apiVersion",
				   "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", "u", "kind",
				   "group", "apps", "version", "v1", "kind", "StatefulSet", "operation", "UPDATE",
				   "name", "web", "namespace", "ns", "object", web(u->new_templates, u->annotations),
				   "oldObject", web(u->old_templates, NULL));
	struct admission_view view = {.storage_classes = classes, .attributes_classes = attributes};
	json_t *answer = admission_review(review, &view);
	const json_t *r = json_object_get(answer, "response");
	const char *msg = kube_obj_str(r, "status.message");
	bool refused = !json_is_true(json_object_get(r, "allowed")) && msg && strstr(msg, WEBHOOK_SAYS);
	json_decref(answer);
	json_decref(review);
	return refused;
}

/* The controller, given the stored templates and the applied ones recorded as desired. */
static bool controller_refuses(const struct update *u, const json_t *classes)
{
	json_t *sts = web(u->old_templates, u->annotations);
	json_object_set_new(json_object_get(json_object_get(sts, "metadata"), "annotations"),
			    ANNOTATION_DESIRED_TEMPLATES, json_string(u->new_templates));
	json_t *none = json_array();
	struct resize_inputs in = {.sts = sts, .pvcs = none, .pods = none, .storage_classes = classes, .pvs = none,
				   .jobs = none};
	struct action a = {0};
	resize_plan(&in, NOW_MS, &a);
	bool refused = a.verb == ACTION_REFUSE && a.event_reason && !strcmp(a.event_reason, "ResizeAttributesClassWithCopy");
	action_release(&a);
	json_decref(none);
	json_decref(sts);
	return refused;
}

static void test_webhook_and_controller_agree(void **state)
{
	(void)state;
	json_t *classes = parse(CLASSES), *attributes = parse(ATTRIBUTE_CLASSES);
	for (size_t i = 0; i < sizeof(updates) / sizeof(updates[0]); i++) {
		const struct update *u = &updates[i];
		bool webhook = webhook_refuses(u, classes, attributes), controller = controller_refuses(u, classes);
		if (webhook != u->refused || controller != u->refused)
			fail_msg("%s: webhook %s, controller %s; want both %s", u->what, webhook ? "denies" : "allows",
				 controller ? "refuses" : "starts", u->refused ? "refusing" : "allowing");
	}
	json_decref(attributes);
	json_decref(classes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_webhook_and_controller_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
