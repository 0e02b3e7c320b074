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
 * (a steady trickle of events then costs one trim per interval).
 */
void heap_trim_when_idle(void);

#define HEAP_TRIM_INTERVAL_MS 5000

#endif
