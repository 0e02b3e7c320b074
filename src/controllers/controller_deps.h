/*
 * What every controller is given when it is made: the client, the manager
 * whose caches it reads, the Event recorder, metrics, the state seal and
 * its number of workers. All borrowed: valid while the controller runs.
 */
#ifndef SOP_CONTROLLERS_CONTROLLER_DEPS_H
#define SOP_CONTROLLERS_CONTROLLER_DEPS_H

#include "client/kube_client.h"
#include "observability.h"
#include "runtime/events.h"
#include "runtime/manager.h"

struct state_seal;

struct controller_deps {
	struct kube_client *client;
	struct manager *manager;       /* the caches come from it */
	struct event_recorder *events;
	struct observability *obs;     /* may be NULL: no metrics */
	const struct state_seal *seal; /* seals the state written, checks the state read */
	int workers;
};

#endif
