/*
 * The usage sources of autoresize: the parsers of the kubelet's stats
 * summary and of Prometheus' instant-query answer (real-shaped samples,
 * claims reported twice, missing figures, junk, float strings), the kind
 * names and option checks, and the HTTP path of each source against a
 * server on loopback: the request each sends, the table a good answer
 * gives, the one line of error a refusal gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controllers/autoresize/usage_source.h"
#include "client/kube_config.h"
#include "controllers/autoresize/usage_source_internal.h"
#include "controllers/pod_fields.h"
#include "loopback.h"
#include "terminal_scan.h"
#include "scratch_dir.h"
#include "util/json_budget.h"
#include "token_api.h"
#include "util/strbuf.h"
#include "runtime/http_server.h"
#include "util/clock.h"
#include "util/xalloc.h"
#include "webhook/webhook_cert.h"

#define GI 1073741824LL

/* The kubelet source as the daemon sets it up: its ServiceAccount sop/reader, cluster scope. */
#define KUBELET_OPTS                                                                                      \
	.kind = USAGE_SOURCE_KUBELET, .kubelet_token_namespace = "sop", .kubelet_service_account = "reader", \
	.cluster_scope = true
/* What the token API hands out, and what the operator's own client shows ("t", loopback.h). */
#define USAGE_TOKEN "usage-token"

/*
 * The kubelet source as the daemon makes it (KUBELET_OPTS), its token from a
 * token API handing out USAGE_TOKEN, speaking plain http to canned kubelets.
 * *api and *client are new; the caller frees all three.
 */
static struct usage_source *kubelet_source_start(struct token_api **api, struct kube_client **client)
{
	*api = token_api_start("sop", "reader", USAGE_TOKEN, 600);
	*client = token_api_client(*api);
	struct usage_source_options o = {KUBELET_OPTS, .timeout_ms = 5000};
	char *err = NULL;
	struct usage_source *s = usage_source_new(*client, &o, &err);
	assert_non_null(s);
	usage__set_kubelet_scheme(s, "http");
	return s;
}

/*
 * What a kubelet sends (trimmed to what matters and some of what does
 * not): a claim mounted by two pods (data-db-0), a volume without pvcRef
 * (the service account token), one without inodesUsed (inodes and
 * inodesFree only), one the kubelet has not measured yet (no usedBytes),
 * one without inode figures, a pod without volumes, and a node counter
 * past 2^63 (uint64 in the API).
 */
static const char SUMMARY[] =
	"{\"node\":{\"nodeName\":\"local-node-0\",\"startTime\":\"2026-11-25T10:00:00Z\","
	"\"cpu\":{\"time\":\"2026-11-25T14:00:00Z\",\"usageNanoCores\":183000000,"
	"\"usageCoreNanoSeconds\":18446744073709551615},"
	"\"fs\":{\"time\":\"2026-11-25T14:00:00Z\",\"availableBytes\":40000000000,\"capacityBytes\":100000000000,"
	"\"usedBytes\":60000000000,\"inodesFree\":6000000,\"inodes\":6553600,\"inodesUsed\":553600}},"
	"\"pods\":["
	"{\"podRef\":{\"name\":\"db-0\",\"namespace\":\"shop\",\"uid\":\"0b7c\"},"
	"\"startTime\":\"2026-11-25T10:01:00Z\",\"containers\":[{\"name\":\"db\",\"startTime\":\"2026-11-25T10:01:02Z\"}],"
	"\"volume\":["
	"{\"time\":\"2026-11-25T14:00:00Z\",\"availableBytes\":858993459,\"capacityBytes\":1073741824,"
	"\"usedBytes\":214748365,\"inodesFree\":65000,\"inodes\":65536,\"inodesUsed\":536,\"name\":\"data\","
	"\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}},"
	"{\"time\":\"2026-11-25T14:00:00Z\",\"availableBytes\":8335245312,\"capacityBytes\":8335257600,"
	"\"usedBytes\":12288,\"inodesFree\":1017567,\"inodes\":1017576,\"inodesUsed\":9,"
	"\"name\":\"kube-api-access-7xk2p\"}],"
	"\"ephemeral-storage\":{\"time\":\"2026-11-25T14:00:00Z\",\"usedBytes\":36864}},"
	"{\"podRef\":{\"name\":\"backup-0\",\"namespace\":\"shop\",\"uid\":\"9e21\"},"
	"\"volume\":[{\"time\":\"2026-11-25T14:00:00Z\",\"availableBytes\":858993459,\"capacityBytes\":1073741824,"
	"\"usedBytes\":214748365,\"inodesFree\":65000,\"inodes\":65536,\"inodesUsed\":536,\"name\":\"source\","
	"\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}}]},"
	"{\"podRef\":{\"name\":\"db-1\",\"namespace\":\"shop\",\"uid\":\"3f0a\"},"
	"\"volume\":[{\"time\":\"2026-11-25T14:00:00Z\",\"availableBytes\":549755813888,\"capacityBytes\":2199023255552,"
	"\"usedBytes\":1649267441664,\"inodesFree\":400,\"inodes\":1000,\"name\":\"data\","
	"\"pvcRef\":{\"name\":\"data-db-1\",\"namespace\":\"shop\"}}]},"
	"{\"podRef\":{\"name\":\"db-2\",\"namespace\":\"shop\",\"uid\":\"77d1\"},"
	"\"volume\":[{\"time\":\"2026-11-25T14:00:00Z\",\"capacityBytes\":1073741824,\"inodes\":65536,"
	"\"name\":\"data\",\"pvcRef\":{\"name\":\"data-db-2\",\"namespace\":\"shop\"}}]},"
	"{\"podRef\":{\"name\":\"web-0\",\"namespace\":\"other\",\"uid\":\"a0a0\"},"
	"\"volume\":[{\"availableBytes\":10737418240,\"capacityBytes\":10737418240,\"usedBytes\":0,"
	"\"name\":\"cache\",\"pvcRef\":{\"name\":\"cache-web-0\",\"namespace\":\"other\"}}]},"
	"{\"podRef\":{\"name\":\"sidecar\",\"namespace\":\"other\",\"uid\":\"b1b1\"},\"containers\":[]}"
	"]}";

/*
 * A pod named name in ns on node, mounting claims (NULL-terminated) and a
 * volume without a claim, as the Pod cache keeps it (pod_fields.h). New reference.
 */
static json_t *pod_mounting(const char *ns, const char *name, const char *node, const char *const *claims)
{
	json_t *volumes = json_pack("[{s:s, s:{}}]", "name", "kube-api-access", "projected");
	for (; *claims; claims++)
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name", *claims, "persistentVolumeClaim",
							 "claimName", *claims));
	json_t *pod = json_pack("{s:{s:s, s:s}, s:{s:o}}", "metadata", "name", name, "namespace", ns, "spec",
				"volumes", volumes);
	if (node)
		json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(node));
	pod_fields_keep(pod);
	return pod;
}

/* Into mounts, what the cache shows when SUMMARY's pods run on node: db-0..2 in shop, web-0 in other. */
static void add_summary_pods(json_t *mounts, const char *node)
{
	static const char *const pods[][3] = {{"shop", "db-0", "data-db-0"}, {"shop", "db-1", "data-db-1"},
					      {"shop", "db-2", "data-db-2"}, {"other", "web-0", "cache-web-0"}};
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		json_t *pod = pod_mounting(pods[i][0], pods[i][1], node, (const char *const[]){pods[i][2], NULL});
		usage_mounts_add_pod(mounts, pod);
		json_decref(pod);
	}
}

/* SUMMARY's pods on node. New reference. */
static json_t *summary_mounts(const char *node)
{
	json_t *mounts = json_object();
	add_summary_pods(mounts, node);
	return mounts;
}

/* The claim's usage from table, checked field by field. */
static void expect_usage(json_t *table, const char *key, int64_t capacity, int64_t used, int64_t available,
			 int64_t inodes, int64_t inodes_used)
{
	struct volume_usage u;
	json_t *obj = json_object_get(table, key);
	if (!obj)
		fail_msg("%s: not in the table", key);
	assert_true(usage_from_json(obj, &u));
	assert_int_equal(u.capacity_bytes, capacity);
	assert_int_equal(u.used_bytes, used);
	assert_int_equal(u.available_bytes, available);
	assert_int_equal(u.inodes, inodes);
	assert_int_equal(u.inodes_used, inodes_used);
}

static void test_summary_real_shape(void **state)
{
	(void)state;
	json_t *table = json_object(), *mounts = summary_mounts("local-node-0");
	char *why = NULL;
	assert_int_equal(usage_parse_summary(SUMMARY, strlen(SUMMARY), "local-node-0", mounts, table, &why), 0);
	assert_null(why);
	/*
	 * data-db-0 once (from db-0; backup-0 mounts it too, but the cache does not say so), data-db-1,
	 * cache-web-0; not data-db-2 (unmeasured), not the token volume.
	 */
	assert_int_equal(json_object_size(table), 3);
	expect_usage(table, "shop/data-db-0", GI, 214748365, 858993459, 65536, 536);
	expect_usage(table, "shop/data-db-1", 2048 * GI, 1536 * GI, 512 * GI, 1000, 600);
	expect_usage(table, "other/cache-web-0", 10 * GI, 0, 10 * GI, 0, 0);
	assert_null(json_object_get(table, "shop/data-db-2"));
	json_decref(mounts);
	json_decref(table);
}

