#include "controllers/resize/resize_plan.h"

#include "client/kube_object.h"
#include "controllers/resize/resize_copy_plan.h"
#include "controllers/resize/resize_expand_plan.h"
#include "controllers/resize/resize_start.h"
#include "controllers/resize/resize_state.h"
#include "controllers/resize/resize_steps.h"

/* ---- the plan: a switch on the phase ---- */

static void plan_with_statefulset(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	struct resize_request req;
	struct refusal refusal;
	int parsed = resize_request_parse(in->sts, &req, &refusal);
	struct resize_state st;
	resize_state_read(in->sts, &st);
	if (parsed == 0 && req.ignore)
		goto out;
	if (st.copy && (st.phase == RESIZE_PHASE_COPYING || st.phase == RESIZE_PHASE_CLEANING)) {
		/* Everything the copy needs was recorded when it started: the annotations may change now. */
		copy_plan(in, now_ms, kube_obj_annotation_true(in->sts, ANNOTATION_ABORT), &st, a);
		goto out;
	}
	switch (st.phase) {
	case RESIZE_PHASE_NONE:
		if (parsed < 0) {
			plan_refuse(a, refusal.reason, refusal.message);
			refusal.message = NULL;
		} else if (in->backup) {
			/* A leftover copy of an earlier StatefulSet (a different UID now exists). */
			plan_delete_backup(in, a);
		} else if (!req.abort) {
			resize_start(in, now_ms, &req, a);
		}
		break;
	case RESIZE_PHASE_EXPANDING:
		if (!req.abort) {
			expand_expanding(in, now_ms, &st, a);
			break;
		}
		plan_finish(in, a);
		action_event(a, "Warning", "ResizeAborted",
			     "resize aborted on request; volumes already grown keep their new size (a volume "
			     "cannot shrink in place), the StatefulSet template is unchanged");
		break;
	case RESIZE_PHASE_SAVING:
		expand_saving(in, now_ms, &st, a);
		break;
	case RESIZE_PHASE_RECREATING:
		expand_recreating(in, now_ms, &st, a);
		break;
	case RESIZE_PHASE_ADOPTING:
		expand_adopting(in, &st, a);
		break;
	case RESIZE_PHASE_FAILED:
		resize_failed(in, &st, &req, parsed, a);
		break;
	case RESIZE_PHASE_COPYING:  /* without the copy strategy: not this version's */
	case RESIZE_PHASE_CLEANING:
	case RESIZE_PHASE_UNKNOWN:
		break;
	}
out:
	resize_state_release(&st);
	refusal_release(&refusal);
}

/* While the StatefulSet is gone, the state is on the backup ConfigMap, or in the copy it saved. */
static void plan_without_statefulset(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	json_t *saved = plan_saved_statefulset(in->backup);
	struct resize_state st;
	if (!resize_state_read(in->backup, &st))
		resize_state_read(saved, &st);
	if (st.copy) {
		/* The user can abort on the ConfigMap while the StatefulSet is gone. */
		bool abort_asked = kube_obj_annotation_true(in->backup, ANNOTATION_ABORT) ||
				   kube_obj_annotation_true(saved, ANNOTATION_ABORT);
		if (!kube_obj_annotation_true(saved, ANNOTATION_IGNORE))
			copy_plan(in, now_ms, abort_asked, &st, a);
	} else if (st.phase == RESIZE_PHASE_RECREATING) {
		expand_recreating(in, now_ms, &st, a);
	}
	resize_state_release(&st);
	json_decref(saved);
}

void resize_plan(const struct resize_inputs *in, long long now_ms, struct action *a)
{
	action_init(a);
	if (in->sts)
		plan_with_statefulset(in, now_ms, a);
	else if (in->backup)
		plan_without_statefulset(in, now_ms, a);
}
