#include "itest.h"
#include "operator_secrets.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/strbuf.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#ifndef SOP_SOURCE_DIR
#error "SOP_SOURCE_DIR must name the repository (set by CMake)"
#endif

struct kube_client *it_client_from(const char *kubeconfig, const char *server)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (!kubeconfig)
		fail_msg("no kubeconfig: run the integration tests through scripts/test, or "
			 "eval \"$(scripts/local-cluster env)\" first");
	if (kubeconfig_load(kubeconfig, NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	if (server) {
		free(cfg.server);
		cfg.server = xstrdup(server);
	}
	struct kube_client *c = kube_client_new(&cfg, NULL, &err);
	if (!c)
		fail_msg("%s", err);
	return c;
}

struct kube_client *it_admin_client(void)
{
	return it_client_from(getenv("KUBECONFIG"), NULL);
}

struct kube_client *it_operator_client(void)
{
	return it_client_from(getenv("SOP_OPERATOR_KUBECONFIG"), NULL);
}

char *it_namespace_new(struct kube_client *admin, const char *prefix)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char *name = xasprintf("%s-%lx", prefix, (unsigned long)(ts.tv_nsec ^ (ts.tv_sec << 20)) & 0xffffff);
	json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			       "metadata", "name", name);
	struct kube_error err;
	if (kube_create(admin, &KUBE_NAMESPACES, NULL, ns, NULL, &err) < 0)
		fail_msg("create namespace %s: %s", name, err.message);
	json_decref(ns);
	/* Pods need the namespace's default ServiceAccount, made by the controller-manager. */
	for (int i = 0; i < 500; i++) {
		char *path = xasprintf("/api/v1/namespaces/%s/serviceaccounts/default", name);
		int rc = kube_request(admin, "GET", path, NULL, NULL, NULL, &err);
		free(path);
		if (rc == 0)
			return name;
		it_sleep_ms(20);
	}
	fail_msg("namespace %s: no default ServiceAccount after 10 s", name);
	return name;
}

void it_namespace_delete(struct kube_client *admin, const char *ns)
{
	struct kube_error err;
	struct kube_delete_options o = {.propagation_policy = "Background"};
	if (kube_delete(admin, &KUBE_NAMESPACES, NULL, ns, &o, &err) < 0 && err.code != 404)
		fprintf(stderr, "warning: delete namespace %s: %s\n", ns, err.message);
}

json_t *it_json(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	json_error_t jerr;
	json_t *o = json_loads(text, 0, &jerr);
	if (!o)
		fail_msg("test JSON does not parse: %s: %s", jerr.text, text);
	free(text);
	return o;
}

double it_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void it_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool it_wait(bool (*cond)(void *ctx), void *ctx, long timeout_ms)
{
	double until = it_now_ms() + (double)timeout_ms;
	for (;;) {
		if (cond(ctx))
			return true;
		if (it_now_ms() > until)
			return false;
		it_sleep_ms(10);
	}
}

