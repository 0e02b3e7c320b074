/*
 * kubectl-stateful's reads against a scripted API server on loopback: a
 * copy replica's progress read from its copy pod's log (the pods/log GET
 * with container=copy and tailLines, the newest pod of the replica's copy
 * Job), the resize read from the backup ConfigMap while the StatefulSet is
 * gone, the operator check from the Lease and pods, "not found" with
 * its exit status, and every command's output over objects and Events
 * full of a tenant's escape sequences.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "loopback.h"
#include "output_capture.h"
#include "terminal_scan.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_session.h"
#include "util/xalloc.h"

/* Answers: path (without the query) -> body text; a path not listed is 404. */
struct fake {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	json_t *routes;   /* {path: text} */
	json_t *requests; /* ["path?tailLines=..&container=..&labelSelector=.."] */
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)method;
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	struct fake *f = cls;
	const char *tail = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tailLines");
	const char *container = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "container");
	const char *selector = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "labelSelector");
	pthread_mutex_lock(&f->lock);
	json_array_append_new(f->requests, json_sprintf("%s?tailLines=%s&container=%s&labelSelector=%s", url,
							 tail ? tail : "", container ? container : "",
							 selector ? selector : ""));
	const char *body = json_string_value(json_object_get(f->routes, url));
	char *copy = xstrdup(body ? body : "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"nope\"}");
	pthread_mutex_unlock(&f->lock);
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(copy), copy, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret = MHD_queue_response(conn, body ? 200 : 404, r);
	MHD_destroy_response(r);
	return ret;
}

static struct fake fake;
static struct plugin_args args;
static struct plugin_session session;

static void route(const char *path, const char *body)
{
	pthread_mutex_lock(&fake.lock);
	json_object_set_new(fake.routes, path, json_string(body));
	pthread_mutex_unlock(&fake.lock);
}

static void route_json(const char *path, json_t *obj)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	route(path, text);
	free(text);
	json_decref(obj);
}

static int setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	pthread_mutex_init(&fake.lock, NULL);
	fake.routes = json_object();
	fake.requests = json_array();
	fake.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, &fake, MHD_OPTION_END);
	if (!fake.daemon)
		return -1;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(fake.daemon, MHD_DAEMON_INFO_BIND_PORT);
	struct kube_client_options o = {.max_retries = -1};
	memset(&args, 0, sizeof(args));
	args.operator_namespace = "ops";
	memset(&session, 0, sizeof(session));
	session.client = loopback_client(info->port, &o);
	session.ns = xstrdup("db");
	session.args = &args;
	session.width = 100;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	plugin_session_close(&session);
	MHD_stop_daemon(fake.daemon);
	json_decref(fake.routes);
	json_decref(fake.requests);
	pthread_mutex_destroy(&fake.lock);
	return 0;
}

static bool requested(const char *needle)
{
	size_t i;
	json_t *r;
	json_array_foreach(fake.requests, i, r)
		if (strstr(json_string_value(r), needle))
			return true;
	return false;
}

static const char *copy_state = "{\"phase\":\"Copying\",\"strategy\":\"copy\",\"ordinals\":[1,0],\"done\":[],"
				"\"batch\":{\"ordinals\":[1],\"step\":\"Copy\"}}";

static json_t *pod(const char *name, const char *created)
{
	return json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", name, "namespace", "db", "creationTimestamp", created);
}

