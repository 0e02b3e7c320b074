/*
 * What one reconcile reads from the caches (resize_read, scaledown_read,
 * cluster_read): the workload's own pods, claims, PVs, copy Jobs and
 * revisions, found by index, never the rest of its namespace or of the
 * cluster. The number of objects read (each an inflate and a parse) is the
 * same in a namespace of 10 sets as in one of 400, so a regression to
 * reading whole namespaces fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/cluster/cluster_controller.h"
#include "controllers/resize/resize_controller.h"
#include "controllers/scaledown/scaledown_controller.h"
#include "controllers/scaledown/scaledown_plan.h"
#include "controllers/scaledown/scaledown_request.h"
#include "controllers/set_index.h"
#include "runtime/store.h"
#include "client/kube_object.h"

#define NS "shop"
#define REPLICAS 3

static void put(struct store *s, json_t *obj)
{
	assert_true(store_upsert(s, obj, NULL));
	json_decref(obj);
}

static json_t *meta(const char *kind, const char *ns, const char *name)
{
	json_t *o = json_pack("{s:s, s:{s:s, s:s, s:s}}", "kind", kind, "metadata", "name", name, "uid", name,
			      "resourceVersion", "1");
	if (ns)
		json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
	return o;
}

/* A fleet of n StatefulSets "s<i>", each with REPLICAS pods, claims data-s<i>-<k> and their PVs; and StorageClasses. */
static void fill(const struct resize_caches *c, int n)
{
	put(c->classes, meta("StorageClass", NULL, "fast"));
	put(c->classes, meta("StorageClass", NULL, "slow"));
	for (int i = 0; i < n; i++) {
		char name[32], obj[64], pv[64];
		snprintf(name, sizeof(name), "s%d", i);
		put(c->statefulsets, meta("StatefulSet", NS, name));
		for (int k = 0; k < REPLICAS; k++) {
			snprintf(obj, sizeof(obj), "%s-%d", name, k);
			put(c->pods, meta("Pod", NS, obj));
			snprintf(obj, sizeof(obj), "data-%s-%d", name, k);
			snprintf(pv, sizeof(pv), "pv-%s-%d", name, k);
			json_t *claim = meta("PersistentVolumeClaim", NS, obj);
			json_object_set_new(claim, "spec", json_pack("{s:s}", "volumeName", pv));
			put(c->pvcs, claim);
			json_t *vol = meta("PersistentVolume", NULL, pv);
			json_object_set_new(vol, "spec",
					    json_pack("{s:{s:s, s:s}}", "claimRef", "namespace", NS, "name", obj));
			put(c->pvs, vol);
		}
	}
	/* A copy in flight for s1: its -copy claim and its Job, labelled. */
	json_t *copy = meta("PersistentVolumeClaim", NS, "data-s1-2-copy");
	json_object_set_new(json_object_get(copy, "metadata"), "labels",
			    json_pack("{s:s}", "stateful-operator.io/resize-copy-of", "s1"));
	put(c->pvcs, copy);
	json_t *job = meta("Job", NS, "s1-2-copy");
	json_object_set_new(json_object_get(job, "metadata"), "labels",
			    json_pack("{s:s}", "stateful-operator.io/resize-copy-of", "s1"));
	put(c->jobs, job);
}

static size_t total_read(const struct resize_caches *c)
{
	return store_objects_read(c->statefulsets) + store_objects_read(c->pvcs) + store_objects_read(c->pods) +
	       store_objects_read(c->backups) + store_objects_read(c->classes) + store_objects_read(c->pvs) +
	       store_objects_read(c->jobs);
}

static void caches_new(struct resize_caches *c)
{
	c->statefulsets = store_new();
	c->pvcs = store_new();
	c->pods = store_new();
	c->backups = store_new();
	c->classes = store_new();
	c->pvs = store_new();
	c->jobs = store_new();
	resize_caches_index(c);
}

static void caches_free(struct resize_caches *c)
{
	store_free(c->statefulsets);
	store_free(c->pvcs);
	store_free(c->pods);
	store_free(c->backups);
	store_free(c->classes);
	store_free(c->pvs);
	store_free(c->jobs);
}

