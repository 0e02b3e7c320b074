/*
 * A figure of /proc/<pid>/status in kB (VmHWM, the peak resident set;
 * VmRSS), and resetting VmHWM: how tests and benchmarks measure what a
 * process took. Linux only. Thread-safe.
 */
#ifndef SOP_UTIL_PROC_STATUS_H
#define SOP_UTIL_PROC_STATUS_H

#include <sys/types.h>

/* The field (e.g. "VmHWM") of process pid (0: this one) in kB, or -1. */
long proc_status_kb(pid_t pid, const char *field);
/* Starts this process' VmHWM over from its present RSS. Returns 0, or -1. */
int proc_status_reset_peak(void) __attribute__((warn_unused_result));

#endif