static void test_progress_from_the_copy_pods_log(void **state)
{
	(void)state;
	/* The set is gone mid-copy: the state is read from its backup. */
	route_json("/api/v1/namespaces/db/configmaps/web" BACKUP_SUFFIX,
		   json_pack("{s:s, s:{s:s, s:{s:s, s:s}}}", "kind", "ConfigMap", "metadata", "name", "web" BACKUP_SUFFIX,
			     "annotations", ANNOTATION_RESIZE_STATE, copy_state, ANNOTATION_RESIZE_STATUS,
			     "Copying 1/2: web-1 copying"));
	/* Two pods of the replica's Job (a retry): the newer one's log counts. */
	route_json("/api/v1/namespaces/db/pods",
		   json_pack("{s:s, s:{}, s:[o, o]}", "kind", "PodList", "metadata", "items",
			     pod("web-1-copy-old", "2025-11-24T15:00:00Z"), pod("web-1-copy-new", "2025-11-24T15:05:00Z")));
	route("/api/v1/namespaces/db/pods/web-1-copy-old/log", "SOP-PROGRESS bytes=1 files=1 totalBytes=9 totalFiles=9\n");
	route("/api/v1/namespaces/db/pods/web-1-copy-new/log",
	      "copy: counting\nSOP-PROGRESS bytes=0 files=0 totalBytes=4096 totalFiles=4\n"
	      "SOP-PROGRESS bytes=1024 files=1 totalBytes=4096 totalFiles=4\n");
	json_t *holder = NULL;
	struct resize_view v;
	assert_int_equal(plugin_open_resize(&session, "web", &v, &holder), 0);
	assert_string_equal(kube_obj_str(holder, "kind"), "ConfigMap");
	assert_true(v.active);
	assert_string_equal(v.status, "Copying 1/2: web-1 copying");
	struct progress_rate rates[2] = {{0}, {0}};
	plugin_read_copy_progress(&session, "db", "web", &v, rates, 1000);
	const struct replica_progress *r = resize_view_replica(&v, 1);
	assert_int_equal(r->stage, REPLICA_COPYING);
	assert_int_equal(r->copy.bytes, 1024);
	assert_int_equal(r->copy.total_bytes, 4096);
	assert_int_equal(r->copy.files, 1);
	assert_int_equal(resize_view_replica(&v, 0)->stage, REPLICA_WAITING);
	resize_view_release(&v);
	/* One look: the average rate since the pod started (100 s ago: about 10 B/s). */
	char started[32];
	time_t t100 = time(NULL) - 100;
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t100));
	json_t *newer = pod("web-1-copy-new", "2025-11-24T15:05:00Z");
	json_object_set_new(newer, "status", json_pack("{s:s}", "startTime", started));
	route_json("/api/v1/namespaces/db/pods", json_pack("{s:s, s:{}, s:[o, o]}", "kind", "PodList", "metadata", "items",
							   pod("web-1-copy-old", "2025-11-24T15:00:00Z"), newer));
	resize_view_read(holder, &v);
	plugin_read_copy_progress(&session, "db", "web", &v, NULL, 0);
	r = resize_view_replica(&v, 1);
	assert_true(r->per_s > 9.5 && r->per_s < 10.5);
	assert_true(requested("/api/v1/namespaces/db/pods?tailLines=&container=&labelSelector="
			      LABEL_COPY_OF "=web," LABEL_RESIZE_ORDINAL "=1"));
	assert_true(requested("/api/v1/namespaces/db/pods/web-1-copy-new/log?tailLines=20&container=copy"));
	assert_false(requested("/pods/web-1-copy-old/log"));
	resize_view_release(&v);

	/* A second reading 2 s later: the rate. */
	route("/api/v1/namespaces/db/pods/web-1-copy-new/log", "SOP-PROGRESS bytes=3072 files=3 totalBytes=4096 totalFiles=4\n");
	resize_view_read(holder, &v);
	plugin_read_copy_progress(&session, "db", "web", &v, rates, 3000);
	r = resize_view_replica(&v, 1);
	assert_int_equal(r->copy.bytes, 3072);
	assert_true(r->per_s > 1023.9 && r->per_s < 1024.1);
	resize_view_release(&v);
	json_decref(holder);

	/* No log yet (the pod is starting): the replica stays Starting. */
	route("/api/v1/namespaces/db/pods/web-1-copy-new/log", "");
	json_t *again = NULL;
	assert_int_equal(plugin_open_resize(&session, "web", &v, &again), 0);
	plugin_read_copy_progress(&session, "db", "web", &v, NULL, 0);
	assert_int_equal(resize_view_replica(&v, 1)->stage, REPLICA_STARTING);
	resize_view_release(&v);
	json_decref(again);
}

