#include "controllers/autoresize/autoresize_controller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "client/quantity.h"
#include "controllers/autoresize/autoresize_act.h"
#include "controllers/claim_names.h"
#include "controllers/contract.h"
#include "controllers/set_index.h"
#include "observability.h"
#include "runtime/store.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

#define POLL_KEY "autoresize/poll"

/* Index of the workloads that carry a policy: a poll reads only those. */
static size_t index_policy(const json_t *obj, char ***values)
{
	if (!autoresize_has_policy(obj))
		return 0;
	*values = xcalloc(1, sizeof(**values));
	(*values)[0] = xstrdup("1");
	return 1;
}

/* The nodes to ask: each once, with where its kubelet listens. */
static void add_node(struct autoresize_ctx *ac, struct poll *p, const json_t *pod)
{
	const char *node = kube_obj_str(pod, "spec.nodeName");
	if (!node || json_object_get(p->node_names, node))
		return;
	json_object_set_new(p->node_names, node, json_true());
	const char *address = kube_obj_str(pod, "status.hostIP");
	int port = ac->deps.kubelet_port;
	json_t *n = ac->nodes ? store_get(ac->nodes, node) : NULL;
	if (n) {
		size_t i;
		const json_t *a;
		json_array_foreach(json_object_get(json_object_get(n, "status"), "addresses"), i, a)
			if (!strcmp(kube_obj_str(a, "type") ? kube_obj_str(a, "type") : "", "InternalIP"))
				address = kube_obj_str(a, "address");
		const json_t *ep = json_object_get(json_object_get(json_object_get(n, "status"), "daemonEndpoints"),
						   "kubeletEndpoint");
		long long p2 = kube_obj_int(ep, "Port", NULL, 0);
		if (p2 > 0 && p2 < 65536)
			port = (int)p2;
	}
	if (p->nnodes == p->cap_nodes) {
		p->cap_nodes = p->cap_nodes ? 2 * p->cap_nodes : 8;
		p->nodes = xrealloc(p->nodes, (size_t)p->cap_nodes * sizeof(*p->nodes));
	}
	p->nodes[p->nnodes++] = (struct usage_node){xstrdup(node), xstrdup(address ? address : ""), port};
	json_decref(n);
}

static void collect_nodes(struct autoresize_ctx *ac, struct poll *p, const json_t *targets)
{
	size_t i;
	const json_t *w;
	json_array_foreach(targets, i, w) {
		char *key = kube_obj_key(w);
		json_t *pods = store_by_index(ac->pods, SET_INDEX, key);
		size_t j;
		const json_t *pod;
		json_array_foreach(pods, j, pod) {
			/* A pod on its way out still mounts its claims: its node still speaks for them. */
			usage_mounts_add_pod(p->mounts, pod);
			if (!kube_obj_terminating(pod))
				add_node(ac, p, pod);
		}
		json_decref(pods);
		free(key);
	}
}

static void poll_release(struct poll *p)
{
	for (int i = 0; i < p->nnodes; i++) {
		free((char *)p->nodes[i].name);
		free((char *)p->nodes[i].address);
	}
	free(p->nodes);
	json_decref(p->node_names);
	json_decref(p->mounts);
	json_decref(p->table);
	json_decref(p->errors);
}

static int reconcile(void *ctx, const char *key, long *requeue_after_ms)
{
	struct autoresize_ctx *ac = ctx;
	(void)key;
	*requeue_after_ms = (long)ac->deps.interval_ms;
	json_t *live = json_object();
	json_t *sets = autoresize_targets(ac, ac->sets, live), *clusters = autoresize_targets(ac, ac->clusters, live);
	if (ac->usage_ratio)
		metric_reset(ac->usage_ratio);
	autoresize_check_sources(ac, live);
	/* What was said of workloads and policies gone is forgotten: the memory stays what the live ones need. */
	autoresize_said_prune(&ac->said, sets, clusters, live);
	json_decref(live);
	if (!json_array_size(sets) && !json_array_size(clusters)) {
		json_decref(sets);
		json_decref(clusters);
		return 0;
	}
	struct poll p = {.table = json_object(), .errors = json_array(), .node_names = json_object(),
			 .mounts = json_object(), .now_ms = clock_wall_ms()};
	collect_nodes(ac, &p, sets);
	collect_nodes(ac, &p, clusters);
	const char *source = usage_source_kind_name(ac->deps.source.kind);
	int sent = usage_source_poll(ac->source, p.nodes, p.nnodes, p.mounts, p.table, p.errors);
	if (ac->requests)
		metric_add(ac->requests, sent, METRIC_LABELS(source));
	if (ac->reads)
		metric_add(ac->reads, 1, METRIC_LABELS(source, json_array_size(p.errors) ? "error" : "ok"));
	log_debug("autoresize", "read %zu claims' usage from %d nodes in %d requests (%zu errors)",
		  json_object_size(p.table), p.nnodes, sent, json_array_size(p.errors));
	size_t i;
	const json_t *w;
	json_array_foreach(sets, i, w)
		autoresize_consider(ac, &p, w, false);
	json_array_foreach(clusters, i, w)
		autoresize_consider(ac, &p, w, true);
	/* After the decisions: a growth is not delayed by the writes of figures. */
	autoresize_publish_usage(ac, &p);
	poll_release(&p);
	json_decref(sets);
	json_decref(clusters);
	return 0;
}

