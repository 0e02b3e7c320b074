/*
 * The desired-templates annotation (what the admission webhook records on a
 * StatefulSet update that changed volumeClaimTemplates): read into the
 * resize request, refused when bad, and carried out end to end on a small
 * simulated cluster (claims' labels and annotations, sizes, templates added
 * and removed), crash-safe and idempotent under GitOps re-applies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/kube_object.h"
#include "controllers/resize/resize_internal.h"
#include "sim.h"
#include "util/xalloc.h"

#define NOW_MS 1795262400000LL

/* ---- builders ---- */

static json_t *template(const char *name, const char *size, const char *labels_json)
{
	json_t *t = json_pack("{s:{s:s}, s:{s:[s], s:s, s:{s:{s:s}}, s:s}, s:{s:s}}", "metadata", "name", name,
			      "spec", "accessModes", "ReadWriteOnce", "storageClassName", "expandable", "resources",
			      "requests", "storage", size, "volumeMode", "Filesystem", "status", "phase", "Pending");
	if (labels_json)
		json_object_set_new(json_object_get(t, "metadata"), "labels", json_loads(labels_json, 0, NULL));
	return t;
}

/* StatefulSet ns/web, 2 replicas, templates data and logs (1Gi, class expandable), data labelled app/tier. */
static json_t *web(void)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{}}, s:{s:i, s:s, s:[o, o]}}", "apiVersion",
			 "apps/v1", "kind", "StatefulSet", "metadata", "name", "web", "namespace", "ns", "uid", "uid-1",
			 "resourceVersion", "10", "annotations", "spec", "replicas", 2, "serviceName", "web",
			 "volumeClaimTemplates", template("data", "1Gi", "{\"app\":\"web\",\"tier\":\"db\"}"),
			 template("logs", "1Gi", NULL));
}

static json_t *claim(const char *name, const char *labels_json)
{
	char uid[96];
	snprintf(uid, sizeof(uid), "uid-%s", name);
	json_t *c = json_pack("{s:{s:s, s:s, s:s, s:o}, s:{s:{s:{s:s}}}, s:{s:s, s:{s:s}}}", "metadata", "name", name,
			      "namespace", "ns", "uid", uid, "labels", json_loads(labels_json, 0, NULL), "spec",
			      "resources", "requests", "storage", "1Gi", "status", "phase", "Bound", "capacity",
			      "storage", "1Gi");
	return c;
}

static json_t *pod(const char *name, const char *owner_uid)
{
	return json_pack("{s:{s:s, s:s, s:s, s:[{s:s, s:b}]}, s:{s:[{s:s, s:s}]}}", "metadata", "name", name,
			 "namespace", "ns", "uid", name, "ownerReferences", "uid", owner_uid, "controller", 1,
			 "status", "conditions", "type", "Ready", "status", "True");
}

/* StorageClasses expandable (the default, allows expansion) and fixed (does not). */
static json_t *storage_classes(void)
{
	return json_pack("[{s:{s:s, s:{s:s}}, s:b}, {s:{s:s}, s:b}]", "metadata", "name", "expandable", "annotations",
			 "storageclass.kubernetes.io/is-default-class", "true", "allowVolumeExpansion", 1, "metadata",
			 "name", "fixed", "allowVolumeExpansion", 0);
}

struct world {
	json_t *sts, *backup, *pvcs, *pods, *classes, *pvs;
	json_t *history; /* [{"step", "type", "reason", "message"}] */
	struct sim_trace trace;
	struct action a;
	int uids;        /* StatefulSets created so far */
};

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->sts = web();
	/* The claims carry the template's labels, and one the user added by hand. */
	w->pvcs = json_pack("[o, o, o, o]", claim("data-web-0", "{\"app\":\"web\",\"tier\":\"db\",\"extra\":\"keep\"}"),
			    claim("data-web-1", "{\"app\":\"web\",\"tier\":\"db\"}"), claim("logs-web-0", "{}"),
			    claim("logs-web-1", "{}"));
	w->pods = json_pack("[o, o]", pod("web-0", "uid-1"), pod("web-1", "uid-1"));
	w->classes = storage_classes();
	w->pvs = json_array();
	w->history = json_array();
	w->uids = 1;
}

static void world_release(struct world *w)
{
	action_release(&w->a);
	json_decref(w->sts);
	json_decref(w->backup);
	json_decref(w->pvcs);
	json_decref(w->pods);
	json_decref(w->classes);
	json_decref(w->pvs);
	json_decref(w->history);
	sim_trace_release(&w->trace);
}

static void plan(struct world *w)
{
	action_release(&w->a);
	json_t *pods = sim_cached_pods(w->pods);
	struct resize_inputs in = {w->sts, w->backup, w->pvcs, pods, w->classes, w->pvs, NULL, NULL, NULL};
	resize_plan(&in, NOW_MS, &w->a);
	json_decref(pods);
}

