/*
 * testbed-pvc-resizer: completes volume expansions on the test bed, the way
 * the CSI external-resizer (controller step: PV spec.capacity, PVC status)
 * and the kubelet (file system step) do on a real cluster. The test bed's
 * host-path provisioner has neither, so without this a grown PVC request
 * is accepted and then nothing happens. A test tool, not product code.
 *
 *   testbed-pvc-resizer [--kubeconfig PATH] [--class NAME]... [--log-level LEVEL]
 *                       [--local-volumes DIR --local-node NAME]...
 *
 * With --local-volumes it also provisions, grows and deletes the real nodes'
 * volumes (local_provisioner.h): one pair of flags per node, the first the
 * default node (local_nodes.h). For those, the PV's capacity grows only with
 * the real file system: at the finish in online mode, and in offline mode
 * once the pods that had the claim mounted are gone (a real kubelet would
 * otherwise finish the expansion itself as soon as the PV is bigger).
 *
 * It acts on Bound PVCs of the given StorageClasses (default "expandable")
 * whose spec.resources.requests.storage exceeds status.capacity.storage.
 * The mode comes from the ConfigMap kube-system/testbed-pvc-resizer (keys
 * "mode" and "delay"), overridden per PVC by the annotations
 * testbed.stateful-operator.io/resize-mode and .../resize-delay:
 *
 *   online   Resizing, then PV capacity, then PVC capacity (the default)
 *   slow     online after a delay (default 5 s)
 *   offline  Resizing, PV capacity, then NodeResizePending and the condition
 *            FileSystemResizePending until a pod other than the ones that
 *            mounted the claim then (or any pod, when none did) mounts it
 *            and is Running and Ready; then PVC capacity
 *   fail     Resizing, then ControllerResizeError and ControllerResizeInfeasible;
 *            PV and capacity unchanged. A later request (lowered, KEP-1790,
 *            or grown) is a new attempt and fails too while the mode is
 *            fail; a request at or below the capacity clears the failure
 *
 * "delay" (Go-like duration: 500ms, 3s, 1m30s) applies before the outcome
 * in every mode; 0 unless set, 5 s for slow. Each reconcile reads the PVC
 * and the ConfigMap from the API server, decides one step from what they
 * show (plan_step) and sends it with the PVC's resourceVersion as a
 * precondition, so a change in between is a 409 and a retry, never a
 * stale write. The only memory besides the cluster: when a slow step's
 * delay started and, in offline mode, which pods mounted the claim when
 * the file system step began; after a restart the delay starts again and
 * the pods mounting the claim at that time count as the old ones.
 *
 * It also plays the external-resizer's ModifyVolume (pvc_modify_plan.h):
 * a Bound claim of any class whose spec.volumeAttributesClassName differs
 * from status.currentVolumeAttributesClassName goes InProgress, then, after
 * the delay above, its PV and status take the class; a class whose
 * parameters hold testbed.stateful-operator.io/modify-fail: "true" ends
 * Infeasible instead, and a class that does not exist leaves it Pending.
 * A PV provisioned for a claim created with a class gets that class, as a
 * CSI provisioner gives it (without it the claim would never bind).
 *
 * Threads: informer threads only enqueue keys; the main thread reconciles;
 * a signal thread turns SIGTERM/SIGINT into a clean stop (exit 0).
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client.h"
#include "client/kube_config.h"
#include "client/quantity.h"
#include "claim_status.h"
#include "local_provisioner.h"
#include "pvc_modifier.h"
#include "pvc_modify_plan.h"
#include "runtime/informer.h"
#include "runtime/workqueue.h"
#include "util/clock.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "client/kube_object.h"

#define COMPONENT "resizer"
#define CONFIG_NAMESPACE "kube-system"
#define CONFIG_NAME "testbed-pvc-resizer"
#define ANN_MODE "testbed.stateful-operator.io/resize-mode"
#define ANN_DELAY "testbed.stateful-operator.io/resize-delay"
#define SLOW_DEFAULT_DELAY_MS 5000
#define MAX_CLASSES 16
#define MAX_STEPS_PER_RECONCILE 8

#define FS_PENDING_MESSAGE \
	"Waiting for user to (re-)start a pod to finish file system resize of volume on node."
#define FAIL_MESSAGE "testbed: simulated expansion failure (resize mode fail)"

enum mode { MODE_ONLINE, MODE_SLOW, MODE_OFFLINE, MODE_FAIL };
static const char *const mode_names[] = {"online", "slow", "offline", "fail"};

/* The PVC conditions the resize machinery owns; every other condition is kept. */
static const char *const resize_conditions[] = {"Resizing", "FileSystemResizePending",
						"ControllerResizeError", "NodeResizeError"};

struct resizer {
	struct kube_client *client;
	struct informer *pvcs, *pvs, *pods, *configs, *vacs;
	struct workqueue *queue;
	const char *classes[MAX_CLASSES];
	int nclasses;
	/* "ns/name" -> struct attempt; main thread only. */
	struct hashmap attempts;
	/* The real nodes' volumes; local.nodes.n 0 = not served (no --local-volumes). */
	struct local_provisioner local;
	/* volumeAttributesClass changes. */
	struct pvc_modifier modifier;
};

/* Queue keys: "ns/name" (a claim to resize) or one of these prefixes. */
#define KEY_PROVISION "provision:" /* + "ns/name": a claim waiting for a local volume */
#define KEY_RELEASE "release:"     /* + PV name: a released local volume to delete */
#define KEY_MODIFY "modify:"       /* + "ns/name": a claim whose volumeAttributesClass changes */
#define KEY_CLASS "class:"         /* + PV name: a provisioned PV lacking its claim's class */

/* What the resizer remembers of one PVC's expansion (see the top comment). */
struct attempt {
	char uid[64];
	struct quantity request; /* the request the delay clock runs for */
	uint64_t started_ns;     /* 0 = the clock has not started */
	char *old_pods;          /* ",uid,uid," mounting at NodeResizePending; NULL = not recorded */
};

/* ---------------------------------------------------------------------------
 * Reading a PVC.
 * ------------------------------------------------------------------------- */

/*
 * A PVC as the planner sees it. Strings are copies: the object is replaced
 * by the answer of each patch, and the log line comes after it.
 */
