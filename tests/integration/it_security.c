/*
 * What a namespace user who may annotate a StatefulSet (or a
 * StatefulCluster) can make the operator do with its cluster-wide rights:
 * nothing outside that object's own resources. The reported attack is
 * replayed as it was found (a forged resize-state naming another tenant's
 * unbound PV), then with a state sealed under the real key, as if the key
 * had leaked or the seal were broken, so the live check on every PV write
 * is shown on its own; the bind_claim variant (a forged restore pre-binding
 * a foreign PV into the attacker's namespace); a forged state in every phase
 * of both strategies and a forged saved copy; forged scale-down and
 * StatefulCluster states; and a YAML alias bomb as a scale-down template.
 *
 * The operator runs as its own ServiceAccount, in cluster scope.
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

#include "cluster_steps.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/state_seal.h"
#include "daemon.h"
#include "itest.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define OPERATOR_NS "stateful-operator-system"
#define SCALEDOWN_STATE "stateful-operator.io/scaledown-state"
#define SCALEDOWN_TEMPLATE "stateful-operator.io/scaledown-pod-template"
#define CLUSTER_STATE "stateful-operator.io/cluster-state"
/* The attack took 12 s to delete the PV: every check looks at least this long. */
#define WATCH_MS 12000

struct sec {
	struct kube_client *admin;
	struct daemon op;
	char *ns;
	char victim[64];
	json_t *victim_before; /* the victim PV as created */
	struct state_seal *seal; /* the operator's key, read from its Secret */
};

struct pv_wait {
	struct sec *s;
	const char *name;
};

/* The PV controller has given the PV its phase (Available, or Released for a stale claimRef). */
static bool pv_settled(void *ctx)
{
	struct pv_wait *w = ctx;
	json_t *pv = it_get(w->s->admin, &KUBE_PVS, NULL, w->name);
	const char *phase = kube_obj_str(pv, "status.phase");
	bool ok = phase && (!strcmp(phase, "Available") || !strcmp(phase, "Released"));
	json_decref(pv);
	return ok;
}

/*
 * Another tenant's PV: Retain, in a class nothing asks for, bound to no
 * claim, or (claim not NULL) Released from a claim of that name in the
 * test's namespace that is long gone (a stale UID), as an earlier occupant
 * of a namespace can leave one. Returns it once the PV controller has
 * settled it, the state nothing may change (new reference).
 */
static json_t *create_foreign_pv(struct sec *s, const char *name, const char *claim)
{
	json_t *pv = it_json("{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\"},"
			     "\"spec\":{\"capacity\":{\"storage\":\"1Mi\"},\"accessModes\":[\"ReadWriteOnce\"],"
			     "\"persistentVolumeReclaimPolicy\":\"Retain\",\"storageClassName\":\"other-tenant\","
			     "\"hostPath\":{\"path\":\"/tmp/other-tenant\"}}}",
			     name);
	if (claim)
		json_object_set_new(json_object_get(pv, "spec"), "claimRef",
				    json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind",
					      "PersistentVolumeClaim", "namespace", s->ns, "name", claim, "uid",
					      "00000000-0000-0000-0000-000000000000"));
	struct kube_error err;
	if (kube_create(s->admin, &KUBE_PVS, NULL, pv, NULL, &err) < 0)
		fail_msg("create PV: %s", err.message);
	json_decref(pv);
	struct pv_wait w = {s, name};
	assert_true(it_wait_every(pv_settled, &w, 30000, 100));
	return it_get(s->admin, &KUBE_PVS, NULL, name);
}

/* An Available PV of another tenant, bound to nothing: the one the reported attack deleted. */
static void create_victim(struct sec *s)
{
	snprintf(s->victim, sizeof(s->victim), "victim-%s", strrchr(s->ns, '-') + 1);
	s->victim_before = create_foreign_pv(s, s->victim, NULL);
}

/* The PV is there, unchanged since before (same UID and resourceVersion: nothing wrote it). */
static void expect_pv_untouched(struct sec *s, const json_t *before)
{
	const char *name = kube_obj_str(before, "metadata.name");
	json_t *now = it_get(s->admin, &KUBE_PVS, NULL, name);
	if (!now)
		fail_msg("PersistentVolume %s was deleted", name);
	assert_string_equal(kube_obj_str(now, "metadata.uid"), kube_obj_str(before, "metadata.uid"));
	if (strcmp(kube_obj_str(now, "metadata.resourceVersion"), kube_obj_str(before, "metadata.resourceVersion"))) {
		char *text = json_dumps(now, JSON_COMPACT);
		fail_msg("PersistentVolume %s was changed: %s", name, text);
	}
	json_decref(now);
}