static void desire(json_t *sts, const char *text)
{
	sim_annotate(sts, ANNOTATION_DESIRED_TEMPLATES, text);
}

static const json_t *templates_of(const json_t *sts)
{
	return json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
}

static void expect_refused(struct world *w, const char *reason, const char *needle)
{
	plan(w);
	if (w->a.verb != ACTION_REFUSE || !sim_streq(w->a.event_reason, reason) ||
	    !sim_streq(w->a.event_type, "Warning") || !sim_contains(w->a.event_message, needle))
		fail_msg("step %s, reason %s, message %s; want %s with \"%s\"", action_name(&w->a),
			 sim_or_dash(w->a.event_reason), sim_or_dash(w->a.event_message), reason, needle);
	assert_null(w->a.state); /* nothing is written */
}

/* ---- the simulated API server: performs w->a ---- */

/* The StatefulSet controller: pods are owned by the set of their name; created ones adopt them. */
static void adopt_pods(struct world *w)
{
	size_t i;
	json_t *p;
	json_array_foreach(w->pods, i, p) {
		json_t *ref = json_array_get(json_object_get(sim_meta(p), "ownerReferences"), 0);
		json_object_set_new(ref, "uid", json_string(w->sts ? kube_obj_str(w->sts, "metadata.uid") : "none"));
	}
}

static void set_state_on(json_t *obj, const json_t *state, const char *status)
{
	char *text = state ? resize_state_text(state) : NULL;
	sim_annotate(obj, ANNOTATION_RESIZE_STATE, text);
	sim_annotate(obj, ANNOTATION_RESIZE_STATUS, status);
	free(text);
}

/*
 * Performs w->a; a repeat (again) meets what the first call left, as after
 * a crash right after it, and records no Event (the crash came first).
 */
static void perform_call(struct world *w, bool again)
{
	struct action *a = &w->a;
	const char *step = action_name(a);
	sim_trace_add(&w->trace, "%s %s%s%s\n", step, a->name, a->event_reason ? " " : "", sim_or_dash(a->event_reason));
	if (!strcmp(step, "SetState") || !strcmp(step, "Finish")) {
		set_state_on(w->sts ? w->sts : w->backup, a->state, a->status);
	} else if (!strcmp(step, "PatchPVC")) {
		json_t *c = sim_find_in(w->pvcs, "ns", a->name);
		sim_merge_patch(c, a->body);
		/* The driver grows it at once. */
		json_object_set(json_object_get(json_object_get(c, "status"), "capacity"), "storage",
				json_object_get(json_object_get(json_object_get(json_object_get(c, "spec"), "resources"),
								"requests"),
						"storage"));
	} else if (!strcmp(step, "PatchClaimMetadata")) {
		json_t *c = sim_find_in(w->pvcs, "ns", a->name);
		assert_true(sim_precondition_met(c, kube_obj_str(a->body, "metadata.uid"), &w->trace, NULL));
		sim_merge_patch(c, a->body);
	} else if (!strcmp(step, "PatchAttributesClass") || !strcmp(step, "RevertAttributesClass")) {
		json_t *c = sim_find_in(w->pvcs, "ns", a->name);
		assert_true(sim_precondition_met(c, kube_obj_str(a->body, "metadata.uid"), &w->trace, NULL));
		sim_merge_patch(c, a->body);
		/* The driver: "impossible" is Infeasible, any other class is taken at once; a revert cancels. */
		const char *vac = kube_obj_str(c, "spec.volumeAttributesClassName");
		json_t *status = json_object_get(c, "status");
		if (!strcmp(step, "RevertAttributesClass"))
			json_object_del(status, "modifyVolumeStatus");
		else if (sim_streq(vac, "impossible"))
			json_object_set_new(status, "modifyVolumeStatus",
					    json_pack("{s:s, s:s}", "status", "Infeasible", "targetVolumeAttributesClassName", vac));
		else
			json_object_set_new(status, "currentVolumeAttributesClassName", json_string(vac));
	} else if (!strcmp(step, "Save")) {
		if (w->backup)
			return; /* 409: saved before */
		json_t *saved = resize_saved_copy(w->sts);
		set_state_on(saved, a->state, NULL);
		char *text = json_dumps(saved, JSON_COMPACT);
		w->backup = json_pack("{s:{s:s, s:s, s:{}}, s:{s:s}}", "metadata", "name", "web-sts-backup", "namespace",
				      "ns", "annotations", "data", BACKUP_KEY, text);
		set_state_on(w->backup, a->state, NULL);
		free(text);
		json_decref(saved);
	} else if (!strcmp(step, "OrphanDelete")) {
		if (a->resource_version[0] && !sim_streq(kube_obj_str(w->sts, "metadata.resourceVersion"), a->resource_version))
			return; /* 409: changed since the plan read it */
		json_decref(w->sts); /* its pods stay */
		w->sts = NULL;
	} else if (!strcmp(step, "Recreate")) {
		if (w->sts)
			return; /* 409: created before */
		w->sts = json_deep_copy(a->body);
		char uid[32];
		snprintf(uid, sizeof(uid), "uid-%d", ++w->uids);
		json_object_set_new(sim_meta(w->sts), "uid", json_string(uid));
		adopt_pods(w);
	} else if (!strcmp(step, "RestoreFieldManagers")) {
		sim_merge_patch(w->sts, a->body);
	} else if (!strcmp(step, "DeletePod")) {
		/* The StatefulSet controller makes it again, with a volume for every template. */
		json_t *p = sim_find_in(w->pods, "ns", a->name);
		if (!p || !sim_streq(kube_obj_str(p, "metadata.uid"), a->uid))
			return; /* deleted before */
		json_object_set_new(sim_meta(p), "uid", json_sprintf("%s-new", a->name));
		json_t *vols = json_array();
		size_t i;
		json_t *t;
		json_array_foreach(templates_of(w->sts), i, t) {
			char *claim_name = xasprintf("%s-%s", kube_obj_str(t, "metadata.name"), a->name);
			json_array_append_new(vols, json_pack("{s:{s:s}}", "persistentVolumeClaim", "claimName", claim_name));
			free(claim_name);
		}
		json_object_set_new(p, "spec", json_pack("{s:o}", "volumes", vols));
	} else if (!strcmp(step, "DeleteBackup")) {
		json_decref(w->backup);
		w->backup = NULL;
	} else {
		fail_msg("a step this test does not simulate: %s %s", step, a->name);
	}
	if (a->event_reason && !again)
		json_array_append_new(w->history, json_pack("{s:s, s:s, s:s, s:s}", "step", step, "type",
							    a->event_type, "reason", a->event_reason, "message",
							    a->event_message));
}

