/*
 * The work a tenant's arrays cost stays linear: every count limit is
 * checked before any loop over pairs, and nothing loops over a number the
 * tenant writes (spec.replicas). The work is counted, not timed: this
 * program is linked with --wrap for jansson's lookups (json_object_get,
 * json_object_getn, json_array_get), the calls every field read and every
 * list scan of the code under test goes through. Also the admission
 * review's time budget: once spent, the decision stops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/resize/resize_internal.h"
#include "controllers/resize/resize_plan.h"
#include "util/work_budget.h"
#include "util/xalloc.h"
#include "webhook/admission.h"

/* ---- counting lookups ---- */

static unsigned long lookups;

json_t *__real_json_object_get(const json_t *object, const char *key);
json_t *__real_json_object_getn(const json_t *object, const char *key, size_t key_len);
json_t *__real_json_array_get(const json_t *array, size_t index);
json_t *__wrap_json_object_get(const json_t *object, const char *key);
json_t *__wrap_json_object_getn(const json_t *object, const char *key, size_t key_len);
json_t *__wrap_json_array_get(const json_t *array, size_t index);

json_t *__wrap_json_object_get(const json_t *object, const char *key)
{
	lookups++;
	return __real_json_object_get(object, key);
}

json_t *__wrap_json_object_getn(const json_t *object, const char *key, size_t key_len)
{
	lookups++;
	return __real_json_object_getn(object, key, key_len);
}

json_t *__wrap_json_array_get(const json_t *array, size_t index)
{
	lookups++;
	return __real_json_array_get(array, index);
}

/* ---- fixtures ---- */

/* Templates t0..t<n-1> of size; the last named t0 again when dup. New reference. */
static json_t *templates(size_t n, const char *size, bool dup)
{
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%zu", dup && i == n - 1 ? (size_t)0 : i);
		json_array_append_new(list, json_pack("{s:{s:s}, s:{s:[s], s:{s:{s:s}}}}", "metadata", "name", name,
						      "spec", "accessModes", "ReadWriteOnce", "resources", "requests",
						      "storage", size));
	}
	return list;
}

/* StatefulSet web in ns with replicas and templates (stolen). New reference. */
static json_t *statefulset(json_int_t replicas, json_t *tmpls)
{
	json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{}}, s:{s:I, s:{s:{s:[{s:s, s:s}]}}, s:o}}",
			      "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata", "name", "web", "namespace",
			      "ns", "uid", "uid-web", "annotations", "spec", "replicas", replicas, "template", "spec",
			      "containers", "name", "c", "image", "pause", "volumeClaimTemplates", tmpls);
	assert_non_null(s);
	return s;
}

/* The AdmissionReview of an UPDATE of web from old to new templates (both stolen). New reference. */
static json_t *review(json_t *old, json_t *new)
{
	json_t *r = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:o, s:o}}", "apiVersion",
			      "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid", "u1", "kind", "group",
			      "apps", "version", "v1", "kind", "StatefulSet", "operation", "UPDATE", "name", "web",
			      "namespace", "ns", "object", statefulset(3, new), "oldObject", statefulset(3, old));
	assert_non_null(r);
	return r;
}

static const json_t *response(const json_t *answer)
{
	return json_object_get(answer, "response");
}

static json_t *storage_classes(void)
{
	return json_pack("[{s:{s:s, s:{s:s}}, s:b}]", "metadata", "name", "fast", "annotations",
			 "storageclass.kubernetes.io/is-default-class", "true", "allowVolumeExpansion", 1);
}

/* ---- the webhook ---- */

/*
 * Thousands of stored and applied templates: denied by the count, the
 * templates read once each. Before the count came first, the stored names
 * were compared in pairs (8,000 took 2.35 s, a 6 MB review about 25
 * minutes), and a stored list with one name twice was let through after
 * that work instead of denied.
 */
