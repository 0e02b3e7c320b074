/*
 * The operator's own Secrets on the test bed, with only the rights deploy/
 * ships (namespace scope: the Role of deploy/rbac/namespace and the
 * webhook's Role of deploy/webhook/rbac.yaml, in a scratch namespace; get
 * and update of the two Secrets by name, no create):
 *   - the Secrets applied from deploy/, empty: two replicas started at once
 *     fill them once (one "made a new state key", one certificate written),
 *     both seal with the key the Secret holds (the same key id) and serve
 *     the certificate it holds; what the Secrets carried (labels,
 *     annotations: Helm's ownership) is kept;
 *   - no Secrets: the operator stops, and its message gives the command that
 *     makes the missing one; run as given, the operator then starts (the
 *     state key first, then the webhook's certificate).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/state_seal.h"
#include "daemon.h"
#include "itest.h"
#include "operator_secrets.h"
#include "util/xalloc.h"
#include "webhook/webhook.h"
#include "webhook_steps.h"

struct fixture {
	struct kube_client *admin;
	char *ns;
	char dir[32];
	char *kubeconfig; /* the namespaced ServiceAccount's */
};

/*
 * The Role of deploy/rbac/namespace and the webhook's Role of
 * deploy/webhook/rbac.yaml (not its cluster-scoped objects, which the test
 * bed's operator uses), moved to ns and bound to a ServiceAccount there.
 */
static void namespaced_rbac(const char *ns)
{
	if (it_sh("kubectl kustomize '%s/deploy/rbac/namespace' | "
		  "sed 's/namespace: stateful-operator-system/namespace: %s/' | kubectl apply -f - >/dev/null",
		  it_source_dir(), ns) != 0)
		fail_msg("cannot apply deploy/rbac/namespace in %s", ns);
	if (it_sh("kubectl create --dry-run=client -o json -f '%s/deploy/webhook/rbac.yaml' | "
		  "jq -s --arg ns %s '{apiVersion: \"v1\", kind: \"List\", items: [.[] "
		  "| if .kind == \"List\" then .items[] else . end | select(.kind == \"Role\" or .kind == \"RoleBinding\") "
		  "| .metadata.namespace = $ns | if .subjects then .subjects |= map(.namespace = $ns) else . end]}' | "
		  "kubectl apply -f - >/dev/null",
		  it_source_dir(), ns) != 0)
		fail_msg("cannot apply the webhook's Role in %s", ns);
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	f->admin = it_admin_client();
	f->ns = it_namespace_new(f->admin, "it-secrets");
	snprintf(f->dir, sizeof(f->dir), "/tmp/it-secrets-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	namespaced_rbac(f->ns);
	if (it_sh("kubectl create serviceaccount stateful-operator -n %s >/dev/null", f->ns) != 0)
		fail_msg("cannot create the ServiceAccount");
	char *token = it_sh_output("kubectl create token stateful-operator -n %s --duration=1h", f->ns);
	f->kubeconfig = it_write_kubeconfig(f->dir, "namespaced.kubeconfig", NULL, token, f->ns);
	free(token);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	it_namespace_delete(f->admin, f->ns);
	it_sh("rm -rf '%s'", f->dir);
	free(f->kubeconfig);
	free(f->ns);
	kube_client_free(f->admin);
	free(f);
	return 0;
}

/* The operator as the namespaced ServiceAccount, serving the webhook on address. */
static void start(struct fixture *f, struct daemon *d, const char *address)
{
	const char *args[] = {"--kubeconfig", f->kubeconfig, "--namespace", f->ns, "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--webhook-bind-address", address,
			      "--webhook-cert-names", "127.0.0.1", "--controllers", "scaledown", NULL};
	daemon_start(d, args, NULL);
}

static void stop(struct daemon *d)
{
	daemon_signal(d, SIGTERM);
	assert_int_equal(daemon_wait_exit(d, 10000), 0);
	daemon_cleanup(d);
}

static void wait_serving(struct daemon *d)
{
	if (!daemon_wait_log(d, "serving admission reviews", 30000)) {
		char *log = daemon_log(d);
		fail_msg("the operator does not serve the webhook; log:\n%s", log);
	}
}

static int count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The id of the key Secret ns/STATE_SEAL_SECRET_NAME holds (new string). */
static char *stored_key_id(struct fixture *f)
{
	json_t *secret = it_get(f->admin, &KUBE_SECRETS, f->ns, STATE_SEAL_SECRET_NAME);
	const char *b64 = kube_obj_str(secret, "data." STATE_SEAL_SECRET_KEY);
	if (!b64)
		fail_msg("Secret %s/%s holds no key", f->ns, STATE_SEAL_SECRET_NAME);
	unsigned char buf[64];
	assert_int_equal(EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)strlen(b64)), STATE_SEAL_KEY_BYTES + 1);
	struct state_seal *seal = state_seal_new(buf);
	char id[STATE_SEAL_KEY_ID_LEN + 1];
	state_seal_key_id(seal, id);
	state_seal_free(seal);
	json_decref(secret);
	return xstrdup(id);
}