static void test_not_found(void **state)
{
	(void)state;
	/* A resize under way (web's backup, routed by the test before): a new one is refused before anything is written. */
	args.cmd = PLUGIN_RESIZE;
	args.name = "web";
	args.template_name = (char *)"data";
	assert_int_equal(quantity_parse("2Gi", &args.size, NULL), 0);
	size_t before = json_array_size(fake.requests);
	assert_int_equal(plugin_cmd_resize(&session), PLUGIN_EXIT_FAILED);
	for (size_t i = before; i < json_array_size(fake.requests); i++)
		assert_null(strstr(json_string_value(json_array_get(fake.requests, i)), "/leases/"));
	args.template_name = NULL;

	json_t *holder = NULL;
	struct resize_view v;
	assert_int_equal(plugin_open_resize(&session, "ghost", &v, &holder), PLUGIN_EXIT_USAGE);
	assert_null(holder);
	int code = 0;
	assert_null(plugin_get(&session, &KUBE_STATEFULCLUSTERS, "ghost", &code));
	assert_int_equal(code, PLUGIN_EXIT_USAGE);
}

static void test_operator_check(void **state)
{
	(void)state;
	/* No Lease, no pods: nothing would act. */
	route_json("/api/v1/namespaces/ops/pods", json_pack("{s:s, s:{}, s:[]}", "kind", "PodList", "metadata", "items"));
	assert_int_equal(plugin_require_operator(&session), PLUGIN_EXIT_NO_OPERATOR);
	assert_true(requested("/apis/coordination.k8s.io/v1/namespaces/ops/leases/stateful-operator"));
	assert_true(requested("/api/v1/namespaces/ops/pods?tailLines=&container=&labelSelector=app.kubernetes.io/name="
			      "stateful-operator"));
	/* A Lease renewed just now. */
	char now[32];
	time_t t = time(NULL);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S.000000Z", gmtime(&t));
	route_json("/apis/coordination.k8s.io/v1/namespaces/ops/leases/stateful-operator",
		   json_pack("{s:{s:s, s:s, s:i}}", "spec", "holderIdentity", "op-1", "renewTime", now,
			     "leaseDurationSeconds", 15));
	assert_int_equal(plugin_require_operator(&session), 0);
}

static json_t *event(const char *type, const char *reason, const char *message, const char *when)
{
	return json_pack("{s:{s:s, s:s}, s:s, s:s, s:s, s:s}", "involvedObject", "kind", "StatefulSet", "name", "app",
			 "type", type, "reason", reason, "message", message, "lastTimestamp", when);
}

static void events_are(json_t *items)
{
	route_json("/api/v1/namespaces/db/events", json_pack("{s:s, s:{}, s:o}", "kind", "EventList", "metadata", "items",
							     items));
}

