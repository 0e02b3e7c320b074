#include "controllers/resize/resize_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "controllers/resize/copy_script.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

json_t *copy_new_claim(const json_t *st, const char *ns, const char *sts_name, const json_t *vol)
{
	const char *tmpl = kube_obj_str(vol, "template");
	const char *size = json_string_value(json_object_get(json_object_get(st, "targets"), tmpl));
	const char *cls = json_string_value(json_object_get(json_object_get(st, "classes"), tmpl));
	char *name = resize_new_claim_name(kube_obj_str(vol, "claim"));
	json_t *pvc = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:O, s:s, s:{s:{s:s}}, s:s*}}",
				"apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata", "name", name,
				"namespace", ns, "labels", LABEL_COPY_OF, sts_name, "annotations",
				ANNOTATION_RESIZE_STARTED, str_or(kube_obj_str(st, "started"), ""), "spec",
				"accessModes", json_object_get(vol, "accessModes"), "storageClassName",
				str_or(cls, ""), "resources", "requests", "storage", str_or(size, "0"), "volumeMode",
				kube_obj_str(vol, "volumeMode"));
	free(name);
	return pvc;
}

json_t *copy_rebound_claim(const char *ns, const json_t *vol, const json_t *pv, const char *size)
{
	const json_t *vol_labels = json_object_get(vol, "labels");
	json_t *labels = json_is_object(vol_labels) ? json_deep_copy(vol_labels) : json_object();
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:O, s:s, s:s, s:{s:{s:s}}, s:s*}}", "apiVersion", "v1",
			 "kind", "PersistentVolumeClaim", "metadata", "name", kube_obj_str(vol, "claim"), "namespace",
			 ns, "labels", labels, "spec", "accessModes", json_object_get(vol, "accessModes"),
			 "storageClassName", str_or(kube_obj_str(pv, "spec.storageClassName"), ""), "volumeName",
			 kube_obj_str(pv, "metadata.name"), "resources", "requests", "storage", size, "volumeMode",
			 kube_obj_str(vol, "volumeMode"));
}

static int64_t size_bytes(const char *text)
{
	struct quantity q;
	int64_t v = 0;
	if (!text || quantity_parse(text, &q, NULL) < 0 || quantity_to_int64(&q, &v) < 0)
		return 0;
	return v;
}

/* Node affinity: the source PV's where the volume is node-bound; the running pod's node for a precopy. */
static json_t *job_affinity(const struct resize_inputs *in, const json_t *vols, const json_t *pod, bool precopy)
{
	if (precopy && kube_obj_str(pod, "spec.nodeName"))
		return json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}", "nodeAffinity",
				 "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
				 "matchFields", "key", "metadata.name", "operator", "In", "values",
				 kube_obj_str(pod, "spec.nodeName"));
	size_t i;
	json_t *vol;
	json_array_foreach(vols, i, vol) {
		const json_t *pv = kube_list_find(in->pvs, NULL, kube_obj_str(vol, "oldPV"));
		const json_t *req = json_object_get(json_object_get(json_object_get(pv, "spec"), "nodeAffinity"),
						    "required");
		if (json_is_object(req))
			return json_pack("{s:{s:O}}", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
					 req);
	}
	return NULL;
}

