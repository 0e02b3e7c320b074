/*
 * The names of the objects the resize controller reads and makes, spelled
 * in one place: a replica's pod and claims, the copy's new claim and Job,
 * the saved copy. Each returns a new string. Pure; a leaf.
 */
#ifndef SOP_RESIZE_NAMES_H
#define SOP_RESIZE_NAMES_H

/* Pod <sts>-<ordinal>. */
char *resize_pod_name(const char *sts, long long ord);
/* Claim <template>-<sts>-<ordinal>, as the StatefulSet controller names it. */
char *resize_claim_name(const char *tmpl, const char *sts, long long ord);
/* "<template>-<sts>-": what the template's claims of the set start with. */
char *resize_claim_prefix(const char *tmpl, const char *sts);
/* The copy's new claim <claim>-copy. */
char *resize_new_claim_name(const char *claim);
/* ConfigMap <sts>-sts-backup: the saved StatefulSet. */
char *resize_backup_name(const char *sts);
/* Job "<sts>-<ordinal>-<suffix>", at most 63 characters (the job-name label). */
char *resize_job_name(const char *sts, long long ord, const char *suffix);

#endif