static char *served_fingerprint(const char *address)
{
	return it_sh_output("echo | openssl s_client -connect %s 2>/dev/null | openssl x509 -noout -fingerprint -sha256",
			    address);
}

static void test_two_replicas_fill_the_empty_secrets_once(void **state)
{
	struct fixture *f = *state;
	it_operator_secrets(f->admin, f->ns);
	/* What Helm adds to the Secrets it installs: the operator's updates must keep it. */
	for (int i = 0; i < 2; i++)
		it_merge_patch(f->admin, &KUBE_SECRETS, f->ns, i ? WEBHOOK_SECRET : STATE_SEAL_SECRET_NAME,
			       "{\"metadata\":{\"annotations\":{\"meta.helm.sh/release-name\":\"sop\","
			       "\"helm.sh/resource-policy\":\"keep\"}}}");

	struct daemon a, b;
	char addr_a[64], addr_b[64];
	snprintf(addr_a, sizeof(addr_a), "127.0.0.1:%d", wh_free_port());
	snprintf(addr_b, sizeof(addr_b), "127.0.0.1:%d", wh_free_port());
	start(f, &a, addr_a);
	start(f, &b, addr_b);
	wait_serving(&a);
	wait_serving(&b);

	char *log_a = daemon_log(&a), *log_b = daemon_log(&b);
	char *both = xasprintf("%s\n%s", log_a, log_b);
	if (count(both, "made a new state key") != 1 || count(both, "wrote the certificate into Secret") != 1)
		fail_msg("not one fill of each Secret; logs:\n%s", both);
	/* Both seal with the stored key. */
	char *id = stored_key_id(f);
	char *want = xasprintf("key id %s", id);
	if (!strstr(log_a, want) || !strstr(log_b, want))
		fail_msg("a replica does not use the stored key (%s); logs:\n%s", want, both);
	/* Both serve the stored certificate. */
	char *stored = it_sh_output("kubectl get secret %s -n %s -o jsonpath='{.data.tls\\.crt}' | base64 -d | "
				    "openssl x509 -noout -fingerprint -sha256",
				    WEBHOOK_SECRET, f->ns);
	char *served_a = served_fingerprint(addr_a), *served_b = served_fingerprint(addr_b);
	assert_string_equal(served_a, stored);
	assert_string_equal(served_b, stored);
	/* Filled in place: what the Secrets carried is still there, and no type was forced on them. */
	for (int i = 0; i < 2; i++) {
		json_t *s = it_get(f->admin, &KUBE_SECRETS, f->ns, i ? WEBHOOK_SECRET : STATE_SEAL_SECRET_NAME);
		assert_string_equal(it_annotation(s, "meta.helm.sh/release-name"), "sop");
		assert_string_equal(it_annotation(s, "helm.sh/resource-policy"), "keep");
		assert_string_equal(it_label(s, "app.kubernetes.io/name"), "stateful-operator");
		assert_string_equal(kube_obj_str(s, "type"), "Opaque");
		json_decref(s);
	}
	stop(&a);
	stop(&b);
	free(served_a);
	free(served_b);
	free(stored);
	free(want);
	free(id);
	free(both);
	free(log_a);
	free(log_b);
}

/* Starts the operator, which must stop at once saying how to make Secret name; runs that command. */
static void missing_secret_stops_it(struct fixture *f, const char *name, const char *address)
{
	struct daemon d;
	start(f, &d, address);
	int rc = daemon_wait_exit(&d, 30000);
	char *log = daemon_log(&d);
	if (rc != 1)
		fail_msg("exit %d without Secret %s; log:\n%s", rc, name, log);
	char *cmd = xasprintf("kubectl create secret generic %s -n %s", name, f->ns);
	if (!strstr(log, cmd))
		fail_msg("the log does not say \"%s\":\n%s", cmd, log);
	/* The command as the message gives it, as an admin would run it. */
	if (it_sh("%s >/dev/null", cmd) != 0)
		fail_msg("%s failed", cmd);
	free(cmd);
	free(log);
	daemon_cleanup(&d);
}

static void test_missing_secrets_stop_it_with_the_command_that_makes_them(void **state)
{
	struct fixture *f = *state;
	char address[64];
	snprintf(address, sizeof(address), "127.0.0.1:%d", wh_free_port());
	missing_secret_stops_it(f, STATE_SEAL_SECRET_NAME, address);
	missing_secret_stops_it(f, WEBHOOK_SECRET, address);
	struct daemon d;
	start(f, &d, address);
	wait_serving(&d);
	char *id = stored_key_id(f);
	char *log = daemon_log(&d);
	char *want = xasprintf("key id %s", id);
	if (!strstr(log, want))
		fail_msg("not sealing with the stored key (%s); log:\n%s", want, log);
	stop(&d);
	free(want);
	free(log);
	free(id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_replicas_fill_the_empty_secrets_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_secrets_stop_it_with_the_command_that_makes_them, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
