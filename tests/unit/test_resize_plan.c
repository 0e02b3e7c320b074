/* The resize planner, phase by phase and refusal by refusal: cluster state in, one step out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_state.h"
#include "sim.h"
#include "state_fixture.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define NOW "2026-11-21T12:00:00Z"
#define NOW_MS 1795262400000LL
#define UID "uid-web-1"

/* ---- builders: the smallest objects that look like the cluster's ---- */

static json_t *sts(int replicas, const char *data_size, const char *class_name)
{
	json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{}}, s:{s:i, s:[{s:{s:s}, s:{s:{s:{s:s}}}}]}}",
			      "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata", "name", "web",
			      "namespace", "ns", "uid", UID, "annotations", "spec", "replicas", replicas,
			      "volumeClaimTemplates", "metadata", "name", "data", "spec", "resources",
			      "requests", "storage", data_size);
	if (class_name)
		json_object_set_new(json_object_get(json_array_get(json_object_get(json_object_get(s, "spec"),
										   "volumeClaimTemplates"),
								   0),
						    "spec"),
				    "storageClassName", json_string(class_name));
	return s;
}

static void annotate(json_t *obj, const char *key, const char *value)
{
	json_t *meta = json_object_get(obj, "metadata");
	if (!json_object_get(meta, "annotations"))
		json_object_set_new(meta, "annotations", json_object());
	json_object_set_new(json_object_get(meta, "annotations"), key, json_string(value));
}

static void set_state(json_t *obj, const char *state_json)
{
	annotate(obj, ANNOTATION_RESIZE_STATE, state_json);
}

static json_t *pvc(const char *name, const char *request, const char *capacity)
{
	char uid[96];
	snprintf(uid, sizeof(uid), "uid-%s", name);
	return json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:{s:s}}}, s:{s:s, s:{s:s}, s:[]}}", "metadata", "name", name,
			 "namespace", "ns", "uid", uid, "spec", "resources", "requests", "storage", request, "status",
			 "phase", "Bound", "capacity", "storage", capacity, "conditions");
}

static void pvc_condition(json_t *p, const char *type, const char *message)
{
	json_array_append_new(json_object_get(json_object_get(p, "status"), "conditions"),
			      json_pack("{s:s, s:s, s:s}", "type", type, "status", "True", "message", message));
}

static json_t *pod(const char *name, const char *uid, bool ready, const char *owner_uid)
{
	return json_pack("{s:{s:s, s:s, s:s, s:[{s:s, s:b}]}, s:{s:[{s:s, s:s}]}}", "metadata", "name", name,
			 "namespace", "ns", "uid", uid, "ownerReferences", "uid", owner_uid, "controller",
			 1, "status", "conditions", "type", "Ready", "status", ready ? "True" : "False");
}

static json_t *classes(void)
{
	return json_pack("[{s:{s:s, s:{s:s}}, s:b}, {s:{s:s}, s:b}]", "metadata", "name", "expandable",
			 "annotations", "storageclass.kubernetes.io/is-default-class", "true",
			 "allowVolumeExpansion", 1, "metadata", "name", "fixed", "allowVolumeExpansion", 0);
}

/* Three PVCs data-web-{0,1,2} with the given requests/capacities. */
static json_t *pvcs3(const char *r0, const char *c0, const char *r1, const char *c1, const char *r2,
		     const char *c2)
{
	return json_pack("[o, o, o]", pvc("data-web-0", r0, c0), pvc("data-web-1", r1, c1),
			 pvc("data-web-2", r2, c2));
}

static json_t *pods3(void)
{
	return json_pack("[o, o, o]", pod("web-0", "p0", true, UID), pod("web-1", "p1", true, UID),
			 pod("web-2", "p2", true, UID));
}

struct world {
	json_t *sts, *backup, *pvcs, *pods, *classes;
	const json_t *lower_refusals;
	struct action a;
};

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->sts = sts(3, "1Gi", NULL);
	w->pvcs = pvcs3("1Gi", "1Gi", "1Gi", "1Gi", "1Gi", "1Gi");
	w->pods = pods3();
	w->classes = classes();
}

static void plan(struct world *w)
{
	action_release(&w->a);
	json_t *pods = sim_cached_pods(w->pods);
	struct resize_inputs in = {w->sts, w->backup, w->pvcs, pods, w->classes, NULL, NULL, NULL, w->lower_refusals};
	resize_plan(&in, NOW_MS, &w->a);
	json_decref(pods);
}

