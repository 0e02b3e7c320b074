/*
 * An exec credential plugin's output (client/exec_credential.c,
 * kube_exec_credential_parse) on any bytes. What it accepts carries a token
 * without control characters, or a certificate with its key; what it
 * refuses says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_config.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char command[] = "fuzz-plugin", api_version[] = "client.authentication.k8s.io/v1";
	struct kube_exec_config exec = {.command = command, .api_version = api_version};
	struct kube_exec_credential cred;
	char *err = NULL;
	memset(&cred, 0, sizeof(cred));
	if (kube_exec_credential_parse(&exec, (const char *)data, size, &cred, &err) == 0) {
		FUZZ_CHECK(err == NULL, "success leaves no message");
		FUZZ_CHECK(cred.token || (cred.cert_data.data && cred.key_data.data),
			   "a credential has a token or a certificate and key");
		for (const char *p = cred.token; p && *p; p++)
			FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "a token has no control characters");
	} else {
		FUZZ_CHECK(err != NULL, "a refusal says why");
	}
	free(err);
	kube_exec_credential_release(&cred);
	return 0;
}
