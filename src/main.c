/*
 * stateful-operator: one daemon for the storage lifecycle of stateful
 * workloads. main() wires the parts together: flags, logging, the API
 * client, the shared caches and the controllers, and signal handling.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/kube_client.h"
#include "client/kube_config.h"
#include "observability.h"
#include "build_info.h"
#include "options.h"
#include "own_image.h"
#include "webhook/webhook.h"
#include "controllers/resize/copy_script.h"
#include "controllers/autoresize/autoresize_controller.h"
#include "controllers/cluster/cluster_controller.h"
#include "controllers/pod_fields.h"
#include "controllers/resize/resize_controller.h"
#include "controllers/scaledown/scaledown_controller.h"
#include "controllers/state_seal.h"
#include "controllers/state_seal_upgrade.h"
#include "runtime/events.h"
#include "runtime/heap_trim.h"
#include "runtime/leader.h"
#include "runtime/manager.h"
#include "util/log.h"
#include "util/xalloc.h"

struct signal_thread {
	sigset_t set;
	struct manager *manager;
};

/*
 * The first SIGTERM/SIGINT stops gracefully; a second one exits at once.
 * Between signals, every HEAP_TRIM_INTERVAL_MS, the heap trim a drained
 * queue put off (heap_trim.h).
 */
static void *wait_signals(void *arg)
{
	struct signal_thread *st = arg;
	const struct timespec tick = {HEAP_TRIM_INTERVAL_MS / 1000, (HEAP_TRIM_INTERVAL_MS % 1000) * 1000000L};
	bool stopping = false;
	for (;;) {
		int sig = sigtimedwait(&st->set, NULL, &tick);
		if (sig < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return NULL;
			heap_trim_owed();
			continue;
		}
		if (sig == SIGUSR1)
			return NULL; /* main is done: end this thread */
		if (stopping) {
			log_warn("main", "second signal %d: exiting now", sig);
			_exit(1);
		}
		log_info("main", "signal %d: shutting down", sig);
		stopping = true;
		manager_request_stop(st->manager);
	}
}

/*
 * The config, in controller-runtime's order: --kubeconfig, $KUBECONFIG,
 * the in-cluster service account, ~/.kube/config.
 */
static int load_config(const struct operator_options *o, struct kube_config *cfg, char **err)
{
	if (o->kubeconfig)
		return kubeconfig_load(o->kubeconfig, o->context, cfg, err);
	const char *env = getenv("KUBECONFIG");
	if (env && *env)
		return kubeconfig_load(NULL, o->context, cfg, err);
	if (getenv("KUBERNETES_SERVICE_HOST") && !o->context)
		return kube_config_in_cluster(NULL, cfg, err);
	return kubeconfig_load(NULL, o->context, cfg, err);
}

/*
 * The operator's own namespace, where its state key lives: the pod's
 * (POD_NAMESPACE from the downward API, or the in-cluster service
 * account's), else the kubeconfig context's, else --namespace. New string,
 * or NULL when none is known.
 */
static char *own_namespace(const struct operator_options *o, struct kube_client *c)
{
	const char *pod_ns = getenv("POD_NAMESPACE");
	if (pod_ns && *pod_ns)
		return xstrdup(pod_ns);
	if (kube_client_namespace(c))
		return xstrdup(kube_client_namespace(c));
	if (o->namespace)
		return xstrdup(o->namespace);
	return NULL;
}

/*
 * Without --copy-image, the copy Jobs run the image this operator runs, read
 * from its own Pod (POD_NAME and POD_NAMESPACE from the downward API): a
 * retagged or mirrored operator image then serves the copies too. Out of a
 * pod, or when the Pod cannot be read, the built-in default stays.
 */
static void adopt_own_image(struct operator_options *o, struct kube_client *c)
{
	const char *pod = getenv("POD_NAME"), *ns = getenv("POD_NAMESPACE");
	if (o->copy_image_set || !pod || !*pod || !ns || !*ns)
		return;
	json_t *obj = NULL;
	struct kube_error err;
	char *why = NULL, *image = NULL;
	if (kube_get(c, &KUBE_PODS, ns, pod, &obj, &err) < 0)
		why = xasprintf("cannot read this pod %s/%s: %s", ns, pod, err.message);
	else
		image = own_image_of_pod(obj, &why);
	if (image) {
		log_info("main", "copy Jobs run this pod's image %s (set --copy-image to choose another)", image);
		free(o->copy_image);
		o->copy_image = image;
	} else {
		log_warn("main", "copy image: %s; copy Jobs run %s (set --copy-image)", why, o->copy_image);
	}
	free(why);
	json_decref(obj);
}

/*
 * Another replica may take over 5 s after our renew deadline passes: stop
 * at once rather than let a step race with the new leader.
 */