static void world_release(struct world *w)
{
	action_release(&w->a);
	json_decref(w->sts);
	json_decref(w->backup);
	json_decref(w->pvcs);
	json_decref(w->pods);
	json_decref(w->classes);
}

static const char *state_field(const struct action *a, const char *key)
{
	return json_string_value(json_object_get(a->state, key));
}

#define EXPANDING "{\"phase\":\"Expanding\",\"strategy\":\"expand\",\"targets\":{\"data\":\"2Gi\"}," \
		  "\"statefulSetUID\":\"" UID "\"}"

static void expect_step(const struct world *w, const char *step)
{
	if (strcmp(action_name(&w->a), step))
		fail_msg("step %s, want %s (event %s: %s)", action_name(&w->a), step,
			 w->a.event_reason ? w->a.event_reason : "-",
			 w->a.event_message ? w->a.event_message : "-");
}

/* A step that patches claim name's storage request to size, the claim seen (its UID a precondition). */
static void expect_claim_patch(const struct world *w, const char *step, const char *name, const char *size)
{
	expect_step(w, step);
	assert_string_equal(w->a.name, name);
	assert_string_equal(kube_obj_str(w->a.body, "spec.resources.requests.storage"), size);
	char uid[96];
	snprintf(uid, sizeof(uid), "uid-%s", name);
	assert_string_equal(kube_obj_str(w->a.body, "metadata.uid"), uid);
}

/* ---- nothing to do ---- */

static void test_no_request_no_step(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	plan(&w);
	expect_step(&w, "Nothing");
	/* Asking for the size the template already has is no request either. */
	annotate(w.sts, "resize.stateful-operator.io/data", "1024Mi");
	plan(&w);
	expect_step(&w, "Nothing");
	world_release(&w);
}

static void test_ignore_wins(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	annotate(w.sts, "resize.stateful-operator.io/data", "2Gi");
	annotate(w.sts, ANNOTATION_IGNORE, "true");
	plan(&w);
	expect_step(&w, "Nothing");
	world_release(&w);
}

/* ---- bad input: a Warning Event that says what to fix, and no change ---- */

struct refusal_case {
	const char *annotation;
	const char *value;
	const char *strategy;   /* or NULL */
	const char *class_name; /* template's class, or NULL for the default */
	bool no_templates;
	bool no_classes;        /* namespace scope */
	const char *reason;
	const char *needle;     /* in the message */
};

static const struct refusal_case refusals[] = {
	{"resize.stateful-operator.io/data", "20Gb", NULL, NULL, false, false, "ResizeInvalidSize",
	 "unknown suffix \"Gb\""},
	{"resize.stateful-operator.io/data", "-2Gi", NULL, NULL, false, false, "ResizeInvalidSize",
	 "larger than zero"},
	{"resize.stateful-operator.io/logs", "2Gi", NULL, NULL, false, false, "ResizeUnknownTemplate",
	 "its templates are data"},
	{"resize.stateful-operator.io/data", "512Mi", NULL, NULL, false, false, "ResizeShrinkRefused",
	 "allow-shrink"},
	{"resize.stateful-operator.io/data", "512Mi", "expand", NULL, false, false, "ResizeShrinkRefused",
	 "copy"},
	{"resize.stateful-operator.io/data", "2Gi", "expand", "fixed", false, false, "ResizeNotExpandable",
	 "StorageClass fixed does not allow volume expansion"},
	/* Copying needs the PVs, which these inputs (like namespace scope) cannot read. */
	{"resize.stateful-operator.io/data", "2Gi", NULL, "fixed", false, false, "ResizeCopyNotAvailable",
	 "cluster RBAC"},
	{"storage-class.stateful-operator.io/data", "gold", NULL, NULL, false, false, "ResizeStorageClassNotFound",
	 "\"gold\", which does not exist; create it or fix the annotation"},
	{"storage-class.stateful-operator.io/data", "fixed", "expand", NULL, false, false,
	 "ResizeClassChangeNeedsCopy", "only by copying"},
	{"storage-class.stateful-operator.io/logs", "fixed", NULL, NULL, false, false, "ResizeUnknownTemplate",
	 "its templates are data"},
	{"stateful-operator.io/copy-mode", "parallel", NULL, NULL, false, false, "ResizeInvalidAnnotation",
	 "use rolling or offline"},
	{"stateful-operator.io/keep-old-volumes", "2 days", NULL, NULL, false, false, "ResizeInvalidAnnotation",
	 "write it like 90s"},
	{"stateful-operator.io/copy-timeout", "0s", NULL, NULL, false, false, "ResizeInvalidAnnotation",
	 "at least 1s"},
	{"stateful-operator.io/copy-pod-annotations", "[1]", NULL, NULL, false, false, "ResizeInvalidAnnotation",
	 "JSON object of strings"},
	{"resize.stateful-operator.io/data", "2Gi", NULL, "gold", false, false, "ResizeStorageClassNotFound",
	 "\"gold\", which does not exist"},
	{"resize.stateful-operator.io/data", "2Gi", NULL, NULL, true, false, "ResizeNoVolumeClaimTemplates",
	 "no volumeClaimTemplates"},
	{"resize.stateful-operator.io/data", "2Gi", NULL, NULL, false, true, "ResizeStorageClassUnknown",
	 "cluster RBAC"},
	{"resize.stateful-operator.io/data", "2Gi", "grow", NULL, false, false, "ResizeInvalidStrategy",
	 "use auto, expand or copy"},
};

