#include "runtime/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

struct leader_elector {
	struct kube_client *client;
	char *name;
	char *namespace;
	char *identity;
	long lease_ms, renew_deadline_ms, retry_ms;
	void (*on_lost)(void *ctx);
	void *ctx;

	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* signalled on stop and on a change of leadership */
	bool stop;
	bool leading;

	/* The record as last seen, and when (monotonic), to judge expiry locally. */
	char *observed_rv;
	double observed_ms;
	bool held_by_other; /* the last attempt found another live holder */
};

char *leader_default_identity(void)
{
	const char *pod = getenv("POD_NAME");
	char host[256] = "unknown";
	if (!pod || !*pod) {
		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		pod = host;
	}
	unsigned char rnd[6] = {0};
	FILE *f = fopen("/dev/urandom", "r");
	if (!f || fread(rnd, 1, sizeof(rnd), f) != sizeof(rnd)) {
		/* No urandom: the pid and the clock still tell processes apart. */
		uint64_t x = clock_mono_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(rnd, &x, sizeof(rnd));
	}
	if (f)
		fclose(f);
	return xasprintf("%s_%02x%02x%02x%02x%02x%02x", pod, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
			 rnd[5]);
}

struct leader_elector *leader_new(struct kube_client *client, const struct leader_options *o)
{
	struct leader_elector *le = xcalloc(1, sizeof(*le));
	le->client = client;
	le->name = xstrdup(o->lease_name);
	le->namespace = xstrdup(o->namespace);
	le->identity = xstrdup(o->identity);
	le->lease_ms = o->lease_duration_ms > 0 ? o->lease_duration_ms : 15000;
	le->renew_deadline_ms = o->renew_deadline_ms > 0 ? o->renew_deadline_ms : 10000;
	le->retry_ms = o->retry_period_ms > 0 ? o->retry_period_ms : 2000;
	le->on_lost = o->on_lost;
	le->ctx = o->ctx;
	pthread_mutex_init(&le->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&le->cond, &ca);
	pthread_condattr_destroy(&ca);
	return le;
}

/* Kubernetes MicroTime: RFC 3339 with microseconds, UTC. */
static void micro_time(char *buf, size_t len)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06ldZ", ts.tv_nsec / 1000);
}

static bool stopping(struct leader_elector *le)
{
	pthread_mutex_lock(&le->lock);
	bool s = le->stop;
	pthread_mutex_unlock(&le->lock);
	return s;
}

static void set_leading(struct leader_elector *le, bool leading)
{
	pthread_mutex_lock(&le->lock);
	le->leading = leading;
	pthread_cond_broadcast(&le->cond);
	pthread_mutex_unlock(&le->lock);
}

/* Waits ms, or less when stopped. */
static void pause_ms(struct leader_elector *le, long ms)
{
	struct timespec until = clock_mono_deadline(ms);
	pthread_mutex_lock(&le->lock);
	while (!le->stop && pthread_cond_timedwait(&le->cond, &le->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&le->lock);
}

static json_t *new_lease(struct leader_elector *le, const char *now)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:I, s:s, s:s, s:i}}", "apiVersion",
			 "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", le->name,
			 "namespace", le->namespace, "spec", "holderIdentity", le->identity,
			 "leaseDurationSeconds", (json_int_t)(le->lease_ms / 1000), "acquireTime", now,
			 "renewTime", now, "leaseTransitions", 0);
}

static void observe(struct leader_elector *le, const json_t *lease)
{
	const char *rv = kube_obj_str(lease, "metadata.resourceVersion");
	if (!le->observed_rv || !rv || strcmp(le->observed_rv, rv)) {
		free(le->observed_rv);
		le->observed_rv = rv ? xstrdup(rv) : NULL;
		le->observed_ms = clock_mono_ms();
	}
}

/* One attempt to take or renew the Lease. Returns true when we hold it now. */
static bool try_acquire_or_renew(struct leader_elector *le)
{
	char now[40];
	micro_time(now, sizeof(now));
	struct kube_error err;
	json_t *lease = NULL;
	int rc = kube_get(le->client, &KUBE_LEASES, le->namespace, le->name, &lease, &err);
	if (rc < 0 && err.code == 404) {
		json_t *fresh = new_lease(le, now);
		json_t *created = NULL;
		rc = kube_create(le->client, &KUBE_LEASES, le->namespace, fresh, &created, &err);
		json_decref(fresh);
		if (rc < 0) {
			log_debug("leader", "create Lease %s/%s: %s", le->namespace, le->name, err.message);
			return false;
		}
		observe(le, created);
		json_decref(created);
		return true;
	}
	if (rc < 0) {
		log_warn("leader", "get Lease %s/%s: %s", le->namespace, le->name, err.message);
		return false;
	}
	observe(le, lease);
	json_t *spec = json_object_get(lease, "spec");
	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(lease, "spec", spec);
	}
	const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
	bool mine = holder && !strcmp(holder, le->identity);
	le->held_by_other = holder && *holder && !mine &&
			    le->observed_ms + (double)le->lease_ms > clock_mono_ms();
	if (le->held_by_other) {
		json_decref(lease);
		return false;
	}
	if (!mine) {
		json_int_t transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
		json_object_set_new(spec, "leaseTransitions", json_integer(transitions + 1));
		json_object_set_new(spec, "acquireTime", json_string(now));
	}
	json_object_set_new(spec, "holderIdentity", json_string(le->identity));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(le->lease_ms / 1000));
	json_object_set_new(spec, "renewTime", json_string(now));
	json_t *updated = NULL;
	/* The PUT carries the resourceVersion we read: a competing writer makes it conflict. */
	rc = kube_replace(le->client, &KUBE_LEASES, le->namespace, le->name, NULL, lease, &updated, &err);
	json_decref(lease);
	if (rc < 0) {
		log_debug("leader", "update Lease %s/%s: %s", le->namespace, le->name, err.message);
		return false;
	}
	observe(le, updated);
	json_decref(updated);
	return true;
}

