/*
 * The scale-down cleanups of one StatefulSet as `kubectl stateful cleanup`
 * shows them, from its scaledown-state ({"ordinals": {"N": {"failures",
 * "lastPod", "retryAt", "message"}}}) and its cleanup pods. Pure.
 */
#ifndef SOP_PLUGIN_CLEANUP_H
#define SOP_PLUGIN_CLEANUP_H

#include <jansson.h>
#include <stddef.h>

#include "plugin/plugin_output.h"

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

/*
 * The rows as f asks: the table (-o wide: the last message whole), the
 * document, or -o name's pod/NAME of the cleanup pods. 0 with *out a new
 * string, or -1 with *err a new message.
 */
int cleanup_render(const json_t *rows, const struct plugin_format *f, char **out, char **err)
	__attribute__((warn_unused_result));

/* state without the ordinals given up (failures >= max): a new reference. */
json_t *cleanup_state_rearmed(const json_t *state, int max);

#endif