static void test_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const struct refusal_case *c = &refusals[i];
		struct world w;
		world_init(&w);
		json_decref(w.sts);
		w.sts = sts(3, "1Gi", c->class_name);
		if (c->no_templates)
			json_object_del(json_object_get(w.sts, "spec"), "volumeClaimTemplates");
		if (c->no_classes) {
			json_decref(w.classes);
			w.classes = NULL;
		}
		annotate(w.sts, c->annotation, c->value);
		if (c->strategy)
			annotate(w.sts, ANNOTATION_STRATEGY, c->strategy);
		plan(&w);
		if (w.a.verb != ACTION_REFUSE || strcmp(w.a.event_reason, c->reason) ||
		    strcmp(w.a.event_type, "Warning") || !strstr(w.a.event_message, c->needle))
			fail_msg("case %zu (%s=%s): step %s, reason %s, message: %s", i, c->annotation, c->value,
				 action_name(&w.a), w.a.event_reason ? w.a.event_reason : "-",
				 w.a.event_message ? w.a.event_message : "-");
		assert_null(w.a.state); /* nothing is written */
		world_release(&w);
	}
}

/* ---- the in-place cycle ---- */

static void test_start_records_state(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	annotate(w.sts, "resize.stateful-operator.io/data", "2048Mi");
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(state_field(&w.a, "phase"), "Expanding");
	assert_string_equal(state_field(&w.a, "statefulSetUID"), UID);
	assert_string_equal(json_string_value(json_object_get(json_object_get(w.a.state, "targets"), "data")),
			    "2Gi"); /* canonical form */
	assert_string_equal(w.a.event_reason, "ResizeStarted");
	world_release(&w);
}

static void test_vshn_trigger_template_bigger_than_pvcs(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	json_decref(w.sts);
	w.sts = sts(3, "2Gi", NULL); /* re-applied with a bigger template; no annotation */
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(json_string_value(json_object_get(json_object_get(w.a.state, "targets"), "data")),
			    "2Gi");
	world_release(&w);
}

static void test_expanding_goes_highest_ordinal_first_and_waits(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	set_state(w.sts, EXPANDING);
	plan(&w);
	/* Only the claim seen is patched: its UID is the patch's precondition. */
	expect_claim_patch(&w, "PatchPVC", "data-web-2", "2Gi");

	/* Requested, not yet there: wait, touch nothing else. */
	json_decref(w.pvcs);
	w.pvcs = pvcs3("1Gi", "1Gi", "1Gi", "1Gi", "2Gi", "1Gi");
	plan(&w);
	expect_step(&w, "Wait");

	/* Done: the next replica down. */
	json_decref(w.pvcs);
	w.pvcs = pvcs3("1Gi", "1Gi", "1Gi", "1Gi", "2Gi", "2Gi");
	plan(&w);
	expect_step(&w, "PatchPVC");
	assert_string_equal(w.a.name, "data-web-1");

	/* All three: save the StatefulSet next. */
	json_decref(w.pvcs);
	w.pvcs = pvcs3("2Gi", "2Gi", "2Gi", "2Gi", "2Gi", "2Gi");
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(state_field(&w.a, "phase"), "Saving");
	world_release(&w);
}

