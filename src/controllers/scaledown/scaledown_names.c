#include "controllers/scaledown/scaledown_names.h"

#include "util/xalloc.h"

char *scaledown_pod_prefix(const char *sts)
{
	return xasprintf("%s-", sts);
}

char *scaledown_claim_prefix(const char *tmpl, const char *sts)
{
	return xasprintf("%s-%s-", tmpl, sts);
}

char *scaledown_pod_name(const char *sts, long n)
{
	return xasprintf("%s-%ld", sts, n);
}

char *scaledown_claim_name(const char *tmpl, const char *sts, long n)
{
	return xasprintf("%s-%s-%ld", tmpl, sts, n);
}
