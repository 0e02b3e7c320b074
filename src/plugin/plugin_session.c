#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_operator.h"
#include "plugin/plugin_output.h"
#include "plugin/plugin_session.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* Lines of a copy pod's log read each time: the script prints one progress line every ~2 s. */
#define COPY_LOG_TAIL_LINES 20

/*
 * "prefix: message" (prefix NULL: the message alone) on stderr, the message
 * one clean line: it quotes the API's and the operator's words.
 */
static void say(const char *prefix, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void say(const char *prefix, const char *fmt, va_list ap)
{
	char *raw = xvasprintf(fmt, ap);
	char *msg = text_sanitize(raw, 0);
	fprintf(stderr, "%s%s%s\n", prefix ? prefix : "", prefix ? ": " : "", msg);
	free(msg);
	free(raw);
}

void plugin_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("error", fmt, ap);
	va_end(ap);
}

void plugin_warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("warning", fmt, ap);
	va_end(ap);
}

void plugin_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(NULL, fmt, ap);
	va_end(ap);
}

int plugin_session_open(const struct plugin_args *a, struct plugin_session *s)
{
	memset(s, 0, sizeof(*s));
	s->args = a;
	s->tty = isatty(STDOUT_FILENO);
	struct winsize ws;
	s->width = s->tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load_with(a->kubeconfig, &a->connection, &cfg, &err) < 0) {
		plugin_error("%s", err);
		free(err);
		kube_config_release(&cfg);
		return PLUGIN_EXIT_USAGE;
	}
	/* A user waits at the terminal: a few retries, a short timeout (--request-timeout; 0: none). */
	long timeout_ms = a->request_timeout_ms < 0 ? 30000 : a->request_timeout_ms == 0 ? KUBE_NO_REQUEST_TIMEOUT_MS
								 : (long)a->request_timeout_ms;
	/* resize --dry-run=server: the patch goes with dryRun=All, so admission judges it and nothing is stored. */
	struct kube_client_options opts = {.max_retries = 2, .request_timeout_ms = timeout_ms,
					   .dry_run = a->dry_run == PLUGIN_DRY_RUN_SERVER, .user_agent = "kubectl-stateful"};
	s->client = kube_client_new(&cfg, &opts, &err);
	kube_config_release(&cfg);
	if (!s->client) {
		plugin_error("%s", err);
		free(err);
		return PLUGIN_EXIT_USAGE;
	}
	const char *ns = a->namespace ? a->namespace : kube_client_namespace(s->client);
	s->ns = xstrdup(ns && *ns ? ns : "default");
	const char *env = getenv(PLUGIN_OPERATOR_NAMESPACE_ENV);
	const char *op_ns = a->operator_namespace ? a->operator_namespace : env && *env ? env : NULL;
	s->operator_ns_named = op_ns != NULL;
	s->operator_ns = xstrdup(op_ns ? op_ns : PLUGIN_OPERATOR_NAMESPACE);
	return 0;
}

void plugin_session_close(struct plugin_session *s)
{
	kube_client_free(s->client);
	free(s->ns);
	free(s->operator_ns);
	memset(s, 0, sizeof(*s));
}

/*
 * The namespace of the one Lease named stateful-operator in the cluster (a
 * new string), or NULL when there is none, more than one, or the user may
 * not list Leases everywhere.
 */
static char *lone_operator_lease_namespace(struct plugin_session *s)
{
	struct kube_list_options lo = {.field_selector = "metadata.name=" OPERATOR_LEASE_NAME, .limit = 2};
	json_t *page = NULL;
	struct kube_error err;
	if (kube_list_page(s->client, &KUBE_LEASES, NULL, &lo, &page, &err) < 0)
		return NULL;
	const json_t *items = json_object_get(page, "items");
	const char *ns = json_array_size(items) == 1 ? kube_obj_str(json_array_get(items, 0), "metadata.namespace")
						      : NULL;
	char *out = ns ? xstrdup(ns) : NULL;
	json_decref(page);
	return out;
}

