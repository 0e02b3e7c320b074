/*
 * In-cluster configuration, as client-go's rest.InClusterConfig: the API
 * server from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, the
 * service account's CA and token from the mounted secret directory. The
 * token is handed over as token_file because the kubelet rotates it; the
 * client re-reads it.
 *
 * Thread-safety: reads the environment; call it at start-up.
 */
#include "client/kube_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strbuf.h"
#include "util/xalloc.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_FILE_CAP (64u * 1024u) /* tokens are a few KiB */

/*
 * Reads a small file into sb (capped). Returns 0, or -1 with errno set
 * (EFBIG when it is over the cap, EISDIR for a directory).
 */
static __attribute__((warn_unused_result)) int read_small_file(const char *path, struct strbuf *sb)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return -1;
	}
	for (;;) {
		char chunk[4096];
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		if (strbuf_add(sb, chunk, (size_t)n) < 0) {
			explicit_bzero(chunk, sizeof(chunk));
			close(fd);
			errno = EFBIG;
			return -1;
		}
		explicit_bzero(chunk, sizeof(chunk));
	}
	close(fd);
	return 0;
}

/* True when s has something besides whitespace. */
static bool has_text(const char *s)
{
	for (; *s; s++) {
		if (!isspace((unsigned char)*s))
			return true;
	}
	return false;
}

/* A host name or address that can go between "https://" and ":port". */
static bool host_ok(const char *h)
{
	size_t len = strlen(h);
	if (len == 0)
		return false;
	for (const char *p = h; *p; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p) || strchr("/@?#%", *p))
			return false;
	}
	if (h[0] == '[')
		return h[len - 1] == ']' && len > 2;
	return !strchr(h, '[') && !strchr(h, ']');
}

static bool port_ok(const char *p)
{
	if (!*p || strlen(p) > 5)
		return false;
	for (const char *c = p; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return false;
	}
	long v = strtol(p, NULL, 10);
	return v >= 1 && v <= 65535;
}

int kube_config_in_cluster(const char *root, struct kube_config *out, char **err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *pod_ns = getenv("POD_NAMESPACE");
	const char *dir = root ? root : SA_DIR;
	struct strbuf sb;
	char *ns_path = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	*err = NULL;
	strbuf_init(&sb, SA_FILE_CAP);
	if (!host || !*host || !port || !*port) {
		*err = xstrdup("in-cluster config: not running in a Kubernetes cluster "
			       "(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set); "
			       "outside a cluster, give --kubeconfig or set KUBECONFIG");
		goto out;
	}
	if (!host_ok(host)) {
		*err = xasprintf("in-cluster config: KUBERNETES_SERVICE_HOST \"%s\" is not a host "
				 "name or address", host);
		goto out;
	}
	if (!port_ok(port)) {
		*err = xasprintf("in-cluster config: KUBERNETES_SERVICE_PORT \"%s\" is not a port "
				 "number", port);
		goto out;
	}
	/* An IPv6 address needs brackets in a URL. */
	if (strchr(host, ':') && host[0] != '[')
		out->server = xasprintf("https://[%s]:%s", host, port);
	else
		out->server = xasprintf("https://%s:%s", host, port);

	out->token_file = xasprintf("%s/token", dir);
	int r = read_small_file(out->token_file, &sb);
	bool empty = r == 0 && !has_text(strbuf_str(&sb));
	if (sb.buf)
		explicit_bzero(sb.buf, sb.len);
	strbuf_reset(&sb);
	if (r < 0) {
		*err = xasprintf("in-cluster config: cannot read the service account token %s: %s "
				 "(is automountServiceAccountToken off?)",
				 out->token_file, strerror(errno));
		goto out;
	}
	if (empty) {
		*err = xasprintf("in-cluster config: the service account token %s is empty",
				 out->token_file);
		goto out;
	}

	out->ca_file = xasprintf("%s/ca.crt", dir);
	if (read_small_file(out->ca_file, &sb) < 0 && errno != EFBIG) {
		*err = xasprintf("in-cluster config: cannot read the cluster CA %s: %s", out->ca_file,
				 strerror(errno));
		goto out;
	}
	strbuf_reset(&sb);

	/* Like client-go: POD_NAMESPACE (downward API) first, then the mounted file. */
	if (pod_ns && has_text(pod_ns)) {
		out->namespace = xstrdup(pod_ns);
	} else {
		ns_path = xasprintf("%s/namespace", dir);
		if (read_small_file(ns_path, &sb) == 0 && has_text(strbuf_str(&sb))) {
			char *s = strbuf_detach(&sb);
			size_t start = 0, len = strlen(s);
			while (isspace((unsigned char)s[start]))
				start++;
			while (len > start && isspace((unsigned char)s[len - 1]))
				len--;
			out->namespace = xstrndup(s + start, len - start);
			free(s);
		}
	}
	rc = 0;
out:
	if (rc < 0)
		kube_config_release(out);
	strbuf_release(&sb);
	free(ns_path);
	return rc;
}
