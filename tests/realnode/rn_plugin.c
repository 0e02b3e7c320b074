/*
 * kubectl stateful resize --wait in a real terminal (script(1) gives it a
 * pseudo-terminal) during a real copy on the real node: the copy pod's
 * SOP-PROGRESS lines, read from its log, drawn as a progress bar that is
 * redrawn in place (cursor movement), and exit 0 once the resize
 * completed. The copy is slowed by a CPU limit so several readings fall
 * within it. Prints the captured terminal (the README and the issue quote
 * it).
 *
 * kubectl stateful status, run as a ServiceAccount that may only read its
 * namespace (no nodes/proxy, no nodes/stats), shows a claim's real usage:
 * the operator read it from the real kubelet and published it on the claim.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "itest.h"
#include "realnode.h"
#include "util/xalloc.h"

#define SET "db"
#define DATA_MB 40

/* Lines of the terminal capture that draw a replica's bar with its figures. */
static int bar_lines(const char *tty, int *moving)
{
	int n = 0;
	*moving = 0;
	for (const char *p = strstr(tty, SET "-0  ["); p; p = strstr(p + 1, SET "-0  [")) {
		const char *end = strpbrk(p, "\r\n");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *line = xstrndup(p, len);
		if (strchr(line, ']') && strstr(line, "%  ") && strstr(line, " files")) {
			n++;
			/* A bar partly filled: progress seen while the copy ran. */
			if (strchr(line, '>') && !strstr(line, "100%"))
				(*moving)++;
		}
		free(line);
	}
	return n;
}

static void test_progress_bar_in_a_terminal(void **state)
{
	struct rn_test *t = *state;
	json_t *sts = rn_workload_set(t, SET, 1, "local-fixed", "64Mi", DATA_MB);
	rn_create_workload(t, sts, 1);
	json_decref(sts);
	/* The plugin checks for an operator: it leads through a Lease in the test's namespace. */
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--copy-image", RN_OPERATOR_IMAGE, "--leader-elect",
			      "--leader-election-namespace", t->ns, NULL};
	daemon_start(&t->d, args, NULL);
	if (!daemon_wait_log(&t->d, "became leader", 30000) || !daemon_wait_log(&t->d, "all caches synced", 30000))
		fail_msg("operator did not start leading");
	/*
	 * A slow copy: the script prints a reading every ~2 s. At 50m the 94 MiB
	 * went in about 4 s and a CI run saw only 0 % and 100 %; at 20m it takes
	 * about 10 s, several readings.
	 */
	rn_annotate(t, "statefulset/" SET, "'stateful-operator.io/copy-resources={\"limits\":{\"cpu\":\"20m\"}}'");

	char *tty = NULL;
	int code = it_sh_capture(&tty,
				 "script -qec 'stty cols 120 rows 40; %s resize sts/%s data=128Mi --strategy copy -n %s "
				 "--operator-namespace %s --timeout 8m' /dev/null",
				 SOP_PLUGIN_BINARY, SET, t->ns, t->ns);
	printf("# captured terminal of kubectl stateful resize --wait (escape sequences shown as \\e):\n");
	for (const char *p = tty; *p; p++) {
		if (*p == '\033')
			fputs("\\e", stdout);
		else
			putchar(*p);
	}
	putchar('\n');
	int moving = 0;
	int bars = bar_lines(tty, &moving);
	printf("# %d bar lines drawn, %d of them part-filled\n", bars, moving);
	if (code != 0) {
		rn_dump_state(t);
		fail_msg("resize --wait exited %d", code);
	}
	/* On a terminal --wait is the default, the bar is redrawn in place (cursor up, line erased). */
	assert_non_null(strstr(tty, "sts/" SET ": resize of template data to 128Mi requested"));
	assert_non_null(strstr(tty, "\033[2K"));
	assert_non_null(strstr(tty, "A\r\033[2K"));
	assert_non_null(strstr(tty, "sts/" SET ": Copying 1/1"));
	assert_true(bars >= 2);
	assert_true(moving >= 1);
	assert_non_null(strstr(tty, "sts/" SET ": resize completed"));
	free(tty);
	rn_wait_workload(t, SET, 1);
}