struct observed {
	char uid[64], rv[64], volume[256];
	char request_str[64], capacity_str[64];
	struct quantity request, capacity, allocated;
	bool has_allocated;
	const char *resize_status; /* status.allocatedResourceStatuses.storage, or NULL */
	bool resizing, fs_pending, controller_error, node_error; /* conditions with status True */
};

static const char *json_path_str(const json_t *obj, const char *const *keys)
{
	for (; *keys && obj; keys++)
		obj = json_object_get(obj, *keys);
	return json_string_value(obj);
}

/* The annotation key (borrowed) of obj, or NULL; keys hold dots, so no kube_obj_str. */
static const char *annotation(const json_t *obj, const char *key)
{
	const char *const path[] = {"metadata", "annotations", key, NULL};
	return json_path_str(obj, path);
}

static bool class_wanted(const struct resizer *r, const char *cls)
{
	for (int i = 0; cls && i < r->nclasses; i++)
		if (!strcmp(r->classes[i], cls))
			return true;
	return false;
}

static int parse_size(const json_t *pvc, const char *what, const char *s, struct quantity *q)
{
	char *err = NULL;
	if (quantity_parse(s, q, &err) == 0)
		return 0;
	log_warn(COMPONENT, "%s/%s: %s: %s", kube_obj_str(pvc, "metadata.namespace"),
		 kube_obj_str(pvc, "metadata.name"), what, err);
	free(err);
	return -1;
}

/* Copies the string at path of obj into buf; -1 when absent, empty or too long. */
static int copy_str(char *buf, size_t len, const json_t *obj, const char *path)
{
	const char *v = kube_obj_str(obj, path);
	if (!v || !*v || strlen(v) >= len)
		return -1;
	memcpy(buf, v, strlen(v) + 1);
	return 0;
}

/*
 * Fills *o from pvc (borrowed). Returns false
 * when the PVC is none of our business: not Bound, another class, or sizes
 * missing or unparsable.
 */
static bool observe(const struct resizer *r, const json_t *pvc, struct observed *o)
{
	memset(o, 0, sizeof(*o));
	const char *phase = kube_obj_str(pvc, "status.phase");
	if (!phase || strcmp(phase, "Bound") || !class_wanted(r, kube_obj_str(pvc, "spec.storageClassName")))
		return false;
	if (copy_str(o->uid, sizeof(o->uid), pvc, "metadata.uid") < 0 ||
	    copy_str(o->rv, sizeof(o->rv), pvc, "metadata.resourceVersion") < 0 ||
	    copy_str(o->volume, sizeof(o->volume), pvc, "spec.volumeName") < 0 ||
	    copy_str(o->request_str, sizeof(o->request_str), pvc, "spec.resources.requests.storage") < 0 ||
	    copy_str(o->capacity_str, sizeof(o->capacity_str), pvc, "status.capacity.storage") < 0)
		return false;
	if (parse_size(pvc, "spec.resources.requests.storage", o->request_str, &o->request) < 0 ||
	    parse_size(pvc, "status.capacity.storage", o->capacity_str, &o->capacity) < 0)
		return false;
	const char *alloc = kube_obj_str(pvc, "status.allocatedResources.storage");
	if (alloc) {
		if (parse_size(pvc, "status.allocatedResources.storage", alloc, &o->allocated) < 0)
			return false;
		o->has_allocated = true;
	}
	o->resize_status = kube_obj_str(pvc, "status.allocatedResourceStatuses.storage");
	o->resizing = kube_obj_condition(pvc, "Resizing", NULL);
	o->fs_pending = kube_obj_condition(pvc, "FileSystemResizePending", NULL);
	o->controller_error = kube_obj_condition(pvc, "ControllerResizeError", NULL);
	o->node_error = kube_obj_condition(pvc, "NodeResizeError", NULL);
	return true;
}

static bool leftovers(const struct observed *o)
{
	return o->resize_status || o->resizing || o->fs_pending || o->controller_error || o->node_error;
}

static bool status_is(const struct observed *o, const char *s)
{
	return o->resize_status && !strcmp(o->resize_status, s);
}

/* allocatedResources.storage equals the request: the current attempt is for this request. */
static bool allocated_is_request(const struct observed *o)
{
	return o->has_allocated && quantity_cmp(&o->allocated, &o->request) == 0;
}

/* Whether a cached PVC may need a step; filters the informer events. */
static bool needs_attention(const struct resizer *r, const json_t *pvc)
{
	struct observed o;
	if (!observe(r, pvc, &o))
		return false;
	return quantity_cmp(&o.request, &o.capacity) > 0 || leftovers(&o);
}

/* ---------------------------------------------------------------------------
 * The planner: the observed PVC in, one step out. No I/O.
 * ------------------------------------------------------------------------- */

enum step {
	STEP_NONE,          /* nothing to do */
	STEP_CLEAR,         /* request <= capacity with resize leftovers: clear them */
	STEP_START,         /* show Resizing / ControllerResizeInProgress for the request */
	STEP_WAIT_DELAY,    /* in progress; the delay has not passed */
	STEP_FAIL,          /* fail mode: ControllerResizeError, ControllerResizeInfeasible */
	STEP_NODE_PENDING,  /* offline: PV capacity, then NodeResizePending + FileSystemResizePending */
	STEP_WAIT_POD,      /* offline: waiting for a new pod to mount the claim */
	STEP_FINISH,        /* PV capacity, then PVC capacity; resize status cleared */
};

static const char *const step_names[] = {"none",	 "clear",    "start",	 "wait-delay",
					  "fail",	 "node-pending", "wait-pod", "finish"};

/*
 * delay_due: the delay of the attempt in progress has passed. new_pod_ready:
 * (offline, file system step pending) a pod that did not mount the claim
 * when the step began now mounts it and is Running and Ready.
 */
static enum step plan_step(const struct observed *o, enum mode mode, bool delay_due, bool new_pod_ready)
{
	if (quantity_cmp(&o->request, &o->capacity) <= 0)
		return leftovers(o) ? STEP_CLEAR : STEP_NONE;
	/* The controller step is done for this request; the file system step remains. */
	if (status_is(o, "NodeResizePending") && allocated_is_request(o)) {
		if (mode == MODE_OFFLINE)
			return new_pod_ready ? STEP_FINISH : STEP_WAIT_POD;
		return STEP_FINISH; /* every other mode expands on the node online */
	}
	if (mode == MODE_FAIL && status_is(o, "ControllerResizeInfeasible") && allocated_is_request(o) &&
	    o->controller_error)
		return STEP_NONE; /* failed already; a new request is a new attempt */
	if (!(status_is(o, "ControllerResizeInProgress") && allocated_is_request(o) && o->resizing))
		return STEP_START;
	if (!delay_due)
		return STEP_WAIT_DELAY;
	switch (mode) {
	case MODE_FAIL:
		return STEP_FAIL;
	case MODE_OFFLINE:
		return STEP_NODE_PENDING;
	case MODE_ONLINE:
	case MODE_SLOW:
		break;
	}
	return STEP_FINISH;
}

