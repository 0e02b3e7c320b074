/*
 * Autoresize's refusals and its source being down, on the real control
 * plane (kwok pods: no usage to read, which is the point here): a bad
 * policy gets a Warning that names the field, a policy for a template the
 * set does not have too, and a Prometheus that does not answer a
 * UsageUnavailable Warning; nothing is written to the set in any case.
 * Policies of a StorageClass and of a Namespace (usage from a Prometheus
 * stub in this process): the class's grows a set without a policy of its
 * own, a namespace's overrides it, mode=off opts a set out, and a class's
 * policy that cannot be read is a Warning on the class that grows nothing.
 * Growth itself is shown on real volumes (tests/realnode/rn_autoresize.c).
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

#include "client/kube_object.h"
#include "daemon.h"
#include "itest.h"
#include "runtime/http_server.h"
#include "util/xalloc.h"

struct t {
	struct kube_client *admin;
	char *ns;
	struct daemon d;
	bool running;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));
	t->admin = it_admin_client();
	t->ns = it_namespace_new(t->admin, "it-autoresize");
	*state = t;
	return 0;
}

/* Whatever the test's end: the operator stopped, the namespace gone. */
static int teardown(void **state)
{
	struct t *t = *state;
	if (t->running) {
		daemon_signal(&t->d, SIGTERM);
		daemon_wait_exit(&t->d, 10000);
		daemon_cleanup(&t->d);
	}
	it_namespace_delete(t->admin, t->ns);
	free(t->ns);
	kube_client_free(t->admin);
	free(t);
	return 0;
}

struct seen {
	struct t *t;
	const char *reason;
	const char *part;
};

/* Some Event of s->reason about the set says s->part (there may be several of one reason). */
static bool event_says(void *ctx)
{
	struct seen *s = ctx;
	char *selector = xasprintf("reason=%s,involvedObject.name=s", s->reason);
	json_t *events = it_events(s->t->admin, s->t->ns, selector);
	free(selector);
	bool ok = false;
	size_t i;
	const json_t *e;
	json_array_foreach(events, i, e) {
		const char *msg = kube_obj_str(e, "message");
		if (msg && strstr(msg, s->part)) {
			printf("[ event ] %s: %s\n", s->reason, msg);
			ok = true;
		}
	}
	json_decref(events);
	return ok;
}

static void expect_event(struct t *t, const char *reason, const char *part)
{
	struct seen s = {t, reason, part};
	if (!it_wait(event_says, &s, 60000))
		fail_msg("no %s Event saying \"%s\"; operator log:\n%s", reason, part, daemon_log(&t->d));
}

static void test_refusals_and_source_down_change_nothing(void **state)
{
	struct t *t = *state;
	json_t *sts = it_statefulset("s", 2, "Parallel", "data,logs");
	it_set_annotation(sts, "autoresize.stateful-operator.io/data", "used=80%, step=20, max=1Gi");
	it_set_annotation(sts, "autoresize.stateful-operator.io/cache", "used=80%, max=1Gi");
	it_set_annotation(sts, "autoresize.stateful-operator.io/logs", "used=80%, max=1Gi");
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULSETS, t->ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	json_decref(sts);
	it_wait_ready_and_bound(t->admin, t->ns, 2, 4, 60000);
	json_t *before = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, "s");

	/* Nothing listens on port 1: the source is down. */
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"),
			      "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			      "--autoresize-source", "prometheus", "--prometheus-url", "http://127.0.0.1:1",
			      "--autoresize-interval", "5s", NULL};
	daemon_start(&t->d, args, NULL);
	t->running = true;
	if (!daemon_wait_log(&t->d, "all caches synced", 20000))
		fail_msg("operator did not start:\n%s", daemon_log(&t->d));

	expect_event(t, "AutoResizePolicyInvalid", "autoresize.stateful-operator.io/data: step:");
	expect_event(t, "AutoResizePolicyInvalid", "there is no volumeClaimTemplate named cache");
	expect_event(t, "UsageUnavailable", "the claims of template logs");
	char *msg = it_event_message(t->admin, t->ns, "UsageUnavailable", "s");
	assert_non_null(strstr(msg, "127.0.0.1:1"));
	free(msg);

	/* A few polls later: said once each, not at every poll; the set is as it was. */
	it_sleep_ms(12000);
	json_t *events = it_events(t->admin, t->ns, "reason=UsageUnavailable");
	assert_int_equal(json_array_size(events), 1);
	assert_int_equal(kube_obj_int(json_array_get(events, 0), "count", NULL, 0), 1);
	json_decref(events);
	json_t *after = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, "s");
	assert_string_equal(kube_obj_str(after, "metadata.resourceVersion"), kube_obj_str(before, "metadata.resourceVersion"));
	json_decref(after);
	json_decref(before);
	daemon_stop_operator(&t->d);
	t->running = false;
}

