/*
 * GitOps edits of volumeClaimTemplates on the real API server: the
 * operator's admission webhook, registered with deploy/webhook's
 * configuration (its matchConditions, selectors and failurePolicy; only the
 * address differs: the test bed's API server calls https://127.0.0.1:PORT),
 * turns an applied template change into a resize. kubectl apply
 * (client-side and server-side) and kubectl replace succeed and end with
 * the template and every claim at the new size, pods kept; an image change
 * in the same update rolls out; denials say what to fix and change
 * nothing; with the webhook gone the API server refuses template changes
 * as always; the operator killed right after the webhook's answer still
 * carries the change out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"
#include "webhook/admission.h"
#include "webhook/webhook.h"

#define SET "web"
#define WAIT_MS 90000L

static int webhook_port_number;
static char webhook_address[64];

/* A port nobody listens on now (the kernel's pick), for the operator to bind. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &len))
		fail_msg("no free port");
	close(fd);
	return ntohs(a.sin_port);
}

static void start_operator(struct daemon *d, const char *controllers)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--webhook-bind-address", webhook_address,
			      "--webhook-cert-names", "127.0.0.1", "--controllers", controllers, NULL};
	daemon_start(d, args, NULL);
	if (!daemon_wait_log(d, "all caches synced", 20000))
		fail_msg("operator did not start");
}

static bool ca_bundle_set(void *ctx)
{
	(void)ctx;
	char *b = it_sh_output("kubectl get mutatingwebhookconfiguration " WEBHOOK_CONFIGURATION
			       " -o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null");
	bool set = b && strlen(b) > 100;
	free(b);
	return set;
}

/* deploy/webhook's configuration, calling this test's operator on 127.0.0.1. */
static void register_webhook(void)
{
	it_sh("kubectl delete mutatingwebhookconfiguration " WEBHOOK_CONFIGURATION " --ignore-not-found >/dev/null");
	char *yaml = it_sh_output("kubectl create --dry-run=client -o json -f %s/deploy/webhook/"
				  "mutatingwebhookconfiguration.yaml",
				  it_source_dir());
	json_t *config = json_loads(yaml ? yaml : "", 0, NULL);
	free(yaml);
	if (!config)
		fail_msg("deploy/webhook/mutatingwebhookconfiguration.yaml does not parse");
	json_t *hook = json_array_get(json_object_get(config, "webhooks"), 0);
	/* The manifest and the code agree on which updates reach the webhook. */
	assert_string_equal(kube_obj_str(json_array_get(json_object_get(hook, "matchConditions"), 0), "expression"),
			    ADMISSION_MATCH_CONDITION);
	char *url = xasprintf("https://127.0.0.1:%d" WEBHOOK_PATH, webhook_port_number);
	json_object_set_new(hook, "clientConfig", json_pack("{s:s}", "url", url));
	free(url);
	struct kube_client *admin = it_admin_client();
	struct kube_error err;
	if (kube_create(admin, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, config, NULL, &err) < 0)
		fail_msg("create MutatingWebhookConfiguration: %s", err.message);
	kube_client_free(admin);
	json_decref(config);
}

struct fixture {
	struct kube_client *admin;
	char *ns;
	struct daemon d;
	char manifest[128];
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	f->admin = it_admin_client();
	f->ns = it_namespace_new(f->admin, "it-webhook");
	snprintf(f->manifest, sizeof(f->manifest), "/tmp/it-webhook-%d.json", (int)getpid());
	start_operator(&f->d, "resize,scaledown,cluster");
	/* The operator writes the caBundle from its Secret; until then the API server cannot call it. */
	if (!it_wait(ca_bundle_set, NULL, 20000))
		fail_msg("the operator did not write the webhook's caBundle");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->d.pid > 0) {
		kill(f->d.pid, SIGKILL);
		daemon_wait_exit(&f->d, 10000);
		daemon_cleanup(&f->d);
	}
	it_namespace_delete(f->admin, f->ns);
	unlink(f->manifest);
	kube_client_free(f->admin);
	free(f->ns);
	free(f);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	webhook_port_number = free_port();
	snprintf(webhook_address, sizeof(webhook_address), "127.0.0.1:%d", webhook_port_number);
	register_webhook();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	it_sh("kubectl delete mutatingwebhookconfiguration " WEBHOOK_CONFIGURATION " --ignore-not-found >/dev/null");
	return 0;
}

