/*
 * The autoresize controller: grows volumes before they fill up. Every
 * interval, one poll: from the caches, the StatefulSets (and
 * StatefulClusters) that a policy covers (autoresize_rule.h: their own,
 * or, in cluster scope, their Namespace's or StorageClass's), the nodes
 * their pods run on; one usage read per node (or one Prometheus query);
 * then per template a decision. A growth of a StatefulSet's template is
 * the resize annotation, written with the time of the growth in one
 * patch, so the resize controller carries it out like any other resize
 * (in place, or by copy where the policy allows it), crash-safe, and the
 * template stays in step. A StatefulCluster's template is its own to
 * change; its claims are then expanded in place by this controller.
 *
 * Events: AutoResizeTriggered (with the usage that triggered it),
 * AutoResizeRecommended (recommend-only), AutoResizeAtMaximum,
 * AutoResizeNotPossible, AutoResizePolicyInvalid (on the Namespace or
 * StorageClass when its policy is the one refused), UsageUnavailable,
 * UsageAvailable. Each Warning is said once per change, not every poll.
 * The usage read is published on each claim the poll covers
 * (usage_published.h), for `kubectl stateful status`.
 * Metrics: stateful_operator_volume_usage_ratio{persistentvolumeclaim_namespace,persistentvolumeclaim},
 * stateful_operator_autoresizes_total{mode}, stateful_operator_usage_reads_total{source,result},
 * stateful_operator_usage_requests_total{source}.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_CONTROLLER_H
#define SOP_CONTROLLERS_AUTORESIZE_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "controllers/autoresize/usage_source.h"
#include "controllers/controller_deps.h"
#include "runtime/controller.h"
#include "runtime/metrics.h"

struct autoresize_deps {
	struct controller_deps base;
	struct usage_source_options source;
	int64_t interval_ms;
	bool recommend_only;   /* --autoresize-recommend-only: Events and metrics only */
	bool cluster_scope;    /* Nodes, StorageClasses and Namespaces can be read (not in namespace scope) */
	bool with_clusters;    /* the StatefulCluster API is installed and its controller runs */
	int kubelet_port;      /* where no Node says it (namespace scope) */
};

/*
 * Registers the caches it reads; NULL and *err (new) when the source
 * cannot be set up. deps->source's strings are borrowed during the call only.
 */
struct controller *autoresize_controller_new(const struct autoresize_deps *deps, char **err);

/*
 * Registers the controller's metric families on m (a second call returns
 * the same ones): the controller's, and the exposition test's.
 */
void autoresize_register_metrics(struct metrics *m, struct metric_family **usage_ratio,
				 struct metric_family **autoresizes, struct metric_family **reads,
				 struct metric_family **requests);


#endif
