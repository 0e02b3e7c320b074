/*
 * A test hook: SOP_TEST_CRASH_AFTER=<step>[#<n>] makes the daemon kill
 * itself (SIGKILL, no cleanup) right after it performed the n-th step of
 * that name (default the first), so the integration tests can prove that a
 * crash at any step resumes. Unset, it costs one string comparison a step.
 *
 * Threads: crash_hook_after may be called from any worker.
 */
#ifndef SOP_RUNTIME_CRASH_HOOK_H
#define SOP_RUNTIME_CRASH_HOOK_H

#include <stdatomic.h>

struct crash_hook {
	char step[64]; /* empty: disabled */
	int nth;       /* which occurrence of the step (1 = the first) */
	atomic_int seen;
};

/* Reads SOP_TEST_CRASH_AFTER. */
void crash_hook_init(struct crash_hook *h);

/* Call after performing step: kills the process when it is the one asked for. */
void crash_hook_after(struct crash_hook *h, const char *component, const char *step);

#endif
