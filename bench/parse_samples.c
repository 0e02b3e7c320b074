/*
 * Writes the documents behind the parse budgets' figures (docs/design.md,
 * "Parse budgets") into DIR, for bench_parse_cost to measure:
 *
 *   bench_parse_samples DIR && bench_parse_cost DIR/(every .json file)
 *
 * Shapes as the API server, a kubelet or Prometheus write them: a big
 * StatefulSet (4 containers of 100 env vars and 20 mounts, with
 * managedFields and last-applied-configuration) and its AdmissionReview
 * (old and new), the same grown by env vars to 1.5 MiB (etcd's limit), a
 * review of two 700 KiB ones, a ConfigMap of 1.5 MiB in 26,000 keys, a
 * big Pod, a kubelet summary of a node with 110 pods (two containers, four
 * volumes each), a Prometheus answer for 1,000 claims (five series each),
 * a 250 KiB Pod template (an annotation), and the 450,000 "{}".
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW "2026-11-28T05:00:00Z"

static const char *dir;

static void write_doc(const char *name, json_t *doc)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (json_dump_file(doc, path, JSON_COMPACT) < 0) {
		fprintf(stderr, "bench_parse_samples: cannot write %s\n", path);
		exit(1);
	}
	json_decref(doc);
}

/* fieldsV1 as the API server writes it: every field an "f:" key of {}, list items by name "k:{...}". */
static json_t *fields_of(const json_t *v)
{
	json_t *d = json_object();
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		if (json_object_size(v))
			json_object_set_new(d, ".", json_object());
		json_object_foreach((json_t *)v, k, x) {
			char key[512];
			snprintf(key, sizeof(key), "f:%s", k);
			json_object_set_new(d, key, fields_of(x));
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) {
			const char *name = json_string_value(json_object_get(x, "name"));
			char key[512];
			if (name)
				snprintf(key, sizeof(key), "k:{\"name\":\"%s\"}", name);
			else
				snprintf(key, sizeof(key), "v:%zu", i);
			json_object_set_new(d, key, fields_of(x));
		}
	}
	return d;
}

static json_t *container(int c, int nenv, int nmounts)
{
	json_t *env = json_array(), *mounts = json_array();
	for (int i = 0; i < nenv; i++) {
		char n[64], v[64];
		snprintf(n, sizeof(n), "ENV_VARIABLE_NUMBER_%04d", i);
		snprintf(v, sizeof(v), "some-value-%04d", i);
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", n, "value", v));
	}
	for (int i = 0; i < nmounts; i++) {
		char n[32], p[32];
		snprintf(n, sizeof(n), "vol-%d", i);
		snprintf(p, sizeof(p), "/mnt/vol-%d", i);
		json_array_append_new(mounts, json_pack("{s:s, s:s}", "name", n, "mountPath", p));
	}
	char name[16];
	snprintf(name, sizeof(name), "c%d", c);
	return json_pack("{s:s, s:s, s:[s], s:[{s:s, s:i, s:s}], s:o, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:o, "
			 "s:{s:{s:s, s:i, s:s}, s:i, s:i}, s:s, s:s}",
			 "name", name, "image", "registry.example.com/team/app:1.2.3", "command", "/bin/server",
			 "ports", "name", "http", "containerPort", 8080, "protocol", "TCP", "env", env, "resources",
			 "requests", "cpu", "500m", "memory", "1Gi", "limits", "cpu", "2", "memory", "4Gi",
			 "volumeMounts", mounts, "livenessProbe", "httpGet", "path", "/healthz", "port", 8080, "scheme",
			 "HTTP", "periodSeconds", 10, "failureThreshold", 3, "terminationMessagePolicy", "File",
			 "imagePullPolicy", "IfNotPresent");
}