static void lease_lost(void *ctx)
{
	(void)ctx;
	log_error("main", "leadership lost: exiting so that only the new leader acts");
	_exit(1);
}

/*
 * The StatefulCluster API is a CRD (deploy/crds/): without it the cluster
 * controller's cache could never sync and the whole operator would stay
 * unready, so it is left out with a warning that says what to install.
 */
static bool cluster_api_installed(struct kube_client *c, const char *ns)
{
	/* A LIST of one, where the operator may list: in namespace scope nothing leaves the namespace. */
	char *base = kube_resource_path(&KUBE_STATEFULCLUSTERS, ns, NULL, NULL);
	char *path = xasprintf("%s?limit=1", base);
	free(base);
	struct kube_error err = {0};
	json_t *out = NULL;
	int r = kube_request(c, "GET", path, NULL, NULL, &out, &err);
	json_decref(out);
	free(path);
	if (r == 0)
		return true;
	if (err.code == 404) {
		log_warn("main", "the StatefulCluster CRD is not installed (kubectl apply -k deploy/crds): the cluster "
				 "controller does not run");
		return false;
	}
	/* Any other answer (403, a flaky network): run it, its cache reports the problem as it retries. */
	log_warn("main", "could not check for the StatefulCluster CRD: %s", err.message);
	return true;
}

/* Where deploy/ installs the operator. */
#define DEFAULT_OPERATOR_NAMESPACE "stateful-operator-system"

/*
 * The key that seals the controllers' state (controllers/state_seal.h), in
 * Secret <own namespace>/stateful-operator-state-key, filled when empty;
 * the deploy/ namespace when our own is not known. A dry run reads it but
 * fills none: it writes no state. NULL (and the reason in the log) when it
 * can be neither read nor filled.
 */
static struct state_seal *load_state_seal(const struct operator_options *o, struct kube_client *c)
{
	char *ns = own_namespace(o, c);
	if (!ns)
		ns = xstrdup(DEFAULT_OPERATOR_NAMESPACE);
	struct state_seal *seal = NULL;
	struct kube_error err = {0};
	if (state_seal_load(c, ns, STATE_SEAL_SECRET_NAME, !o->dry_run, &seal, &err) == 0) {
		char id[STATE_SEAL_KEY_ID_LEN + 1];
		state_seal_key_id(seal, id);
		log_info("main", "state key: Secret %s/%s, key id %s", ns, STATE_SEAL_SECRET_NAME, id);
	} else if (o->dry_run && err.code == 404) {
		log_info("main", "dry run: %s; state is sealed with a key kept nowhere", err.message);
		seal = state_seal_new_ephemeral();
	} else {
		log_error("main",
			  "cannot read or fill the state key: %s (the operator needs get and update on Secret "
			  "%s/%s: see deploy/rbac/; the namespace is POD_NAMESPACE, the kubeconfig context's or "
			  "--namespace, else " DEFAULT_OPERATOR_NAMESPACE ")",
			  err.message, ns, STATE_SEAL_SECRET_NAME);
	}
	free(ns);
	return seal;
}

/* The leader's pass over the state of an earlier version, before its controllers start (state_seal_upgrade.h). */
static void upgrade_seals(void *ctx)
{
	const struct state_seal_upgrade *u = ctx;
	struct kube_error err = {0};
	if (state_seal_upgrade_run(u, &err) < 0)
		log_error("main", "sealing the state an earlier version left: %s (the operator needs update on Secret "
				  "%s/%s; states it did not seal stay untrusted until it can, at the next start)",
			  err.message, u->key_namespace, STATE_SEAL_SECRET_NAME);
}