static void test_unbound_claim_is_waited_for(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	set_state(w.sts, EXPANDING);
	/* The API server refuses a new request on a claim that is not Bound yet. */
	json_object_set_new(json_object_get(json_array_get(w.pvcs, 2), "status"), "phase", json_string("Pending"));
	plan(&w);
	expect_step(&w, "Wait");
	assert_non_null(strstr(w.a.status, "Bound"));
	world_release(&w);
}

static void test_file_system_pending_restarts_that_pod_once(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	set_state(w.sts, EXPANDING);
	json_decref(w.pvcs);
	w.pvcs = pvcs3("1Gi", "1Gi", "1Gi", "1Gi", "2Gi", "1Gi");
	pvc_condition(json_array_get(w.pvcs, 2), "FileSystemResizePending", "restart a pod");
	/* First the restart is recorded (pod and UID), so a crash cannot restart it twice. */
	plan(&w);
	expect_step(&w, "SetState");
	const json_t *r = json_object_get(w.a.state, "restart");
	assert_string_equal(json_string_value(json_object_get(r, "pod")), "web-2");
	assert_string_equal(json_string_value(json_object_get(r, "uid")), "p2");

	/* Then the pod with that UID is deleted. */
	set_state(w.sts, "{\"phase\":\"Expanding\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID
			 "\",\"restart\":{\"pod\":\"web-2\",\"uid\":\"p2\"}}");
	plan(&w);
	expect_step(&w, "DeletePod");
	assert_string_equal(w.a.name, "web-2");
	assert_string_equal(w.a.uid, "p2");

	/* A new pod, not Ready yet: wait. */
	json_array_set_new(w.pods, 2, pod("web-2", "p2-new", false, UID));
	plan(&w);
	expect_step(&w, "Wait");

	/* The volume has grown but the pod is not Ready: still wait before the next replica. */
	json_decref(w.pvcs);
	w.pvcs = pvcs3("1Gi", "1Gi", "1Gi", "1Gi", "2Gi", "2Gi");
	plan(&w);
	expect_step(&w, "Wait");

	/* Ready: the next replica; web-2 is not restarted again. */
	json_array_set_new(w.pods, 2, pod("web-2", "p2-new", true, UID));
	plan(&w);
	expect_step(&w, "PatchPVC");
	assert_string_equal(w.a.name, "data-web-1");
	world_release(&w);
}

static void test_driver_failure_fails_the_resize(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	set_state(w.sts, EXPANDING);
	json_decref(w.pvcs);
	w.pvcs = pvcs3("1Gi", "1Gi", "1Gi", "1Gi", "2Gi", "1Gi");
	pvc_condition(json_array_get(w.pvcs, 2), "ControllerResizeError", "disk quota exceeded");
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(state_field(&w.a, "phase"), "Failed");
	assert_non_null(strstr(state_field(&w.a, "message"), "disk quota exceeded"));
	assert_string_equal(w.a.event_type, "Warning");
	assert_string_equal(w.a.event_reason, "ResizeFailed");
	assert_non_null(strstr(w.a.status, "disk quota exceeded"));

	/* Failed: first the claims to lower back are recorded... */
	annotate(w.sts, "resize.stateful-operator.io/data", "2Gi");
	set_state(w.sts, "{\"phase\":\"Failed\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID
			 "\",\"message\":\"data-web-2: disk quota exceeded\"}");
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(kube_obj_str(json_object_get(w.a.state, "lowering"), "data-web-2"), "pending");
	assert_string_equal(w.a.status, "Failed: data-web-2: disk quota exceeded");
	/* ...then each request is lowered back to the capacity, one patch a step (the claim seen only)... */
	char *pending = json_dumps(w.a.state, JSON_COMPACT);
	set_state(w.sts, pending);
	plan(&w);
	expect_claim_patch(&w, "LowerRequest", "data-web-2", "1Gi");
	/* ...a refusal the API server gave is recorded in its place... */
	json_t *refused = json_pack("{s:s}", "data-web-2", "field is immutable");
	w.lower_refusals = refused;
	plan(&w);
	w.lower_refusals = NULL;
	expect_step(&w, "SetState");
	assert_string_equal(kube_obj_str(json_object_get(w.a.state, "lowering"), "data-web-2"),
			    "not lowered from 2Gi to 1Gi: field is immutable");
	assert_null(w.a.event_reason);
	char *text = json_dumps(w.a.state, JSON_COMPACT);
	set_state(w.sts, text);
	free(text);
	/* ...and once every claim has an outcome, it goes to the state, the Event and the status at once. */
	plan(&w);
	expect_step(&w, "SetState");
	assert_null(json_object_get(w.a.state, "lowering"));
	assert_string_equal(w.a.event_type, "Warning");
	assert_string_equal(w.a.event_reason, "ResizeRequestNotLowered");
	assert_string_equal(w.a.event_message, "after the failed expansion, requests could not all be lowered back: "
					       "{\"data-web-2\":\"not lowered from 2Gi to 1Gi: field is immutable\"}");
	assert_string_equal(w.a.status, "Failed: data-web-2: disk quota exceeded");
	/* Lowered: so recorded. */
	set_state(w.sts, pending);
	free(pending);
	json_object_set_new(json_object_get(json_object_get(json_object_get(json_array_get(w.pvcs, 2), "spec"),
							    "resources"),
					    "requests"),
			    "storage", json_string("1Gi"));
	plan(&w);
	expect_step(&w, "SetState");
	assert_null(json_object_get(w.a.state, "lowering"));
	assert_string_equal(kube_obj_str(json_object_get(w.a.state, "lowered"), "data-web-2"), "lowered");
	assert_string_equal(w.a.event_type, "Normal");
	assert_string_equal(w.a.event_reason, "ResizeRequestLowered");
	assert_string_equal(w.a.event_message,
			    "after the failed expansion, requests lowered back to the capacity: {\"data-web-2\":\"lowered\"}");
	json_decref(refused);
	/* ...then it stays failed while the request is the same... */
	set_state(w.sts, "{\"phase\":\"Failed\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID
			 "\",\"lowered\":{\"data-web-2\":\"lowered\"}}");
	plan(&w);
	expect_step(&w, "Nothing");
	/* ...and starts over when the user changes it. */
	annotate(w.sts, "resize.stateful-operator.io/data", "3Gi");
	plan(&w);
	expect_step(&w, "Finish");
	world_release(&w);
}

