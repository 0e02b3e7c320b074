/*
 * The scale-down cleanups of one StatefulSet as `kubectl stateful cleanup`
 * shows them, from its scaledown-state ({"ordinals": {"N": {"failures",
 * "lastPod", "retryAt", "message"}}}) and its cleanup pods. Pure.
 */
#ifndef SOP_PLUGIN_CLEANUP_H
#define SOP_PLUGIN_CLEANUP_H

#include <jansson.h>
#include <stddef.h>

/* scaledown-max-attempts of sts, or its default (3). */
int cleanup_max_attempts(const json_t *sts);

/*
 * One row per ordinal that has a record or a cleanup pod: {"ordinal",
 * "failures", "maxAttempts", "givenUp", "nextRetry", "pod", "podPhase",
 * "message"}, by ordinal. *given_up counts the sets given up. New array.
 */
json_t *cleanup_rows(const json_t *sts, const json_t *state, const json_t *pods, size_t *given_up);

/* The rows as a table. New string. */
char *cleanup_table(const json_t *rows);

/* state without the ordinals given up (failures >= max): a new reference. */
json_t *cleanup_state_rearmed(const json_t *state, int max);

#endif
