/*
 * Usage-driven growth: the policy of one volumeClaimTemplate and the
 * arithmetic that turns a claim's usage into a decision. Pure;
 * thread-safe.
 *
 * A policy is the annotation autoresize.stateful-operator.io/<template> on
 * a StatefulSet (or StatefulCluster), a comma-separated list of key=value:
 *
 *   used=80%          grow when used space reaches this share (1-99 %)
 *   free=5Gi          grow when free space falls below this quantity
 *   inodes=90%        grow when used inodes reach this share (1-99 %)
 *                     (no trigger given: used=80%; several: any of them)
 *   step=20%          grow by this share of the current size (1-1000 %),
 *   step=10Gi         or by this quantity (default 20%)
 *   max=500Gi         never past this size (required)
 *   cooldown=6h       not again within this (default 6h; 0s allowed)
 *   mode=grow         or recommend: Events and metrics only; or off: no
 *                     autoresize (a workload's or namespace's opt-out of
 *                     the policy below it; max not required)
 *   allow-copy=false  true: a class that cannot expand grows by copy
 *   scope=template    or claim: grow only the claim that crossed
 *
 * Sizes are rounded up to the granularity: the StorageClass annotation
 * autoresize.stateful-operator.io/granularity (a quantity), else 1Gi.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_POLICY_H
#define SOP_CONTROLLERS_AUTORESIZE_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define ANNOTATION_AUTORESIZE_PREFIX "autoresize.stateful-operator.io/"
/* On a StorageClass: the size step of its volumes (e.g. "1Gi", "4Gi"). */
#define ANNOTATION_AUTORESIZE_GRANULARITY "autoresize.stateful-operator.io/granularity"
/* On a StatefulSet/StatefulCluster: {"<template>": "<RFC 3339 time>"} of the last growth; on a claim (scope=claim): the time. */
#define ANNOTATION_AUTORESIZE_LAST "stateful-operator.io/autoresize-last"

/* A policy's text is read up to this many bytes; longer is refused whole. */
#define AUTORESIZE_POLICY_TEXT_MAX 1024

#define AUTORESIZE_DEFAULT_USED_PERCENT 80
#define AUTORESIZE_DEFAULT_STEP_PERCENT 20
#define AUTORESIZE_DEFAULT_COOLDOWN_MS (6LL * 3600 * 1000)
#define AUTORESIZE_DEFAULT_GRANULARITY (1LL << 30)

struct autoresize_policy {
	int used_percent;         /* 0: not a trigger */
	int64_t free_below_bytes; /* 0: not a trigger */
	int inodes_percent;       /* 0: not a trigger */
	int step_percent;         /* exactly one of step_percent and step_bytes is > 0 */
	int64_t step_bytes;
	int64_t max_bytes;
	int64_t cooldown_ms;
	bool recommend_only;
	bool off;                 /* mode=off: nothing grows; the other fields mean nothing */
	bool allow_copy;
	bool per_claim;
};

/*
 * Parses text into *p (defaults for what it does not say). 0 with *why
 * NULL, or -1 with *p zeroed and *why a new message (caller frees) that
 * starts with the key and says what it accepts, e.g.
 *   step: "20" is neither a percentage nor a quantity with a unit; use ...
 *   max: required (the size autoresize never grows past, e.g. max=500Gi)
 * Spaces around keys, values and commas are ignored, and so are empty
 * items. Refused: unknown and repeated keys, a key without "=" or value, a
 * value over 64 characters, percentages without "%" or out of range,
 * quantities quantity_parse refuses, zero or negative sizes, step and max
 * not whole bytes (free is rounded up to a byte), a bare number as step,
 * free not below max, no max (but with mode=off), a text over
 * AUTORESIZE_POLICY_TEXT_MAX bytes (not read further). text NULL reads as "". Messages are
 * printable ASCII (other bytes written \xNN) and under 1 kB, for Events.
 */
int autoresize_policy_parse(const char *text, struct autoresize_policy *p, char **why)
	__attribute__((warn_unused_result));

/*
 * The StorageClass annotation ANNOTATION_AUTORESIZE_GRANULARITY into
 * *bytes; text NULL (no annotation) gives AUTORESIZE_DEFAULT_GRANULARITY.
 * 0 with *why NULL, or -1 with *why a new message "granularity: ..."
 * (a quantity of whole bytes above zero, e.g. 4Gi), printable ASCII.
 */
int autoresize_granularity_parse(const char *text, int64_t *bytes, char **why)
	__attribute__((warn_unused_result));

/* What the kubelet (or Prometheus) says of one claim's file system. */
struct volume_usage {
	int64_t capacity_bytes;
	int64_t used_bytes;
	int64_t available_bytes;
	int64_t inodes;           /* 0: not known */
	int64_t inodes_used;
};

enum autoresize_verdict {
	AUTORESIZE_BELOW,    /* under every threshold: nothing to do */
	AUTORESIZE_GROW,     /* over a threshold: grow to new_bytes */
	AUTORESIZE_COOLDOWN, /* over, but grown too recently: not before next_ms */
	AUTORESIZE_AT_MAX,   /* over, but the size is at the maximum already */
};

struct autoresize_decision {
	enum autoresize_verdict verdict;
	int64_t new_bytes;  /* GROW: the new size (rounded up, at most max) */
	int64_t next_ms;    /* COOLDOWN: the earliest next growth (wall clock ms) */
	double used_ratio;  /* used / (used + available), as df shows it */
	char trigger[192];  /* over a threshold: what crossed, e.g. "used 85% (272Mi of 320Mi) >= 80%" */
};

/*
 * Decides for a claim of size_bytes (the size it asks for now; with
 * scope=template, the template's) using u. last_growth_ms: the last
 * growth's wall clock time, 0 when never. granularity_bytes > 0 (else
 * AUTORESIZE_DEFAULT_GRANULARITY). Exact integer arithmetic: no overflow up
 * to 8Ei; a step is at least one byte. The trigger is filled whenever a
 * threshold is crossed (GROW, COOLDOWN, AT_MAX): every crossing, in the
 * order used, free, inodes, as many as fit.
 */
void autoresize_decide(const struct autoresize_policy *p, const struct volume_usage *u, int64_t size_bytes,
		       int64_t last_growth_ms, int64_t now_ms, int64_t granularity_bytes,
		       struct autoresize_decision *d);

/* Bytes as the shortest exact binary quantity ("320Mi", "1536Mi", "12345"). New string. */
char *autoresize_bytes_text(int64_t bytes);

/* w (a StatefulSet or StatefulCluster) carries some autoresize.stateful-operator.io/ annotation. */
bool autoresize_has_policy(const json_t *w);

/* The bytes of a quantity text ("320Mi"); -1 when NULL, not a quantity, or not a whole number of bytes. */
int64_t autoresize_quantity_bytes(const char *text);

/*
 * The last growth of template tpl recorded on w (a StatefulSet or
 * StatefulCluster: ANNOTATION_AUTORESIZE_LAST), wall clock ms; 0 when never.
 */
int64_t autoresize_last_growth_ms(const json_t *w, const char *tpl);

#endif
