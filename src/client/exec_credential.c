/*
 * Exec credential plugins (client.authentication.k8s.io ExecCredential):
 * run the command from the kubeconfig without a shell, give it
 * KUBERNETES_EXEC_INFO, read what it prints on stdout (capped), wait for
 * it (bounded), and parse the credential it returns.
 *
 * The plugin runs in its own process group so a timeout kills its
 * children too. stdin is /dev/null (the operator is never interactive);
 * stderr is passed through so the plugin's own diagnostics reach the log;
 * no other descriptor is inherited.
 * Messages never contain what the plugin printed: it may be a secret.
 *
 * Thread-safety: any thread may call it; it reads environ, so no other
 * thread may call setenv/putenv meanwhile.
 */
#include "client/kube_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

#define WUR __attribute__((warn_unused_result))


extern char **environ;

static int64_t now_ms(void)
{
	return (int64_t)(clock_mono_ns() / 1000000u);
}

/* Length of the NAME in "NAME=VALUE". */
static size_t env_name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static bool env_same_name(const char *a, const char *b)
{
	size_t la = env_name_len(a);
	return la == env_name_len(b) && !memcmp(a, b, la);
}

/*
 * A new NULL-terminated environment: environ minus the names the plugin
 * config sets, then the config's entries (the last of a repeated name
 * wins), then info ("KUBERNETES_EXEC_INFO=..."). The array is owned by
 * the caller; the strings are borrowed.
 */
static char **build_env(const struct kube_exec_config *exec, char *info)
{
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **envp = xcalloc(n + exec->nenv + 2, sizeof(*envp));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool replaced = env_same_name(environ[i], info);
		for (size_t j = 0; !replaced && j < exec->nenv; j++)
			replaced = env_same_name(environ[i], exec->env[j]);
		if (!replaced)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < exec->nenv; j++) {
		bool later = env_same_name(exec->env[j], info);
		for (size_t m = j + 1; !later && m < exec->nenv; m++)
			later = env_same_name(exec->env[j], exec->env[m]);
		if (!later)
			envp[k++] = exec->env[j];
	}
	envp[k++] = info;
	envp[k] = NULL;
	return envp;
}

/* A new "KUBERNETES_EXEC_INFO=<ExecCredential JSON>". */
static char *build_exec_info(const struct kube_exec_config *exec, const char *server)
{
	json_t *spec = json_pack("{s:b}", "interactive", 0);
	if (spec && exec->provide_cluster_info &&
	    json_object_set_new(spec, "cluster", json_pack("{s:s}", "server", server)) < 0)
		spec = NULL; /* leaked only on the way to abort */
	json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion", exec->api_version, "kind",
				"ExecCredential", "spec", spec);
	char *json = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!json) {
		fputs("stateful-operator: out of memory in jansson\n", stderr);
		abort();
	}
	char *kv = xasprintf("KUBERNETES_EXEC_INFO=%s", json);
	free(json);
	return kv;
}

/* n decimal digits at s -> *v; false when any is not a digit. */
static bool take_digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

/* "2006-01-02T15:04:05[.frac](Z|+hh:mm)" -> unix seconds (fraction dropped). */
static WUR int parse_rfc3339(const char *s, long long *out)
{
	int Y, M, D, h, m, sec, oh = 0, om = 0;
	long off = 0;

	if (strlen(s) < 20 || !take_digits(s, 4, &Y) || s[4] != '-' || !take_digits(s + 5, 2, &M) ||
	    s[7] != '-' || !take_digits(s + 8, 2, &D) || !strchr("Tt ", s[10]) ||
	    !take_digits(s + 11, 2, &h) || s[13] != ':' || !take_digits(s + 14, 2, &m) ||
	    s[16] != ':' || !take_digits(s + 17, 2, &sec))
		return -1;
	s += 19;
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return -1;
		while (isdigit((unsigned char)*s))
			s++;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		if (!take_digits(s + 1, 2, &oh) || s[3] != ':' || !take_digits(s + 4, 2, &om) ||
		    oh > 23 || om > 59)
			return -1;
		off = (oh * 60L + om) * 60L * (*s == '-' ? -1 : 1);
		s += 6;
	} else {
		return -1;
	}
	if (*s || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -1;
	struct tm tm = {0};
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	if (t == (time_t)-1 || (sec < 60 && tm.tm_mon != M - 1)) /* Feb 30 was normalised */
		return -1;
	*out = (long long)t - off;
	return 0;
}