static json_t *statefulset(int nenv)
{
	json_t *containers = json_array(), *volumes = json_array();
	for (int c = 0; c < 4; c++)
		json_array_append_new(containers, container(c, nenv, 20));
	for (int i = 0; i < 20; i++) {
		char n[32], cm[32];
		snprintf(n, sizeof(n), "vol-%d", i);
		snprintf(cm, sizeof(cm), "cm-%d", i);
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s, s:i}}", "name", n, "configMap", "name", cm,
							 "defaultMode", 420));
	}
	json_t *spec = json_pack("{s:i, s:s, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:o, s:o, s:s}}, s:[{s:{s:s}, "
				 "s:{s:[s], s:{s:{s:s}}}}]}",
				 "replicas", 3, "serviceName", "db", "selector", "matchLabels", "app", "db", "template",
				 "metadata", "labels", "app", "db", "spec", "containers", containers, "volumes", volumes,
				 "restartPolicy", "Always", "volumeClaimTemplates", "metadata", "name", "data", "spec",
				 "accessModes", "ReadWriteOnce", "resources", "requests", "storage", "10Gi");
	char *applied = json_dumps(spec, JSON_COMPACT);
	json_t *sts = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:o}]}, "
				"s:O, s:{s:i, s:i}}",
				"kind", "StatefulSet", "apiVersion", "apps/v1", "metadata", "name", "db", "namespace",
				"team-a", "uid", "0f7c1e5a-3c1d-4f7e-9a0b-123456789abc", "resourceVersion", "123456",
				"labels", "app", "db", "annotations", "kubectl.kubernetes.io/last-applied-configuration",
				applied, "managedFields", "manager", "kubectl", "operation", "Update", "apiVersion",
				"apps/v1", "time", NOW, "fieldsV1", fields_of(spec), "spec", spec, "status", "replicas", 3,
				"readyReplicas", 3);
	free(applied);
	json_decref(spec);
	return sts;
}

/* A StatefulSet grown by env vars until its JSON reaches bytes. */
static json_t *statefulset_of_size(size_t bytes)
{
	for (int n = 50;; n += n / 5) {
		json_t *s = statefulset(n);
		char *t = json_dumps(s, JSON_COMPACT);
		size_t len = strlen(t);
		free(t);
		if (len >= bytes)
			return s;
		json_decref(s);
	}
}

static json_t *review(json_t *sts)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:O, s:O}}", "kind", "AdmissionReview", "apiVersion",
			 "admission.k8s.io/v1", "request", "uid", "705ab4f5-6393-11e8-b7cc-42010a800002", "namespace",
			 "team-a", "name", "db", "operation", "UPDATE", "object", sts, "oldObject", sts);
}

static json_t *fs(void)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "time", NOW, "availableBytes", (json_int_t)53687091200,
			 "capacityBytes", (json_int_t)107374182400, "usedBytes", (json_int_t)53687091200,
			 "inodesFree", (json_int_t)6000000, "inodes", (json_int_t)6553600, "inodesUsed",
			 (json_int_t)553600);
}

static json_t *usage(void)
{
	return json_pack("{s:s, s:I, s:I, s:I}", "time", NOW, "usageNanoCores", (json_int_t)1234567,
			 "usageCoreNanoSeconds", (json_int_t)98765432100, "workingSetBytes", (json_int_t)41943040);
}

static json_t *summary(int npods)
{
	json_t *pods = json_array();
	for (int i = 0; i < npods; i++) {
		char name[32], claim[32];
		snprintf(name, sizeof(name), "db-%d", i);
		snprintf(claim, sizeof(claim), "data-db-%d", i);
		json_t *vols = json_array(), *containers = json_array();
		json_t *data = fs();
		json_object_set_new(data, "name", json_string("data"));
		json_object_set_new(data, "pvcRef", json_pack("{s:s, s:s}", "name", claim, "namespace", "team-a"));
		json_array_append_new(vols, data);
		for (int k = 0; k < 3; k++) {
			json_t *v = fs();
			json_object_set_new(v, "name", json_string("kube-api-access"));
			json_array_append_new(vols, v);
		}
		for (int c = 0; c < 2; c++)
			json_array_append_new(containers, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "name", "c",
								    "startTime", NOW, "cpu", usage(), "memory",
								    usage(), "rootfs", fs(), "logs", fs()));
		json_array_append_new(pods, json_pack("{s:{s:s, s:s, s:s}, s:o, s:o, s:o, s:o, s:o}", "podRef", "name",
						      name, "namespace", "team-a", "uid", name, "containers",
						      containers, "cpu", usage(), "memory", usage(), "volume", vols,
						      "ephemeral-storage", fs()));
	}
	return json_pack("{s:{s:s, s:o, s:o, s:o}, s:o}", "node", "nodeName", "node-1", "cpu", usage(), "memory",
			 usage(), "fs", fs(), "pods", pods);
}