int it_sh(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	free(cmd);
	if (rc == -1)
		return -1;
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

const char *it_source_dir(void)
{
	return SOP_SOURCE_DIR;
}

int it_sh_capture(char **out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	if (!p)
		fail_msg("cannot run %s", cmd);
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		if (strbuf_add(&sb, buf, n) < 0)
			break;
	int rc = pclose(p);
	free(cmd);
	*out = sb.buf ? strbuf_detach(&sb) : xstrdup("");
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

char *it_sh_output(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	char *out = NULL;
	int rc = it_sh_capture(&out, "%s", cmd);
	if (rc != 0)
		fail_msg("command failed (status %d): %s", rc, cmd);
	free(cmd);
	size_t len = strlen(out);
	while (len && out[len - 1] == '\n')
		out[--len] = '\0';
	return out;
}

char *it_write_kubeconfig(const char *dir, const char *name, const char *server, const char *token,
			  const char *ns)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("SOP_OPERATOR_KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	char *ca = xasprintf("%s/%s.ca.crt", dir, name);
	FILE *f = fopen(ca, "w");
	if (!f)
		fail_msg("cannot write %s", ca);
	fwrite(cfg.ca_data.data, 1, cfg.ca_data.len, f);
	fclose(f);
	char *path = xasprintf("%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s", path);
	fprintf(f,
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"clusters: [{name: k, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
		"users: [{name: u, user: {token: '%s'}}]\n"
		"contexts: [{name: c, context: {cluster: k, user: u%s%s}}]\n",
		server ? server : cfg.server, ca, token, ns ? ", namespace: " : "", ns ? ns : "");
	fclose(f);
	chmod(path, 0600);
	kube_config_release(&cfg);
	free(ca);
	return path;
}

char *it_namespaced_identity(const char *ns, const char *dir)
{
	/* The manifests as a user would apply them, moved to our namespace. */
	if (it_sh("kubectl kustomize '%s/deploy/rbac/namespace' | "
		  "sed 's/namespace: stateful-operator-system/namespace: %s/' | "
		  "kubectl apply -f - >/dev/null",
		  it_source_dir(), ns) != 0)
		fail_msg("cannot apply deploy/rbac/namespace in %s", ns);
	if (it_sh("kubectl create serviceaccount stateful-operator -n %s >/dev/null", ns) != 0)
		fail_msg("cannot create the ServiceAccount");
	/* The operator's Secrets, installed empty as deploy/ installs them: it may not create them. */
	struct kube_client *admin = it_admin_client();
	it_operator_secrets(admin, ns);
	kube_client_free(admin);
	char *token = it_sh_output("kubectl create token stateful-operator -n %s --duration=1h", ns);
	char *kc = it_write_kubeconfig(dir, "namespaced.kubeconfig", NULL, token, ns);
	free(token);
	return kc;
}

char *it_operator_token(void)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("SOP_OPERATOR_KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	if (!cfg.token)
		fail_msg("the operator kubeconfig has no token");
	char *t = xstrdup(cfg.token);
	kube_config_release(&cfg);
	return t;
}

json_t *it_events(struct kube_client *c, const char *ns, const char *field_selector)
{
	struct kube_list_options lo = {.field_selector = field_selector};
	json_t *page = NULL;
	struct kube_error err;
	if (kube_list_page(c, &KUBE_EVENTS, ns, &lo, &page, &err) < 0)
		fail_msg("list events: %s", err.message);
	json_t *items = json_incref(json_object_get(page, "items"));
	json_decref(page);
	return items;
}

static bool str_is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

static int count_ready_bound(struct kube_client *c, const char *ns, int *bound)
{
	json_t *pods = NULL, *pvcs = NULL;
	struct kube_error err;
	int ready = 0;
	*bound = 0;
	if (kube_list_all(c, &KUBE_PODS, ns, NULL, 0, &pods, NULL, &err) == 0 &&
	    kube_list_all(c, &KUBE_PVCS, ns, NULL, 0, &pvcs, NULL, &err) == 0) {
		size_t i;
		json_t *o;
		json_array_foreach(pods, i, o) ready += kube_obj_condition(o, "Ready", NULL) &&
							!kube_obj_str(o, "metadata.deletionTimestamp");
		json_array_foreach(pvcs, i, o) *bound += str_is(kube_obj_str(o, "status.phase"), "Bound");
	}
	json_decref(pods);
	json_decref(pvcs);
	return ready;
}

void it_wait_ready_and_bound(struct kube_client *c, const char *ns, int pods, int claims, long timeout_ms)
{
	double until = it_now_ms() + (double)timeout_ms;
	for (;;) {
		int bound;
		int ready = count_ready_bound(c, ns, &bound);
		if (ready == pods && bound == claims)
			return;
		if (it_now_ms() > until)
			fail_msg("%s: %d/%d pods Ready, %d/%d claims Bound after %ld ms", ns, ready, pods, bound,
				 claims, timeout_ms);
		it_sleep_ms(100);
	}
}

bool it_wait_every(bool (*cond)(void *ctx), void *ctx, long timeout_ms, long interval_ms)
{
	double until = it_now_ms() + (double)timeout_ms;
	for (;;) {
		if (cond(ctx))
			return true;
		if (it_now_ms() > until)
			return false;
		it_sleep_ms(interval_ms);
	}
}

/* ---- objects ---- */

json_t *it_get(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *name)
{
	json_t *o = NULL;
	struct kube_error err;
	if (kube_get(c, r, ns, name, &o, &err) == 0)
		return o;
	if (err.code != 404)
		fail_msg("get %s %s/%s: %s", r->plural, ns ? ns : "", name, err.message);
	return NULL;
}

json_t *it_list(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *label_selector)
{
	json_t *items = NULL;
	struct kube_error err;
	if (kube_list_all(c, r, ns, label_selector, 0, &items, NULL, &err) < 0)
		fail_msg("list %s in %s: %s", r->plural, ns ? ns : "(all)", err.message);
	return items;
}

void it_merge_patch(struct kube_client *c, const struct kube_resource *r, const char *ns, const char *name,
		    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	json_t *patch = it_json("%s", text);
	struct kube_error err;
	if (kube_patch(c, r, ns, name, NULL, KUBE_PATCH_MERGE, patch, NULL, &err) < 0)
		fail_msg("patch %s %s/%s with %s: %s", r->plural, ns ? ns : "", name, text, err.message);
	json_decref(patch);
	free(text);
}

static const char *metadata_map_get(const json_t *obj, const char *map, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(obj, "metadata"), map), key));
}

