/*
 * What a StatefulSet asks of scale-down cleanup, read from its annotations
 * and spec (SPEC section "scaledown"):
 *
 *   stateful-operator.io/scaledown-pod-template: <Pod as JSON or YAML>
 *     (legacy: statefulsets.kubernetes.io/scaledown-pod-template)
 *   stateful-operator.io/scaledown-parallelism: 1..1000
 *   stateful-operator.io/scaledown-timeout: Go duration, at least 1s
 *   stateful-operator.io/scaledown-max-attempts: 1..100
 *
 * Pure: no I/O. Thread-safe: sts is only read, never referenced or changed.
 */
#ifndef SOP_SCALEDOWN_REQUEST_H
#define SOP_SCALEDOWN_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include "controllers/contract.h"
#include "controllers/refusal.h"


#define SCALEDOWN_PARALLELISM_MAX 1000
#define SCALEDOWN_MAX_ATTEMPTS_MAX 100
#define SCALEDOWN_MAX_ATTEMPTS_DEFAULT 3
#define SCALEDOWN_TIMEOUT_MIN_MS 1000LL
#define SCALEDOWN_TIMEOUT_DEFAULT_MS (3600LL * 1000)

struct scaledown_request {
	bool enabled;         /* a template annotation is present */
	/*
	 * The cleanup Pod template as {"metadata": {...}, "spec": {...}} (metadata
	 * is {} when the template has none), with spec.restartPolicy "Never" filled
	 * in when absent. A new reference owned by the request (released by
	 * scaledown_request_release); NULL when !enabled. Take a copy before
	 * changing it if others may still read it.
	 */
	json_t *pod_template;
	/*
	 * How many cleanup pods may run at once: always 1 for OrderedReady (one
	 * at a time, highest ordinal first); for Parallel the annotation, or
	 * INT_MAX (unbounded) without it.
	 */
	int parallelism;
	long long timeout_ms; /* one cleanup pod's limit; default 1h */
	int max_attempts;     /* cleanup pods per claim set before giving up; default 3 */
	bool parallel;        /* spec.podManagementPolicy == "Parallel" */
};

/*
 * Reads sts (borrowed) into req. Returns 0 (req->enabled false when no
 * template annotation is present; the other annotations are then not
 * read), or -1 with *refusal filled and req empty when the template or an
 * annotation cannot be used as written. Refuses:
 *   ScaledownTemplateTooLarge      text beyond the annotation limits of
 *                                  util/yaml_json.h (size, nesting, aliases,
 *                                  size once aliases are expanded)
 *   ScaledownTemplateInvalid       text that is neither JSON nor YAML, or a
 *                                  malformed field (a container without name/image)
 *   ScaledownTemplateNotAPod       not an object, or kind/apiVersion other than Pod/v1
 *   ScaledownTemplateNoContainers  spec.containers missing or empty
 *   ScaledownTemplateRestartPolicy restartPolicy other than Never
 *   ScaledownTemplateVolumeConflict a template volume named like a volumeClaimTemplate
 *   ScaledownTemplateMatchesSelector labels the StatefulSet's selector matches
 *                                  (it would adopt the cleanup pod and delete it)
 *   ScaledownWhenScaledDelete      persistentVolumeClaimRetentionPolicy.whenScaled: Delete
 *   ScaledownInvalidAnnotation     parallelism, timeout or max-attempts out of range
 * Both refusal and req must be released by the caller whatever is returned.
 */
int scaledown_request_parse(const json_t *sts, struct scaledown_request *req,
			    struct refusal *refusal) __attribute__((warn_unused_result));

/* Drops the template reference and empties req. Safe on an empty request. */
void scaledown_request_release(struct scaledown_request *req);

#endif
