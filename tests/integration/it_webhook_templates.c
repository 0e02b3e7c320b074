/*
 * What each applied template change does, on the real API server with the
 * webhook registered (webhook_steps.h): a StorageClass change by copy, with
 * the same manifest re-applied mid-copy (no restart, one ResizeStarted);
 * a shrink by copy the manifest's annotations allow; labels and
 * annotations onto the claims; a template added (each pod
 * restarted to mount it) and removed (claims kept, named in an Event);
 * a volumeAttributesClassName change (the test bed's resizer plays the
 * driver), and one the driver finds Infeasible; the opt-out label and a
 * server-side dry run; desired templates annotated by hand, a bad set
 * refused (nothing deleted) and a good one carried out; two replicas serving one certificate, and a
 * certificate near expiry renewed at start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "daemon.h"
#include "itest.h"
#include "util/base64.h"
#include "util/xalloc.h"
#include "webhook/webhook.h"
#include "webhook/template_fields.h"
#include "webhook/webhook_cert.h"
#include "webhook_steps.h"

#define OPERATOR_NS "stateful-operator-system"

static void apply_ok(struct wh_test *f, const char *verb)
{
	char *out = NULL;
	if (wh_kubectl(f, verb, &out))
		fail_msg("kubectl %s: %s", verb, out);
	free(out);
}

static void apply_retrying(struct wh_test *f, const char *verb)
{
	char *out = NULL;
	for (int i = 0; wh_kubectl(f, verb, &out); i++) {
		if (i == 100)
			fail_msg("kubectl %s kept failing: %s", verb, out);
		if (!strstr(out, "NotFound") && !strstr(out, "re-creates it in a moment"))
			fail_msg("kubectl %s: %s", verb, out);
		free(out);
		it_sleep_ms(300);
	}
	free(out);
}

static char *claim_field(struct wh_test *f, const char *claim, const char *path)
{
	json_t *pvc = it_get(f->admin, &KUBE_PVCS, f->ns, claim);
	const char *v = kube_obj_str(pvc, path);
	char *out = v ? xstrdup(v) : NULL;
	json_decref(pvc);
	return out;
}

static char *set_uid(struct wh_test *f)
{
	json_t *sts = wh_get_set(f);
	char *uid = sts ? xstrdup(kube_obj_str(sts, "metadata.uid")) : NULL;
	json_decref(sts);
	return uid;
}

/* Creates sts from the manifest file and waits for its pods; its UID (a new string). */
static char *create_set(struct wh_test *f, const json_t *sts)
{
	wh_write(f, sts);
	wh_create(f);
	return set_uid(f);
}

static bool resize_under_way(void *ctx)
{
	struct wh_test *f = ctx;
	json_t *sts = wh_get_set(f);
	bool on = sts && it_annotation(sts, ANNOTATION_RESIZE_STATE);
	json_decref(sts);
	return on;
}

/* The set re-created with field path (of a template and a claim) at want, both claims too, after one ResizeStarted. */
static void expect_template_and_claims(struct wh_test *f, const char *path, const char *want)
{
	json_t *now = wh_get_set(f);
	assert_string_equal(kube_obj_str(wh_template(now, 0), path), want);
	json_decref(now);
	for (int k = 0; k < 2; k++) {
		char claim[32];
		snprintf(claim, sizeof(claim), "data-" WH_SET "-%d", k);
		char *have = claim_field(f, claim, path);
		if (!have || strcmp(have, want)) {
			wh_dump_log(f);
			fail_msg("claim %s has %s %s, not %s", claim, path, have ? have : "(none)", want);
		}
		free(have);
	}
	int started = it_event_count(f->admin, f->ns, "ResizeStarted", NULL);
	if (started != 1) {
		it_print_events_and_failed_open(f->admin, f->ns);
		wh_dump_log(f);
		fail_msg("%d ResizeStarted Events, not 1", started);
	}
}