static void perform(struct world *w)
{
	perform_call(w, false);
}

/* Plans and performs (each step twice when twice) until nothing is left to do; the steps taken. */
static int drive(struct world *w, bool twice)
{
	for (int n = 0; n < 60; n++) {
		plan(w);
		if (w->a.verb == ACTION_NOTHING)
			return n;
		if (w->a.verb == ACTION_REFUSE || w->a.verb == ACTION_WAIT)
			sim_fail(w->trace.text, "step %s (%s: %s)", action_name(&w->a), sim_or_dash(w->a.event_reason),
				 sim_or_dash(w->a.event_message));
		perform(w);
		if (twice)
			perform_call(w, true);
	}
	sim_fail(w->trace.text, "no end after 60 steps");
	return -1;
}

static const char *label_of(const json_t *obj, const char *key)
{
	return sim_label(obj, key);
}

/* ---- reading the annotation ---- */

static void test_malformed_annotation_is_refused_naming_it(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"not json",
		"{\"metadata\":{\"name\":\"data\"}}",
		"[1]",
		"[{\"metadata\":{}}]",
		"[{\"metadata\":{\"name\":\"\"}}]",
		"[{\"metadata\":{\"name\":\"data\"},\"spec\":[]}]",
		"[{\"metadata\":{\"name\":\"data\",\"labels\":{\"a\":1}}}]",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct world w;
		world_init(&w);
		desire(w.sts, texts[i]);
		expect_refused(&w, "ResizeInvalidAnnotation", ANNOTATION_DESIRED_TEMPLATES);
		world_release(&w);
	}
}

/*
 * The webhook's rules, in its words (resize_desired_judge.c): a Warning
 * that says what to fix, resize-status saying it, and nothing written.
 */
