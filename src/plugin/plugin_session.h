/*
 * What every kubectl-stateful command that talks to the cluster shares:
 * the client made from the kubeconfig (kubectl's flags and KUBECONFIG),
 * the namespace, the operator check, reading objects with messages a user
 * can act on, and printing JSON or YAML. Messages go to stderr as
 * "error: ...", kubectl's way. Single-threaded.
 */
#ifndef SOP_PLUGIN_SESSION_H
#define SOP_PLUGIN_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "client/kube_client.h"
#include "plugin/plugin_args.h"
#include "plugin/plugin_operator.h"
#include "plugin/plugin_status.h"

/* Exit statuses (plugin_usage() lists them for users, plugin_help.c). */
#define PLUGIN_EXIT_OK 0
#define PLUGIN_EXIT_FAILED 1      /* the operation failed, was refused or aborted; or the API failed */
#define PLUGIN_EXIT_USAGE 2       /* bad arguments, or an object that does not exist */
#define PLUGIN_EXIT_NO_OPERATOR 3 /* nothing would act on the request */
#define PLUGIN_EXIT_TIMEOUT 4     /* --timeout passed while the operation goes on */

struct plugin_session {
	struct kube_client *client;
	char *ns;                       /* owned: -n, else the context's namespace, else "default" */
	/*
	 * owned: where the operator runs: --operator-namespace, else
	 * $KUBECTL_STATEFUL_OPERATOR_NAMESPACE, else PLUGIN_OPERATOR_NAMESPACE,
	 * or where plugin_operator_seen() found its Lease when neither named one.
	 */
	char *operator_ns;
	bool operator_ns_named;
	const struct plugin_args *args; /* borrowed */
	bool tty;                       /* standard output is a terminal */
	int width;                      /* its columns (80 when unknown) */
};

/* The environment variable that names the operator's namespace when --operator-namespace does not. */
#define PLUGIN_OPERATOR_NAMESPACE_ENV "KUBECTL_STATEFUL_OPERATOR_NAMESPACE"

/* Loads the kubeconfig and makes the client. Returns 0, or an exit status after printing why. */
int plugin_session_open(const struct plugin_args *a, struct plugin_session *s);
void plugin_session_close(struct plugin_session *s);

/*
 * What the plugin prints quotes cluster text (annotations, Events, status
 * messages, the API's errors) that anyone who may write to a namespace
 * sets: every piece goes through text_sanitize (util/text_sanitize.h)
 * before it reaches stdout or stderr, so no escape sequence, C1 or bidi
 * control of a tenant's reaches the terminal.
 */

/* Prints "error: " and the message, one clean line, to stderr. */
void plugin_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with "warning: ". */
void plugin_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The message alone, one clean line, to stderr: what the user should know beside the output. */
void plugin_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether an operator runs (plugin_operator.h), with *why a new string saying what was seen. */
enum operator_seen plugin_operator_seen(struct plugin_session *s, char **why);
/* 0 when an operator runs (or it cannot be told: a warning is printed), else PLUGIN_EXIT_NO_OPERATOR after saying why. */
int plugin_require_operator(struct plugin_session *s);
/* Says on stderr who leads ("operator: <holder> leads (Lease ...)"), or warns why no operator counts as running. */
void plugin_show_operator(struct plugin_session *s);

/*
 * GET of r/name in the session's namespace: a new reference, or NULL
 * after printing why, with *exit_code USAGE (not found) or FAILED.
 */
json_t *plugin_get(struct plugin_session *s, const struct kube_resource *r, const char *name, int *exit_code);
/* The same, NULL without a message when it does not exist. */
json_t *plugin_get_optional(struct plugin_session *s, const struct kube_resource *r, const char *name);

/* The Events of namespace ns (NULL: every namespace): a new array; empty when they cannot be read. */
json_t *plugin_events(struct plugin_session *s, const char *ns);

/*
 * For each replica of v copying in StatefulSet ns/sts (REPLICA_STARTING in a
 * Copy or Precopy step), reads the tail of its copy pod's log and, when it
 * reports progress, makes it REPLICA_COPYING with the numbers; rates
 * (indexed like v->replicas) are updated at now_ms. Without rates (one
 * look) the rate is the average since the copy pod started.
 */
void plugin_read_copy_progress(struct plugin_session *s, const char *ns, const char *sts, struct resize_view *v,
			       struct progress_rate *rates, long long now_ms);

/*
 * The resize of StatefulSet name as the cluster shows it: read from the
 * set (obj) or, while it is gone, from its backup ConfigMap. *holder is a
 * new reference to the object read (release it after v), NULL when
 * neither exists.
 */
void plugin_read_resize(struct plugin_session *s, const char *name, struct resize_view *v, json_t **holder);

/*
 * plugin_read_resize for a command about StatefulSet name: 0 with *holder
 * set, or, when neither the set nor its backup exists, an exit status
 * after saying so (v is then released).
 */
int plugin_open_resize(struct plugin_session *s, const char *name, struct resize_view *v, json_t **holder)
	__attribute__((warn_unused_result));

/* Prints v (borrowed) as JSON or YAML on f, controls in strings as \u escapes (plugin_format_doc). */
void plugin_print_doc(FILE *f, const json_t *v, enum plugin_output o);

/*
 * What a *_render gave (rc, and text or err, both taken and freed): text
 * on stdout and 0, or the error and PLUGIN_EXIT_FAILED.
 */
int plugin_print_rendered(int rc, char *text, char *err);

#endif
