/*
 * The retry rule the fault proxy (fault_proxy.h) proves under load: a
 * write sent again after an unknown outcome (the first may have been done)
 * must not be able to do twice what it did once. Pure: whether one write
 * may be repeated, from its method, path (query included) and body.
 */
#ifndef SOP_IT_REPEAT_RULE_H
#define SOP_IT_REPEAT_RULE_H

#include <stdbool.h>

/*
 * True when a repeat of this write is harmless, that is when:
 * - a PUT or a merge/strategic-merge PATCH (a JSON object) carries
 *   resourceVersion or uid in its top-level metadata (the server refuses a
 *   stale one: 409);
 * - a JSON PATCH (a JSON array) has a test op on /metadata/resourceVersion
 *   or /metadata/uid;
 * - a DELETE has preconditions (uid or resourceVersion) in its
 *   DeleteOptions body, or uid= / resourceVersion= in its query;
 * - a POST creates a named object in a collection (the second gets 409
 *   AlreadyExists; a POST to a subresource such as eviction is an act);
 * - it asks dryRun (nothing is changed), or it writes an Event (a record
 *   for people, not state any step reads; the operator's Event updates
 *   set an absolute count).
 * Anything else is flagged: no body, a body that is not JSON, a uid that
 * is only an ownerReference's, a resourceVersion below metadata.
 */
bool repeat_is_harmless(const char *method, const char *path, const char *body);

#endif
