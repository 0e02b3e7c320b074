/*
 * The informer against the real API server: it sees every change quickly,
 * a cut watch resumes where it stopped (nothing lost, nothing twice), and
 * an expired resourceVersion ends in a relist that leaves the cache equal
 * to the server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "runtime/informer.h"
#include "tcp_proxy.h"
#include "util/hashmap.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

/* What the handlers saw, per object name: counts of adds, updates, deletes, and when. */
struct seen_obj {
	int adds, updates, deletes;
	double last_ms;
	double labeled_ms; /* when an object labelled step=updated was first seen; 0 = not yet */
	char last_rv[32];
};

struct recorder {
	pthread_mutex_t lock;
	struct hashmap objs; /* name -> struct seen_obj */
	const char *prefix;  /* only names starting with this count */
};

static struct seen_obj *obj_of(struct recorder *r, const json_t *o)
{
	const char *name = kube_obj_str(o, "metadata.name");
	if (!name || strncmp(name, r->prefix, strlen(r->prefix)))
		return NULL;
	struct seen_obj *s = hashmap_get(&r->objs, name);
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		hashmap_put(&r->objs, name, s);
	}
	s->last_ms = it_now_ms();
	const char *step = kube_obj_str(o, "metadata.labels.step");
	if (!s->labeled_ms && step && !strcmp(step, "updated"))
		s->labeled_ms = s->last_ms;
	const char *rv = kube_obj_str(o, "metadata.resourceVersion");
	snprintf(s->last_rv, sizeof(s->last_rv), "%s", rv ? rv : "");
	return s;
}

static void on_add(void *ctx, const json_t *o)
{
	struct recorder *r = ctx;
	pthread_mutex_lock(&r->lock);
	struct seen_obj *s = obj_of(r, o);
	if (s)
		s->adds++;
	pthread_mutex_unlock(&r->lock);
}

static void on_update(void *ctx, const json_t *old, const json_t *o)
{
	(void)old;
	struct recorder *r = ctx;
	pthread_mutex_lock(&r->lock);
	struct seen_obj *s = obj_of(r, o);
	if (s)
		s->updates++;
	pthread_mutex_unlock(&r->lock);
}

static void on_delete(void *ctx, const json_t *o)
{
	struct recorder *r = ctx;
	pthread_mutex_lock(&r->lock);
	struct seen_obj *s = obj_of(r, o);
	if (s)
		s->deletes++;
	pthread_mutex_unlock(&r->lock);
}

static void recorder_init(struct recorder *r, const char *prefix)
{
	pthread_mutex_init(&r->lock, NULL);
	hashmap_init(&r->objs);
	r->prefix = prefix;
}

static void recorder_release(struct recorder *r)
{
	hashmap_release(&r->objs, free);
	pthread_mutex_destroy(&r->lock);
}

static struct seen_obj snapshot(struct recorder *r, const char *name)
{
	struct seen_obj copy = {0};
	pthread_mutex_lock(&r->lock);
	struct seen_obj *s = hashmap_get(&r->objs, name);
	if (s)
		copy = *s;
	pthread_mutex_unlock(&r->lock);
	return copy;
}

enum seen_what { SEEN_ADD, SEEN_LABELED_UPDATE, SEEN_DELETE };

struct wait_seen {
	struct recorder *r;
	const char *name;
	enum seen_what what;
};

static bool seen(void *ctx)
{
	struct wait_seen *w = ctx;
	struct seen_obj s = snapshot(w->r, w->name);
	return w->what == SEEN_ADD ? s.adds > 0 : w->what == SEEN_DELETE ? s.deletes > 0
									  : s.labeled_ms > 0;
}

/*
 * Waits until the handlers saw the change and returns the latency from
 * call_done_ms (the API call's return), or fails. Others change the
 * object too (a StatefulSet's status, say), so an update counts only when
 * it carries the test's label.
 */
static double latency(struct recorder *r, const char *name, enum seen_what what, double call_done_ms)
{
	struct wait_seen w = {r, name, what};
	if (!it_wait(seen, &w, 5000))
		fail_msg("%s: change %d not seen within 5 s", name, what);
	struct seen_obj s = snapshot(r, name);
	return (what == SEEN_LABELED_UPDATE ? s.labeled_ms : s.last_ms) - call_done_ms;
}