static void test_abort_while_expanding(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	set_state(w.sts, EXPANDING);
	annotate(w.sts, ANNOTATION_ABORT, "true");
	plan(&w);
	expect_step(&w, "Finish");
	assert_string_equal(w.a.event_reason, "ResizeAborted");
	world_release(&w);
}

static void test_save_orphan_delete_recreate_adopt_finish(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	annotate(w.sts, "resize.stateful-operator.io/data", "2Gi");
	set_state(w.sts, "{\"phase\":\"Saving\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID "\"}");
	plan(&w);
	expect_step(&w, "Save");
	assert_string_equal(state_field(&w.a, "phase"), "Recreating");

	/* The backup holds the StatefulSet with the Recreating state. */
	json_t *saved = resize_saved_copy(w.sts);
	set_state(saved, "{\"phase\":\"Recreating\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID "\"}");
	char *text = json_dumps(saved, JSON_COMPACT);
	w.backup = json_pack("{s:{s:s, s:s}, s:{s:s}}", "metadata", "name", "web-sts-backup", "namespace",
			     "ns", "data", BACKUP_KEY, text);
	free(text);
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(state_field(&w.a, "phase"), "Recreating");

	set_state(w.sts, "{\"phase\":\"Recreating\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID "\"}");
	plan(&w);
	expect_step(&w, "OrphanDelete");
	assert_string_equal(w.a.uid, UID);
	/* Deleting (the garbage collector orphans the pods first): wait, do not delete again. */
	json_object_set_new(json_object_get(w.sts, "metadata"), "deletionTimestamp", json_string(NOW));
	plan(&w);
	expect_step(&w, "Wait");
	json_object_del(json_object_get(w.sts, "metadata"), "deletionTimestamp");

	/* Gone: re-created from the backup, now Adopting. */
	json_t *live = w.sts;
	w.sts = NULL;
	plan(&w);
	expect_step(&w, "Recreate");
	assert_string_equal(state_field(&w.a, "phase"), "Adopting");
	json_t *recreated = resize_with_new_sizes(saved, w.a.state);
	assert_string_equal(kube_obj_str(json_array_get(json_object_get(json_object_get(recreated, "spec"),
									 "volumeClaimTemplates"),
							 0),
					 "spec.resources.requests.storage"),
			    "2Gi");
	assert_null(kube_obj_str(recreated, "metadata.uid"));

	/* The new StatefulSet (new UID) has not adopted the pods yet: wait. */
	w.sts = live;
	json_object_set_new(json_object_get(w.sts, "metadata"), "uid", json_string("uid-web-2"));
	set_state(w.sts, "{\"phase\":\"Adopting\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID "\"}");
	plan(&w);
	expect_step(&w, "Wait");
	/* Adopted: the backup goes, then the state. */
	json_decref(w.pods);
	w.pods = json_pack("[o, o, o]", pod("web-0", "p0", true, "uid-web-2"), pod("web-1", "p1", true, "uid-web-2"),
			   pod("web-2", "p2", true, "uid-web-2"));
	plan(&w);
	expect_step(&w, "DeleteBackup");
	json_decref(w.backup);
	w.backup = NULL;
	plan(&w);
	expect_step(&w, "Finish");
	assert_string_equal(w.a.event_reason, "ResizeCompleted");

	json_decref(recreated);
	json_decref(saved);
	world_release(&w);
}