const char *it_annotation(const json_t *obj, const char *key)
{
	return metadata_map_get(obj, "annotations", key);
}

const char *it_label(const json_t *obj, const char *key)
{
	return metadata_map_get(obj, "labels", key);
}

void it_set_annotation(json_t *obj, const char *key, const char *value)
{
	json_t *meta = json_object_get(obj, "metadata");
	if (!meta)
		json_object_set_new(obj, "metadata", meta = json_object());
	json_t *ann = json_object_get(meta, "annotations");
	if (!ann)
		json_object_set_new(meta, "annotations", ann = json_object());
	json_object_set_new(ann, key, json_string(value));
}

bool it_has_finalizer(const json_t *obj, const char *finalizer)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f)
		if (str_is(json_string_value(f), finalizer))
			return true;
	return false;
}

void it_delete_all_removing_finalizer(struct kube_client *c, const struct kube_resource *r, const char *ns,
				      const char *finalizer)
{
	json_t *items = NULL;
	struct kube_error err;
	if (kube_list_all(c, r, ns, NULL, 0, &items, NULL, &err) < 0)
		return; /* a teardown: the namespace may already be gone */
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o) {
		struct kube_delete_options del = {.propagation_policy = "Background"};
		if (kube_delete(c, r, ns, kube_obj_str(o, "metadata.name"), &del, &err) < 0 && err.code != 404)
			fprintf(stderr, "warning: delete %s %s: %s\n", r->plural, kube_obj_str(o, "metadata.name"),
				err.message);
		json_t *list = json_object_get(json_object_get(o, "metadata"), "finalizers");
		for (size_t k = 0; k < json_array_size(list); k++) {
			if (!str_is(json_string_value(json_array_get(list, k)), finalizer))
				continue;
			/* test: the finalizer is still where we saw it (else the list changed meanwhile: skip). */
			json_t *patch = it_json("[{\"op\":\"test\",\"path\":\"/metadata/finalizers/%zu\",\"value\":\"%s\"},"
						"{\"op\":\"remove\",\"path\":\"/metadata/finalizers/%zu\"}]",
						k, finalizer, k);
			if (kube_patch(c, r, ns, kube_obj_str(o, "metadata.name"), NULL, KUBE_PATCH_JSON, patch, NULL,
				       &err) < 0)
				fprintf(stderr, "warning: remove finalizer %s from %s: %s\n", finalizer,
					kube_obj_str(o, "metadata.name"), err.message);
			json_decref(patch);
			break;
		}
	}
	json_decref(items);
}

static json_t *events_about(struct kube_client *c, const char *ns, const char *reason, const char *object)
{
	char *selector = object ? xasprintf("reason=%s,involvedObject.name=%s", reason, object)
				: xasprintf("reason=%s", reason);
	json_t *ev = it_events(c, ns, selector);
	free(selector);
	return ev;
}