static void expect_victim_untouched(struct sec *s)
{
	expect_pv_untouched(s, s->victim_before);
}

static void delete_pv(struct sec *s, const char *name)
{
	struct kube_error err;
	if (kube_delete(s->admin, &KUBE_PVS, NULL, name, NULL, &err) < 0 && err.code != 404)
		fail_msg("delete PV %s: %s", name, err.message);
}

static struct state_seal *operator_seal(struct kube_client *admin)
{
	json_t *secret = it_get(admin, &KUBE_SECRETS, OPERATOR_NS, STATE_SEAL_SECRET_NAME);
	assert_non_null(secret);
	const char *b64 = kube_obj_str(secret, "data." STATE_SEAL_SECRET_KEY);
	assert_non_null(b64);
	unsigned char buf[64];
	assert_int_equal(EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)strlen(b64)), STATE_SEAL_KEY_BYTES + 1);
	json_decref(secret);
	return state_seal_new(buf);
}

static int setup(void **state)
{
	struct sec *s = xcalloc(1, sizeof(*s));
	s->admin = it_admin_client();
	s->ns = it_namespace_new(s->admin, "attacker");
	create_victim(s);
	daemon_start_operator(&s->op, NULL, true);
	/* The operator made (or found) its key before its caches synced. */
	s->seal = operator_seal(s->admin);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct sec *s = *state;
	daemon_stop_operator(&s->op);
	it_delete_all_removing_finalizer(s->admin, &KUBE_STATEFULSETS, s->ns, "stateful-operator.io/scaledown");
	it_namespace_delete(s->admin, s->ns);
	delete_pv(s, s->victim);
	json_decref(s->victim_before);
	state_seal_free(s->seal);
	kube_client_free(s->admin);
	free(s->ns);
	free(s);
	return 0;
}

/* A 1-replica StatefulSet name, Ready and Bound; returns it as created (new reference). */
static json_t *statefulset(struct sec *s, const char *name)
{
	json_t *sts = it_statefulset(name, 1, "Parallel", "data");
	struct kube_error err;
	json_t *out = NULL;
	if (kube_create(s->admin, &KUBE_STATEFULSETS, s->ns, sts, &out, &err) < 0)
		fail_msg("create StatefulSet %s: %s", name, err.message);
	json_decref(sts);
	return out;
}

/* Writes annotation key = text on r/name, with its seal when sealed (else any seal removed). */
static void annotate_state(struct sec *s, const struct kube_resource *r, const char *name, const char *key,
			   const char *text, bool sealed)
{
	json_t *ann = json_pack("{s:s}", key, text);
	if (sealed) {
		/* Sealed for the object as it is now (its UID), as the operator would. */
		json_t *obj = it_get(s->admin, r, s->ns, name);
		struct state_seal_scope scope = state_seal_scope_of(obj);
		state_seal_annotate(s->seal, ann, &scope, key);
		json_decref(obj);
	} else {
		char *seal_key = xasprintf("%s" STATE_SEAL_SUFFIX, key);
		json_object_set_new(ann, seal_key, json_null());
		free(seal_key);
	}
	json_t *patch = json_pack("{s:{s:o}}", "metadata", "annotations", ann);
	struct kube_error err;
	if (kube_patch(s->admin, r, s->ns, name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0)
		fail_msg("annotate %s: %s", name, err.message);
	json_decref(patch);
}

struct event_wait {
	struct sec *s;
	const char *reason, *object, *needle;
};

static bool event_seen(void *ctx)
{
	struct event_wait *w = ctx;
	char *msg = it_event_message(w->s->admin, w->s->ns, w->reason, w->object);
	bool ok = msg && (!w->needle || strstr(msg, w->needle));
	free(msg);
	return ok;
}

static void wait_event(struct sec *s, const char *reason, const char *object, const char *needle)
{
	struct event_wait w = {s, reason, object, needle};
	if (!it_wait_every(event_seen, &w, 30000, 200)) {
		char *log = daemon_log(&s->op);
		size_t len = strlen(log);
		fprintf(stderr, "operator log (last lines):\n%s\n", len > 6000 ? log + len - 6000 : log);
		fail_msg("no %s Event about %s (containing '%s')", reason, object, needle ? needle : "");
	}
}

/* name -> uid of every object of r in the namespace. New object. */
static json_t *uids(struct sec *s, const struct kube_resource *r)
{
	json_t *items = it_list(s->admin, r, s->ns, NULL), *out = json_object();
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o) json_object_set_new(out, kube_obj_str(o, "metadata.name"),
							    json_string(kube_obj_str(o, "metadata.uid")));
	json_decref(items);
	return out;
}

