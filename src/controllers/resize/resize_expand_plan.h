/*
 * The in-place ("expand") phases of a resize (see resize_plan.h for the
 * map): each fills a with the next step. in and st are borrowed; the
 * StatefulSet in->sts exists unless said otherwise. Pure. Private to
 * src/controllers/resize.
 */
#ifndef SOP_RESIZE_EXPAND_PLAN_H
#define SOP_RESIZE_EXPAND_PLAN_H

#include <stdbool.h>

#include "controllers/resize/resize_plan.h"
#include "controllers/resize/resize_state.h"

/* (none) -> Expanding with targets {template: size} (borrowed). */
void expand_start(const struct resize_inputs *in, long long now_ms, const json_t *targets, struct action *a);
void expand_expanding(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		      struct action *a);
void expand_saving(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		   struct action *a);
/* Recreating: in->sts may be NULL (orphan-deleted: re-create it from the backup). */
void expand_recreating(const struct resize_inputs *in, long long now_ms, const struct resize_state *st,
		       struct action *a);
void expand_adopting(const struct resize_inputs *in, const struct resize_state *st, struct action *a);
/*
 * Failed (either strategy): stays failed (and reported) until the user
 * changes what is asked (req; parsed: resize_request_parse's result);
 * in place, the requests are first lowered back to the capacity.
 */
void resize_failed(const struct resize_inputs *in, const struct resize_state *st, const struct resize_request *req,
		   int parsed, struct action *a);

#endif
