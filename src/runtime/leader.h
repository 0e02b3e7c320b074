/*
 * Leader election with a coordination.k8s.io/v1 Lease, the way client-go
 * does it: the holder renews every retry period; a candidate takes the
 * Lease once it has seen no renewal for a whole lease duration, measured
 * on its own monotonic clock from when it last saw the record change (not
 * from the holder's timestamps, so clock skew between hosts does not
 * matter). A leader that cannot renew within the renew deadline has lost
 * the Lease. On a graceful stop the leader releases the Lease (empty
 * holder), so a standby takes over within one retry period.
 *
 * Threads: the elector runs on its own thread; the callbacks run there.
 * leader_is_leader and leader_wait may be called from any thread.
 */
#ifndef SOP_RUNTIME_LEADER_H
#define SOP_RUNTIME_LEADER_H

#include <stdbool.h>

#include "client/kube_client.h"

struct leader_options {
	const char *lease_name;   /* "stateful-operator" */
	const char *namespace;
	const char *identity;     /* unique per process; see leader_default_identity */
	long lease_duration_ms;   /* default 15000 */
	long renew_deadline_ms;   /* default 10000 */
	long retry_period_ms;     /* default 2000 */
	/* Called once when the Lease is lost (not on a graceful stop). */
	void (*on_lost)(void *ctx);
	void *ctx;
};

struct leader_elector;

/*
 * client is borrowed. Give the elector a client of its own whose requests
 * are bounded in time (about the retry period, no retries): a renewal
 * stuck in a hung connection must not outlive the renew deadline.
 * Strings in opts are copied.
 */
struct leader_elector *leader_new(struct kube_client *client, const struct leader_options *opts);
/* Stops (releasing the Lease when held) and frees. NULL-safe. */
void leader_free(struct leader_elector *le);

int leader_start(struct leader_elector *le) __attribute__((warn_unused_result));
/* Asks the elector to stop; returns at once. Any thread. */
void leader_request_stop(struct leader_elector *le);
/* Stops the elector and joins it; when it holds the Lease, releases it first. */
void leader_stop(struct leader_elector *le);

bool leader_is_leader(struct leader_elector *le);
/* Blocks until this process leads (true) or the elector is stopped (false). */
bool leader_wait(struct leader_elector *le);

/* "$POD_NAME" or the host name, then "_" and random hex. New string. */
char *leader_default_identity(void);

#endif