static void expect_same_uids(const json_t *before, const json_t *after, const char *what)
{
	if (!json_equal((json_t *)before, (json_t *)after)) {
		char *b = json_dumps(before, JSON_COMPACT | JSON_SORT_KEYS);
		char *a = json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("%s changed: before %s, after %s", what, b, a);
	}
}

/* The attack as reported: a 1-replica set, a forged Cleaning state naming the victim; 12 s later the PV was gone. */
static void test_forged_cleaning_state_deletes_no_foreign_volume(void **state)
{
	struct sec *s = *state;
	json_decref(statefulset(s, "web"));
	it_wait_ready_and_bound(s->admin, s->ns, 1, 1, 60000);
	char *forged = xasprintf("{\"phase\":\"Cleaning\",\"strategy\":\"copy\",\"oldVolumes\":[\"%s\"],"
				 "\"completed\":\"2026-01-01T00:00:00Z\"}",
				 s->victim);
	annotate_state(s, &KUBE_STATEFULSETS, "web", ANNOTATION_RESIZE_STATE, forged, false);
	it_sleep_ms(WATCH_MS);
	expect_victim_untouched(s);
	wait_event(s, "ResizeStateUntrusted", "web", ANNOTATION_RESIZE_STATE);
	json_t *web = it_get(s->admin, &KUBE_STATEFULSETS, s->ns, "web");
	/* Nothing was done with it: the forged state is still all there is, no status, no completion. */
	assert_string_equal(it_annotation(web, ANNOTATION_RESIZE_STATE), forged);
	assert_null(it_annotation(web, ANNOTATION_RESIZE_STATUS));
	assert_int_equal(it_event_count(s->admin, s->ns, "ResizeCompleted", NULL), 0);
	json_decref(web);
	free(forged);
}

/*
 * The same state sealed with the operator's own key (a leaked key, or a bug
 * in the seal): the live check before the PV write refuses it.
 */
static void test_sealed_forged_state_still_cannot_delete_foreign_volume(void **state)
{
	struct sec *s = *state;
	json_decref(statefulset(s, "web2"));
	it_wait_ready_and_bound(s->admin, s->ns, 2, 2, 60000);
	/*
	 * Two foreign PVs: the unbound victim (the planner is not even shown a
	 * PV no claim of the set names), and one Released long ago by a claim
	 * of the same name as the set's (it is shown; the live check refuses it).
	 */
	char stale[80];
	snprintf(stale, sizeof(stale), "stale2-%s", strrchr(s->ns, '-') + 1);
	json_t *stale_before = create_foreign_pv(s, stale, "data-web2-0");
	char *forged = xasprintf("{\"phase\":\"Cleaning\",\"strategy\":\"copy\",\"oldVolumes\":[\"%s\",\"%s\"],"
				 "\"completed\":\"2026-01-01T00:00:00Z\"}",
				 s->victim, stale);
	annotate_state(s, &KUBE_STATEFULSETS, "web2", ANNOTATION_RESIZE_STATE, forged, true);
	it_sleep_ms(WATCH_MS);
	expect_victim_untouched(s);
	expect_pv_untouched(s, stale_before);
	wait_event(s, "ResizeRefused", "web2", stale);
	assert_int_equal(it_event_count(s->admin, s->ns, "ResizeStateUntrusted", "web2"), 0);
	assert_int_equal(it_event_count(s->admin, s->ns, "ResizeCompleted", NULL), 0);
	delete_pv(s, stale);
	json_decref(stale_before);
	free(forged);
}

/*
 * bind_claim: a sealed restore state whose "old volume" is a foreign PV
 * would take it (Retain, delete the attacker's claim, pre-bind the PV to it,
 * create the claim on it). The PV is one a claim of the same name released
 * long ago, so the planner is shown it; the first PV write is refused, and
 * the attacker's claim and volume stay as they are.
 */
