/*
 * The command line of `kubectl stateful` (kubectl-stateful): kubectl's own
 * global flags (--kubeconfig, --context, --cluster, --user, -s/--server,
 * --token, TLS, impersonation, --request-timeout, -n/--namespace,
 * -A/--all-namespaces), a subcommand and its object (TYPE/NAME, TYPE NAME,
 * or NAME where the command takes one kind) and flags, checked before
 * anything talks to the cluster so a typo never becomes a request.
 *
 * Pure: no I/O. Thread-safe.
 */
#ifndef SOP_PLUGIN_ARGS_H
#define SOP_PLUGIN_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "client/kube_config.h"
#include "client/quantity.h"

enum plugin_cmd {
	PLUGIN_HELP,
	PLUGIN_VERSION,
	PLUGIN_STATUS,
	PLUGIN_RESIZE,
	PLUGIN_ABORT,
	PLUGIN_EXPLAIN,
	PLUGIN_CLEANUP,
	PLUGIN_MEMBERS,
	PLUGIN_UNINSTALL,
	PLUGIN_COMPLETION,
};

enum plugin_kind {
	PLUGIN_KIND_NONE, /* status of everything */
	PLUGIN_KIND_STS,  /* sts/NAME */
	PLUGIN_KIND_STC,  /* stc/NAME */
};

/* -o: the table, a document (json, yaml), or kubectl's other printers. */
enum plugin_output {
	PLUGIN_OUT_TABLE,
	PLUGIN_OUT_JSON,
	PLUGIN_OUT_YAML,
	PLUGIN_OUT_WIDE,     /* the table with more columns */
	PLUGIN_OUT_NAME,     /* kind.group/name lines */
	PLUGIN_OUT_JSONPATH, /* jsonpath=TEMPLATE over the -o json document */
};

/* --dry-run: kubectl's spelling; bare --dry-run is client. */
enum plugin_dry_run { PLUGIN_DRY_RUN_NONE, PLUGIN_DRY_RUN_CLIENT, PLUGIN_DRY_RUN_SERVER };

enum plugin_wait {
	PLUGIN_WAIT_AUTO, /* follow when standard output is a terminal */
	PLUGIN_WAIT_ON,
	PLUGIN_WAIT_OFF,
};

/* members: list them, or remove or replace the members named. */
enum plugin_members_op {
	PLUGIN_MEMBERS_LIST,
	PLUGIN_MEMBERS_REMOVE,  /* members remove stc/NAME MEMBER... */
	PLUGIN_MEMBERS_REPLACE, /* members replace stc/NAME MEMBER... */
};

/* The most members one `members remove|replace` names. */
#define PLUGIN_MAX_MEMBERS 8

/* The operator's namespace when --operator-namespace is not given (deploy/base). */
#define PLUGIN_OPERATOR_NAMESPACE "stateful-operator-system"

/* Every string is borrowed from argv unless said otherwise. */
struct plugin_args {
	enum plugin_cmd cmd;
	const char *kubeconfig;  /* NULL: $KUBECONFIG, then ~/.kube/config */
	struct kube_overrides connection; /* --context, --server, --as ...; as_groups owned */
	int64_t request_timeout_ms; /* --request-timeout; -1: not given, 0: none */
	const char *namespace;   /* NULL: the context's, else "default" */
	bool all_namespaces;
	const char *operator_namespace; /* --operator-namespace; NULL: see plugin_session.operator_ns */
	enum plugin_output output;
	const char *jsonpath;    /* -o jsonpath=TEMPLATE (checked to parse) */
	bool no_headers;         /* --no-headers: tables without their header line */
	enum plugin_kind kind;
	const char *name;        /* the object's name; NULL with PLUGIN_KIND_NONE */
	char *object;            /* owned: "TYPE/NAME" made of TYPE NAME; name points into it */
	/* resize */
	char *template_name;     /* owned */
	const char *size_text;   /* as typed */
	struct quantity size;
	const char *strategy;    /* auto, expand or copy; NULL: leave the annotation as it is */
	const char *storage_class;
	enum plugin_wait wait;
	int64_t timeout_ms;      /* --timeout for --wait; 0: none */
	/* cleanup */
	bool retry;
	/* members: each name is <name>-<n> of the StatefulCluster named, and named once */
	enum plugin_members_op members_op;
	const char *member_names[PLUGIN_MAX_MEMBERS];
	int nmember_names;
	/* resize, uninstall: say what would be done, change nothing (uninstall: client only) */
	enum plugin_dry_run dry_run;
	/* uninstall */
	bool force;             /* go on although work is in flight */
	/* completion */
	const char *shell;       /* bash or zsh */
	/* help: --help after a command, or help COMMAND: that command's help */
	bool help_topic_set;
	enum plugin_cmd help_topic; /* PLUGIN_HELP: the general help */
};

/*
 * Parses argv[1..argc-1] into *out (zeroed first). Returns 0, or -1 with
 * *err a new message that names the argument and says what is expected
 * (out is then released). Release out on success too.
 */
int plugin_args_parse(int argc, char *const *argv, struct plugin_args *out, char **err)
	__attribute__((warn_unused_result));
void plugin_args_release(struct plugin_args *a);


#endif
