#include "controllers/resize/resize_names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/contract.h"
#include "util/xalloc.h"

char *resize_pod_name(const char *sts, long long ord)
{
	return xasprintf("%s-%lld", sts, ord);
}

char *resize_claim_name(const char *tmpl, const char *sts, long long ord)
{
	return xasprintf("%s-%s-%lld", tmpl, sts, ord);
}

char *resize_claim_prefix(const char *tmpl, const char *sts)
{
	return xasprintf("%s-%s-", tmpl, sts);
}

char *resize_new_claim_name(const char *claim)
{
	return xasprintf("%s" TEMP_SUFFIX, claim);
}

char *resize_backup_name(const char *sts)
{
	return xasprintf("%s" BACKUP_SUFFIX, sts);
}

/* Long names get a hash, so truncated names stay apart. */
char *resize_job_name(const char *sts, long long ord, const char *suffix)
{
	char *name = xasprintf("%s-%lld-%s", sts, ord, suffix);
	if (strlen(name) <= 63)
		return name;
	uint32_t h = 2166136261u; /* FNV-1a of the full name */
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	char *short_name = xasprintf("%.*s-%08x-%lld-%s", 30, sts, h, ord, suffix);
	free(name);
	return short_name;
}
