/*
 * An upgrade across the seal's form (issue 27, finding 9): states sealed by
 * the earlier version (no UID) are sealed for the objects that carry them
 * once, by the first leader of this version, so a resize in flight goes on;
 * after that, a state in the earlier form holds nowhere: one copied back
 * from before is refused. Run in namespace scope with the namespaced Role
 * and a key Secret of its own, so the pass touches only this test's
 * namespace (the test bed's shared key is left alone).
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
#include "controllers/resize/resize_trust.h"
#include "controllers/state_seal.h"
#include "daemon.h"
#include "itest.h"
#include "util/base64.h"
#include "util/xalloc.h"

/* A copy that failed, nothing left to do: the operator leaves it as it is, when it trusts it. */
#define FAILED "{\"phase\":\"Failed\",\"strategy\":\"copy\",\"targets\":{},\"message\":\"copy failed\"}"
#define SAVED "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"gone\"}}"

struct up {
	struct kube_client *admin;
	char *ns;
	struct state_seal *seal;
};

/* annotations {key: text, key-seal: the earlier form's seal of text for ns/name}; more added by the caller. */
static json_t *v1_sealed(struct up *u, const char *name, const char *key, const char *text)
{
	char seal[STATE_SEAL_HEX_LEN + 1];
	state_seal_sign_v1(u->seal, u->ns, name, key, text, seal);
	char *seal_key = xasprintf("%s" STATE_SEAL_SUFFIX, key);
	json_t *ann = json_pack("{s:s, s:s}", key, text, seal_key, seal);
	free(seal_key);
	return ann;
}

/* StatefulSet name with annotations ann (stolen). */
static void create_set(struct up *u, const char *name, json_t *ann)
{
	json_t *sts = it_statefulset(name, 1, "Parallel", "data");
	json_object_set_new(json_object_get(sts, "metadata"), "annotations", ann);
	struct kube_error err;
	if (kube_create(u->admin, &KUBE_STATEFULSETS, u->ns, sts, NULL, &err) < 0)
		fail_msg("create %s: %s", name, err.message);
	json_decref(sts);
}

static bool marked(void *ctx)
{
	struct up *u = ctx;
	json_t *secret = it_get(u->admin, &KUBE_SECRETS, u->ns, STATE_SEAL_SECRET_NAME);
	const char *mark = it_annotation(secret, STATE_SEAL_FORMAT_ANNOTATION);
	bool ok = mark && !strcmp(mark, STATE_SEAL_FORMAT);
	json_decref(secret);
	return ok;
}

struct event_wait {
	struct up *u;
	const char *reason, *object;
};

static bool event_seen(void *ctx)
{
	struct event_wait *w = ctx;
	return it_event_count(w->u->admin, w->u->ns, w->reason, w->object) > 0;
}

