#include "fault_steps.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "client/kube_config.h"
#include "itest.h"
#include "util/xalloc.h"

struct fault_proxy *it_fault_proxy_start(const struct fault_plan *plan, const char *dir, char **kubeconfig)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	const char *state = getenv("LOCAL_CLUSTER_DIR");
	if (!state)
		fail_msg("LOCAL_CLUSTER_DIR is not set: eval \"$(scripts/local-cluster env)\"");
	/* The proxy's certificate is signed by the test bed's CA, which the kubeconfig trusts. */
	char *ca = xasprintf("%s/pki/ca.crt", state), *ca_key = xasprintf("%s/pki/ca.key", state);
	struct fault_proxy *p = fault_proxy_start(ca, ca_key, atoi(strrchr(cfg.server, ':') + 1), plan, &err);
	kube_config_release(&cfg);
	free(ca);
	free(ca_key);
	if (!p)
		fail_msg("fault proxy: %s", err);
	char *server = xasprintf("https://127.0.0.1:%d", fault_proxy_port(p));
	char *token = it_operator_token();
	*kubeconfig = it_write_kubeconfig(dir, "via-faults.kubeconfig", server, token, NULL);
	free(server);
	free(token);
	return p;
}

char *it_fault_kinds_missing(struct fault_proxy *p)
{
	long counts[FAULT_KINDS];
	fault_proxy_counts(p, counts);
	long non_watch = fault_proxy_non_watch_faults(p);
	char *missing = NULL;
	for (int k = FAULT_TOO_MANY; k < FAULT_KINDS; k++) {
		if (counts[k] || !fault_surely_injected((enum fault_kind)k, non_watch))
			continue;
		char *more = xasprintf("%s%s%s", missing ? missing : "", missing ? ", " : "", fault_kind_names[k]);
		free(missing);
		missing = more;
	}
	return missing;
}
