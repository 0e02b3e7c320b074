#include "observability.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/resize/resize_state.h"
#include "process_metrics.h"
#include "runtime/controller.h"
#include "runtime/http_server.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

struct observability {
	struct metrics *metrics;
	struct http_server *metrics_server;
	struct http_server *probe_server; /* the same as metrics_server when the addresses are equal */
	struct kube_client *client;
	struct manager *manager;
	struct leader_elector *leader;

	struct metric_family *api_requests, *api_duration;
	struct metric_family *reconciles, *reconcile_errors, *reconcile_duration, *reaction;
	struct metric_family *queue_depth, *queue_adds, *queue_retries, *queue_latency, *queue_work,
		*queue_longest, *queue_unfinished;
	struct metric_family *build_info;
	struct metric_family *copy_pass;
	struct process_metrics process;
	struct metric_family *watch_restarts, *informer_events, *informer_lists, *informer_objects,
		*informer_synced, *informer_refused;
	struct metric_family *leader_gauge;
	struct metric_family *resize_in_flight;
	struct metric_family *outcomes[16];
	int noutcomes;
};

/* The client's observer: every API request, by verb and HTTP code (0 = no answer). */
static void count_request(void *ctx, const char *verb, long code, double seconds)
{
	struct observability *o = ctx;
	char code_s[16];
	snprintf(code_s, sizeof(code_s), "%ld", code);
	metric_add(o->api_requests, 1, METRIC_LABELS(verb, code_s));
	if (strcmp(verb, "GET") && strcmp(verb, "WATCH"))
		controller_note_write(clock_mono_ns() - (uint64_t)(seconds * 1e9));
	if (strcmp(verb, "WATCH")) /* a watch's duration is its lifetime, not a latency */
		metric_observe(o->api_duration, seconds, METRIC_LABELS(verb));
}

/*
 * Each StatefulSet's resize at work, by age: refilled at every scrape, so a
 * resize that ends (or a set that goes) drops out. One series per set with
 * a resize under way, at most. Reads only the sets with a resize state,
 * through the index the resize controller adds; without that controller
 * nothing is under way.
 */
static void collect_resizes(struct observability *o, struct informer *statefulsets)
{
	struct store *s = informer_store(statefulsets);
	metric_reset(o->resize_in_flight);
	if (!store_has_index(s, RESIZE_STATE_INDEX))
		return;
	json_t *all = store_by_index(s, RESIZE_STATE_INDEX, RESIZE_STATE_INDEX_VALUE);
	long long now_s = clock_wall_ms() / 1000;
	size_t i;
	json_t *sts;
	json_array_foreach(all, i, sts) {
		const char *ns = kube_obj_str(sts, "metadata.namespace");
		const char *name = kube_obj_str(sts, "metadata.name");
		double age = resize_state_in_flight_seconds(sts, now_s);
		if (ns && name && age >= 0)
			metric_set(o->resize_in_flight, age, METRIC_LABELS(ns, name));
	}
	json_decref(all);
}

/* A histogram kept by a controller or its queue, as family{controller or name=name}. */
static void mirror(struct metric_family *f, const struct duration_snapshot *d, const char *name)
{
	metric_histogram_set(f, d->counts, DURATION_HISTOGRAM_COUNTS, d->sum_seconds, METRIC_LABELS(name));
}