/* How resize --wait ends: by the state (Failed) or, once it is gone, by the newest Resize* Event since the request. */
static void test_wait_ends(void **state)
{
	(void)state;
	const long long since = 1764000000LL; /* 2025-11-24T16:00:00Z */
	route_json("/apis/apps/v1/namespaces/db/statefulsets/app",
		   json_pack("{s:s, s:{s:s, s:{s:s}}}", "kind", "StatefulSet", "metadata", "name", "app", "annotations",
			     ANNOTATION_RESIZE_STATE,
			     "{\"phase\":\"Failed\",\"strategy\":\"copy\",\"started\":\"new\",\"message\":"
			     "\"verification found differences\"}"));
	events_are(json_array());
	assert_int_equal(plugin_wait_resize(&session, "app", "old", since, NULL), PLUGIN_EXIT_FAILED);

	/* No state: a refusal after the request ends it with 1; one before it does not count. */
	route_json("/apis/apps/v1/namespaces/db/statefulsets/app",
		   json_pack("{s:s, s:{s:s}}", "kind", "StatefulSet", "metadata", "name", "app"));
	events_are(json_pack("[o, o]", event("Normal", "ResizeCompleted", "old one", "2025-11-24T15:00:00Z"),
			     event("Warning", "ResizeShrinkRefused", "smaller", "2025-11-24T16:00:01Z")));
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, NULL), PLUGIN_EXIT_FAILED);
	events_are(json_pack("[o, o]", event("Warning", "ResizeShrinkRefused", "old refusal", "2025-11-24T15:59:00Z"),
			     event("Normal", "ResizeCompleted", "done", "2025-11-24T16:00:05Z")));
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, NULL), PLUGIN_EXIT_OK);
	/*
	 * An earlier resize's abort in the request's own second is there before
	 * the request: not this one's end (the refusal that follows is).
	 */
	json_t *aborted = event("Warning", "ResizeAborted", "earlier", "2025-11-24T16:00:00Z");
	json_object_set_new(aborted, "metadata", json_pack("{s:s}", "name", "app.abort"));
	json_object_set_new(aborted, "count", json_integer(1));
	events_are(json_pack("[O]", aborted));
	json_t *before = plugin_resize_events_before(&session, "app");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(before, "app.abort"), "count")), 1);
	events_are(json_pack("[o, O]", event("Normal", "ResizeCompleted", "this one", "2025-11-24T16:00:00Z"), aborted));
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, before), PLUGIN_EXIT_OK);
	json_object_set_new(aborted, "count", json_integer(2)); /* aborted again: this resize */
	events_are(json_pack("[O]", aborted));
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, before), PLUGIN_EXIT_FAILED);
	json_decref(before);
	json_decref(aborted);
	/* A refusal of the request before, said again after this one: not this one's (its message would differ). */
	json_t *refused = event("Warning", "ResizeShrinkRefused", "from 2Mi to 1Mi", "2025-11-24T16:00:00Z");
	json_object_set_new(refused, "metadata", json_pack("{s:s}", "name", "app.shrink"));
	json_object_set_new(refused, "count", json_integer(3));
	events_are(json_pack("[O]", refused));
	before = plugin_resize_events_before(&session, "app");
	json_object_set_new(refused, "count", json_integer(4));
	events_are(json_pack("[o, O]", event("Normal", "ResizeCompleted", "this one", "2025-11-24T16:00:00Z"), refused));
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, before), PLUGIN_EXIT_OK);
	json_object_set_new(refused, "message", json_string("from 2Mi to 512Ki")); /* this request's own refusal */
	events_are(json_pack("[O]", refused));
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, before), PLUGIN_EXIT_FAILED);
	json_decref(before);
	json_decref(refused);
	/* Other Events (Normal, not Resize*) do not end it: --timeout does. */
	events_are(json_pack("[o, o]", event("Normal", "CopyStarted", "x", "2025-11-24T16:00:05Z"),
			     event("Warning", "CleanupFailed", "y", "2025-11-24T16:00:05Z")));
	args.timeout_ms = 1500;
	assert_int_equal(plugin_wait_resize(&session, "app", NULL, since, NULL), PLUGIN_EXIT_TIMEOUT);
	args.timeout_ms = 0;
}

/* Text a tenant writes (issue 27): a window title (OSC ... BEL), clear screen (CSI 2J, and as U+009B), RLO, DEL. */
#define DIRTY "\033]0;x\007\033[2J\xc2\x9b" "2J\xe2\x80\xae" "x\x7f"

static void run_status(void *s)
{
	plugin_cmd_status(s);
}

static void run_explain(void *s)
{
	plugin_cmd_explain(s);
}

static void run_cleanup(void *s)
{
	plugin_cmd_cleanup(s);
}

static void run_members(void *s)
{
	plugin_cmd_members(s);
}

static void run_abort(void *s)
{
	plugin_cmd_abort(s);
}