/* ---------------------------------------------------------------------------
 * Mode and delay.
 * ------------------------------------------------------------------------- */

/* "1m30s", "3s", "500ms", "2h", or bare seconds ("5"); -1 when unparsable. */
static long parse_duration_ms(const char *s)
{
	if (!s || !*s)
		return -1;
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || v < 0)
		return -1;
	if (!*end)
		return v * 1000;
	long total = 0;
	const char *p = s;
	while (*p) {
		v = strtol(p, &end, 10);
		if (end == p || v < 0 || v > 86400000)
			return -1;
		p = end;
		long unit;
		if (!strncmp(p, "ms", 2)) {
			unit = 1;
			p += 2;
		} else if (*p == 'h') {
			unit = 3600000;
			p++;
		} else if (*p == 'm') {
			unit = 60000;
			p++;
		} else if (*p == 's') {
			unit = 1000;
			p++;
		} else {
			return -1;
		}
		total += v * unit;
		if (total > 86400000L)
			return -1;
	}
	return total;
}

static int parse_mode(const char *s, enum mode *out)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(s, mode_names[i])) {
			*out = (enum mode)i;
			return 0;
		}
	return -1;
}

struct mode_cfg {
	enum mode mode;
	long delay_ms;
	const char *source; /* where the mode came from, for the log */
};

/*
 * Applies a mode / delay setting (each may be NULL) from source over *m;
 * bad values are logged and ignored. *delay_set tells whether a delay was given.
 */
static void apply_setting(struct mode_cfg *m, bool *delay_set, const char *mode, const char *delay,
			  const char *source)
{
	if (mode) {
		if (parse_mode(mode, &m->mode) == 0)
			m->source = source;
		else
			log_warn(COMPONENT, "%s: mode \"%s\" is not online, offline, fail or slow; ignored",
				 source, mode);
	}
	if (delay) {
		long ms = parse_duration_ms(delay);
		if (ms >= 0) {
			m->delay_ms = ms;
			*delay_set = true;
		} else {
			log_warn(COMPONENT, "%s: delay \"%s\" is not a duration like 3s or 500ms; ignored",
				 source, delay);
		}
	}
}

/*
 * The mode for pvc: defaults, then the ConfigMap (read now from the API
 * server, so a test's kubectl switch counts at once; absent = defaults),
 * then the PVC's annotations. Returns 0, or -1 when the ConfigMap could
 * not be read.
 */
static int resolve_mode(struct resizer *r, const json_t *pvc, struct mode_cfg *m)
{
	struct kube_error err;
	json_t *cm = NULL;
	bool delay_set = false;
	*m = (struct mode_cfg){.mode = MODE_ONLINE, .delay_ms = 0, .source = "default"};
	if (kube_get(r->client, &KUBE_CONFIGMAPS, CONFIG_NAMESPACE, CONFIG_NAME, &cm, &err) < 0) {
		if (err.code != 404) {
			log_warn(COMPONENT, "get configmap %s/%s: %s", CONFIG_NAMESPACE, CONFIG_NAME,
				 err.message);
			return -1;
		}
	} else {
		apply_setting(m, &delay_set, kube_obj_str(cm, "data.mode"), kube_obj_str(cm, "data.delay"),
			      "configmap " CONFIG_NAMESPACE "/" CONFIG_NAME);
	}
	json_decref(cm);
	apply_setting(m, &delay_set, annotation(pvc, ANN_MODE), annotation(pvc, ANN_DELAY),
		      "annotation");
	if (m->mode == MODE_SLOW && !delay_set)
		m->delay_ms = SLOW_DEFAULT_DELAY_MS;
	return 0;
}

/* ---------------------------------------------------------------------------
 * Attempts (main thread only).
 * ------------------------------------------------------------------------- */

static void attempt_free(void *p)
{
	struct attempt *a = p;
	if (a)
		free(a->old_pods);
	free(a);
}

/* The attempt of key for the PVC uid; a recreated PVC (other uid) starts afresh. Borrowed. */
static struct attempt *attempt_of(struct resizer *r, const char *key, const char *uid)
{
	struct attempt *a = hashmap_get(&r->attempts, key);
	if (a && strcmp(a->uid, uid)) {
		attempt_free(hashmap_remove(&r->attempts, key));
		a = NULL;
	}
	if (!a) {
		a = xcalloc(1, sizeof(*a));
		snprintf(a->uid, sizeof(a->uid), "%s", uid);
		hashmap_put(&r->attempts, key, a);
	}
	return a;
}

static void attempt_forget(struct resizer *r, const char *key)
{
	attempt_free(hashmap_remove(&r->attempts, key));
}

static void attempt_start_clock(struct attempt *a, const struct quantity *request)
{
	a->request = *request;
	a->started_ns = clock_mono_ns();
}

/* Milliseconds left of the delay for request; starts the clock if it runs for another request. */
static long attempt_delay_left(struct attempt *a, const struct quantity *request, long delay_ms)
{
	if (delay_ms <= 0)
		return 0;
	if (!a->started_ns || quantity_cmp(&a->request, request))
		attempt_start_clock(a, request);
	long elapsed = (long)((clock_mono_ns() - a->started_ns) / 1000000);
	return elapsed >= delay_ms ? 0 : delay_ms - elapsed;
}

/* ---------------------------------------------------------------------------
 * Pods mounting a claim (read from the API server when needed).
 * ------------------------------------------------------------------------- */

static bool pod_mounts(const json_t *pod, const char *claim)
{
	const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes");
	size_t i;
	const json_t *v;
	json_array_foreach(vols, i, v) {
		const char *c = kube_obj_str(v, "persistentVolumeClaim.claimName");
		if (c && !strcmp(c, claim))
			return true;
	}
	return false;
}

