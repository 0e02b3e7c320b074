/* Helpers for the tests on the real node (see realnode.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "realnode.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "controllers/resize/resize_plan.h"
#include "controllers/scaledown/scaledown_plan.h"
#include "itest.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define WORKLOAD_CONFIGMAP "rn-workload"

int rn_setup(void **state)
{
	struct rn_test *t = xcalloc(1, sizeof(*t));
	t->admin = it_admin_client();
	t->ns = it_namespace_new(t->admin, "rn");
	snprintf(t->report, sizeof(t->report), "/tmp/sop-rn-XXXXXX");
	if (!mkdtemp(t->report))
		fail_msg("mkdtemp: %s", strerror(errno));
	chmod(t->report, 0777);
	if (it_sh("kubectl create configmap -n %s " WORKLOAD_CONFIGMAP " --from-file=workload.sh=%s/tests/realnode/workload.sh "
		  ">/dev/null",
		  t->ns, it_source_dir()))
		fail_msg("creating the workload ConfigMap failed");
	*state = t;
	return 0;
}

int rn_teardown(void **state)
{
	struct rn_test *t = *state;
	if (t->d.pid > 0) {
		kill(t->d.pid, SIGKILL);
		daemon_wait_exit(&t->d, 10000);
		daemon_cleanup(&t->d);
	}
	/* An operator deployed in the cluster by a test (rn_deploy.c) goes too, whatever happened. */
	it_sh("kubectl delete deployment -n stateful-operator-system stateful-operator --ignore-not-found "
	      "--wait=true >/dev/null 2>&1");
	if (t->ns) {
		/* With the operator gone, nobody would remove its scale-down finalizer. */
		it_delete_all_removing_finalizer(t->admin, &KUBE_STATEFULSETS, t->ns, FINALIZER_SCALEDOWN);
		it_namespace_delete(t->admin, t->ns);
	}
	it_sh("rm -rf %s", t->report);
	kube_client_free(t->admin);
	free(t->ns);
	free(t);
	return 0;
}

void rn_start_operator(struct rn_test *t)
{
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--copy-image", RN_OPERATOR_IMAGE, NULL};
	daemon_start(&t->d, args, NULL);
	if (!daemon_wait_log(&t->d, "all caches synced", 20000))
		fail_msg("operator did not start");
}

json_t *rn_workload_set(const struct rn_test *t, const char *name, int replicas, const char *cls, const char *size,
			int data_mb)
{
	return it_json(
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"%s\"},"
		"\"spec\":{\"replicas\":%d,\"serviceName\":\"%s\",\"podManagementPolicy\":\"Parallel\","
		"\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
		"\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"}},\"spec\":{"
		"\"nodeSelector\":{\"" RN_NODE_LABEL "\":\"real\"},"
		"\"tolerations\":[{\"key\":\"" RN_NODE_LABEL "\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
		"\"terminationGracePeriodSeconds\":20,"
		"\"containers\":[{\"name\":\"db\",\"image\":\"" RN_TOOLS_IMAGE "\",\"imagePullPolicy\":\"Never\","
		"\"command\":[\"sh\",\"/workload/workload.sh\"],"
		"\"env\":[{\"name\":\"DATA_MB\",\"value\":\"%d\"},"
		"{\"name\":\"POD_UID\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.uid\"}}},"
		"{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}],"
		"\"readinessProbe\":{\"exec\":{\"command\":[\"test\",\"-e\",\"/tmp/ready\"]},"
		"\"periodSeconds\":1},"
		"\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"},"
		"{\"name\":\"workload\",\"mountPath\":\"/workload\"},{\"name\":\"report\",\"mountPath\":\"/report\"}]}],"
		"\"volumes\":[{\"name\":\"workload\",\"configMap\":{\"name\":\"" WORKLOAD_CONFIGMAP "\"}},"
		"{\"name\":\"report\",\"hostPath\":{\"path\":\"%s\",\"type\":\"Directory\"}}]}},"
		"\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},"
		"\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"%s\","
		"\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}]}}",
		name, replicas, name, name, name, data_mb, t->report, cls, size);
}

char *rn_pod_uid(struct rn_test *t, const char *name)
{
	json_t *pod = it_get(t->admin, &KUBE_PODS, t->ns, name);
	char *uid = pod && !kube_obj_str(pod, "metadata.deletionTimestamp")
			    ? xstrdup(kube_obj_str(pod, "metadata.uid"))
			    : NULL;
	json_decref(pod);
	return uid;
}

