#include "fault_plan.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const fault_kind_names[FAULT_KINDS] = {
	"none", "429", "500", "503", "504", "reset-before", "reset-after", "latency", "watch-cut",
};

/* splitmix64: a well-mixed 64-bit function, enough for test decisions. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* FNV-1a of s. */
static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static uint64_t draw(const struct fault_plan *p, const char *method, const char *path, unsigned long nth,
		     uint64_t salt)
{
	return mix(p->seed ^ mix(hash_text(method) ^ mix(hash_text(path) ^ mix((uint64_t)nth ^ salt))));
}

bool fault_is_watch(const char *path)
{
	const char *q = strchr(path, '?');
	if (!q)
		return false;
	for (const char *s = q; (s = strstr(s, "watch=")) != NULL; s += 6) {
		char before = s[-1];
		if ((before == '?' || before == '&') && (!strncmp(s + 6, "true", 4) || s[6] == '1'))
			return true;
	}
	return false;
}

enum fault_kind fault_decide(const struct fault_plan *p, const char *method, const char *path, unsigned long nth)
{
	if (p->percent <= 0 || draw(p, method, path, nth, 1) % 100 >= (uint64_t)p->percent)
		return FAULT_NONE;
	if (fault_is_watch(path)) {
		/* A watch's faults: not served, or served and cut. */
		static const enum fault_kind watch_kinds[] = {FAULT_TOO_MANY, FAULT_UNAVAILABLE, FAULT_RESET_BEFORE,
							      FAULT_CUT_WATCH, FAULT_CUT_WATCH};
		return watch_kinds[draw(p, method, path, nth, 2) % (sizeof(watch_kinds) / sizeof(watch_kinds[0]))];
	}
	/* Kinds 1 to FAULT_LATENCY, evenly. */
	return (enum fault_kind)(1 + draw(p, method, path, nth, 2) % FAULT_LATENCY);
}

int fault_latency_ms(const struct fault_plan *p, const char *method, const char *path, unsigned long nth)
{
	return 50 + (int)(draw(p, method, path, nth, 3) % 951);
}

bool fault_surely_injected(enum fault_kind k, long non_watch_faults)
{
	if (k < FAULT_TOO_MANY || k > FAULT_LATENCY)
		return false;
	double missed = 1;
	for (long n = 0; n < non_watch_faults && missed >= 1e-6; n++)
		missed *= 1 - 1.0 / FAULT_LATENCY; /* fault_decide: kinds 1 to FAULT_LATENCY, evenly */
	return missed < 1e-6;
}

uint64_t fault_new_seed(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return mix((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
}