static void test_forged_restore_binds_no_foreign_volume(void **state)
{
	struct sec *s = *state;
	json_t *sts = statefulset(s, "web3");
	it_wait_ready_and_bound(s->admin, s->ns, 3, 3, 60000);
	json_t *claim = it_get(s->admin, &KUBE_PVCS, s->ns, "data-web3-0");
	assert_non_null(claim);
	char *own_pv = xstrdup(kube_obj_str(claim, "spec.volumeName"));
	json_t *own_pv_before = it_get(s->admin, &KUBE_PVS, NULL, own_pv);
	/* Released long ago by a claim named like the set's: what the forged restore would take. */
	char stale[80];
	snprintf(stale, sizeof(stale), "stale3-%s", strrchr(s->ns, '-') + 1);
	json_t *stale_before = create_foreign_pv(s, stale, "data-web3-0");
	char *forged = xasprintf(
		"{\"phase\":\"Copying\",\"strategy\":\"copy\",\"targets\":{\"data\":\"2Mi\"},\"statefulSetUID\":\"%s\","
		"\"ordinals\":[0],\"started\":\"2026-01-01T00:00:00Z\",\"updated\":\"2026-01-01T00:00:00Z\","
		"\"batch\":{\"step\":\"Copy\",\"ordinals\":[0],\"restore\":\"aborted on request\",\"failed\":false,"
		"\"volumes\":[{\"claim\":\"data-web3-0\",\"template\":\"data\",\"ordinal\":0,\"oldPV\":\"%s\","
		"\"size\":\"1Mi\",\"uid\":\"%s\"}]}}",
		kube_obj_str(sts, "metadata.uid"), stale, kube_obj_str(claim, "metadata.uid"));
	annotate_state(s, &KUBE_STATEFULSETS, "web3", ANNOTATION_RESIZE_STATE, forged, true);
	it_sleep_ms(WATCH_MS);
	expect_victim_untouched(s);
	expect_pv_untouched(s, stale_before);
	json_t *claim_after = it_get(s->admin, &KUBE_PVCS, s->ns, "data-web3-0");
	assert_non_null(claim_after);
	assert_string_equal(kube_obj_str(claim_after, "metadata.uid"), kube_obj_str(claim, "metadata.uid"));
	assert_string_equal(kube_obj_str(claim_after, "spec.volumeName"), own_pv);
	json_t *own_pv_after = it_get(s->admin, &KUBE_PVS, NULL, own_pv);
	assert_string_equal(kube_obj_str(own_pv_after, "metadata.resourceVersion"),
			    kube_obj_str(own_pv_before, "metadata.resourceVersion"));
	wait_event(s, "ResizeRefused", "web3", stale);
	delete_pv(s, stale);
	json_decref(stale_before);
	json_decref(own_pv_after);
	json_decref(own_pv_before);
	json_decref(claim_after);
	json_decref(claim);
	json_decref(sts);
	free(own_pv);
	free(forged);
}

/*
 * A forged (unsealed) state in every phase of both strategies, and a forged
 * saved copy with no StatefulSet: each is refused with a Warning and nothing
 * in the namespace or the victim changes (no pod, claim, ConfigMap or
 * StatefulSet is created, deleted or replaced).
 */
