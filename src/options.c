#include "options.h"

#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/xalloc.h"

enum {
	OPT_KUBECONFIG = 256,
	OPT_CONTEXT,
	OPT_NAMESPACE,
	OPT_WORKERS,
	OPT_CONTROLLERS,
	OPT_DRY_RUN,
	OPT_LOG_LEVEL,
	OPT_LOG_FORMAT,
	OPT_METRICS,
	OPT_HEALTH,
	OPT_LEADER_ELECT,
	OPT_LEADER_NS,
	OPT_COPY_IMAGE,
	OPT_WEBHOOK,
	OPT_WEBHOOK_NAMES,
	OPT_WEBHOOK_CERT_DIR,
	OPT_AUTORESIZE_SOURCE,
	OPT_AUTORESIZE_INTERVAL,
	OPT_AUTORESIZE_RECOMMEND,
	OPT_PROMETHEUS_URL,
	OPT_PROMETHEUS_TOKEN,
	OPT_PROMETHEUS_CA,
	OPT_KUBELET_CA,
	OPT_KUBELET_INSECURE,
	OPT_KUBELET_PORT,
	OPT_KUBELET_SA,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_options[] = {
	{"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
	{"context", required_argument, NULL, OPT_CONTEXT},
	{"namespace", required_argument, NULL, OPT_NAMESPACE},
	{"workers", required_argument, NULL, OPT_WORKERS},
	{"controllers", required_argument, NULL, OPT_CONTROLLERS},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"log-format", required_argument, NULL, OPT_LOG_FORMAT},
	{"metrics-bind-address", required_argument, NULL, OPT_METRICS},
	{"health-probe-bind-address", required_argument, NULL, OPT_HEALTH},
	{"leader-elect", no_argument, NULL, OPT_LEADER_ELECT},
	{"leader-election-namespace", required_argument, NULL, OPT_LEADER_NS},
	{"copy-image", required_argument, NULL, OPT_COPY_IMAGE},
	{"webhook-bind-address", required_argument, NULL, OPT_WEBHOOK},
	{"webhook-cert-names", required_argument, NULL, OPT_WEBHOOK_NAMES},
	{"webhook-cert-dir", required_argument, NULL, OPT_WEBHOOK_CERT_DIR},
	{"autoresize-source", required_argument, NULL, OPT_AUTORESIZE_SOURCE},
	{"autoresize-interval", required_argument, NULL, OPT_AUTORESIZE_INTERVAL},
	{"autoresize-recommend-only", no_argument, NULL, OPT_AUTORESIZE_RECOMMEND},
	{"prometheus-url", required_argument, NULL, OPT_PROMETHEUS_URL},
	{"prometheus-bearer-token-file", required_argument, NULL, OPT_PROMETHEUS_TOKEN},
	{"prometheus-ca-file", required_argument, NULL, OPT_PROMETHEUS_CA},
	{"kubelet-ca-file", required_argument, NULL, OPT_KUBELET_CA},
	{"kubelet-insecure-tls", no_argument, NULL, OPT_KUBELET_INSECURE},
	{"kubelet-port", required_argument, NULL, OPT_KUBELET_PORT},
	{"kubelet-service-account", required_argument, NULL, OPT_KUBELET_SA},
	{"help", no_argument, NULL, OPT_HELP},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0},
};