/* Objects one reconcile of key reads in a namespace of n sets (everything: see resize_read). */
static size_t reads_for(int n, const char *key, bool everything, struct resize_reads *keep)
{
	struct resize_caches c;
	caches_new(&c);
	fill(&c, n);
	size_t before = total_read(&c);
	struct resize_reads r;
	resize_read(&c, key, everything, &r);
	size_t read = total_read(&c) - before;
	if (keep)
		*keep = r;
	else
		resize_reads_release(&r);
	caches_free(&c);
	return read;
}

static void test_reads_its_own_objects_only(void **state)
{
	(void)state;
	struct resize_reads r;
	reads_for(50, NS "/s7", true, &r);
	assert_non_null(r.sts);
	assert_null(r.backup);
	assert_int_equal(json_array_size(r.pods), REPLICAS);
	assert_int_equal(json_array_size(r.pvcs), REPLICAS);
	assert_int_equal(json_array_size(r.pvs), REPLICAS);
	assert_int_equal(json_array_size(r.jobs), 0);
	assert_int_equal(json_array_size(r.classes), 2);
	size_t i;
	json_t *o;
	json_array_foreach(r.pods, i, o) assert_int_equal(strncmp(kube_obj_str(o, "metadata.name"), "s7-", 3), 0);
	json_array_foreach(r.pvcs, i, o) assert_int_equal(strncmp(kube_obj_str(o, "metadata.name"), "data-s7-", 8), 0);
	json_array_foreach(r.pvs, i, o) assert_int_equal(strncmp(kube_obj_str(o, "metadata.name"), "pv-s7-", 6), 0);
	resize_reads_release(&r);

	/* A set with a copy in flight also sees its -copy claim and its Job; s10's claims are not s1's. */
	reads_for(50, NS "/s1", true, &r);
	assert_int_equal(json_array_size(r.pvcs), REPLICAS + 1);
	assert_int_equal(json_array_size(r.jobs), 1);
	assert_int_equal(json_array_size(r.pods), REPLICAS);
	resize_reads_release(&r);
}

static void test_cost_does_not_grow_with_the_fleet(void **state)
{
	(void)state;
	size_t small = reads_for(10, NS "/s7", true, NULL);
	size_t large = reads_for(400, NS "/s7", true, NULL);
	/* The set, its 3 pods, 3 claims, 3 PVs and the 2 StorageClasses. */
	assert_int_equal(small, 1 + 3 * REPLICAS + 2);
	assert_int_equal(large, small);
}

/*
 * A set that asks nothing of the resize controller is decided from itself
 * and its claims (a template bigger than a claim is the one request it can
 * still make); one with any resize annotation gets everything it owns.
 */
static void test_a_set_that_asks_nothing_reads_its_claims_only(void **state)
{
	(void)state;
	struct resize_reads r;
	size_t idle = reads_for(400, NS "/s7", false, &r);
	assert_true(r.partial);
	assert_int_equal(idle, 1 + REPLICAS);
	assert_int_equal(json_array_size(r.pvcs), REPLICAS);
	assert_null(r.pods);
	assert_null(r.pvs);
	assert_null(r.classes);
	resize_reads_release(&r);

	struct resize_caches c;
	caches_new(&c);
	fill(&c, 10);
	static const char *const asking[] = {"resize.stateful-operator.io/data",
					     "storage-class.stateful-operator.io/data",
					     "stateful-operator.io/resize-state"};
	for (size_t i = 0; i < sizeof(asking) / sizeof(*asking); i++) {
		json_t *sts = meta("StatefulSet", NS, "s3");
		json_object_set_new(json_object_get(sts, "metadata"), "annotations",
				    json_pack("{s:s}", asking[i], "2Gi"));
		/* A newer version than the one in the cache. */
		json_object_set_new(json_object_get(sts, "metadata"), "resourceVersion",
				    json_sprintf("%zu", i + 2));
		put(c.statefulsets, sts);
		resize_read(&c, NS "/s3", false, &r);
		assert_false(r.partial);
		assert_int_equal(json_array_size(r.pods), REPLICAS);
		assert_int_equal(json_array_size(r.classes), 2);
		resize_reads_release(&r);
	}
	/* A saved copy, too, is something to look at. */
	json_t *cm = meta("ConfigMap", NS, "s4-sts-backup");
	put(c.backups, cm);
	resize_read(&c, NS "/s4", false, &r);
	assert_non_null(r.backup);
	assert_false(r.partial);
	resize_reads_release(&r);
	caches_free(&c);
}