/* A pod of the set with claim volumes for the named templates (NULL-terminated). */
static json_t *pod_with_volumes(const char *name, const char *uid, bool ready, const char *const *templates)
{
	json_t *p = pod(name, uid, ready, "uid-web-2");
	json_t *vols = json_array();
	for (int i = 0; templates[i]; i++) {
		char claim[64];
		snprintf(claim, sizeof(claim), "%s-%s", templates[i], name);
		json_array_append_new(vols, json_pack("{s:s, s:{s:s}}", "name", templates[i], "persistentVolumeClaim",
						      "claimName", claim));
	}
	json_object_set_new(p, "spec", json_pack("{s:o}", "volumes", vols));
	return p;
}

#define ADOPTING_NEW "{\"phase\":\"Adopting\",\"targets\":{},\"statefulSetUID\":\"" UID "\""

/*
 * A template added: the pods made before it lack its volume and the
 * StatefulSet controller cannot add it; each is restarted, lowest ordinal
 * first, recorded before the delete, one at a time with the others Ready,
 * and the backup goes only when every pod has every volume.
 */
static void test_template_added_restarts_pods_lowest_first(void **state)
{
	(void)state;
	static const char *const old[] = {"data", NULL}, *const both[] = {"data", "logs", NULL};
	struct world w;
	world_init(&w);
	json_t *saved = resize_saved_copy(w.sts);
	set_state(saved, ADOPTING_NEW "}");
	char *text = json_dumps(saved, JSON_COMPACT);
	w.backup = json_pack("{s:{s:s, s:s}, s:{s:s}}", "metadata", "name", "web-sts-backup", "namespace", "ns",
			     "data", BACKUP_KEY, text);
	free(text);
	json_object_set_new(json_object_get(w.sts, "metadata"), "uid", json_string("uid-web-2"));
	json_t *logs = json_deep_copy(json_array_get(json_object_get(json_object_get(w.sts, "spec"),
								      "volumeClaimTemplates"), 0));
	json_object_set_new(json_object_get(logs, "metadata"), "name", json_string("logs"));
	json_array_append_new(json_object_get(json_object_get(w.sts, "spec"), "volumeClaimTemplates"), logs);
	json_decref(w.pods);
	w.pods = json_pack("[o, o, o]", pod_with_volumes("web-0", "p0", true, old),
			   pod_with_volumes("web-1", "p1", true, old), pod_with_volumes("web-2", "p2", true, old));
	set_state(w.sts, ADOPTING_NEW "}");

	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(w.a.event_reason, "RestartingPod");
	const json_t *r = json_object_get(w.a.state, "restart");
	assert_string_equal(json_string_value(json_object_get(r, "pod")), "web-0");
	assert_string_equal(json_string_value(json_object_get(r, "uid")), "p0");

	set_state(w.sts, ADOPTING_NEW ",\"restart\":{\"pod\":\"web-0\",\"uid\":\"p0\",\"ordinal\":0}}");
	plan(&w);
	expect_step(&w, "DeletePod");
	assert_string_equal(w.a.name, "web-0");
	assert_string_equal(w.a.uid, "p0");
	/* Gone, then back without being Ready: wait. */
	json_array_remove(w.pods, 0);
	plan(&w);
	expect_step(&w, "Wait");
	json_array_insert_new(w.pods, 0, pod_with_volumes("web-0", "p0-new", false, both));
	plan(&w);
	expect_step(&w, "Wait");
	/* Ready with both volumes: the record is cleared. */
	json_array_set_new(w.pods, 0, pod_with_volumes("web-0", "p0-new", true, both));
	plan(&w);
	expect_step(&w, "SetState");
	assert_null(json_object_get(w.a.state, "restart"));

	/* Next web-1, but not while web-2 is not Ready. */
	set_state(w.sts, ADOPTING_NEW "}");
	json_array_set_new(w.pods, 2, pod_with_volumes("web-2", "p2", false, old));
	plan(&w);
	expect_step(&w, "Wait");
	json_array_set_new(w.pods, 2, pod_with_volumes("web-2", "p2", true, old));
	plan(&w);
	expect_step(&w, "SetState");
	assert_string_equal(json_string_value(json_object_get(json_object_get(w.a.state, "restart"), "pod")), "web-1");

	/* A pod missing above the first that lacks the volume (stalled behind it) does not block it. */
	json_array_remove(w.pods, 2);
	plan(&w);
	expect_step(&w, "SetState");

	/* Every pod has every volume: the backup goes. */
	json_decref(w.pods);
	w.pods = json_pack("[o, o, o]", pod_with_volumes("web-0", "p0-new", true, both),
			   pod_with_volumes("web-1", "p1-new", true, both), pod_with_volumes("web-2", "p2-new", true, both));
	plan(&w);
	expect_step(&w, "DeleteBackup");
	json_decref(saved);
	world_release(&w);
}