static void test_thousands_of_templates_denied_by_count(void **state)
{
	(void)state;
	const size_t n = 3000;
	json_t *classes = storage_classes();
	struct admission_view view = {.storage_classes = classes};
	for (int dup = 0; dup <= 1; dup++) {
		json_t *in = review(templates(n, "1Gi", dup), templates(n, "2Gi", false));
		lookups = 0;
		json_t *out = admission_review(in, &view);
		unsigned long counted = lookups;
		const json_t *r = response(out);
		assert_false(json_is_true(json_object_get(r, "allowed")));
		const char *msg = kube_obj_str(r, "status.message");
		if (!msg || !strstr(msg, "3000 volumeClaimTemplates stored, 3000 applied: the operator changes at most 16"))
			fail_msg("%s stored names: answer %s", dup ? "duplicate" : "unique", msg ? msg : "(allowed)");
		/* A few reads per template (its name, the review around it): linear, far from n * n. */
		if (counted < 2 * n || counted > 10 * 2 * n)
			fail_msg("%lu lookups for 2 x %zu templates (%s stored names)", counted, n, dup ? "duplicate" : "unique");
		json_decref(out);
		json_decref(in);
	}
	json_decref(classes);
}

/* The same with a budget: one step per template read, then none. */
static void test_budget_counts_each_template_once(void **state)
{
	(void)state;
	const size_t n = 3000;
	json_t *in = review(templates(n, "1Gi", false), templates(n, "2Gi", false));
	struct work_budget budget;
	work_budget_init(&budget, 60000);
	struct admission_view view = {.budget = &budget};
	json_t *out = admission_review(in, &view);
	assert_false(budget.spent);
	assert_int_equal(budget.steps, 2 * n);
	assert_false(json_is_true(json_object_get(response(out), "allowed")));
	json_decref(out);
	json_decref(in);
}

/*
 * A review whose budget is spent stops at its next step and says nothing:
 * allowed, no patch (the webhook answers 503 instead). With time left, the
 * same review is decided as ever.
 */
static void test_spent_budget_abandons_the_decision(void **state)
{
	(void)state;
	json_t *classes = storage_classes();
	for (int spent = 0; spent <= 1; spent++) {
		json_t *in = review(templates(16, "1Gi", false), templates(16, "2Gi", false));
		struct work_budget budget;
		work_budget_init(&budget, 60000);
		if (spent)
			budget.deadline_ms = 1; /* long past on the monotonic clock */
		struct admission_view view = {.storage_classes = classes, .budget = &budget};
		json_t *out = admission_review(in, &view);
		const json_t *r = response(out);
		assert_true(json_is_true(json_object_get(r, "allowed")));
		if (spent) {
			assert_true(budget.spent);
			assert_int_equal(budget.steps, 1);
			assert_null(json_object_get(r, "patch"));
		} else {
			assert_false(budget.spent);
			assert_non_null(json_object_get(r, "patch"));
			assert_true(budget.steps <= 2 * 16 + 2 * 16 + 1);
		}
		json_decref(out);
		json_decref(in);
	}
	json_decref(classes);
}

static void test_work_budget(void **state)
{
	(void)state;
	struct work_budget none, past = {.deadline_ms = 1};
	work_budget_init(&none, 0);
	for (int i = 0; i < 1000; i++)
		assert_false(work_budget_step(&none));
	assert_int_equal(none.steps, 1000);
	assert_true(work_budget_step(&past));
	assert_true(work_budget_step(&past));
	assert_true(past.spent);
	assert_false(work_budget_step(NULL));
}

/* ---- the resize controller ---- */

static json_t *claim(const char *name, const char *size)
{
	return json_pack("{s:{s:s, s:s, s:s}, s:{s:{s:{s:s}}}}", "metadata", "name", name, "namespace", "ns", "uid",
			 name, "spec", "resources", "requests", "storage", size);
}

/* resize_plan on sts (stolen) and pvcs (stolen); the lookups it made in *counted. */
static void plan(json_t *sts, json_t *pvcs, struct action *a, unsigned long *counted)
{
	json_t *classes = storage_classes(), *none = json_array();
	struct resize_inputs in = {.sts = sts, .pvcs = pvcs, .pods = none, .storage_classes = classes,
				   .pvs = none, .jobs = none, .copy_image = "busybox"};
	lookups = 0;
	resize_plan(&in, 1795262400000LL, a);
	*counted = lookups;
	json_decref(classes);
	json_decref(none);
	json_decref(pvcs);
	json_decref(sts);
}