static void test_forged_state_in_every_phase_changes_nothing(void **state)
{
	struct sec *s = *state;
	static const char *const states[] = {
		"{\"phase\":\"Expanding\",\"strategy\":\"expand\",\"targets\":{\"data\":\"5Mi\"}}",
		"{\"phase\":\"Saving\",\"strategy\":\"expand\",\"targets\":{\"data\":\"5Mi\"}}",
		"{\"phase\":\"Recreating\",\"strategy\":\"expand\",\"targets\":{\"data\":\"5Mi\"},\"statefulSetUID\":\"SETUID\"}",
		"{\"phase\":\"Adopting\",\"strategy\":\"expand\",\"targets\":{\"data\":\"5Mi\"}}",
		"{\"phase\":\"Failed\",\"strategy\":\"expand\",\"targets\":{\"data\":\"1Mi\"}}",
		"{\"phase\":\"Copying\",\"strategy\":\"copy\",\"ordinals\":[0],\"batch\":{\"step\":\"Prepare\","
		"\"ordinals\":[0],\"volumes\":[{\"claim\":\"data-SET-0\",\"ordinal\":0,\"oldPV\":\"VICTIM\"}]}}",
		"{\"phase\":\"Copying\",\"strategy\":\"copy\",\"ordinals\":[0],\"batch\":{\"step\":\"Stop\",\"ordinals\":[0]}}",
		"{\"phase\":\"Copying\",\"strategy\":\"copy\",\"ordinals\":[0],\"batch\":{\"step\":\"Swap\",\"ordinals\":[0],"
		"\"volumes\":[{\"claim\":\"data-SET-0\",\"ordinal\":0,\"oldPV\":\"VICTIM\",\"newPV\":\"VICTIM\"}]}}",
		"{\"phase\":\"Copying\",\"strategy\":\"copy\",\"ordinals\":[0],\"batch\":{\"step\":\"Restart\",\"ordinals\":[0]}}",
		"{\"phase\":\"Copying\",\"strategy\":\"copy\",\"ordinals\":[0],\"batch\":{\"step\":\"Ready\",\"ordinals\":[0]}}",
		"{\"phase\":\"Cleaning\",\"strategy\":\"copy\",\"oldVolumes\":[\"VICTIM\"]}",
		"{\"phase\":\"Failed\",\"strategy\":\"copy\",\"oldVolumes\":[\"VICTIM\"]}",
	};
	size_t n = sizeof(states) / sizeof(states[0]);
	int first = 3; /* pods and claims the earlier tests made */
	for (size_t i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "p%zu", i);
		json_decref(statefulset(s, name));
	}
	it_wait_ready_and_bound(s->admin, s->ns, first + (int)n, first + (int)n, 120000);
	/* A saved copy of a StatefulSet that does not exist: re-creating it would run the attacker's spec. */
	json_t *ghost = it_statefulset("ghost", 1, "Parallel", "data");
	char *ghost_text = json_dumps(ghost, JSON_COMPACT);
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
			       "metadata", "name", "ghost" BACKUP_SUFFIX, "labels", LABEL_SAVED_STATEFULSET, "ghost",
			       "data", BACKUP_KEY, ghost_text);
	struct kube_error err;
	if (kube_create(s->admin, &KUBE_CONFIGMAPS, s->ns, cm, NULL, &err) < 0)
		fail_msg("create ConfigMap: %s", err.message);
	json_t *pods = uids(s, &KUBE_PODS), *claims = uids(s, &KUBE_PVCS), *sets = uids(s, &KUBE_STATEFULSETS);
	json_t *maps = uids(s, &KUBE_CONFIGMAPS);
	for (size_t i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "p%zu", i);
		json_t *sts = it_get(s->admin, &KUBE_STATEFULSETS, s->ns, name);
		/* The set's UID, the victim's name and the set's own claim where a state names them. */
		const char *subst[][2] = {{"SETUID", kube_obj_str(sts, "metadata.uid")}, {"VICTIM", s->victim}, {"SET", name}};
		struct strbuf sb = STRBUF_INIT;
		for (const char *p = states[i]; *p;) {
			size_t k = 0;
			while (k < 3 && strncmp(p, subst[k][0], strlen(subst[k][0])))
				k++;
			if (k < 3) {
				strbuf_appendf(&sb, "%s", subst[k][1]);
				p += strlen(subst[k][0]);
			} else {
				strbuf_appendf(&sb, "%c", *p++);
			}
		}
		annotate_state(s, &KUBE_STATEFULSETS, name, ANNOTATION_RESIZE_STATE, strbuf_str(&sb), false);
		strbuf_release(&sb);
		json_decref(sts);
	}
	double t0 = it_now_ms();
	for (size_t i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "p%zu", i);
		wait_event(s, "ResizeStateUntrusted", name, NULL);
	}
	long left = WATCH_MS - (long)(it_now_ms() - t0);
	if (left > 0)
		it_sleep_ms(left);
	expect_victim_untouched(s);
	json_t *pods2 = uids(s, &KUBE_PODS), *claims2 = uids(s, &KUBE_PVCS), *sets2 = uids(s, &KUBE_STATEFULSETS);
	json_t *maps2 = uids(s, &KUBE_CONFIGMAPS);
	expect_same_uids(pods, pods2, "pods");
	expect_same_uids(claims, claims2, "claims");
	expect_same_uids(sets, sets2, "StatefulSets");
	expect_same_uids(maps, maps2, "ConfigMaps");
	assert_null(json_object_get(sets2, "ghost"));
	assert_int_equal(it_event_count(s->admin, s->ns, "ResizeStarted", NULL), 0);
	json_decref(maps2);
	json_decref(sets2);
	json_decref(claims2);
	json_decref(pods2);
	json_decref(maps);
	json_decref(sets);
	json_decref(claims);
	json_decref(pods);
	json_decref(cm);
	free(ghost_text);
	json_decref(ghost);
}

struct sealed_wait {
	struct sec *s;
	const struct kube_resource *r;
	const char *name, *key;
};

/* The object's state annotation is there and sealed for it. */
static bool state_resealed(void *ctx)
{
	struct sealed_wait *w = ctx;
	json_t *obj = it_get(w->s->admin, w->r, w->s->ns, w->name);
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	struct state_seal_scope scope = state_seal_scope_of(obj);
	bool ok = json_object_get(ann, w->key) && state_seal_annotation_ok(w->s->seal, ann, &scope, w->key);
	json_decref(obj);
	return ok;
}