/* ---- scale-down ---- */

/* Objects one scale-down reconcile of key reads, the set annotated with annotation (or none), among n sets. */
static size_t scaledown_reads_for(int n, const char *key, const char *annotation, struct scaledown_reads *keep)
{
	struct resize_caches rc;
	caches_new(&rc);
	fill(&rc, n);
	if (annotation) {
		json_t *sts = meta("StatefulSet", NS, strchr(key, '/') + 1);
		json_object_set_new(json_object_get(sts, "metadata"), "annotations",
				    json_pack("{s:s}", annotation, "{}"));
		json_object_set_new(json_object_get(sts, "metadata"), "resourceVersion", json_string("2"));
		put(rc.statefulsets, sts);
	}
	struct scaledown_caches c = {rc.statefulsets, rc.pvcs, rc.pods};
	scaledown_caches_index(&c);
	size_t before = total_read(&rc);
	struct scaledown_reads r;
	scaledown_read(&c, key, &r);
	size_t read = total_read(&rc) - before;
	if (keep)
		*keep = r;
	else
		scaledown_reads_release(&r);
	caches_free(&rc);
	return read;
}

static void test_scaledown_reads_its_own_objects_only(void **state)
{
	(void)state;
	/* Asks nothing: the set alone. */
	struct scaledown_reads r;
	assert_int_equal(scaledown_reads_for(400, NS "/s7", NULL, &r), 1);
	assert_non_null(r.sts);
	assert_null(r.pvcs);
	assert_null(r.pods);
	scaledown_reads_release(&r);
	/* A cleanup template: the set, its claims and its pods, in a namespace of 10 or 400. */
	size_t small = scaledown_reads_for(10, NS "/s7", ANNOTATION_SCALEDOWN_TEMPLATE, NULL);
	size_t large = scaledown_reads_for(400, NS "/s7", ANNOTATION_SCALEDOWN_TEMPLATE, &r);
	assert_int_equal(small, 1 + 2 * REPLICAS);
	assert_int_equal(large, small);
	size_t i;
	json_t *o;
	json_array_foreach(r.pods, i, o) assert_int_equal(strncmp(kube_obj_str(o, "metadata.name"), "s7-", 3), 0);
	json_array_foreach(r.pvcs, i, o) assert_int_equal(strncmp(kube_obj_str(o, "metadata.name"), "data-s7-", 8), 0);
	scaledown_reads_release(&r);
	/* A state or our finalizer are something to look at too. */
	assert_int_equal(scaledown_reads_for(400, NS "/s7", ANNOTATION_SCALEDOWN_STATE, NULL), 1 + 2 * REPLICAS);
}

/* ---- StatefulCluster ---- */

/* n clusters "c<i>" with REPLICAS member pods and claims each (members named by identity), and revisions. */
static void fill_clusters(const struct cluster_caches *c, int n)
{
	for (int i = 0; i < n; i++) {
		char name[32], obj[64], uid[32];
		snprintf(name, sizeof(name), "c%d", i);
		snprintf(uid, sizeof(uid), "uid-c%d", i);
		json_t *cl = meta("StatefulCluster", NS, name);
		json_object_set_new(json_object_get(cl, "metadata"), "uid", json_string(uid));
		put(c->clusters, cl);
		for (int k = 0; k < REPLICAS; k++) {
			snprintf(obj, sizeof(obj), "%s-%d", name, 10 + k);
			json_t *pod = meta("Pod", NS, obj);
			json_object_set_new(pod, "spec", json_pack("{s:s}", "nodeName", "node-1"));
			put(c->pods, pod);
			snprintf(obj, sizeof(obj), "data-%s-%d", name, 10 + k);
			put(c->pvcs, meta("PersistentVolumeClaim", NS, obj));
		}
		for (int k = 0; k < 2; k++) {
			snprintf(obj, sizeof(obj), "%s-rev%d", name, k);
			json_t *rev = meta("ControllerRevision", NS, obj);
			json_object_set_new(json_object_get(rev, "metadata"), "ownerReferences",
					    json_pack("[{s:s}]", "uid", uid));
			put(c->revisions, rev);
		}
	}
	put(c->nodes, meta("Node", NULL, "node-1"));
	put(c->nodes, meta("Node", NULL, "node-2"));
}

