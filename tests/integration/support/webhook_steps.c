#include "webhook_steps.h"

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
#include "itest.h"
#include "util/xalloc.h"
#include "webhook/admission.h"
#include "webhook/webhook.h"

static int port;
static char address[64];

const char *wh_address(void)
{
	return address;
}

int wh_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &len))
		fail_msg("no free port");
	close(fd);
	return ntohs(a.sin_port);
}

void wh_start_operator(struct daemon *d, const char *controllers)
{
	wh_start_operator_cert_dir(d, controllers, NULL);
}

void wh_start_operator_cert_dir(struct daemon *d, const char *controllers, const char *cert_dir)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--webhook-bind-address", address,
			      "--webhook-cert-names", "127.0.0.1", "--controllers", controllers,
			      cert_dir ? "--webhook-cert-dir" : NULL, cert_dir, NULL};
	daemon_start(d, args, NULL);
	if (!daemon_wait_log(d, "all caches synced", 20000))
		fail_msg("operator did not start");
}

void wh_kill_operator(struct daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	daemon_wait_exit(d, 10000);
	daemon_cleanup(d);
	d->pid = 0;
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
	char *url = xasprintf("https://127.0.0.1:%d" WEBHOOK_PATH, port);
	size_t i;
	json_array_foreach(json_object_get(config, "webhooks"), i, hook)
		json_object_set_new(hook, "clientConfig", json_pack("{s:s}", "url", url));
	free(url);
	struct kube_client *admin = it_admin_client();
	struct kube_error err;
	if (kube_create(admin, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, config, NULL, &err) < 0)
		fail_msg("create MutatingWebhookConfiguration: %s", err.message);
	kube_client_free(admin);
	json_decref(config);
}

int wh_group_setup(void **state)
{
	(void)state;
	port = wh_free_port();
	snprintf(address, sizeof(address), "127.0.0.1:%d", port);
	register_webhook();
	return 0;
}

int wh_group_teardown(void **state)
{
	(void)state;
	it_sh("kubectl delete mutatingwebhookconfiguration " WEBHOOK_CONFIGURATION " --ignore-not-found >/dev/null");
	return 0;
}

int wh_setup(void **state)
{
	struct wh_test *f = xcalloc(1, sizeof(*f));
	f->admin = it_admin_client();
	f->ns = it_namespace_new(f->admin, "it-webhook");
	snprintf(f->manifest, sizeof(f->manifest), "/tmp/it-webhook-%d.json", (int)getpid());
	wh_start_operator(&f->d, "resize,scaledown,cluster");
	/* The operator writes the caBundle from its Secret; until then the API server cannot call it. */
	if (!it_wait(ca_bundle_set, NULL, 20000))
		fail_msg("the operator did not write the webhook's caBundle");
	*state = f;
	return 0;
}

int wh_teardown(void **state)
{
	struct wh_test *f = *state;
	wh_kill_operator(&f->d);
	it_namespace_delete(f->admin, f->ns);
	unlink(f->manifest);
	kube_client_free(f->admin);
	free(f->ns);
	free(f);
	return 0;
}

json_t *wh_template(json_t *sts, size_t i)
{
	return json_array_get(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), i);
}

json_t *wh_statefulset(const char *size, const char *cls, const char *image)
{
	json_t *sts = it_statefulset(WH_SET, 2, "Parallel", "data");
	json_t *tmpl = wh_template(sts, 0);
	json_object_set_new(json_object_get(json_object_get(tmpl, "spec"), "resources"), "requests",
			    json_pack("{s:s}", "storage", size));
	if (cls)
		json_object_set_new(json_object_get(tmpl, "spec"), "storageClassName", json_string(cls));
	json_t *pod_spec = json_object_get(json_object_get(json_object_get(sts, "spec"), "template"), "spec");
	json_object_set_new(json_array_get(json_object_get(pod_spec, "containers"), 0), "image", json_string(image));
	return sts;
}

