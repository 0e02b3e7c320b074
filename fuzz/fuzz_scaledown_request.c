/*
 * The scale-down controller's request parser (controllers/scaledown,
 * scaledown_request_parse). A JSON object input is the StatefulSet; any
 * other input is "annotation\nvalue" on a fixed StatefulSet (the cleanup
 * Pod template is JSON or YAML text in an annotation). What it accepts is
 * a Pod template with containers and restartPolicy Never and settings in
 * range; what it refuses has a reason and a message.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "controllers/scaledown/scaledown_request.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_template(const json_t *tmpl)
{
	const json_t *spec = json_object_get(tmpl, "spec");
	FUZZ_CHECK(json_is_object(json_object_get(tmpl, "metadata")), "the template has metadata");
	FUZZ_CHECK(json_array_size(json_object_get(spec, "containers")) > 0, "the template has containers");
	const char *restart = json_string_value(json_object_get(spec, "restartPolicy"));
	FUZZ_CHECK(restart && !strcmp(restart, "Never"), "the cleanup pod never restarts");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *sts = fuzz_json_object(data, size);
	if (!sts)
		sts = fuzz_statefulset_annotated(data, size);
	struct scaledown_request req;
	struct refusal refusal;
	if (scaledown_request_parse(sts, &req, &refusal) == 0) {
		FUZZ_CHECK(refusal.reason == NULL && refusal.message == NULL, "success refuses nothing");
		if (req.enabled) {
			check_template(req.pod_template);
			FUZZ_CHECK(req.parallelism >= 1 && (req.parallel || req.parallelism == 1),
				   "OrderedReady runs one cleanup pod at a time");
			FUZZ_CHECK(req.timeout_ms >= SCALEDOWN_TIMEOUT_MIN_MS, "the timeout is at least the minimum");
			FUZZ_CHECK(req.max_attempts >= 1 && req.max_attempts <= SCALEDOWN_MAX_ATTEMPTS_MAX,
				   "max attempts in range");
		} else {
			FUZZ_CHECK(req.pod_template == NULL, "no template unless enabled");
		}
	} else {
		FUZZ_CHECK(refusal.reason && refusal.message, "a refusal has a reason and a message");
	}
	scaledown_request_release(&req);
	refusal_release(&refusal);
	json_decref(sts);
	return 0;
}