/* The enabled controllers, each registering the caches it reads. -1 when one cannot be set up (logged). */
static int add_controllers(struct manager *m, const struct operator_options *o, struct kube_client *c,
			    struct event_recorder *events, struct observability *obs, const struct state_seal *seal)
{
	/* Before any controller makes the Pod cache: it keeps only what they read. */
	manager_set_transform(m, &KUBE_PODS, pod_fields_keep);
	struct controller_deps base = {
		.client = c, .manager = m, .events = events, .obs = obs, .seal = seal, .workers = o->workers};
	if (o->controllers & CONTROLLER_RESIZE) {
		struct resize_deps d = {.base = base,
					/* Namespace scope sends nothing outside its namespace. */
					.can_read_storage_classes = o->namespace == NULL,
					.copy_image = o->copy_image};
		manager_add_controller(m, resize_controller_new(&d));
	}
	if (o->controllers & CONTROLLER_SCALEDOWN)
		manager_add_controller(m, scaledown_controller_new(&base));
	bool with_clusters = (o->controllers & CONTROLLER_CLUSTER) && cluster_api_installed(c, o->namespace);
	if (with_clusters) {
		/* Nodes are cluster-scoped: a namespaced Role cannot grant them. */
		struct cluster_deps d = {.base = base, .can_read_nodes = o->namespace == NULL};
		manager_add_controller(m, cluster_controller_new(&d));
	}
	if ((o->controllers & CONTROLLER_RESIZE) && strcmp(o->autoresize_source, "none")) {
		/* Growth is a resize: it needs the resize controller. */
		char *own_ns = own_namespace(o, c);
		struct autoresize_deps d = {
			.base = base,
			.source = {.kind = (enum usage_source_kind)usage_source_kind_parse(o->autoresize_source),
				   .prometheus_url = o->prometheus_url,
				   .prometheus_token_file = o->prometheus_token_file,
				   .prometheus_ca_file = o->prometheus_ca_file,
				   .kubelet_ca_file = o->kubelet_ca_file,
				   .kubelet_insecure_tls = o->kubelet_insecure_tls,
				   /* The kubelets see this ServiceAccount's token, never ours. */
				   .kubelet_token_namespace = own_ns ? own_ns : DEFAULT_OPERATOR_NAMESPACE,
				   .kubelet_service_account = o->kubelet_service_account,
				   .cluster_scope = o->namespace == NULL},
			.interval_ms = o->autoresize_interval_ms,
			.recommend_only = o->autoresize_recommend_only,
			.cluster_scope = o->namespace == NULL,
			.with_clusters = with_clusters,
			.kubelet_port = o->kubelet_port};
		char *err = NULL;
		struct controller *ar = autoresize_controller_new(&d, &err);
		free(own_ns);
		if (!ar) {
			log_error("main", "autoresize: %s (--autoresize-source=none turns it off)", err);
			free(err);
			return -1;
		}
		manager_add_controller(m, ar);
	}
	return 0;
}

/* The admission webhook when --webhook-bind-address asks for it (NULL otherwise, or when it cannot serve). */
static struct webhook *start_webhook(const struct operator_options *o, struct kube_client *c, struct manager *m,
				     struct observability *obs, const struct state_seal *seal)
{
	char *ns = own_namespace(o, c);
	if (!ns)
		ns = xstrdup(DEFAULT_OPERATOR_NAMESPACE);
	struct webhook_options wo = {.bind_address = o->webhook_bind_address,
				     .namespace = ns,
				     .cert_names = (const char *const *)o->webhook_cert_names,
				     .cert_dir = o->webhook_cert_dir,
				     /* Namespace scope sends nothing outside its namespace. */
				     .read_storage_classes = o->namespace == NULL,
				     .dry_run = o->dry_run,
				     .seal = seal};
	char *err = NULL;
	struct webhook *w = webhook_start(&wo, c, m, observability_metrics(obs), &err);
	if (err)
		log_error("main", "--webhook-bind-address %s: %s", o->webhook_bind_address, err);
	free(err);
	free(ns);
	return w;
}

/* manager_add_ready_check's form of webhook_ready: a replica is Ready once its webhook can answer. */
static bool webhook_can_answer(void *ctx, const char **why)
{
	return webhook_ready(ctx, why);
}