/* The object's state annotation is gone, or sealed for it: no forgery left behind. */
static bool state_not_forged(void *ctx)
{
	struct sealed_wait *w = ctx;
	json_t *obj = it_get(w->s->admin, w->r, w->s->ns, w->name);
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	struct state_seal_scope scope = state_seal_scope_of(obj);
	bool ok = state_seal_annotation_ok(w->s->seal, ann, &scope, w->key);
	json_decref(obj);
	return ok;
}

/*
 * Forged scale-down and StatefulCluster states (naming another pod and
 * claim of the namespace) read as lost: a Warning, the state written anew
 * and sealed from what the cluster shows, and the objects they named, which
 * are not theirs, untouched.
 */
static void test_forged_cleanup_and_cluster_state_read_as_lost(void **state)
{
	struct sec *s = *state;
	/* Bystanders: a pod and a claim in the namespace that belong to nobody here. */
	json_t *pod = it_json("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"db-7\"},\"spec\":{"
			      "\"nodeName\":\"kwok-node-0\",\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}");
	json_t *pvc = it_json("{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":"
			      "\"data-db-7\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":"
			      "{\"storage\":\"1Mi\"}}}}");
	struct kube_error err;
	json_t *pod_made = NULL, *pvc_made = NULL;
	if (kube_create(s->admin, &KUBE_PODS, s->ns, pod, &pod_made, &err) < 0 ||
	    kube_create(s->admin, &KUBE_PVCS, s->ns, pvc, &pvc_made, &err) < 0)
		fail_msg("create bystanders: %s", err.message);

	/* Scale-down: a set that opts in, with a forged record of failed cleanups. */
	json_t *sd = it_statefulset("sd", 1, "Parallel", "data");
	char *tmpl = it_testbed_pod_template("sd-cleanup", "succeed", NULL, NULL, "data");
	it_set_annotation(sd, SCALEDOWN_TEMPLATE, tmpl);
	if (kube_create(s->admin, &KUBE_STATEFULSETS, s->ns, sd, NULL, &err) < 0)
		fail_msg("create sd: %s", err.message);
	annotate_state(s, &KUBE_STATEFULSETS, "sd", SCALEDOWN_STATE,
		       "{\"ordinals\":{\"7\":{\"failures\":9,\"lastPod\":\"x\",\"message\":\"forged\"}}}", false);
	wait_event(s, "CleanupStateUntrusted", "sd", NULL);
	struct sealed_wait sdw = {s, &KUBE_STATEFULSETS, "sd", SCALEDOWN_STATE};
	assert_true(it_wait_every(state_not_forged, &sdw, 30000, 200));

	/* StatefulCluster: a forged state that names the bystander's identity as a released member. */
	json_t *stc = cl_manifest("db", 1, "data");
	if (kube_create(s->admin, &KUBE_STATEFULCLUSTERS, s->ns, stc, NULL, &err) < 0)
		fail_msg("create db: %s", err.message);
	struct sealed_wait w = {s, &KUBE_STATEFULCLUSTERS, "db", CLUSTER_STATE};
	assert_true(it_wait_every(state_resealed, &w, 30000, 200));
	annotate_state(s, &KUBE_STATEFULCLUSTERS, "db", CLUSTER_STATE,
		       "{\"next\":8,\"members\":[7],\"released\":{\"db-7\":\"Replaced\"}}", false);
	wait_event(s, "ClusterStateUntrusted", "db", NULL);
	/* Written anew, sealed. */
	assert_true(it_wait_every(state_resealed, &w, 30000, 200));
	it_sleep_ms(3000);
	json_t *pod_after = it_get(s->admin, &KUBE_PODS, s->ns, "db-7");
	json_t *pvc_after = it_get(s->admin, &KUBE_PVCS, s->ns, "data-db-7");
	assert_non_null(pod_after);
	assert_non_null(pvc_after);
	assert_string_equal(kube_obj_str(pod_after, "metadata.uid"), kube_obj_str(pod_made, "metadata.uid"));
	assert_null(kube_obj_str(pod_after, "metadata.deletionTimestamp"));
	assert_string_equal(kube_obj_str(pvc_after, "metadata.uid"), kube_obj_str(pvc_made, "metadata.uid"));
	assert_null(kube_obj_str(pvc_after, "metadata.deletionTimestamp"));
	expect_victim_untouched(s);
	json_decref(pvc_after);
	json_decref(pod_after);
	json_decref(stc);
	free(tmpl);
	json_decref(sd);
	json_decref(pvc_made);
	json_decref(pod_made);
	json_decref(pvc);
	json_decref(pod);
}

struct gone_wait {
	struct sec *s;
	const char *name;
};

