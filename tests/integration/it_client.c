/*
 * The API client against the real API server: conflicts and retries,
 * preconditions, RBAC refusals with the API's own message, pagination,
 * every credential form, and Events with de-duplication.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "itest.h"
#include "runtime/events.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

static json_t *configmap(const char *name, const char *value)
{
	return it_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
		       "\"data\":{\"v\":\"%s\"}}",
		       name, value);
}

struct conflict_ctx {
	struct kube_client *other;
	const char *ns;
	int calls;
};

/* On the first call, someone else changes the object after our GET: our PUT must conflict. */
static int set_mine(void *ctx, json_t *obj)
{
	struct conflict_ctx *cc = ctx;
	if (cc->calls++ == 0) {
		json_t *p = it_json("{\"data\":{\"other\":\"yes\"}}");
		struct kube_error err;
		if (kube_patch(cc->other, &KUBE_CONFIGMAPS, cc->ns, "cm", NULL, KUBE_PATCH_MERGE, p,
			       NULL, &err) < 0)
			fail_msg("concurrent patch: %s", err.message);
		json_decref(p);
	}
	json_object_set_new(json_object_get(obj, "data"), "mine", json_string("yes"));
	return 0;
}

static void test_stale_update_conflicts_and_retry_succeeds(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-conflict");
	struct kube_error err;
	json_t *cm = configmap("cm", "1");
	json_t *created = NULL;
	assert_int_equal(kube_create(admin, &KUBE_CONFIGMAPS, ns, cm, &created, &err), 0);

	/* A plain PUT with the old resourceVersion after a change: 409 Conflict. */
	json_t *p = it_json("{\"data\":{\"v\":\"2\"}}");
	assert_int_equal(kube_patch(admin, &KUBE_CONFIGMAPS, ns, "cm", NULL, KUBE_PATCH_MERGE, p, NULL,
				    &err),
			 0);
	json_object_set_new(json_object_get(created, "data"), "v", json_string("stale"));
	int rc = kube_replace(admin, &KUBE_CONFIGMAPS, ns, "cm", NULL, created, NULL, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 409);
	assert_string_equal(err.reason, "Conflict");
	assert_non_null(strstr(err.message, "the object has been modified"));

	/* The retrying update: re-reads and wins on the second attempt, keeping both changes. */
	struct conflict_ctx cc = {admin, ns, 0};
	json_t *out = NULL;
	assert_int_equal(kube_update_retry(admin, &KUBE_CONFIGMAPS, ns, "cm", set_mine, &cc, 5, &out, &err),
			 0);
	assert_int_equal(cc.calls, 2);
	assert_string_equal(kube_obj_str(out, "data.mine"), "yes");
	assert_string_equal(kube_obj_str(out, "data.other"), "yes");
	assert_string_equal(kube_obj_str(out, "data.v"), "2");

	/* A JSON patch whose test op fails changes nothing. */
	json_t *jp = it_json("[{\"op\":\"test\",\"path\":\"/data/v\",\"value\":\"1\"},"
			     "{\"op\":\"replace\",\"path\":\"/data/v\",\"value\":\"3\"}]");
	rc = kube_patch(admin, &KUBE_CONFIGMAPS, ns, "cm", NULL, KUBE_PATCH_JSON, jp, NULL, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_true(err.code == 422 || err.code == 409);
	json_t *now = NULL;
	assert_int_equal(kube_get(admin, &KUBE_CONFIGMAPS, ns, "cm", &now, &err), 0);
	assert_string_equal(kube_obj_str(now, "data.v"), "2");

	/* A delete whose UID precondition does not match is refused; with the right UID it goes. */
	struct kube_delete_options bad = {.precondition_uid = "00000000-0000-0000-0000-000000000000"};
	rc = kube_delete(admin, &KUBE_CONFIGMAPS, ns, "cm", &bad, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 409);
	assert_string_equal(err.reason, "Conflict");
	assert_non_null(strstr(err.message, "the UID in the precondition"));
	struct kube_delete_options good = {.precondition_uid = kube_obj_str(now, "metadata.uid")};
	assert_int_equal(kube_delete(admin, &KUBE_CONFIGMAPS, ns, "cm", &good, &err), 0);
	rc = kube_get(admin, &KUBE_CONFIGMAPS, ns, "cm", NULL, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 404);
	assert_string_equal(err.reason, "NotFound");

	json_decref(now);
	json_decref(jp);
	json_decref(out);
	json_decref(p);
	json_decref(created);
	json_decref(cm);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

static void test_rbac_refusal_carries_the_api_message(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	struct kube_client *op = it_operator_client();
	char *ns = it_namespace_new(admin, "it-rbac");
	struct kube_error err;
	/* Granted: list pods. */
	json_t *items = NULL;
	assert_int_equal(kube_list_all(op, &KUBE_PODS, ns, NULL, 0, &items, NULL, &err), 0);
	json_decref(items);
	/* Not granted: delete nodes (no controller does), create namespaces. */
	int rc = kube_delete(op, &KUBE_NODES, NULL, "anything", NULL, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 403);
	assert_string_equal(err.reason, "Forbidden");
	if (!strstr(err.message, "cannot delete resource \"nodes\"") ||
	    !strstr(err.message, "system:serviceaccount:stateful-operator-system:stateful-operator"))
		fail_msg("unexpected message: %s", err.message);
	json_t *nsobj = it_json("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"}}");
	rc = kube_create(op, &KUBE_NAMESPACES, NULL, nsobj, NULL, &err);
	assert_int_equal(err.code, 403);
	assert_non_null(strstr(err.message, "cannot create resource \"namespaces\""));
	json_decref(nsobj);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(op);
	kube_client_free(admin);
}

static void test_list_pages_with_continue(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-page");
	struct kube_error err;
	for (int i = 0; i < 23; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cm-%02d", i);
		json_t *cm = configmap(name, "x");
		assert_int_equal(kube_create(admin, &KUBE_CONFIGMAPS, ns, cm, NULL, &err), 0);
		json_decref(cm);
	}
	/* One page of 5 says there is more. */
	struct kube_list_options lo = {.limit = 5};
	json_t *page = NULL;
	assert_int_equal(kube_list_page(admin, &KUBE_CONFIGMAPS, ns, &lo, &page, &err), 0);
	assert_int_equal(json_array_size(json_object_get(page, "items")), 5);
	assert_non_null(kube_obj_str(page, "metadata.continue"));
	json_decref(page);
	/* All pages of 5 hold every object once (23 + the namespace's kube-root-ca.crt). */
	json_t *items = NULL;
	char *rv = NULL;
	assert_int_equal(kube_list_all(admin, &KUBE_CONFIGMAPS, ns, NULL, 5, &items, &rv, &err), 0);
	assert_int_equal(json_array_size(items), 24);
	assert_non_null(rv);
	assert_true(strlen(rv) > 0);
	/* A label selector narrows the list. */
	json_t *sel = NULL;
	assert_int_equal(kube_list_all(admin, &KUBE_CONFIGMAPS, ns, "no-such-label=1", 5, &sel, NULL, &err),
			 0);
	assert_int_equal(json_array_size(sel), 0);
	json_decref(sel);
	json_decref(items);
	free(rv);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

static char *server_and_ca(char **ca_file)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("SOP_OPERATOR_KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	char dir[] = "/tmp/it-ca-XXXXXX";
	if (!mkdtemp(dir))
		fail_msg("mkdtemp");
	*ca_file = xasprintf("%s/ca.crt", dir);
	FILE *f = fopen(*ca_file, "w");
	fwrite(cfg.ca_data.data, 1, cfg.ca_data.len, f);
	fclose(f);
	char *server = xstrdup(cfg.server);
	kube_config_release(&cfg);
	return server;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s", path);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static int list_pods(struct kube_client *c, struct kube_error *err)
{
	json_t *page = NULL;
	struct kube_list_options lo = {.limit = 1};
	int rc = kube_list_page(c, &KUBE_PODS, "default", &lo, &page, err);
	json_decref(page);
	return rc;
}

/*
 * Client certificates (the admin kubeconfig) and static tokens (the
 * operator's) are used by every test; here: an exec credential plugin, a
 * token file re-read after a 401, and a refused token.
 */
static void test_exec_plugin_and_token_file_auth(void **state)
{
	(void)state;
	char *token = it_operator_token();
	char *ca = NULL;
	char *server = server_and_ca(&ca);
	char dir[] = "/tmp/it-auth-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct kube_error err;

	char *plugin = xasprintf("%s/plugin.sh", dir);
	char *script = xasprintf("#!/bin/sh\n"
				 "test -n \"$KUBERNETES_EXEC_INFO\" || exit 3\n"
				 "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
				 "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}'\n",
				 token);
	write_file(plugin, script, 0755);
	char *kc = xasprintf("%s/exec.kubeconfig", dir);
	char *text = xasprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
			       "clusters: [{name: k, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
			       "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
			       "command: '%s', interactiveMode: Never}}}]\n"
			       "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
			       server, ca, plugin);
	write_file(kc, text, 0600);
	struct kube_client *c = it_client_from(kc, NULL);
	assert_int_equal(list_pods(c, &err), 0);
	kube_client_free(c);

	/* A plugin that fails: the error says so, and nothing is sent without credentials. */
	write_file(plugin, "#!/bin/sh\necho 'no credentials for you' >&2\nexit 1\n", 0755);
	c = it_client_from(kc, NULL);
	int rc = list_pods(c, &err);
	assert_int_equal(rc, KUBE_EAUTH);
	assert_non_null(strstr(err.message, "exit"));
	kube_client_free(c);

	/* tokenFile: a bad token is refused (401); after the file is fixed, the next 401 re-reads it. */
	char *tokfile = xasprintf("%s/token", dir);
	write_file(tokfile, "not-a-valid-token\n", 0600);
	free(text);
	text = xasprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
			 "clusters: [{name: k, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
			 "users: [{name: u, user: {tokenFile: '%s'}}]\n"
			 "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
			 server, ca, tokfile);
	char *kc2 = xasprintf("%s/tokenfile.kubeconfig", dir);
	write_file(kc2, text, 0600);
	c = it_client_from(kc2, NULL);
	rc = list_pods(c, &err);
	assert_int_equal(rc, KUBE_EHTTP);
	assert_int_equal(err.code, 401);
	write_file(tokfile, token, 0600);
	assert_int_equal(list_pods(c, &err), 0);
	kube_client_free(c);

	it_sh("rm -rf '%s' \"$(dirname '%s')\"", dir, ca);
	free(kc2);
	free(tokfile);
	free(text);
	free(kc);
	free(script);
	free(plugin);
	free(server);
	free(ca);
	free(token);
}

static json_t *events_about(struct kube_client *c, const char *ns, const char *name)
{
	char *sel = xasprintf("involvedObject.name=%s", name);
	json_t *items = it_events(c, ns, sel);
	free(sel);
	return items;
}

static void test_events_are_recorded_and_deduplicated(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	struct kube_client *op = it_operator_client();
	char *ns = it_namespace_new(admin, "it-events");
	struct kube_error err;
	json_t *cm = configmap("subject", "x");
	json_t *obj = NULL;
	assert_int_equal(kube_create(admin, &KUBE_CONFIGMAPS, ns, cm, &obj, &err), 0);
	json_object_set_new(obj, "kind", json_string("ConfigMap"));
	json_object_set_new(obj, "apiVersion", json_string("v1"));

	/* Recorded with the operator's own identity: its RBAC allows events. */
	struct event_recorder *rec = event_recorder_new(op, "stateful-operator", "it");
	assert_int_equal(event_record(rec, obj, EVENT_WARNING, "ResizeRefused", "size %s is bad", "20Gb"), 0);
	assert_int_equal(event_record(rec, obj, EVENT_WARNING, "ResizeRefused", "size %s is bad", "20Gb"), 0);
	assert_int_equal(event_record(rec, obj, EVENT_NORMAL, "ResizeStarted", "resizing"), 0);

	json_t *evs = events_about(admin, ns, "subject");
	assert_int_equal(json_array_size(evs), 2);
	size_t i;
	json_t *ev;
	int found = 0;
	json_array_foreach(evs, i, ev) {
		if (!strcmp(kube_obj_str(ev, "reason"), "ResizeRefused")) {
			found++;
			assert_int_equal(json_integer_value(json_object_get(ev, "count")), 2);
			assert_string_equal(kube_obj_str(ev, "type"), "Warning");
			assert_string_equal(kube_obj_str(ev, "message"), "size 20Gb is bad");
			assert_string_equal(kube_obj_str(ev, "involvedObject.uid"),
					    kube_obj_str(obj, "metadata.uid"));
			assert_string_equal(kube_obj_str(ev, "source.component"), "stateful-operator");
		}
	}
	assert_int_equal(found, 1);
	json_decref(evs);

	/* A flood on one object: the burst of 25 passes, the rest is dropped. */
	json_t *cm2 = configmap("noisy", "x");
	json_t *noisy = NULL;
	assert_int_equal(kube_create(admin, &KUBE_CONFIGMAPS, ns, cm2, &noisy, &err), 0);
	json_object_set_new(noisy, "kind", json_string("ConfigMap"));
	int dropped = 0;
	for (int n = 0; n < 30; n++)
		dropped += event_record(rec, noisy, EVENT_NORMAL, "Step", "step %d", n) == 1;
	assert_int_equal(dropped, 5);
	evs = events_about(admin, ns, "noisy");
	assert_int_equal(json_array_size(evs), 25);
	json_decref(evs);

	event_recorder_free(rec);
	json_decref(noisy);
	json_decref(cm2);
	json_decref(obj);
	json_decref(cm);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(op);
	kube_client_free(admin);
}

/* The scale and status subresources reach the right endpoints with the right semantics. */
static void test_subresources(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	char *ns = it_namespace_new(admin, "it-sub");
	struct kube_error err;
	json_t *sts = it_json("{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"s\"},"
			      "\"spec\":{\"replicas\":1,\"serviceName\":\"s\",\"selector\":{\"matchLabels\":"
			      "{\"app\":\"s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"s\"}},"
			      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}");
	assert_int_equal(kube_create(admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err), 0);

	/* scale: a Scale object in, the StatefulSet's replicas changed. */
	json_t *scale = it_json("{\"spec\":{\"replicas\":2}}");
	json_t *out = NULL;
	assert_int_equal(kube_patch(admin, &KUBE_STATEFULSETS, ns, "s", "scale", KUBE_PATCH_MERGE, scale,
				    &out, &err),
			 0);
	assert_string_equal(kube_obj_str(out, "kind"), "Scale");
	json_decref(out);
	json_t *now = NULL;
	assert_int_equal(kube_get(admin, &KUBE_STATEFULSETS, ns, "s", &now, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(now, "spec"), "replicas")), 2);
	json_decref(now);

	/* status: a write there cannot change the spec. */
	json_t *st = it_json("{\"spec\":{\"replicas\":5},\"status\":{\"collisionCount\":7}}");
	assert_int_equal(kube_patch(admin, &KUBE_STATEFULSETS, ns, "s", "status", KUBE_PATCH_MERGE, st,
				    &out, &err),
			 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "spec"), "replicas")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "status"), "collisionCount")),
			 7);
	json_decref(out);

	json_decref(st);
	json_decref(scale);
	json_decref(sts);
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_update_conflicts_and_retry_succeeds),
		cmocka_unit_test(test_rbac_refusal_carries_the_api_message),
		cmocka_unit_test(test_list_pages_with_continue),
		cmocka_unit_test(test_exec_plugin_and_token_file_auth),
		cmocka_unit_test(test_events_are_recorded_and_deduplicated),
		cmocka_unit_test(test_subresources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
