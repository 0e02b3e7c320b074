/*
 * The admission webhook under load, on the test bed: six worst-case
 * reviews sent at once straight to the operator's webhook port, as anyone
 * in the cluster network can, each 2.6 MB of tiny volumeClaimTemplates
 * (more than the 16 the operator changes), then a small legitimate review
 * and /healthz, four times 0.3 s apart. They answer within a few seconds
 * (the legitimate review decided as without the load), and every
 * worst-case review is refused in bounded time: denied by the count, 503
 * (over its budget, another large review being decided, no room for its
 * body) or cut unread. Before the count came first, each
 * worst-case review held one of the webhook's two HTTP threads for more
 * than a minute comparing template names in pairs, and the legitimate
 * review waited behind them past the API server's timeout.
 *
 * The reviews go to the operator's port directly: no webhook configuration
 * is registered, so no other test's StatefulSets are affected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "daemon.h"
#include "itest.h"
#include "util/strbuf.h"
#include "util/xalloc.h"
#include "webhook/webhook.h"
#include "webhook_steps.h"

#define WORST 6
#define LEGIT 4 /* legitimate reviews, one every 0.3 s */
#define WORST_TEMPLATES 37000 /* each side: about 3 MB a review */
/* The API server's timeoutSeconds (deploy/webhook): a review answered later is as good as none. */
#define API_SERVER_TIMEOUT_S 5.0

/* The templates of a review's side: n named t0.., each a name and nothing else. */
static void append_templates(struct strbuf *sb, size_t n, const char *extra)
{
	strbuf_appendf(sb, "[");
	for (size_t i = 0; i < n; i++)
		strbuf_appendf(sb, "%s{\"metadata\":{\"name\":\"t%zu\"}%s}", i ? "," : "", i, extra);
	strbuf_appendf(sb, "]");
}

/* An AdmissionReview of an UPDATE of StatefulSet web in ns from old_templates to new_templates (JSON text). */
static char *review_text(const char *uid, const char *old_templates, const char *new_templates)
{
	static const char sts[] = "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\","
				  "\"namespace\":\"it-webhook-load\"},\"spec\":{\"replicas\":1,\"template\":{\"spec\":"
				  "{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}},\"volumeClaimTemplates\":";
	return xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
			 "\"%s\",\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"StatefulSet\"},\"operation\":"
			 "\"UPDATE\",\"name\":\"web\",\"namespace\":\"it-webhook-load\",\"oldObject\":%s%s}},"
			 "\"object\":%s%s}}}}",
			 uid, sts, old_templates, sts, new_templates);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		fail_msg("cannot write %s", path);
}

/* "<code> <seconds>" as curl's -w wrote it into path; code 0 when there is none. */
static void read_status(const char *path, int *code, double *seconds)
{
	FILE *f = fopen(path, "r");
	*code = 0;
	*seconds = -1;
	if (f) {
		if (fscanf(f, "%d %lf", code, seconds) != 2)
			*code = 0;
		fclose(f);
	}
}

/* The operator's peak resident memory (VmHWM) in MiB, or -1. */
static double peak_rss_mib(pid_t pid)
{
	char *out = it_sh_output("awk '/^VmHWM:/ {print $2}' /proc/%d/status", (int)pid);
	double kib = out && *out ? atof(out) : -1;
	free(out);
	return kib < 0 ? -1 : kib / 1024;
}

/* The operator and the files; the teardown ends both even when the test failed. */
struct load {
	struct daemon d;
	char dir[64];
};

static int setup(void **state)
{
	struct load *l = xcalloc(1, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "/tmp/it-webhook-load-%d", (int)getpid());
	if (it_sh("rm -rf %s && mkdir -p %s", l->dir, l->dir)) {
		free(l);
		return -1;
	}
	*state = l;
	return 0;
}

static int teardown(void **state)
{
	struct load *l = *state;
	wh_kill_operator(&l->d);
	it_sh("rm -rf %s", l->dir);
	free(l);
	return 0;
}