static bool pod_running_ready(const json_t *pod)
{
	const char *phase = kube_obj_str(pod, "status.phase");
	if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") || !phase ||
	    strcmp(phase, "Running"))
		return false;
	return kube_obj_condition(pod, "Ready", NULL);
}

/* The pods of ns that mount claim, listed now: a new array, or NULL on error. */
static json_t *pods_mounting(struct resizer *r, const char *ns, const char *claim)
{
	struct kube_error err;
	json_t *items = NULL;
	if (kube_list_all(r->client, &KUBE_PODS, ns, NULL, 0, &items, NULL, &err) < 0) {
		log_warn(COMPONENT, "list pods in %s: %s", ns, err.message);
		return NULL;
	}
	json_t *out = json_array();
	size_t i;
	json_t *pod;
	json_array_foreach(items, i, pod)
		if (pod_mounts(pod, claim))
			json_array_append(out, pod);
	json_decref(items);
	return out;
}

/* ",uid1,uid2," of pods (new string). */
static char *uid_set(const json_t *pods)
{
	char *set = xstrdup(",");
	size_t i;
	const json_t *pod;
	json_array_foreach(pods, i, pod) {
		const char *uid = kube_obj_str(pod, "metadata.uid");
		char *next = xasprintf("%s%s,", set, uid ? uid : "");
		free(set);
		set = next;
	}
	return set;
}

/* The set for a log line: "uid1,uid2", or "none". Borrowed from set; valid while it is. */
static const char *uid_set_show(const char *set, char *buf, size_t len)
{
	size_t n = strlen(set);
	if (n <= 2)
		return "none";
	snprintf(buf, len, "%.*s", (int)(n - 2), set + 1);
	return buf;
}

static bool uid_in_set(const char *set, const char *uid)
{
	char *needle = xasprintf(",%s,", uid);
	bool found = strstr(set, needle) != NULL;
	free(needle);
	return found;
}

/* ---------------------------------------------------------------------------
 * Acting: one API write per step, after the PVC was read.
 * ------------------------------------------------------------------------- */

/*
 * The PVC's conditions without the resize ones, plus a new condition of
 * type add (when not NULL) with message (may be NULL): a new array, or
 * json null when empty (a merge patch then removes the field).
 */
static json_t *conditions_with(const json_t *pvc, const char *add, const char *message)
{
	json_t *out = claim_conditions_without(pvc, resize_conditions,
					       sizeof(resize_conditions) / sizeof(resize_conditions[0]));
	if (add) {
		char now[32];
		claim_status_now(now, sizeof(now));
		json_t *c2 = json_pack("{s:s, s:s, s:n, s:s}", "type", add, "status", "True",
				       "lastProbeTime", "lastTransitionTime", now);
		if (message)
			json_object_set_new(c2, "message", json_string(message));
		json_array_append_new(out, c2);
	}
	return claim_conditions_or_null(out);
}

/* The claim's status patch (claim_status_patch), guarded by the resourceVersion we decided on. */
static int patch_pvc_status(struct resizer *r, json_t **pvc, const struct observed *o, json_t *status,
			    const char *what)
{
	return claim_status_patch(r->client, pvc, o->rv, status, what);
}

/* A size object {"storage": s}. */
static json_t *storage(const char *s)
{
	return json_pack("{s:s}", "storage", s);
}

/* Sets the bound PV's spec.capacity.storage to the request unless it is that big already. */
static int ensure_pv(struct resizer *r, const struct observed *o)
{
	json_t *pv = store_get(informer_store(r->pvs), o->volume);
	struct kube_error err;
	if (!pv && kube_get(r->client, &KUBE_PVS, NULL, o->volume, &pv, &err) < 0) {
		log_warn(COMPONENT, "get pv %s: %s", o->volume, err.message);
		return -1;
	}
	int rc = -1;
	const char *claim_uid = kube_obj_str(pv, "spec.claimRef.uid");
	const char *cap = kube_obj_str(pv, "spec.capacity.storage");
	struct quantity q;
	if (!claim_uid || strcmp(claim_uid, o->uid)) {
		log_warn(COMPONENT, "pv %s is not bound to claim uid %s; leaving it", o->volume, o->uid);
		goto out;
	}
	if (cap && quantity_parse(cap, &q, NULL) == 0 && quantity_cmp(&q, &o->request) >= 0) {
		rc = 0;
		goto out;
	}
	json_t *patch = json_pack("{s:{s:o}}", "spec", "capacity", storage(o->request_str));
	rc = kube_patch(r->client, &KUBE_PVS, NULL, o->volume, NULL, KUBE_PATCH_MERGE, patch, NULL, &err);
	json_decref(patch);
	if (rc < 0) {
		log_warn(COMPONENT, "pv %s: patch capacity: %s", o->volume, err.message);
		goto out;
	}
	log_info(COMPONENT, "pv %s: spec.capacity %s -> %s", o->volume, cap ? cap : "(none)",
		 o->request_str);
out:
	json_decref(pv);
	return rc;
}

/* Whether a pod that mounted the claim when the file system step began still does. */
static bool old_pod_left(const struct attempt *a, const json_t *pods)
{
	size_t k;
	const json_t *pod;
	json_array_foreach(pods, k, pod) {
		const char *uid = kube_obj_str(pod, "metadata.uid");
		if (uid && a->old_pods && uid_in_set(a->old_pods, uid))
			return true;
	}
	return false;
}

/* The claim's volume is a real one of the test bed (local_provisioner.h). */
static bool real_volume(struct resizer *r, const struct observed *o)
{
	if (!r->local.nodes.n)
		return false;
	json_t *pv = store_get(informer_store(r->pvs), o->volume);
	bool real = pv && local_provisioner_owns(pv);
	json_decref(pv);
	return real;
}

/* A real volume of the test bed (local_provisioner.h) grows its file system to the request. */
static int grow_backing(struct resizer *r, const struct observed *o)
{
	int64_t bytes;
	if (!r->local.nodes.n || quantity_to_int64(&o->request, &bytes) < 0)
		return 0;
	json_t *pv = store_get(informer_store(r->pvs), o->volume);
	int rc = pv ? local_provisioner_grow(&r->local, pv, bytes) : 0;
	json_decref(pv);
	return rc;
}

/* ---------------------------------------------------------------------------
 * Reconcile.
 * ------------------------------------------------------------------------- */

struct outcome {
	long requeue_after_ms; /* > 0: look again then */
};