static bool configmap_gone(void *ctx)
{
	struct gone_wait *w = ctx;
	json_t *cm = it_get(w->s->admin, &KUBE_CONFIGMAPS, w->s->ns, w->name);
	json_decref(cm);
	return cm == NULL;
}

/*
 * A backup ConfigMap the operator did not seal, next to a StatefulSet with
 * no resize in flight (left by an older version, or made by someone): a
 * stale copy, deleted like any other; the StatefulSet is never re-created
 * from it.
 */
static void test_unsealed_leftover_backup_is_deleted(void **state)
{
	struct sec *s = *state;
	json_t *sts = statefulset(s, "left");
	char *text = json_dumps(sts, JSON_COMPACT);
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
			       "metadata", "name", "left" BACKUP_SUFFIX, "labels", LABEL_SAVED_STATEFULSET, "left",
			       "data", BACKUP_KEY, text);
	struct kube_error err;
	if (kube_create(s->admin, &KUBE_CONFIGMAPS, s->ns, cm, NULL, &err) < 0)
		fail_msg("create ConfigMap: %s", err.message);
	struct gone_wait w = {s, "left" BACKUP_SUFFIX};
	assert_true(it_wait_every(configmap_gone, &w, 30000, 200));
	json_t *after = it_get(s->admin, &KUBE_STATEFULSETS, s->ns, "left");
	assert_non_null(after);
	assert_string_equal(kube_obj_str(after, "metadata.uid"), kube_obj_str(sts, "metadata.uid"));
	json_decref(after);
	json_decref(cm);
	free(text);
	json_decref(sts);
}

struct one_ready {
	struct sec *s;
	const char *pod, *claim;
};

/* The pod is Ready and the claim Bound (counts of the namespace do not say which). */
static bool ready_and_bound(void *ctx)
{
	struct one_ready *w = ctx;
	json_t *pod = it_get(w->s->admin, &KUBE_PODS, w->s->ns, w->pod);
	json_t *pvc = it_get(w->s->admin, &KUBE_PVCS, w->s->ns, w->claim);
	bool ok = kube_pod_ready(pod) && kube_obj_str(pvc, "status.phase") &&
		  !strcmp(kube_obj_str(pvc, "status.phase"), "Bound");
	json_decref(pvc);
	json_decref(pod);
	return ok;
}

static bool statefulset_gone(void *ctx)
{
	struct gone_wait *w = ctx;
	json_t *sts = it_get(w->s->admin, &KUBE_STATEFULSETS, w->s->ns, w->name);
	json_decref(sts);
	return sts == NULL;
}

/*
 * Finding 9: the state the operator sealed on a StatefulSet (a resize just
 * started: Expanding), copied with its seal onto a new StatefulSet of the
 * same name once the first is deleted, is refused on the new one
 * (ResizeStateUntrusted) and nothing is done: the claim keeps its size, the
 * state stays as copied. The 0.2 seal covered the name, not the UID, and
 * the copy went on growing the claim.
 */
static void test_state_replayed_onto_a_new_set_is_refused(void **state)
{
	struct sec *s = *state;
	json_decref(statefulset(s, "rp"));
	struct one_ready w = {s, "rp-0", "data-rp-0"};
	assert_true(it_wait_every(ready_and_bound, &w, 60000, 200));
	/* The operator writes the first state and dies: the set keeps what it sealed. */
	daemon_stop_operator(&s->op);
	it_merge_patch(s->admin, &KUBE_STATEFULSETS, s->ns, "rp",
		       "{\"metadata\":{\"annotations\":{\"resize.stateful-operator.io/data\":\"2Mi\"}}}");
	char *log = NULL;
	if (!daemon_run_operator_until_crash("SetState", 60000, &log))
		fail_msg("the operator did not write the resize state; log:\n%s", log);
	json_t *first = it_get(s->admin, &KUBE_STATEFULSETS, s->ns, "rp");
	const char *text = it_annotation(first, ANNOTATION_RESIZE_STATE);
	const char *seal = it_annotation(first, ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX);
	if (!text || !seal)
		fail_msg("no sealed resize state on the first set");
	/* The first set goes (its pod stays); a new one of the name carries a copy of every annotation. */
	struct kube_delete_options orphan = {.propagation_policy = "Orphan"};
	struct kube_error err;
	if (kube_delete(s->admin, &KUBE_STATEFULSETS, s->ns, "rp", &orphan, &err) < 0)
		fail_msg("delete rp: %s", err.message);
	struct gone_wait gw = {s, "rp"};
	assert_true(it_wait_every(statefulset_gone, &gw, 30000, 100));
	json_t *again = it_statefulset("rp", 1, "Parallel", "data");
	json_object_set(json_object_get(again, "metadata"), "annotations",
			json_object_get(json_object_get(first, "metadata"), "annotations"));
	json_t *made = NULL;
	if (kube_create(s->admin, &KUBE_STATEFULSETS, s->ns, again, &made, &err) < 0)
		fail_msg("create rp again: %s", err.message);
	assert_string_not_equal(kube_obj_str(made, "metadata.uid"), kube_obj_str(first, "metadata.uid"));
	daemon_start_operator(&s->op, NULL, true);
	wait_event(s, "ResizeStateUntrusted", "rp", ANNOTATION_RESIZE_STATE);
	it_sleep_ms(WATCH_MS / 2);
	json_t *now = it_get(s->admin, &KUBE_STATEFULSETS, s->ns, "rp");
	assert_string_equal(it_annotation(now, ANNOTATION_RESIZE_STATE), text);
	assert_string_equal(it_annotation(now, ANNOTATION_RESIZE_STATE STATE_SEAL_SUFFIX), seal);
	json_t *claim = it_get(s->admin, &KUBE_PVCS, s->ns, "data-rp-0");
	assert_string_equal(kube_obj_str(claim, "spec.resources.requests.storage"), "1Mi");
	json_decref(claim);
	json_decref(now);
	json_decref(made);
	json_decref(again);
	json_decref(first);
}

