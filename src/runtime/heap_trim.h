/*
 * Gives the heap's free pages back to the kernel after a burst of work.
 * glibc keeps what a burst freed (a first pass over a fleet parses
 * thousands of objects) for the next one; the operator's next burst may be
 * hours away, and a daemon's resident size is what users see and what
 * their limits count.
 *
 * Threads: callable from any thread.
 */
#ifndef SOP_RUNTIME_HEAP_TRIM_H
#define SOP_RUNTIME_HEAP_TRIM_H

/*
 * Called by a work queue's worker that found its queue empty after work:
 * trims the heap unless it was trimmed less than HEAP_TRIM_INTERVAL_MS ago
 * (a steady trickle of events then costs one trim per interval). A trim
 * put off so is owed: heap_trim_owed does it.
 */
void heap_trim_when_idle(void);

/*
 * Called about every HEAP_TRIM_INTERVAL_MS by a thread with nothing else to
 * do (main's signal thread): does the trim heap_trim_when_idle put off, once
 * the interval has passed. Without it the last queue to drain within the
 * interval of a trim left what the end of a burst freed on the heap until
 * the next burst (bench/fleet's RSS after 100 resizes).
 */
void heap_trim_owed(void);

/* Trims so far (tests). */
unsigned long heap_trims(void);

#define HEAP_TRIM_INTERVAL_MS 5000

#endif