/*
 * Brings the PVC key one or more steps on, re-reading it after every write
 * (the patch answer is the object as stored). Returns 0, or -1 to retry
 * with backoff.
 */
static int reconcile(struct resizer *r, const char *key, struct outcome *res)
{
	const char *slash = strchr(key, '/');
	if (!slash)
		return 0;
	char *ns = xstrndup(key, (size_t)(slash - key));
	const char *name = slash + 1;
	json_t *pvc = NULL;
	struct kube_error err;
	struct mode_cfg mode = {0};
	bool have_mode = false;
	int rc = 0;

	if (kube_get(r->client, &KUBE_PVCS, ns, name, &pvc, &err) < 0) {
		if (err.code == 404) {
			attempt_forget(r, key);
		} else {
			log_warn(COMPONENT, "%s: get: %s", key, err.message);
			rc = -1;
		}
		goto out;
	}
	for (int i = 0; i < MAX_STEPS_PER_RECONCILE; i++) {
		struct observed o;
		if (!observe(r, pvc, &o)) {
			attempt_forget(r, key);
			goto out;
		}
		if (quantity_cmp(&o.request, &o.capacity) > 0 && !have_mode) {
			if (resolve_mode(r, pvc, &mode) < 0) {
				rc = -1;
				goto out;
			}
			have_mode = true;
		}
		struct attempt *a = attempt_of(r, key, o.uid);
		long delay_left = have_mode ? attempt_delay_left(a, &o.request, mode.delay_ms) : 0;
		bool new_pod_ready = false;
		json_t *pods = NULL;
		bool fs_step = have_mode && mode.mode == MODE_OFFLINE &&
			       status_is(&o, "NodeResizePending") && allocated_is_request(&o);
		if (fs_step) {
			if (!(pods = pods_mounting(r, ns, name))) {
				rc = -1;
				goto out;
			}
			if (!a->old_pods) {
				a->old_pods = uid_set(pods);
				char buf[512];
				log_info(COMPONENT, "%s: FileSystemResizePending found without a record; "
						    "pods mounting it now (%s) count as not restarted",
					 key, uid_set_show(a->old_pods, buf, sizeof(buf)));
			}
			size_t k;
			json_t *pod;
			json_array_foreach(pods, k, pod) {
				const char *uid = kube_obj_str(pod, "metadata.uid");
				if (uid && !uid_in_set(a->old_pods, uid) && pod_running_ready(pod))
					new_pod_ready = true;
			}
		}
		enum step step = plan_step(&o, have_mode ? mode.mode : MODE_ONLINE, delay_left == 0,
					   new_pod_ready);
		log_debug(COMPONENT, "%s: request %s capacity %s status %s: %s", key, o.request_str,
			  o.capacity_str, o.resize_status ? o.resize_status : "-", step_names[step]);
		json_t *status = NULL;
		switch (step) {
		case STEP_NONE:
			if (quantity_cmp(&o.request, &o.capacity) <= 0)
				attempt_forget(r, key);
			json_decref(pods);
			goto out;
		case STEP_WAIT_POD:
			/*
			 * Offline: a real volume grows once the pods that had it
			 * mounted are gone (its restart), then its PV shows the
			 * new capacity; the real kubelet finishes it at the next
			 * mount, or the step below does once that pod is Ready.
			 */
			if (real_volume(r, &o) && !old_pod_left(a, pods) &&
			    (grow_backing(r, &o) < 0 || ensure_pv(r, &o) < 0))
				rc = -1;
			json_decref(pods);
			goto out;
		case STEP_WAIT_DELAY:
			res->requeue_after_ms = delay_left;
			json_decref(pods);
			goto out;
		case STEP_CLEAR:
			status = json_pack("{s:o, s:{s:n}, s:o}", "allocatedResources",
					   storage(o.request_str), "allocatedResourceStatuses", "storage",
					   "conditions", conditions_with(pvc, NULL, NULL));
			rc = patch_pvc_status(r, &pvc, &o, status, "clear");
			if (rc == 0) {
				log_info(COMPONENT, "%s: request %s <= capacity %s: resize status cleared",
					 key, o.request_str, o.capacity_str);
				attempt_forget(r, key);
			}
			break;
		case STEP_START:
			status = json_pack("{s:o, s:{s:s}, s:o}", "allocatedResources",
					   storage(o.request_str), "allocatedResourceStatuses", "storage",
					   "ControllerResizeInProgress", "conditions",
					   conditions_with(pvc, "Resizing", NULL));
			rc = patch_pvc_status(r, &pvc, &o, status, "Resizing");
			if (rc == 0) {
				attempt_start_clock(a, &o.request);
				log_info(COMPONENT, "%s: Resizing %s -> %s (mode %s from %s, delay %ld ms)",
					 key, o.capacity_str, o.request_str, mode_names[mode.mode],
					 mode.source, mode.delay_ms);
			}
			break;
		case STEP_FAIL:
			status = json_pack("{s:{s:s}, s:o}", "allocatedResourceStatuses", "storage",
					   "ControllerResizeInfeasible", "conditions",
					   conditions_with(pvc, "ControllerResizeError", FAIL_MESSAGE));
			rc = patch_pvc_status(r, &pvc, &o, status, "ControllerResizeError");
			if (rc == 0)
				log_info(COMPONENT, "%s: ControllerResizeError for %s (mode fail); capacity "
						    "stays %s",
					 key, o.request_str, o.capacity_str);
			break;
		case STEP_NODE_PENDING:
			/*
			 * A real kubelet finishes an expansion as soon as the PV is
			 * bigger than the claim (for local PVs, online, on a file
			 * system that did not grow): a real volume's PV grows only
			 * with its file system, once its pods have gone (wait-pod).
			 */
			if (!real_volume(r, &o) && (rc = ensure_pv(r, &o)) < 0)
				break;
			/* The pods that mount it now must be restarted to finish. */
			if (!a->old_pods) {
				json_t *now_pods = pods_mounting(r, ns, name);
				if (!now_pods) {
					rc = -1;
					break;
				}
				a->old_pods = uid_set(now_pods);
				json_decref(now_pods);
			}
			status = json_pack("{s:o, s:{s:s}, s:o}", "allocatedResources",
					   storage(o.request_str), "allocatedResourceStatuses", "storage",
					   "NodeResizePending", "conditions",
					   conditions_with(pvc, "FileSystemResizePending", FS_PENDING_MESSAGE));
			rc = patch_pvc_status(r, &pvc, &o, status, "FileSystemResizePending");
			if (rc == 0) {
				char buf[512];
				log_info(COMPONENT, "%s: FileSystemResizePending for %s (mode offline); "
						    "waiting for a Ready pod other than %s to mount it",
					 key, o.request_str, uid_set_show(a->old_pods, buf, sizeof(buf)));
			}
			break;
		case STEP_FINISH:
			if ((rc = grow_backing(r, &o)) < 0 || (rc = ensure_pv(r, &o)) < 0)
				break;
			status = json_pack("{s:o, s:o, s:{s:n}, s:o}", "capacity", storage(o.request_str),
					   "allocatedResources", storage(o.request_str),
					   "allocatedResourceStatuses", "storage", "conditions",
					   conditions_with(pvc, NULL, NULL));
			rc = patch_pvc_status(r, &pvc, &o, status, "capacity");
			if (rc == 0) {
				log_info(COMPONENT, "%s: capacity %s -> %s%s", key, o.capacity_str,
					 o.request_str,
					 fs_step ? " (a new pod mounted it: file system resized)" : "");
				attempt_forget(r, key);
			}
			break;
		}
		json_decref(pods);
		if (rc < 0)
			goto out;
	}
out:
	json_decref(pvc);
	free(ns);
	return rc;
}

