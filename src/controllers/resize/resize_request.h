/*
 * What the user asked a StatefulSet's volumes to become, read from its
 * annotations (SPEC section "resize"):
 *
 *   resize.stateful-operator.io/<template>: <quantity>
 *   stateful-operator.io/resize-strategy: auto | expand | copy
 *   stateful-operator.io/allow-shrink: "true"
 *   stateful-operator.io/ignore: "true"
 *   stateful-operator.io/resize-abort: "true"
 *   storage-class.stateful-operator.io/<template>: <StorageClass>   (copy only)
 *   stateful-operator.io/copy-mode: rolling | offline
 *   stateful-operator.io/precopy: "true"
 *   stateful-operator.io/copy-image, copy-timeout, copy-resources,
 *     copy-pod-annotations, keep-old-volumes
 *
 * Pure: no I/O. Thread-safe.
 */
#ifndef SOP_RESIZE_REQUEST_H
#define SOP_RESIZE_REQUEST_H

#include <jansson.h>
#include <stdbool.h>

#include "client/quantity.h"
#include "controllers/contract.h"
#include "controllers/refusal.h"

#define COPY_TIMEOUT_DEFAULT_MS (6LL * 3600 * 1000)

#define RESIZE_MAX_TEMPLATES 16
#define RESIZE_NAME_MAX 254 /* a DNS subdomain, and its NUL */

enum resize_strategy { RESIZE_AUTO, RESIZE_EXPAND, RESIZE_COPY };

struct resize_target {
	char template_name[RESIZE_NAME_MAX];
	struct quantity size;       /* what the volumes should become */
	struct quantity template_size; /* what the template says now */
	char storage_class[RESIZE_NAME_MAX]; /* the class to move to; "" = the template's own */
};

struct resize_request {
	enum resize_strategy strategy;
	bool allow_shrink;
	bool ignore;
	bool abort;
	/* The copy strategy's settings (validated; strings borrowed from the StatefulSet). */
	bool offline;
	bool precopy;
	const char *copy_image;           /* NULL: --copy-image */
	long long copy_timeout_ms;
	long long keep_old_ms;            /* 0: delete the old volumes when the resize completes */
	const char *copy_resources;       /* JSON ResourceRequirements, or NULL */
	const char *copy_pod_annotations; /* JSON object of strings, or NULL */
	int ntargets;
	struct resize_target targets[RESIZE_MAX_TEMPLATES];
};

/*
 * Reads sts (borrowed) into req: the templates whose annotation asks for a
 * size other than the template's. Returns 0 (ntargets may be 0: nothing
 * asked), or -1 with *refusal filled when the request cannot be carried
 * out as written; then nothing must be changed.
 */
int resize_request_parse(const json_t *sts, struct resize_request *req, struct refusal *refusal)
	__attribute__((warn_unused_result));

/* The volumeClaimTemplate named name, or NULL. Borrowed. */
const json_t *resize_template(const json_t *sts, const char *name);

#endif