/* A claim already in the table (another node reported it) keeps its figures. */
static void test_summary_claim_on_two_nodes(void **state)
{
	(void)state;
	json_t *table = json_object(), *mounts = summary_mounts("local-node-0");
	struct volume_usage earlier = {GI, 1, GI - 1, 0, 0};
	json_object_set_new(table, "shop/data-db-0", usage_to_json(&earlier));
	char *why = NULL;
	assert_int_equal(usage_parse_summary(SUMMARY, strlen(SUMMARY), "local-node-0", mounts, table, &why), 0);
	expect_usage(table, "shop/data-db-0", GI, 1, GI - 1, 0, 0);
	json_decref(mounts);
	json_decref(table);
}

typedef int (*usage_parser)(const char *body, size_t len, json_t *table, char **why);

/* parse refuses body, with a why that says why_has, and adds nothing. */
static void expect_refused(usage_parser parse, const char *body, const char *why_has)
{
	json_t *table = json_object();
	char *why = NULL;
	assert_int_equal(parse(body, strlen(body), table, &why), -1);
	assert_non_null(why);
	if (!strstr(why, why_has))
		fail_msg("why \"%s\" does not say \"%s\"", why, why_has);
	assert_int_equal(json_object_size(table), 0);
	free(why);
	json_decref(table);
}

/* A summary from local-node-0, where SUMMARY's pods run. */
static int parse_summary(const char *body, size_t len, json_t *table, char **why)
{
	json_t *mounts = summary_mounts("local-node-0");
	int rc = usage_parse_summary(body, len, "local-node-0", mounts, table, why);
	json_decref(mounts);
	return rc;
}

static void expect_summary_refused(const char *body, const char *why_has)
{
	expect_refused(parse_summary, body, why_has);
}

static void test_summary_junk(void **state)
{
	(void)state;
	expect_summary_refused("<html>502 Bad Gateway</html>", "not JSON");
	expect_summary_refused("", "not JSON");
	expect_summary_refused("{\"pods\":[", "not JSON");
	expect_summary_refused("[]", "not a JSON object");
	expect_summary_refused("{\"node\":{\"nodeName\":\"n1\"}}", "no pods array");
	expect_summary_refused("{\"node\":{},\"pods\":{}}", "no pods array");
}

/* Odd but valid: no pods (null, as Go writes an empty slice), volumes that are not objects, bad figures. */
#define POD_P "\"podRef\":{\"name\":\"p\",\"namespace\":\"n\"},"

static void test_summary_odd_but_valid(void **state)
{
	(void)state;
	/* Pod p of namespace n runs on n1 and mounts claim c: what n1 says of c counts when it can be read. */
	json_t *mounts = json_object();
	json_t *pod = pod_mounting("n", "p", "n1", (const char *const[]){"c", NULL});
	usage_mounts_add_pod(mounts, pod);
	json_decref(pod);
	static const char good[] = "{\"pods\":[{" POD_P "\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
				   "\"capacityBytes\":2,\"usedBytes\":1,\"availableBytes\":1}]}]}";
	json_t *table = json_object();
	char *why = NULL;
	assert_int_equal(usage_parse_summary(good, strlen(good), "n1", mounts, table, &why), 0);
	expect_usage(table, "n/c", 2, 1, 1, 0, 0);
	json_decref(table);
	static const char *const bodies[] = {
		"{\"node\":{},\"pods\":null}",
		"{\"node\":{},\"pods\":[]}",
		"{\"pods\":[{\"podRef\":{\"name\":\"p\"},\"volume\":null}]}",
		"{\"pods\":[{\"volume\":[1,\"x\",{\"pvcRef\":\"data\"}]}]}",
		/* negative, float, string figures: the volume is skipped */
		"{\"pods\":[{" POD_P "\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
		"\"capacityBytes\":-1,\"usedBytes\":1,\"availableBytes\":1}]}]}",
		"{\"pods\":[{" POD_P "\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
		"\"capacityBytes\":1.5,\"usedBytes\":1,\"availableBytes\":1}]}]}",
		"{\"pods\":[{" POD_P "\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
		"\"capacityBytes\":\"1Gi\",\"usedBytes\":1,\"availableBytes\":1}]}]}",
		"{\"pods\":[{" POD_P "\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
		"\"capacityBytes\":9223372036854775808,\"usedBytes\":1,\"availableBytes\":1}]}]}",
		/* a claim without a namespace */
		"{\"pods\":[{" POD_P "\"volume\":[{\"pvcRef\":{\"name\":\"c\"},"
		"\"capacityBytes\":1,\"usedBytes\":1,\"availableBytes\":0}]}]}",
		/* a pod without a name, or with a podRef that is not an object */
		"{\"pods\":[{\"podRef\":{\"namespace\":\"n\"},\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
		"\"capacityBytes\":2,\"usedBytes\":1,\"availableBytes\":1}]}]}",
		"{\"pods\":[{\"podRef\":\"p\",\"volume\":[{\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"},"
		"\"capacityBytes\":2,\"usedBytes\":1,\"availableBytes\":1}]}]}",
	};
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		table = json_object();
		if (usage_parse_summary(bodies[i], strlen(bodies[i]), "n1", mounts, table, &why) != 0)
			fail_msg("body %zu refused: %s", i, why);
		assert_int_equal(json_object_size(table), 0);
		json_decref(table);
	}
	json_decref(mounts);
}

/*
 * What the cache says mounts where: a pod's claims on its node; a pod not
 * yet scheduled adds nothing; a claim mounted by pods on two nodes (RWX)
 * has both; volumes without a claim are not counted.
 */
static void test_mounts_from_pods(void **state)
{
	(void)state;
	json_t *mounts = json_object();
	json_t *pods[] = {
		pod_mounting("shop", "db-0", "n1", (const char *const[]){"data-db-0", "logs-db-0", NULL}),
		pod_mounting("shop", "db-1", NULL, (const char *const[]){"data-db-1", NULL}),
		pod_mounting("shop", "report", "n2", (const char *const[]){"data-db-0", NULL}),
		pod_mounting("other", "db-0", "n2", (const char *const[]){"data-db-0", NULL}),
		json_pack("{s:{s:s}, s:{s:s, s:[{s:s, s:{s:s}}]}}", "metadata", "name", "nameless-ns", "spec",
			  "nodeName", "n1", "volumes", "name", "d", "persistentVolumeClaim", "claimName", "x"),
	};
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		usage_mounts_add_pod(mounts, pods[i]);
		json_decref(pods[i]);
	}
	json_t *want = json_pack("{s:{s:{s:b}, s:{s:b}}, s:{s:{s:b}}, s:{s:{s:b}}}", "shop/data-db-0", "n1", "db-0", 1,
				 "n2", "report", 1, "shop/logs-db-0", "n1", "db-0", 1, "other/data-db-0", "n2", "db-0", 1);
	if (!json_equal(mounts, want)) {
		char *got = json_dumps(mounts, JSON_SORT_KEYS);
		fail_msg("mounts: %s", got);
	}
	assert_int_equal(usage__mount_of(mounts, "n1", "shop", "db-0", "shop", "data-db-0"), USAGE_MOUNT_YES);
	assert_int_equal(usage__mount_of(mounts, "n2", "shop", "report", "shop", "data-db-0"), USAGE_MOUNT_YES);
	assert_int_equal(usage__mount_of(mounts, "n2", "shop", "db-0", "shop", "data-db-0"), USAGE_MOUNT_OTHER_POD);
	assert_int_equal(usage__mount_of(mounts, "n2", "other", "db-0", "shop", "data-db-0"), USAGE_MOUNT_OTHER_POD);
	assert_int_equal(usage__mount_of(mounts, "n3", "shop", "db-0", "shop", "data-db-0"), USAGE_MOUNT_WRONG_NODE);
	assert_int_equal(usage__mount_of(mounts, "n1", "shop", "db-0", "other", "data-db-0"), USAGE_MOUNT_WRONG_NODE);
	assert_int_equal(usage__mount_of(mounts, "n1", "shop", "db-1", "shop", "data-db-1"), USAGE_MOUNT_NOT_ASKED);
	assert_int_equal(usage__mount_of(mounts, "n1", NULL, NULL, "shop", "logs-db-0"), USAGE_MOUNT_OTHER_POD);
	json_decref(want);
	json_decref(mounts);
}

/* errors holds one line, want. */
static void expect_only_error(const json_t *errors, const char *want)
{
	assert_int_equal(json_array_size(errors), 1);
	assert_string_equal(json_string_value(json_array_get(errors, 0)), want);
}

/*
 * A node taken over (issue 27, finding 3): n-evil calls itself n-good and
 * reports, with figures that would grow them or let them fill, data-db-0
 * under the name of the pod that mounts it (db-0, which runs on n-good),
 * and cache-web-0 of namespace other under a pod of its own namespace and
 * under web-0's name; and a claim nobody asked about.
 */
