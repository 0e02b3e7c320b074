/*
 * The process_* families client_golang's process collector exports (so
 * stock dashboards and alerts find them): resident and virtual memory, CPU
 * seconds, open and maximum file descriptors, start time. Read from
 * /proc/self at scrape time: two small files and one directory listing,
 * whatever the process does. A read that fails leaves its families out of
 * that scrape (on a kernel without /proc, all of them).
 *
 * Threads: register once from one thread; the collector runs on the
 * scrape's.
 */
#ifndef SOP_PROCESS_METRICS_H
#define SOP_PROCESS_METRICS_H

#include "runtime/metrics.h"

struct process_metrics {
	struct metric_family *rss, *vsize, *cpu, *open_fds, *max_fds, *start;
	double start_time; /* seconds since the epoch; < 0 when unknown */
};

/*
 * Registers the families and their collector on m; p (the collector's
 * state) is the caller's and must outlive m.
 */
void process_metrics_register(struct metrics *m, struct process_metrics *p);


#endif