/* status[key] as a new string (NULL when absent, null or empty); refuses non-strings. */
static WUR int status_str(const char *cmd, json_t *status, const char *key, char **val, char **err)
{
	json_t *v = json_object_get(status, key);
	*val = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		*err = xasprintf("exec plugin \"%s\": status.%s is not a string", cmd, key);
		return -1;
	}
	if (json_string_length(v))
		*val = xstrdup(json_string_value(v));
	return 0;
}

static void blob_take(struct kube_blob *b, char *s)
{
	b->data = s;
	b->len = s ? strlen(s) : 0;
}

/* The plugin's stdout: see kube_config.h. */
int kube_exec_credential_parse(const struct kube_exec_config *exec, const char *buf, size_t len,
			       struct kube_exec_credential *out, char **err)
{
	const char *cmd = exec->command;
	json_error_t jerr;
	json_t *doc = NULL;
	char *cert = NULL, *key = NULL, *exp = NULL;
	int rc = -1;

	if (len == 0) {
		*err = xasprintf("exec plugin \"%s\" printed nothing; expected an ExecCredential", cmd);
		goto out;
	}
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc || !json_is_object(doc)) {
		/* jerr.text may quote the output, which may be a secret: only say where. */
		if (doc)
			*err = xasprintf("exec plugin \"%s\" printed JSON that is not an object; "
					 "expected an ExecCredential", cmd);
		else
			*err = xasprintf("exec plugin \"%s\" printed output that is not valid JSON "
					 "(line %d, column %d); expected an ExecCredential",
					 cmd, jerr.line, jerr.column);
		goto out;
	}
	const char *av = json_string_value(json_object_get(doc, "apiVersion"));
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	if (!av || strcmp(av, exec->api_version)) {
		*err = xasprintf("exec plugin \"%s\" returned apiVersion \"%.100s\", expected \"%s\"",
				 cmd, av ? av : "", exec->api_version);
		goto out;
	}
	if (!kind || strcmp(kind, "ExecCredential")) {
		*err = xasprintf("exec plugin \"%s\" returned kind \"%.100s\", expected "
				 "\"ExecCredential\"", cmd, kind ? kind : "");
		goto out;
	}
	json_t *status = json_object_get(doc, "status");
	if (!json_is_object(status)) {
		*err = xasprintf("exec plugin \"%s\" returned an ExecCredential without status", cmd);
		goto out;
	}
	if (status_str(cmd, status, "token", &out->token, err) < 0 ||
	    status_str(cmd, status, "clientCertificateData", &cert, err) < 0 ||
	    status_str(cmd, status, "clientKeyData", &key, err) < 0 ||
	    status_str(cmd, status, "expirationTimestamp", &exp, err) < 0)
		goto out;
	blob_take(&out->cert_data, cert);
	blob_take(&out->key_data, key);
	cert = key = NULL;
	if (out->token) {
		for (const char *p = out->token; *p; p++) {
			if (iscntrl((unsigned char)*p)) {
				*err = xasprintf("exec plugin \"%s\": status.token contains a line "
						 "break or control character", cmd);
				goto out;
			}
		}
	}
	if (out->cert_data.data && !out->key_data.data) {
		*err = xasprintf("exec plugin \"%s\": status.clientCertificateData is set but "
				 "status.clientKeyData is not", cmd);
		goto out;
	}
	if (out->key_data.data && !out->cert_data.data) {
		*err = xasprintf("exec plugin \"%s\": status.clientKeyData is set but "
				 "status.clientCertificateData is not", cmd);
		goto out;
	}
	if (!out->token && !out->cert_data.data) {
		*err = xasprintf("exec plugin \"%s\" returned neither status.token nor "
				 "status.clientCertificateData and status.clientKeyData", cmd);
		goto out;
	}
	if (exp && parse_rfc3339(exp, &out->expires_at) < 0) {
		*err = xasprintf("exec plugin \"%s\": status.expirationTimestamp \"%.64s\" is not an "
				 "RFC 3339 time", cmd, exp);
		goto out;
	}
	rc = 0;
