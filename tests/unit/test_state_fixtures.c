/*
 * State written by an older operator is carried out by this one: each
 * fixture of tests/fixtures/state (the objects as a release left them in
 * one phase, README.md there) is sealed with a test key as the controller
 * seals, passes the controller's seal check, and its planner plans the
 * step expected of that phase. A state of a version newer than this
 * operator reads is refused (Warning StateVersionUnknown, nothing done);
 * a state without "v" reads as version 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/cluster/cluster_plan.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_trust.h"
#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/state_seal.h"
#include "controllers/state_version.h"
#include "sim.h"
#include "state_fixture.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Every fixture and the step its phase must lead to (what the release that
 * wrote it planned next, as its "next" records). A release keeps the
 * fixtures of the releases before it: a line here goes only with the
 * release that stops reading that version.
 */
static const struct expected {
	const char *controller, *phase;
	const char *verb, *step, *object;
} expected[] = {
	/* resize in place: the claim of the highest ordinal first; a file system grown by a pod restart */
	{"resize-in-place", "expanding-started", "Patch", "PatchPVC", "data-web-2"},
	{"resize-in-place", "expanding-waiting-for-capacity", "Wait", "Wait", ""},
	{"resize-in-place", "file-system-resize-pending-restart", "Delete", "DeletePod", "web-2"},
	/* resize by copy: each stage of the batch of replica 1, the re-create, the end */
	{"resize-copy", "prepare-temp-claim", "Create", "CreateNewClaim", "data-web-1-copy"},
	{"resize-copy", "stop-replica", "Delete", "StopPod", "web-1"},
	{"resize-copy", "copy-job", "Create", "CreateCopyJob", "web-1-copy"},
	{"resize-copy", "copy-verified", "Delete", "DeleteCopyJob", "web-1-copy"},
	{"resize-copy", "swap-rebind", "Patch", "PrebindVolume", "pv-new-2"},
	{"resize-copy", "recreate-statefulset", "Own", "Recreate", "web"},
	{"resize-copy", "done", "Patch", "Finish", "web"},
	/* scale-down: a cleanup pod running, a failure recorded and retried, the end */
	{"scaledown", "cleanup-running", "Patch", "RecordState", "web"},
	{"scaledown", "retry-after-failure", "Create", "CreateCleanupPod", "web-2"},
	{"scaledown", "cleanup-running-after-failure", "Patch", "RecordState", "web"},
	{"scaledown", "done", "Nothing", "Nothing", ""},
	/* StatefulCluster: a failed member replaced; a rolling update */
	{"cluster", "replace-ReplaceMember", "Patch", "ReplaceMember", "coder"},
	{"cluster", "replace-DeleteFormerMember", "Delete", "DeleteFormerMember", "coder-1"},
	{"cluster", "replace-ForgetMember", "Patch", "ForgetMember", "coder"},
	{"cluster", "replace-CreateClaim", "Create", "CreateClaim", "data-coder-3"},
	{"cluster", "replace-CreatePod", "Create", "CreatePod", "coder-3"},
	{"cluster", "replace-UpdateStatus", "Patch", "UpdateStatus", "coder"},
	{"cluster", "replace-Wait", "Wait", "Wait", ""},
	{"cluster", "rolling-update-CreateRevision", "Create", "CreateRevision", "coder-76ec1e5971"},
	{"cluster", "rolling-update-UpdateMember", "Delete", "UpdateMember", "coder-3"},
	{"cluster", "rolling-update-CreatePod", "Create", "CreatePod", "coder-3"},
	{"cluster", "rolling-update-UpdateStatus", "Patch", "UpdateStatus", "coder"},
	{"cluster", "rolling-update-RecordRevision", "Patch", "RecordRevision", "coder"},
	{"cluster", "rolling-update-Wait", "Wait", "Wait", ""},
};

static const char *const controllers[] = {"resize-in-place", "resize-copy", "scaledown", "cluster"};

/* ---- a fixture as the controller sees it ---- */

