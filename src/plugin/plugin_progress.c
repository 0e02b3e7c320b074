/*
 * Progress as kubectl-stateful draws it. Sizes are binary (the units of
 * volume requests); the bar is ASCII so it reads the same in any terminal
 * and in a captured log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_progress.h"
#include "util/xalloc.h"

char *progress_bytes(long long bytes, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes < 1024) {
		snprintf(buf, size, "%lld B", bytes < 0 ? 0 : bytes);
		return buf;
	}
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

int progress_percent(long long done, long long total)
{
	if (total <= 0 || done <= 0)
		return 0;
	if (done >= total)
		return 100;
	/*
	 * In 128-bit integers: bytes near LLONG_MAX times 100 would overflow a
	 * long long, and a long double's precision differs between machines
	 * (under valgrind it is a double's, and 49.99...% came out as 50).
	 */
	__extension__ typedef unsigned __int128 wide;
	return (int)((wide)done * 100 / (wide)total);
}

char *progress_bar(long long done, long long total, int width, char *buf, size_t size)
{
	if (width < 3)
		width = 3;
	if ((size_t)width >= size)
		width = (int)size - 1;
	int cells = width - 2;
	int full = 0;
	if (total > 0 && done > 0)
		full = done >= total ? cells : (int)((long double)done * cells / (long double)total);
	buf[0] = '[';
	for (int i = 0; i < cells; i++)
		buf[1 + i] = i < full ? '=' : ' ';
	/* The head shows movement while the bar is not full. */
	if (full > 0 && full < cells)
		buf[full] = '>';
	buf[width - 1] = ']';
	buf[width] = '\0';
	return buf;
}

void progress_rate_update(struct progress_rate *r, long long bytes, long long at_ms)
{
	if (r->at_ms == 0 || bytes < r->bytes) {
		r->bytes = bytes;
		r->at_ms = at_ms;
		r->per_s = -1;
		return;
	}
	if (bytes == r->bytes || at_ms <= r->at_ms)
		return; /* the pod prints every ~2 s: the same reading again says nothing new */
	r->per_s = (double)(bytes - r->bytes) * 1000.0 / (double)(at_ms - r->at_ms);
	r->bytes = bytes;
	r->at_ms = at_ms;
}

char *progress_rate_text(double per_s, char *buf, size_t size)
{
	if (per_s < 0) {
		snprintf(buf, size, "-");
		return buf;
	}
	char b[32];
	snprintf(buf, size, "%s/s", progress_bytes((long long)per_s, b, sizeof(b)));
	return buf;
}

char *progress_replica_line(const char *sts, const struct replica_progress *p, int width)
{
	char name[300];
	snprintf(name, sizeof(name), "%s-%lld", sts, p->ordinal);
	switch (p->stage) {
	case REPLICA_WAITING:
		return xasprintf("%s  waiting", name);
	case REPLICA_DONE:
		return xasprintf("%s  done", name);
	case REPLICA_STARTING:
	case REPLICA_FINISHING:
		return xasprintf("%s  %s", name, p->step ? p->step : p->stage == REPLICA_STARTING ? "starting" : "finishing");
	case REPLICA_COPYING:
		break;
	}
	char done[24], total[24], rate[48], bar[128]; /* rate: a byte figure (< 32) and "/s" */
	const struct copy_progress *c = &p->copy;
	progress_bytes(c->bytes, done, sizeof(done));
	progress_bytes(c->total_bytes, total, sizeof(total));
	progress_rate_text(p->per_s, rate, sizeof(rate));
	char *tail = xasprintf("%3d%%  %s/%s  %lld/%lld files  %s", progress_percent(c->bytes, c->total_bytes), done,
			       total, c->files, c->total_files, rate);
	/* The bar takes what the name and the figures leave, between 10 and 50 cells. */
	int room = width - (int)strlen(name) - (int)strlen(tail) - 4;
	int bar_width = width < 40 ? 22 : room < 10 ? 10 : room > 50 ? 50 : room;
	progress_bar(c->bytes, c->total_bytes, bar_width, bar, sizeof(bar));
	char *line = xasprintf("%s  %s  %s", name, bar, tail);
	free(tail);
	return line;
}