static void test_class_change_by_copy_reapplied_mid_copy(
void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("1Mi", NULL, "pause");
	char *uid = create_set(f, sts);
	json_object_set_new(json_object_get(wh_template(sts, 0), "spec"), "storageClassName", json_string("fixed"));
	wh_write(f, sts);
	apply_ok(f, "apply");
	if (!it_wait(resize_under_way, f, 30000))
		fail_msg("no resize started");
	/*
	 * A GitOps loop applying the same manifest while the copy runs: nothing
	 * restarts. While the copy has the set deleted, an apply fails (not
	 * found, or its create refused until the operator re-created it): a
	 * GitOps tool retries, and so does this test.
	 */
	apply_retrying(f, "apply");
	it_sleep_ms(500);
	apply_retrying(f, "apply --server-side --force-conflicts");
	wh_wait_settled(f, uid);
	expect_template_and_claims(f, "spec.storageClassName", "fixed");
	free(uid);
	json_decref(sts);
}

/*
 * A shrink applied from the manifest, allowed by the manifest's own
 * annotations (strategy copy, allow-shrink): carried out by copy, the
 * template and every claim end at the smaller size.
 */
static void test_shrink_by_copy_allowed_in_the_manifest(void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("2Mi", NULL, "pause");
	json_t *meta = json_object_get(sts, "metadata");
	if (!json_object_get(meta, "annotations"))
		json_object_set_new(meta, "annotations", json_object());
	json_t *ann = json_object_get(meta, "annotations");
	json_object_set_new(ann, ANNOTATION_STRATEGY, json_string("copy"));
	json_object_set_new(ann, ANNOTATION_ALLOW_SHRINK, json_string("true"));
	char *uid = create_set(f, sts);
	json_object_set_new(json_object_get(json_object_get(json_object_get(wh_template(sts, 0), "spec"), "resources"),
					    "requests"),
			    "storage", json_string("1Mi"));
	wh_write(f, sts);
	apply_ok(f, "apply");
	wh_wait_settled(f, uid);
	expect_template_and_claims(f, "spec.resources.requests.storage", "1Mi");
	free(uid);
	json_decref(sts);
}

static void test_labels_and_annotations_reach_the_claims(void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("1Mi", NULL, "pause");
	char *uid = create_set(f, sts);
	json_t *meta = json_object_get(wh_template(sts, 0), "metadata");
	json_object_set_new(meta, "labels", json_pack("{s:s}", "tier", "gold"));
	json_object_set_new(meta, "annotations", json_pack("{s:s}", "backup.example.com/schedule", "daily"));
	wh_write(f, sts);
	apply_ok(f, "apply");
	wh_wait_settled(f, uid);
	for (int k = 0; k < 2; k++) {
		char claim[32];
		snprintf(claim, sizeof(claim), "data-" WH_SET "-%d", k);
		char *tier = claim_field(f, claim, "metadata.labels.tier");
		json_t *pvc = it_get(f->admin, &KUBE_PVCS, f->ns, claim);
		assert_string_equal(tier, "gold");
		assert_string_equal(it_annotation(pvc, "backup.example.com/schedule"), "daily");
		json_decref(pvc);
		free(tier);
	}
	json_t *now = wh_get_set(f);
	assert_string_equal(kube_obj_str(wh_template(now, 0), "metadata.labels.tier"), "gold");
	json_decref(now);
	free(uid);
	json_decref(sts);
}

/* Every pod Ready, mounting its claim logs-web-<ordinal>. */
static bool pods_mount_logs(void *ctx)
{
	struct wh_test *f = ctx;
	bool done = true;
	for (int k = 0; done && k < 2; k++) {
		char name[16], claim[32];
		snprintf(name, sizeof(name), WH_SET "-%d", k);
		snprintf(claim, sizeof(claim), "logs-" WH_SET "-%d", k);
		json_t *pod = it_get(f->admin, &KUBE_PODS, f->ns, name);
		bool mounts = false;
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
			const char *c = kube_obj_str(v, "persistentVolumeClaim.claimName");
			mounts |= c && !strcmp(c, claim);
		}
		done = mounts && kube_pod_ready(pod);
		json_decref(pod);
	}
	return done;
}