/* ---- policies of StorageClasses and Namespaces ---- */

#define GI (1LL << 30)

struct sources {
	struct kube_client *admin;
	char *ns, *ns2;       /* ns2: its Namespace carries a policy */
	char *cls, *bad;      /* StorageClasses: a policy, one that cannot be read */
	struct daemon d;
	bool running;
	json_t *usage;        /* "ns/claim" -> used share in percent (a Prometheus answer is made of it) */
};

static int sources_setup(void **state)
{
	struct sources *t = calloc(1, sizeof(*t));
	t->admin = it_admin_client();
	t->ns = it_namespace_new(t->admin, "it-arsrc");
	t->ns2 = it_namespace_new(t->admin, "it-arsrc-ns");
	t->cls = xasprintf("%s-class", t->ns);
	t->bad = xasprintf("%s-bad", t->ns);
	t->usage = json_object();
	*state = t;
	return 0;
}

static int sources_teardown(void **state)
{
	struct sources *t = *state;
	if (t->running) {
		daemon_signal(&t->d, SIGTERM);
		daemon_wait_exit(&t->d, 10000);
		daemon_cleanup(&t->d);
	}
	struct kube_error err;
	/* The classes are cluster-wide: gone whatever the test's end, lest they cover other tests' sets. */
	if (kube_delete(t->admin, &KUBE_STORAGECLASSES, NULL, t->cls, NULL, &err) < 0 && err.code != 404)
		print_error("delete StorageClass %s: %s\n", t->cls, err.message);
	if (kube_delete(t->admin, &KUBE_STORAGECLASSES, NULL, t->bad, NULL, &err) < 0 && err.code != 404)
		print_error("delete StorageClass %s: %s\n", t->bad, err.message);
	it_namespace_delete(t->admin, t->ns);
	it_namespace_delete(t->admin, t->ns2);
	free(t->ns);
	free(t->ns2);
	free(t->cls);
	free(t->bad);
	json_decref(t->usage);
	kube_client_free(t->admin);
	free(t);
	return 0;
}

/* Prometheus's instant query, answered from t->usage: every claim 2Gi, used as its share says. */
static int prometheus_query(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	const struct sources *t = ctx;
	(void)req;
	json_t *result = json_array();
	const char *key;
	json_t *v;
	json_object_foreach(t->usage, key, v) {
		const char *slash = strchr(key, '/');
		char *ns = xstrndup(key, (size_t)(slash - key));
		long long used = 2 * GI / 100 * json_integer_value(v);
		const struct {
			const char *name;
			long long value;
		} series[] = {{"kubelet_volume_stats_capacity_bytes", 2 * GI},
			      {"kubelet_volume_stats_used_bytes", used},
			      {"kubelet_volume_stats_available_bytes", 2 * GI - used}};
		for (size_t i = 0; i < 3; i++) {
			char value[32];
			snprintf(value, sizeof(value), "%lld", series[i].value);
			json_array_append_new(result, json_pack("{s:{s:s, s:s, s:s}, s:[f, s]}", "metric", "__name__",
								series[i].name, "namespace", ns, "persistentvolumeclaim",
								slash + 1, "value", it_now_ms() / 1000, value));
		}
		free(ns);
	}
	json_t *doc = json_pack("{s:s, s:{s:s, s:o}}", "status", "success", "data", "resultType", "vector", "result",
				result);
	*body = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	*content_type = "application/json";
	return 200;
}