static void test_bad_desired_templates_are_refused(void **state)
{
	(void)state;
	static const struct {
		const char *strategy, *desired, *needle;
	} cases[] = {
		{NULL, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"512Mi\"}}}}]",
		 "1Gi -> 512Mi is a shrink"},
		{NULL, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"2Gb\"}}}}]",
		 "unknown suffix"},
		{"expand", "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"storageClassName\":\"fixed\"}}]",
		 "StorageClass expandable -> fixed copies the data to new volumes"},
		{NULL, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"storageClassName\":\"gold\"}}]",
		 "StorageClass \"gold\" does not exist"},
		{NULL,
		 "[{\"metadata\":{\"name\":\"data\"}},{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"storageClassName\":"
		 "\"gold\",\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]",
		 "\"cache\": StorageClass \"gold\" does not exist"},
		{NULL, "[{\"metadata\":{\"name\":\"data\"}},{\"metadata\":{\"name\":\"data\"}}]", "\"data\" appears twice"},
		{NULL, "[{\"metadata\":{\"name\":\"data\"}},{\"metadata\":{\"name\":\"Data_1\"},\"spec\":{\"resources\":"
		       "{\"requests\":{\"storage\":\"1Gi\"}}}},{\"metadata\":{\"name\":\"logs\"}}]",
		 "\"Data_1\" is not a DNS label"},
		{NULL, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"volumeAttributesClassName\":\"Gold_1\"}},"
		       "{\"metadata\":{\"name\":\"logs\"}}]",
		 "volumeAttributesClassName \"Gold_1\" is no VolumeAttributesClass name"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;
		world_init(&w);
		desire(w.sts, cases[i].desired);
		if (cases[i].strategy)
			sim_annotate(w.sts, ANNOTATION_STRATEGY, cases[i].strategy);
		expect_refused(&w, RESIZE_INVALID_TEMPLATES, cases[i].needle);
		if (!sim_contains(w.a.status, cases[i].needle))
			fail_msg("resize-status %s does not say \"%s\"", sim_or_dash(w.a.status), cases[i].needle);
		world_release(&w);
	}
}

/*
 * Refused, shown in resize-status; once the annotation goes, the status
 * goes too (Finish writes no state, only clears it); a good annotation
 * starts the resize as usual.
 */
static void test_refusal_status_cleared_when_the_annotation_goes(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, "[{\"metadata\":{\"name\":\"Data_1\"}}]");
	expect_refused(&w, RESIZE_INVALID_TEMPLATES, "Data_1");
	sim_annotate(w.sts, ANNOTATION_RESIZE_STATUS, w.a.status); /* what the controller shows */
	desire(w.sts, NULL);
	plan(&w);
	assert_string_equal(action_name(&w.a), "Finish");
	assert_null(w.a.state);
	assert_null(w.a.event_reason);
	perform(&w);
	assert_null(sim_annotation(w.sts, ANNOTATION_RESIZE_STATUS));
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);

	/* Another status (a resize's last word) is not the operator's to clear here. */
	sim_annotate(w.sts, ANNOTATION_RESIZE_STATUS, "Completed");
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	world_release(&w);
}

/* What the webhook would record for the set as it is (status dropped, 1Gi written 1024Mi) asks nothing. */
static void test_desired_equal_to_stored_asks_nothing(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, "[{\"metadata\":{\"labels\":{\"app\":\"web\",\"tier\":\"db\"},\"name\":\"data\"},\"spec\":"
		      "{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1024Mi\"}},"
		      "\"storageClassName\":\"expandable\",\"volumeMode\":\"Filesystem\"}},"
		      "{\"metadata\":{\"name\":\"logs\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]");
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	world_release(&w);
}

/* resize.stateful-operator.io/<t> and storage-class.stateful-operator.io/<t> win for their field. */
static void test_per_template_annotations_win(void **state)
{
	(void)state;
	json_t *s = web(), *classes = storage_classes();
	desire(s, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"3Gi\"}},"
		  "\"storageClassName\":\"fixed\"}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{\"resources\":"
		  "{\"requests\":{\"storage\":\"5Gi\"}}}}]");
	sim_annotate(s, RESIZE_ANNOTATION_PREFIX "data", "2Gi");
	sim_annotate(s, CLASS_ANNOTATION_PREFIX "data", "expandable"); /* the class it has: no change */
	sim_annotate(s, RESIZE_ANNOTATION_PREFIX "logs", "1Gi");      /* the size it has: logs stays */
	struct resize_request req;
	struct refusal r;
	if (resize_request_parse(s, classes, &req, &r) < 0)
		fail_msg("refused %s: %s", r.reason, r.message);
	assert_int_equal(req.ntargets, 1);
	assert_string_equal(req.targets[0].template_name, "data");
	char *size = quantity_format(&req.targets[0].size);
	assert_string_equal(size, "2Gi");
	assert_string_equal(req.targets[0].storage_class, "");
	free(size);
	assert_non_null(req.desired);
	refusal_release(&r);

	/* Without the annotations, the desired templates ask for themselves. */
	sim_annotate(s, RESIZE_ANNOTATION_PREFIX "data", NULL);
	sim_annotate(s, CLASS_ANNOTATION_PREFIX "data", NULL);
	sim_annotate(s, RESIZE_ANNOTATION_PREFIX "logs", NULL);
	if (resize_request_parse(s, classes, &req, &r) < 0)
		fail_msg("refused %s: %s", r.reason, r.message);
	assert_int_equal(req.ntargets, 2);
	assert_string_equal(req.targets[0].storage_class, "fixed");
	refusal_release(&r);
	json_decref(classes);
	json_decref(s);
}

/* ---- carrying it out ---- */

#define NEW_LABELS                                                                                            \
	"[{\"metadata\":{\"labels\":{\"team\":\"a\",\"tier\":\"primary\"},\"name\":\"data\"},\"spec\":"         \
	"{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}},"                \
	"\"storageClassName\":\"expandable\",\"volumeMode\":\"Filesystem\"}},{\"metadata\":{\"annotations\":"    \
	"{\"backup\":\"daily\"},\"name\":\"logs\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]"

