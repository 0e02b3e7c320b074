/*
 * The usage the operator publishes on each claim it polls, so that
 * `kubectl stateful status` shows it with no right beyond reading claims
 * (never nodes/proxy). One annotation on the PersistentVolumeClaim:
 *
 *   stateful-operator.io/usage: used=209715200,available=104857600,capacity=335544320,
 *                               inodesUsed=12,inodes=163840,observed=2025-11-24T16:00:00Z
 *
 * Bytes and inodes as the kubelet (or Prometheus) reports them, the time
 * of the poll that read them (UTC). Anyone who may write the claim may
 * write this text, and the figures come from kubelets or Prometheus: both
 * ends check them (usage_valid). Pure; thread-safe.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_USAGE_PUBLISHED_H
#define SOP_CONTROLLERS_AUTORESIZE_USAGE_PUBLISHED_H

#include <stdbool.h>
#include <stdint.h>

#include "controllers/autoresize/autoresize_policy.h"

#define ANNOTATION_USAGE "stateful-operator.io/usage"

/* No file system has more bytes or inodes than 2^60 (1 EiB): past it a figure is junk. */
#define USAGE_BOUND (1LL << 60)
/* The annotation's text: a longer one is not ours. */
#define USAGE_TEXT_MAX 256
/* Written again when the figures moved by this share of the capacity (or inodes)... */
#define USAGE_PUBLISH_MOVE_PERCENT 1
/* ... or when the published figures are this old: the age then says the poll still runs. */
#define USAGE_PUBLISH_REFRESH_S 600
/* The plugin marks figures older than this stale: the refresh plus a few polls. */
#define USAGE_STALE_S 900

struct usage_published {
	struct volume_usage usage;
	int64_t observed_s; /* seconds since the epoch */
};

/*
 * u holds what a file system can report: 0 < capacity <= USAGE_BOUND,
 * used and available within the capacity, inodesUsed within inodes
 * (inodes 0: not known, and then inodesUsed 0 too). Everything else is a
 * source's junk (or lie) and is neither published nor shown.
 */
bool usage_valid(const struct volume_usage *u);

/* The annotation's text of u read at observed_s. New string. u must be usage_valid. */
char *usage_published_text(const struct volume_usage *u, int64_t observed_s);

/*
 * Reads text (NULL: absent) into *out. Keys used, available, capacity
 * and observed are required, inodes and inodesUsed optional, each once;
 * values are decimal digits (observed: RFC 3339 UTC); unknown keys are
 * skipped (a later operator may add some). -1 when text is absent, too
 * long, malformed, or its figures are not usage_valid.
 */
int usage_published_parse(const char *text, struct usage_published *out) __attribute__((warn_unused_result));

/*
 * Whether the operator writes now (read at now_s) over what the claim
 * carries (old; NULL when absent or unreadable): no old figures, the
 * capacity or the inode count changed, used or available moved by
 * USAGE_PUBLISH_MOVE_PERCENT of the capacity, inodesUsed by that share of
 * inodes, the old figures are USAGE_PUBLISH_REFRESH_S old, or they claim
 * to come from the future (a clock moved back, or a hand wrote them).
 */
bool usage_published_due(const struct usage_published *old, const struct volume_usage *now, int64_t now_s);

#endif