static void run_wait(void *ctx)
{
	struct plugin_session *s = ctx;
	plugin_wait_resize(s, s->args->name, NULL, 0, NULL);
}

/*
 * Every command that prints cluster text, over objects and Events a
 * tenant wrote with escapes, C1 and bidi controls in them (annotations,
 * the JSON inside them, Event reasons and messages, a member's fields, a
 * pod's phase, a Lease's holder): not one control reaches stdout or
 * stderr; on a terminal resize --wait writes only its own sequences.
 */
static void test_cluster_text_never_reaches_the_terminal_raw(void **state)
{
	(void)state;
	json_t *rs = json_pack("{s:s, s:s, s:s, s:[i], s:{s:[i], s:s}}", "phase", "Failed", "strategy", "copy", "message",
			       "why " DIRTY, "ordinals", 0, "batch", "ordinals", 0, "step", "Copy" DIRTY);
	json_t *ss = json_pack("{s:{s:{s:i, s:s}}}", "ordinals", "1", "failures", 3, "message", "exit " DIRTY);
	char *rs_text = json_dumps(rs, JSON_COMPACT), *ss_text = json_dumps(ss, JSON_COMPACT);
	json_t *sts = json_pack("{s:s, s:{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}}", "kind", "StatefulSet", "metadata", "name",
				"evil", "namespace", "db", "uid", "u-1", "annotations", ANNOTATION_RESIZE_STATUS,
				"status " DIRTY, ANNOTATION_RESIZE_STATE, rs_text, ANNOTATION_SCALEDOWN_STATUS,
				"Failed: " DIRTY, ANNOTATION_SCALEDOWN_STATE, ss_text);
	free(rs_text);
	free(ss_text);
	json_decref(rs);
	json_decref(ss);
	route_json("/apis/apps/v1/namespaces/db/statefulsets/evil", json_incref(sts));
	route_json("/apis/apps/v1/namespaces/db/statefulsets",
		   json_pack("{s:s, s:{}, s:[o]}", "kind", "StatefulSetList", "metadata", "items", sts));
	route_json("/api/v1/namespaces/db/configmaps", json_pack("{s:s, s:{}, s:[]}", "kind", "ConfigMapList", "metadata",
								 "items"));
	events_are(json_pack("[{s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:{s:s}, s:i}]", "involvedObject", "kind",
			     "StatefulSet", "name", "evil", "type", "Warning", "reason", "ResizeFailed" DIRTY, "message",
			     "msg " DIRTY, "lastTimestamp", "2025-11-24T16:00:01Z", "metadata", "name", "evil.1", "count", 1));
	route_json("/api/v1/namespaces/db/pods",
		   json_pack("{s:s, s:{}, s:[{s:{s:s, s:s, s:{s:s}}, s:{s:s}}]}", "kind", "PodList", "metadata", "items",
			     "metadata", "name", "evil-cleanup-1", "namespace", "db", "annotations",
			     ANNOTATION_CLEANUP_ORDINAL, "1", "status", "phase", "Running" DIRTY));
	json_t *stc = json_pack("{s:s, s:{s:s, s:s}, s:{s:i}, s:{s:[{s:s, s:s, s:s, s:b, s:s}], s:[{s:s, s:s, s:s}]}}",
				"kind", CLUSTER_KIND, "metadata", "name", "coder", "namespace", "db", "spec", "replicas", 1,
				"status", "members", "identity", "m-0 " DIRTY, "pod", "coder-0", "node", "n " DIRTY,
				"ready", 1, "phase", DIRTY, "conditions", "type", "ReplicaFailure", "status", "True",
				"message", "failing " DIRTY);
	char *path = kube_resource_path(&KUBE_STATEFULCLUSTERS, "db", "coder", NULL);
	route_json(path, json_incref(stc));
	free(path);
	path = kube_resource_path(&KUBE_STATEFULCLUSTERS, "db", NULL, NULL);
	route_json(path, json_pack("{s:s, s:{}, s:[o]}", "kind", "StatefulClusterList", "metadata", "items", stc));
	free(path);
	/* A Lease renewed long ago: the refusal names its holder. */
	route_json("/apis/coordination.k8s.io/v1/namespaces/ops/leases/stateful-operator",
		   json_pack("{s:{s:s, s:s, s:i}}", "spec", "holderIdentity", "op " DIRTY, "renewTime",
			     "2025-01-01T00:00:00.000000Z", "leaseDurationSeconds", 15));

	struct {
		const char *what;
		enum plugin_cmd cmd;
		enum plugin_kind kind;
		const char *name;
		enum plugin_output output;
		bool tty;
		void (*run)(void *session);
		const char *shows; /* a word that must still be there */
	} runs[] = {
		{"status", PLUGIN_STATUS, PLUGIN_KIND_NONE, NULL, PLUGIN_OUT_TABLE, false, run_status, "why "},
		{"status sts/evil", PLUGIN_STATUS, PLUGIN_KIND_STS, "evil", PLUGIN_OUT_TABLE, false, run_status, "why "},
		{"status -o json", PLUGIN_STATUS, PLUGIN_KIND_NONE, NULL, PLUGIN_OUT_JSON, false, run_status, "failing "},
		{"status -o yaml", PLUGIN_STATUS, PLUGIN_KIND_NONE, NULL, PLUGIN_OUT_YAML, false, run_status, "failing "},
		{"status stc/coder", PLUGIN_STATUS, PLUGIN_KIND_STC, "coder", PLUGIN_OUT_TABLE, false, run_status, "failing "},
		{"explain sts/evil", PLUGIN_EXPLAIN, PLUGIN_KIND_STS, "evil", PLUGIN_OUT_TABLE, false, run_explain, "msg "},
		{"cleanup sts/evil", PLUGIN_CLEANUP, PLUGIN_KIND_STS, "evil", PLUGIN_OUT_TABLE, false, run_cleanup, "exit "},
		{"members stc/coder", PLUGIN_MEMBERS, PLUGIN_KIND_STC, "coder", PLUGIN_OUT_TABLE, false, run_members, "m-0 "},
		{"members -o json", PLUGIN_MEMBERS, PLUGIN_KIND_STC, "coder", PLUGIN_OUT_JSON, false, run_members, "m-0 "},
		{"members -o yaml", PLUGIN_MEMBERS, PLUGIN_KIND_STC, "coder", PLUGIN_OUT_YAML, false, run_members, "m-0 "},
		{"abort sts/evil", PLUGIN_ABORT, PLUGIN_KIND_STS, "evil", PLUGIN_OUT_TABLE, false, run_abort, "op "},
		{"resize --wait", PLUGIN_RESIZE, PLUGIN_KIND_STS, "evil", PLUGIN_OUT_TABLE, false, run_wait, "why "},
		{"resize --wait on a terminal", PLUGIN_RESIZE, PLUGIN_KIND_STS, "evil", PLUGIN_OUT_TABLE, true, run_wait,
		 "status "},
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		args.cmd = runs[i].cmd;
		args.kind = runs[i].kind;
		args.name = runs[i].name;
		args.output = runs[i].output;
		session.tty = runs[i].tty;
		char *out = output_capture(runs[i].run, &session, true, true);
		terminal_expect_safe(runs[i].what, out, runs[i].tty);
		if (!strstr(out, runs[i].shows))
			fail_msg("%s: \"%s\" missing from:\n%s", runs[i].what, runs[i].shows, out);
		free(out);
	}
	args.cmd = PLUGIN_HELP;
	args.kind = PLUGIN_KIND_NONE;
	args.name = NULL;
	args.output = PLUGIN_OUT_TABLE;
	session.tty = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_progress_from_the_copy_pods_log),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_operator_check),
		cmocka_unit_test(test_wait_ends),
		cmocka_unit_test(test_cluster_text_never_reaches_the_terminal_raw),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