static struct informer *start_informer(struct kube_client *c, const struct kube_resource *res,
				       const char *ns, struct recorder *rec)
{
	struct informer_options o = {.resource = res, .namespace = ns};
	struct informer *inf = informer_new(c, &o);
	struct informer_handlers h = {on_add, on_update, on_delete, rec};
	informer_add_handlers(inf, &h);
	assert_int_equal(informer_start(inf), 0);
	if (!informer_wait_synced(inf, 10000))
		fail_msg("informer for %s did not sync within 10 s", res->plural);
	return inf;
}

struct kind_case {
	const struct kube_resource *res;
	bool operator_reads; /* the operator's RBAC lets it watch these (deploy/rbac) */
	const char *manifest; /* JSON; metadata.name is set by the test */
};

static const struct kind_case kinds[] = {
	{&KUBE_STATEFULSETS, true,
	 "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{},"
	 "\"spec\":{\"replicas\":0,\"serviceName\":\"x\",\"selector\":{\"matchLabels\":{\"app\":\"x\"}},"
	 "\"template\":{\"metadata\":{\"labels\":{\"app\":\"x\"}},\"spec\":{\"containers\":"
	 "[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}"},
	{&KUBE_PVCS, true,
	 "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{},"
	 "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}"},
	{&KUBE_PODS, true,
	 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{},\"spec\":{\"containers\":"
	 "[{\"name\":\"c\",\"image\":\"busybox\"}]}}"},
	{&KUBE_JOBS, false,
	 "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{},\"spec\":{\"suspend\":true,"
	 "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":"
	 "\"busybox\"}]}}}}"},
};

/* StatefulSets, PVCs, Pods and Jobs: create, update, delete each seen within 1 s. */
static void test_sees_changes_within_one_second(void **state)
{
	(void)state;
	struct kube_client *admin = it_admin_client();
	/* Where the operator's own RBAC covers a kind, the informer uses it: it must suffice. */
	struct kube_client *op = it_operator_client();
	char *ns = it_namespace_new(admin, "it-inf");
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		const struct kind_case *kc = &kinds[k];
		struct recorder rec;
		recorder_init(&rec, "obj-");
		struct informer *inf = start_informer(kc->operator_reads ? op : admin, kc->res, ns, &rec);
		struct kube_error err;
		json_t *obj = it_json("%s", kc->manifest);
		json_object_set_new(json_object_get(obj, "metadata"), "name", json_string("obj-1"));

		if (kube_create(admin, kc->res, ns, obj, NULL, &err) < 0)
			fail_msg("create %s: %s", kc->res->plural, err.message);
		double t = latency(&rec, "obj-1", SEEN_ADD, it_now_ms());
		printf("# %s: add seen after %.0f ms\n", kc->res->plural, t);
		assert_true(t <= 1000);

		json_t *patch = it_json("{\"metadata\":{\"labels\":{\"step\":\"updated\"}}}");
		if (kube_patch(admin, kc->res, ns, "obj-1", NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0)
			fail_msg("patch %s: %s", kc->res->plural, err.message);
		t = latency(&rec, "obj-1", SEEN_LABELED_UPDATE, it_now_ms());
		printf("# %s: update seen after %.0f ms\n", kc->res->plural, t);
		assert_true(t <= 1000);
		char *key = xasprintf("%s/obj-1", ns);
		json_t *cached = store_get(informer_store(inf), key);
		free(key);
		assert_non_null(cached);
		assert_non_null(kube_obj_str(cached, "metadata.labels.step"));
		assert_string_equal(kube_obj_str(cached, "metadata.labels.step"), "updated");
		assert_null(json_object_get(json_object_get(cached, "metadata"), "managedFields"));
		json_decref(cached);

		/* No finalizer may delay the delete, so its latency is the informer's alone. */
		json_t *nofin = it_json("{\"metadata\":{\"finalizers\":null}}");
		if (kube_patch(admin, kc->res, ns, "obj-1", NULL, KUBE_PATCH_MERGE, nofin, NULL, &err) < 0)
			fail_msg("clear finalizers: %s", err.message);
		long zero = 0;
		struct kube_delete_options del = {.propagation_policy = "Background",
						  .grace_period_seconds = &zero};
		if (kube_delete(admin, kc->res, ns, "obj-1", &del, &err) < 0)
			fail_msg("delete %s: %s", kc->res->plural, err.message);
		t = latency(&rec, "obj-1", SEEN_DELETE, it_now_ms());
		printf("# %s: delete seen after %.0f ms\n", kc->res->plural, t);
		assert_true(t <= 1000);
		assert_int_equal(snapshot(&rec, "obj-1").adds, 1);

		informer_free(inf);
		recorder_release(&rec);
		json_decref(obj);
		json_decref(patch);
		json_decref(nofin);
	}
	it_namespace_delete(admin, ns);
	free(ns);
	kube_client_free(op);
	kube_client_free(admin);
}

