/*
 * A time budget for one piece of work done for someone outside (an
 * admission review): the loops doing the work count their steps against
 * it, and once its deadline has passed they stop, so the thread doing it is
 * free again within one step of the deadline (no cancellation, no other
 * thread involved) and the caller answers "could not decide". The steps
 * counted also let a test bound the work done. One budget per task, used
 * only by the thread doing it.
 */
#ifndef SOP_UTIL_WORK_BUDGET_H
#define SOP_UTIL_WORK_BUDGET_H

#include <stdbool.h>

struct work_budget {
	double deadline_ms;  /* clock_mono_ms() past which the work is abandoned; 0: none */
	unsigned long steps; /* steps counted so far */
	bool spent;          /* the deadline had passed at a step: every later step says so too */
};

/* A budget of ms from now; ms 0: no deadline, steps are only counted. */
void work_budget_init(struct work_budget *b, double ms);

/*
 * Counts one step (reading the clock: a step is a loop's turn over a
 * tenant's array, never a single comparison in a tight loop). Whether the
 * budget is spent: the caller stops and abandons the work. b NULL: no
 * budget, never spent.
 */
bool work_budget_step(struct work_budget *b);

#endif
