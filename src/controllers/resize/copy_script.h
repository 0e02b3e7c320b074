/*
 * The copy Job's script (SPEC section "resize", "Copy Job") and the reader
 * of what it prints. The script is the one place that moves data; the
 * operator hands it to `sh -c` in the Job, and `stateful-operator
 * copy-script` prints it so it can be run (and tested) on real files. Its
 * usage (sh copy.sh PASS TARGET-BYTES SRC DST [SRC DST]...), the lines it
 * prints (SOP-PROGRESS, SOP-RESULT) and its exit status (COPY_EXIT_*) are
 * in the comment at its top, in copy_script.sh.
 *
 * Pure: no I/O. Thread-safe.
 */
#ifndef SOP_COPY_SCRIPT_H
#define SOP_COPY_SCRIPT_H

#define COPY_EXIT_OK 0
#define COPY_EXIT_USAGE 2     /* bad arguments: a bug in the Job */
#define COPY_EXIT_NO_FIT 3    /* the data does not fit in the target; nothing was written */
#define COPY_EXIT_VERIFY 4    /* the checksum comparison found differences */
#define COPY_EXIT_RSYNC 5     /* rsync (or the environment) failed */

/* Returns the script (new string). */
char *copy_script_text(void);

struct copy_progress {
	long long bytes, files, total_bytes, total_files; /* from the last progress line; 0 if none */
	int result;                                       /* 0 running (no result line), 1 ok, -1 fail */
	char reason[256]; /* with result -1: the script's reason, valid UTF-8, no control characters */
};

/*
 * Reads the last progress line and the last result line out of log_text
 * (borrowed): the tail of the copy pod's log, read without timestamps. The
 * text may start in the middle of a line, lines may end in \n, \r\n or \r,
 * and other lines are ignored; a line counts only when it starts with its
 * SOP- word and is well formed (all four progress numbers, 0 to LLONG_MAX).
 * A "fail" without a reason reads as "no reason given". Fills *out (also
 * when nothing is found) and returns 0 if any such line was found, -1
 * otherwise (also for a NULL log_text).
 */
int copy_progress_parse(const char *log_text, struct copy_progress *out)
	__attribute__((warn_unused_result));

#endif
