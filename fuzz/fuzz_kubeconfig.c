/*
 * The kubeconfig reader (client/kubeconfig.c, kubeconfig_parse) on any
 * text, YAML or JSON. Relative file names resolve under a directory that
 * does not exist, so nothing the input names is read from the tree. What
 * it accepts has an https or http server; what it refuses says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/kube_config.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config cfg;
	char *err = NULL;
	memset(&cfg, 0, sizeof(cfg));
	if (kubeconfig_parse((const char *)data, size, "/nonexistent/fuzz", NULL, &cfg, &err) == 0) {
		FUZZ_CHECK(err == NULL, "success leaves no message");
		/* The scheme is case-insensitive (RFC 3986), as curl reads it. */
		FUZZ_CHECK(cfg.server && (!strncasecmp(cfg.server, "https://", 8) || !strncasecmp(cfg.server, "http://", 7)),
			   "an accepted config names an http(s) server");
		char *redacted = kube_url_redact(cfg.server);
		FUZZ_CHECK(redacted != NULL, "a server URL can always be redacted");
		free(redacted);
	} else {
		FUZZ_CHECK(err != NULL, "a refusal says why");
	}
	free(err);
	kube_config_release(&cfg);
	return 0;
}