static void test_earlier_seals_sealed_once_then_never_again(void **unused)
{
	(void)unused;
	struct up u = {it_admin_client(), NULL, NULL};
	u.ns = it_namespace_new(u.admin, "it-sealup");
	char dir[] = "/tmp/it-sealup-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *kc = it_namespaced_identity(u.ns, dir);
	/* The key an earlier version made: no seal-format mark. */
	unsigned char key[STATE_SEAL_KEY_BYTES];
	memset(key, 0x42, sizeof(key));
	u.seal = state_seal_new(key);
	char *b64 = base64_encode(key, sizeof(key));
	json_t *secret = json_pack("{s:s, s:s, s:{s:s}, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata",
				   "name", STATE_SEAL_SECRET_NAME, "type", "Opaque", "data", STATE_SEAL_SECRET_KEY, b64);
	struct kube_error err;
	/* The Secret is installed empty (it_namespaced_identity, as deploy/ does): the earlier key replaces it. */
	if (kube_replace(u.admin, &KUBE_SECRETS, u.ns, STATE_SEAL_SECRET_NAME, NULL, secret, NULL, &err) < 0)
		fail_msg("write the key: %s", err.message);
	/* What the earlier version left: a failed copy on a set; a saved copy of a set that is gone. */
	json_t *old_ann = v1_sealed(&u, "old", ANNOTATION_RESIZE_STATE, FAILED);
	create_set(&u, "old", json_deep_copy(old_ann));
	json_t *cm_ann = v1_sealed(&u, "gone", ANNOTATION_RESIZE_STATE, FAILED);
	json_object_update_new(cm_ann, v1_sealed(&u, "gone", SEALED_SAVED_STATEFULSET, SAVED));
	json_object_del(cm_ann, SEALED_SAVED_STATEFULSET);
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}, s:o}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
			       "metadata", "name", "gone" BACKUP_SUFFIX, "labels", LABEL_SAVED_STATEFULSET, "gone",
			       "annotations", cm_ann, "data", BACKUP_KEY, SAVED);
	if (kube_create(u.admin, &KUBE_CONFIGMAPS, u.ns, cm, NULL, &err) < 0)
		fail_msg("create the saved copy: %s", err.message);

	const char *args[] = {"--kubeconfig", kc, "--namespace", u.ns, "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", NULL};
	struct daemon d;
	daemon_start(&d, args, NULL);
	if (!it_wait_every(marked, &u, 30000, 200)) {
		char *log = daemon_log(&d);
		fail_msg("the Secret was not marked " STATE_SEAL_FORMAT "; log:\n%s", log);
	}
	assert_true(daemon_wait_log(&d, "3 state(s) of an earlier version sealed", 5000));
	/* Each sealed for the object that carries it now. */
	json_t *old = it_get(u.admin, &KUBE_STATEFULSETS, u.ns, "old");
	assert_int_equal(resize_trust_statefulset(u.seal, old, NULL), RESIZE_TRUST_SEALED);
	json_t *backup = it_get(u.admin, &KUBE_CONFIGMAPS, u.ns, "gone" BACKUP_SUFFIX);
	assert_int_equal(resize_trust_backup(u.seal, backup, NULL), RESIZE_TRUST_SEALED);
	/* Trusted: nothing refused, nothing done. */
	it_sleep_ms(4000);
	assert_int_equal(it_event_count(u.admin, u.ns, "ResizeStateUntrusted", NULL), 0);

	/* The earlier form copied back (a new set of the name, the old annotations): refused, not re-sealed. */
	if (kube_delete(u.admin, &KUBE_STATEFULSETS, u.ns, "old", NULL, &err) < 0)
		fail_msg("delete old: %s", err.message);
	for (json_t *o = NULL; (o = it_get(u.admin, &KUBE_STATEFULSETS, u.ns, "old")); it_sleep_ms(100))
		json_decref(o);
	create_set(&u, "old", json_deep_copy(old_ann));
	struct event_wait w = {&u, "ResizeStateUntrusted", "old"};
	if (!it_wait_every(event_seen, &w, 30000, 200)) {
		char *log = daemon_log(&d);
		fail_msg("the earlier form was not refused after the upgrade; log:\n%s", log);
	}
	json_t *again = it_get(u.admin, &KUBE_STATEFULSETS, u.ns, "old");
	assert_string_equal(it_annotation(again, ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX),
			    json_string_value(json_object_get(old_ann, ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX)));
	daemon_signal(&d, SIGTERM);
	assert_int_equal(daemon_wait_exit(&d, 10000), 0);
	daemon_cleanup(&d);

	json_decref(again);
	json_decref(backup);
	json_decref(old);
	json_decref(cm);
	json_decref(old_ann);
	json_decref(secret);
	free(b64);
	state_seal_free(u.seal);
	it_sh("rm -rf '%s'", dir);
	free(kc);
	it_namespace_delete(u.admin, u.ns);
	free(u.ns);
	kube_client_free(u.admin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_earlier_seals_sealed_once_then_never_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
