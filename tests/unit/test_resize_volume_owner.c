/*
 * Which PersistentVolumes a StatefulSet's resize may write
 * (resize_volume_owner.c): only one the copy cycle took over for that very
 * set, or one bound to a live claim of the set with the claimRef's UID.
 * The PV of the reported attack (Available, no claim) and PVs of other
 * tenants are refused whatever the state names.
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

#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_internal.h"

/* A PV named name, bound (or pre-bound) to ns/claim with uid (each may be NULL), taken-for taken (may be NULL). */
static json_t *pv(const char *name, const char *ns, const char *claim, const char *uid, const char *taken)
{
	json_t *obj = json_pack("{s:{s:s, s:{}}, s:{s:s}}", "metadata", "name", name, "annotations", "spec",
				"persistentVolumeReclaimPolicy", "Retain");
	if (claim) {
		json_t *ref = json_pack("{s:s, s:s}", "namespace", ns, "name", claim);
		if (uid)
			json_object_set_new(ref, "uid", json_string(uid));
		json_object_set_new(json_object_get(obj, "spec"), "claimRef", ref);
	}
	if (taken)
		json_object_set_new(json_object_get(json_object_get(obj, "metadata"), "annotations"), ANNOTATION_TAKEN_FOR,
				    json_string(taken));
	return obj;
}

static json_t *claim(const char *ns, const char *name, const char *uid, const char *volume)
{
	return json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "namespace", ns, "name", name, "uid", uid, "spec",
			 "volumeName", volume);
}

static bool owned(const json_t *v, const json_t *c, const char *ns, const char *sts)
{
	const char *why = NULL;
	bool r = resize_volume_owned(v, c, ns, sts, &why);
	assert_true(r || (why && *why));
	return r;
}

static void test_unclaimed_volume_is_nobodys(void **unused)
{
	(void)unused;
	/* The reported attack: an Available PV named in a forged state. */
	json_t *victim = pv("victim-pv", NULL, NULL, NULL, NULL);
	assert_false(owned(victim, NULL, "attacker", "web"));
	assert_null(resize_volume_claim_of_set(victim, "attacker", "web"));
	json_decref(victim);
}

static void test_taken_for_this_set_only(void **unused)
{
	(void)unused;
	json_t *v = pv("old-pv", "shop", "data-web-0", "dead-uid", "shop/web");
	assert_true(owned(v, NULL, "shop", "web")); /* Released: its claim is gone */
	assert_false(owned(v, NULL, "attacker", "web"));
	assert_false(owned(v, NULL, "shop", "web2"));
	json_decref(v);
	/* A mark for another set, even one claimRef pointing here, proves nothing. */
	json_t *w = pv("w", "attacker", "data-web-0", "u1", "shop/web");
	assert_false(owned(w, NULL, "attacker", "web"));
	json_decref(w);
}

static void test_bound_to_live_claim_of_the_set(void **unused)
{
	(void)unused;
	json_t *v = pv("pv-1", "shop", "data-web-0", "u1", NULL);
	json_t *c = claim("shop", "data-web-0", "u1", "pv-1");
	assert_true(owned(v, c, "shop", "web"));
	/* The same PV seen from another namespace or set. */
	assert_false(owned(v, c, "attacker", "web"));
	assert_false(owned(v, c, "shop", "db"));
	/* The claim is gone, or a new claim of that name has another UID or volume. */
	assert_false(owned(v, NULL, "shop", "web"));
	json_t *c2 = claim("shop", "data-web-0", "u2", "pv-1");
	assert_false(owned(v, c2, "shop", "web"));
	json_t *c3 = claim("shop", "data-web-0", "u1", "pv-other");
	assert_false(owned(v, c3, "shop", "web"));
	/* A claimRef without a UID (pre-bound by someone) is not a binding. */
	json_t *pre = pv("pv-1", "shop", "data-web-0", NULL, NULL);
	assert_false(owned(pre, c, "shop", "web"));
	json_decref(pre);
	json_decref(c3);
	json_decref(c2);
	json_decref(c);
	json_decref(v);
}

static void test_copy_claims_and_claim_names(void **unused)
{
	(void)unused;
	/* The copy cycle's new claim <claim>-copy is the set's too. */
	json_t *v = pv("new-pv", "shop", "data-web-1-copy", "u3", NULL);
	json_t *c = claim("shop", "data-web-1-copy", "u3", "new-pv");
	assert_string_equal(resize_volume_claim_of_set(v, "shop", "web"), "data-web-1-copy");
	assert_true(owned(v, c, "shop", "web"));
	json_decref(c);
	json_decref(v);
	/* Names that only look alike. */
	const char *others[] = {"data-xweb-0", "data-web-x", "data-web", "web-0", "data-web-0-copy2", "data-web-0x"};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		json_t *o = pv("p", "shop", others[i], "u", NULL);
		json_t *oc = claim("shop", others[i], "u", "p");
		assert_null(resize_volume_claim_of_set(o, "shop", "web"));
		assert_false(owned(o, oc, "shop", "web"));
		json_decref(oc);
		json_decref(o);
	}
	/* A set whose name has dashes. */
	json_t *d = pv("p", "shop", "data-my-db-2", "u", NULL);
	json_t *dc = claim("shop", "data-my-db-2", "u", "p");
	assert_true(owned(d, dc, "shop", "my-db"));
	assert_true(owned(d, dc, "shop", "db")); /* template "data-my", set "db": the live claim decides */
	json_decref(dc);
	json_decref(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unclaimed_volume_is_nobodys),
		cmocka_unit_test(test_taken_for_this_set_only),
		cmocka_unit_test(test_bound_to_live_claim_of_the_set),
		cmocka_unit_test(test_copy_claims_and_claim_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