struct loaded {
	json_t *doc;     /* the fixture (owned) */
	json_t *objects; /* borrowed from doc; sealed in place */
	long long now_ms;
	struct action a; /* the step planned */
};

static struct state_seal *test_seal(void)
{
	unsigned char key[STATE_SEAL_KEY_BYTES];
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i + 1);
	return state_seal_new(key);
}

static const char *state_key(const char *controller)
{
	if (!strcmp(controller, "scaledown"))
		return ANNOTATION_SCALEDOWN_STATE;
	if (!strcmp(controller, "cluster"))
		return ANNOTATION_CLUSTER_STATE;
	return ANNOTATION_RESIZE_STATE;
}

/* The object that carries the controller's state: the StatefulSet (or the backup while it is gone), the cluster. */
static json_t *state_carrier(const struct loaded *l, const char *controller)
{
	if (!strcmp(controller, "cluster"))
		return json_object_get(l->objects, "statefulCluster");
	json_t *sts = json_object_get(l->objects, "statefulSet");
	return sts ? sts : json_object_get(l->objects, "backup");
}

/* Merges patch (new reference, stolen) into obj. */
static void merge(json_t *obj, json_t *patch)
{
	sim_merge_patch(obj, patch);
	json_decref(patch);
}

/*
 * Seals every state of l with the test key as the controller does after a
 * write, then checks it as the controller does before it plans: the state
 * must be trusted (the fixtures carry the states an operator wrote).
 */
static void seal(struct loaded *l, const char *controller, const struct state_seal *s)
{
	json_t *sts = json_object_get(l->objects, "statefulSet");
	json_t *backup = json_object_get(l->objects, "backup");
	if (!strcmp(controller, "resize-in-place") || !strcmp(controller, "resize-copy")) {
		if (backup)
			merge(backup, resize_trust_reseal_backup(s, backup));
		if (sts && kube_obj_annotation(sts, ANNOTATION_RESIZE_STATE))
			merge(sts, resize_trust_reseal_statefulset(s, sts));
		enum resize_trust tb = resize_trust_backup(s, backup, sts);
		enum resize_trust ts = resize_trust_statefulset(s, sts, backup);
		if ((backup && tb != RESIZE_TRUST_SEALED) || (ts != RESIZE_TRUST_SEALED && ts != RESIZE_TRUST_NONE))
			fail_msg("%s: the sealed state is not trusted (backup %d, StatefulSet %d)", controller, tb, ts);
		return;
	}
	const char *key = state_key(controller);
	json_t *obj = state_carrier(l, controller);
	assert_non_null(obj);
	json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	if (json_object_get(ann, key)) {
		struct state_seal_scope scope = state_seal_scope_of(obj);
		state_seal_annotate(s, ann, &scope, key);
	}
	bool dropped = false;
	json_t *seen = state_seal_drop_unsealed(s, obj, key, &dropped);
	json_decref(seen);
	if (dropped)
		fail_msg("%s: the sealed state is not trusted", controller);
}

/* Plans l with controller's planner, the inputs as the fixture holds them. */
static void plan(struct loaded *l, const char *controller)
{
	const json_t *o = l->objects;
	action_release(&l->a);
	if (!strcmp(controller, "scaledown")) {
		struct scaledown_inputs in = {json_object_get(o, "statefulSet"), json_object_get(o, "pvcs"),
					      json_object_get(o, "pods"), l->now_ms};
		scaledown_plan(&in, &l->a);
	} else if (!strcmp(controller, "cluster")) {
		/* A new operator starts with no pods of its own deletions in mind: deleted_uids NULL. */
		struct cluster_inputs in = {
			.cluster = json_object_get(o, "statefulCluster"),
			.pods = json_object_get(o, "pods"),
			.pvcs = json_object_get(o, "pvcs"),
			.revisions = json_object_get(o, "revisions"),
			.nodes = json_object_get(o, "nodes"),
			.now_ms = l->now_ms,
		};
		cluster_plan(&in, &l->a);
	} else {
		struct resize_inputs in = {json_object_get(o, "statefulSet"), json_object_get(o, "backup"),
					   json_object_get(o, "pvcs"), json_object_get(o, "pods"),
					   json_object_get(o, "storageClasses"), json_object_get(o, "pvs"),
					   json_object_get(o, "jobs"), json_string_value(json_object_get(o, "copyImage")),
					   NULL};
		resize_plan(&in, l->now_ms, &l->a);
	}
}