static void make_class(struct sources *t, const char *name, const char *policy)
{
	json_t *sc = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s, s:b, s:s}", "apiVersion", "storage.k8s.io/v1", "kind",
			       "StorageClass", "metadata", "name", name, "annotations",
			       "autoresize.stateful-operator.io/policy", policy, "provisioner", "kubernetes.io/host-path",
			       "allowVolumeExpansion", 1, "volumeBindingMode", "Immediate");
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STORAGECLASSES, NULL, sc, NULL, &err) < 0)
		fail_msg("create StorageClass %s: %s", name, err.message);
	json_decref(sc);
}

/* Set name in ns: one replica, template "data" of 2Gi in class cls, own policy (NULL: none); its claim used% full. */
static void make_set(struct sources *t, const char *ns, const char *name, const char *cls, const char *own, int used)
{
	json_t *sts = it_statefulset(name, 1, "Parallel", "data");
	json_t *spec = json_object_get(json_array_get(json_object_get(json_object_get(sts, "spec"),
								      "volumeClaimTemplates"), 0), "spec");
	json_object_set_new(spec, "storageClassName", json_string(cls));
	json_object_set_new(json_object_get(json_object_get(spec, "resources"), "requests"), "storage",
			    json_string("2Gi"));
	if (own)
		it_set_annotation(sts, "autoresize.stateful-operator.io/data", own);
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULSETS, ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet %s/%s: %s", ns, name, err.message);
	json_decref(sts);
	char *key = xasprintf("%s/data-%s-0", ns, name);
	json_object_set_new(t->usage, key, json_integer(used));
	free(key);
}

/* The size the set's resize annotation asks for, or "" (a new string). */
static char *asked(struct sources *t, const char *ns, const char *name)
{
	json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, ns, name);
	const char *v = it_annotation(sts, "resize.stateful-operator.io/data");
	char *out = xstrdup(v ? v : "");
	json_decref(sts);
	return out;
}

struct asks {
	struct sources *t;
	const char *ns, *name, *size;
};

static bool set_asks(void *ctx)
{
	struct asks *a = ctx;
	char *got = asked(a->t, a->ns, a->name);
	bool ok = !strcmp(got, a->size);
	free(got);
	return ok;
}

static void expect_asks(struct sources *t, const char *ns, const char *name, const char *size)
{
	struct asks a = {t, ns, name, size};
	if (!it_wait(set_asks, &a, 60000)) {
		char *got = asked(t, ns, name);
		fail_msg("%s/%s asks for \"%s\", not %s; operator log:\n%s", ns, name, got, size, daemon_log(&t->d));
	}
}

struct class_event {
	struct sources *t;
	const char *part;
};

/* The Warning about the class that cannot be read (Events of cluster-scoped objects are in "default"). */
static bool class_warned(void *ctx)
{
	struct class_event *c = ctx;
	char *selector = xasprintf("reason=AutoResizePolicyInvalid,involvedObject.name=%s", c->t->bad);
	json_t *events = it_events(c->t->admin, "default", selector);
	free(selector);
	bool ok = false;
	size_t i;
	const json_t *e;
	json_array_foreach(events, i, e) {
		const char *msg = kube_obj_str(e, "message"), *kind = kube_obj_str(e, "involvedObject.kind");
		const char *type = kube_obj_str(e, "type");
		if (msg && strstr(msg, c->part) && kind && !strcmp(kind, "StorageClass") && type &&
		    !strcmp(type, "Warning")) {
			printf("[ event ] StorageClass %s: %s\n", c->t->bad, msg);
			ok = true;
		}
	}
	json_decref(events);
	return ok;
}

