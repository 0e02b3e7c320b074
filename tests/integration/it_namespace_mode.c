/*
 * Single-namespace mode with nothing but the namespaced Role from
 * deploy/rbac/namespace: the operator syncs, leads and works in its
 * namespace, and the API server's audit log shows that it never sent a
 * request outside it, and was never refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "itest.h"
#include "operator_secrets.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

struct audit {
	int requests;      /* by the namespaced identity */
	int outside;       /* of those, not under /namespaces/<ns>/ */
	int forbidden;     /* of those, answered 403 */
	char first_outside[512];
};

static void read_audit(const char *path, const char *user, const char *ns, struct audit *a)
{
	memset(a, 0, sizeof(*a));
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read the audit log %s", path);
	char *api_prefix = xasprintf("/api/v1/namespaces/%s/", ns);
	char *ns_part = xasprintf("/namespaces/%s/", ns);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		if (!strstr(line, user))
			continue;
		json_t *ev = json_loads(line, 0, NULL);
		const char *who = kube_obj_str(ev, "user.username");
		if (who && !strcmp(who, user) && !strcmp(kube_obj_str(ev, "stage"), "ResponseComplete")) {
			const char *uri = kube_obj_str(ev, "requestURI");
			a->requests++;
			bool inside = !strncmp(uri, api_prefix, strlen(api_prefix)) ||
				      (!strncmp(uri, "/apis/", 6) && strstr(uri, ns_part));
			if (!inside) {
				if (!a->outside)
					snprintf(a->first_outside, sizeof(a->first_outside), "%s %s",
						 kube_obj_str(ev, "verb"), uri);
				a->outside++;
			}
			json_t *code = json_object_get(json_object_get(ev, "responseStatus"), "code");
			if (json_integer_value(code) == 403)
				a->forbidden++;
		}
		json_decref(ev);
	}
	free(line);
	fclose(f);
	free(api_prefix);
	free(ns_part);
}

static void test_namespaced_role_is_enough_and_nothing_leaves_the_namespace(void **state)
{
	(void)state;
	const char *audit_log = getenv("LOCAL_CLUSTER_AUDIT_LOG");
	assert_non_null(audit_log);
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-nsmode");
	char dir[] = "/tmp/it-nsmode-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *kc = it_namespaced_identity(ns, dir);

	const char *args[] = {"--kubeconfig", kc, "--namespace", ns, "--leader-elect",
			      "--metrics-bind-address", "0", "--health-probe-bind-address", "0", NULL};
	struct daemon d;
	daemon_start(&d, args, NULL);
	/* The Lease namespace comes from the kubeconfig context: the operator's own namespace. */
	if (!daemon_wait_log(&d, "became leader", 30000)) {
		char *log = daemon_log(&d);
		fail_msg("the namespaced operator did not sync and lead; log:\n%s", log);
	}
	json_t *sts = it_json("{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"n\"},"
			      "\"spec\":{\"replicas\":1,\"serviceName\":\"n\",\"selector\":{\"matchLabels\":"
			      "{\"app\":\"n\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"n\"}},"
			      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}");
	struct kube_error err;
	assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err), 0);
	it_sleep_ms(5000); /* renewals and watch traffic */
	daemon_signal(&d, SIGTERM);
	assert_int_equal(daemon_wait_exit(&d, 10000), 0);

	char *user = xasprintf("system:serviceaccount:%s:stateful-operator", ns);
	struct audit a;
	read_audit(audit_log, user, ns, &a);
	printf("# %d requests by %s: %d outside %s, %d forbidden\n", a.requests, user, a.outside, ns,
	       a.forbidden);
	assert_true(a.requests >= 6); /* 3 LISTs, 3 WATCHes, Lease traffic */
	if (a.outside)
		fail_msg("%d requests left the namespace, first: %s", a.outside, a.first_outside);
	assert_int_equal(a.forbidden, 0);

	free(user);
	json_decref(sts);
	daemon_cleanup(&d);
	it_sh("rm -rf '%s'", dir);
	free(kc);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespaced_role_is_enough_and_nothing_leaves_the_namespace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