int it_event_count(struct kube_client *c, const char *ns, const char *reason, const char *object)
{
	json_t *ev = events_about(c, ns, reason, object);
	int n = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e) {
		json_int_t count = json_integer_value(json_object_get(e, "count"));
		n += count > 0 ? (int)count : 1;
	}
	json_decref(ev);
	return n;
}

char *it_event_message(struct kube_client *c, const char *ns, const char *reason, const char *object)
{
	json_t *ev = events_about(c, ns, reason, object);
	const char *m = kube_obj_str(json_array_get(ev, 0), "message");
	char *out = m ? xstrdup(m) : NULL;
	json_decref(ev);
	return out;
}

struct event_wait {
	struct kube_client *c;
	const char *ns, *reason, *object;
};

static bool event_posted(void *ctx)
{
	struct event_wait *w = ctx;
	return it_event_count(w->c, w->ns, w->reason, w->object) > 0;
}

bool it_wait_event(struct kube_client *c, const char *ns, const char *reason, const char *object, long timeout_ms)
{
	struct event_wait w = {c, ns, reason, object};
	return it_wait(event_posted, &w, timeout_ms);
}

void it_print_events_and_failed_open(struct kube_client *c, const char *ns)
{
	json_t *ev = it_events(c, ns, NULL);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
		fprintf(stderr, "event %s %s x%lld: %s\n", kube_obj_str(e, "reason"), kube_obj_str(e, "involvedObject.name"),
			(long long)json_integer_value(json_object_get(e, "count")), kube_obj_str(e, "message"));
	json_decref(ev);
	const char *audit = getenv("LOCAL_CLUSTER_AUDIT_LOG");
	FILE *f = audit ? fopen(audit, "r") : NULL;
	if (!f)
		return;
	char *in_ns = xasprintf("/namespaces/%s/", ns);
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		if (strstr(line, "failed-open") && strstr(line, in_ns))
			fprintf(stderr, "webhook failed open: %.600s\n", line);
	}
	free(line);
	free(in_ns);
	fclose(f);
}

/* ---- manifests for the test bed ---- */

/* Calls fn(ctx, item) for each item of a comma-separated list. */
static void each_name(const char *csv, void (*fn)(void *ctx, const char *item), void *ctx)
{
	if (!csv)
		return;
	char *copy = xstrdup(csv), *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		fn(ctx, t);
	free(copy);
}

static void add_claim_template(void *ctx, const char *name)
{
	json_array_append_new(ctx, json_pack("{s:{s:s}, s:{s:[s], s:{s:{s:s}}}}", "metadata", "name", name, "spec",
					     "accessModes", "ReadWriteOnce", "resources", "requests", "storage",
					     "1Mi"));
}

json_t *it_statefulset(const char *name, int replicas, const char *policy, const char *claims)
{
	json_t *templates = json_array();
	each_name(claims, add_claim_template, templates);
	json_t *sts = json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:s, s:s, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}},"
			 " s:o}}",
			 "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata", "name", name, "spec", "replicas",
			 replicas, "serviceName", name, "podManagementPolicy", policy, "selector", "matchLabels", "app",
			 name, "template", "metadata", "labels", "app", name, "spec", "containers", "name", "c", "image",
			 "pause", "volumeClaimTemplates", templates);
	if (!sts)
		fail_msg("StatefulSet manifest %s: bad arguments", name);
	return sts;
}

static void add_mount(void *ctx, const char *name)
{
	char *path = xasprintf("/var/%s", name);
	json_array_append_new(ctx, json_pack("{s:s, s:s}", "name", name, "mountPath", path));
	free(path);
}