static const char EVIL_SUMMARY[] =
	"{\"node\":{\"nodeName\":\"n-good\"},\"pods\":["
	"{\"podRef\":{\"name\":\"db-0\",\"namespace\":\"shop\"},\"volume\":[{\"availableBytes\":1,"
	"\"capacityBytes\":1073741824,\"usedBytes\":1073741823,\"name\":\"data\","
	"\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}}]},"
	"{\"podRef\":{\"name\":\"x\",\"namespace\":\"evil\"},\"volume\":[{\"availableBytes\":1,"
	"\"capacityBytes\":10737418240,\"usedBytes\":10737418239,\"name\":\"data\","
	"\"pvcRef\":{\"name\":\"cache-web-0\",\"namespace\":\"other\"}},"
	"{\"availableBytes\":1,\"capacityBytes\":2,\"usedBytes\":1,\"name\":\"own\","
	"\"pvcRef\":{\"name\":\"own\",\"namespace\":\"evil\"}}]},"
	"{\"podRef\":{\"name\":\"web-0\",\"namespace\":\"other\"},\"volume\":[{\"availableBytes\":10737418240,"
	"\"capacityBytes\":10737418240,\"usedBytes\":0,\"name\":\"cache\","
	"\"pvcRef\":{\"name\":\"cache-web-0\",\"namespace\":\"other\"}}]}]}";

/* The right node, but a pod the cache does not show mounting data-db-0 reports it first. */
static const char OTHER_POD_SUMMARY[] =
	"{\"pods\":[{\"podRef\":{\"name\":\"intruder\",\"namespace\":\"shop\"},\"volume\":[{\"availableBytes\":1,"
	"\"capacityBytes\":1073741824,\"usedBytes\":1073741823,\"name\":\"data\","
	"\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}}]},"
	"{\"podRef\":{\"name\":\"db-0\",\"namespace\":\"shop\"},\"volume\":[{\"availableBytes\":858993459,"
	"\"capacityBytes\":1073741824,\"usedBytes\":214748365,\"name\":\"data\","
	"\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}}]}]}";

/* What SUMMARY (n-good's) says, whoever was read first. */
static void expect_good_figures(json_t *table)
{
	assert_int_equal(json_object_size(table), 3);
	expect_usage(table, "shop/data-db-0", GI, 214748365, 858993459, 65536, 536);
	expect_usage(table, "other/cache-web-0", 10 * GI, 0, 10 * GI, 0, 0);
	assert_null(json_object_get(table, "evil/own"));
}

/* Only the node and pod that the cache shows mounting a claim speak for it, in either order. */
static void test_summary_only_from_its_node(void **state)
{
	(void)state;
	json_t *mounts = summary_mounts("n-good");
	for (int evil_first = 0; evil_first < 2; evil_first++) {
		json_t *table = json_object();
		char *why = NULL;
		if (evil_first)
			assert_int_equal(usage_parse_summary(EVIL_SUMMARY, strlen(EVIL_SUMMARY), "n-evil", mounts, table,
							     &why), 3);
		assert_int_equal(usage_parse_summary(SUMMARY, strlen(SUMMARY), "n-good", mounts, table, &why), 0);
		if (!evil_first)
			assert_int_equal(usage_parse_summary(EVIL_SUMMARY, strlen(EVIL_SUMMARY), "n-evil", mounts, table,
							     &why), 3);
		assert_null(why);
		expect_good_figures(table);
		json_decref(table);
	}
	/* On the right node, the figures are the mounting pod's. */
	json_t *table = json_object();
	char *why = NULL;
	assert_int_equal(usage_parse_summary(OTHER_POD_SUMMARY, strlen(OTHER_POD_SUMMARY), "n-good", mounts, table,
					     &why), 0);
	assert_int_equal(json_object_size(table), 1);
	expect_usage(table, "shop/data-db-0", GI, 214748365, 858993459, 0, 0);
	json_decref(table);
	json_decref(mounts);
}

/*
 * The same through the kubelet source: n-evil answers at once, n-good
 * 300 ms later. n-good's figures are taken; n-evil's are one line.
 */
static void test_kubelet_node_speaks_for_others(void **state)
{
	(void)state;
	struct canned_server *good = canned_server_start("200 OK", "application/json", SUMMARY);
	struct canned_server *evil = canned_server_start("200 OK", "application/json", EVIL_SUMMARY);
	canned_server_delay(good, 300);
	struct token_api *api = NULL;
	struct kube_client *client = NULL;
	struct usage_source *s = kubelet_source_start(&api, &client);
	struct usage_node nodes[] = {{"n-good", "127.0.0.1", canned_server_port(good)},
				     {"n-evil", "127.0.0.1", canned_server_port(evil)}};
	json_t *table = json_object(), *errors = json_array(), *mounts = summary_mounts("n-good");
	assert_int_equal(usage_source_poll(s, nodes, 2, mounts, table, errors), 2);
	expect_good_figures(table);
	expect_only_error(errors,
			  "node n-evil: 3 volumes ignored: they name claims that, per the cache, no pod on this node "
			  "mounts");
	usage_source_free(s);
	kube_client_free(client);
	token_api_stop(api);
	canned_server_stop(good);
	canned_server_stop(evil);
	json_decref(mounts);
	json_decref(table);
	json_decref(errors);
}

/* A series of the answer below. */
#define SERIES(name, ns, claim, node, at, value)                                                             \
	"{\"metric\":{\"__name__\":\"kubelet_volume_stats_" name "\",\"endpoint\":\"https-metrics\","         \
	"\"instance\":\"" node ":10250\",\"job\":\"kubelet\",\"metrics_path\":\"/metrics\",\"namespace\":\"" ns \
	"\",\"node\":\"" node "\",\"persistentvolumeclaim\":\"" claim "\",\"service\":\"kubelet\"},"         \
	"\"value\":[" at ",\"" value "\"]}"

/*
 * A Prometheus answer: data-db-0 whole; data-db-1 from two kubelets (it
 * moved from 10.0.0.5 to 10.0.0.6: the later samples win, whatever the
 * order); data-db-2's capacity NaN (no usage); data-db-3 without inode
 * series; a series of a metric not asked for and one without a namespace.
 */
static const char *const PROMETHEUS_SERIES[] = {
	SERIES("capacity_bytes", "shop", "data-db-0", "10.0.0.5", "1764079200.123", "1.073741824e+09"),
	SERIES("used_bytes", "shop", "data-db-0", "10.0.0.5", "1764079200.123", "2.14748365e+08"),
	SERIES("available_bytes", "shop", "data-db-0", "10.0.0.5", "1764079200.123", "8.58993459e+08"),
	SERIES("inodes", "shop", "data-db-0", "10.0.0.5", "1764079200.123", "65536"),
	SERIES("inodes_used", "shop", "data-db-0", "10.0.0.5", "1764079200.123", "536"),
	SERIES("capacity_bytes", "shop", "data-db-1", "10.0.0.6", "1764079200", "2.147483648e+09"),
	SERIES("capacity_bytes", "shop", "data-db-1", "10.0.0.5", "1764078990", "1.073741824e+09"),
	SERIES("used_bytes", "shop", "data-db-1", "10.0.0.5", "1764078990", "9.9e+08"),
	SERIES("used_bytes", "shop", "data-db-1", "10.0.0.6", "1764079200", "1.5e+09"),
	SERIES("available_bytes", "shop", "data-db-1", "10.0.0.6", "1764079200", "5.49755813888e+11"),
	SERIES("available_bytes", "shop", "data-db-1", "10.0.0.5", "1764078990", "1"),
	SERIES("inodes", "shop", "data-db-1", "10.0.0.6", "1764079200", "1000"),
	SERIES("inodes_used", "shop", "data-db-1", "10.0.0.6", "1764079200", "600"),
	SERIES("capacity_bytes", "shop", "data-db-2", "10.0.0.5", "1764079200", "NaN"),
	SERIES("used_bytes", "shop", "data-db-2", "10.0.0.5", "1764079200", "1"),
	SERIES("available_bytes", "shop", "data-db-2", "10.0.0.5", "1764079200", "1"),
	SERIES("capacity_bytes", "other", "data-db-3", "10.0.0.5", "1764079200", "10737418240"),
	SERIES("used_bytes", "other", "data-db-3", "10.0.0.5", "1764079200", "0"),
	SERIES("available_bytes", "other", "data-db-3", "10.0.0.5", "1764079200", "1.073741824e+10"),
	SERIES("inodes_free", "other", "data-db-3", "10.0.0.5", "1764079200", "3"),
	"{\"metric\":{\"__name__\":\"kubelet_volume_stats_used_bytes\",\"persistentvolumeclaim\":\"x\"},"
	"\"value\":[1764079200,\"5\"]}",
};

