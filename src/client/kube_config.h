/*
 * Where the API server is and how to authenticate to it: the resolved
 * result of a kubeconfig file (kubeconfig.c) or of the in-cluster service
 * account (in_cluster.c). The client (kube_client.c) consumes it.
 *
 * All strings are owned by the struct and freed by kube_config_release().
 * Inline data (certificate-authority-data, client-certificate-data,
 * client-key-data) is stored base64-decoded, as PEM bytes.
 */
#ifndef SOP_CLIENT_KUBE_CONFIG_H
#define SOP_CLIENT_KUBE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct kube_exec_config {
	char *command;              /* resolved as given; PATH lookup at run time */
	char **args;                /* nargs items */
	size_t nargs;
	char **env;                 /* "NAME=VALUE" items added to the environment */
	size_t nenv;
	char *api_version;          /* client.authentication.k8s.io/v1 or v1beta1 */
	bool provide_cluster_info;
};

struct kube_blob {
	char *data;                 /* NULL when unset; NUL-terminated for convenience */
	size_t len;
};

struct kube_config {
	char *server;               /* "https://host:port", no trailing slash */
	char *tls_server_name;      /* optional SNI / verification name */
	bool insecure_skip_tls_verify;
	char *ca_file;
	struct kube_blob ca_data;
	char *cert_file;
	struct kube_blob cert_data;
	char *key_file;
	struct kube_blob key_data;
	char *token;                /* static bearer token */
	char *token_file;           /* bearer token re-read from this file (at least every minute) */
	struct kube_exec_config *exec; /* exec credential plugin, or NULL */
	char *namespace;            /* the context's namespace (or in-cluster namespace); may be NULL */
	char *context;              /* name of the context used; NULL in-cluster */
	/* Impersonation (the user's as, as-uid, as-groups, or --as...): sent as Impersonate-* headers. */
	char *impersonate_user;
	char *impersonate_uid;
	char **impersonate_groups;  /* nimpersonate_groups items */
	size_t nimpersonate_groups;
};

/*
 * What kubectl's global flags change in a kubeconfig, each NULL (or -1)
 * when not given; borrowed. cluster and user pick other entries than the
 * context names; the rest replace fields of the result: a token replaces
 * every credential of the user (client certificate, token file, exec
 * plugin), a client certificate and key replace them too, a certificate
 * authority replaces the cluster's. With server given, no kubeconfig file
 * is needed (kubectl --server --token).
 */
struct kube_overrides {
	const char *context, *cluster, *user;
	const char *server, *tls_server_name, *certificate_authority;
	int insecure_skip_tls_verify; /* -1: as the kubeconfig says; 0 or 1 */
	const char *client_certificate, *client_key, *token;
	const char *as, *as_uid;
	const char *const *as_groups; /* nas_groups items */
	size_t nas_groups;
};

#define KUBE_OVERRIDES_INIT {.insecure_skip_tls_verify = -1}

void kube_config_release(struct kube_config *cfg);

/*
 * url with any userinfo ("user:password@") replaced by "***@", for
 * messages and logs. New string.
 */
char *kube_url_redact(const char *url);

/*
 * Loads a kubeconfig. path NULL means $KUBECONFIG (a colon-separated list,
 * merged first-wins like kubectl) or else ~/.kube/config. context NULL
 * means current-context. Relative file paths are resolved against the
 * directory of the file that names them. On failure returns -1 and sets
 * *err to a new message that names the file and the field to fix.
 */
int kubeconfig_load(const char *path, const char *context, struct kube_config *out, char **err)
	__attribute__((warn_unused_result));

/* Parses kubeconfig text; base_dir resolves relative paths. Same contract. */
int kubeconfig_parse(const char *text, size_t len, const char *base_dir, const char *context,
		     struct kube_config *out, char **err) __attribute__((warn_unused_result));

/* kubeconfig_load and kubeconfig_parse with kubectl's overrides (o may be NULL). Same contract. */
int kubeconfig_load_with(const char *path, const struct kube_overrides *o, struct kube_config *out, char **err)
	__attribute__((warn_unused_result));
int kubeconfig_parse_with(const char *text, size_t len, const char *base_dir, const struct kube_overrides *o,
			  struct kube_config *out, char **err) __attribute__((warn_unused_result));

/*
 * A server URL as kubectl takes it (https:// or http://, or host:port for
 * https), without userinfo, trailing slashes dropped: 0 and *out a new
 * string, or -1 and *why a new message that quotes it redacted.
 */
int kube_server_url(const char *raw, char **out, char **why) __attribute__((warn_unused_result));

/*
 * In-cluster config from KUBERNETES_SERVICE_HOST/PORT and the service
 * account files under root (NULL = /var/run/secrets/kubernetes.io/serviceaccount).
 * The token is given as token_file so the client re-reads it.
 */
int kube_config_in_cluster(const char *root, struct kube_config *out, char **err)
	__attribute__((warn_unused_result));

/* What an exec credential plugin returned (ExecCredential status). */
struct kube_exec_credential {
	char *token;
	struct kube_blob cert_data;
	struct kube_blob key_data;
	long long expires_at;       /* unix seconds; 0 = no expiry given */
};

void kube_exec_credential_release(struct kube_exec_credential *cred);

/*
 * Parses a plugin's stdout (buf, len bytes; borrowed) into out (zeroed
 * first by the caller): an ExecCredential of exec->api_version with a
 * token, or a client certificate and key, or both. On failure returns -1
 * and *err is a new message that never quotes the output (it may hold a
 * secret); the caller then releases out.
 */
int kube_exec_credential_parse(const struct kube_exec_config *exec, const char *buf, size_t len,
			       struct kube_exec_credential *out, char **err)
	__attribute__((warn_unused_result));

/*
 * A plugin may print this much on stdout: an ExecCredential is a token or
 * a certificate and key, a few KiB; more is a broken or hostile plugin,
 * which is killed rather than allowed to fill the operator's memory.
 */
#define KUBE_EXEC_OUTPUT_MAX (1024u * 1024u)
/*
 * A plugin still running after this is killed with its process group.
 * Cloud plugins take a few seconds, more on a cold start that fetches a
 * token from an identity service; a hung one must not hold the callers
 * that wait for a credential forever.
 */
#define KUBE_EXEC_TIMEOUT_MS 60000L

/*
 * Runs the plugin (no shell; stdin closed, stderr passed through) with
 * KUBERNETES_EXEC_INFO set, and parses its ExecCredential. server is
 * passed as cluster info when provide_cluster_info is set. Refused, the
 * plugin and its process group killed, past KUBE_EXEC_OUTPUT_MAX or
 * KUBE_EXEC_TIMEOUT_MS.
 */
int kube_exec_credential_get(const struct kube_exec_config *exec, const char *server,
			     struct kube_exec_credential *out, char **err)
	__attribute__((warn_unused_result));

/* kube_exec_credential_get with another time limit (tests use a short one). */
int kube_exec_credential_run(const struct kube_exec_config *exec, const char *server, long timeout_ms,
			     struct kube_exec_credential *out, char **err)
	__attribute__((warn_unused_result));

#endif
