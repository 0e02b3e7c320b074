#include "controllers/scaledown/scaledown_request.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/label_selector.h"
#include "util/duration.h"
#include "util/yaml_json.h"

/* Echoed annotation values are cut to this many bytes: an Event message is short. */
#define ECHO_MAX 64

#define TEMPLATE_EXAMPLE "{\"spec\": {\"containers\": [{\"name\": \"cleanup\", \"image\": \"my-cleanup\"}]}}"

void scaledown_request_release(struct scaledown_request *req)
{
	json_decref(req->pod_template);
	memset(req, 0, sizeof(*req));
}

/* obj's field key, borrowed; NULL when absent or null, which the API server reads alike. */
static json_t *field(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_null(v) ? NULL : v;
}

/* "a string", "an array", ...: what a value (not NULL) is, for messages. Static. */
static const char *type_phrase(const json_t *v)
{
	static const char *const phrases[] = {
		[JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",  [JSON_STRING] = "a string",
		[JSON_INTEGER] = "a number", [JSON_REAL] = "a number",   [JSON_TRUE] = "a boolean",
		[JSON_FALSE] = "a boolean",  [JSON_NULL] = "nothing",
	};
	size_t t = (size_t)json_typeof(v);
	return t < sizeof(phrases) / sizeof(phrases[0]) && phrases[t] ? phrases[t] : "nothing";
}

/* v for a message: a string quoted and cut to ECHO_MAX bytes (in buf), else what it is ("an array"). */
static const char *echo(const json_t *v, char buf[ECHO_MAX + 3])
{
	if (!json_is_string(v))
		return type_phrase(v);
	snprintf(buf, ECHO_MAX + 3, "\"%.*s\"", ECHO_MAX, json_string_value(v));
	return buf;
}

/* A field of the template that is there (not null) must be of type t: "<path> is <what it is>; <must>". */
static int check_type(const char *key, const char *path, const json_t *v, json_type t, const char *must,
		      struct refusal *refusal)
{
	if (!v || json_typeof(v) == t)
		return 0;
	return refuse(refusal, "ScaledownTemplateInvalid", "annotation %s: %s is %s; %s", key, path, type_phrase(v),
		      must);
}

/*
 * The template annotation's key and text (both borrowed), or NULL key when
 * neither is present. When both are present ours wins: a user moving off
 * the jboss controller adds ours while the legacy key may still be read by
 * the old controller, and the newer, operator-specific key is the intended one.
 */
static const char *template_key(const json_t *ann)
{
	if (json_object_get(ann, ANNOTATION_SCALEDOWN_TEMPLATE))
		return ANNOTATION_SCALEDOWN_TEMPLATE;
	if (json_object_get(ann, ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY))
		return ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY;
	return NULL;
}

/*
 * JSON first (what the jboss controller took), then YAML, both under the
 * annotation limits (util/yaml_json.h): an alias expands in every cleanup
 * pod made from the template, so a few hundred bytes could otherwise ask
 * for gigabytes. *doc is a new reference.
 */
static int decode_template(const char *key, const char *text, json_t **doc, struct refusal *refusal)
{
	size_t len = strlen(text);
	char *jmsg = NULL, *ymsg = NULL;
	int jrc = json_load_limited(text, len, JSON_REJECT_DUPLICATES, &doc_limits_annotation, doc, &jmsg);
	if (jrc == 0)
		return 0;
	/*
	 * Also after a JSON limit: the JSON check counts brackets in YAML's
	 * single-quoted strings too, and YAML within its limits is fine.
	 */
	int yrc = yaml_to_json_limited(text, len, &doc_limits_annotation, doc, &ymsg);
	if (yrc == 0) {
		free(jmsg);
		return 0;
	}
	*doc = NULL;
	/* Text that opens like JSON was meant as JSON: its error is the one that helps. */
	const char *first = text + strspn(text, " \t\r\n");
	bool as_json = *first == '{' || *first == '[';
	if (jrc == DOC_TOO_LARGE || yrc == DOC_TOO_LARGE)
		refuse(refusal, "ScaledownTemplateTooLarge", "annotation %s is too large to read: %s", key,
		       (as_json && jrc == DOC_TOO_LARGE) || yrc != DOC_TOO_LARGE ? jmsg : ymsg);
	else if (as_json)
		refuse(refusal, "ScaledownTemplateInvalid",
		       "annotation %s is not valid JSON: %s; fix the Pod template, written as JSON or YAML",
		       key, jmsg);
	else
		refuse(refusal, "ScaledownTemplateInvalid",
		       "annotation %s is neither JSON nor YAML: %s; fix the Pod template", key, ymsg);
	free(jmsg);
	free(ymsg);
	return -1;
}

/* kind and apiVersion, when given, must say Pod and v1. */
static int check_kind(const char *key, const json_t *doc, struct refusal *refusal)
{
	char buf[ECHO_MAX + 3];
	const json_t *kind = field(doc, "kind");
	if (kind && (!json_is_string(kind) || strcmp(json_string_value(kind), "Pod")))
		return refuse(refusal, "ScaledownTemplateNotAPod",
			      "annotation %s holds kind %s, not a Pod; write a Pod template (kind: Pod, or leave "
			      "kind out) with metadata and spec", key, echo(kind, buf));
	const json_t *api = field(doc, "apiVersion");
	if (api && (!json_is_string(api) || strcmp(json_string_value(api), "v1")))
		return refuse(refusal, "ScaledownTemplateNotAPod",
			      "annotation %s holds apiVersion %s; a Pod is apiVersion v1 (or leave apiVersion out)",
			      key, echo(api, buf));
	return 0;
}

/* Each container needs a name and an image: the API server would refuse the pod much later otherwise. */
static int check_containers(const char *key, const json_t *spec, struct refusal *refusal)
{
	const json_t *containers = field(spec, "containers");
	if (check_type(key, "spec.containers", containers, JSON_ARRAY,
		       "it must be a list of containers, e.g. " TEMPLATE_EXAMPLE, refusal) < 0)
		return -1;
	if (!json_array_size(containers))
		return refuse(refusal, "ScaledownTemplateNoContainers",
			      "annotation %s: the Pod template has no spec.containers; add at least one container "
			      "with a name and an image, e.g. %s", key, TEMPLATE_EXAMPLE);
	size_t i;
	const json_t *c;
	json_array_foreach(containers, i, c) {
		if (!json_is_object(c))
			return refuse(refusal, "ScaledownTemplateInvalid",
				      "annotation %s: spec.containers[%zu] is %s; each container must be an object "
				      "with a name and an image", key, i, type_phrase(c));
		const char *name = json_string_value(field(c, "name"));
		const char *image = json_string_value(field(c, "image"));
		if (!name || !*name)
			return refuse(refusal, "ScaledownTemplateInvalid",
				      "annotation %s: spec.containers[%zu] has no name; give every container a name",
				      key, i);
		if (!image || !*image)
			return refuse(refusal, "ScaledownTemplateInvalid",
				      "annotation %s: spec.containers[%zu] (\"%.*s\") has no image; give every "
				      "container an image", key, i, ECHO_MAX, name);
	}
	return 0;
}

static int check_restart_policy(const char *key, const json_t *spec, struct refusal *refusal)
{
	char buf[ECHO_MAX + 3];
	const json_t *rp = field(spec, "restartPolicy");
	if (!rp || (json_is_string(rp) && !strcmp(json_string_value(rp), "Never")))
		return 0;
	return refuse(refusal, "ScaledownTemplateRestartPolicy",
		      "annotation %s: spec.restartPolicy is %s; the operator retries a failed cleanup "
		      "itself with backoff; use Never or leave restartPolicy out",
		      key, echo(rp, buf));
}

/* The operator adds a volume per claim, named after its template; the template must leave those names free. */
static int check_volumes(const char *key, const json_t *sts, const json_t *spec, struct refusal *refusal)
{
	const json_t *templates = json_object_get(json_object_get(sts, "spec"), "volumeClaimTemplates");
	const json_t *volumes = field(spec, "volumes");
	if (check_type(key, "spec.volumes", volumes, JSON_ARRAY, "it must be a list of volumes, or left out",
		       refusal) < 0)
		return -1;
	size_t i;
	const json_t *v;
	json_array_foreach(volumes, i, v) {
		const char *name = json_string_value(field(v, "name"));
		if (kube_list_find(templates, NULL, name))
			return refuse(refusal, "ScaledownTemplateVolumeConflict",
				      "annotation %s: spec.volumes[%zu] is named \"%s\", like the StatefulSet's "
				      "volumeClaimTemplate; the operator mounts that claim under that name itself, so "
				      "remove the volume from the template and keep the volumeMounts that use it",
				      key, i, name);
	}
	return 0;
}

/*
 * The StatefulSet controller adopts every pod its selector matches that no
 * controller owns, then deletes it as surplus: a cleanup pod must not match.
 */
static int check_labels(const char *key, const json_t *sts, const json_t *metadata, struct refusal *refusal)
{
	const json_t *labels = field(metadata, "labels");
	if (check_type(key, "metadata.labels", labels, JSON_OBJECT, "it must be an object of strings", refusal) < 0)
		return -1;
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)labels, k, v) {
		if (!json_is_string(v))
			return refuse(refusal, "ScaledownTemplateInvalid",
				      "annotation %s: metadata.labels.%s is %s; label values are strings", key, k,
				      type_phrase(v));
	}
	const json_t *selector = json_object_get(json_object_get(sts, "spec"), "selector");
	if (selector && label_selector_matches(selector, labels))
		return refuse(refusal, "ScaledownTemplateMatchesSelector",
			      "annotation %s: the cleanup pod's labels match the StatefulSet's selector, so the "
			      "StatefulSet would adopt the cleanup pod and delete it; give the template labels of "
			      "its own, e.g. app: <name>-cleanup", key);
	return 0;
}