static void test_template_added_then_removed(void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("1Mi", NULL, "pause");
	char *uid = create_set(f, sts);
	json_t *logs = json_deep_copy(wh_template(sts, 0));
	json_object_set_new(json_object_get(logs, "metadata"), "name", json_string("logs"));
	json_array_append_new(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), logs);
	wh_write(f, sts);
	apply_ok(f, "apply");
	wh_wait_settled(f, uid);
	json_t *now = wh_get_set(f);
	assert_int_equal(json_array_size(json_object_get(json_object_get(now, "spec"), "volumeClaimTemplates")), 2);
	json_decref(now);
	/*
	 * The pods made before the template cannot mount it, and the
	 * StatefulSet controller stalls on them: the operator restarts each,
	 * one at a time, before it is done.
	 */
	if (!it_wait(pods_mount_logs, f, WH_WAIT_MS)) {
		it_sh("kubectl get pods,pvc -n %s -o wide; kubectl get events -n %s", f->ns, f->ns);
		wh_dump_log(f);
		fail_msg("the pods did not come back with their logs claims");
	}
	if (it_event_count(f->admin, f->ns, "RestartingPod", NULL) != 2)
		fail_msg("want one RestartingPod Event per pod, got %d",
			 it_event_count(f->admin, f->ns, "RestartingPod", NULL));

	/* Removed: the set is re-created without it, the claim is kept and named. */
	free(uid);
	uid = set_uid(f);
	json_array_remove(json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates"), 1);
	wh_write(f, sts);
	apply_ok(f, "apply");
	wh_wait_settled(f, uid);
	now = wh_get_set(f);
	assert_int_equal(json_array_size(json_object_get(json_object_get(now, "spec"), "volumeClaimTemplates")), 1);
	json_decref(now);
	json_t *pvc = it_get(f->admin, &KUBE_PVCS, f->ns, "logs-" WH_SET "-1");
	assert_non_null(pvc);
	json_decref(pvc);
	char *msg = it_event_message(f->admin, f->ns, "VolumeClaimTemplateRemoved", NULL);
	if (!msg || !strstr(msg, "logs-" WH_SET "-1"))
		fail_msg("no VolumeClaimTemplateRemoved Event naming the kept claim: %s", msg ? msg : "(none)");
	free(msg);
	free(uid);
	json_decref(sts);
}

static void make_attributes_class(const char *name, bool fail)
{
	if (it_sh("kubectl apply -f - >/dev/null <<'EOF'\n"
		  "apiVersion: storage.k8s.io/v1\nkind: VolumeAttributesClass\nmetadata: {name: %s}\n"
		  "driverName: kubernetes.io/host-path\nparameters: {iops: \"3000\"%s}\nEOF",
		  name, fail ? ", testbed.stateful-operator.io/modify-fail: \"true\"" : ""))
		fail_msg("cannot create VolumeAttributesClass %s", name);
}

struct attrs {
	struct wh_test *f;
	const char *cls;
};

static bool claims_have_attributes_class(void *ctx)
{
	struct attrs *a = ctx;
	bool done = true;
	for (int k = 0; done && k < 2; k++) {
		char claim[32];
		snprintf(claim, sizeof(claim), "data-" WH_SET "-%d", k);
		char *cur = claim_field(a->f, claim, "status.currentVolumeAttributesClassName");
		done = cur && !strcmp(cur, a->cls);
		free(cur);
	}
	return done;
}

static void test_attributes_class_change_and_an_infeasible_one(void **state)
{
	struct wh_test *f = *state;
	make_attributes_class("it-webhook-gold", false);
	make_attributes_class("it-webhook-broken", true);
	json_t *sts = wh_statefulset("1Mi", NULL, "pause");
	char *uid = create_set(f, sts);
	char *pod_before = NULL;
	json_t *pod = it_get(f->admin, &KUBE_PODS, f->ns, WH_SET "-0");
	pod_before = xstrdup(kube_obj_str(pod, "metadata.uid"));
	json_decref(pod);

	json_t *spec = json_object_get(wh_template(sts, 0), "spec");
	json_object_set_new(spec, "volumeAttributesClassName", json_string("it-webhook-gold"));
	wh_write(f, sts);
	apply_ok(f, "apply");
	struct attrs a = {f, "it-webhook-gold"};
	if (!it_wait(claims_have_attributes_class, &a, WH_WAIT_MS)) {
		wh_dump_log(f);
		fail_msg("the claims did not reach VolumeAttributesClass it-webhook-gold");
	}
	wh_wait_settled(f, uid);
	json_t *now = wh_get_set(f);
	assert_string_equal(kube_obj_str(wh_template(now, 0), "spec.volumeAttributesClassName"), "it-webhook-gold");
	json_decref(now);
	/* No pod restarted. */
	pod = it_get(f->admin, &KUBE_PODS, f->ns, WH_SET "-0");
	assert_string_equal(kube_obj_str(pod, "metadata.uid"), pod_before);
	json_decref(pod);

	/* The driver refuses: reported like a failed expansion, the template stays. */
	json_object_set_new(spec, "volumeAttributesClassName", json_string("it-webhook-broken"));
	wh_write(f, sts);
	apply_ok(f, "apply");
	for (int i = 0; i < 600 && it_event_count(f->admin, f->ns, "ResizeFailed", NULL) == 0; i++)
		it_sleep_ms(200);
	char *msg = it_event_message(f->admin, f->ns, "ResizeFailed", NULL);
	if (!msg || !strstr(msg, "Infeasible"))
		fail_msg("no ResizeFailed Event saying Infeasible: %s", msg ? msg : "(none)");
	free(msg);
	now = wh_get_set(f);
	assert_string_equal(kube_obj_str(wh_template(now, 0), "spec.volumeAttributesClassName"), "it-webhook-gold");
	json_decref(now);
	free(pod_before);
	free(uid);
	json_decref(sts);
	it_sh("kubectl delete volumeattributesclass it-webhook-gold it-webhook-broken --wait=false >/dev/null 2>&1");
}

