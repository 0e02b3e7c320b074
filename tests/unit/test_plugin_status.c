/*
 * What `kubectl stateful status`, `resize --wait`, `cleanup` and the
 * operator check make of the objects: a copy resize's replicas from its
 * state, rows for each operation, the newest Event, the wait frame, the
 * table layout, YAML output, cleanup rows and re-arming, when an
 * operator counts as running, and that none of them shows a tenant's
 * control characters to the terminal.
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
#include "plugin/plugin_cleanup.h"
#include "plugin/plugin_operator.h"
#include "plugin/plugin_session.h"
#include "plugin/plugin_status.h"
#include "plugin/plugin_table.h"
#include "terminal_scan.h"
#include "util/yaml_json.h"
#include "sim.h"

#define NOW 1764000000LL /* 2025-11-24T16:00:00Z */


/* A StatefulSet web whose annotations are annotations_json (a JSON object's text). */
static json_t *sts_with(const char *annotations_json)
{
	json_t *ann = sim_json(annotations_json);
	json_t *sts = json_pack("{s:s, s:{s:s, s:s, s:o}}", "kind", "StatefulSet", "metadata", "name", "web", "namespace",
				"shop", "annotations", ann);
	return sts;
}

static json_t *copy_sts(const char *step)
{
	char state[512];
	snprintf(state, sizeof(state),
		 "{\"phase\":\"Copying\",\"strategy\":\"copy\",\"started\":\"2025-11-24T15:55:00Z\",\"ordinals\":[2,1,0],"
		 "\"done\":[2],\"batch\":{\"ordinals\":[1],\"step\":\"%s\"}}",
		 step);
	json_t *ann = json_pack("{s:s, s:s}", ANNOTATION_RESIZE_STATE, state, ANNOTATION_RESIZE_STATUS,
				"Copying 2/3: web-1 copying");
	char *text = json_dumps(ann, 0);
	json_t *sts = sts_with(text);
	free(text);
	json_decref(ann);
	return sts;
}

static void test_view_of_a_copy(void **state)
{
	(void)state;
	const char *steps[] = {"Prepare", "Copy", "Swap", "Ready"};
	const enum replica_stage want[] = {REPLICA_STARTING, REPLICA_STARTING, REPLICA_FINISHING, REPLICA_FINISHING};
	for (size_t i = 0; i < 4; i++) {
		json_t *sts = copy_sts(steps[i]);
		struct resize_view v;
		resize_view_read(sts, &v);
		assert_true(v.active);
		assert_string_equal(v.phase, "Copying");
		assert_string_equal(v.strategy, "copy");
		assert_string_equal(v.step, steps[i]);
		assert_int_equal(v.nreplicas, 3);
		assert_int_equal(v.ndone, 1);
		assert_int_equal(resize_view_replica(&v, 2)->stage, REPLICA_DONE);
		assert_int_equal(resize_view_replica(&v, 1)->stage, want[i]);
		assert_int_equal(resize_view_replica(&v, 0)->stage, REPLICA_WAITING);
		assert_null(resize_view_replica(&v, 7));
		resize_view_release(&v);
		json_decref(sts);
	}
	/* No state, or one that is not JSON: nothing under way. */
	json_t *sts = sts_with("{\"stateful-operator.io/resize-state\": \"{oops\"}");
	struct resize_view v;
	resize_view_read(sts, &v);
	assert_false(v.active);
	resize_view_release(&v);
	resize_view_read(NULL, &v);
	assert_false(v.active);
	resize_view_release(&v);
	json_decref(sts);
}