/*
 * Checks doc (the decoded template, owned) and builds the template the
 * controller uses into *out (new reference).
 */
static int build_template(const char *key, const json_t *sts, json_t *doc, json_t **out, struct refusal *refusal)
{
	*out = NULL;
	if (!json_is_object(doc))
		return refuse(refusal, "ScaledownTemplateNotAPod",
			      "annotation %s holds %s, not a Pod; write a Pod template with metadata and spec, e.g. %s",
			      key, type_phrase(doc), TEMPLATE_EXAMPLE);
	if (check_kind(key, doc, refusal) < 0)
		return -1;
	json_t *metadata = field(doc, "metadata"), *spec = field(doc, "spec");
	if (check_type(key, "metadata", metadata, JSON_OBJECT,
		       "it must be an object (labels, annotations), or left out", refusal) < 0 ||
	    check_type(key, "spec", spec, JSON_OBJECT, "it must be a Pod spec object, e.g. " TEMPLATE_EXAMPLE,
		       refusal) < 0)
		return -1;
	if (check_containers(key, spec, refusal) < 0 || check_restart_policy(key, spec, refusal) < 0 ||
	    check_volumes(key, sts, spec, refusal) < 0 || check_labels(key, sts, metadata, refusal) < 0)
		return -1;

	/* A failed cleanup is retried by the operator, so the kubelet must not restart it. */
	if (!field(spec, "restartPolicy")) /* absent or null: the API server would default to Always */
		json_object_set_new(spec, "restartPolicy", json_string("Never"));
	/* Only metadata and spec are used: apiVersion, kind, status and the rest are dropped. */
	*out = json_object();
	json_object_set_new(*out, "metadata", metadata ? json_incref(metadata) : json_object());
	json_object_set(*out, "spec", spec);
	return 0;
}