static enum operator_seen judge_in(struct plugin_session *s, const char *ns, bool *nothing_there, char **why)
{
	struct kube_error err;
	json_t *lease = NULL, *pods = NULL;
	struct operator_evidence ev = {0};
	int rc = kube_get(s->client, &KUBE_LEASES, ns, OPERATOR_LEASE_NAME, &lease, &err);
	ev.lease_readable = rc == 0 || err.code == 404;
	ev.lease = lease;
	rc = kube_list_all(s->client, &KUBE_PODS, ns, OPERATOR_POD_SELECTOR, 0, &pods, NULL, &err);
	ev.pods_readable = rc == 0;
	ev.pods = pods;
	*nothing_there = !lease && ev.lease_readable && ev.pods_readable && json_array_size(pods) == 0;
	enum operator_seen seen = operator_judge(&ev, ns, (long long)time(NULL), why);
	json_decref(lease);
	json_decref(pods);
	return seen;
}

enum operator_seen plugin_operator_seen(struct plugin_session *s, char **why)
{
	bool nothing_there = false;
	enum operator_seen seen = judge_in(s, s->operator_ns, &nothing_there, why);
	if (!nothing_there || s->operator_ns_named)
		return seen;
	/* Installed elsewhere and not named: its Lease says where, if the user may list Leases. */
	char *found = lone_operator_lease_namespace(s);
	if (found && strcmp(found, s->operator_ns)) {
		free(*why);
		free(s->operator_ns);
		s->operator_ns = found;
		s->operator_ns_named = true;
		return judge_in(s, s->operator_ns, &nothing_there, why);
	}
	free(found);
	return seen;
}

int plugin_require_operator(struct plugin_session *s)
{
	char *why = NULL;
	enum operator_seen seen = plugin_operator_seen(s, &why);
	int out = 0;
	if (seen == OPERATOR_NOT_RUNNING) {
		plugin_error("%s", why);
		out = PLUGIN_EXIT_NO_OPERATOR;
	} else if (seen == OPERATOR_UNKNOWN) {
		plugin_warning("%s", why);
	}
	free(why);
	return out;
}

void plugin_show_operator(struct plugin_session *s)
{
	char *why = NULL;
	enum operator_seen seen = plugin_operator_seen(s, &why);
	if (seen == OPERATOR_RUNNING)
		plugin_note("operator: %s", why);
	else
		plugin_warning("%s", why);
	free(why);
}

static const char *resource_name(const struct kube_resource *r)
{
	return r == &KUBE_STATEFULSETS ? "statefulset.apps" : r == &KUBE_STATEFULCLUSTERS ? "statefulcluster" : r->plural;
}

json_t *plugin_get(struct plugin_session *s, const struct kube_resource *r, const char *name, int *exit_code)
{
	json_t *obj = NULL;
	struct kube_error err;
	if (kube_get(s->client, r, s->ns, name, &obj, &err) == 0)
		return obj;
	if (err.code == 404) {
		plugin_error("%s \"%s\" not found in namespace %s", resource_name(r), name, s->ns);
		*exit_code = PLUGIN_EXIT_USAGE;
	} else {
		plugin_error("reading %s \"%s\" in namespace %s: %s", resource_name(r), name, s->ns, err.message);
		*exit_code = PLUGIN_EXIT_FAILED;
	}
	return NULL;
}

json_t *plugin_get_optional(struct plugin_session *s, const struct kube_resource *r, const char *name)
{
	json_t *obj = NULL;
	struct kube_error err;
	if (kube_get(s->client, r, s->ns, name, &obj, &err) < 0)
		return NULL;
	return obj;
}

json_t *plugin_events(struct plugin_session *s, const char *ns)
{
	json_t *items = NULL;
	struct kube_error err;
	if (kube_list_all(s->client, &KUBE_EVENTS, ns, NULL, 500, &items, NULL, &err) < 0)
		return json_array();
	return items;
}

void plugin_read_resize(struct plugin_session *s, const char *name, struct resize_view *v, json_t **holder)
{
	*holder = plugin_get_optional(s, &KUBE_STATEFULSETS, name);
	if (!*holder || !kube_obj_annotation(*holder, ANNOTATION_RESIZE_STATE)) {
		/* Between its orphan deletion and its re-creation the state lives on the backup. */
		char *backup = xasprintf("%s%s", name, BACKUP_SUFFIX);
		json_t *cm = plugin_get_optional(s, &KUBE_CONFIGMAPS, backup);
		free(backup);
		if (cm && kube_obj_annotation(cm, ANNOTATION_RESIZE_STATE)) {
			json_decref(*holder);
			*holder = cm;
		} else {
			json_decref(cm);
		}
	}
	resize_view_read(*holder, v);
}

