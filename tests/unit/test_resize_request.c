/* The resize request parser's JSON annotations (copy-resources, copy-pod-annotations) under the annotation limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/resize/resize_internal.h"
#include "util/strbuf.h"

/* A StatefulSet "db" with one volumeClaimTemplate "data" of 1Gi and the annotation key: value. New reference. */
static json_t *sts_annotated(const char *key, const char *value)
{
	json_t *s = json_pack("{s:{s:s, s:s, s:{}}, s:{s:i, s:[{s:{s:s}, s:{s:{s:{s:s}}}}]}}", "metadata", "name", "db",
			      "namespace", "ns", "annotations", "spec", "replicas", 3, "volumeClaimTemplates",
			      "metadata", "name", "data", "spec", "resources", "requests", "storage", "1Gi");
	assert_non_null(s);
	json_object_set_new(json_object_get(json_object_get(s, "metadata"), "annotations"), key, json_string(value));
	return s;
}

static void expect_ok(const char *key, const char *value)
{
	json_t *s = sts_annotated(key, value);
	struct resize_request req;
	struct refusal r;
	int rc = resize_request_parse(s, NULL, &req, &r);
	if (rc != 0)
		fail_msg("refused %s: %s", r.reason, r.message);
	refusal_release(&r);
	json_decref(s);
}

static void expect_refused(const char *key, const char *value, const char *needle)
{
	json_t *s = sts_annotated(key, value);
	struct resize_request req;
	struct refusal r;
	assert_int_equal(resize_request_parse(s, NULL, &req, &r), -1);
	assert_string_equal(r.reason, "ResizeInvalidAnnotation");
	if (!strstr(r.message, key) || !strstr(r.message, needle))
		fail_msg("message \"%s\" does not name %s and say \"%s\"", r.message, key, needle);
	refusal_release(&r);
	json_decref(s);
}

/* Ordinary values are read; deep ones, and ones with too many values, are refused naming the limit. */
static void test_copy_json_annotations_limits(void **state)
{
	(void)state;
	expect_ok(ANNOTATION_COPY_RESOURCES, "{\"requests\": {\"cpu\": \"100m\", \"memory\": \"64Mi\"}}");
	expect_ok(ANNOTATION_COPY_POD_ANNOTATIONS, "{\"sidecar.istio.io/inject\": \"false\"}");

	struct strbuf deep = STRBUF_INIT, many = STRBUF_INIT;
	for (int i = 0; i < 1000; i++)
		assert_int_equal(strbuf_addstr(&deep, "{\"a\": "), 0);
	assert_int_equal(strbuf_addstr(&deep, "1"), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(strbuf_addstr(&deep, "}"), 0);
	expect_refused(ANNOTATION_COPY_RESOURCES, deep.buf, "nested deeper than 64 levels");
	expect_refused(ANNOTATION_COPY_POD_ANNOTATIONS, deep.buf, "nested deeper than 64 levels");

	assert_int_equal(strbuf_addstr(&many, "{\"limits\": {\"x\": [1"), 0);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(strbuf_addstr(&many, ",1"), 0);
	assert_int_equal(strbuf_addstr(&many, "]}}"), 0);
	expect_refused(ANNOTATION_COPY_RESOURCES, many.buf, "more than 100000 values");
	strbuf_release(&deep);
	strbuf_release(&many);

	/* Malformed as before: the shape is what the message explains. */
	expect_refused(ANNOTATION_COPY_RESOURCES, "{\"requests\": ", "must be a JSON object");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_json_annotations_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