struct published {
	struct rn_test *t;
	const char *claim;
	json_t *pvc; /* the claim once it carries usage (owned) */
};

static bool usage_published(void *ctx)
{
	struct published *p = ctx;
	json_decref(p->pvc);
	p->pvc = it_get(p->t->admin, &KUBE_PVCS, p->t->ns, p->claim);
	return it_annotation(p->pvc, "stateful-operator.io/usage") != NULL;
}

static void test_status_shows_usage_without_nodes_proxy(void **state)
{
	struct rn_test *t = *state;
	json_t *sts = rn_workload_set(t, "u", 1, "local-autoresize", "320Mi", 8);
	it_set_annotation(sts, "autoresize.stateful-operator.io/data", "used=90%, step=64Mi, max=448Mi");
	rn_create_workload(t, sts, 1);
	json_decref(sts);
	const char *args[] = {"--kubeconfig", getenv("SOP_OPERATOR_KUBECONFIG"), "--metrics-bind-address", "0",
			      "--health-probe-bind-address", "0", "--copy-image", RN_OPERATOR_IMAGE,
			      "--autoresize-source", "kubelet", "--autoresize-interval", "5s", NULL};
	daemon_start(&t->d, args, NULL);
	struct published p = {t, "data-u-0", NULL};
	/* The kubelet measures volumes every volumeStatsAggPeriod (1 minute). */
	if (!it_wait(usage_published, &p, 90000)) {
		rn_dump_state(t);
		fail_msg("the operator published no usage on data-u-0:\n%s", daemon_log(&t->d));
	}
	const char *text = it_annotation(p.pvc, "stateful-operator.io/usage");
	printf("[ published ] stateful-operator.io/usage: %s\n", text);
	long long used = -1, available = -1, capacity = -1;
	if (sscanf(text, "used=%lld,available=%lld,capacity=%lld,", &used, &available, &capacity) != 3 ||
	    used < (8LL << 20) || available <= 0 ||
	    capacity < (256LL << 20) || capacity > (320LL << 20) || !strstr(text, ",observed=20"))
		fail_msg("not the real volume's figures (8 MiB written into 320Mi xfs): %s", text);
	/* Unchanged figures are not written again at each poll (5 s): the claim stays as it was. */
	char *rv = xstrdup(kube_obj_str(p.pvc, "metadata.resourceVersion"));
	it_sleep_ms(11000);
	json_decref(p.pvc);
	p.pvc = it_get(t->admin, &KUBE_PVCS, t->ns, "data-u-0");
	assert_string_equal(kube_obj_str(p.pvc, "metadata.resourceVersion"), rv);
	free(rv);

	if (it_sh("kubectl create serviceaccount -n %s reader >/dev/null && "
		  "kubectl create role -n %s reader --verb=get,list,watch "
		  "--resource=statefulsets.apps,pods,persistentvolumeclaims,events,configmaps >/dev/null && "
		  "kubectl create rolebinding -n %s reader --role=reader --serviceaccount=%s:reader >/dev/null",
		  t->ns, t->ns, t->ns, t->ns))
		fail_msg("could not make the ServiceAccount and its Role");
	char *out = NULL;
	int code = it_sh_capture(&out, "%s status sts/u -n %s --as system:serviceaccount:%s:reader 2>&1",
				 SOP_PLUGIN_BINARY, t->ns, t->ns);
	printf("[ status ] as a namespace reader:\n%s", out ? out : "");
	char want[64];
	/* As df counts it: used / (used + available). */
	snprintf(want, sizeof(want), "data-u-0 used %.0f%% (", 100.0 * (double)used / (double)(used + available));
	if (code != 0 || !out || !strstr(out, "autoresize/data") || !strstr(out, "Watching") || !strstr(out, want) ||
	    !strstr(out, " ago)") || strstr(out, "nodes/proxy"))
		fail_msg("status as a reader: exit %d, want \"%s\" with its age", code, want);
	free(out);
	json_decref(p.pvc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_progress_bar_in_a_terminal, rn_setup, rn_teardown),
		cmocka_unit_test_setup_teardown(test_status_shows_usage_without_nodes_proxy, rn_setup, rn_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