char *rn_report(const struct rn_test *t, const char *uid, const char *what)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s.%s", t->report, uid, what);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct stat st;
	char *text = NULL;
	if (fstat(fileno(f), &st) == 0) {
		text = xmalloc((size_t)st.st_size + 1);
		size_t n = fread(text, 1, (size_t)st.st_size, f);
		text[n] = '\0';
	}
	fclose(f);
	return text;
}

char *rn_wait_report(const struct rn_test *t, const char *uid, const char *what, long timeout_ms)
{
	double deadline = it_now_ms() + (double)timeout_ms;
	char *text;
	while (!(text = rn_report(t, uid, what))) {
		if (it_now_ms() > deadline) {
			rn_dump_state(t);
			fail_msg("pod %s wrote no %s report in %ld ms", uid, what, timeout_ms);
		}
		it_sleep_ms(200);
	}
	return text;
}

struct workload_ctx {
	struct rn_test *t;
	const char *set;
	int replicas;
};

static bool workload_up(void *ctx)
{
	struct workload_ctx *w = ctx;
	for (int k = 0; k < w->replicas; k++) {
		char name[128];
		snprintf(name, sizeof(name), "%s-%d", w->set, k);
		json_t *pod = it_get(w->t->admin, &KUBE_PODS, w->t->ns, name);
		bool ready = pod && kube_obj_condition(pod, "Ready", NULL) &&
			     !kube_obj_str(pod, "metadata.deletionTimestamp");
		char *start = ready ? rn_report(w->t, kube_obj_str(pod, "metadata.uid"), "start") : NULL;
		json_decref(pod);
		free(start);
		if (!start)
			return false;
	}
	return true;
}

void rn_dump_state(const struct rn_test *t)
{
	fprintf(stderr, "---- state of namespace %s on failure ----\n", t->ns);
	it_sh("kubectl get pods,pvc -o wide -n %s >&2; kubectl get pv -o wide >&2", t->ns);
	it_sh("kubectl get events -n %s --sort-by=.lastTimestamp >&2", t->ns);
	it_sh("kubectl get pods -n %s -o jsonpath='{range .items[*]}{.metadata.name}: "
	      "{.status.containerStatuses}{\"\\n\"}{end}' >&2",
	      t->ns);
	if (t->d.pid > 0) {
		char *log = daemon_log(&t->d);
		size_t n = log ? strlen(log) : 0;
		fprintf(stderr, "---- operator log (last 32 KiB) ----\n%s\n", log ? log + (n > 32768 ? n - 32768 : 0) : "");
		free(log);
	}
	fprintf(stderr, "---- end of state ----\n");
}

void rn_wait_workload(struct rn_test *t, const char *set, int replicas)
{
	struct workload_ctx w = {t, set, replicas};
	if (!it_wait_every(workload_up, &w, RN_WAIT_MS, 250)) {
		rn_dump_state(t);
		fail_msg("%s: %d replicas not Ready with a start report after %ld ms", set, replicas, RN_WAIT_MS);
	}
}

int64_t rn_df_bytes(const char *df)
{
	long long size = -1;
	if (!df || sscanf(df, "%*s %lld", &size) != 1)
		fail_msg("not a df report: %s", df ? df : "(none)");
	return size;
}

void rn_assert_same_tree(const char *before, const char *after, const char *what)
{
	if (!before || !after)
		fail_msg("%s: a manifest is missing", what);
	if (!strcmp(before, after))
		return;
	const char *b = before, *a = after;
	int line = 1;
	while (*b && *a) {
		size_t lb = strcspn(b, "\n"), la = strcspn(a, "\n");
		if (lb != la || memcmp(a, b, lb))
			fail_msg("%s: trees differ at manifest line %d:\n  before: %.*s\n  after:  %.*s", what, line,
				 (int)lb, b, (int)la, a);
		b += lb + (b[lb] == '\n');
		a += la + (a[la] == '\n');
		line++;
	}
	fail_msg("%s: trees differ: one manifest ends at line %d", what, line);
}

struct resize_ctx {
	struct rn_test *t;
	const char *set;
};