/*
 * A state with fields missing (written by hand; the seal keeps such state
 * away from the planner, this is the planner's own guard): decided on, never
 * a crash. The 0.1 planner dereferenced a missing statefulSetUID.
 */
static void test_state_with_fields_missing_is_no_crash(void **state)
{
	(void)state;
	static const char *const states[] = {
		"{\"phase\":\"Saving\"}",
		"{\"phase\":\"Recreating\"}",
		"{\"phase\":\"Adopting\"}",
		"{\"phase\":\"Expanding\",\"restart\":{}}",
		"{\"phase\":\"Failed\"}",
		"{\"phase\":\"Modifying\",\"attributesClasses\":[]}",
		"{\"phase\":\"Failed\",\"attributesRevert\":{}}",
		"{\"phase\":\"Expanding\",\"templates\":{}}",
		"{\"strategy\":\"copy\",\"phase\":\"Copying\"}",
		"{\"strategy\":\"copy\",\"phase\":\"Copying\",\"batch\":{\"step\":\"Swap\",\"volumes\":[{}]}}",
		"{\"strategy\":\"copy\",\"phase\":\"Cleaning\",\"oldVolumes\":[1]}",
	};
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		struct world w;
		world_init(&w);
		annotate(w.sts, "resize.stateful-operator.io/data", "2Gi");
		set_state(w.sts, states[i]);
		json_t *saved = resize_saved_copy(w.sts);
		char *text = json_dumps(saved, JSON_COMPACT);
		w.backup = json_pack("{s:{s:s, s:s}, s:{s:s}}", "metadata", "name", "web-sts-backup", "namespace", "ns",
				     "data", BACKUP_KEY, text);
		free(text);
		json_decref(saved);
		plan(&w);
		world_release(&w);
	}
}

static void test_saved_copy_drops_server_fields_but_keeps_owners(void **state)
{
	(void)state;
	json_t *s = sts(3, "1Gi", "expandable");
	json_t *meta = json_object_get(s, "metadata");
	json_object_set_new(meta, "resourceVersion", json_string("42"));
	json_object_set_new(meta, "generation", json_integer(3));
	json_object_set_new(meta, "creationTimestamp", json_string(NOW));
	json_object_set_new(meta, "labels", json_pack("{s:s}", "app", "web"));
	json_object_set_new(meta, "managedFields", json_pack("[{s:s, s:s}]", "manager", "helm", "operation", "Apply"));
	json_object_set_new(s, "status", json_pack("{s:i}", "replicas", 3));
	json_object_set_new(json_object_get(s, "spec"), "someFutureField", json_string("kept"));
	json_t *c = resize_saved_copy(s);
	assert_null(json_object_get(c, "status"));
	assert_null(kube_obj_str(c, "metadata.uid"));
	assert_null(kube_obj_str(c, "metadata.resourceVersion"));
	assert_null(json_object_get(json_object_get(c, "metadata"), "generation"));
	assert_null(kube_obj_str(c, "metadata.creationTimestamp"));
	assert_string_equal(kube_obj_str(c, "metadata.labels.app"), "web");
	assert_string_equal(kube_obj_str(c, "spec.someFutureField"), "kept"); /* unknown fields survive */
	/* The field owners, to be put back after a re-create. */
	assert_int_equal(json_array_size(json_object_get(json_object_get(c, "metadata"), "managedFields")), 1);
	json_decref(c);
	json_decref(s);
}

