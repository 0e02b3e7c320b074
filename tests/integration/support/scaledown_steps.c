#include "scaledown_steps.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "client/kube_object.h"

bool sd_str_is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

/* ---- the fixture ---- */

int sd_setup(void **state)
{
	struct sd_test *t = xcalloc(1, sizeof(*t));
	t->admin = it_admin_client();
	*state = t;
	return 0;
}

int sd_teardown(void **state)
{
	struct sd_test *t = *state;
	if (t->d.pid > 0 && kill(t->d.pid, 0) == 0) {
		kill(t->d.pid, SIGKILL);
		waitpid(t->d.pid, NULL, 0);
	}
	t->d.pid = 0;
	/* A test that failed while recording leaves its recorders running. */
	if (t->pods)
		json_decref(it_recorder_stop(t->pods));
	if (t->pvcs)
		json_decref(it_recorder_stop(t->pvcs));
	if (t->ns) {
		/* A client of its own: the test's may be mid-way through whatever failed. */
		struct kube_client *admin = it_admin_client();
		/* With no operator left to remove it, our finalizer would keep the namespace forever. */
		it_delete_all_removing_finalizer(admin, &KUBE_STATEFULSETS, t->ns, FINALIZER_SCALEDOWN);
		it_namespace_delete(admin, t->ns);
		kube_client_free(admin);
		free(t->ns);
	}
	json_decref(t->pvc_records);
	json_decref(t->pod_records);
	json_decref(t->uids);
	json_decref(t->sts);
	kube_client_free(t->admin);
	free(t);
	*state = NULL;
	return 0;
}

void sd_namespace_new(struct sd_test *t, const char *prefix)
{
	t->ns = it_namespace_new(t->admin, prefix);
}

void sd_create_set(struct sd_test *t, const json_t *sts)
{
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULSETS, t->ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet %s: %s", kube_obj_str(sts, "metadata.name"), err.message);
}

void sd_begin(struct sd_test *t, const char *prefix, json_t *sts, int pods, int claims)
{
	sd_namespace_new(t, prefix);
	t->sts = sts;
	sd_create_set(t, sts);
	it_wait_ready_and_bound(t->admin, t->ns, pods, claims, SD_WAIT_MS);
	t->uids = sd_claim_uids(t);
}

void sd_record(struct sd_test *t, bool claims)
{
	t->pods = it_recorder_start(&KUBE_PODS, t->ns);
	if (claims)
		t->pvcs = it_recorder_start(&KUBE_PVCS, t->ns);
}

void sd_stop_recording(struct sd_test *t)
{
	if (t->pods)
		t->pod_records = it_recorder_stop(t->pods);
	t->pods = NULL;
	if (t->pvcs)
		t->pvc_records = it_recorder_stop(t->pvcs);
	t->pvcs = NULL;
}

json_t *sd_cleanup_lives(const struct sd_test *t, const char *set, size_t n)
{
	json_t *lives = it_lives(t->pod_records, LABEL_CLEANUP_FOR, set);
	assert_int_equal(json_array_size(lives), n);
	return lives;
}

void sd_begin_scaled(struct sd_test *t, const char *prefix, json_t *sts, int pods, int claims, int replicas)
{
	sd_begin(t, prefix, sts, pods, claims);
	sd_record(t, true);
	const char *set = kube_obj_str(sts, "metadata.name");
	sd_operator_start(t, set);

	sd_scale(t, set, replicas);
}

/* ---- the operator ---- */

struct set_ctx {
	struct sd_test *t;
	const char *set;
	const char *const *claims; /* NULL-terminated: the claims the cleanup must delete */
	int succeeded;             /* CleanupSucceeded Events expected */
};

static bool has_finalizer(void *ctx)
{
	struct set_ctx *sc = ctx;
	json_t *sts = it_get(sc->t->admin, &KUBE_STATEFULSETS, sc->t->ns, sc->set);
	bool has = it_has_finalizer(sts, FINALIZER_SCALEDOWN);
	json_decref(sts);
	return has;
}