/* Started: the status is there, or (an in-place resize can be over in a few hundred ms) its Event is. */
static bool resize_seen(void *ctx)
{
	struct resize_ctx *r = ctx;
	json_t *sts = it_get(r->t->admin, &KUBE_STATEFULSETS, r->t->ns, r->set);
	bool seen = sts && it_annotation(sts, ANNOTATION_RESIZE_STATUS);
	json_decref(sts);
	return seen || it_event_count(r->t->admin, r->t->ns, "ResizeStarted", r->set) > 0;
}

static bool resize_over(void *ctx)
{
	struct resize_ctx *r = ctx;
	return rn_resize_over(r->t, r->set);
}

void rn_wait_resize(struct rn_test *t, const char *set, long timeout_ms, struct rn_sampler *sampler)
{
	struct resize_ctx r = {t, set};
	bool done = it_wait_every(resize_seen, &r, 30000, 200) && it_wait_every(resize_over, &r, timeout_ms, 500);
	if (sampler)
		rn_sampler_stop(sampler);
	if (!done) {
		rn_dump_state(t);
		fail_msg("%s: resize not started and over within %ld ms", set, timeout_ms);
	}
}

bool rn_resize_over(struct rn_test *t, const char *set)
{
	char backup[256];
	snprintf(backup, sizeof(backup), "%s" BACKUP_SUFFIX, set);
	json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, set);
	json_t *cm = it_get(t->admin, &KUBE_CONFIGMAPS, t->ns, backup);
	bool over = sts && !cm && !it_annotation(sts, ANNOTATION_RESIZE_STATE);
	json_decref(sts);
	json_decref(cm);
	return over;
}

static void *sampler_main(void *arg)
{
	struct rn_sampler *s = arg;
	struct kube_client *c = it_admin_client();
	double last = it_now_ms();
	while (!atomic_load(&s->stop)) {
		json_t *pods = NULL;
		struct kube_error err;
		if (kube_list_all(c, &KUBE_PODS, s->ns, NULL, 0, &pods, NULL, &err) == 0) {
			int down = 0;
			for (int k = 0; k < s->replicas; k++) {
				char name[128];
				snprintf(name, sizeof(name), "%s-%d", s->set, k);
				bool ready = false;
				size_t i;
				json_t *p;
				json_array_foreach(pods, i, p) {
					const char *n = kube_obj_str(p, "metadata.name");
					if (n && !strcmp(n, name))
						ready = kube_obj_condition(p, "Ready", NULL) &&
							!kube_obj_str(p, "metadata.deletionTimestamp");
				}
				down += !ready;
			}
			double now = it_now_ms();
			s->not_ready_s += down * (now - last) / 1000.0;
			last = now;
			if (down > s->max_down)
				s->max_down = down;
		}
		json_decref(pods);
		it_sleep_ms(100);
	}
	kube_client_free(c);
	return NULL;
}

void rn_sampler_start(struct rn_sampler *s, const char *ns, const char *set, int replicas)
{
	memset(s, 0, sizeof(*s));
	s->ns = ns;
	s->set = set;
	s->replicas = replicas;
	if (pthread_create(&s->thread, NULL, sampler_main, s))
		fail_msg("pthread_create");
}

void rn_sampler_stop(struct rn_sampler *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
}

char *rn_resize_phase(struct rn_test *t, const char *set)
{
	json_t *sts = it_get(t->admin, &KUBE_STATEFULSETS, t->ns, set);
	const char *text = sts ? it_annotation(sts, ANNOTATION_RESIZE_STATE) : NULL;
	json_t *st = text ? json_loads(text, 0, NULL) : NULL;
	const char *phase = json_string_value(json_object_get(st, "phase"));
	char *out = phase ? xstrdup(phase) : NULL;
	json_decref(st);
	json_decref(sts);
	return out;
}

void rn_create_workload(struct rn_test *t, json_t *sts, int replicas)
{
	struct kube_error err;
	if (kube_create(t->admin, &KUBE_STATEFULSETS, t->ns, sts, NULL, &err) < 0)
		fail_msg("create StatefulSet: %s", err.message);
	rn_wait_workload(t, kube_obj_str(sts, "metadata.name"), replicas);
}

