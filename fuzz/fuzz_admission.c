/*
 * The admission webhook's decision (webhook/admission.c) on a fuzzed
 * AdmissionReview, with one StorageClass "standard" that can expand and
 * "db" in "ns" holding a saved copy. Every review gets an AdmissionReview
 * answer whose response says allowed or not and echoes request.uid; an
 * allowed change carries a JSONPatch, never a denial's status.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "webhook/admission.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* admission_view.saved_copy: a backup ConfigMap of ns/db exists, unsealed (no seal in the view). */
static json_t *saved_copy_of_db(void *ctx, const char *ns, const char *name)
{
	(void)ctx;
	if (strcmp(ns, "ns") || strcmp(name, "db"))
		return NULL;
	return json_pack("{s:{s:s, s:s}}", "metadata", "name", "db-sts-backup", "namespace", "ns");
}

static void check_answer(const json_t *review, const json_t *answer)
{
	FUZZ_CHECK(json_is_object(answer), "every review gets an answer");
	const json_t *response = json_object_get(answer, "response");
	FUZZ_CHECK(json_is_boolean(json_object_get(response, "allowed")), "the answer says allowed or not");
	const char *uid = json_string_value(json_object_get(json_object_get(review, "request"), "uid"));
	const char *echoed = json_string_value(json_object_get(response, "uid"));
	if (uid)
		FUZZ_CHECK(echoed && !strcmp(uid, echoed), "the answer echoes request.uid");
	if (json_is_true(json_object_get(response, "allowed")))
		FUZZ_CHECK(!json_object_get(response, "status"), "an allowed answer carries no denial");
	else
		FUZZ_CHECK(!json_object_get(response, "patch"), "a denial carries no patch");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *review = fuzz_json_object(data, size);
	if (!review)
		return 0;
	json_t *classes = json_pack("[{s:s, s:{s:s}, s:s, s:b}]", "apiVersion", "storage.k8s.io/v1", "metadata",
				    "name", "standard", "provisioner", "csi.example.com", "allowVolumeExpansion", 1);
	struct admission_view view = {
		.storage_classes = classes,
		.attributes_classes = NULL,
		.saved_copy = saved_copy_of_db,
	};
	json_t *answer = admission_review(review, &view);
	check_answer(review, answer);
	json_decref(answer);
	json_decref(classes);
	json_decref(review);
	return 0;
}
