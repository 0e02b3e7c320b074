/*
 * What an operator shows to the people who run it: the Prometheus metrics
 * (the families of SPEC section "runtime") on --metrics-bind-address, and
 * /healthz and /readyz on --health-probe-bind-address.
 *
 * /healthz: 200 while the process serves. /readyz: 200 once this replica
 * can serve (manager_ready: the caches synced, the webhook able to
 * answer), leader or standby; 503 with the reason otherwise. Leadership
 * is the metric stateful_operator_leader's (and the Lease's) to show.
 *
 * Threads: start/stop from main; the handlers run on the HTTP threads.
 */
#ifndef SOP_OBSERVABILITY_H
#define SOP_OBSERVABILITY_H

#include "client/kube_client.h"
#include "runtime/leader.h"
#include "runtime/manager.h"
#include "runtime/metrics.h"

struct observability;

/*
 * Registers the metric families, hooks the client's request observer and
 * starts the listeners. manager, client and leader (may be NULL) are
 * borrowed and must outlive it. Returns NULL and sets *err (new string)
 * when a listener cannot start.
 */
struct observability *observability_start(const char *metrics_address, const char *probe_address,
					  struct kube_client *client, struct manager *manager,
					  struct leader_elector *leader, char **err);
void observability_stop(struct observability *o);
/*
 * Stops the listeners (waiting for the requests in progress) and unhooks
 * the client, so that no scrape reads the manager's caches any more: call
 * it before manager_free(). The registry stays, for the controllers' last
 * counts, until observability_stop(). NULL is a no-op; so is a second call.
 */
void observability_stop_serving(struct observability *o);
/* The registry, for controllers' own counters. Borrowed. */
struct metrics *observability_metrics(struct observability *o);
/*
 * Adds v to one of the controllers' outcome counters (e.g.
 * "stateful_operator_resizes_started_total"). obs is a struct
 * observability: void, so that it is the reconciler's count function as it is.
 */
void observability_count(void *obs, const char *family, double v);
/*
 * Records v in one of the controllers' histograms (e.g.
 * "stateful_operator_copy_pass_duration_seconds"), label its one label's
 * value. obs as observability_count's.
 */
void observability_observe(void *obs, const char *family, const char *label, double v);
/* Sets stateful_operator_build_info{version,commit} (borrowed) to 1. */

void observability_build_info(struct observability *o, const char *version, const char *commit);


/* The ports actually bound (for ":0" in tests); 0 when disabled or stopped. */
int observability_metrics_port(const struct observability *o);
int observability_probe_port(const struct observability *o);

#endif
