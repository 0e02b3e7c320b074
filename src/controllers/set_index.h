/*
 * Indexes of the shared caches by the workload an object may belong to, so
 * that a reconcile reads its own objects and not its whole namespace (let
 * alone every PV of the cluster). A StatefulSet and a StatefulCluster name
 * their pods <name>-<n> and their claims <template>-<name>-<n>; the copy
 * cycle adds claims <claim>-copy and Jobs (and their pods) labelled
 * stateful-operator.io/resize-copy-of. The index value is "<namespace>/<name>"
 * for every workload name an object could belong to; the planners still
 * check each object they are given, the index only narrows the reads.
 */
#ifndef SOP_CONTROLLERS_SET_INDEX_H
#define SOP_CONTROLLERS_SET_INDEX_H

#include <jansson.h>
#include <stddef.h>

#include "runtime/store.h"

#define SET_INDEX "workload"

/* Pods: <name>-<n> gives <ns>/<name>; a copy-of label gives <ns>/<its value>. */
size_t set_index_pod(const json_t *obj, char ***values);

/* Claims: every <ns>/<name> of <template>-<name>-<n> (also behind -copy), and a copy-of label's. */
size_t set_index_claim(const json_t *obj, char ***values);

/* PVs: what set_index_claim gives for the claim their claimRef names (bound, pre-bound or released). */
size_t set_index_volume(const json_t *obj, char ***values);

/* Adds SET_INDEX with fn to s unless a controller already did (before the caches start). */
void set_index_ensure(struct store *s, store_index_fn fn);

#endif