/* ---------------------------------------------------------------------------
 * Informer handlers: enqueue the PVC keys that may need a step.
 * ------------------------------------------------------------------------- */

static void enqueue_if_needed(struct resizer *r, const char *ns, const char *claim)
{
	if (!ns || !claim)
		return;
	char *key = xasprintf("%s/%s", ns, claim);
	json_t *pvc = store_get(informer_store(r->pvcs), key);
	if (pvc && needs_attention(r, pvc))
		workqueue_add(r->queue, key);
	json_decref(pvc);
	free(key);
}

static void enqueue_prefixed(struct resizer *r, const char *prefix, const char *key)
{
	char *k = xasprintf("%s%s", prefix, key);
	workqueue_add(r->queue, k);
	free(k);
}

/* A Bound claim whose volumeAttributesClass may need a step. */
static bool modify_wanted(const json_t *pvc)
{
	const char *phase = kube_obj_str(pvc, "status.phase");
	return phase && !strcmp(phase, "Bound") && modify_needed(pvc);
}

/* pv (borrowed) needs its claim's class (cls, when not NULL: only for that class). */
static void enqueue_if_class_missing(struct resizer *r, const json_t *pv, const char *cls)
{
	const char *ns = kube_obj_str(pv, "spec.claimRef.namespace");
	const char *claim = kube_obj_str(pv, "spec.claimRef.name");
	if (!ns || !claim)
		return;
	char *key = xasprintf("%s/%s", ns, claim);
	json_t *pvc = store_get(informer_store(r->pvcs), key);
	const char *wanted = pvc ? modify_provisioned_class(pv, pvc) : NULL;
	if (wanted && (!cls || !strcmp(cls, wanted)))
		enqueue_prefixed(r, KEY_CLASS, kube_obj_str(pv, "metadata.name"));
	json_decref(pvc);
	free(key);
}

/* Calls enqueue_if_class_missing for every cached PV pre-bound to a claim (any claim when uid is NULL). */
static void enqueue_pvs_missing_class(struct resizer *r, const char *uid, const char *cls)
{
	json_t *all = store_list(informer_store(r->pvs));
	size_t i;
	json_t *pv;
	json_array_foreach(all, i, pv) {
		const char *ref = kube_obj_str(pv, "spec.claimRef.uid");
		if (ref && (!uid || !strcmp(ref, uid)))
			enqueue_if_class_missing(r, pv, cls);
	}
	json_decref(all);
}

static void pvc_changed(void *ctx, const json_t *obj)
{
	struct resizer *r = ctx;
	if (r->local.nodes.n && local_claim_needs_volume(obj)) {
		char *key = kube_obj_key(obj);
		enqueue_prefixed(r, KEY_PROVISION, key);
		free(key);
	}
	if (modify_wanted(obj)) {
		char *key = kube_obj_key(obj);
		enqueue_prefixed(r, KEY_MODIFY, key);
		free(key);
	}
	/* A claim asking for a class before it is bound: its PV may have come first. */
	const char *phase = kube_obj_str(obj, "status.phase");
	const char *uid = kube_obj_str(obj, "metadata.uid");
	if (uid && (!phase || !strcmp(phase, "Pending")) && kube_obj_str(obj, "spec.volumeAttributesClassName"))
		enqueue_pvs_missing_class(r, uid, NULL);
	if (needs_attention(r, obj)) {
		char *key = kube_obj_key(obj);
		workqueue_add(r->queue, key);
		free(key);
	}
}

static void pvc_updated(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	pvc_changed(ctx, obj);
}

/* A deleted PVC: its attempt and modify clock are forgotten by the reconciles that find it gone. */
static void pvc_deleted(void *ctx, const json_t *obj)
{
	struct resizer *r = ctx;
	char *key = kube_obj_key(obj);
	workqueue_add(r->queue, key);
	enqueue_prefixed(r, KEY_MODIFY, key);
	free(key);
}

static void pod_changed(void *ctx, const json_t *pod)
{
	struct resizer *r = ctx;
	const char *ns = kube_obj_str(pod, "metadata.namespace");
	const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes");
	size_t i;
	const json_t *v;
	json_array_foreach(vols, i, v)
		enqueue_if_needed(r, ns, kube_obj_str(v, "persistentVolumeClaim.claimName"));
}

static void pod_updated(void *ctx, const json_t *old, const json_t *pod)
{
	(void)old;
	pod_changed(ctx, pod);
}

static void pv_changed(void *ctx, const json_t *pv)
{
	struct resizer *r = ctx;
	if (r->local.nodes.n && local_volume_releasable(pv))
		enqueue_prefixed(r, KEY_RELEASE, kube_obj_str(pv, "metadata.name"));
	enqueue_if_needed(ctx, kube_obj_str(pv, "spec.claimRef.namespace"),
			  kube_obj_str(pv, "spec.claimRef.name"));
	enqueue_if_class_missing(r, pv, NULL);
}

static void pv_updated(void *ctx, const json_t *old, const json_t *pv)
{
	(void)old;
	pv_changed(ctx, pv);
}