static void test_rows(void **state)
{
	(void)state;
	json_t *events = sim_json("[{\"involvedObject\":{\"kind\":\"StatefulSet\",\"name\":\"web\"},\"reason\":\"CopyStarted\","
			       "\"message\":\"Job web-1-copy copies\",\"lastTimestamp\":\"2025-11-24T15:58:00Z\"},"
			       "{\"involvedObject\":{\"kind\":\"StatefulSet\",\"name\":\"web\"},\"reason\":\"ResizeStarted\","
			       "\"message\":\"old\",\"lastTimestamp\":\"2025-11-24T15:55:00Z\"},"
			       "{\"involvedObject\":{\"kind\":\"StatefulSet\",\"name\":\"db\"},\"reason\":\"Other\","
			       "\"message\":\"not web\",\"eventTime\":\"2025-11-24T15:59:00.123456Z\"}]");
	json_t *sts = copy_sts("Copy");
	struct resize_view v;
	resize_view_read(sts, &v);
	struct replica_progress *r = resize_view_replica(&v, 1);
	r->stage = REPLICA_COPYING;
	r->copy.bytes = 512LL << 20;
	r->copy.total_bytes = 1LL << 30;
	r->copy.files = 10;
	r->copy.total_files = 40;
	r->per_s = 1048576;
	json_t *rows = json_array();
	status_sts_rows(rows, "shop", "web", sts, &v, events, NOW, false);
	assert_int_equal(json_array_size(rows), 1);
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(kube_obj_str(row, "operation"), "resize/copy");
	assert_string_equal(kube_obj_str(row, "phase"), "Copying");
	assert_string_equal(kube_obj_str(row, "progress"),
			    "replica 2/3: 512.0 MiB/1.0 GiB (50%), 10/40 files, 1.0 MiB/s");
	assert_string_equal(kube_obj_str(row, "age"), "5m");
	assert_string_equal(kube_obj_str(row, "lastEvent"), "CopyStarted: Job web-1-copy copies");
	const json_t *reps = json_object_get(row, "replicas");
	assert_int_equal(json_array_size(reps), 3);
	assert_string_equal(kube_obj_str(json_array_get(reps, 1), "stage"), "Copying");
	assert_int_equal(kube_obj_int(json_array_get(reps, 1), "percent", NULL, -1), 50);
	assert_int_equal(kube_obj_int(json_array_get(reps, 1), "bytesPerSecond", NULL, -1), 1048576);
	assert_string_equal(kube_obj_str(json_array_get(reps, 0), "stage"), "Done");

	/* The wait frame: the headline and one line per replica. */
	json_t *frame = status_wait_frame("web", &v, 100);
	assert_int_equal(json_array_size(frame), 4);
	assert_string_equal(json_string_value(json_array_get(frame, 0)), "sts/web: Copying 2/3: web-1 copying");
	assert_string_equal(json_string_value(json_array_get(frame, 1)), "  web-2  done");
	assert_non_null(strstr(json_string_value(json_array_get(frame, 2)), " 50%  512.0 MiB/1.0 GiB  10/40 files"));
	assert_string_equal(json_string_value(json_array_get(frame, 3)), "  web-0  waiting");
	json_decref(frame);
	resize_view_release(&v);
	json_decref(sts);

	/* Failed: the operator's message is the progress. Expand: the status line. */
	sts = sts_with("{\"stateful-operator.io/resize-state\": \"{\\\"phase\\\":\\\"Failed\\\",\\\"strategy\\\":"
		       "\\\"expand\\\",\\\"message\\\":\\\"driver said no\\\"}\","
		       "\"stateful-operator.io/resize-status\": \"Failed: driver said no\"}");
	resize_view_read(sts, &v);
	status_sts_rows(rows, "shop", "web", sts, &v, NULL, NOW, false);
	row = json_array_get(rows, 1);
	assert_string_equal(kube_obj_str(row, "phase"), "Failed");
	assert_string_equal(kube_obj_str(row, "progress"), "driver said no");
	assert_string_equal(kube_obj_str(row, "message"), "driver said no");
	assert_string_equal(kube_obj_str(row, "age"), "-");
	assert_null(kube_obj_str(row, "lastEvent"));
	resize_view_release(&v);
	json_decref(sts);

	/* A cleanup given up; an idle set only when asked about by name. */
	sts = sts_with("{\"stateful-operator.io/scaledown-status\": \"Failed: ordinal 3 gave up\"}");
	resize_view_read(sts, &v);
	status_sts_rows(rows, "shop", "web", sts, &v, NULL, NOW, false);
	assert_string_equal(kube_obj_str(json_array_get(rows, 2), "operation"), "cleanup");
	assert_string_equal(kube_obj_str(json_array_get(rows, 2), "phase"), "Failed");
	resize_view_release(&v);
	json_decref(sts);
	sts = sts_with("{}");
	resize_view_read(sts, &v);
	size_t before = json_array_size(rows);
	status_sts_rows(rows, "shop", "web", sts, &v, NULL, NOW, false);
	assert_int_equal(json_array_size(rows), before);
	status_sts_rows(rows, "shop", "web", sts, &v, NULL, NOW, true);
	assert_string_equal(kube_obj_str(json_array_get(rows, before), "phase"), "Idle");
	resize_view_release(&v);
	json_decref(sts);

	/* The table: headers, columns aligned. */
	char *t = status_table(rows, false);
	/* OPERATION is as wide as "resize/expand", PHASE as "Copying". */
	const char *head = "NAME      OPERATION       PHASE     PROGRESS";
	assert_memory_equal(t, head, strlen(head));
	char *second = strchr(t, '\n') + 1;
	const char *first_row = "sts/web   resize/copy     Copying   replica 2/3";
	assert_memory_equal(second, first_row, strlen(first_row));
	free(t);
	t = status_table(rows, true);
	assert_memory_equal(t, "NAMESPACE   NAME", 16);
	free(t);
	json_decref(rows);
	json_decref(events);
}

