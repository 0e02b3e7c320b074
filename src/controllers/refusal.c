#include "controllers/refusal.h"

#include <stdarg.h>
#include <stdlib.h>

#include "util/xalloc.h"

int refuse(struct refusal *r, const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->reason = reason;
	free(r->message);
	r->message = xvasprintf(fmt, ap);
	va_end(ap);
	return -1;
}

void refusal_release(struct refusal *r)
{
	FREE_AND_NULL(r->message);
	r->reason = NULL;
}