static void expect_new_labels_applied(const struct world *w)
{
	/* Every claim: keys set, the key the old template had removed, the user's own key kept. */
	for (int i = 0; i < 2; i++) {
		const json_t *c = json_array_get(w->pvcs, (size_t)i);
		assert_string_equal(label_of(c, "tier"), "primary");
		assert_string_equal(label_of(c, "team"), "a");
		assert_null(label_of(c, "app"));
		assert_string_equal(sim_annotation(json_array_get(w->pvcs, (size_t)i + 2), "backup"), "daily");
	}
	assert_string_equal(label_of(sim_find(w->pvcs, "data-web-0"), "extra"), "keep");
	/* The set: re-created with the desired templates (fields the reduced form omits kept), its pods adopted. */
	const json_t *data = json_array_get(templates_of(w->sts), 0);
	assert_string_equal(kube_obj_str(data, "metadata.labels.tier"), "primary");
	assert_null(kube_obj_str(data, "metadata.labels.app"));
	const json_t *logs = json_array_get(templates_of(w->sts), 1);
	assert_string_equal(kube_obj_str(logs, "metadata.annotations.backup"), "daily");
	assert_string_equal(kube_obj_str(logs, "spec.volumeMode"), "Filesystem");
	assert_null(json_object_get(logs, "status"));
	assert_null(sim_annotation(w->sts, ANNOTATION_DESIRED_TEMPLATES));
	assert_null(sim_annotation(w->sts, ANNOTATION_RESIZE_STATE));
	assert_true(sim_owned_by(sim_find(w->pods, "web-0"), kube_obj_str(w->sts, "metadata.uid"), true));
	assert_null(w->backup);
	assert_int_equal(sim_events(w->history, "Normal", "ResizeStarted", NULL), 1);
}

static void test_labels_go_to_the_claims_then_the_set_is_recreated(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, NEW_LABELS);
	drive(&w, false);
	expect_new_labels_applied(&w);
	/* One patch per claim, highest ordinal first, all before the re-create. */
	const char *p1 = strstr(w.trace.text, "PatchClaimMetadata data-web-1");
	const char *p0 = strstr(w.trace.text, "PatchClaimMetadata data-web-0");
	const char *rc = strstr(w.trace.text, "Recreate");
	assert_true(p1 && p0 && rc && p1 < p0 && p0 < rc);
	/* Done: the desired annotation is gone and nothing more happens. */
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	world_release(&w);
}

/* A crash after any step (each performed twice, the second meeting what the first left) ends the same. */
static void test_every_step_twice_ends_the_same(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, NEW_LABELS);
	drive(&w, true);
	expect_new_labels_applied(&w);
	world_release(&w);
}

/* A size change and a label change in one resize: the claims grow and get their labels before the re-create. */
static void test_size_and_labels_together(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, "[{\"metadata\":{\"labels\":{\"tier\":\"primary\"},\"name\":\"data\"},\"spec\":{\"resources\":"
		      "{\"requests\":{\"storage\":\"2Gi\"}}}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	drive(&w, false);
	const char *grow = strstr(w.trace.text, "PatchPVC data-web-1");
	const char *meta = strstr(w.trace.text, "PatchClaimMetadata data-web-1");
	const char *rc = strstr(w.trace.text, "Recreate");
	assert_true(grow && meta && rc && grow < rc && meta < rc);
	assert_string_equal(kube_obj_str(sim_find(w.pvcs, "data-web-0"), "status.capacity.storage"), "2Gi");
	assert_string_equal(label_of(sim_find(w.pvcs, "data-web-0"), "tier"), "primary");
	assert_string_equal(kube_obj_str(json_array_get(templates_of(w.sts), 0), "spec.resources.requests.storage"),
			    "2Gi");
	assert_null(sim_annotation(w.sts, ANNOTATION_DESIRED_TEMPLATES));
	assert_int_equal(sim_events(w.history, "Normal", "ResizeStarted", "in place"), 1);
	world_release(&w);
}

/*
 * Added: the set is re-created with it. Removed: re-created without it, its
 * claims kept and named. Each step performed twice (a crash after it): still
 * each pod restarted once, and said once.
 */