char *rn_claim_volume(struct rn_test *t, const char *claim)
{
	json_t *pvc = it_get(t->admin, &KUBE_PVCS, t->ns, claim);
	const char *pv = pvc ? kube_obj_str(pvc, "spec.volumeName") : NULL;
	char *out = pv ? xstrdup(pv) : NULL;
	json_decref(pvc);
	return out;
}

json_t *rn_workload_cluster(const struct rn_test *t, const char *name, int replicas, const char *cls,
			    const char *size, const char *when_replaced)
{
	json_t *c = rn_workload_set(t, name, replicas, cls, size, 4);
	json_t *spec = json_object_get(c, "spec");
	json_object_set_new(c, "apiVersion", json_string("stateful-operator.io/v1alpha1"));
	json_object_set_new(c, "kind", json_string("StatefulCluster"));
	json_object_del(spec, "podManagementPolicy");
	json_object_set_new(spec, "persistentVolumeClaimRetentionPolicy",
			    json_pack("{s:s, s:s, s:s}", "whenDeleted", "Delete", "whenScaled", "Delete",
				      "whenReplaced", when_replaced));
	/*
	 * A member not Ready for 5 s is replaced, but not while it starts: the
	 * first pods on a cold node can take longer than any short grace.
	 */
	json_object_set_new(spec, "replacement",
			    json_pack("{s:i, s:i}", "startupGraceSeconds", RN_WAIT_MS / 1000, "unhealthyAfterSeconds", 5));
	return c;
}

void rn_sha256_hex(const char *text, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL) || n != 32)
		fail_msg("sha256 failed");
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

bool rn_backing_file_exists(const char *pv)
{
	const char *state = getenv("LOCAL_CLUSTER_DIR");
	if (!state || !*state)
		fail_msg("LOCAL_CLUSTER_DIR is not set: eval \"$(scripts/local-cluster env)\" first");
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/node/volumes/%s.img", state, pv);
	return stat(path, &st) == 0;
}

void rn_annotate(struct rn_test *t, const char *object, const char *annotations)
{
	if (it_sh("kubectl annotate -n %s %s %s >/dev/null", t->ns, object, annotations))
		fail_msg("kubectl annotate %s %s failed", object, annotations);
}

void rn_assert_copied_intact(struct rn_test *t, const char *set, int replicas, char **old_uid, int64_t min_bytes,
			     const char *what)
{
	for (int k = 0; k < replicas; k++) {
		char pod[64], label[160];
		snprintf(pod, sizeof(pod), "%s-%d", set, k);
		char *uid = rn_pod_uid(t, pod);
		char *before = rn_wait_report(t, old_uid[k], "stop", 1000);
		char *after = rn_wait_report(t, uid, "start", 1000);
		snprintf(label, sizeof(label), "%s %s", pod, what);
		rn_assert_same_tree(before, after, label);
		char *df = rn_wait_report(t, uid, "df", 1000);
		assert_true(rn_df_bytes(df) > min_bytes);
		free(df);
		free(after);
		free(before);
		free(uid);
		free(old_uid[k]);
		old_uid[k] = NULL;
	}
}

char *rn_api_port(void)
{
	char *server = it_sh_output("kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'");
	const char *port = strrchr(server, ':');
	if (!port)
		fail_msg("no port in the API server's address \"%s\"", server);
	char *out = xstrdup(port + 1);
	free(server);
	return out;
}

char *rn_deployed_leader(struct rn_test *t)
{
	json_t *lease = it_get(t->admin, &KUBE_LEASES, RN_OPERATOR_NS, "stateful-operator");
	const char *holder = lease ? kube_obj_str(lease, "spec.holderIdentity") : NULL;
	char *pod = holder && *holder ? xstrndup(holder, strcspn(holder, "_")) : NULL;
	json_decref(lease);
	return pod;
}

void rn_start_copy_resize(struct rn_test *t, const char *set, int replicas, char **old_uid)
{
	json_t *sts = rn_workload_set(t, set, replicas, "local-fixed", "64Mi", 16);
	rn_create_workload(t, sts, replicas);
	json_decref(sts);
	for (int k = 0; k < replicas; k++) {
		char pod[64];
		snprintf(pod, sizeof(pod), "%s-%d", set, k);
		old_uid[k] = rn_pod_uid(t, pod);
	}
	char *what = xasprintf("statefulset/%s", set);
	rn_annotate(t, what, "resize.stateful-operator.io/data=128Mi");
	free(what);
}