/* The set's manifest with its data template at size (and image), written to f->manifest. */
static void write_manifest(struct fixture *f, const char *size, const char *image)
{
	json_t *sts = it_statefulset(SET, 2, "Parallel", "data");
	json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	json_object_set_new(json_object_get(json_object_get(tmpl, "spec"), "resources"), "requests",
			    json_pack("{s:s}", "storage", size));
	json_t *container =
		json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(sts, "spec"), "template"),
								 "spec"),
						 "containers"),
			       0);
	json_object_set_new(container, "image", json_string(image));
	if (json_dump_file(sts, f->manifest, JSON_INDENT(1)))
		fail_msg("cannot write %s", f->manifest);
	json_decref(sts);
}

/* kubectl <verb> of the manifest; its exit status, its output in *out (may be NULL). */
static int kubectl_manifest(struct fixture *f, const char *verb, char **out)
{
	char *cmd = xasprintf("kubectl %s -n %s -f %s 2>&1; echo \"rc=$?\"", verb, f->ns, f->manifest);
	char *text = it_sh_output("%s", cmd);
	free(cmd);
	const char *rc = text ? strstr(text, "rc=") : NULL;
	int status = rc ? atoi(rc + 3) : -1;
	if (out)
		*out = text;
	else
		free(text);
	return status;
}

struct sized {
	struct fixture *f;
	const char *size;
};

/* The template and both claims at the size, and no resize in flight or left to do. */
static bool all_at_size(void *ctx)
{
	struct sized *s = ctx;
	json_t *sts = it_get(s->f->admin, &KUBE_STATEFULSETS, s->f->ns, SET);
	const json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	const char *t = kube_obj_str(tmpl, "spec.resources.requests.storage");
	bool done = sts && t && !strcmp(t, s->size) && !it_annotation(sts, ANNOTATION_RESIZE_STATE) &&
		    !it_annotation(sts, ANNOTATION_DESIRED_TEMPLATES);
	json_decref(sts);
	for (int k = 0; done && k < 2; k++) {
		char name[64];
		snprintf(name, sizeof(name), "data-" SET "-%d", k);
		json_t *pvc = it_get(s->f->admin, &KUBE_PVCS, s->f->ns, name);
		const char *cap = kube_obj_str(pvc, "status.capacity.storage");
		done = cap && !strcmp(cap, s->size);
		json_decref(pvc);
	}
	return done;
}

static void wait_all_at_size(struct fixture *f, const char *size)
{
	struct sized s = {f, size};
	if (!it_wait(all_at_size, &s, WAIT_MS)) {
		char *log = daemon_log(&f->d);
		fprintf(stderr, "---- operator log ----\n%s\n", log);
		free(log);
		fail_msg("template and claims not at %s within %ld ms", size, WAIT_MS);
	}
}

static char *pod_uid(struct fixture *f, int k)
{
	char name[32];
	snprintf(name, sizeof(name), SET "-%d", k);
	json_t *pod = it_get(f->admin, &KUBE_PODS, f->ns, name);
	char *uid = pod ? xstrdup(kube_obj_str(pod, "metadata.uid")) : NULL;
	json_decref(pod);
	return uid;
}