/* Gives the Lease up so a standby need not wait for it to expire. */
static void release(struct leader_elector *le)
{
	struct kube_error err;
	json_t *lease = NULL;
	if (kube_get(le->client, &KUBE_LEASES, le->namespace, le->name, &lease, &err) < 0) {
		/* Standbys then wait for it to expire (an uninstall deletes the RBAC while pods stop). */
		log_warn("leader", "release Lease %s/%s: %s; it expires by itself", le->namespace, le->name,
			 err.message);
		return;
	}
	const char *holder = kube_obj_str(lease, "spec.holderIdentity");
	if (holder && !strcmp(holder, le->identity)) {
		char now[40];
		micro_time(now, sizeof(now));
		json_t *spec = json_object_get(lease, "spec");
		json_object_set_new(spec, "holderIdentity", json_string(""));
		json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
		json_object_set_new(spec, "renewTime", json_string(now));
		json_object_set_new(spec, "acquireTime", json_string(now));
		if (kube_replace(le->client, &KUBE_LEASES, le->namespace, le->name, NULL, lease, NULL,
				 &err) < 0)
			log_warn("leader", "release Lease %s/%s: %s", le->namespace, le->name, err.message);
		else
			log_info("leader", "released Lease %s/%s", le->namespace, le->name);
	}
	json_decref(lease);
}

/*
 * A standby tries every retry period, and also right when the holder's
 * Lease would expire if that comes first, so a dead leader is replaced
 * within the lease duration plus one retry period. No jitter: there are
 * a handful of replicas, not a herd.
 */
static long next_try_ms(const struct leader_elector *le)
{
	if (!le->held_by_other)
		return le->retry_ms;
	double left = le->observed_ms + (double)le->lease_ms - clock_mono_ms();
	if (left >= (double)le->retry_ms)
		return le->retry_ms;
	return left > 0 ? (long)left + 5 : 5;
}

static void *run(void *arg)
{
	struct leader_elector *le = arg;
	log_info("leader", "%s: waiting for Lease %s/%s", le->identity, le->namespace, le->name);
	while (!stopping(le) && !try_acquire_or_renew(le))
		pause_ms(le, next_try_ms(le));
	if (stopping(le))
		return NULL;
	log_info("leader", "%s: became leader (Lease %s/%s)", le->identity, le->namespace, le->name);
	set_leading(le, true);

	/* Renew every retry period; give up when no renewal succeeded within the deadline. */
	double last_renew = clock_mono_ms();
	for (;;) {
		double left = last_renew + (double)le->renew_deadline_ms - clock_mono_ms();
		pause_ms(le, left < (double)le->retry_ms ? (left > 0 ? (long)left : 0) : le->retry_ms);
		if (stopping(le)) {
			release(le);
			set_leading(le, false);
			return NULL;
		}
		if (try_acquire_or_renew(le)) {
			last_renew = clock_mono_ms();
			continue;
		}
		if (clock_mono_ms() - last_renew >= (double)le->renew_deadline_ms) {
			log_error("leader", "%s: lost Lease %s/%s (no renewal for %ld ms)", le->identity,
				  le->namespace, le->name, le->renew_deadline_ms);
			set_leading(le, false);
			if (le->on_lost)
				le->on_lost(le->ctx);
			return NULL;
		}
	}
}

int leader_start(struct leader_elector *le)
{
	if (pthread_create(&le->thread, NULL, run, le))
		return -1;
	le->started = true;
	return 0;
}

void leader_request_stop(struct leader_elector *le)
{
	pthread_mutex_lock(&le->lock);
	le->stop = true;
	pthread_cond_broadcast(&le->cond);
	pthread_mutex_unlock(&le->lock);
}

void leader_stop(struct leader_elector *le)
{
	if (!le->started)
		return;
	leader_request_stop(le);
	pthread_join(le->thread, NULL);
	le->started = false;
}

void leader_free(struct leader_elector *le)
{
	if (!le)
		return;
	leader_stop(le);
	pthread_mutex_destroy(&le->lock);
	pthread_cond_destroy(&le->cond);
	free(le->observed_rv);
	free(le->name);
	free(le->namespace);
	free(le->identity);
	free(le);
}

bool leader_is_leader(struct leader_elector *le)
{
	pthread_mutex_lock(&le->lock);
	bool l = le->leading;
	pthread_mutex_unlock(&le->lock);
	return l;
}

bool leader_wait(struct leader_elector *le)
{
	pthread_mutex_lock(&le->lock);
	while (!le->leading && !le->stop)
		pthread_cond_wait(&le->cond, &le->lock);
	bool l = le->leading;
	pthread_mutex_unlock(&le->lock);
	return l;
}
