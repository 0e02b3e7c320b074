/*
 * The retry rule the fault proxy proves (tests/integration/support/
 * repeat_rule.c): the writes the operator repeats with a precondition pass
 * (bodies as its client sends them), and a write whose repeat could act
 * twice is flagged, however close it looks to a guarded one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "repeat_rule.h"

#define STS "/apis/apps/v1/namespaces/a/statefulsets/web"
#define PVC "/api/v1/namespaces/a/persistentvolumeclaims/data-web-0"
#define PV "/api/v1/persistentvolumes/pv-1"
#define SC "/apis/stateful-operator.io/v1alpha1/namespaces/a/statefulclusters/db"

struct write {
	const char *method, *path, *body;
};

static void each(const struct write *w, size_t n, bool want)
{
	for (size_t i = 0; i < n; i++)
		if (repeat_is_harmless(w[i].method, w[i].path, w[i].body) != want)
			fail_msg("%s %s %s: want %s", w[i].method, w[i].path, w[i].body ? w[i].body : "(no body)",
				 want ? "harmless" : "flagged");
}

static void test_guarded_writes_pass(void **unused)
{
	(void)unused;
	static const struct write ok[] = {
		/* Merge patches with action_patch_precondition: resourceVersion, or uid (claims, show_status). */
		{"PATCH", STS, "{\"metadata\":{\"annotations\":{\"x\":\"y\"},\"resourceVersion\":\"12\"}}"},
		{"PATCH", PVC, "{\"metadata\":{\"annotations\":{\"x\":\"y\"},\"uid\":\"u-1\"}}"},
		{"PATCH", PV, "{\"metadata\":{\"resourceVersion\":\"7\"},\"spec\":{\"persistentVolumeReclaimPolicy\":\"Retain\"}}"},
		/* A PUT of what was read (the Lease, kube_update_retry). */
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/op",
		 "{\"metadata\":{\"name\":\"op\",\"resourceVersion\":\"40\"},\"spec\":{\"holderIdentity\":\"me\"}}"},
		/* The autoresizer's JSON patch: a test of resourceVersion first. */
		{"PATCH", SC,
		 "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"5\"},"
		 "{\"op\":\"replace\",\"path\":\"/spec/volumeClaimTemplates/0/spec/resources/requests/storage\","
		 "\"value\":\"2Gi\"},{\"op\":\"add\",\"path\":\"/metadata/annotations/x\",\"value\":\"y\"}]"},
		{"PATCH", SC, "[{\"op\":\"add\",\"path\":\"/spec/x\",\"value\":1},{\"op\":\"test\",\"path\":\"/metadata/uid\","
			      "\"value\":\"u\"}]"},
		/* kube_delete with a precondition; or one in the query. */
		{"DELETE", PVC,
		 "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\","
		 "\"preconditions\":{\"uid\":\"u-1\"}}"},
		{"DELETE", PV, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"resourceVersion\":\"9\"}}"},
		{"DELETE", PVC "?uid=u-1", NULL},
		{"DELETE", PVC "?propagationPolicy=Background&resourceVersion=9", ""},
		/* Creates by name: a second gets 409 AlreadyExists. */
		{"POST", "/api/v1/namespaces/a/configmaps", "{\"metadata\":{\"name\":\"web-sts-backup\"},\"data\":{}}"},
		{"POST", "/apis/batch/v1/namespaces/a/jobs", "{\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"copy-web-0\"}}"},
		{"POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"b\"}}"},
		/* Events (created by name, and counted again), and dry runs. */
		{"PATCH", "/api/v1/namespaces/a/events/web.1879", "{\"count\":3,\"lastTimestamp\":\"2026-11-25T18:00:00Z\"}"},
		{"POST", "/apis/events.k8s.io/v1/namespaces/a/events", "{\"metadata\":{\"generateName\":\"web.\"}}"},
		{"PATCH", STS "?dryRun=All", "{\"metadata\":{\"annotations\":{\"x\":\"y\"}}}"},
		{"DELETE", PVC "?fieldManager=op&dryRun=All", NULL},
	};
	each(ok, sizeof(ok) / sizeof(ok[0]), true);
}

static void test_unguarded_writes_are_flagged(void **unused)
{
	(void)unused;
	static const struct write flagged[] = {
		/* A uid or resourceVersion that is not the object's own metadata. */
		{"PATCH", PVC,
		 "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":\"web\","
		 "\"uid\":\"u-9\"}]}}"},
		{"PATCH", STS, "{\"metadata\":{\"annotations\":{\"resourceVersion\":\"3\",\"uid\":\"u\"}}}"},
		{"PATCH", STS, "{\"spec\":{\"template\":{\"metadata\":{\"uid\":\"u\",\"resourceVersion\":\"3\"}}}}"},
		{"PATCH", STS, "{\"metadata\":{\"resourceVersion\":\"\",\"annotations\":{\"x\":\"y\"}}}"},
		{"PATCH", PVC, "{\"metadata\":{\"annotations\":{\"stateful-operator.io/bind-requested\":\"t\"}}}"},
		{"PUT", STS, "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":1}}"},
		{"PATCH", STS, "not json, though it says \"resourceVersion\""},
		{"PATCH", STS, NULL},
		/* A JSON patch whose test is of something else, or that sets resourceVersion instead of testing it. */
		{"PATCH", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/w",
		 "[{\"op\":\"test\",\"path\":\"/webhooks/0/name\",\"value\":\"w\"},"
		 "{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"Y2E=\"}]"},
		{"PATCH", STS, "[{\"op\":\"replace\",\"path\":\"/metadata/resourceVersion\",\"value\":\"3\"}]"},
		{"PATCH", STS, "[{\"op\":\"test\",\"path\":\"/metadata/annotations/uid\",\"value\":\"u\"}]"},
		/* Deletes without a precondition; a uid elsewhere in the query is not one. */
		{"DELETE", PVC, NULL},
		{"DELETE", PVC, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}"},
		{"DELETE", PVC, "{\"preconditions\":{\"uid\":\"\"}}"},
		{"DELETE", PVC "?propagationPolicy=Background", NULL},
		{"DELETE", PVC "?puid=u-1", NULL},
		{"DELETE", PVC "?uid=", NULL},
		/* A create the server names, a create without a name, a POST that acts on an object. */
		{"POST", "/api/v1/namespaces/a/pods", "{\"metadata\":{\"generateName\":\"cleanup-\"}}"},
		{"POST", "/api/v1/namespaces/a/configmaps", "{\"data\":{}}"},
		{"POST", "/api/v1/namespaces/a/pods/web-0/eviction",
		 "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"web-0\",\"namespace\":\"a\"}}"},
		{"POST", "/not/an/api/path", "{\"metadata\":{\"name\":\"x\"}}"},
		/* A namespace named events is not the Events resource. */
		{"PATCH", "/api/v1/namespaces/events/pods/p", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}"},
		/* A method with no rule. */
		{"CONNECT", STS, "{\"metadata\":{\"resourceVersion\":\"3\"}}"},
	};
	each(flagged, sizeof(flagged) / sizeof(flagged[0]), false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guarded_writes_pass),
		cmocka_unit_test(test_unguarded_writes_are_flagged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
