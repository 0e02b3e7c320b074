#include "process_metrics.h"

#include <dirent.h>
#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* More entries than this in /proc/self/fd are not counted (the listing stays bounded). */
#define MAX_FDS_COUNTED (1L << 20)

/* The fields of /proc/self/stat after "(comm)": field 3 (state) is out[0]. */
struct stat_fields {
	unsigned long long utime, stime, starttime, vsize;
	long long rss;
};

static int read_stat(struct stat_fields *out)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the fields start after the last ')'. */
	const char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* 3 state ... 14 utime 15 stime ... 22 starttime 23 vsize 24 rss */
	int got = sscanf(p + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
			 &out->utime, &out->stime, &out->starttime, &out->vsize, &out->rss);
	return got == 5 ? 0 : -1;
}

/*
 * Resident pages from /proc/self/statm (its second field), or -1. The same
 * number as stat's rss on Linux; qemu-user (the arm64 unit tests) fakes
 * /proc/self/stat with rss 0 but passes statm through.
 */
static long long resident_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	long long size, resident;
	int got = fscanf(f, "%lld %lld", &size, &resident);
	fclose(f);
	return got == 2 ? resident : -1;
}

/* The boot time (btime of /proc/stat), or -1. */
static long long boot_time(void)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	char line[256];
	long long btime = -1;
	/* Long lines (intr) come in pieces; only a piece that starts a line can start with "btime ". */
	bool at_start = true;
	while (fgets(line, sizeof(line), f)) {
		if (at_start && sscanf(line, "btime %lld", &btime) == 1)
			break;
		at_start = strchr(line, '\n') != NULL;
	}
	fclose(f);
	return btime;
}

static long count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long n = 0;
	const struct dirent *e;
	while ((e = readdir(d)) && n < MAX_FDS_COUNTED)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the listing's own descriptor */
}

static void collect(void *ctx, struct metrics *m)
{
	(void)m;
	struct process_metrics *p = ctx;
	struct stat_fields st;
	long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	if (read_stat(&st) == 0 && ticks > 0 && page > 0) {
		metric_set(p->cpu, (double)(st.utime + st.stime) / (double)ticks, METRIC_NO_LABELS);
		metric_set(p->vsize, (double)st.vsize, METRIC_NO_LABELS);
		long long resident = resident_pages();
		metric_set(p->rss, (double)(resident >= 0 ? resident : st.rss) * (double)page, METRIC_NO_LABELS);
	}
	long fds = count_open_fds();
	if (fds >= 0)
		metric_set(p->open_fds, (double)fds, METRIC_NO_LABELS);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		metric_set(p->max_fds, rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur, METRIC_NO_LABELS);
	if (p->start_time >= 0)
		metric_set(p->start, p->start_time, METRIC_NO_LABELS);
}

void process_metrics_register(struct metrics *m, struct process_metrics *p)
{
	p->rss = metrics_gauge(m, "process_resident_memory_bytes", "Memory of the process in RAM (RSS), bytes.", NULL);
	p->vsize = metrics_gauge(m, "process_virtual_memory_bytes", "Virtual address space of the process, bytes.",
				 NULL);
	p->cpu = metrics_counter(m, "process_cpu_seconds_total", "CPU time of the process, user and system, seconds.",
				 NULL);
	p->open_fds = metrics_gauge(m, "process_open_fds", "File descriptors the process has open.", NULL);
	p->max_fds = metrics_gauge(m, "process_max_fds", "The open-files limit of the process (soft).", NULL);
	p->start = metrics_gauge(m, "process_start_time_seconds", "When the process started, seconds since the epoch.",
				 NULL);

	/* The start time does not change: read once, so every scrape shows the same value. */
	struct stat_fields st;
	long ticks = sysconf(_SC_CLK_TCK);
	long long btime = boot_time();
	p->start_time = read_stat(&st) == 0 && ticks > 0 && btime > 0
			       ? (double)btime + (double)st.starttime / (double)ticks
			       : -1;
	metrics_add_collector(m, collect, p);
}