static void create_cm(struct kube_client *c, const char *ns, const char *name)
{
	json_t *cm = it_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
			     "\"data\":{\"v\":\"0\"}}",
			     name);
	struct kube_error err;
	if (kube_create(c, &KUBE_CONFIGMAPS, ns, cm, NULL, &err) < 0)
		fail_msg("create configmap %s: %s", name, err.message);
	json_decref(cm);
}

static void update_cm(struct kube_client *c, const char *ns, const char *name, const char *v)
{
	json_t *p = it_json("{\"data\":{\"v\":\"%s\"}}", v);
	struct kube_error err;
	if (kube_patch(c, &KUBE_CONFIGMAPS, ns, name, NULL, KUBE_PATCH_MERGE, p, NULL, &err) < 0)
		fail_msg("patch configmap %s: %s", name, err.message);
	json_decref(p);
}

static void delete_cm(struct kube_client *c, const char *ns, const char *name)
{
	struct kube_error err;
	if (kube_delete(c, &KUBE_CONFIGMAPS, ns, name, NULL, &err) < 0)
		fail_msg("delete configmap %s: %s", name, err.message);
}

/* The test's objects the server has: name -> resourceVersion. */
static json_t *server_state(struct kube_client *c, const char *ns, const char *prefix)
{
	json_t *items = NULL;
	struct kube_error err;
	if (kube_list_all(c, &KUBE_CONFIGMAPS, ns, NULL, 0, &items, NULL, &err) < 0)
		fail_msg("list configmaps: %s", err.message);
	json_t *state = json_object();
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *name = kube_obj_str(it, "metadata.name");
		if (!strncmp(name, prefix, strlen(prefix)))
			json_object_set_new(state, name,
					    json_string(kube_obj_str(it, "metadata.resourceVersion")));
	}
	json_decref(items);
	return state;
}

static json_t *cache_state(struct informer *inf, const char *prefix)
{
	json_t *all = store_list(informer_store(inf));
	json_t *state = json_object();
	size_t i;
	json_t *it;
	json_array_foreach(all, i, it) {
		const char *name = kube_obj_str(it, "metadata.name");
		if (!strncmp(name, prefix, strlen(prefix)))
			json_object_set_new(state, name,
					    json_string(kube_obj_str(it, "metadata.resourceVersion")));
	}
	json_decref(all);
	return state;
}

struct converge {
	struct kube_client *c;
	struct informer *inf;
	const char *ns;
};

static bool cache_equals_server(void *ctx)
{
	struct converge *cv = ctx;
	json_t *a = server_state(cv->c, cv->ns, "cm-");
	json_t *b = cache_state(cv->inf, "cm-");
	bool eq = json_equal(a, b);
	json_decref(a);
	json_decref(b);
	return eq;
}

static const char *apiserver_host_port(int *port)
{
	/* The admin kubeconfig's server is https://127.0.0.1:PORT. */
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	const char *colon = strrchr(cfg.server, ':');
	*port = atoi(colon + 1);
	kube_config_release(&cfg);
	return "127.0.0.1";
}

static struct kube_client *client_via(struct tcp_proxy *p)
{
	char *server = xasprintf("https://127.0.0.1:%d", tcp_proxy_port(p));
	struct kube_client *c = it_client_from(getenv("KUBECONFIG"), server);
	free(server);
	return c;
}

/* An admin client, a fresh namespace, a proxy in front of the API server and a client through it. */
struct proxied {
	struct kube_client *admin;
	char *ns;
	struct tcp_proxy *proxy;
	struct kube_client *via;
	struct recorder rec;
};

static void proxied_setup(struct proxied *p, const char *prefix)
{
	p->admin = it_admin_client();
	p->ns = it_namespace_new(p->admin, prefix);
	int port;
	const char *host = apiserver_host_port(&port);
	p->proxy = tcp_proxy_start(host, port);
	assert_non_null(p->proxy);
	p->via = client_via(p->proxy);
	recorder_init(&p->rec, "cm-");
}

static void proxied_teardown(struct proxied *p)
{
	recorder_release(&p->rec);
	kube_client_free(p->via);
	tcp_proxy_stop(p->proxy);
	it_namespace_delete(p->admin, p->ns);
	free(p->ns);
	kube_client_free(p->admin);
}

/* Creates cm-<from> .. cm-<to - 1>. */
static void create_cms(struct kube_client *c, const char *ns, int from, int to)
{
	for (int i = from; i < to; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cm-%d", i);
		create_cm(c, ns, name);
	}
}