static void test_worst_case_reviews_do_not_starve_the_others(void **state)
{
	struct load *l = *state;
	const char *dir = l->dir;
	int webhook_port = wh_free_port(), probe_port = wh_free_port();
	char webhook_address[64], probe_address[64];
	snprintf(webhook_address, sizeof(webhook_address), "127.0.0.1:%d", webhook_port);
	snprintf(probe_address, sizeof(probe_address), "127.0.0.1:%d", probe_port);

	struct strbuf old_t = STRBUF_INIT, new_t = STRBUF_INIT;
	append_templates(&old_t, WORST_TEMPLATES, "");
	append_templates(&new_t, WORST_TEMPLATES, ",\"spec\":{}");
	char *worst = review_text("worst", strbuf_str(&old_t), strbuf_str(&new_t));
	strbuf_release(&old_t);
	strbuf_release(&new_t);
	char *legit = review_text("legit",
				  "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
				  "\"resources\":{\"requests\":{\"storage\":\"1Mi\"}}}}]",
				  "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
				  "\"resources\":{\"requests\":{\"storage\":\"2Mi\"}}}}]");
	char *path = xasprintf("%s/worst.json", dir);
	write_file(path, worst);
	free(path);
	path = xasprintf("%s/legit.json", dir);
	write_file(path, legit);
	free(path);
	print_message("worst-case review: %zu bytes, %d at once\n", strlen(worst), WORST);
	free(worst);
	free(legit);

	struct daemon *d = &l->d;
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", probe_address, "--webhook-bind-address", webhook_address,
			      "--webhook-cert-names", "127.0.0.1", "--controllers", "resize", NULL};
	daemon_start(d, args, NULL);
	if (!daemon_wait_log(d, "all caches synced", 30000))
		fail_msg("operator did not start");

	/*
	 * The worst ones at once; while they run (their uploads and decisions
	 * take about a second), a legitimate review and a probe every 0.3 s.
	 */
	const char *curl = "curl -sk -H 'Content-Type: application/json' -w '%{http_code} %{time_total}\\n'";
	int rc = it_sh("cd %s && for i in $(seq %d); do %s -o worst.$i.out --max-time 120 --data-binary @worst.json "
		       "https://127.0.0.1:%d" WEBHOOK_PATH " > worst.$i.status & done; "
		       "for i in $(seq %d); do sleep 0.3; %s -o legit.$i.out --max-time 30 --data-binary @legit.json "
		       "https://127.0.0.1:%d" WEBHOOK_PATH " > legit.$i.status & "
		       "curl -s -o /dev/null -w '%%{http_code} %%{time_total}\\n' --max-time 30 "
		       "http://127.0.0.1:%d/healthz > healthz.$i.status & done; wait",
		       dir, WORST, curl, webhook_port, LEGIT, curl, webhook_port, probe_port);
	assert_int_equal(rc, 0);
	double peak = peak_rss_mib(d->pid);

	int code;
	double seconds;
	for (int i = 1; i <= LEGIT; i++) {
		char *status = xasprintf("%s/legit.%d.status", dir, i);
		read_status(status, &code, &seconds);
		free(status);
		print_message("legitimate review %d (sent after %.1f s): HTTP %d in %.2f s\n", i, 0.3 * i, code,
			      seconds);
		if (code != 200 || seconds > API_SERVER_TIMEOUT_S) {
			char *log = daemon_log(d);
			print_error("%s\n", log ? log : "");
			free(log);
			fail_msg("legitimate review %d: HTTP %d after %.2f s, want 200 within %.0f s", i, code,
				 seconds, API_SERVER_TIMEOUT_S);
		}
		char *answer = it_sh_output("cat %s/legit.%d.out", dir, i);
		json_t *review = json_loads(answer ? answer : "", 0, NULL);
		const json_t *resp = json_object_get(review, "response");
		assert_string_equal(kube_obj_str(resp, "uid"), "legit");
		/* Decided: the growth carried out by the operator (a patch), the same answer as without the load. */
		assert_true(json_is_true(json_object_get(resp, "allowed")));
		assert_non_null(kube_obj_str(resp, "patch"));
		json_decref(review);
		free(answer);

		status = xasprintf("%s/healthz.%d.status", dir, i);
		read_status(status, &code, &seconds);
		free(status);
		print_message("/healthz %d: HTTP %d in %.2f s\n", i, code, seconds);
		if (code != 200 || seconds > 2)
			fail_msg("/healthz %d: HTTP %d after %.2f s, want 200 within 2 s", i, code, seconds);
	}

	for (int i = 1; i <= WORST; i++) {
		char *status = xasprintf("%s/worst.%d.status", dir, i);
		read_status(status, &code, &seconds);
		free(status);
		char *said = it_sh_output("head -c 100 %s/worst.%d.out 2>/dev/null | tr -d '\\n'", dir, i);
		print_message("worst-case review %d: HTTP %d in %.2f s: %s\n", i, code, seconds, said ? said : "");
		free(said);
		/*
		 * Never held: denied by the count (200), refused (400: its parsed
		 * tree over the review's parse budget; 503: over its time budget,
		 * a large one being decided, no room for its body), or
		 * its connection closed when the whole request had not arrived in
		 * 5 s (no answer, or only "100 Continue").
		 */
		bool refused = code == 200 || code == 400 || code == 503 || code == 0 || code == 100;
		if (!refused || seconds < 0 || seconds > 3 * API_SERVER_TIMEOUT_S)
			fail_msg("worst-case review %d: HTTP %d after %.2f s", i, code, seconds);
	}
	print_message("operator peak RSS: %.1f MiB\n", peak);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_worst_case_reviews_do_not_starve_the_others, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