/*
 * Whether a template is bigger than its claims (which starts a resize) is
 * found from the claims that exist: spec.replicas (two billion here) sets
 * only which ordinals count. Before, each ordinal was looked up, about
 * 300 ns each, until one claim was smaller: 10 million replicas took 2.9 s,
 * two billion about ten minutes of a worker at every reconcile of a set
 * whose claims all have the template's size. Names that are no claim of
 * the set do not count.
 */
static void test_many_replicas_cost_nothing(void **state)
{
	(void)state;
	const json_int_t counts[] = {1000000, INT32_MAX};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		char last[64];
		snprintf(last, sizeof(last), "t0-web-%lld", (long long)counts[i] - 1);
		for (int smaller = 0; smaller <= 1; smaller++) {
			struct action a = {0};
			unsigned long counted;
			plan(statefulset(counts[i], templates(1, "2Gi", false)),
			     json_pack("[o, o]", claim("t0-web-0", "2Gi"), claim(last, smaller ? "1Gi" : "2Gi")), &a,
			     &counted);
			if (counted == 0 || counted > 1000)
				fail_msg("%lu lookups for %lld replicas and two claims", counted, (long long)counts[i]);
			if (smaller) {
				assert_string_equal(action_name(&a), "SetState");
				assert_string_equal(kube_obj_str(json_object_get(a.state, "targets"), "t0"), "2Gi");
			} else {
				assert_int_equal(a.verb, ACTION_NOTHING);
			}
			action_release(&a);
		}
	}
	/* Out of the ordinals, or not the set's: no resize. */
	struct action a = {0};
	unsigned long counted;
	plan(statefulset(3, templates(1, "2Gi", false)),
	     json_pack("[o, o, o, o, o, o]", claim("t0-web-3", "1Gi"), claim("t0-web-01", "1Gi"),
		       claim("t0-web-+1", "1Gi"), claim("t0-xweb-1", "1Gi"), claim("t1-web-1", "1Gi"),
		       claim("-web-1", "1Gi")),
	     &a, &counted);
	assert_int_equal(a.verb, ACTION_NOTHING);
	action_release(&a);
}

/*
 * Thousands of per-template annotations on a set with thousands of
 * templates: refused by their count before any is looked up among the
 * templates. Before, each annotation scanned the templates (20,000
 * templates and 6,000 annotations took 5 s a reconcile).
 */
static void test_many_template_annotations_refused_by_count(void **state)
{
	(void)state;
	const size_t n = 3000, nann = 1000;
	json_t *sts = statefulset(3, templates(n, "1Gi", false));
	json_t *ann = json_object_get(json_object_get(sts, "metadata"), "annotations");
	for (size_t i = 0; i < nann; i++) {
		char key[64];
		snprintf(key, sizeof(key), RESIZE_ANNOTATION_PREFIX "t%zu", i);
		json_object_set_new(ann, key, json_string("1Gi"));
	}
	struct resize_request req;
	struct refusal refusal;
	lookups = 0;
	int rc = resize_request_parse(sts, NULL, &req, &refusal);
	unsigned long counted = lookups;
	assert_int_equal(rc, -1);
	assert_string_equal(refusal.reason, "ResizeTooManyTemplates");
	if (!strstr(refusal.message, "1000 annotations " RESIZE_ANNOTATION_PREFIX "<template>"))
		fail_msg("message: %s", refusal.message);
	if (counted == 0 || counted > 10 * (n + nann))
		fail_msg("%lu lookups for %zu templates and %zu annotations", counted, n, nann);
	refusal_release(&refusal);
	json_decref(sts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thousands_of_templates_denied_by_count),
		cmocka_unit_test(test_budget_counts_each_template_once),
		cmocka_unit_test(test_spent_budget_abandons_the_decision),
		cmocka_unit_test(test_work_budget),
		cmocka_unit_test(test_many_replicas_cost_nothing),
		cmocka_unit_test(test_many_template_annotations_refused_by_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
