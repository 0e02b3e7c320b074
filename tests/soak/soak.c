/*
 * The chaos soak: on the test bed, behind the fault proxy (10 % of the
 * operator's requests fail, fault_proxy.h), many operations at once
 * (soak_ops.h: in-place resizes, copy resizes rolling, offline and
 * aborted, scale-downs with cleanups that succeed or fail, StatefulCluster
 * scaling down, and up with a member failing), while the operator is
 * killed with SIGKILL at seeded moments and started again, one replica or
 * two under leader election (with two, sometimes only one of them is
 * killed). At the end the invariants of soak_checks.h
 * are read from the cluster's own state and from watch records, with the
 * proxy's record of writes repeated after an unknown outcome without a
 * precondition, and the figures printed: operations per minute, faults
 * injected by kind, kills survived, violations (goal: 0).
 *
 *   SOP_SOAK_SECONDS   how long operations are started (default 150)
 *   SOP_SOAK_SEED      the seed of everything random (default: fixed, so
 *                      `make test` runs the same soak; `make soak` passes a
 *                      new one); a failing run replays from it
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "daemon.h"
#include "fault_steps.h"
#include "itest.h"
#include "soak_checks.h"
#include "soak_ops.h"
#include "util/xalloc.h"

#define DEFAULT_SECONDS 150
#define DEFAULT_SEED 20261125ULL
#define FAULT_PERCENT 10
#define MAX_OPS 512
#define MAX_IN_FLIGHT 6
#define SETTLE_MS 300000L /* after the last start: time for what is in flight to end */

struct soak {
	struct kube_client *admin;
	char *ns, *kubeconfig;
	uint64_t rng[3]; /* one stream each for kinds, launch times and kills: the kinds replay exactly */
	struct daemon operators[2];
	int running;
	int kills;
	int single_kills; /* of the kills, those of one replica of two (the other lived on) */
	int exits; /* leaderships lost under faults: the operator exits by design */
	json_t *violations;
	struct soak_op ops[MAX_OPS];
	int nops;
};

enum { RNG_KINDS, RNG_LAUNCH, RNG_KILL };

/* xorshift64*: the soak's own seeded sequences. */
static uint64_t next_random(struct soak *s, int stream)
{
	uint64_t *x = &s->rng[stream];
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dULL;
}

static long between(struct soak *s, int stream, long lo, long hi)
{
	return lo + (long)(next_random(s, stream) % (uint64_t)(hi - lo + 1));
}

