/*
 * GitOps edits of volumeClaimTemplates on the real API server: the
 * operator's admission webhook, registered with deploy/webhook's
 * configuration (its matchConditions, selectors and failurePolicy; only the
 * address differs: the test bed's API server calls https://127.0.0.1:PORT),
 * turns an applied template change into a resize. kubectl apply
 * (client-side and server-side), kubectl replace and helm upgrade of a
 * changed chart (helm built from the Go module proxy) succeed and end with
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

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "daemon.h"
#include "itest.h"
#include "util/xalloc.h"
#include "webhook_steps.h"

#define SET WH_SET
#define WAIT_MS WH_WAIT_MS

static char *pod_uid(struct wh_test *f, int k)
{
	char name[32];
	snprintf(name, sizeof(name), SET "-%d", k);
	json_t *pod = it_get(f->admin, &KUBE_PODS, f->ns, name);
	char *uid = pod ? xstrdup(kube_obj_str(pod, "metadata.uid")) : NULL;
	json_decref(pod);
	return uid;
}

/* Creates the set with verb, edits the size with the same verb: accepted, carried out in place. */
static void grow_with(struct wh_test *f, const char *create_verb, const char *update_verb)
{
	wh_write_manifest(f, "1Mi", "pause");
	char *out = NULL;
	if (wh_kubectl(f, create_verb, &out))
		fail_msg("kubectl %s (create): %s", create_verb, out);
	free(out);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	char *uid0 = pod_uid(f, 0), *uid1 = pod_uid(f, 1);

	wh_write_manifest(f, "2Mi", "pause");
	if (wh_kubectl(f, update_verb, &out))
		fail_msg("kubectl %s of a bigger template was refused: %s", update_verb, out);
	free(out);
	wh_wait_all_at_size(f, "2Mi");
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

/*
 * A chart holding the set (the manifest as its template, the size from
 * values), in dir; helm's own state under dir too.
 */
static void write_chart(struct wh_test *f, const char *dir, const char *version, const char *size)
{
	json_t *sts = wh_statefulset("SIZE", NULL, "pause");
	char *text = json_dumps(sts, JSON_INDENT(1));
	json_decref(sts);
	char *quoted = strstr(text, "\"SIZE\"");
	assert_non_null(quoted);
	*quoted = '\0';
	if (it_sh("mkdir -p %s/chart/templates && cd %s/chart && "
		  "printf 'apiVersion: v2\\nname: web\\nversion: %s\\n' > Chart.yaml && "
		  "printf 'size: %s\\n' > values.yaml && "
		  "printf '%%s' '%s' > templates/statefulset.yaml && "
		  "printf '{{ .Values.size | quote }}%%s' '%s' >> templates/statefulset.yaml",
		  dir, dir, version, size, text, quoted + strlen("\"SIZE\"")))
		fail_msg("cannot write the chart in %s", dir);
	(void)f;
	free(text);
}

/* helm verb of dir's chart as release web in the test's namespace; 0 on success, else *out says why. */
static int helm(struct wh_test *f, const char *dir, const char *verb, char **out)
{
	char *text = it_sh_output("HELM_CACHE_HOME=%s/cache HELM_CONFIG_HOME=%s/config HELM_DATA_HOME=%s/data "
				  "helm %s web %s/chart -n %s 2>&1; echo \"rc=$?\"",
				  dir, dir, dir, verb, dir, f->ns);
	const char *rc = text ? strstr(text, "rc=") : NULL;
	int status = rc ? atoi(rc + 3) : -1;
	*out = text;
	return status;
}

/* helm upgrade of a chart whose new version has a bigger template: accepted, carried out in place. */
static void test_helm_upgrade_grows_the_volumes(void **state)
{
	struct wh_test *f = *state;
	char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/it-webhook-helm-%d", (int)getpid());
	write_chart(f, dir, "1.0.0", "1Mi");
	char *out = NULL;
	if (helm(f, dir, "install", &out))
		fail_msg("helm install: %s", out);
	free(out);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	char *uid0 = pod_uid(f, 0);

	write_chart(f, dir, "1.1.0", "2Mi");
	if (helm(f, dir, "upgrade", &out))
		fail_msg("helm upgrade of a chart with a bigger template was refused: %s", out);
	free(out);
	wh_wait_all_at_size(f, "2Mi");
	char *after0 = pod_uid(f, 0);
	assert_string_equal(after0, uid0);
	/* helm still owns the set: the release's next upgrade works on it. */
	if (helm(f, dir, "upgrade --reuse-values", &out))
		fail_msg("helm upgrade after the resize: %s", out);
	free(out);
	free(uid0);
	free(after0);
	it_sh("rm -rf %s", dir);
}

struct image_ctx {
	struct wh_test *f;
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
	struct wh_test *f = *state;
	wh_write_manifest(f, "1Mi", "pause");
	assert_int_equal(wh_kubectl(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	wh_write_manifest(f, "3Mi", "pause:v2");
	char *out = NULL;
	if (wh_kubectl(f, "apply", &out))
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
	wh_wait_all_at_size(f, "3Mi");
	struct image_ctx c = {f, "pause:v2"};
	if (!it_wait(image_rolled_out, &c, WAIT_MS))
		fail_msg("the new image did not roll out");
}

/* The set and its claims as they are, for "nothing changed". */
static char *snapshot(struct wh_test *f)
{
	return it_sh_output("kubectl get statefulset/" SET " -n %s -o jsonpath='{.metadata.uid} "
			    "{.spec.volumeClaimTemplates[*].spec} {.metadata.annotations}'; "
			    "kubectl get pvc -n %s -o jsonpath='{.items[*].spec.resources.requests.storage}'",
			    f->ns, f->ns);
}

/* An apply that must be denied with a message containing each of needles; nothing changes. */
static void expect_denied(struct wh_test *f, const char *const *needles)
{
	char *before = snapshot(f);
	char *out = NULL;
	int rc = wh_kubectl(f, "apply", &out);
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
	struct wh_test *f = *state;
	wh_write_manifest(f, "4Mi", "pause");
	assert_int_equal(wh_kubectl(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);

	/* A shrink without copy and allow-shrink. */
	wh_write_manifest(f, "2Mi", "pause");
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

/*
 * Denials that depend on the cluster's classes and the set's annotations,
 * on a set in the test bed's StorageClass "fixed" (allowVolumeExpansion
 * false): each says what to fix, and nothing changes.
 */
static void test_expand_attributes_class_and_annotation_denials(void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("4Mi", "fixed", "pause");
	wh_write(f, sts);
	wh_create(f);
	json_t *spec = json_object_get(wh_template(sts, 0), "spec");
	json_t *requests = json_object_get(json_object_get(spec, "resources"), "requests");

	/* Growth under strategy expand on a class that cannot expand. */
	it_set_annotation(sts, ANNOTATION_STRATEGY, "expand");
	json_object_set_new(requests, "storage", json_string("8Mi"));
	wh_write(f, sts);
	expect_denied(f, (const char *const[]){"data", ANNOTATION_STRATEGY, "expand", "StorageClass fixed",
					       "does not allow volume expansion", "use strategy copy or auto", NULL});

	/* A VolumeAttributesClass that does not exist. */
	json_object_del(json_object_get(json_object_get(sts, "metadata"), "annotations"), ANNOTATION_STRATEGY);
	json_object_set_new(requests, "storage", json_string("4Mi"));
	json_object_set_new(spec, "volumeAttributesClassName", json_string("no-such-attributes-class"));
	wh_write(f, sts);
	expect_denied(f, (const char *const[]){"data", "VolumeAttributesClass", "no-such-attributes-class",
					       "does not exist", "fix spec.volumeAttributesClassName", NULL});

	/* A per-template annotation that disagrees with the applied template. */
	json_object_del(spec, "volumeAttributesClassName");
	json_object_set_new(requests, "storage", json_string("8Mi"));
	it_set_annotation(sts, RESIZE_ANNOTATION_PREFIX "data", "6Mi");
	wh_write(f, sts);
	expect_denied(f, (const char *const[]){RESIZE_ANNOTATION_PREFIX "data", "6Mi", "asks for 8Mi",
					       "remove the annotation or make it agree", NULL});
	json_decref(sts);
}

static void test_without_the_webhook_the_api_server_refuses_as_always(void **state)
{
	struct wh_test *f = *state;
	wh_write_manifest(f, "1Mi", "pause");
	assert_int_equal(wh_kubectl(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	wh_kill_operator(&f->d);

	wh_write_manifest(f, "2Mi", "pause");
	char *out = NULL;
	assert_int_not_equal(wh_kubectl(f, "apply", &out), 0);
	/* The API server's own refusal (its wording varies by version), not the webhook's. */
	if (!strstr(out, "volumeClaimTemplates") || strstr(out, "denied the request") ||
	    (!strstr(out, "field is immutable") && !strstr(out, "Forbidden: updates to statefulset spec")))
		fail_msg("not the API server's usual refusal: %s", out);
	free(out);
	/* Every other update still goes through (failurePolicy Ignore). */
	wh_write_manifest(f, "1Mi", "pause:v3");
	if (wh_kubectl(f, "apply", &out))
		fail_msg("an image change was refused with the webhook down: %s", out);
	free(out);
}

static void test_operator_killed_after_the_answer_still_resizes(void **state)
{
	struct wh_test *f = *state;
	wh_write_manifest(f, "1Mi", "pause");
	assert_int_equal(wh_kubectl(f, "apply", NULL), 0);
	it_wait_ready_and_bound(f->admin, f->ns, 2, 2, 60000);
	/* An operator that serves the webhook but resizes nothing: the answer is given, no step is taken. */
	wh_kill_operator(&f->d);
	wh_start_operator(&f->d, "scaledown");
	wh_write_manifest(f, "5Mi", "pause");
	char *out = NULL;
	if (wh_kubectl(f, "apply", &out))
		fail_msg("kubectl apply: %s", out);
	free(out);
	json_t *sts = it_get(f->admin, &KUBE_STATEFULSETS, f->ns, SET);
	assert_non_null(it_annotation(sts, ANNOTATION_DESIRED_TEMPLATES));
	json_decref(sts);
	wh_kill_operator(&f->d);
	/* What was recorded lives in the cluster: a fresh operator carries it out. */
	wh_start_operator(&f->d, "resize,scaledown,cluster");
	wh_wait_all_at_size(f, "5Mi");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kubectl_apply_grows_the_volumes, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_server_side_apply_grows_the_volumes, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_kubectl_replace_grows_the_volumes, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_helm_upgrade_grows_the_volumes, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_image_and_template_in_one_update, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_denials_say_what_to_fix_and_change_nothing, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_expand_attributes_class_and_annotation_denials, wh_setup,
						wh_teardown),
		cmocka_unit_test_setup_teardown(test_without_the_webhook_the_api_server_refuses_as_always, wh_setup,
						wh_teardown),
		cmocka_unit_test_setup_teardown(test_operator_killed_after_the_answer_still_resizes, wh_setup, wh_teardown),
	};
	return cmocka_run_group_tests(tests, wh_group_setup, wh_group_teardown);
}