/* The answer carrying the series above (a string literal that long is past what C promises). New string. */
static char *prometheus_answer(void)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_appendf(&sb, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[");
	for (size_t i = 0; i < sizeof(PROMETHEUS_SERIES) / sizeof(PROMETHEUS_SERIES[0]); i++)
		strbuf_appendf(&sb, "%s%s", i ? "," : "", PROMETHEUS_SERIES[i]);
	strbuf_appendf(&sb, "]}}");
	return strbuf_detach(&sb);
}

static void test_prometheus_answer(void **state)
{
	(void)state;
	json_t *table = json_object();
	char *why = NULL;
	char *answer = prometheus_answer();
	assert_int_equal(usage_parse_prometheus(answer, strlen(answer), table, &why), 0);
	free(answer);
	assert_null(why);
	assert_int_equal(json_object_size(table), 3);
	expect_usage(table, "shop/data-db-0", GI, 214748365, 858993459, 65536, 536);
	expect_usage(table, "shop/data-db-1", 2 * GI, 1500000000, 512 * GI, 1000, 600);
	expect_usage(table, "other/data-db-3", 10 * GI, 0, 10 * GI, 0, 0);
	assert_null(json_object_get(table, "shop/data-db-2"));
	json_decref(table);
}

/* An answer of one claim whose capacity sample is value: the capacity read, or -1 when refused. */
static int64_t capacity_of(const char *value)
{
	char *body = xasprintf("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
			       "{\"metric\":{\"__name__\":\"kubelet_volume_stats_capacity_bytes\",\"namespace\":\"n\","
			       "\"persistentvolumeclaim\":\"c\"},\"value\":[1764079200.5,\"%s\"]},"
			       "{\"metric\":{\"__name__\":\"kubelet_volume_stats_used_bytes\",\"namespace\":\"n\","
			       "\"persistentvolumeclaim\":\"c\"},\"value\":[1764079200.5,\"0\"]},"
			       "{\"metric\":{\"__name__\":\"kubelet_volume_stats_available_bytes\",\"namespace\":\"n\","
			       "\"persistentvolumeclaim\":\"c\"},\"value\":[1764079200.5,\"0\"]}]}}",
			       value);
	json_t *table = json_object();
	char *why = NULL;
	assert_int_equal(usage_parse_prometheus(body, strlen(body), table, &why), 0);
	struct volume_usage u;
	int64_t capacity = -1;
	if (json_object_get(table, "n/c")) {
		assert_true(usage_from_json(json_object_get(table, "n/c"), &u));
		capacity = u.capacity_bytes;
	}
	json_decref(table);
	free(body);
	return capacity;
}

static void test_prometheus_float_strings(void **state)
{
	(void)state;
	assert_int_equal(capacity_of("1.073741824e+09"), GI);
	assert_int_equal(capacity_of("1073741824"), GI);
	assert_int_equal(capacity_of("5.49755813888e+11"), 512 * GI);
	/* 1 PiB + 1 byte: whole numbers up to 2^53 are exact in a float */
	assert_int_equal(capacity_of("1125899906842625"), 1125899906842625LL);
	assert_int_equal(capacity_of("9.007199254740992e+15"), 9007199254740992LL);
	assert_int_equal(capacity_of("4.6116860184273879e+18"), 4611686018427387904LL);
	assert_int_equal(capacity_of("0"), 0);
	assert_int_equal(capacity_of("1e3"), 1000);
	/* refused: not a size */
	assert_int_equal(capacity_of("NaN"), -1);
	assert_int_equal(capacity_of("+Inf"), -1);
	assert_int_equal(capacity_of("-Inf"), -1);
	assert_int_equal(capacity_of("-1"), -1);
	assert_int_equal(capacity_of("9.223372036854775808e+18"), -1);
	assert_int_equal(capacity_of("1e300"), -1);
	assert_int_equal(capacity_of("12abc"), -1);
	assert_int_equal(capacity_of(""), -1);
}

static void expect_prometheus_refused(const char *body, const char *why_has)
{
	expect_refused(usage_parse_prometheus, body, why_has);
}

static void test_prometheus_refused(void **state)
{
	(void)state;
	expect_prometheus_refused("{\"status\":\"error\",\"errorType\":\"bad_data\","
				  "\"error\":\"invalid parameter \\\"query\\\": 1:1: parse error: unexpected \\\"{\\\"\"}",
				  "bad_data: invalid parameter \"query\": 1:1: parse error");
	expect_prometheus_refused("{\"status\":\"error\",\"errorType\":\"timeout\",\"error\":\"query timed out\"}",
				  "timeout: query timed out");
	expect_prometheus_refused("not json", "not JSON");
	expect_prometheus_refused("[1]", "not a JSON object");
	expect_prometheus_refused("{\"data\":{\"resultType\":\"vector\",\"result\":[]}}", "status is missing");
	expect_prometheus_refused("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
				  "not an instant vector (resultType matrix)");
	expect_prometheus_refused("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}",
				  "not an instant vector");
}

static void test_usage_json(void **state)
{
	(void)state;
	struct volume_usage u = {5 * GI, 4 * GI, GI, 327680, 12}, back;
	json_t *o = usage_to_json(&u);
	assert_true(usage_from_json(o, &back));
	assert_memory_equal(&u, &back, sizeof(u));
	json_object_del(o, "inodes");
	json_object_del(o, "inodesUsed");
	assert_true(usage_from_json(o, &back));
	assert_int_equal(back.inodes, 0);
	json_object_set_new(o, "inodes", json_string("many"));
	assert_false(usage_from_json(o, &back));
	json_object_del(o, "inodes");
	json_object_del(o, "used");
	assert_false(usage_from_json(o, &back));
	json_object_set_new(o, "used", json_real(1.0));
	assert_false(usage_from_json(o, &back));
	json_decref(o);
	assert_false(usage_from_json(NULL, &back));
}

static void test_kind_names(void **state)
{
	(void)state;
	static const enum usage_source_kind kinds[] = {USAGE_SOURCE_NONE, USAGE_SOURCE_KUBELET,
						       USAGE_SOURCE_KUBELET_PROXY, USAGE_SOURCE_PROMETHEUS};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		assert_int_equal(usage_source_kind_parse(usage_source_kind_name(kinds[i])), (int)kinds[i]);
	assert_int_equal(usage_source_kind_parse("kubelet"), USAGE_SOURCE_KUBELET);
	assert_int_equal(usage_source_kind_parse("kubelet-proxy"), USAGE_SOURCE_KUBELET_PROXY);
	assert_int_equal(usage_source_kind_parse("prometheus"), USAGE_SOURCE_PROMETHEUS);
	assert_int_equal(usage_source_kind_parse("Kubelet"), -1);
	assert_int_equal(usage_source_kind_parse("kubelet_proxy"), -1);
	assert_int_equal(usage_source_kind_parse(""), -1);
	assert_int_equal(usage_source_kind_parse(NULL), -1);
	assert_string_equal(usage_source_kind_name((enum usage_source_kind)42), "unknown");
}

static void expect_options_refused(struct kube_client *c, const struct usage_source_options *o, const char *err_has)
{
	char *err = NULL;
	assert_null(usage_source_new(c, o, &err));
	assert_non_null(err);
	if (!strstr(err, err_has))
		fail_msg("error \"%s\" does not say \"%s\"", err, err_has);
	free(err);
}

static void test_options_refused(void **state)
{
	(void)state;
	struct kube_client *c = loopback_client(1, NULL);
	expect_options_refused(c, &(struct usage_source_options){.kind = USAGE_SOURCE_NONE}, "no usage source");
	expect_options_refused(c, &(struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS}, "no URL");
	expect_options_refused(
		c, &(struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = "ftp://p:21"},
		"scheme must be http or https");
	expect_options_refused(c,
			       &(struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS,
							      .prometheus_url = "http://u:secret@p:9090/?x=1"},
			       "http://***@p:9090/?x=1: a query");
	expect_options_refused(c,
			       &(struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS,
							      .prometheus_url = "https://p:9090",
							      .prometheus_token_file = "/nonexistent/token"},
			       "/nonexistent/token");
	expect_options_refused(c,
			       &(struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS,
							      .prometheus_url = "https://p:9090",
							      .prometheus_ca_file = "/nonexistent/ca.crt"},
			       "prometheus CA file /nonexistent/ca.crt");
	expect_options_refused(c,
			       &(struct usage_source_options){KUBELET_OPTS, .kubelet_ca_file = "/nonexistent/ca.crt"},
			       "kubelet CA file /nonexistent/ca.crt");
	expect_options_refused(NULL, &(struct usage_source_options){KUBELET_OPTS}, "needs the API client");
	/* Namespace scope has no kubelet source: refused, pointing at what works there. */
	expect_options_refused(c,
			       &(struct usage_source_options){.kind = USAGE_SOURCE_KUBELET,
							      .kubelet_token_namespace = "sop",
							      .kubelet_service_account = "reader"},
			       "needs cluster scope");
	expect_options_refused(c,
			       &(struct usage_source_options){.kind = USAGE_SOURCE_KUBELET,
							      .kubelet_token_namespace = "sop",
							      .kubelet_service_account = "reader"},
			       "--autoresize-source=prometheus");
	/* Without a ServiceAccount of its own there is nothing to show a kubelet. */
	expect_options_refused(
		c, &(struct usage_source_options){.kind = USAGE_SOURCE_KUBELET, .cluster_scope = true},
		"--kubelet-service-account");
	expect_options_refused(NULL, &(struct usage_source_options){.kind = USAGE_SOURCE_KUBELET_PROXY},
			       "needs the API client");
	kube_client_free(c);
}

/*
 * Credentials in clear (issue 27, finding 10): a bearer token, or a
 * password in the URL, with an http:// Prometheus is refused, and the
 * message says to use https://; the same over https:// is taken.
 */
static void test_prometheus_credentials_need_https(void **state)
{
	(void)state;
	char *dir = scratch_dir_make("usage-source-clear");
	char *token = scratch_file_write(dir, "token", "prom-token\n", 0600);
	struct usage_source_options o = {.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = "http://p:9090",
					 .prometheus_token_file = token};
	expect_options_refused(NULL, &o, "prometheus URL http://p:9090 is http://: the bearer token");
	expect_options_refused(NULL, &o, "use https://");
	o.prometheus_url = "HTTP://p:9090/prom";
	expect_options_refused(NULL, &o, "use https://");
	o = (struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = "http://u:secret@p:9090"};
	expect_options_refused(NULL, &o, "prometheus URL http://***@p:9090 is http://: its password");

	static const char *const taken[] = {"https://p:9090", "https://u:secret@p:9090", "http://u@p:9090"};
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		o = (struct usage_source_options){.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = taken[i],
						  .prometheus_token_file = strncmp(taken[i], "https", 5) ? NULL : token};
		char *err = NULL;
		struct usage_source *s = usage_source_new(NULL, &o, &err);
		if (!s)
			fail_msg("%s refused: %s", taken[i], err);
		usage_source_free(s);
	}
	free(token);
	scratch_dir_remove(dir);
}