/*
 * A watch cut mid-stream (every connection closed, and new ones refused
 * for two seconds while the objects change) resumes from the last
 * resourceVersion: each change arrives exactly once, without a relist.
 */
static void test_cut_watch_resumes_without_loss_or_duplicates(void **state)
{
	(void)state;
	struct proxied p;
	proxied_setup(&p, "it-cut");
	struct informer *inf = start_informer(p.via, &KUBE_CONFIGMAPS, p.ns, &p.rec);
	create_cms(p.admin, p.ns, 0, 5);
	struct converge cv = {p.admin, inf, p.ns};
	assert_true(it_wait(cache_equals_server, &cv, 5000));
	int accepted = tcp_proxy_accepted(p.proxy);

	tcp_proxy_block(p.proxy, true);
	tcp_proxy_cut(p.proxy);
	create_cms(p.admin, p.ns, 5, 10);
	update_cm(p.admin, p.ns, "cm-0", "1");
	update_cm(p.admin, p.ns, "cm-1", "1");
	update_cm(p.admin, p.ns, "cm-2", "1");
	delete_cm(p.admin, p.ns, "cm-3");
	delete_cm(p.admin, p.ns, "cm-4");
	it_sleep_ms(2000);
	tcp_proxy_block(p.proxy, false);

	assert_true(it_wait(cache_equals_server, &cv, 15000));
	assert_true(tcp_proxy_accepted(p.proxy) > accepted); /* it did reconnect */
	for (int i = 0; i < 10; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cm-%d", i);
		struct seen_obj s = snapshot(&p.rec, name);
		if (s.adds != 1)
			fail_msg("%s added %d times", name, s.adds);
		int want_updates = i < 3 ? 1 : 0;
		int want_deletes = i == 3 || i == 4 ? 1 : 0;
		if (s.updates != want_updates || s.deletes != want_deletes)
			fail_msg("%s: %d updates, %d deletes; want %d, %d", name, s.updates, s.deletes,
				 want_updates, want_deletes);
	}
	struct informer_stats st;
	informer_get_stats(inf, &st);
	assert_int_equal(st.lists, 1); /* resumed, not relisted */
	assert_true(st.watch_restarts >= 1);
	informer_free(inf);
	proxied_teardown(&p);
}

/*
 * The informer is cut off while objects change, and stays away until etcd
 * has compacted the history it would resume from (the test bed serves
 * configmap watches from etcd and compacts every 10 s). Its watch then
 * fails with 410 Gone: it must relist, and the cache must end equal to the
 * server, deletions included.
 */
static void test_expired_resource_version_relists(void **state)
{
	(void)state;
	struct proxied p;
	proxied_setup(&p, "it-gone");
	create_cms(p.admin, p.ns, 0, 4);
	struct informer *inf = start_informer(p.via, &KUBE_CONFIGMAPS, p.ns, &p.rec);
	struct converge cv = {p.admin, inf, p.ns};
	assert_true(it_wait(cache_equals_server, &cv, 5000));

	tcp_proxy_block(p.proxy, true);
	tcp_proxy_cut(p.proxy);
	delete_cm(p.admin, p.ns, "cm-0");
	update_cm(p.admin, p.ns, "cm-1", "2");
	create_cm(p.admin, p.ns, "cm-9");
	/* Two compaction intervals, and a change after them, so the informer's version is gone. */
	it_sleep_ms(25000);
	update_cm(p.admin, p.ns, "cm-2", "2");
	tcp_proxy_block(p.proxy, false);

	/* Backoff reached up to 25.6 s while blocked: allow for it. */
	assert_true(it_wait(cache_equals_server, &cv, 60000));
	struct informer_stats st;
	informer_get_stats(inf, &st);
	printf("# lists=%lu watch_restarts=%lu\n", st.lists, st.watch_restarts);
	assert_true(st.lists >= 2); /* the expired version forced a relist */
	assert_int_equal(snapshot(&p.rec, "cm-0").deletes, 1);
	assert_int_equal(snapshot(&p.rec, "cm-9").adds, 1);
	assert_int_equal(snapshot(&p.rec, "cm-1").updates, 1);
	assert_int_equal(snapshot(&p.rec, "cm-2").updates, 1);
	assert_int_equal(snapshot(&p.rec, "cm-3").updates, 0);
	informer_free(inf);
	proxied_teardown(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sees_changes_within_one_second),
		cmocka_unit_test(test_cut_watch_resumes_without_loss_or_duplicates),
		cmocka_unit_test(test_expired_resource_version_relists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
