/*
 * The operator behind the fault proxy (fault_proxy.h): the proxy started in
 * front of the test bed's API server, and a kubeconfig for the operator's
 * ServiceAccount that goes through it.
 */
#ifndef SOP_IT_FAULT_STEPS_H
#define SOP_IT_FAULT_STEPS_H

#include "fault_proxy.h"

/*
 * Starts the proxy with plan and writes dir/via-faults.kubeconfig (its
 * path in *kubeconfig, a new string); any failure fails the test.
 */
struct fault_proxy *it_fault_proxy_start(const struct fault_plan *plan, const char *dir, char **kubeconfig);

/*
 * The kinds the run surely injected (fault_surely_injected) that the proxy
 * never injected, "504, latency" (a new string), or NULL when none is
 * missing: a proxy that no longer injects a kind it should.
 */
char *it_fault_kinds_missing(struct fault_proxy *p);

#endif