char *it_testbed_pod_template(const char *app, const char *outcome, const char *delay, const char *message,
			      const char *mounts)
{
	json_t *annotations = json_object();
	if (outcome)
		json_object_set_new(annotations, "testbed.stateful-operator.io/outcome", json_string(outcome));
	if (delay)
		json_object_set_new(annotations, "testbed.stateful-operator.io/delay", json_string(delay));
	if (message)
		json_object_set_new(annotations, "testbed.stateful-operator.io/message", json_string(message));
	json_t *volume_mounts = json_array();
	each_name(mounts, add_mount, volume_mounts);
	json_t *tmpl = json_pack("{s:{s:{s:s}, s:o}, s:{s:[{s:s, s:s, s:o}]}}", "metadata", "labels", "app", app,
				 "annotations", annotations, "spec", "containers", "name", "cleanup", "image", "cleanup",
				 "volumeMounts", volume_mounts);
	char *text = json_dumps(tmpl, JSON_COMPACT);
	json_decref(tmpl);
	return text;
}

/* ---- recording what the API server saw, in order ---- */

struct it_recorder {
	const struct kube_resource *r;
	char *ns;
	struct kube_client *client;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;
	json_t *records;
	char rv[64];  /* where the next watch starts */
	bool expired; /* the server no longer has rv: list again */
};

static long long rv_of(const json_t *obj)
{
	const char *rv = kube_obj_str(obj, "metadata.resourceVersion");
	return rv ? strtoll(rv, NULL, 10) : 0;
}

static void record(struct it_recorder *rec, const char *type, json_t *obj)
{
	json_t *r = json_pack("{s:s, s:I, s:f, s:O}", "type", type, "rv", (json_int_t)rv_of(obj), "at_ms",
			      it_now_ms(), "object", obj);
	pthread_mutex_lock(&rec->lock);
	json_array_append_new(rec->records, r);
	pthread_mutex_unlock(&rec->lock);
}

/* LIST: the objects there now are recorded as ADDED; the next watch starts at the list's version. */
static int recorder_list(struct it_recorder *rec, struct kube_error *err)
{
	json_t *items = NULL;
	char *rv = NULL;
	if (kube_list_all(rec->client, rec->r, rec->ns, NULL, 0, &items, &rv, err) < 0)
		return -1;
	size_t i;
	json_t *o;
	json_array_foreach(items, i, o) record(rec, "ADDED", o);
	snprintf(rec->rv, sizeof(rec->rv), "%s", rv ? rv : "");
	free(rv);
	json_decref(items);
	return 0;
}

static int on_watch_event(void *ctx, const char *type, json_t *object)
{
	struct it_recorder *rec = ctx;
	if (!strcmp(type, "ERROR")) {
		rec->expired = json_integer_value(json_object_get(object, "code")) == 410;
		return 1;
	}
	const char *rv = kube_obj_str(object, "metadata.resourceVersion");
	if (rv)
		snprintf(rec->rv, sizeof(rec->rv), "%s", rv);
	if (strcmp(type, "BOOKMARK"))
		record(rec, type, object);
	return 0;
}

static void *recorder_main(void *arg)
{
	struct it_recorder *rec = arg;
	while (!atomic_load(&rec->stop)) {
		struct kube_error err;
		if (rec->expired) {
			/* Changes between the old version and now are lost: say so, the test may then mislead. */
			fprintf(stderr, "warning: recorder of %s in %s: watch expired, listing again\n", rec->r->plural,
				rec->ns);
			rec->expired = false;
			if (recorder_list(rec, &err) < 0) {
				rec->expired = true;
				it_sleep_ms(200);
				continue;
			}
		}
		struct kube_watch_options o = {.resource_version = rec->rv, .timeout_seconds = 300, .allow_bookmarks = true};
		int rc = kube_watch(rec->client, rec->r, rec->ns, &o, on_watch_event, rec, &rec->stop, &err);
		if (rc == KUBE_EHTTP && err.code == 410)
			rec->expired = true;
		else if (rc < 0 && !atomic_load(&rec->stop))
			it_sleep_ms(200);
	}
	return NULL;
}