static void test_templates_added_and_removed(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	/* Applied by helm: after the re-create, helm still owns its fields. */
	json_object_set_new(sim_meta(w.sts), "managedFields",
			    json_pack("[{s:s, s:s, s:{}}]", "manager", "helm", "operation", "Apply", "fieldsV1"));
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{}},{\"metadata\":{\"name\":\"cache\"},\"spec\":"
		      "{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"3Gi\"}}}}]");
	drive(&w, true);
	assert_string_equal(kube_obj_str(json_array_get(json_object_get(sim_meta(w.sts), "managedFields"), 0), "manager"),
			    "helm");
	assert_null(sim_annotation(w.sts, ANNOTATION_RESIZE_STATE));
	/* Each pod, made before cache was added, restarted once to mount it. */
	assert_int_equal(sim_events(w.history, "Normal", "RestartingPod", "cache"), 2);
	assert_string_equal(kube_obj_str(sim_find(w.pods, "web-0"), "metadata.uid"), "web-0-new");
	assert_string_equal(kube_obj_str(sim_find(w.pods, "web-1"), "metadata.uid"), "web-1-new");
	const json_t *t = templates_of(w.sts);
	assert_int_equal(json_array_size(t), 2);
	assert_string_equal(kube_obj_str(json_array_get(t, 0), "metadata.name"), "data");
	assert_string_equal(kube_obj_str(json_array_get(t, 0), "spec.storageClassName"), "expandable");
	assert_string_equal(kube_obj_str(json_array_get(t, 1), "metadata.name"), "cache");
	assert_string_equal(kube_obj_str(json_array_get(t, 1), "spec.resources.requests.storage"), "3Gi");
	assert_int_equal(sim_events(w.history, "Normal", "VolumeClaimTemplateRemoved", "logs-web-0, logs-web-1"), 1);
	assert_non_null(sim_find(w.pvcs, "logs-web-0"));
	assert_non_null(sim_find(w.pvcs, "logs-web-1"));
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	world_release(&w);
}

/*
 * GitOps loops: the same annotation written again mid-operation changes
 * nothing; a newer one is not taken up by the operation in flight, stays on
 * the re-created set, and is carried out next.
 */
static void test_reapplied_and_newer_annotations_mid_operation(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, NEW_LABELS);
	plan(&w);
	perform(&w); /* started */
	assert_string_equal(action_name(&w.a), "SetState");
	plan(&w);
	char *before = xstrdup(action_name(&w.a));
	desire(w.sts, NEW_LABELS); /* Argo CD syncs again: byte-identical */
	plan(&w);
	assert_string_equal(action_name(&w.a), before);
	free(before);
	perform(&w);

	const char *newer = "[{\"metadata\":{\"labels\":{\"tier\":\"replica\"},\"name\":\"data\"},\"spec\":{}},"
			    "{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]";
	desire(w.sts, newer);
	drive(&w, false);
	/* Both carried out, in order; the last one is what the set and claims say now. */
	assert_int_equal(sim_events(w.history, "Normal", "ResizeStarted", NULL), 2);
	assert_string_equal(label_of(sim_find(w.pvcs, "data-web-1"), "tier"), "replica");
	assert_null(label_of(sim_find(w.pvcs, "data-web-1"), "team"));
	assert_string_equal(kube_obj_str(json_array_get(templates_of(w.sts), 0), "metadata.labels.tier"), "replica");
	assert_null(sim_annotation(w.sts, ANNOTATION_DESIRED_TEMPLATES));
	world_release(&w);
}

/* Plans and performs until the next step planned is step (not performed). */
static void plan_up_to(struct world *w, const char *step)
{
	for (;;) {
		plan(w);
		if (!strcmp(action_name(&w->a), step))
			return;
		assert_int_not_equal(w->a.verb, ACTION_NOTHING);
		perform(w);
	}
}

/* Applied after the set was saved, before it is deleted: saved again, so the newer templates are not lost. */
static void test_newer_annotation_after_the_save_is_kept(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, NEW_LABELS);
	plan_up_to(&w, "OrphanDelete");
	const char *newer = "[{\"metadata\":{\"labels\":{\"tier\":\"replica\"},\"name\":\"data\"},\"spec\":{}},"
			    "{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]";
	desire(w.sts, newer);
	drive(&w, false);
	assert_int_equal(sim_events(w.history, "Normal", "ResizeStarted", NULL), 2);
	assert_string_equal(kube_obj_str(json_array_get(templates_of(w.sts), 0), "metadata.labels.tier"), "replica");
	assert_string_equal(label_of(sim_find(w.pvcs, "data-web-0"), "tier"), "replica");
	assert_null(sim_annotation(w.sts, ANNOTATION_DESIRED_TEMPLATES));
	world_release(&w);
}

/*
 * Any change to the set between the Save and the OrphanDelete (here a label
 * and a scale, landing after the delete was planned) survives the re-create:
 * the delete is refused for the newer version, the set saved again.
 */
static void test_edit_after_the_save_is_kept(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, NEW_LABELS);
	plan_up_to(&w, "OrphanDelete");
	assert_string_equal(w.a.resource_version, kube_obj_str(w.sts, "metadata.resourceVersion"));
	assert_true(w.a.answers & ACTION_STALE_409);
	json_t *meta = sim_meta(w.sts);
	if (!json_is_object(json_object_get(meta, "labels")))
		json_object_set_new(meta, "labels", json_object());
	json_object_set_new(json_object_get(meta, "labels"), "team", json_string("blue"));
	json_object_set_new(json_object_get(w.sts, "spec"), "replicas", json_integer(3));
	json_object_set_new(meta, "resourceVersion", json_string("11"));
	perform(&w); /* refused: planned for version 10 */
	assert_non_null(w.sts);
	drive(&w, false);
	assert_string_equal(label_of(w.sts, "team"), "blue");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(w.sts, "spec"), "replicas")), 3);
	assert_string_equal(kube_obj_str(json_array_get(templates_of(w.sts), 0), "metadata.labels.team"),
			    label_of(sim_find(w.pvcs, "data-web-1"), "team"));
	world_release(&w);
}