static size_t cluster_reads_for(int n, const char *key, struct cluster_reads *keep)
{
	struct cluster_caches c = {store_new(), store_new(), store_new(), store_new(), store_new()};
	cluster_caches_index(&c);
	fill_clusters(&c, n);
	struct store *all[] = {c.clusters, c.pods, c.pvcs, c.revisions, c.nodes};
	size_t before = 0, after = 0;
	for (size_t i = 0; i < 5; i++)
		before += store_objects_read(all[i]);
	struct cluster_reads r;
	cluster_read(&c, key, &r);
	for (size_t i = 0; i < 5; i++)
		after += store_objects_read(all[i]);
	if (keep)
		*keep = r;
	else
		cluster_reads_release(&r);
	for (size_t i = 0; i < 5; i++)
		store_free(all[i]);
	return after - before;
}

static void test_cluster_reads_its_own_objects_only(void **state)
{
	(void)state;
	struct cluster_reads r;
	size_t small = cluster_reads_for(10, NS "/c7", NULL);
	size_t large = cluster_reads_for(400, NS "/c7", &r);
	/* The cluster, its 3 pods and 3 claims, its 2 revisions, the one node its pods run on. */
	assert_int_equal(small, 1 + 2 * REPLICAS + 2 + 1);
	assert_int_equal(large, small);
	assert_int_equal(json_array_size(r.pods), REPLICAS);
	assert_int_equal(json_array_size(r.pvcs), REPLICAS);
	assert_int_equal(json_array_size(r.revisions), 2);
	assert_int_equal(json_array_size(r.nodes), 1);
	size_t i;
	json_t *o;
	json_array_foreach(r.pods, i, o) assert_int_equal(strncmp(kube_obj_str(o, "metadata.name"), "c7-", 3), 0);
	cluster_reads_release(&r);
}

static void test_index_values(void **state)
{
	(void)state;
	char **v = NULL;
	json_t *o = meta("Pod", NS, "web-12");
	size_t n = set_index_pod(o, &v);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], NS "/web");
	free(v[0]);
	free(v);
	json_decref(o);
	/* Not an ordinal: no workload by name. */
	o = meta("Pod", NS, "web-x");
	assert_int_equal(set_index_pod(o, &v), 0);
	json_decref(o);
	/* A claim may belong to every suffix of <template>-<sts> (names hold dashes). */
	o = meta("PersistentVolumeClaim", NS, "data-my-db-0-copy");
	n = set_index_claim(o, &v);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], NS "/my-db");
	assert_string_equal(v[1], NS "/db");
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	json_decref(o);
	/* A PV: by the claim it names, in that claim's namespace. */
	o = meta("PersistentVolume", NULL, "pv-1");
	assert_int_equal(set_index_volume(o, &v), 0);
	json_object_set_new(o, "spec", json_pack("{s:{s:s, s:s}}", "claimRef", "namespace", "other", "name", "data-web-0"));
	n = set_index_volume(o, &v);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "other/web");
	free(v[0]);
	free(v);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_its_own_objects_only),
		cmocka_unit_test(test_cost_does_not_grow_with_the_fleet),
		cmocka_unit_test(test_a_set_that_asks_nothing_reads_its_claims_only),
		cmocka_unit_test(test_scaledown_reads_its_own_objects_only),
		cmocka_unit_test(test_cluster_reads_its_own_objects_only),
		cmocka_unit_test(test_index_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