out:
	json_decref(doc);
	free(cert);
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(exp);
	return rc;
}

/* A new message for a plugin still running at its time limit (the caller kills it). */
static char *timed_out(const char *cmd, long timeout_ms)
{
	return xasprintf("exec plugin \"%s\" did not finish within %g s; killed it", cmd,
			 (double)timeout_ms / 1000.0);
}

/*
 * Reads the child's stdout until EOF, the cap or the deadline. Returns 0
 * at EOF, -1 with *err set otherwise.
 */
static WUR int read_output(const char *cmd, int fd, int64_t deadline, long timeout_ms, struct strbuf *sb,
			   char **err)
{
	char chunk[16384];
	int rc = -1;

	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			*err = timed_out(cmd, timeout_ms);
			goto out;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			*err = xasprintf("exec plugin \"%s\": poll: %s", cmd, strerror(errno));
			goto out;
		}
		if (pr == 0)
			continue; /* the deadline check above reports it */
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			*err = xasprintf("exec plugin \"%s\": reading its output: %s", cmd,
					 strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (strbuf_add(sb, chunk, (size_t)n) < 0) {
			*err = xasprintf("exec plugin \"%s\" printed more than %u KiB on stdout; killed it",
					 cmd, KUBE_EXEC_OUTPUT_MAX / 1024u);
			goto out;
		}
	}
	rc = 0;
out:
	explicit_bzero(chunk, sizeof(chunk));
	return rc;
}

/* Waits for pid until the deadline. Returns 0 with *status, or -1 with *err set. */
static WUR int wait_child(const char *cmd, pid_t pid, int64_t deadline, long timeout_ms, int *status,
			  char **err)
{
	long nap = 1;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			*err = xasprintf("exec plugin \"%s\": waitpid: %s", cmd, strerror(errno));
			return -1;
		}
		if (now_ms() >= deadline) {
			*err = timed_out(cmd, timeout_ms);
			return -1;
		}
		clock_sleep_ms(nap);
		if (nap < 50)
			nap *= 2;
	}
}

/*
 * The program to run, as a new path: cmd itself when it has a slash, else
 * the first executable regular file named cmd in $PATH (as execvp would
 * pick). Looked up here rather than by posix_spawnp so that "not found"
 * is reported as such, never confused with a plugin that exits 127.
 * Returns NULL with errno set when there is none.
 */
static char *find_program(const char *cmd)
{
	struct stat st;
	if (strchr(cmd, '/')) {
		if (access(cmd, X_OK) != 0)
			return NULL;
		return xstrdup(cmd);
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/bin:/usr/bin";
	int saved = ENOENT;
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		char *cand = end == p ? xasprintf("./%s", cmd) /* empty entry: cwd */
				      : xasprintf("%.*s/%s", (int)(end - p), p, cmd);
		if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 && S_ISREG(st.st_mode))
			return cand;
		if (errno == EACCES)
			saved = EACCES;
		free(cand);
		if (!*end)
			break;
		p = end;
	}
	errno = saved;
	return NULL;
}

int kube_exec_credential_get(const struct kube_exec_config *exec, const char *server,
			     struct kube_exec_credential *out, char **err)
{
	return kube_exec_credential_run(exec, server, KUBE_EXEC_TIMEOUT_MS, out, err);
}

int kube_exec_credential_run(const struct kube_exec_config *exec, const char *server, long timeout_ms,
			     struct kube_exec_credential *out, char **err)
{
	char **argv = NULL, **envp = NULL, *info = NULL, *prog = NULL;
	int pipefd[2] = {-1, -1};
	pid_t pid = -1;
	bool fa_init = false, attr_init = false;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct strbuf sb;
	int status = 0, rc = -1;
	const char *cmd = exec && exec->command ? exec->command : "";

	memset(out, 0, sizeof(*out));
	*err = NULL;
	strbuf_init(&sb, KUBE_EXEC_OUTPUT_MAX);
	if (!exec || !exec->command || !*exec->command || !exec->api_version) {
		*err = xstrdup("exec plugin: command and apiVersion must be set");
		goto out;
	}
	if (exec->provide_cluster_info && (!server || !*server)) {
		*err = xasprintf("exec plugin \"%s\": provideClusterInfo is set but there is no "
				 "server to pass", cmd);
		goto out;
	}