void sd_operator_start(struct sd_test *t, const char *set)
{
	t->d = daemon_start_operator_crashing(NULL);
	if (!set)
		return;
	/* The operator has taken the StatefulSet on. */
	struct set_ctx sc = {.t = t, .set = set};
	if (!it_wait_every(has_finalizer, &sc, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "no finalizer %s on %s", FINALIZER_SCALEDOWN, set);
}

void sd_operator_stop(struct sd_test *t)
{
	daemon_stop_operator(&t->d);
	t->d.pid = 0;
}

void sd_operator_run_until_crash(struct sd_test *t, const char *step)
{
	char *log = NULL;
	if (!daemon_run_operator_until_crash(step, SD_WAIT_MS, &log)) {
		sd_show_namespace(t->ns);
		fail_msg("the operator did not kill itself after %s; its log:\n%s", step, log);
	}
	printf("# kill -9 after %s\n", step);
}

void sd_show_namespace(const char *ns)
{
	it_sh("kubectl get -n %s sts,pods,pvc -o wide >&2; kubectl get -n %s events >&2; "
	      "kubectl get sts -n %s -o jsonpath='{range .items[*]}{.metadata.name} "
	      "{.metadata.annotations}{\"\\n\"}{end}' >&2",
	      ns, ns, ns);
}

/* ---- StatefulSets ---- */

json_t *sd_cleaned_statefulset(const char *name, int replicas, const char *policy, const char *claims,
			       const char *outcome, const char *delay, const char *message)
{
	json_t *sts = it_statefulset(name, replicas, policy, claims);
	/* Labels the selector (app=<name>) does not match: the StatefulSet must not adopt its cleanup pods. */
	char *app = xasprintf("%s-cleanup", name);
	char *tmpl = it_testbed_pod_template(app, outcome, delay, message, claims);
	it_set_annotation(sts, ANNOTATION_SCALEDOWN_TEMPLATE, tmpl);
	free(tmpl);
	free(app);
	return sts;
}

void sd_scale(struct sd_test *t, const char *name, int replicas)
{
	it_merge_patch(t->admin, &KUBE_STATEFULSETS, t->ns, name, "{\"spec\":{\"replicas\":%d}}", replicas);
}

char *sd_status(const struct sd_test *t, const char *set)
{
	json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, set);
	const char *s = it_annotation(sts, ANNOTATION_SCALEDOWN_STATUS);
	char *out = s ? xstrdup(s) : NULL;
	json_decref(sts);
	return out;
}

int sd_cleanup_pods(const struct sd_test *t, const char *set)
{
	char *selector = xasprintf("%s=%s", LABEL_CLEANUP_FOR, set);
	json_t *pods = it_list(t->admin, &KUBE_PODS, t->ns, selector);
	int n = (int)json_array_size(pods);
	json_decref(pods);
	free(selector);
	return n;
}

static bool cleanup_over(void *ctx)
{
	struct set_ctx *sc = ctx;
	if (sd_cleanup_pods(sc->t, sc->set))
		return false;
	for (const char *const *claim = sc->claims; *claim; claim++)
		if (!sd_claim_gone_or_deleting(sc->t, *claim))
			return false;
	json_t *sts = it_get(sc->t->admin, &KUBE_STATEFULSETS, sc->t->ns, sc->set);
	bool quiet = sts && !it_annotation(sts, ANNOTATION_SCALEDOWN_STATUS);
	json_decref(sts);
	return quiet && it_event_count(sc->t->admin, sc->t->ns, "CleanupSucceeded", sc->set) >= sc->succeeded;
}

void sd_wait_cleanup_over(struct sd_test *t, const char *set, const char *const *claims, int succeeded)
{
	struct set_ctx sc = {t, set, claims, succeeded};
	if (!it_wait_every(cleanup_over, &sc, SD_WAIT_MS, SD_POLL_MS))
		sd_fail_with_log(t, "the cleanup of %s did not end", set);
}

bool sd_pod_gone(void *ctx)
{
	struct sd_named *n = ctx;
	json_t *pod = it_get(n->t->admin, &KUBE_PODS, n->t->ns, n->name);
	json_decref(pod);
	return pod == NULL;
}

/* ---- claims ---- */

char *sd_claim_name(const char *tmpl, const char *set, int ordinal)
{
	return xasprintf("%s-%s-%d", tmpl, set, ordinal);
}

json_t *sd_claim_uids(const struct sd_test *t)
{
	json_t *pvcs = it_list(t->admin, &KUBE_PVCS, t->ns, NULL), *uids = json_object();
	size_t i;
	json_t *p;
	json_array_foreach(pvcs, i, p) json_object_set_new(uids, kube_obj_str(p, "metadata.name"),
							   json_string(kube_obj_str(p, "metadata.uid")));
	json_decref(pvcs);
	return uids;
}

bool sd_claim_gone_or_deleting(const struct sd_test *t, const char *name)
{
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, name);
	bool gone = !pvc || kube_obj_str(pvc, "metadata.deletionTimestamp");
	json_decref(pvc);
	return gone;
}

void sd_expect_claims_kept(const struct sd_test *t, const char *const *names)
{
	for (; *names; names++) {
		json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, *names);
		if (!pvc)
			fail_msg("claim %s is gone", *names);
		if (!sd_str_is(kube_obj_str(pvc, "metadata.uid"), json_string_value(json_object_get(t->uids, *names))))
			fail_msg("claim %s was replaced (new UID)", *names);
		if (kube_obj_str(pvc, "metadata.deletionTimestamp"))
			fail_msg("claim %s is being deleted", *names);
		json_decref(pvc);
	}
}