struct it_recorder *it_recorder_start(const struct kube_resource *r, const char *ns)
{
	struct it_recorder *rec = xcalloc(1, sizeof(*rec));
	rec->r = r;
	rec->ns = xstrdup(ns);
	rec->client = it_admin_client();
	rec->records = json_array();
	pthread_mutex_init(&rec->lock, NULL);
	struct kube_error err;
	if (recorder_list(rec, &err) < 0)
		fail_msg("recorder: list %s in %s: %s", r->plural, ns, err.message);
	if (pthread_create(&rec->thread, NULL, recorder_main, rec))
		fail_msg("pthread_create");
	return rec;
}

json_t *it_recorder_records(struct it_recorder *rec)
{
	pthread_mutex_lock(&rec->lock);
	json_t *copy = json_deep_copy(rec->records);
	pthread_mutex_unlock(&rec->lock);
	return copy;
}

json_t *it_recorder_stop(struct it_recorder *rec)
{
	atomic_store(&rec->stop, true);
	pthread_join(rec->thread, NULL);
	json_t *records = rec->records;
	pthread_mutex_destroy(&rec->lock);
	kube_client_free(rec->client);
	free(rec->ns);
	free(rec);
	return records;
}

static bool labelled(const json_t *obj, const char *key, const char *value)
{
	if (!key)
		return true;
	const char *v = it_label(obj, key);
	return v && (!value || !strcmp(v, value));
}

static bool deleting(const json_t *record)
{
	return str_is(json_string_value(json_object_get(record, "type")), "DELETED") ||
	       kube_obj_str(json_object_get(record, "object"), "metadata.deletionTimestamp");
}

json_t *it_lives(const json_t *records, const char *label_key, const char *label_value)
{
	json_t *lives = json_array(), *by_uid = json_object();
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		json_t *obj = json_object_get(r, "object");
		const char *uid = kube_obj_str(obj, "metadata.uid");
		if (!uid || !labelled(obj, label_key, label_value))
			continue;
		json_t *life = json_object_get(by_uid, uid);
		if (!life) {
			life = json_pack("{s:s, s:s, s:O, s:O, s:I, s:O, s:I, s:f, s:I}", "uid", uid, "name",
					 kube_obj_str(obj, "metadata.name"), "first", obj, "last", obj, "added_rv",
					 json_integer_value(json_object_get(r, "rv")), "added_ms",
					 json_object_get(r, "at_ms"), "deleting_rv", (json_int_t)0, "deleting_ms", 0.0,
					 "gone_rv", (json_int_t)0);
			json_array_append_new(lives, life);
			json_object_set(by_uid, uid, life);
		}
		json_object_set(life, "last", obj);
		if (deleting(r) && !json_integer_value(json_object_get(life, "deleting_rv"))) {
			json_object_set(life, "deleting_rv", json_object_get(r, "rv"));
			json_object_set(life, "deleting_ms", json_object_get(r, "at_ms"));
		}
		if (str_is(json_string_value(json_object_get(r, "type")), "DELETED"))
			json_object_set(life, "gone_rv", json_object_get(r, "rv"));
	}
	json_decref(by_uid);
	return lives;
}

const json_t *it_life_named(const json_t *lives, const char *name)
{
	size_t i;
	json_t *l;
	json_array_foreach(lives, i, l) if (str_is(json_string_value(json_object_get(l, "name")), name)) return l;
	return NULL;
}

long long it_first_rv_where(const json_t *records, const char *uid, const char *path, const char *value)
{
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		json_t *obj = json_object_get(r, "object");
		if (str_is(kube_obj_str(obj, "metadata.uid"), uid) && str_is(kube_obj_str(obj, path), value))
			return json_integer_value(json_object_get(r, "rv"));
	}
	return 0;
}

int it_most_alive(const json_t *records, const char *label_key, const char *label_value)
{
	json_t *alive = json_object();
	int most = 0;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) {
		json_t *obj = json_object_get(r, "object");
		const char *uid = kube_obj_str(obj, "metadata.uid");
		if (!uid || !labelled(obj, label_key, label_value))
			continue;
		if (deleting(r))
			json_object_del(alive, uid);
		else
			json_object_set_new(alive, uid, json_true());
		if ((int)json_object_size(alive) > most)
			most = (int)json_object_size(alive);
	}
	json_decref(alive);
	return most;
}
