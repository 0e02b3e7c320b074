#include "runtime/crash_hook.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

void crash_hook_init(struct crash_hook *h)
{
	memset(h, 0, sizeof(*h));
	const char *crash = getenv("SOP_TEST_CRASH_AFTER");
	if (!crash || !*crash)
		return;
	const char *hash = strchr(crash, '#');
	snprintf(h->step, sizeof(h->step), "%.*s", (int)(hash ? (size_t)(hash - crash) : strlen(crash)), crash);
	h->nth = hash ? atoi(hash + 1) : 1;
}

void crash_hook_after(struct crash_hook *h, const char *component, const char *step)
{
	if (!h->step[0] || strcmp(h->step, step))
		return;
	if (atomic_fetch_add(&h->seen, 1) + 1 != h->nth)
		return;
	log_warn(component, "SOP_TEST_CRASH_AFTER=%s#%d: killing myself", h->step, h->nth);
	raise(SIGKILL);
}
