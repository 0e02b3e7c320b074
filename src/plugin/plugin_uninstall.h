/*
 * What `kubectl stateful uninstall` finds before the operator goes
 * (docs/upgrade-uninstall.md): the StatefulSets that carry one of the
 * operator's finalizers (they would hang in Terminating without it), and
 * the work in flight that must end first: a scale-down cleanup pod, a
 * resize that has not reached an end (Failed, or done and only keeping old
 * volumes), a StatefulSet that only its backup ConfigMap holds while a
 * resize re-creates it. And the JSON patch that takes off our entries and
 * nothing else, each behind a `test` of that very entry.
 *
 * The only finalizer the operator puts on anything is
 * FINALIZER_SCALEDOWN, on StatefulSets (the StatefulCluster controller
 * needs none: its pods and claims carry owner references).
 *
 * Pure: no I/O. Thread-safe on objects nobody modifies.
 */
#ifndef SOP_PLUGIN_UNINSTALL_H
#define SOP_PLUGIN_UNINSTALL_H

#include <jansson.h>
#include <stddef.h>

/*
 * One row per StatefulSet that holds our finalizer or has work in flight,
 * by namespace and name:
 *   {"namespace", "name", "finalizer": bool (holds ours), "terminating": bool,
 *    "claimsDeleted"?: bool (with the finalizer: whenDeleted Delete, so its
 *    claims go with it), "blockers": [{"what", "finish"}]} (blockers absent when none)
 * "what" says what is in flight, "finish" how to let it end or abort it.
 * sets: StatefulSets; backups: ConfigMaps labelled
 * LABEL_SAVED_STATEFULSET; cleanup_pods: pods labelled LABEL_CLEANUP_FOR
 * (each an array, borrowed, any namespaces). New array.
 */
json_t *uninstall_scan(const json_t *sets, const json_t *backups, const json_t *cleanup_pods);

/* The rows of scan that have blockers. */
size_t uninstall_blocked(const json_t *rows);

/*
 * The JSON patch (RFC 6902) that removes every entry equal to finalizer
 * from obj's metadata.finalizers, highest index first, each remove right
 * after a "test" that the entry at that index is still ours: a list
 * changed meanwhile fails the patch (422) instead of losing another
 * controller's entry. A new array, or NULL when obj holds no such entry.
 */
json_t *uninstall_finalizer_patch(const json_t *obj, const char *finalizer);

#endif