static void test_stc_row(void **state)
{
	(void)state;
	json_t *stc = sim_json("{\"metadata\":{\"name\":\"coder\",\"namespace\":\"dev\",\"creationTimestamp\":\"2025-11-20T16:00:00Z\"},"
			    "\"spec\":{\"replicas\":3},\"status\":{\"readyReplicas\":2,\"updatedReplicas\":1,\"conditions\":["
			    "{\"type\":\"Available\",\"status\":\"True\"},{\"type\":\"Progressing\",\"status\":\"True\","
			    "\"lastTransitionTime\":\"2025-11-24T15:59:30Z\"}]}}");
	json_t *rows = json_array();
	status_stc_row(rows, stc, NULL, NOW);
	const json_t *row = json_array_get(rows, 0);
	assert_string_equal(kube_obj_str(row, "kind"), "stc");
	assert_string_equal(kube_obj_str(row, "phase"), "Progressing");
	assert_string_equal(kube_obj_str(row, "progress"), "ready 2/3, updated 1/3");
	assert_string_equal(kube_obj_str(row, "age"), "30s");
	json_decref(rows);
	json_decref(stc);
}

static void test_age_and_time(void **state)
{
	(void)state;
	char b[16];
	assert_string_equal(status_age(-1, b, sizeof(b)), "-");
	assert_string_equal(status_age(59, b, sizeof(b)), "59s");
	assert_string_equal(status_age(119, b, sizeof(b)), "119s");
	assert_string_equal(status_age(600, b, sizeof(b)), "10m");
	assert_string_equal(status_age(3 * 3600, b, sizeof(b)), "3h");
	assert_string_equal(status_age(5 * 86400, b, sizeof(b)), "5d");
	assert_int_equal(status_time_seconds("2025-11-24T16:00:00Z"), NOW);
	assert_int_equal(status_time_seconds("2025-11-24T16:00:00.999999Z"), NOW);
	assert_int_equal(status_time_seconds("2025-11-24T16:00:00+01:00"), -1);
	assert_int_equal(status_time_seconds("soon"), -1);
	assert_int_equal(status_time_seconds(NULL), -1);
}

static void test_table(void **state)
{
	(void)state;
	const char *h[] = {"A", "LONG HEADER", "LAST"};
	struct table *t = table_new(3, h);
	const char *r1[] = {"wide cell", NULL, "x\ny"};
	const char *r2[] = {"é", "b", "z"};
	table_add(t, r1);
	table_add(t, r2);
	assert_int_equal(table_rows(t), 2);
	char *out = table_render(t);
	assert_string_equal(out, "A           LONG HEADER   LAST\n"
				 "wide cell   -             x y\n"
				 "é           b             z\n");
	free(out);
	table_free(t);
	table_free(NULL);
	char *e = table_ellipsize("abcdefghij", 6);
	assert_string_equal(e, "abc...");
	free(e);
	e = table_ellipsize("short", 6);
	assert_string_equal(e, "short");
	free(e);
	e = table_ellipsize("ééééé", 6); /* never cut inside a character */
	assert_string_equal(e, "é...");
	free(e);
}