/* The copy cycle's Stop too: a saved copy that misses newer desired templates is replaced before the delete. */
static void test_copy_stop_saves_again_for_newer_templates(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	json_t *st = json_pack("{s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:[i], s:{s:s, s:[i], s:[]}}", "phase", "Copying",
			       "strategy", "copy", "statefulSetUID", "uid-1", "targets", "data", "1Gi", "classes", "data",
			       "fixed", "ordinals", 1, "batch", "step", "Stop", "ordinals", 1, "volumes");
	set_state_on(w.sts, st, NULL);
	json_t *saved = resize_saved_copy(w.sts);
	char *text = json_dumps(saved, JSON_COMPACT);
	w.backup = json_pack("{s:{s:s, s:s}, s:{s:s}}", "metadata", "name", "web-sts-backup", "namespace", "ns", "data",
			     BACKUP_KEY, text);
	free(text);
	json_decref(saved);
	json_decref(st);
	plan(&w);
	assert_string_equal(action_name(&w.a), "OrphanDelete");
	desire(w.sts, NEW_LABELS); /* applied after the Save */
	plan(&w);
	assert_string_equal(action_name(&w.a), "DeleteBackup");
	world_release(&w);
}

/* The re-create uses the templates recorded at the start, whatever the annotation says by then. */
static void test_recreate_uses_the_recorded_templates(void **state)
{
	(void)state;
	json_t *saved = web();
	desire(saved, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{}}]");
	json_t *st = json_pack("{s:{}, s:[{s:{s:s, s:{s:s}}, s:{}}]}", "targets", "templates", "metadata", "name",
			       "data", "labels", "x", "y", "spec");
	json_t *re = resize_with_new_sizes(saved, st);
	assert_int_equal(json_array_size(templates_of(re)), 1);
	assert_string_equal(kube_obj_str(json_array_get(templates_of(re), 0), "metadata.labels.x"), "y");
	/* Not what was carried out: the annotation stays, for the next resize. */
	assert_non_null(sim_annotation(re, ANNOTATION_DESIRED_TEMPLATES));
	json_decref(re);
	json_decref(st);
	json_decref(saved);
}

/* After a failure the resize stays failed while the same templates are desired; other ones start over. */
static void test_failed_resize_and_the_desired_templates(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	const char *d = "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":"
			"\"2Gi\"}}}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]";
	desire(w.sts, d);
	json_t *st = json_pack("{s:s, s:s, s:{s:s}, s:s, s:o, s:{}}", "phase", "Failed", "strategy", "expand",
			       "targets", "data", "2Gi", "statefulSetUID", "uid-1", "templates", json_loads(d, 0, NULL),
			       "lowered");
	set_state_on(w.sts, st, NULL);
	json_decref(st);
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":"
		      "\"3Gi\"}}}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	plan(&w);
	assert_string_equal(action_name(&w.a), "Finish");
	assert_string_equal(w.a.event_reason, "ResizeReset");
	world_release(&w);
}

/* A class change asks for the copy cycle, which records the templates with its targets and classes. */
static void test_class_change_starts_a_copy_with_the_templates(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"storageClassName\":\"fixed\"}},"
		      "{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	plan(&w);
	assert_string_equal(action_name(&w.a), "SetState");
	assert_string_equal(kube_obj_str(w.a.state, "strategy"), "copy");
	assert_string_equal(kube_obj_str(w.a.state, "classes.data"), "fixed");
	assert_int_equal(json_array_size(json_object_get(w.a.state, "templates")), 2);
	assert_string_equal(w.a.event_reason, "ResizeStarted");
	json_t *re = resize_with_new_sizes(w.sts, w.a.state);
	assert_string_equal(kube_obj_str(json_array_get(templates_of(re), 0), "spec.storageClassName"), "fixed");
	assert_null(sim_annotation(re, ANNOTATION_DESIRED_TEMPLATES));
	json_decref(re);
	world_release(&w);
}

/* The attributes class: each claim patched and modified, highest ordinal first, before the re-create. */
static void test_attributes_class_changes_in_place(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"volumeAttributesClassName\":\"fast\"}},"
		      "{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	drive(&w, true);
	const char *p1 = strstr(w.trace.text, "PatchAttributesClass data-web-1");
	const char *p0 = strstr(w.trace.text, "PatchAttributesClass data-web-0");
	const char *rc = strstr(w.trace.text, "Recreate");
	assert_true(p1 && p0 && rc && p1 < p0 && p0 < rc);
	assert_null(strstr(w.trace.text, "PatchAttributesClass logs"));
	for (int i = 0; i < 2; i++)
		assert_string_equal(kube_obj_str(json_array_get(w.pvcs, (size_t)i), "status.currentVolumeAttributesClassName"),
				    "fast");
	assert_string_equal(kube_obj_str(json_array_get(templates_of(w.sts), 0), "spec.volumeAttributesClassName"), "fast");
	assert_null(sim_annotation(w.sts, ANNOTATION_DESIRED_TEMPLATES));
	assert_int_equal(sim_events(w.history, "Normal", "VolumesModified", "fast"), 1);
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	world_release(&w);
}

