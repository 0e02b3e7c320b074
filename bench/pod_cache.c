/*
 * What the Pod cache costs in heap, whole pods against pods trimmed by
 * pod_fields_keep (controllers/pod_fields.h), without a cluster: N pods
 * made from one pod as the API server sends it (names, uids, IPs, times,
 * container IDs and token volume names differing as in a fleet) are stored
 * as an informer stores them (managedFields gone, the workload index), and
 * glibc's in-use bytes are read before and after (mallinfo2). Then what a
 * reconcile's read of one StatefulSet's pods holds while it runs: the
 * parsed copies of its 3 pods.
 *
 *   bench_pod_cache [--pods N] [--fleet] POD.json
 *
 * --fleet first strips POD.json to the test bed's fleet pod (bench/fleet: one
 * container with an image and no env, probes, ports or resources; one
 * claim; no annotations). Prints one line per shape: text bytes a pod,
 * heap held by the store, per pod, and by a read of 3 pods, and the time a
 * pod takes to be trimmed and stored.
 */
#include <jansson.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/pod_fields.h"
#include "controllers/set_index.h"
#include "runtime/store.h"
#include "util/clock.h"

#define REPLICAS 3

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* n random characters of set into out (NUL-terminated). */
static void random_text(char *out, size_t n, const char *set)
{
	size_t k = strlen(set);
	for (size_t i = 0; i < n; i++)
		out[i] = set[next_random() % k];
	out[n] = '\0';
}

static void set_str(json_t *obj, const char *key, const char *value)
{
	if (json_is_object(obj) && json_object_get(obj, key))
		json_object_set_new(obj, key, json_string(value));
}

/* The test bed fleet's pod from a fuller one: one container, nothing but its name and image. */
static void fleet_shape(json_t *pod)
{
	json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
	json_t *status = json_object_get(pod, "status");
	json_object_del(meta, "annotations");
	json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
	const char *keep[] = {"name", "image", "volumeMounts", "terminationMessagePath", "terminationMessagePolicy",
			      "imagePullPolicy", "resources"};
	json_t *slim = json_object();
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (json_object_get(c, keep[i]))
			json_object_set(slim, keep[i], json_object_get(c, keep[i]));
	json_object_set_new(slim, "resources", json_object());
	json_object_set_new(spec, "containers", json_pack("[o]", slim));
	json_array_remove(json_object_get(spec, "volumes"), 1); /* the configMap */
	json_array_remove(json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "volumeMounts"), 1);
	json_object_del(spec, "securityContext");
	json_array_remove(json_object_get(status, "containerStatuses"), 1);
	json_t *cs = json_array_get(json_object_get(status, "containerStatuses"), 0);
	json_object_del(cs, "allocatedResources");
	json_object_del(cs, "resources");
	json_array_remove(json_object_get(cs, "volumeMounts"), 1);
	json_t *cond;
	size_t i;
	json_array_foreach(json_object_get(status, "conditions"), i, cond) {
		json_object_set_new(cond, "status", json_string("True"));
		json_object_del(cond, "reason");
		json_object_del(cond, "message");
	}
}

