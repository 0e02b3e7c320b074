/*
 * Which fault the fault proxy (fault_proxy.h) injects into a request: a
 * pure, seeded decision. The same seed, method, path and per-path count
 * give the same fault whatever the order the operator's threads send
 * requests in, so a failing run replays from its printed seed.
 */
#ifndef SOP_IT_FAULT_PLAN_H
#define SOP_IT_FAULT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

enum fault_kind {
	FAULT_NONE,
	FAULT_TOO_MANY,     /* 429 with Retry-After: 1, not forwarded */
	FAULT_INTERNAL,     /* 500, not forwarded */
	FAULT_UNAVAILABLE,  /* 503, not forwarded */
	FAULT_TIMEOUT,      /* 504, not forwarded */
	FAULT_RESET_BEFORE, /* connection closed before forwarding */
	FAULT_RESET_AFTER,  /* forwarded, the answer dropped: a write may have happened */
	FAULT_LATENCY,      /* forwarded after a delay (fault_latency_ms) */
	FAULT_CUT_WATCH,    /* a watch forwarded, then cut in the middle of an event */
	FAULT_KINDS
};

extern const char *const fault_kind_names[FAULT_KINDS];

struct fault_plan {
	uint64_t seed;
	int percent; /* of requests that get a fault, 0-100 */
};

/*
 * The fault for the nth request (from 0) with method and path (the query
 * included: a watch is a GET whose query has watch=true or watch=1). Only
 * watches are cut; everything else may get any other kind.
 */
enum fault_kind fault_decide(const struct fault_plan *p, const char *method, const char *path, unsigned long nth);

/* The delay of a FAULT_LATENCY, 50-1000 ms, from the same inputs. */
int fault_latency_ms(const struct fault_plan *p, const char *method, const char *path, unsigned long nth);

/* path asks for a watch stream. */
bool fault_is_watch(const char *path);

/*
 * Whether a run that injected non_watch_faults faults into requests other
 * than watches surely injected kind k: each such fault is any of the kinds
 * 429 to latency with the same chance (watches only add chances), so a
 * kind is missed with a chance of (6/7)^n; "surely" is below one in a
 * million (n >= 90). Never for a watch cut: whether one happens depends on
 * the stream reaching the cut, i.e. on events flowing.
 */
bool fault_surely_injected(enum fault_kind k, long non_watch_faults);

/* A seed from the clock and pid, for a run that asks for a new one. */
uint64_t fault_new_seed(void);

#endif
