#include "operator_secrets.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "itest.h"
#include "util/xalloc.h"

static const char *const MANIFESTS[] = {"deploy/base/state-key-secret.yaml", "deploy/webhook/secret.yaml"};

void it_operator_secrets(struct kube_client *admin, const char *ns)
{
	for (size_t i = 0; i < sizeof(MANIFESTS) / sizeof(MANIFESTS[0]); i++) {
		char *text = it_sh_output("kubectl create --dry-run=client -o json -f '%s/%s'", it_source_dir(),
					  MANIFESTS[i]);
		json_t *secret = json_loads(text, 0, NULL);
		if (!secret)
			fail_msg("%s is not one object: %s", MANIFESTS[i], text);
		json_object_set_new(json_object_get(secret, "metadata"), "namespace", json_string(ns));
		struct kube_error err;
		if (kube_create(admin, &KUBE_SECRETS, ns, secret, NULL, &err) < 0 && err.code != 409)
			fail_msg("create the Secret of %s in %s: %s", MANIFESTS[i], ns, err.message);
		json_decref(secret);
		free(text);
	}
}

void it_operator_secrets_once(void)
{
	static bool done;
	if (done)
		return;
	struct kube_client *admin = it_admin_client();
	it_operator_secrets(admin, IT_OPERATOR_NS);
	kube_client_free(admin);
	done = true;
}