/* The request target of a request head ("GET <target> HTTP/1.1"). New string. */
static char *request_target(const char *head)
{
	assert_true(!strncmp(head, "GET ", 4));
	const char *end = strstr(head + 4, " HTTP/1.1\r\n");
	assert_non_null(end);
	return xstrndup(head + 4, (size_t)(end - head - 4));
}

static void test_prometheus_query(void **state)
{
	(void)state;
	char *url = usage__prometheus_query_url("http://prometheus.monitoring:9090/prom");
	static const char prefix[] = "http://prometheus.monitoring:9090/prom/api/v1/query?query=";
	assert_true(!strncmp(url, prefix, strlen(prefix)));
	/* Nothing unescaped that a server could read as another parameter or path. */
	assert_null(strpbrk(url + strlen(prefix), "{}\"|&=?# "));
	char *query = curl_easy_unescape(NULL, url + strlen(prefix), 0, NULL);
	assert_string_equal(query, "{__name__=~\"kubelet_volume_stats_"
				   "(capacity_bytes|used_bytes|available_bytes|inodes|inodes_used)\"}");
	curl_free(query);
	free(url);
}

static void test_prometheus_http(void **state)
{
	(void)state;
	char *dir = scratch_dir_make("usage-source");
	char *token = scratch_file_write(dir, "token", "prom-token\n", 0600);
	char *answer = prometheus_answer();
	struct canned_server *srv = canned_server_start("200 OK", "application/json", answer);
	char *base = xasprintf("https://127.0.0.1:%d/", canned_server_port(srv));
	struct usage_source_options o = {
		.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = base, .prometheus_token_file = token};
	char *err = NULL;
	struct usage_source *s = usage_source_new(NULL, &o, &err);
	assert_non_null(s);
	usage__set_prometheus_plain_http(s); /* to see the request's headers */
	json_t *table = json_object(), *errors = json_array();
	/* Nodes are the kubelet sources' business: Prometheus is asked once. */
	struct usage_node nodes[] = {{"n1", "10.0.0.5", 10250}, {"n2", "10.0.0.6", 10250}};
	assert_int_equal(usage_source_poll(s, nodes, 2, NULL, table, errors), 1);
	assert_int_equal(json_array_size(errors), 0);
	assert_int_equal(json_object_size(table), 3);
	expect_usage(table, "shop/data-db-1", 2 * GI, 1500000000, 512 * GI, 1000, 600);

	char head[8192];
	assert_int_equal(canned_server_last(srv, head, sizeof(head)), 1);
	char *target = request_target(head);
	char *want = usage__prometheus_query_url("");
	assert_string_equal(target, want);
	assert_non_null(strstr(head, "\r\nAuthorization: Bearer prom-token\r\n"));

	/* The token is read anew at each poll (it rotates); one request each time. */
	unlink(token);
	free(scratch_file_write(dir, "token", "rotated", 0600));
	assert_int_equal(usage_source_poll(s, NULL, 0, NULL, table, errors), 1);
	assert_int_equal(canned_server_last(srv, head, sizeof(head)), 2);
	assert_non_null(strstr(head, "\r\nAuthorization: Bearer rotated\r\n"));
	assert_int_equal(json_array_size(errors), 0);

	usage_source_free(s);
	canned_server_stop(srv);
	json_decref(table);
	json_decref(errors);
	free(want);
	free(target);
	free(base);
	free(token);
	free(answer);
	scratch_dir_remove(dir);
}

static void test_prometheus_http_errors(void **state)
{
	(void)state;
	static const char refusal[] = "{\"status\":\"error\",\"errorType\":\"bad_data\","
				      "\"error\":\"1:1: parse error: unexpected character\"}";
	struct canned_server *srv = canned_server_start("400 Bad Request", "application/json", refusal);
	char *base = xasprintf("http://127.0.0.1:%d", canned_server_port(srv));
	struct usage_source_options o = {.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = base};
	char *err = NULL;
	struct usage_source *s = usage_source_new(NULL, &o, &err);
	assert_non_null(s);
	json_t *table = json_object(), *errors = json_array();
	assert_int_equal(usage_source_poll(s, NULL, 0, NULL, table, errors), 1);
	assert_int_equal(json_object_size(table), 0);
	assert_int_equal(json_array_size(errors), 1);
	char *want = xasprintf("prometheus %s: 400 Bad Request: bad_data: 1:1: parse error: unexpected character", base);
	assert_string_equal(json_string_value(json_array_get(errors, 0)), want);
	usage_source_free(s);
	canned_server_stop(srv);
	free(want);
	free(base);

	/* Nobody listening: the cause, and the URL without its password. */
	int port;
	close(loopback_listen(1, &port));
	base = xasprintf("https://user:secret@127.0.0.1:%d", port);
	o.prometheus_url = base;
	s = usage_source_new(NULL, &o, &err);
	assert_non_null(s);
	json_array_clear(errors);
	assert_int_equal(usage_source_poll(s, NULL, 0, NULL, table, errors), 1);
	assert_int_equal(json_array_size(errors), 1);
	const char *line = json_string_value(json_array_get(errors, 0));
	char *prefix = xasprintf("prometheus https://***@127.0.0.1:%d: ", port);
	if (strncmp(line, prefix, strlen(prefix)) || strlen(line) <= strlen(prefix) + 5 || strstr(line, "secret"))
		fail_msg("error line: %s", line);
	usage_source_free(s);
	free(prefix);
	free(base);
	json_decref(table);
	json_decref(errors);
}

static int serve_prometheus(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)req;
	*content_type = "application/json";
	*body = xstrdup(ctx);
	return 200;
}

/*
 * Prometheus over https, as a token needs it: a server whose certificate
 * is of a private CA is read with --prometheus-ca-file naming that CA (and
 * the token), and without it the check fails and says so.
 */
static void test_prometheus_https(void **state)
{
	(void)state;
	struct cert_bundle ca = CERT_BUNDLE_INIT;
	static const char *const names[] = {"127.0.0.1", NULL};
	char *err = NULL;
	long long now = (long long)time(NULL);
	if (cert_bundle_make_ca(&ca, "prometheus-ca", CERT_CA_DAYS_DEFAULT, now, &err) < 0 ||
	    cert_bundle_make_serving(&ca, names, CERT_SERVING_DAYS_DEFAULT, now, &err) < 0)
		fail_msg("certificates: %s", err);
	struct http_server *srv = http_server_start_tls("127.0.0.1:0", ca.cert_pem, ca.key_pem, &err);
	if (!srv)
		fail_msg("prometheus: %s", err);
	char *answer = prometheus_answer();
	http_server_handle(srv, "/api/v1/query", serve_prometheus, answer);
	char *dir = scratch_dir_make("usage-source-prom-tls");
	char *ca_file = scratch_file_write(dir, "ca.crt", ca.ca_cert_pem, 0600);
	char *token = scratch_file_write(dir, "token", "prom-token", 0600);
	char *base = xasprintf("https://127.0.0.1:%d", http_server_port(srv));
	for (int with_ca = 1; with_ca >= 0; with_ca--) {
		struct usage_source_options o = {.kind = USAGE_SOURCE_PROMETHEUS, .prometheus_url = base,
						 .prometheus_token_file = token, .prometheus_ca_file = with_ca ? ca_file : NULL};
		struct usage_source *s = usage_source_new(NULL, &o, &err);
		if (!s)
			fail_msg("source: %s", err);
		json_t *table = json_object(), *errors = json_array();
		assert_int_equal(usage_source_poll(s, NULL, 0, NULL, table, errors), 1);
		assert_int_equal(json_object_size(table), with_ca ? 3 : 0);
		assert_int_equal(json_array_size(errors), with_ca ? 0 : 1);
		const char *line = json_string_value(json_array_get(errors, 0));
		if (!with_ca && !strcasestr(line, "certificate"))
			fail_msg("error line: %s", line);
		usage_source_free(s);
		json_decref(table);
		json_decref(errors);
	}
	http_server_stop(srv);
	cert_bundle_release(&ca);
	free(base);
	free(token);
	free(ca_file);
	free(answer);
	scratch_dir_remove(dir);
}