/* An integer annotation in lo..hi; dflt when absent. */
static int parse_int(const json_t *ann, const char *key, int lo, int hi, int dflt, int *out,
		     struct refusal *refusal)
{
	char buf[ECHO_MAX + 3];
	const json_t *v = json_object_get(ann, key);
	*out = dflt;
	if (!v)
		return 0;
	const char *text = json_string_value(v);
	size_t n = text ? strlen(text) : 0;
	/* Ten digits or fewer cannot overflow a long long; more is out of range anyway. */
	if (n == 0 || n > 10 || strspn(text, "0123456789") != n)
		return refuse(refusal, "ScaledownInvalidAnnotation",
			      "annotation %s is %s; use a whole number from %d to %d", key, echo(v, buf), lo, hi);
	long long x = strtoll(text, NULL, 10);
	if (x < lo || x > hi)
		return refuse(refusal, "ScaledownInvalidAnnotation",
			      "annotation %s is %s, out of range; use a whole number from %d to %d", key, text,
			      lo, hi);
	*out = (int)x;
	return 0;
}

static int parse_timeout(const json_t *ann, long long *out, struct refusal *refusal)
{
	const char *key = ANNOTATION_SCALEDOWN_TIMEOUT;
	const json_t *v = json_object_get(ann, key);
	*out = SCALEDOWN_TIMEOUT_DEFAULT_MS;
	if (!v)
		return 0;
	const char *text = json_string_value(v);
	if (!text)
		return refuse(refusal, "ScaledownInvalidAnnotation",
			      "annotation %s is %s; write a duration such as 30m or 1h", key, type_phrase(v));
	int64_t ms;
	char *why = NULL;
	if (duration_parse(text, &ms, &why) < 0) {
		int rc = refuse(refusal, "ScaledownInvalidAnnotation", "annotation %s: %s", key,
				why ? why : "not a duration; write it like 30m or 1h");
		free(why);
		return rc;
	}
	if (ms < SCALEDOWN_TIMEOUT_MIN_MS)
		return refuse(refusal, "ScaledownInvalidAnnotation",
			      "annotation %s is %.*s; a cleanup pod needs at least 1s, e.g. 30m", key, ECHO_MAX,
			      text);
	*out = ms;
	return 0;
}

