/*
 * Kubernetes label selectors (metav1.LabelSelector) evaluated against a
 * label set: matchLabels ANDed with matchExpressions (In, NotIn, Exists,
 * DoesNotExist), as the API server and controllers read them.
 *
 * Pure; thread-safe.
 */
#ifndef SOP_CLIENT_LABEL_SELECTOR_H
#define SOP_CLIENT_LABEL_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>

/*
 * True when labels (an object of strings, or NULL for none) satisfy
 * selector (borrowed). An empty selector ({} or no terms) matches
 * everything, as in apps/v1; a NULL selector matches nothing. A malformed
 * term (unknown operator, In without values) matches nothing, which is the
 * safe reading for a caller asking "would this controller adopt it?" only
 * when it then refuses: see label_selector_valid.
 */
bool label_selector_matches(const json_t *selector, const json_t *labels);

/* True when every term of selector is well formed (NULL is not). */
bool label_selector_valid(const json_t *selector);

#endif
