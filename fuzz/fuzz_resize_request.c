/*
 * The resize controller's request parsers (controllers/resize:
 * resize_request_parse, resize_desired_parse). A JSON object input is the
 * StatefulSet itself; any other input is "annotation\nvalue" on a fixed
 * StatefulSet, and also the desired-templates annotation's text. A parse
 * (judging the desired templates without StorageClasses, and with two)
 * either succeeds with targets that fit, or refuses with a reason and a
 * message, never both.
 */
#include <stdint.h>
#include <stdlib.h>

#include "controllers/resize/resize_internal.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* classes: the StorageClasses the desired templates are judged against (NULL: unreadable). */
static void check_request(const json_t *sts, const json_t *classes)
{
	struct resize_request req;
	struct refusal refusal;
	if (resize_request_parse(sts, classes, &req, &refusal) == 0) {
		FUZZ_CHECK(refusal.reason == NULL && refusal.message == NULL, "success refuses nothing");
		FUZZ_CHECK(req.ntargets >= 0 && req.ntargets <= RESIZE_MAX_TEMPLATES, "targets fit");
		for (int i = 0; i < req.ntargets; i++) {
			FUZZ_CHECK(resize_template(sts, req.targets[i].template_name) != NULL,
				   "a target names a template the set has");
			const struct resize_target *t = &req.targets[i];
			/* A class change alone keeps the template's size, whatever it says. */
			FUZZ_CHECK(quantity_cmp(&t->size, &t->template_size) == 0 || quantity_sign(&t->size) > 0,
				   "a size asked is positive");
		}
	} else {
		FUZZ_CHECK(refusal.reason && refusal.message, "a refusal has a reason and a message");
	}
	refusal_release(&refusal);
}

static void check_desired(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	json_t *desired = NULL;
	struct refusal refusal = {NULL, NULL};
	if (resize_desired_parse(text, &desired, &refusal) == 0)
		FUZZ_CHECK(json_is_array(desired), "desired templates are an array");
	else
		FUZZ_CHECK(desired == NULL && refusal.reason && refusal.message,
			   "a refusal has a reason and a message");
	json_decref(desired);
	refusal_release(&refusal);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *sts = fuzz_json_object(data, size);
	if (!sts) {
		sts = fuzz_statefulset_annotated(data, size);
		check_desired(data, size);
	}
	/* Namespace scope (no StorageClasses), and a cluster with two. */
	json_t *classes = json_loads("[{\"metadata\":{\"name\":\"fast\",\"annotations\":{\"storageclass.kubernetes.io/"
				     "is-default-class\":\"true\"}},\"allowVolumeExpansion\":true},"
				     "{\"metadata\":{\"name\":\"slow\"}}]",
				     0, NULL);
	check_request(sts, NULL);
	check_request(sts, classes);
	json_decref(classes);
	json_decref(sts);
	return 0;
}
