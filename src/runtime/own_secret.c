#include "runtime/own_secret.h"

#include <stdlib.h>

#include "util/xalloc.h"

char *own_secret_missing(const char *ns, const char *name)
{
	return xasprintf("Secret %s/%s is missing; the operator fills it but may not create it: create it empty "
			 "(kubectl create secret generic %s -n %s), as deploy/ and the Helm chart do",
			 ns, name, name, ns);
}

json_t *own_secret_filled(const json_t *secret, json_t *data)
{
	json_t *put = json_deep_copy(secret);
	if (!put)
		abort(); /* out of memory */
	/* Left out, the server keeps the managers it has; sent back stale, it would take them as new. */
	json_object_del(json_object_get(put, "metadata"), "managedFields");
	json_object_set_new(put, "data", data);
	return put;
}
