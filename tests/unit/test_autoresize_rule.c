/*
 * Which autoresize policy rules a template: the workload's own, else its
 * Namespace's, else its StorageClass's; mode=off as an opt-out; refused
 * policies (hostile text included) that rule but grow nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/autoresize/autoresize_rule.h"

#define GI (1LL << 30)
#define TI (1LL << 40)

static const char *const W = "used=90%, max=2Ti";
static const char *const N = "used=70%, max=1Ti";
static const char *const C = "used=80%, step=10Gi, max=500Gi";

struct precedence_case {
	const char *workload, *ns, *cls;
	enum autoresize_origin origin;
	const char *text;
	bool active, refused;
};

static void test_precedence(void **state)
{
	(void)state;
	static const struct precedence_case cases[] = {
		{NULL, NULL, NULL, AUTORESIZE_FROM_NONE, NULL, false, false},
		{NULL, NULL, "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_CLASS, "used=80%, step=10Gi, max=500Gi", true,
		 false},
		{NULL, "used=70%, max=1Ti", "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_NAMESPACE, "used=70%, max=1Ti",
		 true, false},
		{"used=90%, max=2Ti", "used=70%, max=1Ti", "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_WORKLOAD,
		 "used=90%, max=2Ti", true, false},
		{"used=90%, max=2Ti", NULL, "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_WORKLOAD, "used=90%, max=2Ti",
		 true, false},
		{NULL, "used=70%, max=1Ti", NULL, AUTORESIZE_FROM_NAMESPACE, "used=70%, max=1Ti", true, false},
		/* Opt-outs: the workload's mode=off beats both; a namespace's beats the class's. */
		{"mode=off", "used=70%, max=1Ti", "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_WORKLOAD, "mode=off",
		 false, false},
		{NULL, "mode=off", "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_NAMESPACE, "mode=off", false, false},
		/* A refused policy rules all the same: the class's is not let through by a broken override. */
		{NULL, "used=70", "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_NAMESPACE, "used=70", false, true},
		{"max=5Gb", NULL, "used=80%, step=10Gi, max=500Gi", AUTORESIZE_FROM_WORKLOAD, "max=5Gb", false, true},
		{NULL, NULL, "step=20", AUTORESIZE_FROM_CLASS, "step=20", false, true},
		/* An empty annotation is there: it rules, and is refused (no max). */
		{"", "used=70%, max=1Ti", NULL, AUTORESIZE_FROM_WORKLOAD, "", false, true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct precedence_case *c = &cases[i];
		struct autoresize_rule r;
		autoresize_rule_resolve(c->workload, c->ns, c->cls, &r);
		if (r.origin != c->origin || autoresize_rule_active(&r) != c->active || (r.why != NULL) != c->refused ||
		    (c->text ? !r.text || strcmp(r.text, c->text) : r.text != NULL))
			fail_msg("case %zu: origin %s active %d why %s text %s", i, autoresize_origin_name(r.origin),
				 autoresize_rule_active(&r), r.why ? r.why : "(none)", r.text ? r.text : "(null)");
		autoresize_rule_release(&r);
		assert_null(r.why);
	}
}

/* The ruling policy is read whole, as the workload's own would be. */
static void test_policy_of_the_ruling_place(void **state)
{
	(void)state;
	struct autoresize_rule r;
	autoresize_rule_resolve(NULL, NULL, C, &r);
	assert_int_equal(r.pol.used_percent, 80);
	assert_int_equal(r.pol.step_bytes, 10 * GI);
	assert_int_equal(r.pol.max_bytes, 500 * GI);
	autoresize_rule_release(&r);
	autoresize_rule_resolve(NULL, N, C, &r);
	assert_int_equal(r.pol.used_percent, 70);
	assert_int_equal(r.pol.step_percent, 20);
	assert_int_equal(r.pol.max_bytes, TI);
	autoresize_rule_release(&r);
}

static void test_mode_off(void **state)
{
	(void)state;
	struct autoresize_policy p;
	char *why = NULL;
	/* No max needed to opt out; other keys are still checked. */
	assert_int_equal(autoresize_policy_parse("mode=off", &p, &why), 0);
	assert_true(p.off);
	assert_false(p.recommend_only);
	assert_int_equal(autoresize_policy_parse(" mode = off , max=1Ti", &p, &why), 0);
	assert_true(p.off);
	assert_int_equal(autoresize_policy_parse("mode=recommend, max=1Ti", &p, &why), 0);
	assert_false(p.off);
	assert_true(p.recommend_only);
	assert_int_equal(autoresize_policy_parse("mode=off, used=80", &p, &why), -1);
	assert_string_equal(why, "used: \"80\" is not a whole percentage; use a whole percentage from 1% to 99%, e.g. "
				 "used=80%");
	free(why);
	assert_int_equal(autoresize_policy_parse("mode=Off", &p, &why), -1);
	assert_string_equal(why, "mode: \"Off\" is not a mode; use grow, recommend or off");
	free(why);
	assert_int_equal(autoresize_policy_parse("mode=grow", &p, &why), -1);
	assert_string_equal(why, "max: required (the size autoresize never grows past, e.g. max=500Gi)");
	free(why);
}

/* What anyone who may annotate a Namespace or StorageClass can write is read only so far. */
static void test_hostile_text(void **state)
{
	(void)state;
	char text[AUTORESIZE_POLICY_TEXT_MAX + 64];
	/* At the bound: read (spaces are ignored). */
	memset(text, ' ', sizeof(text));
	memcpy(text, "max=1Ti", 7);
	text[AUTORESIZE_POLICY_TEXT_MAX] = '\0';
	struct autoresize_rule r;
	autoresize_rule_resolve(NULL, NULL, text, &r);
	assert_true(autoresize_rule_active(&r));
	autoresize_rule_release(&r);
	/* One byte more: refused whole, before any key is read. */
	text[AUTORESIZE_POLICY_TEXT_MAX] = ' ';
	text[AUTORESIZE_POLICY_TEXT_MAX + 1] = '\0';
	autoresize_rule_resolve(NULL, text, C, &r);
	assert_int_equal(r.origin, AUTORESIZE_FROM_NAMESPACE);
	assert_false(autoresize_rule_active(&r));
	assert_string_equal(r.why, "the policy is 1025 bytes long (at most 1024); give each key once, e.g. used=80%, "
				   "step=20%, max=500Gi");
	autoresize_rule_release(&r);
	/* Control characters and bytes past ASCII are quoted \xNN in the message, which stays one line. */
	autoresize_rule_resolve(NULL, NULL, "max=1Ti,\x1b[31mused\n=80%\xff", &r);
	assert_non_null(r.why);
	for (const char *c = r.why; *c; c++)
		assert_true(*c >= 0x20 && *c < 0x7f);
	assert_non_null(strstr(r.why, "\\x1b[31mused"));
	autoresize_rule_release(&r);
}

static void test_where(void **state)
{
	(void)state;
	char buf[200];
	struct autoresize_rule r;
	autoresize_rule_resolve(W, N, C, &r);
	autoresize_rule_where(&r, "data", "shop", "fast", buf, sizeof(buf));
	assert_string_equal(buf, "autoresize.stateful-operator.io/data");
	autoresize_rule_release(&r);
	autoresize_rule_resolve(NULL, N, C, &r);
	autoresize_rule_where(&r, "data", "shop", "fast", buf, sizeof(buf));
	assert_string_equal(buf, "autoresize.stateful-operator.io/policy on Namespace shop");
	assert_string_equal(autoresize_origin_name(r.origin), "namespace");
	autoresize_rule_release(&r);
	autoresize_rule_resolve(NULL, NULL, C, &r);
	autoresize_rule_where(&r, "data", "shop", "fast", buf, sizeof(buf));
	assert_string_equal(buf, "autoresize.stateful-operator.io/policy on StorageClass fast");
	assert_string_equal(autoresize_origin_name(r.origin), "storageclass");
	/* Cut, never overrun. */
	autoresize_rule_where(&r, "data", "shop", "fast", buf, 12);
	assert_string_equal(buf, "autoresize.");
	autoresize_rule_release(&r);
}

static void test_annotation_of_object(void **state)
{
	(void)state;
	json_t *ns = json_pack("{s:s, s:{s:s, s:{s:s, s:s}}}", "kind", "Namespace", "metadata", "name", "shop",
			       "annotations", "autoresize.stateful-operator.io/policy", "max=1Ti",
			       "autoresize.stateful-operator.io/data", "max=2Ti");
	assert_string_equal(autoresize_rule_text(ns), "max=1Ti");
	assert_null(autoresize_rule_text(NULL));
	json_t *bare = json_pack("{s:{s:s}}", "metadata", "name", "fast");
	assert_null(autoresize_rule_text(bare));
	json_decref(ns);
	json_decref(bare);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_policy_of_the_ruling_place),
		cmocka_unit_test(test_mode_off),
		cmocka_unit_test(test_hostile_text),
		cmocka_unit_test(test_where),
		cmocka_unit_test(test_annotation_of_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
