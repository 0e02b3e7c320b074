/*
 * Issue 27, finding 1: JSON from outside is parsed under a budget of heap
 * (util/json_budget.h), on the real test bed.
 *
 * The webhook's port: anyone who reaches it can send a body before any
 * credential is checked. Two bodies of 1.3 MB holding 450,000 "{}" each,
 * sent at once without credentials, took the operator from 15 MB to 214 MB
 * (the Deployment's limit is 128 Mi). Now its peak RSS (VmHWM) stays
 * below 64 MB, both are refused (400) and /healthz answers; so it does
 * with two of the worst reviews it accepts (as many "{}" as the budget
 * takes), both answered.
 *
 * The caches: a StatefulCluster whose
 * spec.template.metadata.managedFields[0].fieldsV1 (free-form in the
 * Kubernetes schema, so kept as written) holds 450,000 "{}" is left out of
 * the operator's cache: the operator does not die, its caches sync,
 * one Warning Event ObjectTooLarge names the object, the refusal is
 * counted in /metrics, and a small StatefulCluster beside it is reconciled
 * as always.
 *
 * The operator runs as its own ServiceAccount, in cluster scope.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "daemon.h"
#include "itest.h"
#include "util/proc_status.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "webhook/webhook.h"
#include "webhook_steps.h"

#define BRACES 450000
/* The bound: far below the 128 Mi limit, whatever the body. */
#if defined(__SANITIZE_ADDRESS__)
/*
 * AddressSanitizer's shadow memory and its quarantine of freed blocks
 * (256 MiB by default) inflate RSS about fourfold: 64 MB of the build users
 * run, measured in the plain build, is 256 MB here. Without the budget the
 * hostile bodies take the plain build to 214 MB, so this bound still fails.
 */
#define PEAK_MAX_KB (4 * 64 * 1024)
#else
#define PEAK_MAX_KB (64 * 1024)
#endif

struct pb {
	struct kube_client *admin;
	struct daemon d;
	char *ns;
	int webhook_port, probe_port, metrics_port;
	char body[64]; /* the file of the hostile body */
};

/* The operator, its webhook, probes and metrics on free loopback ports; waits for its caches. */
static void start_operator(struct pb *p)
{
	char webhook[32], probe[32], metrics[32];
	p->webhook_port = wh_free_port();
	p->probe_port = wh_free_port();
	p->metrics_port = wh_free_port();
	snprintf(webhook, sizeof(webhook), "127.0.0.1:%d", p->webhook_port);
	snprintf(probe, sizeof(probe), "127.0.0.1:%d", p->probe_port);
	snprintf(metrics, sizeof(metrics), "127.0.0.1:%d", p->metrics_port);
	const char *args[] = {"--kubeconfig",
			      getenv("SOP_OPERATOR_KUBECONFIG"),
			      "--metrics-bind-address",
			      metrics,
			      "--health-probe-bind-address",
			      probe,
			      "--webhook-bind-address",
			      webhook,
			      "--webhook-cert-names",
			      "127.0.0.1",
			      NULL};
	daemon_start(&p->d, args, NULL);
	if (!daemon_wait_log(&p->d, "all caches synced", 60000)) {
		char *log = daemon_log(&p->d);
		fail_msg("operator did not start: %s", log);
	}
}

/*
 * Until the webhook's own caches synced it answers 503 without reading the
 * body: waits for its 400 to text that is not JSON.
 */
static void wait_webhook_reads(struct pb *p)
{
	for (int i = 0; i < 100; i++) {
		char *code = it_sh_output("curl -sk -o /dev/null -w '%%{http_code}' -X POST -H 'Content-Type: "
					  "application/json' -d 'x' https://127.0.0.1:%d" WEBHOOK_PATH,
					  p->webhook_port);
		bool ready = code && !strcmp(code, "400");
		free(code);
		if (ready)
			return;
		it_sleep_ms(100);
	}
	fail_msg("the webhook never read a body");
}

