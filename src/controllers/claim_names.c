#include "controllers/claim_names.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

void claim_statefulset_candidates(const char *claim, void (*fn)(void *ctx, const char *sts), void *ctx)
{
	const char *dash = claim ? strrchr(claim, '-') : NULL;
	if (!dash || !dash[1])
		return;
	for (const char *p = dash + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return;
	char *prefix = xstrndup(claim, (size_t)(dash - claim));
	for (char *p = strchr(prefix, '-'); p; p = strchr(p + 1, '-'))
		fn(ctx, p + 1);
	free(prefix);
}