static void test_cleanup_rows(void **state)
{
	(void)state;
	json_t *sts = sts_with("{\"stateful-operator.io/scaledown-max-attempts\": \"2\"}");
	json_t *st = sim_json("{\"ordinals\":{\"5\":{\"failures\":2,\"message\":\"exit 3\"},\"4\":{\"failures\":1,"
			   "\"retryAt\":\"2025-11-24T16:01:00Z\"},\"3\":{\"failures\":2}}}");
	json_t *pods = sim_json("[{\"metadata\":{\"name\":\"web-3\",\"annotations\":{\"stateful-operator.io/cleanup-ordinal\":"
			     "\"3\"}},\"status\":{\"phase\":\"Running\"}}]");
	size_t given_up = 0;
	json_t *rows = cleanup_rows(sts, st, pods, &given_up);
	assert_int_equal(json_array_size(rows), 3);
	assert_int_equal(given_up, 1); /* 5; 3 has a pod running */
	assert_int_equal(kube_obj_int(json_array_get(rows, 0), "ordinal", NULL, -1), 3);
	assert_string_equal(kube_obj_str(json_array_get(rows, 0), "pod"), "web-3");
	assert_true(json_is_true(json_object_get(json_array_get(rows, 2), "givenUp")));
	char *t = cleanup_table(rows);
	assert_non_null(strstr(t, "5         2/2               GivenUp"));
	assert_non_null(strstr(t, "RetryWaiting   2025-11-24T16:01:00Z"));
	free(t);
	json_t *left = cleanup_state_rearmed(st, cleanup_max_attempts(sts));
	assert_non_null(json_object_get(json_object_get(left, "ordinals"), "4"));
	assert_null(json_object_get(json_object_get(left, "ordinals"), "5"));
	assert_null(json_object_get(json_object_get(left, "ordinals"), "3"));
	assert_non_null(json_object_get(json_object_get(st, "ordinals"), "5")); /* the input is not changed */
	json_decref(left);
	assert_int_equal(cleanup_max_attempts(NULL), 3);
	json_decref(rows);
	json_decref(pods);
	json_decref(st);
	json_decref(sts);
}

/*
 * Text a tenant writes (issue 27): ESC ] 0;x BEL (a window title), ESC [2J
 * (clear the screen), U+009B 2J (the same in one C1 character), a bidi
 * override and a DEL. In an annotation as is; in JSON inside an annotation
 * (resize-state, scaledown-state) as \u escapes, which parsing turns back
 * into the characters.
 */
#define DIRTY "\033]0;x\007\033[2J\xc2\x9b" "2J\xe2\x80\xae" "x\x7f"

