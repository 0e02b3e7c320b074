/*
 * The resize-state annotation: what a resize has done so far, the one
 * record a resize resumes from after a crash.
 */
#ifndef SOP_RESIZE_STATE_H
#define SOP_RESIZE_STATE_H

#include <jansson.h>
#include <stdbool.h>

/*
 * True when the resize controller is re-creating StatefulSet sts
 * (borrowed): it recorded so in the set's own state before it orphan-deletes
 * it. Scale-down then takes the deletion for an orphaning one.
 */
bool resize_state_recreating(const json_t *sts);

#endif