/* The mode may have changed: every PVC that may need a step is looked at again. */
static void config_changed(void *ctx, const json_t *cm)
{
	struct resizer *r = ctx;
	const char *name = kube_obj_str(cm, "metadata.name");
	if (!name || strcmp(name, CONFIG_NAME))
		return;
	json_t *all = store_list(informer_store(r->pvcs));
	size_t i;
	json_t *pvc;
	json_array_foreach(all, i, pvc)
		pvc_changed(r, pvc);
	json_decref(all);
}

static void config_updated(void *ctx, const json_t *old, const json_t *cm)
{
	(void)old;
	config_changed(ctx, cm);
}

/* A class appeared or changed: the claims and PVs waiting for it are looked at again. */
static void vac_changed(void *ctx, const json_t *vac)
{
	struct resizer *r = ctx;
	const char *name = kube_obj_str(vac, "metadata.name");
	json_t *all = store_list(informer_store(r->pvcs));
	size_t i;
	json_t *pvc;
	json_array_foreach(all, i, pvc) {
		const char *target = modify_target_name(pvc);
		if (name && target && !strcmp(target, name) && modify_wanted(pvc)) {
			char *key = kube_obj_key(pvc);
			enqueue_prefixed(r, KEY_MODIFY, key);
			free(key);
		}
	}
	json_decref(all);
	if (name)
		enqueue_pvs_missing_class(r, NULL, name);
}

static void vac_updated(void *ctx, const json_t *old, const json_t *vac)
{
	(void)old;
	vac_changed(ctx, vac);
}

/* pvc_modifier's delay: the resize mode's (ConfigMap, then the claim's annotations). */
static long modify_delay_ms(void *ctx, const json_t *pvc)
{
	struct mode_cfg mode;
	return resolve_mode(ctx, pvc, &mode) < 0 ? -1 : mode.delay_ms;
}

/* ---------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------- */

static void *wait_signals(void *arg)
{
	struct resizer *r = arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	int sig;
	while (sigwait(&set, &sig) == 0) {
		if (sig == SIGUSR1)
			return NULL; /* main is done */
		log_info(COMPONENT, "signal %d: stopping", sig);
		workqueue_shutdown(r->queue);
	}
	return NULL;
}

static const char usage[] =
	"usage: testbed-pvc-resizer [--kubeconfig PATH] [--class NAME]... [--log-level LEVEL]\n"
	"Completes PVC expansions on the test bed like a CSI external-resizer.\n"
	"  --kubeconfig PATH   default $KUBECONFIG, then ~/.kube/config\n"
	"  --class NAME        StorageClass to serve; repeatable (default: expandable)\n"
	"  --local-volumes DIR provision a real node's volumes (provisioner\n"
	"                      " LOCAL_PROVISIONER_NAME "): backing files and mounts in DIR\n"
	"  --local-node NAME   the node those volumes are on; one pair per node (the\n"
	"                      first: claims that name no node), repeatable\n"
	"  --log-level LEVEL   error, warn, info (default), debug\n"
	"Mode: ConfigMap kube-system/" CONFIG_NAME " keys mode (online|offline|fail|slow) and\n"
	"delay (e.g. 3s); per PVC the annotations " ANN_MODE " and " ANN_DELAY ".\n"
	"volumeAttributesClassName changes complete after that delay; a VolumeAttributesClass\n"
	"with parameter " MODIFY_FAIL_PARAMETER ": \"true\" makes them Infeasible.\n";

static struct informer *watch(struct resizer *r, const struct kube_resource *res, const char *ns,
			      const struct informer_handlers *h)
{
	struct informer_options io = {.resource = res, .namespace = ns};
	struct informer *inf = informer_new(r->client, &io);
	informer_add_handlers(inf, h);
	return inf;
}