/* The set gone and its saved copy unreadable (an edited ConfigMap): a Warning that says so, nothing else. */
static void test_unreadable_saved_copy_is_reported(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	json_decref(w.sts);
	w.sts = NULL;
	w.backup = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "metadata", "name", "web-sts-backup", "namespace",
			     "ns", "annotations", ANNOTATION_RESIZE_STATE,
			     "{\"phase\":\"Recreating\",\"targets\":{\"data\":\"2Gi\"},\"statefulSetUID\":\"" UID "\"}",
			     "data", BACKUP_KEY, "not a StatefulSet");
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_REFUSE);
	assert_string_equal(w.a.event_reason, "ResizeBackupUnreadable");
	assert_non_null(strstr(w.a.event_message, "web-sts-backup"));
	assert_true(w.a.requeue_ms > 0);
	world_release(&w);
}

/* ---- the state fixtures: SOP_STATE_FIXTURES_OUT=<dir> (tests/fixtures/state/README.md) ---- */

static void write_fixture(const struct world *w, const char *phase)
{
	json_t *objects = json_pack("{s:O, s:O*, s:O, s:O, s:O}", "statefulSet", w->sts, "backup", w->backup, "pvcs",
				    w->pvcs, "pods", w->pods, "storageClasses", w->classes);
	state_fixture_write(state_fixture_out(), "resize-in-place", phase,
			    "resize in place (3 replicas, data 1Gi -> 2Gi, StorageClass expandable): the states "
			    "resize_plan wrote, in test_resize_plan",
			    objects, NOW_MS, &w->a);
	json_decref(objects);
}

/* Performs the SetState planned: the state written as the controller writes it. */
static void apply_state(struct world *w)
{
	expect_step(w, "SetState");
	char *text = resize_state_text(w->a.state);
	set_state(w->sts, text);
	free(text);
}

/*
 * The in-place cycle up to a file system resize, each state as the planner
 * wrote it; what the volume driver does (capacity, condition) set by hand.
 */
static void test_write_state_fixtures(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	annotate(w.sts, "resize.stateful-operator.io/data", "2Gi");
	plan(&w);
	apply_state(&w); /* Expanding */
	plan(&w);
	expect_step(&w, "PatchPVC");
	write_fixture(&w, "expanding-started");
	json_t *claim = sim_find(w.pvcs, w.a.name);
	assert_non_null(claim);
	sim_merge_patch(claim, w.a.body);
	plan(&w);
	write_fixture(&w, "expanding-waiting-for-capacity");
	/* The controller grew the volume; the capacity shows the new size once the node grew the file system. */
	pvc_condition(claim, "FileSystemResizePending", "Waiting for user to (re-)start a pod to finish file "
				"system resize of volume on node.");
	plan(&w);
	apply_state(&w); /* the restart recorded */
	plan(&w);
	expect_step(&w, "DeletePod");
	write_fixture(&w, "file-system-resize-pending-restart");
	world_release(&w);
}

int main(void)
{
	if (state_fixture_out()) {
		const struct CMUnitTest write[] = {cmocka_unit_test(test_write_state_fixtures)};
		return cmocka_run_group_tests(write, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_request_no_step),
		cmocka_unit_test(test_state_with_fields_missing_is_no_crash),
		cmocka_unit_test(test_ignore_wins),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_start_records_state),
		cmocka_unit_test(test_vshn_trigger_template_bigger_than_pvcs),
		cmocka_unit_test(test_expanding_goes_highest_ordinal_first_and_waits),
		cmocka_unit_test(test_unbound_claim_is_waited_for),
		cmocka_unit_test(test_file_system_pending_restarts_that_pod_once),
		cmocka_unit_test(test_driver_failure_fails_the_resize),
		cmocka_unit_test(test_abort_while_expanding),
		cmocka_unit_test(test_save_orphan_delete_recreate_adopt_finish),
		cmocka_unit_test(test_template_added_restarts_pods_lowest_first),
		cmocka_unit_test(test_unreadable_saved_copy_is_reported),
		cmocka_unit_test(test_saved_copy_drops_server_fields_but_keeps_owners),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