/* A class the manifest no longer names: unset in the template, the claims keep theirs (the API allows no nil). */
static void test_attributes_class_unset_in_the_template_only(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	json_t *data = json_array_get(templates_of(w.sts), 0);
	json_object_set_new(json_object_get(data, "spec"), "volumeAttributesClassName", json_string("fast"));
	json_t *c0 = sim_find(w.pvcs, "data-web-0");
	json_object_set_new(json_object_get(c0, "spec"), "volumeAttributesClassName", json_string("fast"));
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\",\"labels\":{\"app\":\"web\",\"tier\":\"db\"}},"
		      "\"spec\":{}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	drive(&w, false);
	assert_null(kube_obj_str(json_array_get(templates_of(w.sts), 0), "spec.volumeAttributesClassName"));
	assert_string_equal(kube_obj_str(c0, "spec.volumeAttributesClassName"), "fast");
	assert_null(strstr(w.trace.text, "AttributesClass"));
	plan(&w);
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	world_release(&w);
}

/* Infeasible: the resize fails at the first claim, which is put back; the others and the template stay. */
static void test_infeasible_attributes_class_fails_and_puts_back(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	json_t *c1 = sim_find(w.pvcs, "data-web-1");
	json_object_set_new(json_object_get(c1, "spec"), "volumeAttributesClassName", json_string("slow"));
	json_object_set_new(json_object_get(c1, "status"), "currentVolumeAttributesClassName", json_string("slow"));
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"volumeAttributesClassName\":"
		      "\"impossible\"}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	for (int n = 0; n < 20; n++) {
		plan(&w);
		if (w.a.verb == ACTION_NOTHING)
			break;
		perform(&w);
	}
	assert_int_equal(w.a.verb, ACTION_NOTHING);
	assert_int_equal(sim_events(w.history, "Warning", "ResizeFailed", "data-web-1"), 1);
	assert_int_equal(sim_events(w.history, "Normal", "AttributesClassReverted", "put back to slow"), 1);
	assert_string_equal(kube_obj_str(c1, "spec.volumeAttributesClassName"), "slow");
	assert_null(kube_obj_str(sim_find(w.pvcs, "data-web-0"), "spec.volumeAttributesClassName"));
	assert_null(kube_obj_str(json_array_get(templates_of(w.sts), 0), "spec.volumeAttributesClassName"));
	assert_null(strstr(w.trace.text, "Recreate"));
	assert_true(sim_contains(sim_annotation(w.sts, ANNOTATION_RESIZE_STATUS), "Infeasible"));
	world_release(&w);
}

/* With a change that copies the data, an attributes class change is refused: it would come after the re-create. */
static void test_attributes_class_with_a_copy_is_refused(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	desire(w.sts, "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"storageClassName\":\"fixed\","
		      "\"volumeAttributesClassName\":\"fast\"}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{}}]");
	expect_refused(&w, RESIZE_INVALID_TEMPLATES, "apply the two changes one after the other");
	world_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_annotation_is_refused_naming_it),
		cmocka_unit_test(test_bad_desired_templates_are_refused),
		cmocka_unit_test(test_refusal_status_cleared_when_the_annotation_goes),
		cmocka_unit_test(test_desired_equal_to_stored_asks_nothing),
		cmocka_unit_test(test_per_template_annotations_win),
		cmocka_unit_test(test_labels_go_to_the_claims_then_the_set_is_recreated),
		cmocka_unit_test(test_every_step_twice_ends_the_same),
		cmocka_unit_test(test_size_and_labels_together),
		cmocka_unit_test(test_templates_added_and_removed),
		cmocka_unit_test(test_reapplied_and_newer_annotations_mid_operation),
		cmocka_unit_test(test_newer_annotation_after_the_save_is_kept),
		cmocka_unit_test(test_edit_after_the_save_is_kept),
		cmocka_unit_test(test_copy_stop_saves_again_for_newer_templates),
		cmocka_unit_test(test_recreate_uses_the_recorded_templates),
		cmocka_unit_test(test_failed_resize_and_the_desired_templates),
		cmocka_unit_test(test_class_change_starts_a_copy_with_the_templates),
		cmocka_unit_test(test_attributes_class_changes_in_place),
		cmocka_unit_test(test_attributes_class_unset_in_the_template_only),
		cmocka_unit_test(test_infeasible_attributes_class_fails_and_puts_back),
		cmocka_unit_test(test_attributes_class_with_a_copy_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