const char *options_usage(void)
{
	return "Usage: stateful-operator [flags]\n"
	       "  --kubeconfig PATH               kubeconfig file (default: $KUBECONFIG; else, in a pod\n"
	       "                                  and without --context, the in-cluster service\n"
	       "                                  account; else ~/.kube/config)\n"
	       "  --context NAME                  kubeconfig context (default: current-context)\n"
	       "  --namespace NS                  watch only NS (works with a namespaced Role);\n"
	       "                                  default: all namespaces\n"
	       "  --workers N                     reconcile workers per controller (default 4)\n"
	       "  --controllers LIST              comma list of resize,scaledown,cluster (default all)\n"
	       "  --dry-run                       decide and log every action, change nothing\n"
	       "  --log-level LEVEL               error|warn|info|debug (default info)\n"
	       "  --log-format FORMAT             text|json (default text)\n"
	       "  --metrics-bind-address ADDR     /metrics listener (default :8080; 0 disables)\n"
	       "  --health-probe-bind-address ADDR /healthz and /readyz listener (default :8081)\n"
	       "  --leader-elect                  run only while holding the Lease stateful-operator\n"
	       "  --leader-election-namespace NS  namespace of the Lease (default: own namespace)\n"
	       "  --copy-image IMAGE              image of the resize copy Jobs (needs sh and rsync;\n"
	       "                                  default: this pod's own image, else " DEFAULT_COPY_IMAGE ")\n"
	       "  --webhook-bind-address ADDR     HTTPS listener of the admission webhook that turns\n"
	       "                                  volumeClaimTemplates edits into resizes (deploy/ sets\n"
	       "                                  :9443; default 0: off)\n"
	       "  --webhook-cert-names LIST       comma list of DNS names and IPs its certificate covers\n"
	       "                                  (default: Service " "stateful-operator-webhook's names)\n"
	       "  --webhook-cert-dir DIR          serve DIR/tls.crt and DIR/tls.key (a mounted Secret, e.g.\n"
	       "                                  cert-manager's), reloaded when they change; the operator\n"
	       "                                  then writes no certificate Secret and no caBundle\n"
	       "                                  (default: it makes and renews its own)\n"
	       "  --autoresize-source SOURCE      usage of volumes for autoresize policies: kubelet\n"
	       "                                  (nodes/stats, with the token of --kubelet-service-account;\n"
	       "                                  cluster scope only), kubelet-proxy (nodes/proxy through\n"
	       "                                  the API server), prometheus, none (default kubelet;\n"
	       "                                  none with --namespace)\n"
	       "  --autoresize-interval DURATION  how often usage is read (default 60s; at least 5s)\n"
	       "  --autoresize-recommend-only     Events and metrics only: never grow a volume\n"
	       "  --prometheus-url URL            the Prometheus server of --autoresize-source=prometheus\n"
	       "  --prometheus-bearer-token-file PATH  its bearer token, if it asks for one (https:// only)\n"
	       "  --prometheus-ca-file PATH       CA of its serving certificate (default: the system's)\n"
	       "  --kubelet-ca-file PATH          CA of the kubelets' serving certificates\n"
	       "                                  (default: the API server's CA)\n"
	       "  --kubelet-insecure-tls          do not check the kubelets' certificates\n"
	       "  --kubelet-port N                kubelet port where the Node does not say (default 10250)\n"
	       "  --kubelet-service-account NAME  the ServiceAccount, in the operator's namespace, whose\n"
	       "                                  short-lived token (TokenRequest) the kubelets are shown:\n"
	       "                                  nodes/stats only, never the operator's own credentials\n"
	       "                                  (default " DEFAULT_KUBELET_SERVICE_ACCOUNT ")\n"
	       "  --help, --version\n";
}

static void free_names(char **names)
{
	for (char **n = names; n && *n; n++)
		free(*n);
	free(names);
}

static int parse_controllers(const char *s, unsigned *out, char **err)
{
	unsigned bits = 0;
	char *copy = xstrdup(s);
	char *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "resize"))
			bits |= CONTROLLER_RESIZE;
		else if (!strcmp(tok, "scaledown"))
			bits |= CONTROLLER_SCALEDOWN;
		else if (!strcmp(tok, "cluster"))
			bits |= CONTROLLER_CLUSTER;
		else {
			*err = xasprintf("--controllers: unknown controller \"%s\"; use resize, "
					 "scaledown, cluster",
					 tok);
			rc = -1;
			break;
		}
	}
	if (!rc && !bits) {
		*err = xstrdup("--controllers: name at least one of resize, scaledown, cluster");
		rc = -1;
	}
	free(copy);
	if (!rc)
		*out = bits;
	return rc;
}

/* "a,b" into a NULL-terminated array of new strings; -1 for an empty name. */
static int parse_names(const char *s, char ***out, char **err)
{
	size_t n = 1;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	char **names = xcalloc(n + 1, sizeof(*names));
	const char *p = s;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(p, ",");
		if (!len) {
			*err = xasprintf("--webhook-cert-names: \"%s\" has an empty name; give a comma list such as "
					 "\"webhook.example.svc,127.0.0.1\"",
					 s);
			free_names(names);
			return -1;
		}
		names[i] = xstrndup(p, len);
		p += len + (p[len] == ',');
	}
	free_names(*out);
	*out = names;
	return 0;
}