static void test_opt_out_label_and_server_dry_run(void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("1Mi", NULL, "pause");
	wh_write(f, sts);
	wh_create(f);
	json_object_set_new(json_object_get(json_object_get(json_object_get(wh_template(sts, 0), "spec"), "resources"),
					    "requests"),
			    "storage", json_string("2Mi"));
	/* A server-side dry run is answered, and nothing is recorded. */
	wh_write(f, sts);
	apply_ok(f, "apply --dry-run=server");
	json_t *now = wh_get_set(f);
	assert_null(it_annotation(now, ANNOTATION_DESIRED_TEMPLATES));
	json_decref(now);
	it_sleep_ms(2000);
	assert_int_equal(it_event_count(f->admin, f->ns, "ResizeStarted", NULL), 0);

	/* Opted out: the API server refuses the change as without the operator. */
	json_object_set_new(json_object_get(sts, "metadata"), "labels",
			    json_pack("{s:s}", LABEL_WEBHOOK, WEBHOOK_DISABLED));
	wh_write(f, sts);
	char *out = NULL;
	assert_int_not_equal(wh_kubectl(f, "apply", &out), 0);
	if (!strstr(out, "volumeClaimTemplates") || strstr(out, "denied the request"))
		fail_msg("not the API server's own refusal: %s", out);
	free(out);
	json_decref(sts);
}

/*
 * `kubectl annotate` of the desired templates: an annotation-only update,
 * which the webhook never sees (its matchConditions pass only updates whose
 * templates differ). Fails the test when the API server does not store it
 * as written.
 */
static void annotate_desired(struct wh_test *f, const json_t *templates)
{
	char *text = json_dumps(templates, JSON_COMPACT | JSON_SORT_KEYS);
	char file[64];
	snprintf(file, sizeof(file), "/tmp/it-webhook-desired-%d.json", (int)getpid());
	FILE *fp = fopen(file, "w");
	if (!fp || fputs(text, fp) < 0 || fclose(fp))
		fail_msg("cannot write %s", file);
	if (it_sh("kubectl annotate -n %s statefulset/" WH_SET " --overwrite " ANNOTATION_DESIRED_TEMPLATES
		  "=\"$(cat %s)\" >/dev/null",
		  f->ns, file))
		fail_msg("kubectl annotate refused");
	remove(file);
	json_t *now = wh_get_set(f);
	assert_string_equal(it_annotation(now, ANNOTATION_DESIRED_TEMPLATES), text);
	json_decref(now);
	free(text);
}

static bool templates_refused(void *ctx)
{
	struct wh_test *f = ctx;
	return it_event_count(f->admin, f->ns, "ResizeInvalidTemplates", NULL) > 0;
}

/* The set is the one of uid, not being deleted, no resize under way, nothing saved to re-create it from. */
static void expect_untouched(struct wh_test *f, const char *uid)
{
	json_t *sts = wh_get_set(f);
	if (!sts || strcmp(kube_obj_str(sts, "metadata.uid"), uid) || kube_obj_terminating(sts)) {
		wh_dump_log(f);
		fail_msg("the StatefulSet was deleted or replaced");
	}
	assert_null(it_annotation(sts, ANNOTATION_RESIZE_STATE));
	json_decref(sts);
	json_t *backup = it_get(f->admin, &KUBE_CONFIGMAPS, f->ns, WH_SET BACKUP_SUFFIX);
	assert_null(backup);
	assert_int_equal(it_event_count(f->admin, f->ns, "ResizeStarted", NULL), 0);
	assert_int_equal(it_event_count(f->admin, f->ns, "OrphanDeleting", NULL), 0);
}