static json_t *prometheus(int claims)
{
	static const char *const series[] = {"capacity_bytes", "used_bytes", "available_bytes", "inodes",
					     "inodes_used"};
	json_t *result = json_array();
	for (int i = 0; i < claims; i++) {
		for (int m = 0; m < 5; m++) {
			char name[64], claim[32], node[32];
			snprintf(name, sizeof(name), "kubelet_volume_stats_%s", series[m]);
			snprintf(claim, sizeof(claim), "data-db-%d", i);
			snprintf(node, sizeof(node), "node-%d", i % 50);
			json_array_append_new(result,
					      json_pack("{s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:[f, s]}",
							"metric", "__name__", name, "endpoint", "https-metrics", "instance",
							node, "job", "kubelet", "metrics_path", "/metrics", "namespace",
							"team-a", "node", node, "persistentvolumeclaim", claim, "service",
							"kubelet", "value", 1764300000.123, "1073741824"));
		}
	}
	return json_pack("{s:s, s:{s:s, s:o}}", "status", "success", "data", "resultType", "vector", "result", result);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fputs("usage: bench_parse_samples DIR\n", stderr);
		return 2;
	}
	dir = argv[1];
	json_t *big = statefulset(100);
	json_t *pod_spec = json_deep_copy(json_object_get(json_object_get(json_object_get(big, "spec"), "template"),
							  "spec"));
	write_doc("review-sts-big.json", review(big));
	write_doc("sts-big.json", big);
	json_t *huge = statefulset_of_size(3u << 19);
	write_doc("event-sts-1.5MiB.json", json_pack("{s:s, s:o}", "type", "MODIFIED", "object", huge));
	json_t *mid = statefulset_of_size(700u << 10);
	write_doc("review-sts-700KiB-each.json", review(mid));
	json_decref(mid);
	json_t *data = json_object();
	for (int i = 0; i < 26000; i++) {
		char k[64], v[64];
		snprintf(k, sizeof(k), "key-%06d.properties", i);
		snprintf(v, sizeof(v), "value=%06d;other=setting-for-%06d", i, i);
		json_object_set_new(data, k, json_string(v));
	}
	write_doc("event-configmap-1.5MiB.json",
		  json_pack("{s:s, s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:o}}", "type", "MODIFIED", "object", "kind",
			    "ConfigMap", "apiVersion", "v1", "metadata", "name", "cfg", "namespace", "team-a", "uid", "u",
			    "resourceVersion", "1", "data", data));
	json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:[{s:s, s:o}]}, s:O, s:{s:s}}", "kind", "Pod",
				"apiVersion", "v1", "metadata", "name", "db-0", "namespace", "team-a", "uid", "u",
				"resourceVersion", "1", "managedFields", "manager", "kube-controller-manager",
				"fieldsV1", fields_of(pod_spec), "spec", pod_spec, "status", "phase", "Running");
	json_decref(pod_spec);
	write_doc("event-pod-big.json", json_pack("{s:s, s:o}", "type", "ADDED", "object", pod));
	write_doc("summary-110-pods.json", summary(110));
	write_doc("prometheus-1000-claims.json", prometheus(1000));
	json_t *containers = json_array();
	for (int c = 0; c < 4; c++)
		json_array_append_new(containers, container(c, 1050, 0));
	write_doc("annotation-template-250KiB.json", json_pack("{s:{s:o}}", "spec", "containers", containers));
	json_t *braces = json_array();
	for (int i = 0; i < 450000; i++)
		json_array_append_new(braces, json_object());
	write_doc("hostile-450k-braces.json", braces);
	return 0;
}