/* The line of errors that starts with prefix (borrowed), or NULL. */
static const char *error_line(const json_t *errors, const char *prefix)
{
	size_t i;
	const json_t *e;
	json_array_foreach(errors, i, e)
		if (!strncmp(json_string_value(e), prefix, strlen(prefix)))
			return json_string_value(e);
	return NULL;
}

static const char KUBELET_403[] =
	"Forbidden (user=system:serviceaccount:sop:stateful-operator, verb=get, resource=nodes, subresource=stats)";

/*
 * The kubelet source over http (tests only): the request path, the
 * usage token and never the operator's own, a refusal in one line, the
 * other nodes still asked, a node without an address not asked.
 */
static void test_kubelet_http(void **state)
{
	(void)state;
	struct canned_server *good = canned_server_start("200 OK", "application/json", SUMMARY);
	struct canned_server *refusing = canned_server_start("403 Forbidden", "text/plain; charset=utf-8", KUBELET_403);
	struct token_api *api = NULL;
	struct kube_client *client = NULL;
	struct usage_source *s = kubelet_source_start(&api, &client);
	struct usage_node nodes[] = {
		{"local-node-1", "127.0.0.1", canned_server_port(refusing)},
		{"local-node-0", "127.0.0.1", canned_server_port(good)},
		{"local-node-2", NULL, 10250},
		{"local-node-3", "evil.example/?", 10250},
		{"local-node-4", "user@127.0.0.1", canned_server_port(good)},
	};
	json_t *table = json_object(), *errors = json_array(), *mounts = summary_mounts("local-node-0");
	assert_int_equal(usage_source_poll(s, nodes, 5, mounts, table, errors), 2);
	assert_int_equal(json_object_size(table), 3);
	expect_usage(table, "shop/data-db-0", GI, 214748365, 858993459, 65536, 536);

	char head[8192];
	assert_int_equal(canned_server_last(good, head, sizeof(head)), 1);
	assert_true(!strncmp(head, "GET /stats/summary HTTP/1.1\r\n", 29));
	/* The kubelet sees the usage token, and only it: never the operator's own ("t"). */
	assert_non_null(strstr(head, "\r\nAuthorization: Bearer " USAGE_TOKEN "\r\n"));
	assert_null(strstr(head, "Bearer t\r\n"));
	assert_int_equal(canned_server_last(refusing, head, sizeof(head)), 1);
	assert_null(strstr(head, "Bearer t\r\n"));
	assert_int_equal(token_api_requests(api), 1);

	/* Nodes are asked at once: their lines come in the order the answers do. */
	assert_int_equal(json_array_size(errors), 4);
	char *want = xasprintf("node local-node-1: GET http://127.0.0.1:%d/stats/summary: 403 Forbidden: %s",
			       canned_server_port(refusing), KUBELET_403);
	assert_string_equal(error_line(errors, "node local-node-1: "), want);
	assert_non_null(error_line(errors, "node local-node-2: "));
	/* Addresses that are not one are not asked: the token would go elsewhere. */
	assert_string_equal(error_line(errors, "node local-node-3: "),
			    "node local-node-3: address \"evil.example/?\" is not an IP address or host name: not asked");
	assert_non_null(error_line(errors, "node local-node-4: "));

	usage_source_free(s);
	kube_client_free(client);
	token_api_stop(api);
	canned_server_stop(good);
	canned_server_stop(refusing);
	json_decref(mounts);
	json_decref(table);
	json_decref(errors);
	free(want);
}

/*
 * Nodes are asked several at once: five that never answer cost one
 * timeout together, not five in a row, and the twenty that answer are
 * all read meanwhile, each once.
 */
static void test_kubelet_parallel(void **state)
{
	(void)state;
	struct canned_server *good = canned_server_start("200 OK", "application/json", SUMMARY);
	int silent_port;
	int silent_fd = loopback_listen(64, &silent_port); /* never accepts: requests wait unanswered */
	struct token_api *api = token_api_start("sop", "reader", USAGE_TOKEN, 600);
	struct kube_client *client = token_api_client(api);
	struct usage_source_options o = {KUBELET_OPTS, .timeout_ms = 1000};
	char *err = NULL;
	struct usage_source *s = usage_source_new(client, &o, &err);
	assert_non_null(s);
	usage__set_kubelet_scheme(s, "http");
	enum { SILENT = 5, ANSWERING = 20 };
	struct usage_node nodes[SILENT + ANSWERING];
	char names[SILENT + ANSWERING][32];
	json_t *mounts = json_object();
	for (int i = 0; i < SILENT + ANSWERING; i++) {
		bool silent = i < SILENT;
		snprintf(names[i], sizeof(names[i]), "%s-%d", silent ? "silent" : "node", i);
		nodes[i] = (struct usage_node){names[i], "127.0.0.1", silent ? silent_port : canned_server_port(good)};
		add_summary_pods(mounts, names[i]); /* each answers with the same pods */
	}
	json_t *table = json_object(), *errors = json_array();
	double start = clock_mono_ms();
	assert_int_equal(usage_source_poll(s, nodes, SILENT + ANSWERING, mounts, table, errors), SILENT + ANSWERING);
	double took = clock_mono_ms() - start;
	if (took > 3500)
		fail_msg("the poll took %.0f ms: the silent nodes were waited for one after another", took);
	assert_int_equal(json_object_size(table), 3);
	assert_int_equal(json_array_size(errors), SILENT);
	for (int i = 0; i < SILENT; i++) {
		char *prefix = xasprintf("node silent-%d: GET http://127.0.0.1:%d/stats/summary: ", i, silent_port);
		assert_non_null(error_line(errors, prefix));
		free(prefix);
	}
	char head[8192];
	assert_int_equal(canned_server_last(good, head, sizeof(head)), ANSWERING);

	/* The handles are reused: a second poll is the same. */
	json_array_clear(errors);
	assert_int_equal(usage_source_poll(s, nodes + SILENT, ANSWERING, mounts, table, errors), ANSWERING);
	assert_int_equal(json_array_size(errors), 0);
	assert_int_equal(canned_server_last(good, head, sizeof(head)), 2 * ANSWERING);
	/* One token for both polls: it is renewed at 80 % of its life, not per poll. */
	assert_int_equal(token_api_requests(api), 1);

	usage_source_free(s);
	kube_client_free(client);
	token_api_stop(api);
	close(silent_fd);
	canned_server_stop(good);
	json_decref(mounts);
	json_decref(table);
	json_decref(errors);
}

/* A summary of n pods, each with two containers and four volumes, one of them claim data-db-<i>: as a kubelet writes it. */
static char *summary_of(int n, const char *pod_extra)
{
	static const char fs[] = "{\"time\":\"2026-11-28T05:00:00Z\",\"availableBytes\":53687091200,\"capacityBytes\":"
				 "107374182400,\"usedBytes\":53687091200,\"inodesFree\":6000000,\"inodes\":6553600,"
				 "\"inodesUsed\":553600";
	static const char cpu[] = "{\"time\":\"2026-11-28T05:00:00Z\",\"usageNanoCores\":1234567,"
				  "\"usageCoreNanoSeconds\":98765432100}";
	static const char mem[] = "{\"time\":\"2026-11-28T05:00:00Z\",\"availableBytes\":4194304000,\"usageBytes\":"
				  "52428800,\"workingSetBytes\":41943040,\"rssBytes\":31457280,\"pageFaults\":12345,"
				  "\"majorPageFaults\":12}";
	struct strbuf sb = STRBUF_INIT;
	strbuf_appendf(&sb, "{\"node\":{\"nodeName\":\"n1\",\"cpu\":%s,\"memory\":%s,\"fs\":%s}},\"pods\":[", cpu, mem,
		       fs);
	for (int i = 0; i < n; i++) {
		strbuf_appendf(&sb, "%s{\"podRef\":{\"name\":\"db-%d\",\"namespace\":\"shop\",\"uid\":\"0000-%d\"},"
				    "\"containers\":[",
			       i ? "," : "", i, i);
		for (int c = 0; c < 2; c++)
			strbuf_appendf(&sb, "%s{\"name\":\"c%d\",\"cpu\":%s,\"memory\":%s,\"rootfs\":%s},\"logs\":%s}}",
				       c ? "," : "", c, cpu, mem, fs, fs);
		strbuf_appendf(&sb, "],\"cpu\":%s,\"memory\":%s,\"volume\":[%s,\"name\":\"data\",\"pvcRef\":{\"name\":"
				    "\"data-db-%d\",\"namespace\":\"shop\"}}",
			       cpu, mem, fs, i);
		for (int v = 0; v < 3; v++)
			strbuf_appendf(&sb, ",%s,\"name\":\"kube-api-access-%d\"}", fs, v);
		strbuf_appendf(&sb, "],\"ephemeral-storage\":%s}%s}", fs, pod_extra);
	}
	strbuf_appendf(&sb, "]}");
	return strbuf_detach(&sb);
}

/*
 * The parse budget (issue 27): a summary of a node with 110 pods is read,
 * with room to spare; one that would take more than
 * USAGE_SUMMARY_MAX_PARSED once parsed (pods of "{}": 300 KB of text,
 * 24 MiB parsed) is that node's error, the other nodes' answers are read.
 */
