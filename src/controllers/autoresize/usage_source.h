/*
 * Where the usage of volumes comes from: the kubelets' stats summary, or
 * a Prometheus server. One poll asks each node once (or Prometheus once)
 * and gives a table of claim -> usage; never a request per claim.
 *
 * Sources:
 *  - kubelet: GET https://<node InternalIP>:<kubelet port>/stats/summary
 *    with a token of its own ServiceAccount (usage_token.h), never the
 *    operator's credentials: a node writes the address it is asked at.
 *    The kubelet authorizes nodes/stats. Cluster scope only. The serving
 *    certificate is checked against --kubelet-ca-file, else the API
 *    server's CA; --kubelet-insecure-tls skips the check.
 *  - kubelet-proxy: GET /api/v1/nodes/<node>/proxy/stats/summary through
 *    the API server: needs nodes/proxy, which also allows exec into any
 *    pod on the node (see the README).
 *  - prometheus: one instant query of the kubelet_volume_stats_* series
 *    at --prometheus-url; a bearer token or a password only over https.
 *
 * Threads: a source is used by one thread at a time.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_USAGE_SOURCE_H
#define SOP_CONTROLLERS_AUTORESIZE_USAGE_SOURCE_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "controllers/autoresize/autoresize_policy.h"

enum usage_source_kind { USAGE_SOURCE_NONE, USAGE_SOURCE_KUBELET, USAGE_SOURCE_KUBELET_PROXY, USAGE_SOURCE_PROMETHEUS };

struct usage_source_options {
	enum usage_source_kind kind;
	const char *prometheus_url;   /* prometheus: base URL, e.g. http://prometheus.monitoring:9090 */
	const char *prometheus_token_file; /* prometheus: bearer token file, or NULL; needs an https:// URL */
	const char *prometheus_ca_file; /* prometheus: CA of its serving certificate, or NULL: the system's CAs */
	const char *kubelet_ca_file;  /* kubelet: CA of the kubelets' serving certificates, or NULL */
	bool kubelet_insecure_tls;
	/* kubelet: the ServiceAccount whose token the kubelets see (nodes/stats only). */
	const char *kubelet_token_namespace;
	const char *kubelet_service_account;
	bool cluster_scope;           /* kubelet: refused without (namespace scope has no kubelet source) */
	long timeout_ms;              /* per request; 0: 10 s */
};

/* "kubelet" -> USAGE_SOURCE_KUBELET ...; -1 when unknown. */
int usage_source_kind_parse(const char *text);
const char *usage_source_kind_name(enum usage_source_kind k);

struct usage_source;

/* client borrowed (the API server, its credentials and CA); must outlive the source. NULL + *err on bad options. */
struct usage_source *usage_source_new(struct kube_client *client, const struct usage_source_options *o, char **err);
void usage_source_free(struct usage_source *s);

/*
 * One node to ask (kubelet sources): its name, the InternalIP (or other
 * address) and the kubelet's port from status.daemonEndpoints.
 */
struct usage_node {
	const char *name;
	const char *address;
	int port;
};

/*
 * Which node may speak for which claim (usage_mounts.c). A node writes
 * its own stats summary, and could name any claim in it: a volume's
 * figures count only from a node where the cache shows a pod, in the
 * claim's namespace, that mounts the claim, and only under that pod's
 * name. mounts: "namespace/claim" -> {"<node>": {"<pod>": true}}.
 *
 * usage_mounts_add_pod adds what pod (borrowed, from the cache) mounts
 * (spec.volumes[].persistentVolumeClaim.claimName) on its node
 * (spec.nodeName); a pod without a node adds nothing.
 */
void usage_mounts_add_pod(json_t *mounts, const json_t *pod);

/*
 * Fills table (a JSON object, "namespace/claim" -> usage object, see
 * usage_from_json) with what the nodes (kubelet sources; ignored by
 * prometheus) report of the claims in mounts (borrowed; above), each
 * from its own node only. Returns the number of requests sent. A node or
 * the server that fails adds to *errors (a JSON array of strings, one
 * per failure, naming the node or URL and the cause: "node n1: GET
 * .../stats/summary: 403 Forbidden: ..."); the others still count. So
 * does a node that reports claims mounted, per mounts, on other nodes
 * only: its figures of those are not used.
 */
int usage_source_poll(struct usage_source *s, const struct usage_node *nodes, int nnodes, const json_t *mounts,
		      json_t *table, json_t *errors);

/*
 * Pure parsers (unit tested), each adding "namespace/claim" -> usage object to table; -1 + *why (new) on
 * junk. The summary is node's (the node asked, not the name it gives itself): of its volumes, only those
 * mounts lets it report count; it returns how many it reported of claims that mounts puts on other
 * nodes only (ignored). Prometheus: 0.
 */
int usage_parse_summary(const char *body, size_t len, const char *node, const json_t *mounts, json_t *table,
			char **why);
int usage_parse_prometheus(const char *body, size_t len, json_t *table, char **why);

/* A usage object: {"capacity":..,"used":..,"available":..,"inodes":..,"inodesUsed":..} (integers). */
json_t *usage_to_json(const struct volume_usage *u);
/* false when a field is missing or not an integer (inodes may be absent: 0). */
bool usage_from_json(const json_t *obj, struct volume_usage *u);

#endif
