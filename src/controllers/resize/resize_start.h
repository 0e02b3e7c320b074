/*
 * Starting a resize: what is asked (the annotations, or a template already
 * bigger than its claims), checked against the StorageClasses, decides the
 * strategy (in place, or by copy as soon as one template needs it) and the
 * first step records it. Pure. Private to src/controllers/resize.
 */
#ifndef SOP_RESIZE_START_H
#define SOP_RESIZE_START_H

#include "controllers/resize/resize_plan.h"

/* The first step of what req (completed here with the templates' own targets) asks; nothing when nothing is. */
void resize_start(const struct resize_inputs *in, long long now_ms, struct resize_request *req, struct action *a);

#endif