static void test_kubelet_summary_over_budget_is_the_nodes_error(void **state)
{
	(void)state;
	char *full = summary_of(110, "");
	struct json_budget b;
	json_budget_open(&b, SIZE_MAX);
	json_t *doc = json_loads(full, 0, NULL);
	json_budget_close(&b);
	assert_non_null(doc);
	json_decref(doc);
	if (b.charged > USAGE_SUMMARY_MAX_PARSED / 3)
		fail_msg("a 110-pod summary costs %zu bytes parsed: too close to the budget", b.charged);
	json_t *table = json_object(), *mounts = json_object();
	for (int i = 0; i < 110; i++) {
		char claim[64], pod[32];
		snprintf(claim, sizeof(claim), "shop/data-db-%d", i);
		snprintf(pod, sizeof(pod), "db-%d", i);
		json_object_set_new(mounts, claim, json_pack("{s:{s:b}}", "n1", pod, 1));
	}
	char *why = NULL;
	assert_int_equal(usage_parse_summary(full, strlen(full), "n1", mounts, table, &why), 0);
	assert_int_equal(json_object_size(table), 110);
	json_decref(table);
	json_decref(mounts);

	struct strbuf hostile = STRBUF_INIT;
	strbuf_appendf(&hostile, "{\"pods\":[");
	for (int i = 0; i < 100000; i++)
		strbuf_appendf(&hostile, "%s{}", i ? "," : "");
	strbuf_appendf(&hostile, "]}");
	assert_true(hostile.len < 310000);
	struct canned_server *good = canned_server_start("200 OK", "application/json", SUMMARY);
	struct canned_server *bad = canned_server_start("200 OK", "application/json", hostile.buf);
	struct token_api *api = NULL;
	struct kube_client *client = NULL;
	struct usage_source *s = kubelet_source_start(&api, &client);
	struct usage_node nodes[] = {
		{"hostile", "127.0.0.1", canned_server_port(bad)},
		{"local-node-0", "127.0.0.1", canned_server_port(good)},
	};
	table = json_object();
	json_t *errors = json_array();
	mounts = summary_mounts("local-node-0");
	assert_int_equal(usage_source_poll(s, nodes, 2, mounts, table, errors), 2);
	json_decref(mounts);
	assert_int_equal(json_object_size(table), 3);
	expect_usage(table, "shop/data-db-0", GI, 214748365, 858993459, 65536, 536);
	assert_int_equal(json_array_size(errors), 1);
	const char *line = error_line(errors, "node hostile: ");
	if (!line || !strstr(line, "the stats summary is refused: JSON error: too large: its parsed tree takes more "
				   "than 16777216 bytes of memory, the budget for a kubelet's stats summary"))
		fail_msg("error: %s", line ? line : json_dumps(errors, 0));

	usage_source_free(s);
	kube_client_free(client);
	token_api_stop(api);
	canned_server_stop(good);
	canned_server_stop(bad);
	json_decref(table);
	json_decref(errors);
	strbuf_release(&hostile);
	free(full);
}

static int serve_summary(void *ctx, const struct http_request *req, const char **content_type, char **body)
{
	(void)ctx;
	(void)req;
	*content_type = "application/json";
	*body = xstrdup(SUMMARY);
	return 200;
}

/* One poll of the kubelet source with kubelet options o, by client, of a node at port: its errors. New reference. */
static json_t *poll_kubelet_tls(struct kube_client *client, const struct usage_source_options *o, int port)
{
	char *err = NULL;
	struct usage_source *s = usage_source_new(client, o, &err);
	if (!s)
		fail_msg("source: %s", err);
	struct usage_node node = {"local-node-0", "127.0.0.1", port};
	json_t *table = json_object(), *errors = json_array(), *mounts = summary_mounts("local-node-0");
	assert_int_equal(usage_source_poll(s, &node, 1, mounts, table, errors), 1);
	assert_int_equal(json_object_size(table), json_array_size(errors) ? 0 : 3);
	usage_source_free(s);
	json_decref(mounts);
	json_decref(table);
	return errors;
}

/* A client of the token API whose CA (for other servers, here the kubelets') is ca_pem. */
static struct kube_client *client_with_ca(const struct token_api *api, const char *ca_pem)
{
	struct kube_config cfg = {0};
	cfg.server = xasprintf("http://127.0.0.1:%d", token_api_port(api));
	cfg.token = xstrdup("t");
	cfg.ca_data.data = xstrdup(ca_pem);
	cfg.ca_data.len = strlen(ca_pem);
	char *err = NULL;
	struct kube_client *client = kube_client_new(&cfg, NULL, &err);
	if (!client)
		fail_msg("client: %s", err);
	return client;
}

/*
 * The kubelet source as it runs (https): a kubelet whose serving
 * certificate is of a CA of its own is read when --kubelet-ca-file names
 * that CA, or when the API server's CA is that CA, or with
 * --kubelet-insecure-tls; otherwise the check fails and says so.
 */
static void test_kubelet_https(void **state)
{
	(void)state;
	struct cert_bundle kubelet = CERT_BUNDLE_INIT, other = CERT_BUNDLE_INIT;
	static const char *const names[] = {"127.0.0.1", NULL};
	char *err = NULL;
	long long now = (long long)time(NULL);
	if (cert_bundle_make_ca(&kubelet, "kubelet-ca", CERT_CA_DAYS_DEFAULT, now, &err) < 0 ||
	    cert_bundle_make_serving(&kubelet, names, CERT_SERVING_DAYS_DEFAULT, now, &err) < 0 ||
	    cert_bundle_make_ca(&other, "cluster-ca", CERT_CA_DAYS_DEFAULT, now, &err) < 0)
		fail_msg("certificates: %s", err);
	struct http_server *srv = http_server_start_tls("127.0.0.1:0", kubelet.cert_pem, kubelet.key_pem, &err);
	if (!srv)
		fail_msg("kubelet: %s", err);
	http_server_handle(srv, "/stats/summary", serve_summary, NULL);
	int port = http_server_port(srv);
	char *dir = scratch_dir_make("usage-source-tls");
	char *kubelet_ca = scratch_file_write(dir, "kubelet-ca.crt", kubelet.ca_cert_pem, 0600);

	/* An API server client whose CA is another one (the common case: self-signed kubelet certificates). */
	struct token_api *api = token_api_start("sop", "reader", USAGE_TOKEN, 600);
	struct kube_client *client = client_with_ca(api, other.ca_cert_pem);

	struct usage_source_options o = {KUBELET_OPTS, .kubelet_ca_file = kubelet_ca};
	json_t *errors = poll_kubelet_tls(client, &o, port);
	assert_int_equal(json_array_size(errors), 0);
	json_decref(errors);

	o = (struct usage_source_options){KUBELET_OPTS, .kubelet_insecure_tls = true};
	errors = poll_kubelet_tls(client, &o, port);
	assert_int_equal(json_array_size(errors), 0);
	json_decref(errors);

	o = (struct usage_source_options){KUBELET_OPTS};
	errors = poll_kubelet_tls(client, &o, port);
	assert_int_equal(json_array_size(errors), 1);
	char *prefix = xasprintf("node local-node-0: GET https://127.0.0.1:%d/stats/summary: ", port);
	const char *line = json_string_value(json_array_get(errors, 0));
	if (strncmp(line, prefix, strlen(prefix)) || !strcasestr(line, "certificate"))
		fail_msg("error line: %s", line);
	json_decref(errors);
	kube_client_free(client);

	/* The API server's CA is the kubelets' CA: no option needed. */
	client = client_with_ca(api, kubelet.ca_cert_pem);
	errors = poll_kubelet_tls(client, &o, port);
	assert_int_equal(json_array_size(errors), 0);
	json_decref(errors);

	kube_client_free(client);
	token_api_stop(api);
	http_server_stop(srv);
	cert_bundle_release(&kubelet);
	cert_bundle_release(&other);
	free(prefix);
	free(kubelet_ca);
	scratch_dir_remove(dir);
}

/* The kubelet source (over http) asks one node whose kubelet answers so: its one error line (new string). */
static char *kubelet_error_line(const char *status, const char *content_type, const char *body, int *port)
{
	struct canned_server *srv = canned_server_start(status, content_type, body);
	*port = canned_server_port(srv);
	struct token_api *api = token_api_start("sop", "reader", USAGE_TOKEN, 600);
	struct kube_client *client = token_api_client(api);
	struct usage_source_options o = {KUBELET_OPTS};
	char *err = NULL;
	struct usage_source *s = usage_source_new(client, &o, &err);
	assert_non_null(s);
	usage__set_kubelet_scheme(s, "http");
	struct usage_node node = {"n1", "127.0.0.1", *port};
	json_t *table = json_object(), *errors = json_array();
	assert_int_equal(usage_source_poll(s, &node, 1, NULL, table, errors), 1);
	assert_int_equal(json_array_size(errors), 1);
	assert_int_equal(json_object_size(table), 0);
	char *line = xstrdup(json_string_value(json_array_get(errors, 0)));
	usage_source_free(s);
	kube_client_free(client);
	token_api_stop(api);
	canned_server_stop(srv);
	json_decref(table);
	json_decref(errors);
	return line;
}

