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

#endif
