#include "runtime/heap_trim.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/clock.h"

static atomic_uint_fast64_t last_trim_ns;
static atomic_bool owed;
static atomic_ulong trims;

/* Trims unless the last trim is less than the interval old; returns false then. */
static bool trim_unless_recent(void)
{
	uint64_t now = clock_mono_ns(), last = atomic_load(&last_trim_ns);
	if (last && now - last < (uint64_t)HEAP_TRIM_INTERVAL_MS * 1000000)
		return false;
	/* One thread trims; the others see the new time and go on. */
	if (!atomic_compare_exchange_strong(&last_trim_ns, &last, now))
		return true;
	atomic_store(&owed, false);
	malloc_trim(0);
	atomic_fetch_add(&trims, 1);
	return true;
}

void heap_trim_when_idle(void)
{
	if (!trim_unless_recent())
		atomic_store(&owed, true);
}

void heap_trim_owed(void)
{
	if (atomic_load(&owed))
		trim_unless_recent();
}

unsigned long heap_trims(void)
{
	return atomic_load(&trims);
}
