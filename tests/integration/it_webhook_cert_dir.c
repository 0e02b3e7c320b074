/*
 * The webhook's certificate given from outside (--webhook-cert-dir), as
 * cert-manager or a user's Secret gives it, on the real API server: the
 * test makes a CA and a serving pair, writes them where the kubelet would
 * mount the Secret, and registers deploy/webhook's configuration with that
 * CA as its caBundle. The API server calls the operator over TLS (an
 * applied volumeClaimTemplates edit becomes a resize, which without the
 * webhook it refuses); the operator writes neither its Secret nor the
 * caBundle. Then the files are replaced by a pair of another CA and the
 * caBundle by that CA alone: the same process serves the new pair (the
 * next edit is a resize too), without a restart.
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
#include <time.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "itest.h"
#include "operator_secrets.h"
#include "util/base64.h"
#include "util/xalloc.h"
#include "webhook/cert_dir.h"
#include "webhook/webhook.h"
#include "webhook/webhook_cert.h"
#include "webhook_steps.h"

static const char *const NAMES[] = {"127.0.0.1", NULL};

/* A CA and a serving pair for 127.0.0.1 valid for days (days tells two pairs' log lines apart). */
static struct cert_bundle make_pair(int days)
{
	struct cert_bundle b = CERT_BUNDLE_INIT;
	char *err = NULL;
	long long now = (long long)time(NULL);
	if (cert_bundle_make_ca(&b, "it-webhook-cert-dir-ca", 0, now, &err) < 0 ||
	    cert_bundle_make_serving(&b, NAMES, days, now, &err) < 0)
		fail_msg("cannot make a certificate: %s", err);
	return b;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char *tmp = xasprintf("%s/.%s.tmp", dir, name);
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
		fail_msg("cannot write %s", path);
	free(path);
	free(tmp);
}

/*
 * The pair into dir, each file replaced at once (the key first: a reader
 * between the two sees a mismatch, and reads again).
 */
static void put_pair(const char *dir, const struct cert_bundle *b)
{
	write_file(dir, CERT_DIR_KEY_FILE, b->key_pem);
	write_file(dir, CERT_DIR_CERT_FILE, b->cert_pem);
}

/* Every webhook of the configuration trusts ca_pem alone; the configuration's resourceVersion after (new string). */
static char *set_ca_bundle(struct kube_client *admin, const char *ca_pem)
{
	json_t *config = it_get(admin, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, WEBHOOK_CONFIGURATION);
	if (!config)
		fail_msg("no MutatingWebhookConfiguration %s", WEBHOOK_CONFIGURATION);
	char *b64 = base64_encode(ca_pem, strlen(ca_pem));
	size_t i;
	json_t *hook;
	json_array_foreach(json_object_get(config, "webhooks"), i, hook)
		json_object_set_new(json_object_get(hook, "clientConfig"), "caBundle", json_string(b64));
	free(b64);
	json_t *out = NULL;
	struct kube_error err = {0};
	if (kube_replace(admin, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, WEBHOOK_CONFIGURATION, NULL, config, &out,
			 &err) < 0)
		fail_msg("cannot set the caBundle: %s", err.message);
	char *rv = xstrdup(kube_obj_str(out, "metadata.resourceVersion"));
	json_decref(out);
	json_decref(config);
	return rv;
}

/* The resourceVersion of obj (new string), or "absent". */
static char *version_of(json_t *obj)
{
	const char *rv = kube_obj_str(obj, "metadata.resourceVersion");
	char *v = xstrdup(rv ? rv : "absent");
	json_decref(obj);
	return v;
}

/* kubectl apply of the set at size: accepted (the webhook answered over TLS), then carried out. */
static void grow_to(struct wh_test *f, const char *size)
{
	wh_write_manifest(f, size, "pause");
	char *out = NULL;
	if (wh_kubectl(f, "apply", &out)) {
		wh_dump_log(f);
		fail_msg("kubectl apply of a template at %s was refused (the API server could not call the webhook?): %s",
			 size, out);
	}
	free(out);
	wh_wait_all_at_size(f, size);
}

