#include "controllers/resize/resize_state.h"

#include <string.h>
#include <time.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "controllers/state_version.h"
#include "util/duration.h"
#include "util/xalloc.h"

/* The names on the cluster: the only place they are spelled. */
static const char *const phase_names[] = {
	[RESIZE_PHASE_EXPANDING] = "Expanding", [RESIZE_PHASE_SAVING] = "Saving",
	[RESIZE_PHASE_RECREATING] = "Recreating", [RESIZE_PHASE_ADOPTING] = "Adopting",
	[RESIZE_PHASE_FAILED] = "Failed", [RESIZE_PHASE_COPYING] = "Copying",
	[RESIZE_PHASE_CLEANING] = "Cleaning", [RESIZE_PHASE_MODIFYING] = "Modifying",
};
static const char *const stage_names[] = {
	[COPY_STAGE_PREPARE] = "Prepare", [COPY_STAGE_PRECOPY] = "Precopy", [COPY_STAGE_STOP] = "Stop",
	[COPY_STAGE_COPY] = "Copy",       [COPY_STAGE_SWAP] = "Swap",       [COPY_STAGE_RESTART] = "Restart",
	[COPY_STAGE_READY] = "Ready",
};

/* The index of name in names (NULL entries never match), none when name is NULL, else unknown. */
static int lookup(const char *const *names, int n, const char *name, int none, int unknown)
{
	if (!name)
		return none;
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return i;
	return unknown;
}

bool resize_state_read(const json_t *obj, struct resize_state *st)
{
	memset(st, 0, sizeof(*st));
	json_t *js = kube_obj_annotation_json(obj, ANNOTATION_RESIZE_STATE);
	if (!json_is_object(js)) {
		json_decref(js);
		return false;
	}
	st->json = js;
	st->phase = lookup(phase_names, RESIZE_PHASE_UNKNOWN, kube_obj_str(js, "phase"), RESIZE_PHASE_NONE,
			   RESIZE_PHASE_UNKNOWN);
	const char *strategy = kube_obj_str(js, "strategy");
	st->copy = strategy && !strcmp(strategy, "copy");
	st->batch = json_object_get(js, "batch");
	st->stage = st->batch ? lookup(stage_names, COPY_STAGE_UNKNOWN, kube_obj_str(st->batch, "step"),
				       COPY_STAGE_UNKNOWN, COPY_STAGE_UNKNOWN)
			      : COPY_STAGE_NONE;
	st->uid = kube_obj_str(js, "statefulSetUID");
	st->started = kube_obj_str(js, "started");
	st->message = kube_obj_str(js, "message");
	st->targets = json_object_get(js, "targets");
	st->classes = json_object_get(js, "classes");
	st->templates = json_object_get(js, "templates");
	st->attributes_classes = json_object_get(js, "attributesClasses");
	st->restart = json_object_get(js, "restart");
	st->lowering = json_object_get(js, "lowering");
	st->lowered = json_object_get(js, "lowered");
	st->offline = json_is_true(json_object_get(js, "offline"));
	st->precopy = json_is_true(json_object_get(js, "precopy"));
	st->ordinals = json_object_get(js, "ordinals");
	st->done = json_object_get(js, "done");
	st->old_volumes = json_object_get(js, "oldVolumes");
	st->completed = kube_obj_str(js, "completed");
	st->keep_old_s = kube_obj_int(js, "keepOldSeconds", NULL, 0);
	st->restore = kube_obj_str(st->batch, "restore");
	return true;
}

void resize_state_release(struct resize_state *st)
{
	json_decref(st->json);
	memset(st, 0, sizeof(*st));
}

json_t *resize_state_time(long long ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[32];
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

void resize_state_set_phase(json_t *js, enum resize_phase phase)
{
	if (phase > RESIZE_PHASE_NONE && phase < RESIZE_PHASE_UNKNOWN)
		json_object_set_new(js, "phase", json_string(phase_names[phase]));
}

void resize_state_set_stage(json_t *js, enum copy_stage stage)
{
	if (stage > COPY_STAGE_NONE && stage < COPY_STAGE_UNKNOWN)
		json_object_set_new(json_object_get(js, "batch"), "step", json_string(stage_names[stage]));
}

json_t *resize_state_next(const struct resize_state *st, long long now_ms, enum resize_phase phase)
{
	json_t *n = st->json ? json_deep_copy(st->json) : json_object();
	resize_state_set_phase(n, phase);
	json_object_set_new(n, "updated", resize_state_time(now_ms));
	return n;
}

json_t *resize_state_next_stage(const struct resize_state *st, long long now_ms, enum copy_stage stage)
{
	json_t *n = resize_state_next(st, now_ms, RESIZE_PHASE_COPYING);
	resize_state_set_stage(n, stage);
	return n;
}

char *resize_state_text(const json_t *js)
{
	/* Every write says which version of the state it is (state_version.h). */
	json_t *stamped = json_copy((json_t *)js);
	state_version_stamp(stamped);
	char *text = json_dumps(stamped, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(stamped);
	return text;
}

bool resize_state_recreating(const json_t *sts)
{
	struct resize_state st;
	resize_state_read(sts, &st);
	const char *own = kube_obj_str(sts, "metadata.uid");
	bool yes = st.uid && own && !strcmp(st.uid, own) &&
		   (st.phase == RESIZE_PHASE_SAVING || st.phase == RESIZE_PHASE_RECREATING ||
		    st.phase == RESIZE_PHASE_COPYING);
	resize_state_release(&st);
	return yes;
}

double resize_state_in_flight_seconds(const json_t *sts, long long now_s)
{
	struct resize_state st;
	resize_state_read(sts, &st);
	double age = -1;
	switch (st.phase) {
	case RESIZE_PHASE_EXPANDING:
	case RESIZE_PHASE_SAVING:
	case RESIZE_PHASE_RECREATING:
	case RESIZE_PHASE_ADOPTING:
	case RESIZE_PHASE_COPYING:
	case RESIZE_PHASE_MODIFYING: {
		int64_t started = st.started ? rfc3339_seconds(st.started) : -1;
		if (started >= 0) /* a start ahead of this clock (skew) counts as just started */
			age = now_s > started ? (double)(now_s - started) : 0;
		break;
	}
	case RESIZE_PHASE_NONE:
	case RESIZE_PHASE_FAILED:
	case RESIZE_PHASE_CLEANING:
	case RESIZE_PHASE_UNKNOWN:
		break;
	}
	resize_state_release(&st);
	return age;
}

size_t resize_state_index(const json_t *obj, char ***values)
{
	if (!kube_obj_annotation(obj, ANNOTATION_RESIZE_STATE))
		return 0;
	*values = xmalloc(sizeof(**values));
	(*values)[0] = xstrdup(RESIZE_STATE_INDEX_VALUE);
	return 1;
}