static void start_operator(struct soak *s, int i)
{
	const char *args[] = {"--kubeconfig", s->kubeconfig, "--leader-elect", "--leader-election-namespace",
			      s->ns, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", NULL};
	daemon_start(&s->operators[i], args, NULL);
}

static void start_operators(struct soak *s, int n)
{
	for (int i = 0; i < n; i++)
		start_operator(s, i);
	s->running = n;
}

/* A lost leadership (exit 1, said in the log) is by design; any other exit of its own is a violation. */
static void judge_exit(struct soak *s, int i, int code)
{
	char *log = daemon_log(&s->operators[i]);
	if (code == 1 && strstr(log, "leadership lost")) {
		s->exits++;
	} else {
		size_t len = strlen(log);
		char *what = xasprintf("operator %d exited with %d; log tail:\n%s", i, code,
				       len > 4000 ? log + len - 4000 : log);
		json_array_append_new(s->violations, json_string(what));
		free(what);
	}
	free(log);
}

static void kill_operator(struct soak *s, int i)
{
	int code;
	if (daemon_running(&s->operators[i], &code)) {
		daemon_signal(&s->operators[i], SIGKILL);
		code = daemon_wait_exit(&s->operators[i], 10000);
		if (code != 128 + SIGKILL)
			judge_exit(s, i, code);
	} else {
		judge_exit(s, i, code); /* it had exited by itself just before */
	}
	daemon_cleanup(&s->operators[i]);
}

static void kill_operators(struct soak *s)
{
	for (int i = 0; i < s->running; i++)
		kill_operator(s, i);
	s->running = 0;
	s->kills++;
}

/*
 * A kill at a seeded moment. With two replicas, one time in three only one
 * of them (the seed picks which: the leader or the standby) is killed and
 * started again while the other lives on, so leadership passes between
 * live processes, or stays; otherwise all are killed and one or two
 * started.
 */
static void kill_at_random(struct soak *s)
{
	if (s->running == 2 && between(s, RNG_KILL, 0, 2) == 0) {
		int i = (int)between(s, RNG_KILL, 0, 1);
		kill_operator(s, i);
		start_operator(s, i);
		s->kills++;
		s->single_kills++;
		return;
	}
	kill_operators(s);
	start_operators(s, (int)between(s, RNG_KILL, 1, 2));
}

/* An operator that exited by itself is judged (judge_exit) and started again. */
static void check_operators(struct soak *s)
{
	for (int i = 0; i < s->running; i++) {
		int code;
		if (daemon_running(&s->operators[i], &code))
			continue;
		judge_exit(s, i, code);
		daemon_cleanup(&s->operators[i]);
		start_operator(s, i);
	}
}

static void poll_ops(struct soak *s, int *in_flight)
{
	double now = it_now_ms();
	*in_flight = 0;
	for (int i = 0; i < s->nops; i++) {
		soak_op_poll(s->admin, s->ns, &s->ops[i], now);
		*in_flight += s->ops[i].phase == PHASE_CREATED || s->ops[i].phase == PHASE_ASKED;
	}
}

static void launch(struct soak *s)
{
	struct soak_op *op = &s->ops[s->nops];
	op->kind = (enum soak_op_kind)(next_random(s, RNG_KINDS) % OP_KINDS);
	snprintf(op->name, sizeof(op->name), "%c%d", "ecoasfkm"[op->kind], s->nops);
	op->created_ms = it_now_ms();
	if (soak_op_create(s->admin, s->ns, op) < 0)
		fail_msg("cannot create the workload of operation %s", op->name);
	s->nops++;
}

static void report(const struct soak *s, struct fault_proxy *proxy, double minutes, const json_t *violations)
{
	int done[OP_KINDS] = {0}, failed[OP_KINDS] = {0}, ended = 0;
	for (int i = 0; i < s->nops; i++) {
		done[s->ops[i].kind] += s->ops[i].phase == PHASE_DONE;
		failed[s->ops[i].kind] += s->ops[i].phase == PHASE_FAILED;
		ended += s->ops[i].phase == PHASE_DONE || s->ops[i].phase == PHASE_FAILED;
	}
	printf("# soak: %d operations in %.1f min (%.1f per minute ended):", s->nops, minutes, ended / minutes);
	for (int k = 0; k < OP_KINDS; k++)
		printf(" %s %d done/%d failed;", soak_op_names[k], done[k], failed[k]);
	long counts[FAULT_KINDS];
	long total = fault_proxy_counts(proxy, counts);
	printf("\n# soak: %ld requests through the fault proxy, faults:", total);
	for (int k = 1; k < FAULT_KINDS; k++)
		printf(" %s %ld", fault_kind_names[k], counts[k]);
	printf("\n# soak: %d operator kills survived (%d single-replica kills), %d leaderships lost and taken again; "
	       "%zu invariant violations\n",
	       s->kills, s->single_kills, s->exits, json_array_size(violations));
	for (int i = 0; i < s->nops; i++)
		if (s->ops[i].message)
			printf("# soak: %s (%s) %s: %s\n", s->ops[i].name, soak_op_names[s->ops[i].kind],
			       s->ops[i].phase == PHASE_FAILED ? "failed" : "ended", s->ops[i].message);
}

static void test_soak(void **unused)
{
	(void)unused;
	setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines as they happen, also into a file */
	struct soak *s = xcalloc(1, sizeof(*s));
	const char *sec_env = getenv("SOP_SOAK_SECONDS"), *seed_env = getenv("SOP_SOAK_SEED");
	long seconds = sec_env ? atol(sec_env) : DEFAULT_SECONDS;
	uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 10) : DEFAULT_SEED;
	printf("# soak: seed %" PRIu64 " (replay: SOP_SOAK_SEED=%" PRIu64 "), %ld s of new operations\n", seed, seed,
	       seconds);
	for (int i = 0; i < 3; i++)
		s->rng[i] = (seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1))) | 1;
	s->violations = json_array();
	s->admin = it_admin_client();
	s->ns = it_namespace_new(s->admin, "soak");
	struct it_recorder *jobs = it_recorder_start(&KUBE_JOBS, s->ns);
	struct it_recorder *pods = it_recorder_start(&KUBE_PODS, s->ns);

	struct fault_plan plan = {seed, FAULT_PERCENT};
	char dir[] = "/tmp/soak-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct fault_proxy *proxy = it_fault_proxy_start(&plan, dir, &s->kubeconfig);
	start_operators(s, 1);

	double t0 = it_now_ms(), stop_starting = t0 + (double)seconds * 1000;
	double next_launch = t0, next_kill = t0 + (double)between(s, RNG_KILL, 15000, 45000);
	int in_flight = 0;
	for (;;) {
		double now = it_now_ms();
		bool starting = now < stop_starting;
		if (!starting && in_flight == 0)
			break;
		if (!starting && now > stop_starting + SETTLE_MS)
			break; /* what is still in flight is reported as not ended */
		if (starting && now >= next_launch && in_flight < MAX_IN_FLIGHT && s->nops < MAX_OPS) {
			launch(s);
			next_launch = now + (double)between(s, RNG_LAUNCH, 1000, 5000);
		}
		/*
		 * Kills only while operations start (a new process waits for the
		 * dead one's 15 s Lease, so kills come every 15-45 s); then one
		 * replica lets everything settle.
		 */
		if (starting && now >= next_kill) {
			kill_at_random(s);
			next_kill = now + (double)between(s, RNG_KILL, 15000, 45000);
		}
		if (!starting && s->running != 1) {
			kill_operators(s);
			start_operators(s, 1);
		}
		check_operators(s);
		poll_ops(s, &in_flight);
		it_sleep_ms(1000);
	}
	double minutes = (it_now_ms() - t0) / 60000;
	check_operators(s);
	json_t *violations = s->violations;
	json_t *job_records = it_recorder_stop(jobs), *pod_records = it_recorder_stop(pods);
	soak_check_ended(s->ops, s->nops, violations);
	soak_check_never_two(job_records, pod_records, violations);
	soak_check_identities(s->admin, s->ns, pod_records, violations);
	soak_check_claims(s->admin, s->ns, s->ops, s->nops, violations);
	soak_check_leftovers(s->admin, s->ns, s->ops, s->nops, violations);
	/* No write repeated after an unknown outcome without a precondition (the proxy's record). */
	json_t *unsafe = fault_proxy_unsafe_repeats(proxy);
	size_t u;
	json_t *w;
	json_array_foreach(unsafe, u, w) {
		char *what = xasprintf("write repeated after an unknown outcome without a precondition: %s",
				       json_string_value(w));
		json_array_append_new(violations, json_string(what));
		free(what);
	}
	json_decref(unsafe);
	/* Every kind of fault the run surely injected (fault_surely_injected) was: the proxy still does its part. */
	char *missing = it_fault_kinds_missing(proxy);
	if (missing) {
		char *what = xasprintf("the fault proxy never injected %s in %ld faults outside watches", missing,
				       fault_proxy_non_watch_faults(proxy));
		json_array_append_new(violations, json_string(what));
		free(what);
		free(missing);
	}
	report(s, proxy, minutes, violations);
	for (size_t i = 0; i < json_array_size(violations); i++)
		printf("# violation: %s\n", json_string_value(json_array_get(violations, i)));
	if (json_array_size(violations)) {
		char *log = daemon_log(&s->operators[0]);
		size_t len = strlen(log);
		printf("# the running operator's log (tail):\n%s\n", len > 20000 ? log + len - 20000 : log);
		free(log);
		fail_msg("%zu invariant violations (seed %" PRIu64 ")", json_array_size(violations), seed);
	}
	json_decref(violations);
	json_decref(job_records);
	json_decref(pod_records);
	for (int i = 0; i < s->running; i++)
		daemon_stop_operator(&s->operators[i]);
	fault_proxy_stop(proxy);
	it_namespace_delete(s->admin, s->ns);
	it_sh("rm -rf '%s'", dir);
	for (int i = 0; i < s->nops; i++)
		free(s->ops[i].message);
	free(s->kubeconfig);
	free(s->ns);
	kube_client_free(s->admin);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
