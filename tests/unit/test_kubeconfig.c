/*
 * Unit tests for kubeconfig.c and in_cluster.c: every auth form, context
 * selection, path resolution, KUBECONFIG merging, and one case per error
 * with the field path asserted in the message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/kube_config.h"
#include "util/strbuf.h"
#include "scratch_dir.h"
#include "util/xalloc.h"

#define CA_PEM "-----BEGIN CERTIFICATE-----\nQ0EgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnQ=\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN PRIVATE KEY-----\na2V5IGJ5dGVz\n-----END PRIVATE KEY-----\n"
/* base64 of the above: no padding, one '=', two '='. */
#define CA64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRWdZMlZ5ZEdsbWFXTmhkR1U9Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
#define CERT64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClkyeHBaVzUwSUdObGNuUT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
#define KEY64 "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCmEyVjVJR0o1ZEdWegotLS0tLUVORCBQUklWQVRFIEtFWS0tLS0tCg=="

static char *tmpdir; /* the test's scratch directory; removed at the end */

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* Writes content to tmpdir/rel (creating parent directories); returns the new full path. */
static char *write_file(const char *rel, const char *content, mode_t mode)
{
	return scratch_file_write(tmpdir, rel, content, mode);
}

static int group_setup(void **state)
{
	(void)state;
	tmpdir = scratch_dir_make("test_kubeconfig");
	if (!tmpdir)
		return -1;
	/* Files the static error cases name by relative path. */
	free(write_file("fixtures/cert.pem", CERT_PEM, 0600));
	free(write_file("fixtures/ca.pem", CA_PEM, 0600));
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	scratch_dir_remove(tmpdir);
	tmpdir = NULL;
	return 0;
}

/* Parses yaml with base dir tmpdir; the test fails with the message if it does not load. */
static void parse_ok(const char *yaml, const char *context, struct kube_config *cfg)
{
	char *err = NULL;
	int rc = kubeconfig_parse(yaml, strlen(yaml), tmpdir, context, cfg, &err);
	if (rc != 0)
		fail_msg("kubeconfig_parse failed: %s", err ? err : "(no message)");
	assert_null(err);
}

static void assert_zeroed(const struct kube_config *cfg)
{
	static const struct kube_config zero;
	assert_memory_equal(cfg, &zero, sizeof(zero));
}

/* Asserts that err exists and contains every needle (NULL-terminated list). */
static void assert_err_has(const char *err, const char *needle)
{
	if (!err)
		fail_msg("expected an error containing \"%s\", got none", needle);
	if (!strstr(err, needle))
		fail_msg("error \"%s\"\n  does not contain \"%s\"", err, needle);
}

static void assert_blob(const struct kube_blob *b, const char *want)
{
	assert_non_null(b->data);
	assert_int_equal(b->len, strlen(want));
	assert_memory_equal(b->data, want, b->len);
	assert_int_equal(b->data[b->len], '\0');
}

/* Saves and restores the environment variables a test changes. */
static const char *const env_names[] = {
	"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "POD_NAMESPACE",
};
#define NENV (sizeof(env_names) / sizeof(env_names[0]))
static char *env_saved[NENV];

static int env_setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < NENV; i++) {
		const char *v = getenv(env_names[i]);
		env_saved[i] = v ? xstrdup(v) : NULL;
		unsetenv(env_names[i]);
	}
	return 0;
}