int plugin_open_resize(struct plugin_session *s, const char *name, struct resize_view *v, json_t **holder)
{
	plugin_read_resize(s, name, v, holder);
	if (*holder)
		return 0;
	resize_view_release(v);
	int code = PLUGIN_EXIT_FAILED;
	json_decref(plugin_get(s, &KUBE_STATEFULSETS, name, &code));
	return code;
}

/* The newest pod of sts's copy Job for ordinal (borrowed from pods), or NULL. */
static const json_t *newest_copy_pod(const json_t *pods)
{
	const json_t *best = NULL;
	long long best_t = -1;
	size_t i;
	const json_t *p;
	json_array_foreach(pods, i, p) {
		long long t = status_time_seconds(kube_obj_str(p, "metadata.creationTimestamp"));
		if (t >= best_t) {
			best = p;
			best_t = t;
		}
	}
	return best;
}

/* One look (status): the average since the copy pod started, bytes per second; < 0 unknown. */
static double average_rate(const json_t *pod, long long bytes)
{
	long long started = status_time_seconds(kube_obj_str(pod, "status.startTime"));
	long long now = (long long)time(NULL);
	return started < 0 || now <= started ? -1 : (double)bytes / (double)(now - started);
}

/* The tail of pod's log: a new string, NULL when it cannot be read (not started yet). */
static char *copy_log_tail(struct plugin_session *s, const json_t *pod)
{
	char *base = kube_resource_path(&KUBE_PODS, kube_obj_str(pod, "metadata.namespace"),
					kube_obj_str(pod, "metadata.name"), "log");
	char *path = xasprintf("%s?container=copy&tailLines=%d", base, COPY_LOG_TAIL_LINES);
	char *text = NULL;
	struct kube_error err;
	if (kube_get_text(s->client, path, &text, &err) < 0)
		text = NULL;
	free(path);
	free(base);
	return text;
}

void plugin_read_copy_progress(struct plugin_session *s, const char *ns, const char *sts, struct resize_view *v,
			       struct progress_rate *rates, long long now_ms)
{
	if (!v->step || (strcmp(v->step, "Copy") && strcmp(v->step, "Precopy")))
		return;
	for (size_t i = 0; i < v->nreplicas; i++) {
		struct replica_progress *r = &v->replicas[i];
		if (r->stage != REPLICA_STARTING)
			continue;
		char *selector = xasprintf("%s=%s,%s=%lld", LABEL_COPY_OF, sts, LABEL_RESIZE_ORDINAL, r->ordinal);
		json_t *pods = NULL;
		struct kube_error err;
		if (kube_list_all(s->client, &KUBE_PODS, ns, selector, 0, &pods, NULL, &err) == 0) {
			const json_t *pod = newest_copy_pod(pods);
			char *log = pod ? copy_log_tail(s, pod) : NULL;
			struct copy_progress p;
			if (log && copy_progress_parse(log, &p) == 0 && (p.total_bytes > 0 || p.result != 0)) {
				r->stage = REPLICA_COPYING;
				r->copy = p;
				if (rates) {
					progress_rate_update(&rates[i], p.bytes, now_ms);
					r->per_s = rates[i].per_s;
				} else {
					r->per_s = average_rate(pod, p.bytes);
				}
			}
			free(log);
		}
		json_decref(pods);
		free(selector);
	}
}

void plugin_print_doc(FILE *f, const json_t *v, enum plugin_output o)
{
	struct plugin_format fmt = {.output = o == PLUGIN_OUT_YAML ? PLUGIN_OUT_YAML : PLUGIN_OUT_JSON};
	char *text = NULL, *err = NULL;
	if (plugin_format_doc(v, &fmt, &text, &err) == 0)
		fputs(text, f);
	free(text);
	free(err);
}

int plugin_print_rendered(int rc, char *text, char *err)
{
	if (rc < 0)
		plugin_error("%s", err ? err : "cannot print the output");
	else
		fputs(text ? text : "", stdout);
	free(text);
	free(err);
	return rc < 0 ? PLUGIN_EXIT_FAILED : PLUGIN_EXIT_OK;
}