json_t *copy_job(const struct resize_inputs *in, const json_t *st, const char *ns, const char *sts_name,
			long long ord, const char *pass, const json_t *vols)
{
	char *name = resize_job_name(sts_name, ord, streq(pass, "precopy") ? "precopy" : "copy");
	json_t *mounts = json_array();
	json_t *devices = json_array();
	json_t *volumes = json_array();
	char *script = copy_script_text();
	json_t *args = json_pack("[s, s, s, s, s]", "sh", "-c", script, "stateful-operator-copy", pass);
	free(script);
	/*
	 * The script takes one target size for all pairs: given when the
	 * targets agree, else 0 and each target's own free space decides.
	 */
	int64_t target = -1;
	size_t i;
	json_t *vol;
	json_array_foreach(vols, i, vol) {
		const char *tmpl = kube_obj_str(vol, "template");
		int64_t b = size_bytes(json_string_value(json_object_get(json_object_get(st, "targets"), tmpl)));
		target = target < 0 || target == b ? b : 0;
	}
	json_array_append_new(args, json_sprintf("%lld", (long long)(target < 0 ? 0 : target)));
	json_array_foreach(vols, i, vol) {
		const char *tmpl = kube_obj_str(vol, "template");
		char *src = xasprintf("/stateful-operator/source/%s", tmpl);
		char *dst = xasprintf("/stateful-operator/target/%s", tmpl);
		char *src_vol = xasprintf("source-%zu", i);
		char *dst_vol = xasprintf("target-%zu", i);
		char *temp = resize_new_claim_name(kube_obj_str(vol, "claim"));
		json_array_append_new(args, json_string(src));
		json_array_append_new(args, json_string(dst));
		if (streq(kube_obj_str(vol, "volumeMode"), "Block")) {
			/* Raw devices, at the same paths: the script copies a device pair's bytes. */
			json_array_append_new(devices, json_pack("{s:s, s:s}", "name", src_vol, "devicePath", src));
			json_array_append_new(devices, json_pack("{s:s, s:s}", "name", dst_vol, "devicePath", dst));
		} else {
			json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "name", src_vol, "mountPath", src,
								"readOnly", 1));
			json_array_append_new(mounts, json_pack("{s:s, s:s}", "name", dst_vol, "mountPath", dst));
		}
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s, s:b}}", "name", src_vol,
							 "persistentVolumeClaim", "claimName", kube_obj_str(vol, "claim"),
							 "readOnly", 1));
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name", dst_vol, "persistentVolumeClaim",
							 "claimName", temp));
		free(temp);
		free(dst_vol);
		free(src_vol);
		free(dst);
		free(src);
	}
	/* The script keeps a few small files in $TMPDIR: writable even on a read-only root. */
	json_array_append_new(mounts, json_pack("{s:s, s:s}", "name", "tmp", "mountPath", "/tmp"));
	json_array_append_new(volumes, json_pack("{s:s, s:{}}", "name", "tmp", "emptyDir"));

	json_t *resources = json_object_get(st, "resources");
	/*
	 * Root, whatever the image's USER: the copy must read every file and
	 * keep its owner, mode, ACLs and xattrs (the default image, the
	 * operator's own, runs as 65532).
	 */
	json_t *container = json_pack("{s:s, s:s, s:o, s:o, s:O*, s:s, s:O*, s:{s:i, s:i}}", "name", "copy", "image",
				      str_or(kube_obj_str(st, "image"), ""), "command", args, "volumeMounts", mounts,
				      "volumeDevices", json_array_size(devices) ? devices : NULL,
				      "terminationMessagePolicy", "FallbackToLogsOnError", "resources",
				      json_is_object(resources) ? resources : NULL, "securityContext", "runAsUser", 0,
				      "runAsGroup", 0);
	json_decref(devices);
	json_t *labels = json_pack("{s:s, s:o}", LABEL_COPY_OF, sts_name, LABEL_RESIZE_ORDINAL,
				   json_sprintf("%lld", ord));
	const json_t *asked = json_object_get(st, "podAnnotations");
	json_t *pod_annotations = json_is_object(asked) ? json_deep_copy(asked) : json_object();
	char *pod_name = resize_pod_name(sts_name, ord);
	json_t *affinity = job_affinity(in, vols, kube_list_find(in->pods, ns, pod_name), streq(pass, "precopy"));
	free(pod_name);
	/* The workload's tolerations, saved when the resize started (resize_copy_plan.c). */
	json_t *tolerations = json_object_get(st, "tolerations");
	json_t *pod_spec = json_pack("{s:s, s:[o], s:o, s:o*, s:O*}", "restartPolicy", "Never", "containers",
				     container, "volumes", volumes, "affinity", affinity, "tolerations",
				     json_is_array(tolerations) ? tolerations : NULL);
	json_t *job = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:{s:s}}, s:{s:i, s:I, s:{s:{s:O, s:o}, s:o}}}",
				"apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name, "namespace", ns,
				"labels", labels, "annotations", ANNOTATION_RESIZE_STARTED,
				str_or(kube_obj_str(st, "started"), ""), "spec", "backoffLimit", JOB_BACKOFF_LIMIT,
				"activeDeadlineSeconds", (json_int_t)kube_obj_int(st, "timeoutSeconds", NULL, 0),
				"template", "metadata", "labels", labels, "annotations", pod_annotations, "spec",
				pod_spec);
	json_decref(labels);
	free(name);
	return job;
}
