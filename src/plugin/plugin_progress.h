/*
 * How kubectl-stateful shows a copy's progress: sizes in binary units, a
 * bar of a given width, the rate between two readings of a copy pod's
 * SOP-PROGRESS line, and one line per replica. Pure: no I/O, no clock
 * (times come in). Thread-safe.
 */
#ifndef SOP_PLUGIN_PROGRESS_H
#define SOP_PLUGIN_PROGRESS_H

#include <stddef.h>

#include "controllers/resize/copy_script.h"

/* bytes as "0 B", "512 B", "1.5 KiB", ... "8.0 EiB" into buf (size >= 16). Returns buf. */
char *progress_bytes(long long bytes, char *buf, size_t size);

/*
 * A bar of width cells (at least 3: the brackets and one cell) into buf
 * (size > width): "[=====>    ]" for done of total. total <= 0 draws an
 * empty bar; done past total a full one. Returns buf.
 */
char *progress_bar(long long done, long long total, int width, char *buf, size_t size);

/* done of total in whole percent, 0 to 100 (0 when total <= 0). */
int progress_percent(long long done, long long total);

/* Two readings of one copy's byte count, for its rate. */
struct progress_rate {
	long long bytes; /* at the last reading */
	long long at_ms; /* when it was taken; 0: none yet */
	double per_s;    /* bytes per second between the last two readings that differed; < 0 unknown */
};

/* Takes a reading of bytes at at_ms (ms on any steady clock). A count that went down (a retried pod) resets. */
void progress_rate_update(struct progress_rate *r, long long bytes, long long at_ms);

/* How far one replica is. */
enum replica_stage {
	REPLICA_WAITING,  /* not yet in a batch */
	REPLICA_STARTING, /* in the batch; no copy progress yet (new claim, stopping the pod) */
	REPLICA_COPYING,  /* its copy pod reports progress */
	REPLICA_FINISHING, /* copied and verified; swapping volumes, restarting */
	REPLICA_DONE,
};

struct replica_progress {
	long long ordinal;
	enum replica_stage stage;
	const char *step;       /* the batch's step (Copy, Swap, ...) while in the batch; borrowed, may be NULL */
	struct copy_progress copy; /* with REPLICA_COPYING */
	double per_s;           /* rate; < 0 unknown */
};

/*
 * One line for replica p of StatefulSet sts, at most width columns when
 * width >= 40, e.g.
 *   "web-2  [=======>      ]  52%  1.0 GiB/2.0 GiB  120/300 files  45.2 MiB/s"
 *   "web-1  waiting"   "web-0  done"   "web-2  Swap"
 * New string.
 */
char *progress_replica_line(const char *sts, const struct replica_progress *p, int width);

/* "45.2 MiB/s" into buf; "-" when per_s < 0. Returns buf. */
char *progress_rate_text(double per_s, char *buf, size_t size);

#endif