int main(int argc, char **argv)
{
	enum { OPT_KUBECONFIG = 256, OPT_CLASS, OPT_LOG_LEVEL, OPT_LOCAL_VOLUMES, OPT_LOCAL_NODE, OPT_HELP };
	static const struct option long_options[] = {
		{"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
		{"class", required_argument, NULL, OPT_CLASS},
		{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
		{"local-volumes", required_argument, NULL, OPT_LOCAL_VOLUMES},
		{"local-node", required_argument, NULL, OPT_LOCAL_NODE},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	struct resizer r = {0};
	struct kube_config cfg = {0};
	const char *kubeconfig = NULL;
	enum log_level level = LOG_INFO;
	char *err = NULL;
	int status = 1;
	int c;
	bool sig_started = false;
	struct event_recorder *events = NULL;
	pthread_t sig_thread;
	const char *local_dirs[LOCAL_NODES_MAX], *local_names[LOCAL_NODES_MAX];
	size_t ndirs = 0, nnames = 0;

	sigset_t signals;
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &signals, NULL); /* before any thread: they inherit it */

	hashmap_init(&r.attempts);
	pvc_modifier_init(&r.modifier);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_KUBECONFIG:
			kubeconfig = optarg;
			break;
		case OPT_CLASS:
			if (r.nclasses == MAX_CLASSES) {
				fprintf(stderr, "testbed-pvc-resizer: at most %d --class flags\n", MAX_CLASSES);
				status = 2;
				goto out;
			}
			r.classes[r.nclasses++] = optarg;
			break;
		case OPT_LOG_LEVEL:
			if (log_level_parse(optarg, &level) < 0) {
				fprintf(stderr, "testbed-pvc-resizer: --log-level: \"%s\" is not error, "
						"warn, info or debug\n", optarg);
				status = 2;
				goto out;
			}
			break;
		case OPT_LOCAL_VOLUMES:
		case OPT_LOCAL_NODE:
			if ((c == OPT_LOCAL_NODE ? nnames : ndirs) == LOCAL_NODES_MAX) {
				fprintf(stderr, "testbed-pvc-resizer: at most %d real nodes\n", LOCAL_NODES_MAX);
				status = 2;
				goto out;
			}
			if (c == OPT_LOCAL_NODE)
				local_names[nnames++] = optarg;
			else
				local_dirs[ndirs++] = optarg;
			break;
		case OPT_HELP:
			fputs(usage, stdout);
			status = 0;
			goto out;
		default:
			fprintf(stderr, "testbed-pvc-resizer: bad flag %s\n%s", argv[optind - 1], usage);
			status = 2;
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "testbed-pvc-resizer: unexpected argument \"%s\"\n%s", argv[optind], usage);
		status = 2;
		goto out;
	}
	if (!r.nclasses)
		r.classes[r.nclasses++] = "expandable";
	if (ndirs != nnames) {
		fprintf(stderr, "testbed-pvc-resizer: --local-volumes and --local-node go in pairs "
				"(%zu and %zu given)\n", ndirs, nnames);
		status = 2;
		goto out;
	}
	for (size_t k = 0; k < ndirs; k++) /* the n-th directory with the n-th name */
		if (local_nodes_add(&r.local.nodes, local_names[k], local_dirs[k]) < 0)
			abort(); /* at most LOCAL_NODES_MAX, counted above */
	log_setup(level, LOG_FORMAT_TEXT);

	if (kubeconfig_load(kubeconfig, NULL, &cfg, &err) < 0) {
		log_error(COMPONENT, "%s", err);
		goto out;
	}
	struct kube_client_options co = {.user_agent = "testbed-pvc-resizer"};
	if (!(r.client = kube_client_new(&cfg, &co, &err))) {
		log_error(COMPONENT, "%s", err);
		goto out;
	}
	r.queue = workqueue_new(NULL);
	r.local.client = r.client;
	if (pthread_create(&sig_thread, NULL, wait_signals, &r)) {
		log_error(COMPONENT, "cannot start the signal thread");
		goto out;
	}
	sig_started = true;

	const struct informer_handlers pvc_h = {pvc_changed, pvc_updated, pvc_deleted, &r};
	const struct informer_handlers pv_h = {pv_changed, pv_updated, pv_changed, &r};
	const struct informer_handlers pod_h = {pod_changed, pod_updated, pod_changed, &r};
	const struct informer_handlers cm_h = {config_changed, config_updated, config_changed, &r};
	const struct informer_handlers vac_h = {vac_changed, vac_updated, vac_changed, &r};
	r.pvcs = watch(&r, &KUBE_PVCS, NULL, &pvc_h);
	r.pvs = watch(&r, &KUBE_PVS, NULL, &pv_h);
	r.pods = watch(&r, &KUBE_PODS, NULL, &pod_h);
	r.configs = watch(&r, &KUBE_CONFIGMAPS, CONFIG_NAMESPACE, &cm_h);
	r.vacs = watch(&r, &KUBE_VOLUMEATTRIBUTESCLASSES, NULL, &vac_h);
	r.modifier.client = r.client;
	r.modifier.pvs = informer_store(r.pvs);
	r.modifier.vacs = informer_store(r.vacs);
	r.modifier.delay_ms = modify_delay_ms;
	r.modifier.ctx = &r;
	r.modifier.events = events = event_recorder_new(r.client, "external-resizer", "testbed-pvc-resizer");
	struct informer *const infs[] = {r.pvcs, r.pvs, r.pods, r.configs, r.vacs};
	const size_t ninfs = sizeof(infs) / sizeof(infs[0]);
	for (size_t i = 0; i < ninfs; i++)
		if (informer_start(infs[i]) < 0) {
			log_error(COMPONENT, "cannot start the %s informer", informer_resource(infs[i])->plural);
			goto stop;
		}
	for (size_t i = 0; i < ninfs; i++)
		while (!informer_wait_synced(infs[i], 1000))
			if (workqueue_is_shutting_down(r.queue)) {
				status = 0; /* stopped by a signal before the caches synced */
				goto stop;
			}
	{
		char classes[256] = "";
		for (int i = 0; i < r.nclasses; i++)
			snprintf(classes + strlen(classes), sizeof(classes) - strlen(classes), "%s%s",
				 i ? ", " : "", r.classes[i]);
		log_info(COMPONENT, "caches synced; completing expansions of StorageClass %s on %s", classes,
			 kube_client_server(r.client));
	}

	char *key;
	while ((key = workqueue_get(r.queue))) {
		struct outcome res = {0};
		int rc;
		if (!strncmp(key, KEY_PROVISION, strlen(KEY_PROVISION))) {
			const char *claim = key + strlen(KEY_PROVISION), *slash = strchr(claim, '/');
			char *ns = xstrndup(claim, slash ? (size_t)(slash - claim) : 0);
			rc = local_provision(&r.local, ns, slash ? slash + 1 : "", &res.requeue_after_ms);
			free(ns);
		} else if (!strncmp(key, KEY_RELEASE, strlen(KEY_RELEASE))) {
			rc = local_release(&r.local, key + strlen(KEY_RELEASE), &res.requeue_after_ms);
		} else if (!strncmp(key, KEY_MODIFY, strlen(KEY_MODIFY))) {
			const char *claim = key + strlen(KEY_MODIFY), *slash = strchr(claim, '/');
			char *ns = xstrndup(claim, slash ? (size_t)(slash - claim) : 0);
			rc = slash ? pvc_modifier_reconcile(&r.modifier, ns, slash + 1, &res.requeue_after_ms) : 0;
			free(ns);
		} else if (!strncmp(key, KEY_CLASS, strlen(KEY_CLASS))) {
			rc = pvc_modifier_provisioned(&r.modifier, key + strlen(KEY_CLASS));
		} else {
			rc = reconcile(&r, key, &res);
		}
		if (rc < 0) {
			workqueue_add_rate_limited(r.queue, key);
		} else {
			workqueue_forget(r.queue, key);
			if (res.requeue_after_ms > 0)
				workqueue_add_after(r.queue, key, res.requeue_after_ms);
		}
		workqueue_done(r.queue, key);
		free(key);
	}
	status = 0;
stop:
	for (size_t i = 0; i < ninfs; i++)
		informer_request_stop(infs[i]);
	for (size_t i = 0; i < ninfs; i++)
		informer_stop(infs[i]);
	log_info(COMPONENT, "stopped");
out:
	if (sig_started) {
		pthread_kill(sig_thread, SIGUSR1);
		pthread_join(sig_thread, NULL);
	}
	informer_free(r.pvcs);
	informer_free(r.pvs);
	informer_free(r.pods);
	informer_free(r.configs);
	informer_free(r.vacs);
	workqueue_free(r.queue);
	kube_client_free(r.client);
	kube_config_release(&cfg);
	hashmap_release(&r.attempts, attempt_free);
	pvc_modifier_release(&r.modifier);
	event_recorder_free(events);
	free(err);
	return status;
}
