/*
 * The daemon's command-line flags. Parsing is pure: no I/O but the error
 * message, so every flag and every refusal is unit-tested.
 */
#ifndef SOP_OPTIONS_H
#define SOP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "util/log.h"

enum {
	CONTROLLER_RESIZE = 1 << 0,
	CONTROLLER_SCALEDOWN = 1 << 1,
	CONTROLLER_CLUSTER = 1 << 2,
	CONTROLLER_ALL = CONTROLLER_RESIZE | CONTROLLER_SCALEDOWN | CONTROLLER_CLUSTER,
};

/*
 * The copy Jobs' image when this operator's own cannot be read from its Pod
 * (own_image.h): the operator image, whose Dockerfile adds rsync.
 */
#define DEFAULT_COPY_IMAGE "stateful-operator:0.1.0"
/* The kubelet usage source's ServiceAccount (deploy/rbac/cluster/usage-reader.yaml). */
#define DEFAULT_KUBELET_SERVICE_ACCOUNT "stateful-operator-usage-reader"

struct operator_options {
	char *kubeconfig;                 /* NULL: $KUBECONFIG, ~/.kube/config, or in-cluster */
	char *context;
	char *namespace;                  /* NULL: all namespaces */
	int workers;
	unsigned controllers;             /* CONTROLLER_* bits */
	bool dry_run;
	enum log_level log_level;
	enum log_format log_format;
	char *metrics_bind_address;
	char *health_probe_bind_address;
	bool leader_elect;
	char *leader_election_namespace;
	char *copy_image;                 /* image of the resize copy Jobs */
	bool copy_image_set;              /* --copy-image was given (else this pod's image may be used) */
	char *webhook_bind_address;       /* "0": no webhook */
	char **webhook_cert_names;        /* NULL-terminated; NULL: the webhook Service's names */
	char *webhook_cert_dir;           /* tls.crt and tls.key mounted here; NULL: the operator makes its own */
	/* Usage-driven growth (controllers/autoresize): runs with the resize controller. */
	char *autoresize_source;          /* kubelet|kubelet-proxy|prometheus|none (none by default with --namespace) */
	int64_t autoresize_interval_ms;
	bool autoresize_recommend_only;   /* Events and metrics, never a change */
	char *prometheus_url;
	char *prometheus_token_file;
	char *prometheus_ca_file;
	char *kubelet_ca_file;
	bool kubelet_insecure_tls;
	int kubelet_port;                 /* where the Node does not say */
	char *kubelet_service_account;    /* whose token the kubelets see, in the operator's namespace */
	bool help;
	bool version;
};

/*
 * Parses argv into opts (defaults first). Returns 0, or -1 with *err a new
 * message naming the flag and what it accepts. Strings in opts are new;
 * release opts with options_release() whatever the result.
 */
int options_parse(int argc, char **argv, struct operator_options *opts, char **err)
	__attribute__((warn_unused_result));
void options_release(struct operator_options *opts);
/* The --help text. Borrowed static string. */
const char *options_usage(void);

#endif