/* Creates the set with verb, edits the size with the same verb: accepted, carried out in place. */
static void grow_with(struct fixture *f, const char *create_verb, const char *update_verb)
{
	write_manifest(f, "1Mi", "pause");
	char *out = NULL;
	if (kubectl_manifest(f, create_verb, &out))
		fail_msg("kubectl %s (create): %s", create_verb, out);
	free(out);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	char *uid0 = pod_uid(f, 0), *uid1 = pod_uid(f, 1);

	write_manifest(f, "2Mi", "pause");
	if (kubectl_manifest(f, update_verb, &out))
		fail_msg("kubectl %s of a bigger template was refused: %s", update_verb, out);
	free(out);
	wait_all_at_size(f, "2Mi");
	/* In place: the same pods. */
	char *after0 = pod_uid(f, 0), *after1 = pod_uid(f, 1);
	assert_string_equal(after0, uid0);
	assert_string_equal(after1, uid1);
	assert_int_equal(it_event_count(f->admin, f->ns, "ResizeStarted", NULL), 1);
	free(uid0);
	free(uid1);
	free(after0);
	free(after1);
}

static void test_kubectl_apply_grows_the_volumes(void **state)
{
	grow_with(*state, "apply", "apply");
}

static void test_server_side_apply_grows_the_volumes(void **state)
{
	grow_with(*state, "apply --server-side", "apply --server-side");
}

static void test_kubectl_replace_grows_the_volumes(void **state)
{
	grow_with(*state, "create", "replace");
}

struct image_ctx {
	struct fixture *f;
	const char *image;
};

static bool image_rolled_out(void *ctx)
{
	struct image_ctx *c = ctx;
	bool done = true;
	for (int k = 0; done && k < 2; k++) {
		char name[32];
		snprintf(name, sizeof(name), SET "-%d", k);
		json_t *pod = it_get(c->f->admin, &KUBE_PODS, c->f->ns, name);
		const char *image = kube_obj_str(json_array_get(json_object_get(json_object_get(pod, "spec"),
										  "containers"),
								0),
						 "image");
		done = image && !strcmp(image, c->image) && kube_pod_ready(pod);
		json_decref(pod);
	}
	return done;
}