/* At scrape time: copy the live stats of informers, queues and controllers. */
static void collect(void *ctx, struct metrics *m)
{
	(void)m;
	struct observability *o = ctx;
	for (int i = 0; i < manager_informer_count(o->manager); i++) {
		struct informer *inf = manager_informer_at(o->manager, i);
		const char *res = informer_resource(inf)->plural;
		struct informer_stats st;
		informer_get_stats(inf, &st);
		metric_set(o->watch_restarts, (double)st.watch_restarts, METRIC_LABELS(res));
		metric_set(o->informer_events, (double)st.events, METRIC_LABELS(res));
		metric_set(o->informer_refused, (double)st.refused, METRIC_LABELS(res));
		metric_set(o->informer_lists, (double)st.lists, METRIC_LABELS(res));
		metric_set(o->informer_objects, (double)store_len(informer_store(inf)), METRIC_LABELS(res));
		metric_set(o->informer_synced, informer_has_synced(inf) ? 1 : 0, METRIC_LABELS(res));
		if (informer_resource(inf) == &KUBE_STATEFULSETS)
			collect_resizes(o, inf);
	}
	for (int i = 0; i < manager_controller_count(o->manager); i++) {
		struct controller *c = manager_controller_at(o->manager, i);
		const char *name = controller_name(c);
		struct controller_stats cs;
		controller_get_stats(c, &cs);
		for (int r = 0; r < RECONCILE_RESULTS; r++)
			metric_set(o->reconciles, (double)cs.by_result[r],
				   METRIC_LABELS(name, reconcile_result_name((enum reconcile_result)r)));
		metric_set(o->reconcile_errors, (double)cs.errors, METRIC_LABELS(name));
		mirror(o->reconcile_duration, &cs.duration, name);
		mirror(o->reaction, &cs.reaction, name);
		struct workqueue_stats ws;
		workqueue_stats(controller_queue(c), &ws);
		metric_set(o->queue_depth, (double)ws.depth, METRIC_LABELS(name));
		metric_set(o->queue_adds, (double)ws.adds_total, METRIC_LABELS(name));
		metric_set(o->queue_retries, (double)ws.retries_total, METRIC_LABELS(name));
		mirror(o->queue_latency, &ws.queue_latency, name);
		mirror(o->queue_work, &ws.work_duration, name);
		metric_set(o->queue_longest, (double)ws.longest_running_ns / 1e9, METRIC_LABELS(name));
		metric_set(o->queue_unfinished, (double)ws.unfinished_work_ns / 1e9, METRIC_LABELS(name));
	}
	if (o->leader)
		metric_set(o->leader_gauge, leader_is_leader(o->leader) ? 1 : 0, METRIC_NO_LABELS);
}

/* The controllers' outcome counters: name, help. */
static const char *const outcome[][2] = {
	{"stateful_operator_resizes_started_total", "Volume resizes started."},
	{"stateful_operator_resizes_completed_total", "Volume resizes completed."},
	{"stateful_operator_resizes_failed_total", "Volume resizes that ended in failure."},
	{"stateful_operator_copy_bytes_total", "Bytes copied by copy Jobs."},
	{"stateful_operator_copies_verified_total", "Replica copies (copy Jobs) whose verification passed."},
	{"stateful_operator_cleanups_started_total", "Scale-down cleanup pods started."},
	{"stateful_operator_cleanups_succeeded_total", "Scale-down cleanups that succeeded."},
	{"stateful_operator_cleanups_failed_total", "Scale-down cleanups that failed."},
	{"stateful_operator_cleanups_given_up_total",
	 "Scale-down cleanups given up after their last attempt failed (claims kept, no retry)."},
	{"stateful_operator_cluster_member_replacements_total",
	 "StatefulCluster members replaced by a new identity."},
};