/*
 * Desired templates written by hand (issue 27, finding 8): one the webhook
 * would deny (a template named Data_1, which the API server refuses in a
 * StatefulSet) changes nothing; a Warning and resize-status say why, in the
 * webhook's words. A good one written the same way is carried out, and the
 * refusal's status goes.
 */
static void test_desired_templates_annotated_by_hand(void **state)
{
	struct wh_test *f = *state;
	json_t *sts = wh_statefulset("1Mi", NULL, "pause");
	char *uid = create_set(f, sts);
	json_t *live = wh_get_set(f);
	json_t *data = template_desired_form(wh_template(live, 0));
	json_decref(live);

	json_t *added = json_deep_copy(data);
	json_object_set_new(json_object_get(added, "metadata"), "name", json_string("Data_1"));
	json_t *bad = json_pack("[O, o]", data, added);
	annotate_desired(f, bad);
	if (!it_wait(templates_refused, f, 30000)) {
		wh_dump_log(f);
		fail_msg("no ResizeInvalidTemplates Warning");
	}
	char *msg = it_event_message(f->admin, f->ns, "ResizeInvalidTemplates", NULL);
	if (!msg || !strstr(msg, "volumeClaimTemplate name \"Data_1\" is not a DNS label") ||
	    !strstr(msg, ANNOTATION_DESIRED_TEMPLATES))
		fail_msg("the Warning does not say what to fix: %s", msg ? msg : "(none)");
	free(msg);
	json_t *events = it_events(f->admin, f->ns, "reason=ResizeInvalidTemplates");
	assert_string_equal(kube_obj_str(json_array_get(events, 0), "type"), "Warning");
	json_decref(events);
	it_sleep_ms(5000); /* what a resize would have done by now */
	expect_untouched(f, uid);
	json_t *now = wh_get_set(f);
	const char *status = it_annotation(now, ANNOTATION_RESIZE_STATUS);
	if (!status || strncmp(status, "Refused: ", 9) || !strstr(status, "Data_1"))
		fail_msg("resize-status does not say it: %s", status ? status : "(none)");
	json_decref(now);

	/* A good one, written the same way: the claims get the label, the set is re-created with it. */
	json_t *labelled = json_deep_copy(data);
	json_object_set_new(json_object_get(labelled, "metadata"), "labels", json_pack("{s:s}", "tier", "gold"));
	json_t *good = json_pack("[o]", labelled);
	annotate_desired(f, good);
	wh_wait_settled(f, uid);
	for (int k = 0; k < 2; k++) {
		char claim[32];
		snprintf(claim, sizeof(claim), "data-" WH_SET "-%d", k);
		char *tier = claim_field(f, claim, "metadata.labels.tier");
		assert_string_equal(tier, "gold");
		free(tier);
	}
	now = wh_get_set(f);
	assert_string_equal(kube_obj_str(wh_template(now, 0), "metadata.labels.tier"), "gold");
	status = it_annotation(now, ANNOTATION_RESIZE_STATUS);
	if (status && !strncmp(status, "Refused: ", 9))
		fail_msg("the refusal still shows: %s", status);
	json_decref(now);
	json_decref(good);
	json_decref(bad);
	json_decref(data);
	json_decref(sts);
	free(uid);
}

/* The Secret's CA (PEM, new string). */
static char *secret_ca(struct wh_test *f, struct cert_bundle *b)
{
	json_t *secret = it_get(f->admin, &KUBE_SECRETS, OPERATOR_NS, WEBHOOK_SECRET);
	char *err = NULL;
	if (!secret || cert_bundle_from_secret(secret, b, &err) < 0)
		fail_msg("Secret %s/%s: %s", OPERATOR_NS, WEBHOOK_SECRET, err ? err : "missing");
	json_decref(secret);
	return xstrdup(b->ca_cert_pem);
}

/* curl's exit status for a POST to the webhook at address, trusting ca (a file). */
static int post_verified(const char *address, const char *ca_file)
{
	return it_sh("curl -sf --cacert %s -o /dev/null -X POST -H 'Content-Type: application/json' "
		     "-d '{}' https://%s" WEBHOOK_PATH,
		     ca_file, address);
}

