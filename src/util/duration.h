/*
 * Durations written as Go's time.ParseDuration reads them ("90s", "1h30m",
 * "1.5h", "500ms"), which is what Kubernetes users write in annotations.
 * Pure. Thread-safe.
 */
#ifndef SOP_UTIL_DURATION_H
#define SOP_UTIL_DURATION_H

#include <stdint.h>

/*
 * Parses text into *ms (rounded down to whole milliseconds). Negative
 * durations are refused: every duration here is a wait or a limit.
 * Returns 0, or -1 with *err (new string, when err is not NULL) saying
 * what is wrong.
 */
int duration_parse(const char *text, int64_t *ms, char **err) __attribute__((warn_unused_result));

/* Seconds since the epoch of an RFC 3339 UTC time "YYYY-MM-DDTHH:MM:SSZ", or -1. */
int64_t rfc3339_seconds(const char *text);
/* seconds since the epoch as "YYYY-MM-DDTHH:MM:SSZ" (UTC) into out. */
void rfc3339_format(int64_t seconds, char out[32]);

#endif