static void register_families(struct observability *o)
{
	struct metrics *m = o->metrics;
	const char *const *verb_code = METRIC_LABELS("verb", "code");
	const char *const *controller = METRIC_LABELS("controller");
	const char *const *queue = METRIC_LABELS("name");
	const char *const *resource = METRIC_LABELS("resource");
	o->api_requests = metrics_counter(m, "stateful_operator_api_requests_total",
					  "Kubernetes API requests, by verb and HTTP code (0: no answer).",
					  verb_code);
	o->api_duration = metrics_histogram(m, "stateful_operator_api_request_duration_seconds",
					    "Latency of Kubernetes API requests (watches excluded).",
					    METRIC_LABELS("verb"));
	/*
	 * What controller-runtime and client-go's work queue measure, under
	 * their names and labels (docs/monitoring.md), so that stock
	 * controller dashboards and alerts read them as they are.
	 */
	o->reconciles = metrics_counter(m, "controller_runtime_reconcile_total",
					"Reconciles run, by controller and result (success, error, requeue, "
					"requeue_after).",
					METRIC_LABELS("controller", "result"));
	o->reconcile_errors = metrics_counter(m, "controller_runtime_reconcile_errors_total",
					      "Reconciles that failed and were retried with backoff.", controller);
	o->reconcile_duration = metrics_histogram(m, "controller_runtime_reconcile_time_seconds",
						  "Time spent in each reconcile.", controller);
	o->queue_depth = metrics_gauge(m, "workqueue_depth", "Keys waiting in the work queue.", queue);
	o->queue_adds = metrics_counter(m, "workqueue_adds_total", "Keys added to the work queue.", queue);
	o->queue_retries = metrics_counter(m, "workqueue_retries_total",
					   "Keys re-added with backoff after a failure.", queue);
	o->queue_latency = metrics_histogram(m, "workqueue_queue_duration_seconds",
					     "Time keys waited in the queue before a worker took them.", queue);
	o->queue_work = metrics_histogram(m, "workqueue_work_duration_seconds", "Time workers spent on a key.",
					  queue);
	o->queue_longest = metrics_gauge(m, "workqueue_longest_running_processor_seconds",
					 "How long the oldest key in work has been in work.", queue);
	o->queue_unfinished = metrics_gauge(m, "workqueue_unfinished_work_seconds",
					    "Summed age of the keys in work, not yet in work_duration.", queue);

	/* Ours alone. */
	o->reaction = metrics_histogram(m, "stateful_operator_reaction_seconds",
					"From a key being queued (a watch event, a requeue, a retry) to the first write "
					"of the reconcile that took it, for reconciles that wrote.",
					controller);
	o->watch_restarts = metrics_counter(m, "stateful_operator_watch_restarts_total",
					    "Watches that ended and were opened again.", resource);
	o->informer_events = metrics_counter(m, "stateful_operator_informer_events_total",
					     "Watch events applied to the cache.", resource);
	o->informer_refused = metrics_counter(m, "stateful_operator_informer_objects_refused_total",
					      "Objects left out of the cache because parsing them would pass the "
					      "memory budget (each time: a relist counts again).",
					      resource);
	o->informer_lists = metrics_counter(m, "stateful_operator_informer_lists_total",
					    "Full LISTs (at start and after 410 Gone).", resource);
	o->informer_objects = metrics_gauge(m, "stateful_operator_informer_objects",
					    "Objects in the cache.", resource);
	o->informer_synced = metrics_gauge(m, "stateful_operator_informer_synced",
					   "1 once the cache has synced.", resource);
	/* Not "namespace": Prometheus would rename it, the target's own namespace label wins. */
	o->resize_in_flight = metrics_gauge(m, "stateful_operator_resize_in_flight_seconds",
					    "Age of each StatefulSet's resize under way, from its start (Failed and "
					    "Cleaning are not under way).",
					    METRIC_LABELS("statefulset_namespace", "statefulset"));
	o->copy_pass = metrics_histogram_bounds(m, "stateful_operator_copy_pass_duration_seconds",
						"Copy passes of a resize by copy, from the first copy Job's start to "
						"the last one's completion, by pass (precopy, full, delta).",
						METRIC_LABELS("pass"), metrics_long_bounds, METRICS_LONG_BUCKETS);
	/* Every pass from the start, at 0, so that the family and rate() are there before the first copy. */
	const uint64_t none[METRICS_LONG_BUCKETS + 1] = {0};
	const char *const passes[] = {"precopy", "full", "delta"};
	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++)
		metric_histogram_set(o->copy_pass, none, METRICS_LONG_BUCKETS + 1, 0, METRIC_LABELS(passes[i]));
	o->build_info = metrics_gauge(
m, "stateful_operator_build_info",
				      "Always 1: the version and git commit the operator was built from.",
				      METRIC_LABELS("version", "commit"));
	process_metrics_register(m, &o->process);
	if (o->leader)
		o->leader_gauge = metrics_gauge(m, "stateful_operator_leader",
						"1 while this replica holds the Lease.", METRIC_NO_LABELS);
	/*
	 * The controllers' own outcome counters. They start at 0 so that
	 * rate() and increase() work from the first scrape.
	 */
	_Static_assert(sizeof(outcome) / sizeof(outcome[0]) <= sizeof(o->outcomes) / sizeof(o->outcomes[0]),
		       "room for every outcome counter");
	for (size_t i = 0; i < sizeof(outcome) / sizeof(outcome[0]); i++) {
		o->outcomes[o->noutcomes] = metrics_counter(m, outcome[i][0], outcome[i][1], METRIC_NO_LABELS);
		metric_add(o->outcomes[o->noutcomes++], 0, METRIC_NO_LABELS);
	}
}