/* Prints v as o through a temporary file; the text (new). */
static char *printed_doc(const json_t *v, enum plugin_output o)
{
	FILE *f = tmpfile();
	assert_non_null(f);
	plugin_print_doc(f, v, o);
	long n = ftell(f);
	assert_true(n >= 0);
	char *text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	rewind(f);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/*
 * Every renderer of cluster text: the resize view (resize-status and the
 * state's phase, message and step), the status rows and table, the newest
 * Event's text, a StatefulCluster's condition message, the cleanup table,
 * the wait frame, and -o json/yaml. None gives a control to the terminal,
 * and the words around the controls are still there.
 */
static void test_cluster_text_shown_inert(void **state)
{
	(void)state;
	json_t *rs = json_pack("{s:s, s:s, s:s, s:[i], s:{s:[i], s:s}}", "phase", "Failed" DIRTY, "strategy", "copy",
			       "message", "why" DIRTY, "ordinals", 0, "batch", "ordinals", 0, "step", "Copy" DIRTY);
	json_t *ss = json_pack("{s:{s:{s:i, s:s}}}", "ordinals", "1", "failures", 3, "message", "exit" DIRTY);
	/* In the annotations as JSON text: the controls as \u escapes, which parsing turns back into them. */
	char *rs_text = json_dumps(rs, JSON_COMPACT), *ss_text = json_dumps(ss, JSON_COMPACT);
	json_t *sts = json_pack("{s:s, s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}}}", "kind", "StatefulSet", "metadata", "name",
				"web", "namespace", "shop", "annotations", ANNOTATION_RESIZE_STATUS, DIRTY " status",
				ANNOTATION_RESIZE_STATE, rs_text, ANNOTATION_SCALEDOWN_STATUS, "Failed: " DIRTY,
				ANNOTATION_SCALEDOWN_STATE, ss_text);
	assert_non_null(sts);
	assert_non_null(strstr(rs_text, "\\u001B")); /* jansson writes ESC so */
	free(rs_text);
	free(ss_text);
	json_decref(rs);
	json_decref(ss);
	json_t *events = json_pack("[{s:{s:s, s:s}, s:s, s:s, s:s}]", "involvedObject", "kind", "StatefulSet", "name", "web",
				   "reason", "Resize" DIRTY, "message", "msg " DIRTY, "lastTimestamp", "2025-11-24T15:58:00Z");
	assert_non_null(events);

	struct resize_view v;
	resize_view_read(sts, &v);
	assert_true(v.active);
	terminal_expect_safe("resize-status", v.status, false);
	terminal_expect_safe("phase", v.phase, false);
	terminal_expect_safe("message", v.message, false);
	terminal_expect_safe("step", v.step, false);
	assert_non_null(strstr(v.status, "status"));
	assert_non_null(strstr(v.message, "why"));

	char *ev = status_event_text(status_last_event(events, "StatefulSet", "web"));
	terminal_expect_safe("event text", ev, false);
	assert_non_null(strstr(ev, "msg "));
	free(ev);

	json_t *rows = json_array();
	status_sts_rows(rows, "shop", "web", sts, &v, events, NOW, true);
	assert_int_equal(json_array_size(rows), 2); /* the resize and the cleanup */
	char *t = status_table(rows, true);
	terminal_expect_safe("status table", t, false);
	free(t);
	const json_t *row;
	size_t i;
	json_array_foreach(rows, i, row) {
		const char *k;
		const json_t *val;
		json_object_foreach((json_t *)row, k, val)
			if (json_is_string(val))
				terminal_expect_safe(k, json_string_value(val), false);
	}
	for (int o = PLUGIN_OUT_JSON; o <= PLUGIN_OUT_YAML; o++) {
		char *doc = printed_doc(rows, (enum plugin_output)o);
		terminal_expect_safe(o == PLUGIN_OUT_JSON ? "status -o json" : "status -o yaml", doc, false);
		free(doc);
	}
	json_decref(rows);

	json_t *frame = status_wait_frame("web", &v, 80);
	json_array_foreach(frame, i, row)
		terminal_expect_safe("wait frame", json_string_value(row), false);
	json_decref(frame);
	resize_view_release(&v);

	/* -o json and -o yaml of what the API holds (members): the same values when read back. */
	json_t *members = json_pack("[{s:s, s:s}]", "identity", "m-0 " DIRTY, "phase", DIRTY);
	char *doc = printed_doc(members, PLUGIN_OUT_JSON);
	terminal_expect_safe("members -o json", doc, false);
	json_t *back = json_loads(doc, 0, NULL);
	if (!json_equal(back, members))
		fail_msg("members -o json does not read back the same: %s", doc);
	json_decref(back);
	free(doc);
	doc = printed_doc(members, PLUGIN_OUT_YAML);
	terminal_expect_safe("members -o yaml", doc, false);
	char *msg = NULL;
	assert_int_equal(yaml_to_json(doc, strlen(doc), &back, &msg), 0);
	if (!json_equal(back, members))
		fail_msg("members -o yaml does not read back the same: %s", doc);
	json_decref(back);
	free(doc);
	json_decref(members);

	json_t *stc = json_pack("{s:{s:s, s:s}, s:{s:i}, s:{s:[{s:s, s:s, s:s}]}}", "metadata", "name", "coder", "namespace",
				"dev", "spec", "replicas", 1, "status", "conditions", "type", "ReplicaFailure", "status", "True",
				"message", "pod " DIRTY);
	rows = json_array();
	status_stc_row(rows, stc, events, NOW);
	t = status_table(rows, false);
	terminal_expect_safe("stc row", t, false);
	free(t);
	json_decref(rows);
	json_decref(stc);

	const char *text = kube_obj_annotation(sts, ANNOTATION_SCALEDOWN_STATE);
	json_t *st = json_loads(text, 0, NULL);
	assert_non_null(st);
	size_t given_up = 0;
	rows = cleanup_rows(sts, st, NULL, &given_up);
	t = cleanup_table(rows);
	terminal_expect_safe("cleanup table", t, false);
	assert_non_null(strstr(t, "exit"));
	free(t);
	json_decref(rows);
	json_decref(st);
	json_decref(events);
	json_decref(sts);
}

static void test_operator_judge(void **state)
{
	(void)state;
	json_t *fresh = sim_json("{\"spec\":{\"holderIdentity\":\"op-1\",\"renewTime\":\"2025-11-24T15:59:55.000000Z\","
			      "\"leaseDurationSeconds\":15}}");
	json_t *stale = sim_json("{\"spec\":{\"holderIdentity\":\"op-1\",\"renewTime\":\"2025-11-24T15:50:00.000000Z\","
			      "\"leaseDurationSeconds\":15}}");
	json_t *released = sim_json("{\"spec\":{\"leaseDurationSeconds\":15}}");
	json_t *ready = sim_json("[{\"metadata\":{\"name\":\"op-x\"},\"status\":{\"phase\":\"Running\",\"conditions\":"
			      "[{\"type\":\"Ready\",\"status\":\"True\"}]}}]");
	/* A standby of a leader-elected Deployment: Ready (it can serve) but acting only with the Lease. */
	json_t *standby = sim_json("[{\"metadata\":{\"name\":\"op-y\"},\"spec\":{\"containers\":[{\"name\":\"manager\","
				"\"args\":[\"--leader-elect\",\"--log-format=json\"]}]},\"status\":{\"phase\":\"Running\","
				"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]");
	json_t *unready = sim_json("[{\"metadata\":{\"name\":\"op-x\"},\"status\":{\"phase\":\"Pending\"}}]");
	const struct {
		struct operator_evidence ev;
		enum operator_seen want;
		const char *says;
	} cases[] = {
		{{fresh, true, NULL, true}, OPERATOR_RUNNING, "op-1 leads (Lease ops/stateful-operator)"},
		{{stale, true, NULL, true}, OPERATOR_NOT_RUNNING, "last renewed by op-1 600s ago"},
		{{stale, true, ready, true}, OPERATOR_RUNNING, "pod ops/op-x is Ready"},
		{{stale, true, standby, true}, OPERATOR_NOT_RUNNING, "last renewed by op-1 600s ago"},
		{{fresh, true, standby, true}, OPERATOR_RUNNING, "op-1 leads"},
		{{released, true, unready, true}, OPERATOR_NOT_RUNNING, "has no holder"},
		{{NULL, true, NULL, true}, OPERATOR_NOT_RUNNING, "no Lease ops/stateful-operator"},
		{{NULL, false, NULL, false}, OPERATOR_UNKNOWN, "refused"},
		{{NULL, false, NULL, true}, OPERATOR_NOT_RUNNING, "no operator running"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *why = NULL;
		enum operator_seen got = operator_judge(&cases[i].ev, "ops", NOW, &why);
		if (got != cases[i].want || !strstr(why, cases[i].says))
			fail_msg("case %zu: %d \"%s\"", i, got, why);
		free(why);
	}
	/* Within the duration plus the skew allowance: still running. */
	char *why = NULL;
	struct operator_evidence edge = {fresh, true, NULL, true};
	assert_int_equal(operator_judge(&edge, "ops", NOW - 5 + 15 + OPERATOR_LEASE_SKEW_S, &why), OPERATOR_RUNNING);
	free(why);
	assert_int_equal(operator_judge(&edge, "ops", NOW - 5 + 15 + OPERATOR_LEASE_SKEW_S + 1, &why),
			 OPERATOR_NOT_RUNNING);
	free(why);
	json_decref(fresh);
	json_decref(stale);
	json_decref(released);
	json_decref(ready);
	json_decref(unready);
	json_decref(standby);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_of_a_copy), cmocka_unit_test(test_rows),	    cmocka_unit_test(test_stc_row),
		cmocka_unit_test(test_age_and_time),   cmocka_unit_test(test_table),
		cmocka_unit_test(test_cleanup_rows),   cmocka_unit_test(test_operator_judge),
		cmocka_unit_test(test_cluster_text_shown_inert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