void wh_write(struct wh_test *f, const json_t *obj)
{
	if (json_dump_file(obj, f->manifest, JSON_INDENT(1)))
		fail_msg("cannot write %s", f->manifest);
}

void wh_write_manifest(struct wh_test *f, const char *size, const char *image)
{
	json_t *sts = wh_statefulset(size, NULL, image);
	wh_write(f, sts);
	json_decref(sts);
}

int wh_kubectl(struct wh_test *f, const char *verb, char **out)
{
	char *text = it_sh_output("kubectl %s -n %s -f %s 2>&1; echo \"rc=$?\"", verb, f->ns, f->manifest);
	const char *rc = text ? strstr(text, "rc=") : NULL;
	int status = rc ? atoi(rc + 3) : -1;
	if (out)
		*out = text;
	else
		free(text);
	return status;
}

void wh_create(struct wh_test *f)
{
	char *out = NULL;
	if (wh_kubectl(f, "apply", &out))
		fail_msg("kubectl apply (create): %s", out);
	free(out);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
}

json_t *wh_get_set(struct wh_test *f)
{
	return it_get(f->admin, &KUBE_STATEFULSETS, f->ns, WH_SET);
}

void wh_dump_log(struct wh_test *f)
{
	char *log = daemon_log(&f->d);
	fprintf(stderr, "---- operator log ----\n%s\n---- end of log ----\n", log ? log : "");
	free(log);
}

struct sized {
	struct wh_test *f;
	const char *size;
};

/* The template and both claims at the size, and no resize in flight or left to do. */
static bool all_at_size(void *ctx)
{
	struct sized *s = ctx;
	json_t *sts = wh_get_set(s->f);
	const char *t = kube_obj_str(wh_template(sts, 0), "spec.resources.requests.storage");
	bool done = sts && t && !strcmp(t, s->size) && !it_annotation(sts, ANNOTATION_RESIZE_STATE) &&
		    !it_annotation(sts, ANNOTATION_DESIRED_TEMPLATES);
	json_decref(sts);
	for (int k = 0; done && k < 2; k++) {
		char name[64];
		snprintf(name, sizeof(name), "data-" WH_SET "-%d", k);
		json_t *pvc = it_get(s->f->admin, &KUBE_PVCS, s->f->ns, name);
		const char *cap = kube_obj_str(pvc, "status.capacity.storage");
		done = cap && !strcmp(cap, s->size);
		json_decref(pvc);
	}
	return done;
}

void wh_wait_all_at_size(struct wh_test *f, const char *size)
{
	struct sized s = {f, size};
	if (!it_wait(all_at_size, &s, WH_WAIT_MS)) {
		wh_dump_log(f);
		fail_msg("template and claims not at %s within %ld ms", size, WH_WAIT_MS);
	}
}

struct settled {
	struct wh_test *f;
	const char *old_uid;
};

static bool settled(void *ctx)
{
	struct settled *s = ctx;
	json_t *sts = wh_get_set(s->f);
	const char *uid = kube_obj_str(sts, "metadata.uid");
	bool done = sts && !it_annotation(sts, ANNOTATION_RESIZE_STATE) &&
		    !it_annotation(sts, ANNOTATION_DESIRED_TEMPLATES) && (!s->old_uid || (uid && strcmp(uid, s->old_uid)));
	json_decref(sts);
	/* While a copy takes replicas down, the set is re-created without its state: the saved copy holds it. */
	json_t *backup = done ? it_get(s->f->admin, &KUBE_CONFIGMAPS, s->f->ns, WH_SET BACKUP_SUFFIX) : NULL;
	done &= backup == NULL;
	json_decref(backup);
	return done;
}

void wh_wait_settled(struct wh_test *f, const char *old_uid)
{
	struct settled s = {f, old_uid};
	if (!it_wait(settled, &s, WH_WAIT_MS)) {
		wh_dump_log(f);
		fail_msg("the set did not settle (re-created, no resize state or desired templates) within %ld ms",
			 WH_WAIT_MS);
	}
}
