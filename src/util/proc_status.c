#include "util/proc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	FILE *f = fopen(path, "r");
	long kb = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

int proc_status_reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return -1;
	int rc = fputs("5", f) < 0 ? -1 : 0; /* "5": reset the peak RSS (Linux 4.0) */
	return fclose(f) ? -1 : rc;
}