	prog = find_program(exec->command);
	if (!prog) {
		if (!strchr(exec->command, '/') && errno == ENOENT)
			*err = xasprintf("exec plugin \"%s\": cannot run it: not found in PATH", cmd);
		else
			*err = xasprintf("exec plugin \"%s\": cannot run it: %s", cmd, strerror(errno));
		goto out;
	}
	argv = xcalloc(exec->nargs + 2, sizeof(*argv));
	argv[0] = exec->command;
	for (size_t i = 0; i < exec->nargs; i++)
		argv[i + 1] = exec->args[i];
	info = build_exec_info(exec, server);
	envp = build_env(exec, info);

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		*err = xasprintf("exec plugin \"%s\": pipe: %s", cmd, strerror(errno));
		goto out;
	}
	if (posix_spawn_file_actions_init(&fa) != 0)
		abort();
	fa_init = true;
	if (posix_spawnattr_init(&attr) != 0)
		abort();
	attr_init = true;

	sigset_t none, dfl;
	sigemptyset(&none);
	sigemptyset(&dfl);
	/* The daemon may ignore these; the plugin must start with the defaults. */
	int dfl_sigs[] = {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < sizeof(dfl_sigs) / sizeof(dfl_sigs[0]); i++)
		sigaddset(&dfl, dfl_sigs[i]);
	/*
	 * Nothing but stdin, stdout and stderr reaches the plugin: not the
	 * API server connections, listeners or files of other threads, which
	 * need not be close-on-exec.
	 */
	if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
	    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1) != 0 ||
	    posix_spawn_file_actions_addclosefrom_np(&fa, 3) != 0 ||
	    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
						    POSIX_SPAWN_SETSIGDEF) != 0 ||
	    posix_spawnattr_setpgroup(&attr, 0) != 0 ||
	    posix_spawnattr_setsigmask(&attr, &none) != 0 ||
	    posix_spawnattr_setsigdefault(&attr, &dfl) != 0) {
		*err = xasprintf("exec plugin \"%s\": cannot set up the process", cmd);
		goto out;
	}
	int e = posix_spawn(&pid, prog, &fa, &attr, argv, envp);
	if (e != 0) {
		pid = -1;
		*err = xasprintf("exec plugin \"%s\": cannot run it: %s", cmd, strerror(e));
		goto out;
	}
	close(pipefd[1]);
	pipefd[1] = -1;

	/* +1: now_ms() truncates, and the plugin is owed the whole limit. */
	int64_t deadline = now_ms() + timeout_ms + 1;
	if (read_output(cmd, pipefd[0], deadline, timeout_ms, &sb, err) < 0)
		goto out;
	if (wait_child(cmd, pid, deadline, timeout_ms, &status, err) < 0)
		goto out;
	pid = -1; /* reaped */
	if (WIFSIGNALED(status)) {
		*err = xasprintf("exec plugin \"%s\" was killed by signal %d (%s)", cmd,
				 WTERMSIG(status), strsignal(WTERMSIG(status)));
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		*err = xasprintf("exec plugin \"%s\" exited with status %d", cmd,
				 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		goto out;
	}
	rc = kube_exec_credential_parse(exec, strbuf_str(&sb), sb.len, out, err);
out:
	if (pid > 0) {
		/* Timed out or failed while it runs: kill its whole group, then reap it. */
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (fa_init)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_init)
		posix_spawnattr_destroy(&attr);
	if (sb.buf)
		explicit_bzero(sb.buf, sb.len);
	strbuf_release(&sb);
	free(argv);
	free(envp);
	free(info);
	free(prog);
	if (rc < 0)
		kube_exec_credential_release(out);
	return rc;
}

/* Frees the credential (wiping the secrets); zeroes it. Safe on a zeroed struct. */
void kube_exec_credential_release(struct kube_exec_credential *cred)
{
	if (!cred)
		return;
	if (cred->token) {
		explicit_bzero(cred->token, strlen(cred->token));
		free(cred->token);
	}
	free(cred->cert_data.data);
	if (cred->key_data.data) {
		explicit_bzero(cred->key_data.data, cred->key_data.len);
		free(cred->key_data.data);
	}
	memset(cred, 0, sizeof(*cred));
}