static void free_ctx(void *ctx)
{
	struct autoresize_ctx *ac = ctx;
	usage_source_free(ac->source);
	autoresize_said_release(&ac->said);
	free(ac);
}

void autoresize_register_metrics(struct metrics *m, struct metric_family **usage_ratio,
				 struct metric_family **autoresizes, struct metric_family **reads,
				 struct metric_family **requests)
{
	*usage_ratio = metrics_gauge(m, "stateful_operator_volume_usage_ratio",
				     "Used share of each volume under an autoresize policy, as df shows it (0-1).",
				     METRIC_LABELS("persistentvolumeclaim_namespace", "persistentvolumeclaim"));
	*autoresizes = metrics_counter(m, "stateful_operator_autoresizes_total",
				       "Usage-driven growths: done (mode=grow) or only recommended (mode=recommend).",
				       METRIC_LABELS("mode"));
	*reads = metrics_counter(m, "stateful_operator_usage_reads_total",
				 "Polls of the usage source, by source and result (error: some node or the "
				 "server did not answer).",
				 METRIC_LABELS("source", "result"));
	*requests = metrics_counter(m, "stateful_operator_usage_requests_total",
				    "Requests sent to the usage source (one per node, or one query, per poll).",
				    METRIC_LABELS("source"));

}

struct controller *autoresize_controller_new(const struct autoresize_deps *deps, char **err)
{
	struct autoresize_ctx *ac = xcalloc(1, sizeof(*ac));
	ac->deps = *deps;
	ac->source = usage_source_new(deps->base.client, &deps->source, err);
	if (!ac->source) {
		free(ac);
		return NULL;
	}
	/* The source copied what it keeps; the options' strings are the caller's, valid only during this call. */
	ac->deps.source = (struct usage_source_options){.kind = deps->source.kind};
	autoresize_said_init(&ac->said);
	struct manager *m = deps->base.manager;
	ac->sets = informer_store(manager_informer(m, &KUBE_STATEFULSETS));
	ac->pvcs = informer_store(manager_informer(m, &KUBE_PVCS));
	ac->pods = informer_store(manager_informer(m, &KUBE_PODS));
	if (deps->with_clusters)
		ac->clusters = informer_store(manager_informer(m, &KUBE_STATEFULCLUSTERS));
	if (deps->cluster_scope) {
		ac->classes = informer_store(manager_informer(m, &KUBE_STORAGECLASSES));
		ac->nodes = informer_store(manager_informer(m, &KUBE_NODES));
		/* Their policies cover workloads without one (autoresize_rule.h); no Role could grant them. */
		ac->namespaces = informer_store(manager_informer(m, &KUBE_NAMESPACES));
		if (!store_has_index(ac->classes, AUTORESIZE_SOURCE_INDEX))
			store_add_index(ac->classes, AUTORESIZE_SOURCE_INDEX, autoresize_index_source);
		if (!store_has_index(ac->namespaces, AUTORESIZE_SOURCE_INDEX))
			store_add_index(ac->namespaces, AUTORESIZE_SOURCE_INDEX, autoresize_index_source);
	}
	store_add_index(ac->sets, AUTORESIZE_POLICY_INDEX, index_policy);
	if (ac->clusters)
		store_add_index(ac->clusters, AUTORESIZE_POLICY_INDEX, index_policy);
	set_index_ensure(ac->pods, set_index_pod);
	set_index_ensure(ac->pvcs, set_index_claim);
	if (ac->deps.base.obs)
		autoresize_register_metrics(observability_metrics(ac->deps.base.obs), &ac->usage_ratio, &ac->autoresizes,
					    &ac->reads, &ac->requests);
	struct controller_options co = {.name = "autoresize", .workers = 1, .reconcile = reconcile, .ctx = ac,
					.free_ctx = free_ctx};
	struct controller *c = controller_new(&co);
	controller_enqueue(c, POLL_KEY);
	return c;
}
