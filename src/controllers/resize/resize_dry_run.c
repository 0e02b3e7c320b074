#include "controllers/resize/resize_dry_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/kube_resource.h"
#include "util/log.h"
#include "util/xalloc.h"

static bool says(const struct kube_error *err, const char *text)
{
	return strstr(err->message, text) != NULL;
}

/* An admission webhook or policy said no; its answer may carry any code (even 409). */
static bool denied_by_admission(const struct kube_error *err)
{
	return says(err, "denied the request");
}

int resize_dry_run_recreate(struct kube_client *c, const char *ns, const json_t *sts, struct kube_error *err)
{
	char *base = kube_resource_path(&KUBE_STATEFULSETS, ns, NULL, NULL);
	char *path = xasprintf("%s?dryRun=All", base);
	char *body = json_dumps(sts, JSON_COMPACT);
	int rc = kube_request(c, "POST", path, "application/json", body, NULL, err);
	free(body);
	free(path);
	free(base);
	if (rc == 0)
		return 0; /* validated and admitted; the name was free (the set went meanwhile) */
	if (err->code == 409 && !strcmp(err->reason, "AlreadyExists") && !denied_by_admission(err))
		return 0; /* everything passed but the name, which the set holds until its delete */
	if (err->code == 400 && says(err, "does not support dry run")) {
		log_warn("resize", "StatefulSet %s/%s: the re-create could not be tried first (%s); going on",
			 ns, kube_obj_str(sts, "metadata.name"), err->message);
		return 0;
	}
	if (err->code == 403 && says(err, "exceeded quota"))
		return 0; /* the set counts against the quota until it is deleted */
	if (err->code != 400 && err->code != 403 && err->code != 409 && err->code != 422)
		return -1; /* no answer, or the server's trouble: tried again */
	/* The answer as the API server gave it, under a reason of ours: the caller reports it. */
	char *said = xasprintf("%ld %s: %s", err->code, err->reason, err->message);
	snprintf(err->reason, sizeof(err->reason), "%s", RESIZE_RECREATE_REFUSED);
	snprintf(err->message, sizeof(err->message), "%s", said);
	free(said);
	return -1;
}