static int env_teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < NENV; i++) {
		if (env_saved[i])
			setenv(env_names[i], env_saved[i], 1);
		else
			unsetenv(env_names[i]);
		FREE_AND_NULL(env_saved[i]);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Auth forms and selection                                            */
/* ------------------------------------------------------------------ */

static const char base_yaml[] =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: dev\n"
	"clusters:\n"
	"- name: c1\n"
	"  cluster:\n"
	"    server: https://10.0.0.1:6443/\n"
	"    certificate-authority-data: " CA64 "\n"
	"- name: c2\n"
	"  cluster:\n"
	"    server: https://prod.example.com\n"
	"    insecure-skip-tls-verify: true\n"
	"    tls-server-name: api.internal\n"
	"contexts:\n"
	"- name: dev\n"
	"  context:\n"
	"    cluster: c1\n"
	"    user: alice\n"
	"    namespace: team-a\n"
	"- name: prod\n"
	"  context: {cluster: c2, user: bob}\n"
	"users:\n"
	"- name: alice\n"
	"  user:\n"
	"    token: abc.def\n"
	"- name: bob\n"
	"  user:\n"
	"    client-certificate-data: " CERT64 "\n"
	"    client-key-data: " KEY64 "\n";

static void test_token_and_current_context(void **state)
{
	(void)state;
	struct kube_config cfg;
	parse_ok(base_yaml, NULL, &cfg);
	assert_string_equal(cfg.context, "dev");
	assert_string_equal(cfg.server, "https://10.0.0.1:6443");
	assert_string_equal(cfg.token, "abc.def");
	assert_string_equal(cfg.namespace, "team-a");
	assert_blob(&cfg.ca_data, CA_PEM);
	assert_null(cfg.ca_file);
	assert_false(cfg.insecure_skip_tls_verify);
	assert_null(cfg.tls_server_name);
	assert_null(cfg.cert_data.data);
	assert_null(cfg.key_data.data);
	assert_null(cfg.token_file);
	assert_null(cfg.exec);
	kube_config_release(&cfg);
	assert_zeroed(&cfg);
}

/* Parses base_yaml with kubectl's flags o; 0, or -1 with *err set. */
static int parse_with(const char *yaml, const struct kube_overrides *o, struct kube_config *cfg, char **err)
{
	*err = NULL;
	return kubeconfig_parse_with(yaml, strlen(yaml), tmpdir, o, cfg, err);
}

/* kubectl's global flags over the kubeconfig: other entries, replaced fields, impersonation. */
static void test_overrides(void **state)
{
	(void)state;
	struct kube_config cfg;
	char *err = NULL;

	/* --cluster and --user pick other entries than the context's; the context's namespace stays. */
	struct kube_overrides o = KUBE_OVERRIDES_INIT;
	o.cluster = "c2";
	o.user = "bob";
	assert_int_equal(parse_with(base_yaml, &o, &cfg, &err), 0);
	assert_string_equal(cfg.server, "https://prod.example.com");
	assert_blob(&cfg.cert_data, CERT_PEM);
	assert_null(cfg.token);
	assert_string_equal(cfg.namespace, "team-a");
	kube_config_release(&cfg);

	/* --token replaces every credential; --server and --certificate-authority the cluster's. */
	o = (struct kube_overrides)KUBE_OVERRIDES_INIT;
	o.context = "prod";
	o.token = "tok";
	o.server = "h.example:8443/";
	o.certificate_authority = "/etc/ca.crt";
	o.insecure_skip_tls_verify = 0;
	assert_int_equal(parse_with(base_yaml, &o, &cfg, &err), 0);
	assert_string_equal(cfg.token, "tok");
	assert_null(cfg.cert_data.data);
	assert_null(cfg.key_data.data);
	assert_string_equal(cfg.server, "https://h.example:8443");
	assert_string_equal(cfg.ca_file, "/etc/ca.crt");
	assert_false(cfg.insecure_skip_tls_verify);
	kube_config_release(&cfg);

	/* --client-certificate and --client-key replace a token; --insecure-skip-tls-verify drops the CA. */
	o = (struct kube_overrides)KUBE_OVERRIDES_INIT;
	o.client_certificate = "/c.pem";
	o.client_key = "/k.pem";
	o.insecure_skip_tls_verify = 1;
	assert_int_equal(parse_with(base_yaml, &o, &cfg, &err), 0);
	assert_null(cfg.token);
	assert_string_equal(cfg.cert_file, "/c.pem");
	assert_string_equal(cfg.key_file, "/k.pem");
	assert_true(cfg.insecure_skip_tls_verify);
	assert_null(cfg.ca_data.data);
	kube_config_release(&cfg);

	/* Impersonation from the kubeconfig, then replaced by the flags. */
	static const char imp_yaml[] = "current-context: x\n"
				       "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
				       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
				       "users: [{name: u, user: {token: t, as: admin, as-uid: '7', as-groups: [a, b]}}]\n";
	assert_int_equal(parse_with(imp_yaml, NULL, &cfg, &err), 0);
	assert_string_equal(cfg.impersonate_user, "admin");
	assert_string_equal(cfg.impersonate_uid, "7");
	assert_int_equal(cfg.nimpersonate_groups, 2);
	assert_string_equal(cfg.impersonate_groups[1], "b");
	kube_config_release(&cfg);
	const char *groups[] = {"viewers"};
	o = (struct kube_overrides)KUBE_OVERRIDES_INIT;
	o.as = "system:serviceaccount:shop:reader";
	o.as_groups = groups;
	o.nas_groups = 1;
	assert_int_equal(parse_with(imp_yaml, &o, &cfg, &err), 0);
	assert_string_equal(cfg.impersonate_user, "system:serviceaccount:shop:reader");
	assert_int_equal(cfg.nimpersonate_groups, 1);
	assert_string_equal(cfg.impersonate_groups[0], "viewers");
	kube_config_release(&cfg);

	/* Bad flags: refused, naming the flag, nothing kept. */
	static const struct {
		struct kube_overrides o;
		const char *want;
	} bad[] = {
		{{.insecure_skip_tls_verify = -1, .cluster = "nope"}, "cluster \"nope\" (from --cluster) is not in clusters"},
		{{.insecure_skip_tls_verify = -1, .user = "nope"}, "user \"nope\" (from --user) is not in users"},
		{{.insecure_skip_tls_verify = -1, .server = "ftp://h"}, "--server \"ftp://h\" is not an https://"},
		{{.insecure_skip_tls_verify = -1, .server = "https://u:s3cr3t@h"}, "carries a user name or password"},
		{{.insecure_skip_tls_verify = 1, .certificate_authority = "/ca"}, "both given; keep one"},
		{{.insecure_skip_tls_verify = -1, .client_certificate = "/c"}, "--client-certificate needs --client-key"},
		{{.insecure_skip_tls_verify = -1, .token = "a\r\nX-Evil: 1"}, "--token contains a line break"},
		{{.insecure_skip_tls_verify = -1, .as = "x\ny"}, "--as contains a line break"},
		{{.insecure_skip_tls_verify = -1, .as_uid = "1"}, "need --as"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&cfg, 0xA5, sizeof(cfg));
		assert_int_equal(parse_with(base_yaml, &bad[i].o, &cfg, &err), -1);
		assert_err_has(err, bad[i].want);
		assert_null(strstr(err, "s3cr3t"));
		assert_zeroed(&cfg);
		free(err);
	}
}

/* No kubeconfig at all, but --server: the flags are the configuration (kubectl --server --token). */
static void test_flags_without_kubeconfig(void **state)
{
	(void)state;
	struct kube_config cfg;
	char *err = NULL;
	setenv("KUBECONFIG", "/nonexistent/kubeconfig", 1);
	struct kube_overrides o = KUBE_OVERRIDES_INIT;
	o.server = "https://api.example:6443";
	o.token = "tok";
	assert_int_equal(kubeconfig_load_with(NULL, &o, &cfg, &err), 0);
	assert_string_equal(cfg.server, "https://api.example:6443");
	assert_string_equal(cfg.token, "tok");
	assert_null(cfg.context);
	kube_config_release(&cfg);
	o.context = "dev";
	assert_int_equal(kubeconfig_load_with(NULL, &o, &cfg, &err), -1);
	assert_err_has(err, "there is no kubeconfig");
	free(err);
	o.context = NULL;
	o.server = NULL;
	assert_int_equal(kubeconfig_load_with(NULL, &o, &cfg, &err), -1);
	assert_err_has(err, "none of the files in KUBECONFIG");
	free(err);
}

static void test_explicit_context_cert_data_insecure(void **state)
{
	(void)state;
	struct kube_config cfg;
	parse_ok(base_yaml, "prod", &cfg);
	assert_string_equal(cfg.context, "prod");
	assert_string_equal(cfg.server, "https://prod.example.com");
	assert_true(cfg.insecure_skip_tls_verify);
	assert_string_equal(cfg.tls_server_name, "api.internal");
	assert_null(cfg.ca_data.data);
	assert_blob(&cfg.cert_data, CERT_PEM);
	assert_blob(&cfg.key_data, KEY_PEM);
	assert_null(cfg.token);
	assert_null(cfg.namespace);
	kube_config_release(&cfg);
}

static void test_relative_files(void **state)
{
	(void)state;
	char *ca = write_file("rel/ca.crt", CA_PEM, 0600);
	char *crt = write_file("rel/client.crt", CERT_PEM, 0600);
	char *key = write_file("rel/client.key", KEY_PEM, 0600);
	char *tok = write_file("rel/token", "tok\n", 0600);
	char *yaml = xasprintf("current-context: x\n"
			       "clusters: [{name: c, cluster: {server: 'https://h:1', "
			       "certificate-authority: rel/ca.crt}}]\n"
			       "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
			       "users:\n"
			       "- name: u\n"
			       "  user:\n"
			       "    client-certificate: rel/client.crt\n"
			       "    client-key: %s\n" /* absolute: kept as is */
			       "    tokenFile: ./rel/token\n",
			       key);
	struct kube_config cfg;
	parse_ok(yaml, NULL, &cfg);
	assert_string_equal(cfg.ca_file, ca);
	assert_string_equal(cfg.cert_file, crt);
	assert_string_equal(cfg.key_file, key);
	char *want_tok = xasprintf("%s/./rel/token", tmpdir);
	assert_string_equal(cfg.token_file, want_tok);
	assert_null(cfg.token);
	assert_null(cfg.ca_data.data);
	kube_config_release(&cfg);
	free(want_tok);
	free(yaml);
	free(ca);
	free(crt);
	free(key);
	free(tok);
}

static void test_exec_config(void **state)
{
	(void)state;
	char *plugin = write_file("bin/plugin", "#!/bin/sh\nexit 0\n", 0700);
	const char *yaml =
		"current-context: x\n"
		"clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
		"contexts: [{name: x, context: {cluster: c, user: u}}, "
		"{name: y, context: {cluster: c, user: v}}]\n"
		"users:\n"
		"- name: u\n"
		"  user:\n"
		"    exec:\n"
		"      apiVersion: client.authentication.k8s.io/v1\n"
		"      command: kubectl-oidc_login\n"
		"      args: [get-token, --issuer, 'https://issuer', 8000]\n"
		"      env:\n"
		"      - {name: FOO, value: bar}\n"
		"      - {name: EMPTY}\n"
		"      provideClusterInfo: true\n"
		"      interactiveMode: IfAvailable\n"
		"      installHint: install it\n"
		"- name: v\n"
		"  user:\n"
		"    exec:\n"
		"      apiVersion: client.authentication.k8s.io/v1beta1\n"
		"      command: bin/plugin\n";
	struct kube_config cfg;
	parse_ok(yaml, NULL, &cfg);
	assert_non_null(cfg.exec);
	assert_string_equal(cfg.exec->command, "kubectl-oidc_login"); /* PATH lookup later */
	assert_int_equal(cfg.exec->nargs, 4);
	assert_string_equal(cfg.exec->args[0], "get-token");
	assert_string_equal(cfg.exec->args[1], "--issuer");
	assert_string_equal(cfg.exec->args[2], "https://issuer");
	assert_string_equal(cfg.exec->args[3], "8000");
	assert_int_equal(cfg.exec->nenv, 2);
	assert_string_equal(cfg.exec->env[0], "FOO=bar");
	assert_string_equal(cfg.exec->env[1], "EMPTY=");
	assert_string_equal(cfg.exec->api_version, "client.authentication.k8s.io/v1");
	assert_true(cfg.exec->provide_cluster_info);
	assert_null(cfg.token);
	kube_config_release(&cfg);

	parse_ok(yaml, "y", &cfg);
	assert_string_equal(cfg.exec->command, plugin); /* has a slash: relative to the file */
	assert_int_equal(cfg.exec->nargs, 0);
	assert_int_equal(cfg.exec->nenv, 0);
	assert_false(cfg.exec->provide_cluster_info);
	assert_string_equal(cfg.exec->api_version, "client.authentication.k8s.io/v1beta1");
	kube_config_release(&cfg);
	free(plugin);
}

static void test_anonymous_and_bare_server(void **state)
{
	(void)state;
	struct kube_config cfg;
	parse_ok("current-context: a\n"
		 "clusters: [{name: c, cluster: {server: '127.0.0.1:6443'}}]\n"
		 "contexts: [{name: a, context: {cluster: c}}]\n",
		 NULL, &cfg);
	assert_string_equal(cfg.server, "https://127.0.0.1:6443");
	assert_null(cfg.token);
	assert_null(cfg.token_file);
	assert_null(cfg.cert_file);
	assert_null(cfg.exec);
	kube_config_release(&cfg);

	parse_ok("current-context: a\n"
		 "clusters: [{name: c, cluster: {server: 'HTTP://h:8080/prefix//'}}]\n"
		 "contexts: [{name: a, context: {cluster: c}}]\n",
		 NULL, &cfg);
	assert_string_equal(cfg.server, "HTTP://h:8080/prefix");
	kube_config_release(&cfg);
}

static void test_base64_forms(void **state)
{
	(void)state;
	/* KEY64 without its padding, and split over lines by a folded scalar. */
	char *key_nopad = xstrndup(KEY64, strlen(KEY64) - 2);
	char *yaml = xasprintf("current-context: a\n"
			       "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
			       "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
			       "users:\n"
			       "- name: u\n"
			       "  user:\n"
			       "    client-key-data: %s\n"
			       "    client-certificate-data: >-\n"
			       "      %.40s\n"
			       "      %s\n",
			       key_nopad, CERT64, CERT64 + 40);
	struct kube_config cfg;
	parse_ok(yaml, NULL, &cfg);
	assert_blob(&cfg.key_data, KEY_PEM);
	assert_blob(&cfg.cert_data, CERT_PEM);
	kube_config_release(&cfg);
	free(yaml);
	free(key_nopad);
}

static void test_yaml_features(void **state)
{
	(void)state;
	struct kube_config cfg;
	/* JSON is YAML too. */
	parse_ok("{\"current-context\": \"j\", \"clusters\": [{\"name\": \"c\", \"cluster\": "
		 "{\"server\": \"https://json\"}}], \"contexts\": [{\"name\": \"j\", \"context\": "
		 "{\"cluster\": \"c\", \"user\": \"u\"}}], \"users\": [{\"name\": \"u\", \"user\": "
		 "{\"token\": \"t1\"}}]}",
		 NULL, &cfg);
	assert_string_equal(cfg.server, "https://json");
	assert_string_equal(cfg.token, "t1");
	kube_config_release(&cfg);

	/* Anchors, aliases, merge keys (explicit keys win), numeric names, a second document. */
	parse_ok("current-context: 1\n"
		 "clusters:\n"
		 "- name: 7\n"
		 "  cluster: &base\n"
		 "    server: https://base\n"
		 "    tls-server-name: base-name\n"
		 "- name: other\n"
		 "  cluster:\n"
		 "    <<: *base\n"
		 "    server: https://merged\n"
		 "contexts:\n"
		 "- name: 1\n"
		 "  context: {cluster: other, user: u, namespace: &ns \"007\"}\n"
		 "users:\n"
		 "- name: u\n"
		 "  user: {token: *ns}\n"
		 "---\n"
		 "ignored: [\n",
		 NULL, &cfg);
	assert_string_equal(cfg.context, "1");
	assert_string_equal(cfg.server, "https://merged");
	assert_string_equal(cfg.tls_server_name, "base-name");
	assert_string_equal(cfg.namespace, "007");
	assert_string_equal(cfg.token, "007");
	kube_config_release(&cfg);
}

static void test_release_is_safe(void **state)
{
	(void)state;
	struct kube_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	kube_config_release(&cfg);
	kube_config_release(&cfg);
	assert_zeroed(&cfg);
	kube_config_release(NULL);

	parse_ok(base_yaml, "prod", &cfg);
	kube_config_release(&cfg);
	assert_zeroed(&cfg);
	kube_config_release(&cfg);
}

/* ------------------------------------------------------------------ */
/* Errors: one case per message                                        */
/* ------------------------------------------------------------------ */

struct err_case {
	const char *name;
	const char *yaml;
	const char *context;
	const char *want;       /* substring of the message */
};

#define CL_OK "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
#define CTX_U "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
#define USER(body) "users:\n- name: u\n  user:\n" body

static const struct err_case err_cases[] = {
	{"user not in users",
	 CL_OK "current-context: dev\ncontexts: [{name: dev, context: {cluster: c, user: bob}}]\n"
	       "users: [{name: alice, user: {token: t}}]\n",
	 NULL, "kubeconfig: context \"dev\" names user \"bob\", which is not in users"},
	{"cluster not in clusters",
	 CL_OK "current-context: dev\ncontexts: [{name: dev, context: {cluster: nope}}]\n", NULL,
	 "context \"dev\" names cluster \"nope\", which is not in clusters"},
	{"server missing",
	 CTX_U "clusters: [{name: c, cluster: {insecure-skip-tls-verify: true}}]\n"
	       USER("    token: t\n"),
	 NULL, "clusters[0].cluster.server is missing"},
	{"server empty cluster",
	 CTX_U "clusters: [{name: c}]\n" USER("    token: t\n"), NULL,
	 "clusters[0].cluster.server is missing"},
	{"key data not base64",
	 CL_OK "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
	       "users:\n- name: other\n  user: {token: t}\n- name: u\n  user:\n"
	       "    client-certificate-data: " CERT64 "\n"
	       "    client-key-data: '-----BEGIN PRIVATE KEY-----'\n",
	 NULL, "users[1].user.client-key-data is not valid base64"},
	{"base64 dangling char",
	 CL_OK CTX_U USER("    client-certificate-data: " CERT64 "\n    client-key-data: QUJDR\n"),
	 NULL, "users[0].user.client-key-data is not valid base64"},
	{"base64 data after padding",
	 CL_OK CTX_U USER("    client-certificate-data: " CERT64 "\n    client-key-data: QQ==QUFB\n"),
	 NULL, "users[0].user.client-key-data is not valid base64"},
	{"ca data not pem",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://h', "
	       "certificate-authority-data: aGVsbG8=}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster.certificate-authority-data is valid base64 but does not decode to PEM"},
	{"no current context", CL_OK "contexts: [{name: x, context: {cluster: c}}]\n", NULL,
	 "kubeconfig: current-context is not set and no --context was given"},
	{"empty document", "", NULL, "current-context is not set and no --context was given"},
	{"context flag unknown", base_yaml, "nope",
	 "context \"nope\" (from --context) is not in contexts"},
	{"current context unknown", CL_OK "current-context: ghost\n", NULL,
	 "current-context \"ghost\" is not in contexts"},
	{"context without cluster",
	 "current-context: x\ncontexts: [{name: x, context: {user: u}}]\n", NULL,
	 "contexts[0].context.cluster is missing"},
	{"cert without key",
	 CL_OK CTX_U USER("    client-certificate: fixtures/cert.pem\n"), NULL,
	 "users[0].user.client-certificate is set but client-key is not"},
	{"cert data without key",
	 CL_OK CTX_U USER("    client-certificate-data: " CERT64 "\n"), NULL,
	 "users[0].user.client-certificate-data is set but client-key is not"},
	{"key without cert",
	 CL_OK CTX_U USER("    client-key-data: " KEY64 "\n"), NULL,
	 "users[0].user.client-key-data is set but client-certificate is not"},
	{"cert file and data",
	 CL_OK CTX_U USER("    client-certificate: fixtures/cert.pem\n"
			  "    client-certificate-data: " CERT64 "\n"
			  "    client-key-data: " KEY64 "\n"),
	 NULL, "users[0].user: client-certificate and client-certificate-data are both set"},
	{"cert data with key file",
	 CL_OK CTX_U USER("    client-certificate-data: " CERT64 "\n"
			  "    client-key: fixtures/cert.pem\n"),
	 NULL, "users[0].user: client-certificate-data and client-key mix a file with inline data"},
	{"auth provider",
	 CL_OK CTX_U USER("    auth-provider:\n      name: gcp\n"), NULL,
	 "users[0].user.auth-provider is not supported"},
	{"username", CL_OK CTX_U USER("    username: admin\n"), NULL,
	 "users[0].user.username/password (basic authentication) is not supported"},
	{"password", CL_OK CTX_U USER("    password: secret\n"), NULL,
	 "users[0].user.username/password (basic authentication) is not supported"},
	{"impersonated extra fields", CL_OK CTX_U USER("    token: t\n    as: admin\n    as-user-extra: {a: [b]}\n"), NULL,
	 "users[0].user.as-user-extra (impersonated extra fields) is not supported"},
	{"impersonated user with a line break", CL_OK CTX_U USER("    token: t\n    as: \"ad\\nmin\"\n"), NULL,
	 "users[0].user.as contains a line break"},
	{"impersonated groups not a list", CL_OK CTX_U USER("    token: t\n    as: a\n    as-groups: dev\n"), NULL,
	 "users[0].user.as-groups is not a list"},
	{"token with line break", CL_OK CTX_U USER("    token: \"abc\\ndef\"\n"), NULL,
	 "users[0].user.token contains a line break"},
	{"token file unreadable", CL_OK CTX_U USER("    tokenFile: no/such/token\n"), NULL,
	 "users[0].user.tokenFile: cannot read "},
	{"ca file unreadable",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://h', "
	       "certificate-authority: /nonexistent/ca.crt}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster.certificate-authority: cannot read /nonexistent/ca.crt"},
	{"ca file and data",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://h', certificate-authority: "
	       "fixtures/ca.pem, certificate-authority-data: " CA64 "}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster: certificate-authority and certificate-authority-data are both set"},
	{"insecure with ca",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://h', insecure-skip-tls-verify: true, "
	       "certificate-authority-data: " CA64 "}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster: insecure-skip-tls-verify is set together with"},
	{"insecure not bool",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://h', insecure-skip-tls-verify: "
	       "'yes'}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster.insecure-skip-tls-verify must be true or false"},
	{"server bad scheme",
	 CTX_U "clusters: [{name: c, cluster: {server: 'ftp://h'}}]\n" USER("    token: t\n"), NULL,
	 "clusters[0].cluster.server \"ftp://h\" is not an https://"},
	{"server no host",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https:///x'}}]\n" USER("    token: t\n"), NULL,
	 "clusters[0].cluster.server \"https:///x\" has no host"},
	{"server with userinfo",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://admin:s3cr3t@h:6443/'}}]\n"
	       USER("    token: t\n"), NULL,
	 "clusters[0].cluster.server \"https://***@h:6443/\" carries a user name or password"},
	{"bare server with userinfo",
	 CTX_U "clusters: [{name: c, cluster: {server: 'admin:s3cr3t@h:6443'}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster.server \"***@h:6443\" carries a user name or password"},
	{"server bad scheme with userinfo",
	 CTX_U "clusters: [{name: c, cluster: {server: 'ftp://admin:s3cr3t@h'}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster.server \"ftp://***@h\" is not an https://"},
	{"server no host with userinfo",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://admin:s3cr3t@'}}]\n" USER("    token: t\n"),
	 NULL, "clusters[0].cluster.server \"https://***@\" carries a user name or password"},
	{"server is a list",
	 CTX_U "clusters: [{name: c, cluster: {server: [a]}}]\n" USER("    token: t\n"), NULL,
	 "clusters[0].cluster.server is not a string"},
	{"proxy url",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://h', proxy-url: 'http://p'}}]\n"
	       USER("    token: t\n"),
	 NULL, "clusters[0].cluster.proxy-url is not supported"},
	{"namespace is a float",
	 CL_OK "current-context: x\ncontexts: [{name: x, context: {cluster: c, namespace: 1.5}}]\n",
	 NULL, "contexts[0].context.namespace is a number; quote it"},
	{"exec without command",
	 CL_OK CTX_U USER("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"), NULL,
	 "users[0].user.exec.command is missing"},
	{"exec without apiVersion", CL_OK CTX_U USER("    exec:\n      command: x\n"), NULL,
	 "users[0].user.exec.apiVersion is missing"},
	{"exec old apiVersion",
	 CL_OK CTX_U USER("    exec:\n      command: x\n"
			  "      apiVersion: client.authentication.k8s.io/v1alpha1\n"),
	 NULL, "users[0].user.exec.apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported"},
	{"exec command path missing",
	 CL_OK CTX_U USER("    exec:\n      command: ./no/such/plugin\n"
			  "      apiVersion: client.authentication.k8s.io/v1\n"),
	 NULL, "users[0].user.exec.command: cannot run "},
	{"exec args not list",
	 CL_OK CTX_U USER("    exec:\n      command: x\n      args: a b\n"
			  "      apiVersion: client.authentication.k8s.io/v1\n"),
	 NULL, "users[0].user.exec.args is not a list"},
	{"exec env without name",
	 CL_OK CTX_U USER("    exec:\n      command: x\n      env: [{value: v}]\n"
			  "      apiVersion: client.authentication.k8s.io/v1\n"),
	 NULL, "users[0].user.exec.env[0].name is missing"},
	{"exec interactive always",
	 CL_OK CTX_U USER("    exec:\n      command: x\n      interactiveMode: Always\n"
			  "      apiVersion: client.authentication.k8s.io/v1\n"),
	 NULL, "users[0].user.exec.interactiveMode is Always"},
	{"exec interactive bogus",
	 CL_OK CTX_U USER("    exec:\n      command: x\n      interactiveMode: Sometimes\n"
			  "      apiVersion: client.authentication.k8s.io/v1\n"),
	 NULL, "users[0].user.exec.interactiveMode \"Sometimes\" is not"},
	{"yaml syntax", "a: b\nc: d: e\n", NULL,
	 "YAML syntax error at line 2, column 5: mapping values are not allowed"},
	{"yaml unclosed flow", "clusters: [\n  {name: a}\n", NULL, "YAML syntax error at line 3"},
	{"yaml duplicate key",
	 CTX_U "clusters: [{name: c, cluster: {server: 'https://a', server: 'https://b'}}]\n", NULL,
	 "YAML error at line 3, column 53: duplicate key \"server\""},
	{"yaml unknown alias", "current-context: *nope\n", NULL,
	 "YAML error at line 1, column 18: alias *nope names no anchor"},
	{"not a mapping", "- a\n- b\n", NULL, "the document is not a mapping"},
	{"wrong kind", "kind: Pod\n", NULL, "kind is not \"Config\""},
	{"clusters not list", "clusters: {name: c}\n", NULL, "kubeconfig: clusters is not a list"},
	{"entry not mapping", "users: [u]\n", NULL, "users[0] is not a mapping"},
	{"name missing", "clusters: [{name: a}, {cluster: {server: 'https://h'}}]\n", NULL,
	 "clusters[1].name is missing"},
	{"body not mapping", "contexts: [{name: a, context: [x]}]\n", NULL,
	 "contexts[0].context is not a mapping"},
	{"duplicate name", "users: [{name: alice}, {name: alice}]\n", NULL,
	 "users[1].name \"alice\" is also the name of users[0]"},
};

static void test_error_case(void **state)
{
	const struct err_case *c = *state;
	struct kube_config cfg;
	char *err = NULL;
	memset(&cfg, 0xA5, sizeof(cfg)); /* out is overwritten, never read */
	int rc = kubeconfig_parse(c->yaml, strlen(c->yaml), tmpdir, c->context, &cfg, &err);
	assert_int_equal(rc, -1);
	if (getenv("TEST_VERBOSE"))
		print_message("%s\n", err);
	assert_err_has(err, c->want);
	assert_null(strstr(err, "s3cr3t")); /* secrets, passwords in URLs too, are never quoted */
	assert_int_equal(strncmp(err, "kubeconfig: ", 12), 0);
	assert_zeroed(&cfg);
	free(err);
}

/* "<<" merge keys cannot make the work grow far beyond the input. */
static void test_yaml_merge_budget(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	assert_int_equal(strbuf_addstr(&sb, "big: &big {"), 0);
	for (int i = 0; i < 500; i++)
		assert_int_equal(strbuf_addf(&sb, "%sk%d: %d", i ? ", " : "", i, i), 0);
	assert_int_equal(strbuf_addstr(&sb, "}\nm: {<<: [*big"), 0);
	for (int i = 0; i < 250; i++)
		assert_int_equal(strbuf_addstr(&sb, ", *big"), 0);
	assert_int_equal(strbuf_addstr(&sb, "]}\n"), 0);
	struct kube_config cfg;
	char *err = NULL;
	assert_int_equal(kubeconfig_parse(sb.buf, sb.len, NULL, NULL, &cfg, &err), -1);
	assert_err_has(err, "YAML error at line 2, column");
	assert_err_has(err, "merge keys copy more than 100000 keys");
	free(err);
	strbuf_release(&sb);
}

/* Secrets never appear in messages. */
static void test_error_hides_secrets(void **state)
{
	(void)state;
	const char *yaml = CL_OK CTX_U USER("    token: \"s3cr3t\\x01more\"\n");
	struct kube_config cfg;
	char *err = NULL;
	int rc = kubeconfig_parse(yaml, strlen(yaml), tmpdir, NULL, &cfg, &err);
	assert_int_equal(rc, -1);
	assert_err_has(err, "users[0].user.token");
	assert_null(strstr(err, "s3cr3t"));
	free(err);
}

static void test_url_redact(void **state)
{
	(void)state;
	static const char *cases[][2] = {
		{"https://admin:pw@h:6443", "https://***@h:6443"},
		{"https://a@b@h/p", "https://***@h/p"},
		{"https://h:6443/path@x?q=a@b#f@g", "https://h:6443/path@x?q=a@b#f@g"},
		{"user:pw@h:6443", "***@h:6443"},
		{"https://h", "https://h"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *r = kube_url_redact(cases[i][0]);
		assert_string_equal(r, cases[i][1]);
		free(r);
	}
}

/* ------------------------------------------------------------------ */
/* Files, KUBECONFIG, ~/.kube/config                                   */
/* ------------------------------------------------------------------ */

static void test_load_file_relative(void **state)
{
	(void)state;
	char *ca = write_file("load/certs/ca.crt", CA_PEM, 0600);
	char *cfgpath = write_file("load/config",
				   "current-context: a\n"
				   "clusters: [{name: c, cluster: {server: 'https://h', "
				   "certificate-authority: certs/ca.crt}}]\n"
				   "contexts: [{name: a, context: {cluster: c, namespace: ns1}}]\n",
				   0600);
	setenv("KUBECONFIG", "/nonexistent/ignored-when-path-given", 1);
	struct kube_config cfg;
	char *err = NULL;
	int rc = kubeconfig_load(cfgpath, NULL, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cfg.ca_file, ca);
	assert_string_equal(cfg.namespace, "ns1");
	kube_config_release(&cfg);
	free(ca);
	free(cfgpath);
}

static void test_load_errors_name_the_file(void **state)
{
	(void)state;
	char *p = write_file("bad/config", CTX_U "clusters: [{name: c, cluster: {}}]\n", 0600);
	struct kube_config cfg;
	char *err = NULL;
	assert_int_equal(kubeconfig_load(p, NULL, &cfg, &err), -1);
	char *want = xasprintf("kubeconfig %s: clusters[0].cluster.server is missing", p);
	assert_err_has(err, want);
	assert_zeroed(&cfg);
	free(want);
	FREE_AND_NULL(err);

	char *syn = write_file("bad/syntax", "clusters:\n  - name: a\n   bad\n", 0600);
	assert_int_equal(kubeconfig_load(syn, NULL, &cfg, &err), -1);
	want = xasprintf("kubeconfig %s: YAML syntax error at line 3, column", syn);
	assert_err_has(err, want);
	free(want);
	FREE_AND_NULL(err);

	char *missing = xasprintf("%s/bad/missing", tmpdir);
	assert_int_equal(kubeconfig_load(missing, NULL, &cfg, &err), -1);
	want = xasprintf("kubeconfig %s: cannot read it: No such file or directory", missing);
	assert_err_has(err, want);
	free(want);
	FREE_AND_NULL(err);

	assert_int_equal(kubeconfig_load(tmpdir, NULL, &cfg, &err), -1);
	assert_err_has(err, "is a directory");
	FREE_AND_NULL(err);
	free(missing);
	free(syn);
	free(p);
}

/* A file of exactly 16 MiB is read; one byte more is refused, naming the file and the cap. */
static void test_load_size_cap(void **state)
{
	(void)state;
	static const char head[] = "current-context: a\n"
				   "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
				   "contexts: [{name: a, context: {cluster: c}}]\n";
	size_t cap = 16u << 20;
	/* A comment to the end of the file. */
	char *at_cap = scratch_file_sized(tmpdir, "size/exact", head, '#', cap);
	char *over = scratch_file_sized(tmpdir, "size/over", head, '#', cap + 1);

	struct kube_config cfg;
	char *err = NULL;
	if (kubeconfig_load(at_cap, NULL, &cfg, &err) != 0)
		fail_msg("a 16 MiB kubeconfig: %s", err);
	assert_string_equal(cfg.server, "https://h");
	kube_config_release(&cfg);

	assert_int_equal(kubeconfig_load(over, NULL, &cfg, &err), -1);
	char *want = xasprintf("kubeconfig %s: is larger than 16 MiB", over);
	assert_string_equal(err, want);
	assert_zeroed(&cfg);
	free(want);
	free(err);
	free(at_cap);
	free(over);
}

/* A billion-laughs kubeconfig is refused at once, the message naming the file and the limit. */
static void test_load_alias_bomb(void **state)
{
	(void)state;
	struct strbuf sb = STRBUF_INIT;
	assert_int_equal(strbuf_addstr(&sb, "current-context: a\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"), 0);
	for (int i = 1; i < 10; i++) {
		assert_int_equal(strbuf_addf(&sb, "x%d: &x%d [", i, i), 0);
		for (int j = 0; j < 10; j++)
			assert_int_equal(strbuf_addf(&sb, "%s*x%d", j ? ", " : "", i - 1), 0);
		assert_int_equal(strbuf_addstr(&sb, "]\n"), 0);
	}
	char *p = write_file("bomb/config", strbuf_str(&sb), 0600);
	strbuf_release(&sb);
	struct kube_config cfg;
	char *err = NULL;
	assert_int_equal(kubeconfig_load(p, NULL, &cfg, &err), -1);
	char *want = xasprintf("kubeconfig %s: YAML error at line ", p);
	assert_err_has(err, want);
	assert_err_has(err, ": too large: more than 4000000 keys and values once aliases are expanded");
	assert_zeroed(&cfg);
	free(want);
	free(err);
	free(p);
}

static void test_kubeconfig_merge(void **state)
{
	(void)state;
	char *a = write_file("merge/a/config",
			     "current-context: dev\n"
			     "clusters: [{name: c1, cluster: {server: 'https://from-a'}}]\n"
			     "contexts: [{name: dev, context: {cluster: c1, user: bob, namespace: a-ns}}]\n"
			     "users: [{name: alice, user: {tokenFile: tok}}]\n",
			     0600);
	char *atok = write_file("merge/a/tok", "a\n", 0600);
	char *b = write_file("merge/b/config",
			     "current-context: onlyb\n"
			     "clusters:\n"
			     "- {name: c1, cluster: {server: 'https://from-b'}}\n"
			     "- {name: c2, cluster: {server: 'https://c2-from-b'}}\n"
			     "contexts:\n"
			     "- {name: dev, context: {cluster: c2, user: alice, namespace: b-ns}}\n"
			     "- {name: onlyb, context: {cluster: c2, user: alice}}\n"
			     "users:\n"
			     "- {name: bob, user: {client-certificate: bob.crt, client-key: bob.key}}\n"
			     "- {name: alice, user: {token: from-b}}\n",
			     0600);
	char *bcrt = write_file("merge/b/bob.crt", CERT_PEM, 0600);
	char *bkey = write_file("merge/b/bob.key", KEY_PEM, 0600);
	/* A missing file and an empty entry are skipped; a repeated file counts once. */
	char *list = xasprintf("%s:%s/merge/missing::%s:%s", a, tmpdir, b, a);
	setenv("KUBECONFIG", list, 1);

	struct kube_config cfg;
	char *err = NULL;
	int rc = kubeconfig_load(NULL, NULL, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	/* current-context and context "dev" from a; cluster c1 from a; user bob from b. */
	assert_string_equal(cfg.context, "dev");
	assert_string_equal(cfg.namespace, "a-ns");
	assert_string_equal(cfg.server, "https://from-a");
	assert_string_equal(cfg.cert_file, bcrt); /* relative to b's directory */
	assert_string_equal(cfg.key_file, bkey);
	assert_null(cfg.token);
	kube_config_release(&cfg);

	/* Explicit context only in b; user alice from a (first wins), tokenFile relative to a. */
	rc = kubeconfig_load(NULL, "onlyb", &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cfg.server, "https://c2-from-b");
	assert_string_equal(cfg.token_file, atok);
	assert_null(cfg.token);
	kube_config_release(&cfg);

	/* A missing user across all files is reported against the context's file. */
	char *c = write_file("merge/c/config",
			     "current-context: lost\n"
			     "contexts: [{name: lost, context: {cluster: c1, user: nobody}}]\n",
			     0600);
	char *list2 = xasprintf("%s:%s", c, a);
	setenv("KUBECONFIG", list2, 1);
	assert_int_equal(kubeconfig_load(NULL, NULL, &cfg, &err), -1);
	char *want = xasprintf("kubeconfig %s: context \"lost\" names user \"nobody\", which is not "
			       "in users of any KUBECONFIG file", c);
	assert_err_has(err, want);
	FREE_AND_NULL(err);
	free(want);

	/* Current context from the second file when the first sets none. */
	char *d = write_file("merge/d/config", "clusters: []\n", 0600);
	char *list3 = xasprintf("%s:%s", d, b);
	setenv("KUBECONFIG", list3, 1);
	rc = kubeconfig_load(NULL, NULL, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cfg.context, "onlyb");
	assert_string_equal(cfg.token, "from-b");
	kube_config_release(&cfg);

	/* No current-context anywhere: the message lists the files. */
	char *list4 = xasprintf("%s:%s", d, d);
	setenv("KUBECONFIG", list4, 1);
	assert_int_equal(kubeconfig_load(NULL, NULL, &cfg, &err), -1);
	want = xasprintf("kubeconfig %s: current-context is not set and no --context was given", d);
	assert_err_has(err, want);
	FREE_AND_NULL(err);
	free(want);

	setenv("KUBECONFIG", "/nonexistent/one:/nonexistent/two", 1);
	assert_int_equal(kubeconfig_load(NULL, NULL, &cfg, &err), -1);
	assert_err_has(err, "none of the files in KUBECONFIG=/nonexistent/one:/nonexistent/two exists");
	FREE_AND_NULL(err);

	/* A broken file in the list is an error, not skipped. */
	char *list5 = xasprintf("%s:%s/merge", a, tmpdir);
	setenv("KUBECONFIG", list5, 1);
	assert_int_equal(kubeconfig_load(NULL, NULL, &cfg, &err), -1);
	assert_err_has(err, "/merge: is a directory");
	FREE_AND_NULL(err);

	free(list5);
	free(list4);
	free(list3);
	free(list2);
	free(list);
	free(a);
	free(atok);
	free(b);
	free(bcrt);
	free(bkey);
	free(c);
	free(d);
}

static void test_home_fallback(void **state)
{
	(void)state;
	char *home = xasprintf("%s/home", tmpdir);
	setenv("HOME", home, 1);
	struct kube_config cfg;
	char *err = NULL;
	assert_int_equal(kubeconfig_load(NULL, NULL, &cfg, &err), -1);
	char *want = xasprintf("kubeconfig %s/.kube/config: does not exist, and KUBECONFIG is not set",
			       home);
	assert_err_has(err, want);
	FREE_AND_NULL(err);
	free(want);

	char *p = write_file("home/.kube/config",
			     "current-context: h\n"
			     "clusters: [{name: c, cluster: {server: 'https://home'}}]\n"
			     "contexts: [{name: h, context: {cluster: c}}]\n",
			     0600);
	setenv("KUBECONFIG", "", 1); /* empty counts as unset */
	int rc = kubeconfig_load(NULL, NULL, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cfg.server, "https://home");
	kube_config_release(&cfg);
	free(p);
	free(home);
}

/* ------------------------------------------------------------------ */
/* In-cluster                                                          */
/* ------------------------------------------------------------------ */

static char *make_sa_dir(const char *name, bool token, bool ca, const char *ns)
{
	char *rel = xasprintf("%s/token", name);
	if (token)
		free(write_file(rel, "eyJhbGciOi.sa-token\n", 0600));
	free(rel);
	rel = xasprintf("%s/ca.crt", name);
	if (ca)
		free(write_file(rel, CA_PEM, 0600));
	free(rel);
	rel = xasprintf("%s/namespace", name);
	if (ns)
		free(write_file(rel, ns, 0600));
	free(rel);
	return xasprintf("%s/%s", tmpdir, name);
}

static void test_in_cluster(void **state)
{
	(void)state;
	char *dir = make_sa_dir("sa1", true, true, "operators\n");
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	struct kube_config cfg;
	char *err = NULL;
	int rc = kube_config_in_cluster(dir, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cfg.server, "https://10.96.0.1:443");
	char *want = xasprintf("%s/token", dir);
	assert_string_equal(cfg.token_file, want);
	free(want);
	want = xasprintf("%s/ca.crt", dir);
	assert_string_equal(cfg.ca_file, want);
	free(want);
	assert_null(cfg.token); /* re-read from token_file by the client */
	assert_string_equal(cfg.namespace, "operators");
	assert_null(cfg.context);
	assert_false(cfg.insecure_skip_tls_verify);
	kube_config_release(&cfg);

	/* IPv6 in brackets; POD_NAMESPACE wins over the file. */
	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	setenv("POD_NAMESPACE", "from-env", 1);
	rc = kube_config_in_cluster(dir, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_string_equal(cfg.server, "https://[fd00:10:96::1]:443");
	assert_string_equal(cfg.namespace, "from-env");
	kube_config_release(&cfg);
	free(dir);

	/* No namespace file: namespace unset. */
	unsetenv("POD_NAMESPACE");
	dir = make_sa_dir("sa2", true, true, NULL);
	rc = kube_config_in_cluster(dir, &cfg, &err);
	if (rc)
		fail_msg("%s", err);
	assert_null(cfg.namespace);
	kube_config_release(&cfg);
	free(dir);
}

static void test_in_cluster_errors(void **state)
{
	(void)state;
	struct kube_config cfg;
	char *err = NULL;
	char *dir = make_sa_dir("sa3", true, true, "ns");

	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "not running in a Kubernetes cluster");
	assert_err_has(err, "KUBERNETES_SERVICE_HOST");
	assert_zeroed(&cfg);
	FREE_AND_NULL(err);

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "not running in a Kubernetes cluster");
	FREE_AND_NULL(err);

	setenv("KUBERNETES_SERVICE_PORT", "http", 1);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "KUBERNETES_SERVICE_PORT \"http\" is not a port number");
	FREE_AND_NULL(err);

	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	setenv("KUBERNETES_SERVICE_HOST", "evil/host", 1);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "KUBERNETES_SERVICE_HOST \"evil/host\" is not a host");
	FREE_AND_NULL(err);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	free(dir);

	dir = make_sa_dir("sa4", false, true, "ns");
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "cannot read the service account token");
	assert_err_has(err, "sa4/token");
	assert_zeroed(&cfg);
	FREE_AND_NULL(err);
	free(dir);

	dir = make_sa_dir("sa5", true, false, "ns");
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "cannot read the cluster CA");
	assert_err_has(err, "sa5/ca.crt");
	FREE_AND_NULL(err);
	free(dir);

	free(write_file("sa6/token", " \n", 0600));
	dir = make_sa_dir("sa6", false, true, NULL);
	assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -1);
	assert_err_has(err, "sa6/token is empty");
	FREE_AND_NULL(err);
	free(dir);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_token_and_current_context),
		cmocka_unit_test(test_explicit_context_cert_data_insecure),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test_setup_teardown(test_flags_without_kubeconfig, env_setup, env_teardown),
		cmocka_unit_test(test_relative_files),
		cmocka_unit_test(test_exec_config),
		cmocka_unit_test(test_anonymous_and_bare_server),
		cmocka_unit_test(test_base64_forms),
		cmocka_unit_test(test_yaml_features),
		cmocka_unit_test(test_release_is_safe),
		cmocka_unit_test(test_yaml_merge_budget),
		cmocka_unit_test(test_error_hides_secrets),
		cmocka_unit_test(test_url_redact),
		cmocka_unit_test_setup_teardown(test_load_file_relative, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_load_errors_name_the_file, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_load_size_cap, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_load_alias_bomb, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_kubeconfig_merge, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_home_fallback, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_in_cluster, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_in_cluster_errors, env_setup, env_teardown),
	};
	const size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	const size_t ncases = sizeof(err_cases) / sizeof(err_cases[0]);
	struct CMUnitTest *tests = xcalloc(nfixed + ncases, sizeof(*tests));
	memcpy(tests, fixed, sizeof(fixed));
	char **names = xcalloc(ncases, sizeof(*names));
	for (size_t i = 0; i < ncases; i++) {
		names[i] = xasprintf("error: %s", err_cases[i].name);
		tests[nfixed + i].name = names[i];
		tests[nfixed + i].test_func = test_error_case;
		tests[nfixed + i].initial_state = (void *)&err_cases[i];
	}
	int failed = _cmocka_run_group_tests("kubeconfig", tests, nfixed + ncases, group_setup,
					     group_teardown);
	for (size_t i = 0; i < ncases; i++)
		free(names[i]);
	free(names);
	free(tests);
	return failed;
}