static int serve_metrics(void *ctx, const struct http_request *req, const char **content_type,
			 char **body)
{
	(void)req;
	struct observability *o = ctx;
	*content_type = METRICS_CONTENT_TYPE;
	*body = metrics_render(o->metrics);
	return 200;
}

static int serve_healthz(void *ctx, const struct http_request *req, const char **content_type,
			 char **body)
{
	(void)ctx, (void)req;
	*content_type = "text/plain; charset=utf-8";
	*body = xstrdup("ok\n");
	return 200;
}

static int serve_readyz(void *ctx, const struct http_request *req, const char **content_type,
			char **body)
{
	(void)req;
	struct observability *o = ctx;
	const char *why;
	bool ready = manager_ready(o->manager, &why);
	*content_type = "text/plain; charset=utf-8";
	*body = xasprintf("%s\n", why);
	return ready ? 200 : 503;
}

struct observability *observability_start(const char *metrics_address, const char *probe_address,
					  struct kube_client *client, struct manager *manager,
					  struct leader_elector *leader, char **err)
{
	struct observability *o = xcalloc(1, sizeof(*o));
	o->client = client;
	o->manager = manager;
	o->leader = leader;
	o->metrics = metrics_new();
	register_families(o);
	metrics_add_collector(o->metrics, collect, o);

	o->metrics_server = http_server_start(metrics_address, err);
	if (!o->metrics_server) {
		char *e = xasprintf("--metrics-bind-address: %s", *err);
		free(*err);
		*err = e;
		goto fail;
	}
	if (!strcmp(metrics_address, probe_address) && strcmp(metrics_address, "0")) {
		o->probe_server = o->metrics_server;
	} else {
		o->probe_server = http_server_start(probe_address, err);
		if (!o->probe_server) {
			char *e = xasprintf("--health-probe-bind-address: %s", *err);
			free(*err);
			*err = e;
			goto fail;
		}
	}
	http_server_handle(o->metrics_server, "/metrics", serve_metrics, o);
	http_server_handle(o->probe_server, "/healthz", serve_healthz, o);
	http_server_handle(o->probe_server, "/readyz", serve_readyz, o);
	kube_client_set_observer(client, count_request, o);
	if (http_server_enabled(o->metrics_server))
		log_info("main", "metrics on %s (port %d)", metrics_address,
			 http_server_port(o->metrics_server));
	if (http_server_enabled(o->probe_server))
		log_info("main", "health probes on %s (port %d)", probe_address,
			 http_server_port(o->probe_server));
	return o;
fail:
	observability_stop(o);
	return NULL;
}

void observability_stop_serving(struct observability *o)
{
	if (!o)
		return;
	if (o->client)
		kube_client_set_observer(o->client, NULL, NULL);
	o->client = NULL;
	if (o->probe_server != o->metrics_server)
		http_server_stop(o->probe_server);
	http_server_stop(o->metrics_server);
	o->probe_server = o->metrics_server = NULL;
}

void observability_stop(struct observability *o)
{
	if (!o)
		return;
	observability_stop_serving(o);
	metrics_free(o->metrics);
	free(o);
}

void observability_observe(void *obs, const char *family, const char *label, double v)
{
	struct observability *o = obs;
	if (!strcmp(family, "stateful_operator_copy_pass_duration_seconds"))
		metric_observe(o->copy_pass, v, METRIC_LABELS(label));
}

void observability_build_info(
struct observability *o, const char *version, const char *commit)
{
	metric_set(o->build_info, 1, METRIC_LABELS(version, commit));
}

void observability_count(void *obs, const char *family, double v)
{
	struct observability *o = obs;
	for (int i = 0; i < o->noutcomes; i++)
		if (!strcmp(outcome[i][0], family))
			metric_add(o->outcomes[i], v, METRIC_NO_LABELS);
}

struct metrics *observability_metrics(struct observability *o)
{
	return o->metrics;
}

int observability_metrics_port(const struct observability *o)
{
	return o->metrics_server ? http_server_port(o->metrics_server) : 0;
}

int observability_probe_port(const struct observability *o)
{
	return o->probe_server ? http_server_port(o->probe_server) : 0;
}