/* A ServiceAccount name: a DNS-1123 subdomain (it goes into the TokenRequest's path). */
static bool service_account_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '-' || *s == '.'))
			return false;
	return true;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

int options_parse(int argc, char **argv, struct operator_options *o, char **err)
{
	memset(o, 0, sizeof(*o));
	o->workers = 4; /* measured: bench/fleet reactions under concurrent resizes */
	o->controllers = CONTROLLER_ALL;
	o->log_level = LOG_INFO;
	o->log_format = LOG_FORMAT_TEXT;
	o->metrics_bind_address = xstrdup(":8080");
	o->health_probe_bind_address = xstrdup(":8081");
	o->webhook_bind_address = xstrdup("0");
	o->copy_image = xstrdup(DEFAULT_COPY_IMAGE);
	o->autoresize_source = xstrdup("kubelet");
	o->autoresize_interval_ms = 60000;
	o->kubelet_port = 10250;
	o->kubelet_service_account = xstrdup(DEFAULT_KUBELET_SERVICE_ACCOUNT);
	bool source_given = false;
	*err = NULL;

	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		char *end;
		long n;
		switch (c) {
		case OPT_KUBECONFIG:
			set_str(&o->kubeconfig, optarg);
			break;
		case OPT_CONTEXT:
			set_str(&o->context, optarg);
			break;
		case OPT_NAMESPACE:
			if (!*optarg) {
				*err = xstrdup("--namespace: give a namespace name, or leave the flag out "
					       "for all namespaces");
				return -1;
			}
			set_str(&o->namespace, optarg);
			break;
		case OPT_WORKERS:
			n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 1 || n > 64) {
				*err = xasprintf("--workers: \"%s\" is not a whole number from 1 to 64", optarg);
				return -1;
			}
			o->workers = (int)n;
			break;
		case OPT_CONTROLLERS:
			if (parse_controllers(optarg, &o->controllers, err) < 0)
				return -1;
			break;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_LOG_LEVEL:
			if (log_level_parse(optarg, &o->log_level) < 0) {
				*err = xasprintf("--log-level: \"%s\" is not one of error, warn, info, debug",
						 optarg);
				return -1;
			}
			break;
		case OPT_LOG_FORMAT:
			if (log_format_parse(optarg, &o->log_format) < 0) {
				*err = xasprintf("--log-format: \"%s\" is not one of text, json", optarg);
				return -1;
			}
			break;
		case OPT_METRICS:
			set_str(&o->metrics_bind_address, optarg);
			break;
		case OPT_HEALTH:
			set_str(&o->health_probe_bind_address, optarg);
			break;
		case OPT_LEADER_ELECT:
			o->leader_elect = true;
			break;
		case OPT_COPY_IMAGE:
			if (!*optarg || strpbrk(optarg, " \t\n")) {
				*err = xasprintf("--copy-image: \"%s\" is not an image reference", optarg);
				return -1;
			}
			set_str(&o->copy_image, optarg);
			o->copy_image_set = true;
			break;
		case OPT_LEADER_NS:
			set_str(&o->leader_election_namespace, optarg);
			break;
		case OPT_WEBHOOK:
			set_str(&o->webhook_bind_address, optarg);
			break;
		case OPT_WEBHOOK_NAMES:
			if (parse_names(optarg, &o->webhook_cert_names, err) < 0)
				return -1;
			break;
		case OPT_WEBHOOK_CERT_DIR:
			if (!*optarg) {
				*err = xstrdup("--webhook-cert-dir: give the directory where tls.crt and tls.key are mounted");
				return -1;
			}
			set_str(&o->webhook_cert_dir, optarg);
			break;
		case OPT_AUTORESIZE_SOURCE:
			if (strcmp(optarg, "kubelet") && strcmp(optarg, "kubelet-proxy") && strcmp(optarg, "prometheus") &&
			    strcmp(optarg, "none")) {
				*err = xasprintf("--autoresize-source: \"%s\" is not one of kubelet, kubelet-proxy, "
						 "prometheus, none",
						 optarg);
				return -1;
			}
			set_str(&o->autoresize_source, optarg);
			source_given = true;
			break;
		case OPT_AUTORESIZE_INTERVAL: {
			char *why = NULL;
			if (duration_parse(optarg, &o->autoresize_interval_ms, &why) < 0 ||
			    o->autoresize_interval_ms < 5000) {
				*err = xasprintf("--autoresize-interval: %s", why ? why : "at least 5s (each read asks every node)");
				free(why);
				return -1;
			}
			break;
		}
		case OPT_AUTORESIZE_RECOMMEND:
			o->autoresize_recommend_only = true;
			break;
		case OPT_PROMETHEUS_URL:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8)) {
				*err = xasprintf("--prometheus-url: \"%s\" is not an http:// or https:// URL", optarg);
				return -1;
			}
			set_str(&o->prometheus_url, optarg);
			break;
		case OPT_PROMETHEUS_TOKEN:
			set_str(&o->prometheus_token_file, optarg);
			break;
		case OPT_PROMETHEUS_CA:
			set_str(&o->prometheus_ca_file, optarg);
			break;
		case OPT_KUBELET_CA:
			set_str(&o->kubelet_ca_file, optarg);
			break;
		case OPT_KUBELET_INSECURE:
			o->kubelet_insecure_tls = true;
			break;
		case OPT_KUBELET_PORT:
			n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 1 || n > 65535) {
				*err = xasprintf("--kubelet-port: \"%s\" is not a port (1-65535)", optarg);
				return -1;
			}
			o->kubelet_port = (int)n;
			break;
		case OPT_KUBELET_SA:
			if (!service_account_name_ok(optarg)) {
				*err = xasprintf("--kubelet-service-account: \"%s\" is not a ServiceAccount name "
						 "(lower-case letters, digits, '-' and '.')",
						 optarg);
				return -1;
			}
			set_str(&o->kubelet_service_account, optarg);
			break;
		case OPT_HELP:
			o->help = true;
			break;
		case OPT_VERSION:
			o->version = true;
			break;
		case ':':
			*err = xasprintf("%s needs a value", argv[optind - 1]);
			return -1;
		default:
			*err = xasprintf("unknown flag %s; see --help", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		*err = xasprintf("unexpected argument \"%s\"; flags only, see --help", argv[optind]);
		return -1;
	}
	if (o->namespace && !strcmp(o->autoresize_source, "kubelet")) {
		/* The kubelet source's token needs a cluster-wide binding (nodes/stats); a Role cannot give it. */
		if (source_given) {
			*err = xstrdup("--autoresize-source=kubelet needs cluster scope (nodes/stats is cluster-wide; "
				       "a Role cannot grant it): with --namespace use --autoresize-source=prometheus "
				       "(or none), or run without --namespace");
			return -1;
		}
		set_str(&o->autoresize_source, "none");
	}
	if (o->webhook_cert_dir && !strcmp(o->webhook_bind_address, "0")) {
		*err = xstrdup("--webhook-cert-dir needs --webhook-bind-address (the webhook is off without it): give "
			       "both, or neither");
		return -1;
	}
	if (!strcmp(o->autoresize_source, "prometheus") && !o->prometheus_url) {
		*err = xstrdup("--autoresize-source=prometheus needs --prometheus-url");
		return -1;
	}
	/* Over http:// anyone on the path reads the token. */
	if (o->prometheus_token_file && o->prometheus_url && !strncmp(o->prometheus_url, "http://", 7)) {
		*err = xstrdup("--prometheus-bearer-token-file needs an https:// --prometheus-url: over http:// the token "
			       "goes out in clear; use https:// (with --prometheus-ca-file for a private CA), or drop the "
			       "token");
		return -1;
	}
	return 0;
}

void options_release(struct operator_options *o)
{
	FREE_AND_NULL(o->kubeconfig);
	FREE_AND_NULL(o->context);
	FREE_AND_NULL(o->namespace);
	FREE_AND_NULL(o->metrics_bind_address);
	FREE_AND_NULL(o->health_probe_bind_address);
	FREE_AND_NULL(o->leader_election_namespace);
	FREE_AND_NULL(o->copy_image);
	FREE_AND_NULL(o->webhook_bind_address);
	FREE_AND_NULL(o->webhook_cert_dir);
	FREE_AND_NULL(o->autoresize_source);
	FREE_AND_NULL(o->prometheus_url);
	FREE_AND_NULL(o->prometheus_token_file);
	FREE_AND_NULL(o->prometheus_ca_file);
	FREE_AND_NULL(o->kubelet_ca_file);
	FREE_AND_NULL(o->kubelet_service_account);
	free_names(o->webhook_cert_names);
	o->webhook_cert_names = NULL;
}