static void load(struct loaded *l, const char *controller, const char *phase, const struct state_seal *s)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s/%s.json", SOP_STATE_FIXTURES_DIR, controller, phase);
	memset(l, 0, sizeof(*l));
	action_init(&l->a);
	l->doc = state_fixture_load(path);
	l->objects = json_object_get(l->doc, "objects");
	l->now_ms = sim_time_ms(json_string_value(json_object_get(l->doc, "now")));
	if (!json_is_object(l->objects) || l->now_ms < 0)
		fail_msg("%s: no objects, or no \"now\"", path);
	seal(l, controller, s);
}

static void release(struct loaded *l)
{
	action_release(&l->a);
	json_decref(l->doc);
}

static void expect_step(const struct loaded *l, const struct expected *e, const char *what)
{
	if (strcmp(action_verb_name(l->a.verb), e->verb) || strcmp(action_name(&l->a), e->step) ||
	    strcmp(state_fixture_object(&l->a), e->object))
		fail_msg("%s/%s%s: planned %s %s %s (%s: %s), want %s %s %s", e->controller, e->phase, what,
			 action_verb_name(l->a.verb), action_name(&l->a), state_fixture_object(&l->a),
			 sim_or_dash(l->a.event_reason), sim_or_dash(l->a.event_message), e->verb, e->step, e->object);
}

/* Rewrites the state of l with "v" set to v (NULL: removed), sealed again as the operator would have. */
static void set_version(struct loaded *l, const char *controller, json_t *v, const struct state_seal *s)
{
	const char *key = state_key(controller);
	json_t *obj = state_carrier(l, controller);
	json_t *st = kube_obj_annotation_json(obj, key);
	assert_true(json_is_object(st));
	if (v)
		json_object_set_new(st, STATE_VERSION_KEY, v);
	else
		json_object_del(st, STATE_VERSION_KEY);
	char *text = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
	sim_annotate(obj, key, text);
	json_t *backup = json_object_get(l->objects, "backup");
	if (backup && obj != backup && kube_obj_annotation(backup, key))
		sim_annotate(backup, key, text); /* the backup holds the same state while a re-create is under way */
	free(text);
	json_decref(st);
	seal(l, controller, s);
}

/* ---- the tests ---- */

/* Every fixture, sealed and trusted, leads to the step of its phase. */
static void test_each_phase_plans_its_next_step(void **state)
{
	(void)state;
	struct state_seal *s = test_seal();
	for (size_t i = 0; i < NITEMS(expected); i++) {
		const struct expected *e = &expected[i];
		struct loaded l;
		load(&l, e->controller, e->phase, s);
		plan(&l, e->controller);
		expect_step(&l, e, "");
		/* The release that wrote it planned the same. */
		const json_t *next = json_object_get(l.doc, "next");
		assert_string_equal(json_string_value(json_object_get(next, "step")), e->step);
		assert_string_equal(json_string_value(json_object_get(next, "object")), e->object);
		release(&l);
	}
	state_seal_free(s);
}

/* A fixture in the tree that the table does not name is a phase nobody checks. */
static void test_every_fixture_is_checked(void **state)
{
	(void)state;
	size_t seen = 0;
	for (size_t c = 0; c < NITEMS(controllers); c++) {
		char dir[1024];
		snprintf(dir, sizeof(dir), "%s/%s", SOP_STATE_FIXTURES_DIR, controllers[c]);
		DIR *d = opendir(dir);
		if (!d)
			fail_msg("%s: cannot be read", dir);
		struct dirent *de;
		while ((de = readdir(d))) {
			size_t n = strlen(de->d_name);
			if (n < 6 || strcmp(de->d_name + n - 5, ".json"))
				continue;
			bool named = false;
			for (size_t i = 0; i < NITEMS(expected); i++)
				named |= !strcmp(expected[i].controller, controllers[c]) &&
					 strlen(expected[i].phase) == n - 5 && !strncmp(expected[i].phase, de->d_name, n - 5);
			if (!named)
				fail_msg("%s/%s is not in the table of test_state_fixtures.c", dir, de->d_name);
			seen++;
		}
		closedir(d);
	}
	assert_int_equal(seen, NITEMS(expected));
}

