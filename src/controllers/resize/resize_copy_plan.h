/*
 * The copy cycle of a resize (the map is in resize_copy_plan.c): starting
 * it, and each step while the state says "strategy": "copy". in and st
 * are borrowed; now_ms dates what the state records. Pure. Private to
 * src/controllers/resize.
 */
#ifndef SOP_RESIZE_COPY_PLAN_H
#define SOP_RESIZE_COPY_PLAN_H

#include <stdbool.h>

#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_state.h"

/* Starts copying to targets {template: size} in classes {template: class} (both borrowed). */
void copy_plan_start(const struct resize_inputs *in, long long now_ms, const struct resize_request *req,
		     const json_t *targets, const json_t *classes, struct action *a);
/* The next step of a copy resize; abort_asked: the user asked to abort (on the set or its saved copy). */
void copy_plan(const struct resize_inputs *in, long long now_ms, bool abort_asked, const struct resize_state *st,
	       struct action *a);

#endif