/* post_verified once the replica answers: one just started refuses (503) until its caches have synced. */
static int post_verified_when_synced(const char *address, const char *ca_file)
{
	int rc = -1;
	for (int i = 0; i < 100 && (rc = post_verified(address, ca_file)) != 0; i++)
		it_sleep_ms(100);
	return rc;
}

static void test_two_replicas_one_certificate_renewed_at_start(void **state)
{
	struct wh_test *f = *state;
	struct cert_bundle b = CERT_BUNDLE_INIT;
	char *ca = secret_ca(f, &b);
	char ca_file[64];
	snprintf(ca_file, sizeof(ca_file), "/tmp/it-webhook-ca-%d.pem", (int)getpid());
	FILE *fp = fopen(ca_file, "w");
	fputs(ca, fp);
	fclose(fp);

	/* A second replica on another port serves the same certificate. */
	struct daemon second;
	char address[64];
	snprintf(address, sizeof(address), "127.0.0.1:%d", wh_free_port());
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--webhook-bind-address", address,
			      "--webhook-cert-names", "127.0.0.1", "--controllers", "scaledown", NULL};
	daemon_start(&second, args, NULL);
	if (!daemon_wait_log(&second, "serving admission reviews", 20000))
		fail_msg("the second replica did not serve the webhook");
	assert_int_equal(post_verified(wh_address(), ca_file), 0);
	assert_int_equal(post_verified_when_synced(address, ca_file), 0);
	wh_kill_operator(&second);

	/* A serving certificate 5 days from expiry: the next replica to start renews it. */
	long long now = (long long)time(NULL);
	char *err = NULL;
	if (cert_bundle_make_serving(&b, (const char *const[]){"127.0.0.1", NULL}, 365, now - 360 * 86400LL, &err) < 0)
		fail_msg("make: %s", err);
	json_t *secret = it_get(f->admin, &KUBE_SECRETS, OPERATOR_NS, WEBHOOK_SECRET);
	json_object_set_new(secret, "data", cert_bundle_secret_data(&b));
	struct kube_error kerr;
	if (kube_replace(f->admin, &KUBE_SECRETS, OPERATOR_NS, WEBHOOK_SECRET, NULL, secret, NULL, &kerr) < 0)
		fail_msg("replace Secret: %s", kerr.message);
	json_decref(secret);
	wh_kill_operator(&f->d);
	wh_start_operator(&f->d, "resize,scaledown,cluster");
	struct cert_bundle renewed = CERT_BUNDLE_INIT;
	char *ca2 = secret_ca(f, &renewed);
	assert_string_equal(ca2, ca); /* the same CA: the caBundle stays */
	assert_true(cert_not_after_s(renewed.cert_pem) > now + 300 * 86400LL);
	/* And it is what the replica serves. */
	char *served = it_sh_output("echo | openssl s_client -connect %s 2>/dev/null | openssl x509 -noout -enddate",
				    wh_address());
	char *stored = it_sh_output("echo '%s' | openssl x509 -noout -enddate", renewed.cert_pem);
	assert_non_null(served);
	assert_string_equal(served, stored);
	assert_int_equal(post_verified_when_synced(wh_address(), ca_file), 0);
	free(served);
	free(stored);
	free(ca2);
	cert_bundle_release(&renewed);
	cert_bundle_release(&b);
	free(ca);
	remove(ca_file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_class_change_by_copy_reapplied_mid_copy, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_shrink_by_copy_allowed_in_the_manifest, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_labels_and_annotations_reach_the_claims, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_template_added_then_removed, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_attributes_class_change_and_an_infeasible_one, wh_setup,
						wh_teardown),
		cmocka_unit_test_setup_teardown(test_opt_out_label_and_server_dry_run, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_desired_templates_annotated_by_hand, wh_setup, wh_teardown),
		cmocka_unit_test_setup_teardown(test_two_replicas_one_certificate_renewed_at_start, wh_setup,
						wh_teardown),
	};
	if (getenv("IT_FILTER")) /* run one test by hand: IT_FILTER=test_name */
		cmocka_set_test_filter(getenv("IT_FILTER"));
	return cmocka_run_group_tests(tests, wh_group_setup, wh_group_teardown);
}