/* Pod r of set s (namespace s % 100), made from base: what differs between a fleet's pods. */
static json_t *make_pod(const json_t *base, int s, int r)
{
	json_t *pod = json_deep_copy(base);
	json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
	json_t *status = json_object_get(pod, "status");
	char name[64], ns[64], text[96], uid[40], hex[65], suffix[6];
	snprintf(name, sizeof(name), "web-%d-%d", s, r);
	snprintf(ns, sizeof(ns), "bench-fleet-%d", s % 100 + 1);
	set_str(meta, "name", name);
	set_str(meta, "namespace", ns);
	snprintf(text, sizeof(text), "web-%d-", s);
	set_str(meta, "generateName", text);
	random_text(hex, 32, "0123456789abcdef");
	snprintf(uid, sizeof(uid), "%.8s-%.4s-4%.3s-a%.3s-%.12s", hex, hex + 8, hex + 12, hex + 15, hex + 18);
	set_str(meta, "uid", uid);
	snprintf(text, sizeof(text), "%d", 1000000 + s * REPLICAS + r);
	set_str(meta, "resourceVersion", text);
	snprintf(text, sizeof(text), "2026-11-28T2%d:%02d:%02dZ", s % 4, s / 60 % 60, (s + r) % 60);
	set_str(meta, "creationTimestamp", text);
	set_str(status, "startTime", text);
	json_t *labels = json_object_get(meta, "labels");
	snprintf(text, sizeof(text), "web-%d", s);
	set_str(labels, "app", text);
	random_text(hex, 10, "0123456789abcdef");
	snprintf(text, sizeof(text), "web-%d-%s", s, hex);
	set_str(labels, "controller-revision-hash", text);
	set_str(labels, "statefulset.kubernetes.io/pod-name", name);
	snprintf(text, sizeof(text), "%d", r);
	set_str(labels, "apps.kubernetes.io/pod-index", text);
	json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
	snprintf(text, sizeof(text), "web-%d", s);
	set_str(owner, "name", text);
	snprintf(text, sizeof(text), "0b8e4f52-1d6a-4c39-9e27-%012d", s);
	set_str(owner, "uid", text);
	snprintf(text, sizeof(text), "data-%s", name);
	set_str(json_object_get(json_array_get(json_object_get(spec, "volumes"), 0), "persistentVolumeClaim"),
		"claimName", text);
	random_text(suffix, 5, "bcdfghjklmnpqrstvwxz2456789");
	snprintf(text, sizeof(text), "kube-api-access-%s", suffix);
	json_t *v;
	size_t i, k;
	json_array_foreach(json_object_get(spec, "volumes"), i, v)
		if (json_object_get(v, "projected"))
			set_str(v, "name", text);
	json_t *c, *m;
	json_array_foreach(json_object_get(spec, "containers"), i, c)
		json_array_foreach(json_object_get(c, "volumeMounts"), k, m)
			if (!strncmp(json_string_value(json_object_get(m, "name")), "kube-api-access-", 16))
				set_str(m, "name", text);
	set_str(spec, "hostname", name);
	snprintf(text, sizeof(text), "web-%d", s);
	set_str(spec, "subdomain", text);
	snprintf(text, sizeof(text), "node-%d", (s * REPLICAS + r) % 50);
	set_str(spec, "nodeName", text);
	snprintf(text, sizeof(text), "10.0.%d.%d", (s * REPLICAS + r) % 50 / 250, (s * REPLICAS + r) % 50 + 2);
	set_str(status, "hostIP", text);
	set_str(json_array_get(json_object_get(status, "hostIPs"), 0), "ip", text);
	snprintf(text, sizeof(text), "10.244.%d.%d", (s * REPLICAS + r) / 250, (s * REPLICAS + r) % 250 + 2);
	set_str(status, "podIP", text);
	set_str(json_array_get(json_object_get(status, "podIPs"), 0), "ip", text);
	json_array_foreach(json_object_get(status, "containerStatuses"), i, c) {
		random_text(hex, 64, "0123456789abcdef");
		snprintf(text, sizeof(text), "containerd://%s", hex);
		set_str(c, "containerID", text);
		json_array_foreach(json_object_get(c, "volumeMounts"), k, m)
			if (!strncmp(json_string_value(json_object_get(m, "name")), "kube-api-access-", 16))
				set_str(m, "name", suffix);
	}
	return pod;
}

static size_t in_use(void)
{
	malloc_trim(0);
	return mallinfo2().uordblks;
}

/* Stores n pods of base (trimmed or whole) and prints what they hold. */
static void measure(const json_t *base, int n, bool trimmed, const char *shape)
{
	rng = 0x9e3779b97f4a7c15u; /* the same pods for both */
	json_t *one = json_deep_copy(base);
	if (trimmed)
		pod_fields_keep(one);
	char *text = json_dumps(one, JSON_COMPACT);
	size_t text_len = strlen(text);
	free(text);
	json_decref(one);

	size_t before = in_use();
	struct store *s = store_new();
	set_index_ensure(s, set_index_pod);
	uint64_t ns = 0; /* in the informer's steps: the trim and the store */
	for (int i = 0; i < n; i++) {
		json_t *pod = make_pod(base, i / REPLICAS, i % REPLICAS);
		uint64_t t0 = clock_mono_ns();
		if (trimmed)
			pod_fields_keep(pod);
		if (!store_upsert(s, pod, NULL))
			abort();
		ns += clock_mono_ns() - t0;
		json_decref(pod);
	}
	size_t held = in_use() - before;

	/* A reconcile's read: one StatefulSet's pods, parsed, held while it plans. */
	size_t mid = in_use();
	json_t *read = store_by_index(s, SET_INDEX, "bench-fleet-8/web-7");
	size_t read_held = mallinfo2().uordblks - mid;
	if (json_array_size(read) != REPLICAS)
		abort();
	json_decref(read);

	printf("%-6s %-8s pods=%d text=%zu B/pod store=%zu B (%zu B/pod) read_of_%d=%zu B cpu=%.1f us/pod\n", shape,
	       trimmed ? "trimmed" : "whole", n, text_len, held, held / (size_t)n, REPLICAS, read_held,
	       (double)ns / 1000.0 / n);
	store_free(s);
}

int main(int argc, char **argv)
{
	int n = 3000;
	bool fleet = false;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pods") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fleet"))
			fleet = true;
		else
			path = argv[i];
	}
	json_error_t e;
	json_t *base = path ? json_load_file(path, 0, &e) : NULL;
	if (!base || n <= 0) {
		fprintf(stderr, "usage: bench_pod_cache [--pods N] [--fleet] POD.json%s%s\n", base ? "" : ": ",
			base ? "" : (path ? e.text : "no pod given"));
		return 2;
	}
	json_object_del(json_object_get(base, "metadata"), "managedFields"); /* as the informer does */
	if (fleet)
		fleet_shape(base);
	/* The shared deflater is made on first use: not part of either figure. */
	struct store *warm = store_new();
	if (!store_upsert(warm, base, NULL))
		abort();
	store_free(warm);
	const char *shape = fleet ? "fleet" : "full";
	measure(base, n, false, shape);
	measure(base, n, true, shape);
	json_decref(base);
	return 0;
}