/*
 * Each state of a version this operator does not read is refused: the
 * planner changes nothing and says why in a Warning Event. The states of
 * every controller in every phase, with "v" one higher, then not a number.
 */
static void test_newer_version_is_refused(void **state)
{
	(void)state;
	struct state_seal *s = test_seal();
	int refused[NITEMS(controllers)] = {0};
	for (size_t i = 0; i < NITEMS(expected); i++) {
		const struct expected *e = &expected[i];
		for (int bad = 0; bad < 2; bad++) {
			struct loaded l;
			load(&l, e->controller, e->phase, s);
			if (!kube_obj_annotation(state_carrier(&l, e->controller), state_key(e->controller))) {
				release(&l);
				break; /* no state in this phase */
			}
			set_version(&l, e->controller, bad ? json_string("2") : json_integer(STATE_VERSION + 1), s);
			plan(&l, e->controller);
			if (l.a.verb != ACTION_REFUSE || l.a.body || l.a.state ||
			    !sim_streq(l.a.event_type, "Warning") || !sim_streq(l.a.event_reason, STATE_VERSION_REFUSED))
				fail_msg("%s/%s with \"v\" %s: planned %s %s (%s), want a refusal", e->controller,
					 e->phase, bad ? "\"2\"" : "2", action_verb_name(l.a.verb), action_name(&l.a),
					 sim_or_dash(l.a.event_reason));
			assert_true(sim_contains(l.a.event_message, bad ? "not a state version" : "newer operator"));
			assert_true(sim_contains(l.a.event_message, state_key(e->controller)));
			for (size_t c = 0; c < NITEMS(controllers); c++)
				refused[c] += !strcmp(controllers[c], e->controller);
			release(&l);
		}
	}
	for (size_t c = 0; c < NITEMS(controllers); c++)
		if (refused[c] < 2)
			fail_msg("%s: no fixture with a state to refuse", controllers[c]);
	state_seal_free(s);
}

/* The states of releases before versions carry no "v": read as version 1, they lead to the same steps. */
static void test_state_without_version_reads_as_1(void **state)
{
	(void)state;
	json_t *none = json_pack("{s:s}", "phase", "Copying");
	assert_int_equal(state_version_of(none), 1);
	assert_true(state_version_known(none));
	json_object_set_new(none, STATE_VERSION_KEY, json_integer(STATE_VERSION));
	assert_true(state_version_known(none));
	json_object_set_new(none, STATE_VERSION_KEY, json_integer(0));
	assert_false(state_version_known(none));
	json_decref(none);

	struct state_seal *s = test_seal();
	size_t with_state = 0;
	for (size_t i = 0; i < NITEMS(expected); i++) {
		const struct expected *e = &expected[i];
		struct loaded l;
		load(&l, e->controller, e->phase, s);
		json_t *st = kube_obj_annotation_json(state_carrier(&l, e->controller), state_key(e->controller));
		if (st) {
			/* The fixtures are what this release writes: version 1, said. */
			assert_int_equal(json_integer_value(json_object_get(st, STATE_VERSION_KEY)), 1);
			set_version(&l, e->controller, NULL, s);
			with_state++;
		}
		json_decref(st);
		plan(&l, e->controller);
		expect_step(&l, e, " without \"v\"");
		release(&l);
	}
	assert_true(with_state >= NITEMS(expected) / 2);
	state_seal_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_phase_plans_its_next_step),
		cmocka_unit_test(test_every_fixture_is_checked),
		cmocka_unit_test(test_newer_version_is_refused),
		cmocka_unit_test(test_state_without_version_reads_as_1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
