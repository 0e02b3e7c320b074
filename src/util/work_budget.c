#include "util/work_budget.h"

#include "util/clock.h"

void work_budget_init(struct work_budget *b, double ms)
{
	*b = (struct work_budget){.deadline_ms = ms > 0 ? clock_mono_ms() + ms : 0};
}

bool work_budget_step(struct work_budget *b)
{
	if (!b)
		return false;
	b->steps++;
	if (!b->spent && b->deadline_ms > 0 && clock_mono_ms() >= b->deadline_ms)
		b->spent = true;
	return b->spent;
}