static int setup(void **state)
{
	struct pb *p = xcalloc(1, sizeof(*p));
	p->admin = it_admin_client();
	p->ns = it_namespace_new(p->admin, "it-parse-budget");
	snprintf(p->body, sizeof(p->body), "/tmp/it-parse-budget-%d.json", (int)getpid());
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pb *p = *state;
	if (p->d.pid > 0) {
		kill(p->d.pid, SIGKILL);
		daemon_wait_exit(&p->d, 10000);
		daemon_cleanup(&p->d);
	}
	it_namespace_delete(p->admin, p->ns);
	unlink(p->body);
	kube_client_free(p->admin);
	free(p->ns);
	free(p);
	return 0;
}

/* n "{}" separated by commas, into sb. */
static void braces(struct strbuf *sb, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strbuf_addstr(sb, i ? ",{}" : "{}") < 0)
			abort();
}

/*
 * The test: two bodies of 450,000 "{}" (1.3 MB each), sent at once
 * to the webhook's port without any credential (its TLS certificate not
 * even checked). Both are refused with the budget named; the operator's
 * peak RSS stays below 64 MB; it still answers /healthz and runs.
 */
static void test_two_hostile_reviews_at_once(void **state)
{
	struct pb *p = *state;
	struct strbuf sb = STRBUF_INIT;
	if (strbuf_addstr(&sb, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[") < 0)
		abort();
	braces(&sb, BRACES);
	if (strbuf_addstr(&sb, "]}") < 0)
		abort();
	assert_true(sb.len > 1300000 && sb.len < 1400000);
	FILE *f = fopen(p->body, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(sb.buf, 1, sb.len, f), sb.len);
	fclose(f);
	strbuf_release(&sb);

	start_operator(p);
	assert_int_equal(http_get(p->probe_port, "/healthz", NULL), 200);
	long before_kb = proc_status_kb(p->d.pid, "VmHWM");
	wait_webhook_reads(p);
	char *out = it_sh_output(
		"for i in 1 2; do curl -sk -o /tmp/it-parse-budget-%d-$i.out -w '%%{http_code}\\n' -X POST "
		"-H 'Content-Type: application/json' --data-binary @%s https://127.0.0.1:%d" WEBHOOK_PATH
		" & done; wait",
		(int)getpid(), p->body, p->webhook_port);
	long peak_kb = proc_status_kb(p->d.pid, "VmHWM");
	print_message("peak RSS (VmHWM) %ld kB before the bodies, %ld kB after; answers: %s\n", before_kb, peak_kb,
		      out ? out : "(none)");
	int exit_code = 0;
	if (!daemon_running(&p->d, &exit_code))
		fail_msg("the operator died (exit %d) after two hostile reviews", exit_code);
	if (peak_kb < 0 || peak_kb >= PEAK_MAX_KB)
		fail_msg("peak RSS %ld kB, the bound is %d kB", peak_kb, PEAK_MAX_KB);
	/*
	 * Each is refused: 400 once parsed up to the budget, or 503 at once
	 * when the other is being decided (one large review at a time,
	 * WEBHOOK_LARGE_AT_ONCE). At least one met the parse budget.
	 */
	assert_non_null(out);
	if (strcmp(out, "400\n400") && strcmp(out, "400\n503") && strcmp(out, "503\n400"))
		fail_msg("answers: %s", out);
	free(out);
	int budget_said = 0;
	for (int i = 1; i <= 2; i++) {
		out = it_sh_output("cat /tmp/it-parse-budget-%d-%d.out; rm -f /tmp/it-parse-budget-%d-%d.out", (int)getpid(),
				   i, (int)getpid(), i);
		budget_said += out && strstr(out, "its parsed tree takes more than 16777216 bytes of memory, the "
						  "webhook's budget for an AdmissionReview") != NULL;
		free(out);
	}
	assert_true(budget_said >= 1);
	assert_int_equal(http_get(p->probe_port, "/healthz", NULL), 200);
}

/* A review whose object holds n "{}". New string. */
static char *review_of(size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	if (strbuf_addstr(&sb, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
			       "{\"uid\":\"u-1\",\"operation\":\"UPDATE\",\"object\":{\"junk\":[") < 0)
		abort();
	braces(&sb, n);
	if (strbuf_addstr(&sb, "]}}}") < 0)
		abort();
	return strbuf_detach(&sb);
}

/* Whether the webhook's limits (webhook.c's review_limits) accept text. */
static bool review_accepted(const char *text)
{
	struct doc_limits lim = {.max_bytes = WEBHOOK_MAX_BODY,
				 .max_depth = DOC_MAX_DEPTH,
				 .max_nodes = 1000000,
				 .max_expanded_bytes = WEBHOOK_MAX_BODY,
				 .max_parsed_bytes = WEBHOOK_MAX_PARSED};
	json_t *v = NULL;
	char *msg = NULL;
	int rc = json_load_limited(text, strlen(text), 0, &lim, &v, &msg);
	json_decref(v);
	free(msg);
	return rc == 0;
}

/*
 * The worst the webhook accepts: two reviews at once, each of as many "{}"
 * as its budget takes (the costliest shape a byte can have). Both are
 * answered (200), and the peak RSS stays below the same 64 MB: the budget
 * times the requests handled at once fits, not only the refusals.
 */
static void test_two_worst_accepted_reviews_at_once(void **state)
{
	struct pb *p = *state;
	size_t lo = 1, hi = BRACES;
	while (lo < hi) { /* the most "{}" whose review costs no more than the budget */
		size_t mid = (lo + hi + 1) / 2;
		char *r = review_of(mid);
		bool ok = review_accepted(r);
		free(r);
		if (ok)
			lo = mid;
		else
			hi = mid - 1;
	}
	char *text = review_of(lo);
	print_message("worst accepted review: %zu \"{}\", %zu bytes (budget %u)\n", lo, strlen(text),
		      WEBHOOK_MAX_PARSED);
	FILE *f = fopen(p->body, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);

	start_operator(p);
	wait_webhook_reads(p);
	long before_kb = proc_status_kb(p->d.pid, "VmHWM");
	char *out = it_sh_output(
		"for i in 1 2; do curl -sk -o /dev/null -w '%%{http_code}\\n' -X POST -H 'Content-Type: application/json' "
		"--data-binary @%s https://127.0.0.1:%d" WEBHOOK_PATH " & done; wait",
		p->body, p->webhook_port);
	long peak_kb = proc_status_kb(p->d.pid, "VmHWM");
	print_message("peak RSS (VmHWM) %ld kB before, %ld kB after two worst accepted reviews; answers: %s\n",
		      before_kb, peak_kb, out ? out : "(none)");
	assert_non_null(out);
	/* Decided (200), or 503 at once while the other large review was (one at a time). */
	if (strcmp(out, "200\n200") && strcmp(out, "200\n503") && strcmp(out, "503\n200"))
		fail_msg("answers: %s", out);
	free(out);
	if (peak_kb < 0 || peak_kb >= PEAK_MAX_KB)
		fail_msg("peak RSS %ld kB, the bound is %d kB", peak_kb, PEAK_MAX_KB);
	assert_int_equal(http_get(p->probe_port, "/healthz", NULL), 200);
}

/* A StatefulCluster named name in ns, spec.template.metadata.managedFields[0].fieldsV1.junk holding n "{}"
 * (the CRD keeps a free-form object as written). New object (text). */
static char *cluster_text(const char *ns, const char *name, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	char head[512];
	snprintf(head, sizeof(head),
		 "{\"apiVersion\":\"stateful-operator.io/v1alpha1\",\"kind\":\"StatefulCluster\",\"metadata\":"
		 "{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"replicas\":0,\"selector\":{\"matchLabels\":"
		 "{\"app\":\"%s\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"%s\"},\"managedFields\":"
		 "[{\"fieldsV1\":{\"junk\":[",
		 name, ns, name, name);
	if (strbuf_addstr(&sb, head) < 0)
		abort();
	braces(&sb, n);
	if (strbuf_addstr(&sb, "]}}]},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}}}") < 0)
		abort();
	return strbuf_detach(&sb);
}

static bool event_seen(void *ctx)
{
	struct pb *p = ctx;
	return it_event_count(p->admin, p->ns, "ObjectTooLarge", "huge") > 0;
}

/* The operator's /metrics has a line starting with prefix whose value is at least min. */
static bool metric_at_least(int port, const char *prefix, double min)
{
	char *body = NULL;
	if (http_get(port, "/metrics", &body) != 200) {
		free(body);
		return false;
	}
	bool ok = false;
	for (char *line = body; line && *line && !ok;) {
		char *nl = strchr(line, '\n');
		if (!strncmp(line, prefix, strlen(prefix)))
			ok = strtod(line + strlen(prefix), NULL) >= min;
		line = nl ? nl + 1 : NULL;
	}
	free(body);
	return ok;
}

/*
 * A StatefulCluster of 1.3 MB of "{}" (about 100 MiB once parsed) in the
 * cache's way, made before the operator starts (the LIST meets it) and
 * changed while it runs (a watch event): the operator lives, its caches
 * sync, it says so once per version (a Warning Event on the object), the
 * metric counts it, and a small StatefulCluster is still reconciled.
 */
static void test_huge_object_left_out_of_the_cache(void **state)
{
	struct pb *p = *state;
	char *text = cluster_text(p->ns, "huge", BRACES);
	assert_true(strlen(text) > 1300000);
	FILE *f = fopen(p->body, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	char *out = NULL;
	if (it_sh_capture(&out, "kubectl create -f %s 2>&1", p->body))
		fail_msg("the API server refused the huge StatefulCluster: %s", out);
	free(out);

	start_operator(p);
	if (!it_wait(event_seen, p, 30000))
		fail_msg("no ObjectTooLarge Event on the huge StatefulCluster");
	assert_true(metric_at_least(p->metrics_port,
				    "stateful_operator_informer_objects_refused_total{resource=\"statefulclusters\"} ", 1));
	/* A watch event: the object changed while the operator runs. */
	it_sh("kubectl -n %s label statefulcluster huge changed=yes >/dev/null", p->ns);
	it_sleep_ms(3000);
	/* A small one beside it is reconciled: its state is written. */
	text = cluster_text(p->ns, "small", 1);
	f = fopen(p->body, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	if (it_sh_capture(&out, "kubectl create -f %s 2>&1", p->body))
		fail_msg("create small: %s", out);
	free(out);
	bool reconciled = false;
	for (int i = 0; i < 300 && !reconciled; i++) {
		json_t *c = it_get(p->admin, &KUBE_STATEFULCLUSTERS, p->ns, "small");
		reconciled = c && json_object_get(c, "status") && json_object_size(json_object_get(c, "status")) > 0;
		json_decref(c);
		if (!reconciled)
			it_sleep_ms(100);
	}
	int exit_code = 0;
	if (!daemon_running(&p->d, &exit_code))
		fail_msg("the operator died (exit %d)", exit_code);
	if (!reconciled) {
		char *log = daemon_log(&p->d);
		fail_msg("the small StatefulCluster was not reconciled; log:\n%s", log);
	}
	/* Two versions seen (created, then labelled): one Event each at most, however many relists. */
	int events = it_event_count(p->admin, p->ns, "ObjectTooLarge", "huge");
	if (events < 1 || events > 2)
		fail_msg("%d ObjectTooLarge Events", events);
	long peak_kb = proc_status_kb(p->d.pid, "VmHWM");
	print_message("peak RSS (VmHWM) with the huge StatefulCluster: %ld kB\n", peak_kb);
	assert_true(peak_kb > 0 && peak_kb < PEAK_MAX_KB);
	assert_int_equal(http_get(p->probe_port, "/healthz", NULL), 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_hostile_reviews_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_worst_accepted_reviews_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_object_left_out_of_the_cache, setup, teardown),
	};
	if (getenv("IT_FILTER")) /* run one test by hand: IT_FILTER=test_name */
		cmocka_set_test_filter(getenv("IT_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
