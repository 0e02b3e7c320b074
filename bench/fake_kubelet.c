/*
 * Stand-ins for kubelets and for a Prometheus server, for bench/autoresize
 * only: kwok nodes have no kubelet, and the benchmark measures what the
 * operator spends on reading volume usage, not what a kubelet spends on
 * measuring it.
 *
 *   bench_fake_kubelet [--cert PEM --key PEM] [--prometheus PORT] DIR [PORT...]
 *
 * Each PORT is a kubelet: HTTPS with the certificate and key given (PEM
 * files), GET /stats/summary answered with the file DIR/<PORT>.json (a
 * kubelet stats summary). --prometheus PORT is a Prometheus server: plain
 * HTTP, GET or POST /api/v1/query (any query) answered with
 * DIR/prometheus.json (an instant-query vector). Anything else is 404. The
 * files are read at each request, so they may be replaced (rename) while
 * it runs; each must be JSON when it starts: a benchmark against a broken
 * file would measure the operator's error path.
 *
 * Listens on 127.0.0.1 only. Says "bench_fake_kubelet: serving ..." on
 * stderr once it listens; then SIGUSR1 prints the counts so far, SIGTERM
 * or SIGINT prints them and exits; one line per port, in the order given:
 *
 *   port=20001 requests=12 bytes=4563200 not_found=0
 *
 * requests: every request answered; bytes: response bodies served with
 * 200; not_found: requests for another path or method (among requests).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xalloc.h"

/* As src/runtime/http_server.c serves TLS (what the operator's client meets in production). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* A TLS record is up to 16 KiB: the connection's buffer needs room for one beside the request head. */
#define TLS_CONNECTION_MEMORY (64u << 10)

struct fake_port {
	int port;
	bool prometheus;    /* plain HTTP, /api/v1/query; else HTTPS, /stats/summary */
	char file[PATH_MAX]; /* what it serves */
	struct MHD_Daemon *daemon;
	atomic_ulong requests, not_found;
	atomic_ullong bytes;
};

static char request_seen; /* *con_cls once a request's headers were handled */

static enum MHD_Result answer_not_found(struct fake_port *p, struct MHD_Connection *conn)
{
	static const char body[] = "404 not found\n";
	atomic_fetch_add(&p->not_found, 1);
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer_file(struct fake_port *p, struct MHD_Connection *conn)
{
	struct stat st;
	int fd = open(p->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "bench_fake_kubelet: %s: %s\n", p->file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return MHD_NO; /* closes the connection: the operator sees the source fail */
	}
	/* From here on the response owns fd. */
	struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	enum MHD_Result ret = MHD_NO;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") == MHD_YES)
		ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		atomic_fetch_add(&p->bytes, (unsigned long long)st.st_size);
	return ret;
}

/*
 * Answered at the last call, once the whole request is in (a response
 * queued at the first would close the connection, defeating keep-alive);
 * a POST's body (a form-encoded query) is read and dropped.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct fake_port *p = cls;
	(void)version;
	(void)upload_data;

	if (!*con_cls) {
		*con_cls = &request_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	atomic_fetch_add(&p->requests, 1);
	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	if (p->prometheus ? strcmp(url, "/api/v1/query") == 0 && (get || post)
			  : strcmp(url, "/stats/summary") == 0 && get)
		return answer_file(p, conn);
	return answer_not_found(p, conn);
}

/* The whole of a small file, NUL-terminated (PEM for libmicrohttpd); NULL and a message when unreadable. */
static char *read_whole(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "bench_fake_kubelet: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	do {
		buf = xgrow(buf, &cap, len + 4096 + 1, 1);
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static bool start(struct fake_port *p, const char *cert_pem, const char *key_pem)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;

	if (p->prometheus)
		p->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR, &addr,
					     MHD_OPTION_END);
	else
		p->daemon = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR,
					     &addr, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)TLS_CONNECTION_MEMORY,
					     MHD_OPTION_HTTPS_MEM_CERT, cert_pem, MHD_OPTION_HTTPS_MEM_KEY, key_pem,
					     MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_END);
	if (!p->daemon)
		fprintf(stderr, "bench_fake_kubelet: cannot listen on 127.0.0.1:%d%s\n", p->port,
			p->prometheus ? "" : " (or the certificate and key do not load)");
	return p->daemon != NULL;
}

static void print_counts(struct fake_port *ports, int n)
{
	for (int i = 0; i < n; i++)
		printf("port=%d requests=%lu bytes=%llu not_found=%lu\n", ports[i].port, atomic_load(&ports[i].requests),
		       atomic_load(&ports[i].bytes), atomic_load(&ports[i].not_found));
	fflush(stdout);
}

static int parse_port(const char *text)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	return !errno && *text && !*end && v > 0 && v < 65536 ? (int)v : -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_fake_kubelet [--cert PEM --key PEM] [--prometheus PORT] DIR [PORT...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *cert = NULL, *key = NULL, *dir = NULL;
	int prometheus_port = 0, nports = 0, i;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--cert"))
			cert = argv[i + 1];
		else if (!strcmp(argv[i], "--key"))
			key = argv[i + 1];
		else if (!strcmp(argv[i], "--prometheus")) {
			if ((prometheus_port = parse_port(argv[i + 1])) < 0)
				return usage();
		} else {
			return usage();
		}
	}
	if (i >= argc)
		return usage();
	dir = argv[i++];
	int nkubelets = argc - i;
	if ((nkubelets && (!cert || !key)) || (!nkubelets && !prometheus_port))
		return usage();

	struct fake_port *ports = xcalloc((size_t)nkubelets + 1, sizeof(*ports));
	for (; i < argc; i++, nports++) {
		ports[nports].port = parse_port(argv[i]);
		if (ports[nports].port < 0)
			return usage();
		snprintf(ports[nports].file, sizeof(ports[nports].file), "%s/%d.json", dir, ports[nports].port);
	}
	if (prometheus_port) {
		ports[nports].port = prometheus_port;
		ports[nports].prometheus = true;
		snprintf(ports[nports].file, sizeof(ports[nports].file), "%s/prometheus.json", dir);
		nports++;
	}
	for (i = 0; i < nports; i++) {
		json_error_t e;
		json_t *doc = json_load_file(ports[i].file, 0, &e);
		if (!doc) {
			fprintf(stderr, "bench_fake_kubelet: %s: not JSON: %s (line %d)\n", ports[i].file, e.text, e.line);
			return 1;
		}
		json_decref(doc);
	}

	/* Blocked before the servers' threads start, so that they inherit the mask and sigwait below takes them. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	char *cert_pem = NULL, *key_pem = NULL;
	if (nkubelets && (!(cert_pem = read_whole(cert)) || !(key_pem = read_whole(key))))
		return 1;
	for (i = 0; i < nports; i++)
		if (!start(&ports[i], cert_pem, key_pem))
			return 1;
	/* Signals sent before this line would kill it: wait for it. */
	fprintf(stderr, "bench_fake_kubelet: serving %d kubelets%s\n", nkubelets, prometheus_port ? " and Prometheus" : "");

	for (;;) {
		int sig = 0;
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig != SIGUSR1)
			break;
		print_counts(ports, nports);
	}
	for (i = 0; i < nports; i++)
		MHD_stop_daemon(ports[i].daemon);
	print_counts(ports, nports);
	free(ports);
	free(cert_pem);
	free(key_pem);
	return 0;
}