int main(int argc, char **argv)
{
	struct operator_options opts;
	char *err = NULL;
	int status = 1;
	struct kube_config cfg = {0};
	struct kube_client *client = NULL;
	struct manager *manager = NULL;
	struct leader_elector *leader = NULL;
	struct kube_config lease_cfg = {0};
	struct kube_client *lease_client = NULL;
	struct observability *obs = NULL;
	struct event_recorder *events = NULL;
	char *lease_ns = NULL;
	char *identity = NULL;
	char *key_ns = NULL;
	struct state_seal *seal = NULL;
	struct webhook *webhook = NULL;

	/* `stateful-operator copy-script`: the copy Job's script, to run by hand. */
	if (argc == 2 && strcmp(argv[1], "copy-script") == 0) {
		char *script = copy_script_text();
		int written = fputs(script, stdout) >= 0 && fflush(stdout) == 0;
		free(script);
		return written ? 0 : 1;
	}

	/*
	 * Block the signals before any thread exists (threads inherit the
	 * mask: curl, libmicrohttpd and ours); one thread waits for them.
	 */
	sigset_t signals;
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	sigaddset(&signals, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);

	if (options_parse(argc, argv, &opts, &err) < 0) {
		fprintf(stderr, "stateful-operator: %s\n", err);
		status = 2;
		goto out;
	}
	if (opts.help) {
		fputs(options_usage(), stdout);
		status = 0;
		goto out;
	}
	if (opts.version) {
		printf("stateful-operator %s (commit %s)\n", sop_build_version, sop_build_commit);
		status = 0;
		goto out;
	}
	log_setup(opts.log_level, opts.log_format);
	/*
	 * glibc gives each thread that allocates its own arena; with a
	 * handful of mostly idle threads that is several MB of slack for
	 * nothing. One arena (each thread keeps its small-block cache) held
	 * 0.5 MB less than two at 1,000 StatefulSets x 3, at no measurable
	 * cost in the first pass (bench/fleet).
	 */
	mallopt(M_ARENA_MAX, 1);

	if (load_config(&opts, &cfg, &err) < 0) {
		log_error("main", "%s", err);
		goto out;
	}
	log_info("main", "stateful-operator %s (commit %s): API server %s%s%s%s", sop_build_version,
		 sop_build_commit, cfg.server,
		 cfg.context ? ", context " : "", cfg.context ? cfg.context : "",
		 opts.dry_run ? ", dry-run (nothing is changed)" : "");
	struct kube_client_options co = {.dry_run = opts.dry_run};
	client = kube_client_new(&cfg, &co, &err);
	if (!client) {
		log_error("main", "%s", err);
		goto out;
	}

	adopt_own_image(&opts, client);

	struct manager_options mo = {.namespace = opts.namespace};
	manager = manager_new(client, &mo);
	log_info("main", "watching %s", opts.namespace ? opts.namespace : "all namespaces");

	if (opts.leader_elect) {
		/* The Lease: --leader-election-namespace, else our own. */
		lease_ns = opts.leader_election_namespace ? xstrdup(opts.leader_election_namespace)
							  : own_namespace(&opts, client);
		if (!lease_ns) {
			log_error("main", "--leader-elect: cannot tell this operator's namespace; set "
					  "--leader-election-namespace (or POD_NAMESPACE)");
			goto out;
		}
		identity = leader_default_identity();
		/* Lease requests: one try each, within the retry period (see leader.h). */
		struct kube_client_options lco = {.max_retries = -1, .request_timeout_ms = 2000,
						  .dry_run = false};
		if (load_config(&opts, &lease_cfg, &err) < 0 ||
		    !(lease_client = kube_client_new(&lease_cfg, &lco, &err))) {
			log_error("main", "%s", err);
			goto out;
		}
		struct leader_options lo = {.lease_name = "stateful-operator",
					    .namespace = lease_ns,
					    .identity = identity,
					    .on_lost = lease_lost};
		leader = leader_new(lease_client, &lo);
		manager_set_leader(manager, leader);
	}
	obs = observability_start(opts.metrics_bind_address, opts.health_probe_bind_address, client,
				  manager, leader, &err);
	if (!obs) {
		log_error("main", "%s", err);
		goto out;
	}
	observability_build_info(obs, sop_build_version, sop_build_commit);
	events =
 event_recorder_new(client, "stateful-operator", identity ? identity : "stateful-operator");
	seal = load_state_seal(&opts, client);
	if (!seal)
		goto out;
	manager_report_refused(manager, events);
	key_ns = own_namespace(&opts, client);
	if (!key_ns)
		key_ns = xstrdup(DEFAULT_OPERATOR_NAMESPACE);
	struct state_seal_upgrade upgrade = {
		.client = client, .seal = seal, .key_namespace = key_ns, .namespace = opts.namespace};
	if (!opts.dry_run)
		manager_set_before_controllers(manager, upgrade_seals, &upgrade);
	if (add_controllers(manager, &opts, client, events, obs, seal) < 0)
		goto out;
	webhook = start_webhook(&opts, client, manager, obs, seal);
	if (!webhook && strcmp(opts.webhook_bind_address, "0"))
		goto out;
	if (webhook)
		manager_add_ready_check(manager, webhook_can_answer, webhook);

	struct signal_thread st = {.manager = manager, .set = signals};
	pthread_t sig_thread;
	if (pthread_create(&sig_thread, NULL, wait_signals, &st)) {
		log_error("main", "cannot start the signal thread");
		goto out;
	}
	status = manager_run(manager) < 0 ? 1 : 0;
	pthread_kill(sig_thread, SIGUSR1);
	pthread_join(sig_thread, NULL);
out:
	/*
	 * No scrape reads the caches while they go; then the manager: it stops
	 * the controllers that use the rest.
	 */
	observability_stop_serving(obs);
	webhook_stop(webhook);
	manager_free(manager);
	manager = NULL;
	event_recorder_free(events);
	observability_stop(obs);
	leader_free(leader);
	kube_client_free(lease_client);
	kube_config_release(&lease_cfg);
	manager_free(manager);
	kube_client_free(client);
	kube_config_release(&cfg);
	options_release(&opts);
	state_seal_free(seal);
	free(lease_ns);
	free(key_ns);
	free(identity);
	free(err);
	return status;
}