static void test_class_and_namespace_policies(void **state)
{
	struct sources *t = *state;
	/* Class: at 80%, +50%. Namespace ns2: at 50%, +2Gi. */
	make_class(t, t->cls, "used=80%, step=50%, max=8Gi, cooldown=0s");
	/* A control character and a percentage without its sign: refused, quoted clean. */
	make_class(t, t->bad, "used=80, max=8Gi\x01");
	it_merge_patch(t->admin, &KUBE_NAMESPACES, NULL, t->ns2,
		       "{\"metadata\":{\"annotations\":{\"autoresize.stateful-operator.io/policy\":"
		       "\"used=50%%, step=2Gi, max=8Gi, cooldown=0s\"}}}");
	make_set(t, t->ns, "a", t->cls, NULL, 90);        /* the class's policy: grows 2Gi -> 3Gi */
	make_set(t, t->ns, "b", t->cls, "mode=off", 90);  /* opted out */
	make_set(t, t->ns, "c", t->bad, NULL, 90);        /* its class's policy cannot be read */
	make_set(t, t->ns2, "d", t->cls, NULL, 60);       /* the namespace's: 2Gi -> 4Gi (the class's would wait) */
	it_wait_ready_and_bound(t->admin, t->ns, 3, 3, 60000);
	it_wait_ready_and_bound(t->admin, t->ns2, 1, 1, 60000);

	char *err = NULL;
	struct http_server *prom = http_server_start("127.0.0.1:0", &err);
	if (!prom)
		fail_msg("Prometheus stub: %s", err);
	http_server_handle(prom, "/api/v1/query", prometheus_query, t);
	char *url = xasprintf("http://127.0.0.1:%d", http_server_port(prom));
	double started = it_now_ms();
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"),
			      "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			      "--autoresize-source", "prometheus", "--prometheus-url", url,
			      "--autoresize-interval", "5s", NULL};
	daemon_start(&t->d, args, NULL);
	t->running = true;
	if (!daemon_wait_log(&t->d, "all caches synced", 20000))
		fail_msg("operator did not start:\n%s", daemon_log(&t->d));

	expect_asks(t, t->ns, "a", "3Gi");
	/* Events are sent after the write, by the recorder's own thread. */
	assert_true(it_wait_event(t->admin, t->ns, "AutoResizeTriggered", "a", 20000));
	char *msg = it_event_message(t->admin, t->ns, "AutoResizeTriggered", "a");
	assert_non_null(msg);
	printf("[ event ] AutoResizeTriggered: %s\n", msg);
	assert_non_null(strstr(msg, "(policy: autoresize.stateful-operator.io/policy on StorageClass"));
	free(msg);
	expect_asks(t, t->ns2, "d", "4Gi");
	assert_true(it_wait_event(t->admin, t->ns2, "AutoResizeTriggered", "d", 20000));
	msg = it_event_message(t->admin, t->ns2, "AutoResizeTriggered", "d");
	assert_non_null(msg);
	printf("[ event ] AutoResizeTriggered: %s\n", msg);
	assert_non_null(strstr(msg, "(policy: autoresize.stateful-operator.io/policy on Namespace"));
	free(msg);
	struct class_event ce = {t, "autoresize.stateful-operator.io/policy: used: \"80\" is not a whole percentage"};
	if (!it_wait(class_warned, &ce, 30000))
		fail_msg("no Warning on StorageClass %s; operator log:\n%s", t->bad, daemon_log(&t->d));
	printf("[ time  ] grown and warned %.1f s after the operator started\n", (it_now_ms() - started) / 1000);

	/* A few polls more: b (mode=off) and c (its class's policy refused) are as they were, and said once. */
	it_sleep_ms(11000);
	char *b = asked(t, t->ns, "b"), *c = asked(t, t->ns, "c");
	assert_string_equal(b, "");
	assert_string_equal(c, "");
	free(b);
	free(c);
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", "b"), 0);
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizeTriggered", "c"), 0);
	assert_int_equal(it_event_count(t->admin, t->ns, "AutoResizePolicyInvalid", "c"), 0);
	assert_int_equal(it_event_count(t->admin, "default", "AutoResizePolicyInvalid", t->bad), 1);
	daemon_stop_operator(&t->d);
	t->running = false;
	http_server_stop(prom);
	free(url);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals_and_source_down_change_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_class_and_namespace_policies, sources_setup, sources_teardown),
	};
	if (getenv("IT_FILTER")) /* run one test by hand: IT_FILTER=test_name */
		cmocka_set_test_filter(getenv("IT_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