int scaledown_request_parse(const json_t *sts, struct scaledown_request *req, struct refusal *refusal)
{
	json_t *doc = NULL;
	int rc = -1;
	memset(req, 0, sizeof(*req));
	*refusal = (struct refusal){NULL, NULL};

	const json_t *ann = kube_obj_annotations(sts);
	const char *key = template_key(ann);
	if (!key)
		return 0;
	const char *text = json_string_value(json_object_get(ann, key));
	if (!text)
		return refuse(refusal, "ScaledownTemplateInvalid",
			      "annotation %s must be a string holding a Pod template as JSON or YAML, e.g. %s", key,
			      TEMPLATE_EXAMPLE);
	if (decode_template(key, text, &doc, refusal) < 0 ||
	    build_template(key, sts, doc, &req->pod_template, refusal) < 0)
		goto out;

	req->enabled = true;
	const char *policy = kube_obj_str(sts, "spec.podManagementPolicy");
	req->parallel = policy && !strcmp(policy, "Parallel");
	/*
	 * Parallel pods come and go together, so their cleanup may too, unless
	 * the user bounds it. OrderedReady is one at a time, highest first, as
	 * its pods are; the annotation is still checked there, so a typo shows.
	 */
	if (parse_int(ann, ANNOTATION_SCALEDOWN_PARALLELISM, 1, SCALEDOWN_PARALLELISM_MAX,
		      req->parallel ? INT_MAX : 1, &req->parallelism, refusal) < 0 ||
	    parse_int(ann, ANNOTATION_SCALEDOWN_MAX_ATTEMPTS, 1, SCALEDOWN_MAX_ATTEMPTS_MAX,
		      SCALEDOWN_MAX_ATTEMPTS_DEFAULT, &req->max_attempts, refusal) < 0 ||
	    parse_timeout(ann, &req->timeout_ms, refusal) < 0)
		goto out;

	if (!req->parallel)
		req->parallelism = 1;

	const char *when = kube_obj_str(sts, "spec.persistentVolumeClaimRetentionPolicy.whenScaled");
	if (when && !strcmp(when, "Delete")) {
		refuse(refusal, "ScaledownWhenScaledDelete",
		       "spec.persistentVolumeClaimRetentionPolicy.whenScaled is Delete: the claims would be "
		       "deleted before the cleanup pod of annotation %s could run; set whenScaled to Retain, "
		       "or remove the annotation",
		       key);
		goto out;
	}
	rc = 0;
out:
	json_decref(doc);
	if (rc < 0)
		scaledown_request_release(req);
	return rc;
}