static void test_image_and_template_in_one_update(void **state)
{
	struct fixture *f = *state;
	write_manifest(f, "1Mi", "pause");
	assert_int_equal(kubectl_manifest(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	write_manifest(f, "3Mi", "pause:v2");
	char *out = NULL;
	if (kubectl_manifest(f, "apply", &out))
		fail_msg("kubectl apply of a new image and a bigger template: %s", out);
	free(out);
	/* The image change went through at once, the template change through the operator. */
	json_t *sts = it_get(f->admin, &KUBE_STATEFULSETS, f->ns, SET);
	assert_string_equal(kube_obj_str(json_array_get(json_object_get(json_object_get(json_object_get(
									     json_object_get(sts, "spec"), "template"),
									     "spec"),
								  "containers"),
						 0),
				  "image"),
			    "pause:v2");
	json_decref(sts);
	wait_all_at_size(f, "3Mi");
	struct image_ctx c = {f, "pause:v2"};
	if (!it_wait(image_rolled_out, &c, WAIT_MS))
		fail_msg("the new image did not roll out");
}

/* The set and its claims as they are, for "nothing changed". */
static char *snapshot(struct fixture *f)
{
	return it_sh_output("kubectl get statefulset/" SET " -n %s -o jsonpath='{.metadata.uid} "
			    "{.spec.volumeClaimTemplates[*].spec} {.metadata.annotations}'; "
			    "kubectl get pvc -n %s -o jsonpath='{.items[*].spec.resources.requests.storage}'",
			    f->ns, f->ns);
}

/* An apply that must be denied with a message containing each of needles; nothing changes. */
static void expect_denied(struct fixture *f, const char *const *needles)
{
	char *before = snapshot(f);
	char *out = NULL;
	int rc = kubectl_manifest(f, "apply", &out);
	if (rc == 0)
		fail_msg("the update was accepted: %s", out);
	for (const char *const *n = needles; *n; n++)
		if (!strstr(out, *n))
			fail_msg("the denial does not say \"%s\": %s", *n, out);
	if (!strstr(out, "denied the request"))
		fail_msg("not the webhook's denial: %s", out);
	free(out);
	it_sleep_ms(2000);
	char *after = snapshot(f);
	assert_string_equal(after, before);
	free(before);
	free(after);
}

static void test_denials_say_what_to_fix_and_change_nothing(void **state)
{
	struct fixture *f = *state;
	write_manifest(f, "4Mi", "pause");
	assert_int_equal(kubectl_manifest(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);

	/* A shrink without copy and allow-shrink. */
	write_manifest(f, "2Mi", "pause");
	expect_denied(f, (const char *const[]){"data", "4Mi", "2Mi", ANNOTATION_ALLOW_SHRINK, NULL});

	/* A StorageClass that does not exist. */
	json_t *sts = json_load_file(f->manifest, 0, NULL);
	json_t *tmpl = json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 0);
	json_object_set_new(json_object_get(tmpl, "spec"), "storageClassName", json_string("no-such-class"));
	json_object_set_new(json_object_get(json_object_get(json_object_get(tmpl, "spec"), "resources"), "requests"),
			    "storage", json_string("4Mi"));
	json_dump_file(sts, f->manifest, 0);
	expect_denied(f, (const char *const[]){"no-such-class", NULL});

	/* A field a template cannot change. */
	json_object_del(json_object_get(tmpl, "spec"), "storageClassName");
	json_object_set_new(json_object_get(tmpl, "spec"), "accessModes", json_pack("[s]", "ReadWriteMany"));
	json_dump_file(sts, f->manifest, 0);
	expect_denied(f, (const char *const[]){"accessModes", NULL});
	json_decref(sts);
}

static void test_without_the_webhook_the_api_server_refuses_as_always(void **state)
{
	struct fixture *f = *state;
	write_manifest(f, "1Mi", "pause");
	assert_int_equal(kubectl_manifest(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	kill(f->d.pid, SIGKILL);
	daemon_wait_exit(&f->d, 10000);
	daemon_cleanup(&f->d);
	f->d.pid = 0;

	write_manifest(f, "2Mi", "pause");
	char *out = NULL;
	assert_int_not_equal(kubectl_manifest(f, "apply", &out), 0);
	/* The API server's own refusal (its wording varies by version), not the webhook's. */
	if (!strstr(out, "volumeClaimTemplates") || strstr(out, "denied the request") ||
	    (!strstr(out, "field is immutable") && !strstr(out, "Forbidden: updates to statefulset spec")))
		fail_msg("not the API server's usual refusal: %s", out);
	free(out);
	/* Every other update still goes through (failurePolicy Ignore). */
	write_manifest(f, "1Mi", "pause:v3");
	if (kubectl_manifest(f, "apply", &out))
		fail_msg("an image change was refused with the webhook down: %s", out);
	free(out);
}

static void test_operator_killed_after_the_answer_still_resizes(void **state)
{
	struct fixture *f = *state;
	write_manifest(f, "1Mi", "pause");
	assert_int_equal(kubectl_manifest(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	/* An operator that serves the webhook but resizes nothing: the answer is given, no step is taken. */
	kill(f->d.pid, SIGKILL);
	daemon_wait_exit(&f->d, 10000);
	daemon_cleanup(&f->d);
	start_operator(&f->d, "scaledown");
	write_manifest(f, "5Mi", "pause");
	char *out = NULL;
	if (kubectl_manifest(f, "apply", &out))
		fail_msg("kubectl apply: %s", out);
	free(out);
	json_t *sts = it_get(f->admin, &KUBE_STATEFULSETS, f->ns, SET);
	assert_non_null(it_annotation(sts, ANNOTATION_DESIRED_TEMPLATES));
	json_decref(sts);
	kill(f->d.pid, SIGKILL);
	daemon_wait_exit(&f->d, 10000);
	daemon_cleanup(&f->d);
	/* What was recorded lives in the cluster: a fresh operator carries it out. */
	start_operator(&f->d, "resize,scaledown,cluster");
	wait_all_at_size(f, "5Mi");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kubectl_apply_grows_the_volumes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_side_apply_grows_the_volumes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kubectl_replace_grows_the_volumes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_and_template_in_one_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denials_say_what_to_fix_and_change_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_the_webhook_the_api_server_refuses_as_always, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_operator_killed_after_the_answer_still_resizes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