/* A refusal whose text is not UTF-8 still makes its line (JSON strings must be UTF-8). */
static void test_kubelet_http_not_utf8(void **state)
{
	(void)state;
	int port;
	char *line = kubelet_error_line("403 Forbidden", "text/plain; charset=latin1",
					"Zugriff verweigert f\xfcr system:serviceaccount", &port);
	char *want = xasprintf("node n1: GET http://127.0.0.1:%d/stats/summary: 403 Forbidden: Zugriff verweigert "
			       "f\xef\xbf\xbdr system:serviceaccount", port); /* U+FFFD */
	assert_string_equal(line, want);
	free(want);
	free(line);
}

/*
 * A node's error body goes into a UsageUnavailable Event: whatever a node
 * (or whoever holds its address) answers, with escapes (issue 27) in an
 * API Status' message or in plain text, as raw C1 bytes, at 1 MiB, the
 * line is clean and bounded, its words kept.
 */
static void test_kubelet_error_body_clean(void **state)
{
	(void)state;
	int port;
	char *line = kubelet_error_line("500 Internal Server Error", "application/json",
					"{\"kind\":\"Status\",\"message\":\"disk \\u001b]0;x\\u0007\\u001b[2J\\u009b2J "
					"\\u202egone\"}", &port);
	terminal_expect_safe("Status message", line, false);
	assert_non_null(strstr(line, "500 Internal Server Error: disk "));
	assert_non_null(strstr(line, "gone"));
	free(line);
	line = kubelet_error_line("503 Service Unavailable", "text/plain", "busy \033[2J\x9b" "2J\xc2\x9b" "1A \x7f end", &port);
	terminal_expect_safe("plain body", line, false);
	assert_non_null(strstr(line, "busy "));
	free(line);
	size_t n = 1 << 20;
	char *big = malloc(n + 64);
	assert_non_null(big);
	strcpy(big, "{\"message\":\"");
	memset(big + strlen(big), 'x', n);
	strcpy(big + 12 + n, "\"}");
	line = kubelet_error_line("500 Internal Server Error", "application/json", big, &port);
	if (strlen(line) > 1024)
		fail_msg("a 1 MiB message makes an error line of %zu bytes", strlen(line));
	assert_non_null(strstr(line, "xxx"));
	free(line);
	free(big);
}

/* A kubelet answer that is not a summary: one line naming the node and the cause. */
static void test_kubelet_http_junk(void **state)
{
	(void)state;
	int port;
	char *line = kubelet_error_line("200 OK", "text/html", "<html>hello</html>", &port);
	char *prefix = xasprintf("node n1: GET http://127.0.0.1:%d/stats/summary: the stats summary is not JSON", port);
	if (strncmp(line, prefix, strlen(prefix)))
		fail_msg("error line: %s", line);
	free(prefix);
	free(line);
}

/* Through the API server: the node proxy path, and the API's refusal in its own words. */
static void test_kubelet_proxy_http(void **state)
{
	(void)state;
	static const char forbidden[] =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
		"\"message\":\"nodes \\\"local-node-1\\\" is forbidden: User \\\"system:serviceaccount:sop:op\\\" "
		"cannot get resource \\\"nodes/proxy\\\" in API group \\\"\\\" at the cluster scope\","
		"\"reason\":\"Forbidden\",\"details\":{\"name\":\"local-node-1\",\"kind\":\"nodes\"},\"code\":403}";
	struct canned_server *api = canned_server_start("200 OK", "application/json", SUMMARY);
	struct canned_server *refusing = canned_server_start("403 Forbidden", "application/json", forbidden);
	struct kube_client_options co = {.max_retries = -1};
	struct kube_client *client = loopback_client(canned_server_port(api), &co);
	struct kube_client *refused_client = loopback_client(canned_server_port(refusing), &co);
	struct usage_source_options o = {.kind = USAGE_SOURCE_KUBELET_PROXY};
	char *err = NULL;
	struct usage_source *s = usage_source_new(client, &o, &err);
	struct usage_source *refused = usage_source_new(refused_client, &o, &err);
	assert_non_null(s);
	assert_non_null(refused);
	struct usage_node nodes[] = {{"local-node-0", NULL, 0}, {"local-node-1", NULL, 0}};
	json_t *table = json_object(), *errors = json_array(), *mounts = summary_mounts("local-node-0");

	assert_int_equal(usage_source_poll(s, nodes, 1, mounts, table, errors), 1);
	assert_int_equal(json_array_size(errors), 0);
	assert_int_equal(json_object_size(table), 3);
	char head[8192];
	assert_int_equal(canned_server_last(api, head, sizeof(head)), 1);
	assert_true(!strncmp(head, "GET /api/v1/nodes/local-node-0/proxy/stats/summary HTTP/1.1\r\n", 61));

	/* The same summary as local-node-1's, where none of those pods runs: nothing taken, one line. */
	json_t *other = json_object();
	assert_int_equal(usage_source_poll(s, nodes + 1, 1, mounts, other, errors), 1);
	assert_int_equal(json_object_size(other), 0);
	expect_only_error(errors,
			  "node local-node-1: 5 volumes ignored: they name claims that, per the cache, no pod on this "
			  "node mounts");
	json_array_clear(errors);
	json_decref(other);

	assert_int_equal(usage_source_poll(refused, nodes + 1, 1, mounts, table, errors), 1);
	assert_int_equal(json_array_size(errors), 1);
	assert_string_equal(json_string_value(json_array_get(errors, 0)),
			    "node local-node-1: GET /api/v1/nodes/local-node-1/proxy/stats/summary: 403 Forbidden: "
			    "nodes \"local-node-1\" is forbidden: User \"system:serviceaccount:sop:op\" cannot get "
			    "resource \"nodes/proxy\" in API group \"\" at the cluster scope");

	usage_source_free(s);
	usage_source_free(refused);
	kube_client_free(client);
	kube_client_free(refused_client);
	canned_server_stop(api);
	canned_server_stop(refusing);
	json_decref(mounts);
	json_decref(table);
	json_decref(errors);
}

/*
 * A node down behind the API server's proxy (503 after the API server's
 * 30 s dial timeout): asked once per poll, though the client retries
 * other GETs on 503; the next poll is the retry.
 */
static void test_kubelet_proxy_node_down(void **state)
{
	(void)state;
	static const char unavailable[] =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
		"\"message\":\"error trying to reach service: dial tcp 10.0.0.6:10250: i/o timeout\","
		"\"reason\":\"ServiceUnavailable\",\"code\":503}";
	struct canned_server *api = canned_server_start("503 Service Unavailable", "application/json", unavailable);
	struct kube_client *client = loopback_client(canned_server_port(api), NULL); /* the default retries */
	struct usage_source_options o = {.kind = USAGE_SOURCE_KUBELET_PROXY};
	char *err = NULL;
	struct usage_source *s = usage_source_new(client, &o, &err);
	assert_non_null(s);
	struct usage_node node = {"local-node-1", NULL, 0};
	json_t *table = json_object(), *errors = json_array();
	assert_int_equal(usage_source_poll(s, &node, 1, NULL, table, errors), 1);
	char head[8192];
	assert_int_equal(canned_server_last(api, head, sizeof(head)), 1);
	assert_int_equal(json_array_size(errors), 1);
	assert_string_equal(json_string_value(json_array_get(errors, 0)),
			    "node local-node-1: GET /api/v1/nodes/local-node-1/proxy/stats/summary: 503 "
			    "ServiceUnavailable: error trying to reach service: dial tcp 10.0.0.6:10250: i/o timeout");
	usage_source_free(s);
	kube_client_free(client);
	canned_server_stop(api);
	json_decref(table);
	json_decref(errors);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary_real_shape),
		cmocka_unit_test(test_summary_claim_on_two_nodes),
		cmocka_unit_test(test_summary_junk),
		cmocka_unit_test(test_summary_odd_but_valid),
		cmocka_unit_test(test_mounts_from_pods),
		cmocka_unit_test(test_summary_only_from_its_node),
		cmocka_unit_test(test_prometheus_answer),
		cmocka_unit_test(test_prometheus_float_strings),
		cmocka_unit_test(test_prometheus_refused),
		cmocka_unit_test(test_usage_json),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_options_refused),
		cmocka_unit_test(test_prometheus_credentials_need_https),
		cmocka_unit_test(test_prometheus_query),
		cmocka_unit_test(test_prometheus_http),
		cmocka_unit_test(test_prometheus_http_errors),
		cmocka_unit_test(test_prometheus_https),
		cmocka_unit_test(test_kubelet_http),
		cmocka_unit_test(test_kubelet_http_junk),
		cmocka_unit_test(test_kubelet_http_not_utf8),
		cmocka_unit_test(test_kubelet_error_body_clean),
		cmocka_unit_test(test_kubelet_parallel),
		cmocka_unit_test(test_kubelet_node_speaks_for_others),
		cmocka_unit_test(test_kubelet_summary_over_budget_is_the_nodes_error),
		cmocka_unit_test(test_kubelet_https),
		cmocka_unit_test(test_kubelet_proxy_http),
		cmocka_unit_test(test_kubelet_proxy_node_down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
