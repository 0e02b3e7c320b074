#include "controllers/claim_names.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

char *set_pod_name(const char *set, long long n)
{
	return xasprintf("%s-%lld", set, n);
}

char *set_claim_name(const char *tmpl, const char *set, long long n)
{
	return xasprintf("%s-%s-%lld", tmpl, set, n);
}

char *set_name_prefix(const char *tmpl, const char *set)
{
	return tmpl ? xasprintf("%s-%s-", tmpl, set) : xasprintf("%s-", set);
}

/* The dash before name's trailing -<digits>, or NULL. */
static const char *ordinal_dash(const char *name)
{
	const char *dash = name ? strrchr(name, '-') : NULL;
	if (!dash || !dash[1])
		return NULL;
	for (const char *p = dash + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return NULL;
	return dash;
}

char *pod_set_name(const char *pod)
{
	const char *dash = ordinal_dash(pod);
	return dash && dash > pod ? xstrndup(pod, (size_t)(dash - pod)) : NULL;
}

void claim_statefulset_candidates(const char *claim, void (*fn)(void *ctx, const char *sts), void *ctx)
{
	const char *dash = ordinal_dash(claim);
	if (!dash)
		return;
	char *prefix = xstrndup(claim, (size_t)(dash - claim));
	for (char *p = strchr(prefix, '-'); p; p = strchr(p + 1, '-'))
		fn(ctx, p + 1);
	free(prefix);
}