/* Peak resident memory of process pid in MiB (VmHWM), or -1. */
static long peak_rss_mib(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib < 0 ? -1 : kib / 1024;
}

/*
 * Finding 2 on the real control plane: a scale-down template of a few
 * hundred bytes whose aliases nest ten deep (10^10 nodes expanded) is
 * refused with a Warning as it is read; the operator stays up and its peak
 * memory barely moves (the 0.1 operator reached 1 GiB and crash-looped).
 */
static void test_alias_bomb_template_is_refused_cheaply(void **state)
{
	struct sec *s = *state;
	struct strbuf yaml = STRBUF_INIT;
	strbuf_appendf(&yaml, "metadata:\n  labels: {role: cleanup}\n  annotations:\n    a0: &a0 \"lol\"\n");
	for (int level = 1; level < 10; level++) {
		strbuf_appendf(&yaml, "    a%d: &a%d [", level, level);
		for (int k = 0; k < 10; k++)
			strbuf_appendf(&yaml, "%s*a%d", k ? "," : "", level - 1);
		strbuf_appendf(&yaml, "]\n");
	}
	strbuf_appendf(&yaml, "spec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: pause\n"
			      "    args: *a9\n");
	assert_true(yaml.len < 1024);
	json_t *sts = it_statefulset("bomb", 1, "Parallel", "data");
	it_set_annotation(sts, SCALEDOWN_TEMPLATE, strbuf_str(&yaml));
	long before = peak_rss_mib(s->op.pid);
	struct kube_error err;
	if (kube_create(s->admin, &KUBE_STATEFULSETS, s->ns, sts, NULL, &err) < 0)
		fail_msg("create bomb: %s", err.message);
	wait_event(s, "ScaledownTemplateTooLarge", "bomb", "aliases");
	/* Asked again on every reconcile: scale down so the cleanup path reads it too. */
	it_merge_patch(s->admin, &KUBE_STATEFULSETS, s->ns, "bomb", "{\"spec\":{\"replicas\":0}}");
	it_sleep_ms(3000);
	assert_int_equal(kill(s->op.pid, 0), 0);
	long rss = peak_rss_mib(s->op.pid);
	fprintf(stderr, "operator peak RSS before the alias bomb %ld MiB, after %ld MiB\n", before, rss);
	/*
	 * The peak barely moves (the 0.1 operator grew past 1 GiB). Growth, not
	 * the level: under ASan the operator's RSS is several times the plain
	 * build's from the start (18 MiB in all there).
	 */
	assert_true(before > 0 && rss >= before);
	assert_true(rss - before < 64);
	json_decref(sts);
	strbuf_release(&yaml);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_cleaning_state_deletes_no_foreign_volume),
		cmocka_unit_test(test_sealed_forged_state_still_cannot_delete_foreign_volume),
		cmocka_unit_test(test_forged_restore_binds_no_foreign_volume),
		cmocka_unit_test(test_forged_state_in_every_phase_changes_nothing),
		cmocka_unit_test(test_forged_cleanup_and_cluster_state_read_as_lost),
		cmocka_unit_test(test_alias_bomb_template_is_refused_cheaply),
		cmocka_unit_test(test_unsealed_leftover_backup_is_deleted),
		cmocka_unit_test(test_state_replayed_onto_a_new_set_is_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
