/*
 * The monotonic clock, for durations, deadlines and sleeps (never the wall
 * clock, which jumps). Thread-safe.
 */
#ifndef SOP_UTIL_CLOCK_H
#define SOP_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

uint64_t clock_mono_ns(void);
double clock_mono_ms(void);
/* now + ms, for pthread_cond_timedwait on a condvar set to CLOCK_MONOTONIC. */
struct timespec clock_mono_deadline(long ms);
/* The wall clock in milliseconds since the epoch: for timestamps the cluster shows, never for durations. */
long long clock_wall_ms(void);
/* Sleeps ms, resuming after signals. */
void clock_sleep_ms(long ms);

#endif