static void test_serves_the_given_pair_and_reloads_it_without_restart(void **state)
{
	(void)state;
	double t0 = (double)time(NULL);
	struct wh_test f = {0};
	f.admin = it_admin_client();
	f.ns = it_namespace_new(f.admin, "it-webhook-cert-dir");
	snprintf(f.manifest, sizeof(f.manifest), "/tmp/it-webhook-cert-dir-%d.json", (int)getpid());
	char dir[] = "/tmp/it-webhook-cert-dir.XXXXXX";
	if (!mkdtemp(dir))
		fail_msg("mkdtemp");

	struct cert_bundle a = make_pair(300), b = make_pair(200);
	put_pair(dir, &a);
	char *config_rv = set_ca_bundle(f.admin, a.ca_cert_pem);
	it_operator_secrets(f.admin, IT_OPERATOR_NS);
	char *secret_rv = version_of(it_get(f.admin, &KUBE_SECRETS, IT_OPERATOR_NS, WEBHOOK_SECRET));

	wh_start_operator_cert_dir(&f.d, "resize", dir);
	pid_t pid = f.d.pid;
	if (!daemon_wait_log(&f.d, "serving the certificate of --webhook-cert-dir", 5000)) {
		wh_dump_log(&f);
		fail_msg("the operator does not say it serves the files of %s", dir);
	}
	wh_write_manifest(&f, "1Mi", "pause");
	wh_create(&f);
	grow_to(&f, "2Mi");

	/* A new pair of another CA, and the caBundle moved to that CA alone: served without a restart. */
	put_pair(dir, &b);
	char until[32], line[160];
	cert_format_time(cert_not_after_s(b.cert_pem), until);
	snprintf(line, sizeof(line), "(valid until %s)", until);
	if (!daemon_wait_log(&f.d, line, 3 * WEBHOOK_CERT_DIR_POLL_MS)) {
		wh_dump_log(&f);
		fail_msg("the new pair was not served within %d ms", 3 * WEBHOOK_CERT_DIR_POLL_MS);
	}
	free(config_rv);
	config_rv = set_ca_bundle(f.admin, b.ca_cert_pem);
	grow_to(&f, "3Mi");
	int code = 0;
	if (f.d.pid != pid || !daemon_running(&f.d, &code))
		fail_msg("the operator restarted or exited (%d)", code);

	/* Nothing written by the operator: its Secret as it was, the configuration as the test left it. */
	char *secret_after = version_of(it_get(f.admin, &KUBE_SECRETS, IT_OPERATOR_NS, WEBHOOK_SECRET));
	char *config_after = version_of(it_get(f.admin, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, WEBHOOK_CONFIGURATION));
	assert_string_equal(secret_after, secret_rv);
	assert_string_equal(config_after, config_rv);
	char *log = daemon_log(&f.d);
	if (strstr(log, "caBundle of MutatingWebhookConfiguration") || strstr(log, "wrote the certificate into Secret"))
		fail_msg("the operator wrote its Secret or the caBundle:\n%s", log);
	free(log);
	fprintf(stderr, "it_webhook_cert_dir: %.0f s\n", (double)time(NULL) - t0);

	free(secret_after);
	free(config_after);
	free(secret_rv);
	free(config_rv);
	cert_bundle_release(&a);
	cert_bundle_release(&b);
	wh_kill_operator(&f.d);
	it_namespace_delete(f.admin, f.ns);
	unlink(f.manifest);
	it_sh("rm -rf %s", dir);
	kube_client_free(f.admin);
	free(f.ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serves_the_given_pair_and_reloads_it_without_restart),
	};
	return cmocka_run_group_tests(tests, wh_group_setup, wh_group_teardown);
}
