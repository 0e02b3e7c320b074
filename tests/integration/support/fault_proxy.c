#include "fault_proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "repeat_rule.h"
#include "util/hashmap.h"
#include "util/xalloc.h"
#include "webhook/webhook_cert.h"

#define HEAD_MAX (64 * 1024)
#define BODY_MAX (8 * 1024 * 1024)

/* A client connection being served: its socket and its upstream's, both shut down by stop. */
struct served {
	int fd;
	int up_fd; /* -1 when none */
	struct served *next;
};

struct fault_proxy {
	int listen_fd, port, upstream_port;
	int wake[2]; /* a byte here stops the acceptor */
	SSL_CTX *server_ctx, *client_ctx;
	pthread_t acceptor;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct served *served;
	struct fault_plan plan;
	struct hashmap seen;    /* "METHOD path" -> its count so far (cast) */
	struct hashmap unknown; /* "METHOD path" of writes whose outcome the client never saw */
	long counts[FAULT_KINDS];
	long non_watch_faults; /* faults injected into requests other than watches */
	json_t *unsafe;
};

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *text = xmalloc(65536);
	size_t n = fread(text, 1, 65535, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

/* The proxy's server context: a certificate for 127.0.0.1 signed by the test bed's CA. */
static SSL_CTX *server_context(const char *ca_cert_file, const char *ca_key_file, char **err)
{
	struct cert_bundle b = CERT_BUNDLE_INIT;
	b.ca_cert_pem = read_file(ca_cert_file);
	b.ca_key_pem = read_file(ca_key_file);
	static const char *const names[] = {"127.0.0.1", NULL};
	SSL_CTX *ctx = NULL;
	if (!b.ca_cert_pem || !b.ca_key_pem) {
		*err = xasprintf("cannot read %s or %s", ca_cert_file, ca_key_file);
		goto out;
	}
	if (cert_bundle_make_serving(&b, names, 0, (long long)time(NULL), err) < 0)
		goto out;
	BIO *cb = BIO_new_mem_buf(b.cert_pem, -1), *kb = BIO_new_mem_buf(b.key_pem, -1);
	X509 *cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
	EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
	ctx = SSL_CTX_new(TLS_server_method());
	if (!cert || !key || !ctx || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
		*err = xstrdup("cannot load the proxy's certificate");
		SSL_CTX_free(ctx);
		ctx = NULL;
	}
	X509_free(cert);
	EVP_PKEY_free(key);
	BIO_free(cb);
	BIO_free(kb);
out:
	cert_bundle_release(&b);
	ERR_clear_error();
	return ctx;
}

static int ssl_write_all(SSL *ssl, const char *buf, size_t n)
{
	while (n > 0) {
		int w = SSL_write(ssl, buf, n > 65536 ? 65536 : (int)n);
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The value of header name in head (lower-case name), or NULL. Points into head. */
static const char *header_value(const char *head, const char *name)
{
	size_t len = strlen(name);
	for (const char *line = strstr(head, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
		const char *h = line + 2;
		size_t i = 0;
		while (i < len && h[i] && tolower((unsigned char)h[i]) == name[i])
			i++;
		if (i == len && h[i] == ':') {
			h += len + 1;
			while (*h == ' ')
				h++;
			return h;
		}
	}
	return NULL;
}

/* The request as forwarded: its headers but Connection and Keep-Alive, then Connection: close. */
static char *forwarded_head(const char *head)
{
	size_t cap = strlen(head) + 64, n = 0;
	char *out = xmalloc(cap);
	const char *end = strstr(head, "\r\n\r\n");
	for (const char *line = head; line < end;) {
		const char *next = strstr(line, "\r\n");
		bool drop = !strncasecmp(line, "connection:", 11) || !strncasecmp(line, "keep-alive:", 11);
		if (!drop) {
			memcpy(out + n, line, (size_t)(next - line) + 2);
			n += (size_t)(next - line) + 2;
		}
		line = next + 2;
	}
	n += (size_t)snprintf(out + n, cap - n, "Connection: close\r\n\r\n");
	return out;
}

static void answer(SSL *ssl, int code, const char *reason, bool retry_after)
{
	char body[256], resp[512];
	int blen = snprintf(body, sizeof(body),
			    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
			    "\"fault proxy: %d %s\",\"reason\":\"%s\",\"code\":%d}",
			    code, reason, code == 429 ? "TooManyRequests" : "InternalError", code);
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s"
			 "Connection: close\r\n\r\n%s",
			 code, reason, blen, retry_after ? "Retry-After: 1\r\n" : "", body);
	ssl_write_all(ssl, resp, (size_t)n);
}

static SSL *connect_upstream(struct fault_proxy *p, struct served *s, int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->upstream_port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	pthread_mutex_lock(&p->lock);
	s->up_fd = *fd; /* so that stop can end a watch that waits for events */
	pthread_mutex_unlock(&p->lock);
	if (*fd < 0 || connect(*fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return NULL;
	SSL *ssl = SSL_new(p->client_ctx);
	X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
	SSL_set_fd(ssl, *fd);
	if (SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		return NULL;
	}
	return ssl;
}

/*
 * Sends the request upstream and relays the answer: all of it, none of
 * it (drop), or cut after cut_at bytes (*cut: it was, the answer being
 * longer). False when the upstream failed after the request was sent
 * (its outcome unknown).
 */
static bool forward(struct fault_proxy *p, struct served *s, SSL *client, const char *head, const char *body,
		    size_t body_len, bool drop, size_t cut_at, bool *cut)
{
	*cut = false;
	int fd = -1;
	SSL *up = connect_upstream(p, s, &fd);
	bool ok = false;
	if (!up) {
		answer(client, 502, "Bad Gateway", false); /* not sent: the outcome is known */
		ok = true;
		goto out;
	}
	char *fh = forwarded_head(head);
	int sent = ssl_write_all(up, fh, strlen(fh)) == 0 && ssl_write_all(up, body, body_len) == 0;
	free(fh);
	if (!sent)
		goto out;
	char buf[16384];
	size_t relayed = 0;
	int n;
	while ((n = SSL_read(up, buf, sizeof(buf))) > 0) {
		if (drop)
			continue;
		size_t m = (size_t)n;
		if (cut_at && relayed + m > cut_at)
			m = cut_at - relayed;
		if (ssl_write_all(client, buf, m) < 0)
			break;
		relayed += m;
		if (cut_at && relayed >= cut_at) {
			*cut = true;
			break;
		}
	}
	ok = !drop;
out:
	if (up)
		SSL_free(up);
	pthread_mutex_lock(&p->lock);
	s->up_fd = -1;
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&p->lock);
	ERR_clear_error();
	return ok;
}

static bool is_write(const char *method)
{
	return strcmp(method, "GET") && strcmp(method, "HEAD") && strcmp(method, "OPTIONS");
}

/*
 * The fault for this request, counted (a watch cut only once it happened:
 * count_cut); records what the repeat rule needs.
 */
static enum fault_kind decide(struct fault_proxy *p, const char *method, const char *path, const char *body,
			      int *latency_ms)
{
	char *key = xasprintf("%s %s", method, path);
	pthread_mutex_lock(&p->lock);
	unsigned long nth = (unsigned long)(uintptr_t)hashmap_get(&p->seen, key);
	hashmap_put(&p->seen, key, (void *)(uintptr_t)(nth + 1));
	enum fault_kind k = fault_decide(&p->plan, method, path, nth);
	*latency_ms = fault_latency_ms(&p->plan, method, path, nth);
	p->counts[k == FAULT_CUT_WATCH ? FAULT_NONE : k]++;
	p->non_watch_faults += k != FAULT_NONE && !fault_is_watch(path);
	if (is_write(method) && hashmap_get(&p->unknown, key)) {
		if (!repeat_is_harmless(method, path, body))
			json_array_append_new(p->unsafe, json_string(key));
		hashmap_remove(&p->unknown, key);
	}
	pthread_mutex_unlock(&p->lock);
	free(key);
	return k;
}

/* A watch decided to be cut was: it moves from the untouched to the cut. */
static void count_cut(struct fault_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	p->counts[FAULT_NONE]--;
	p->counts[FAULT_CUT_WATCH]++;
	pthread_mutex_unlock(&p->lock);
}

static void outcome_unknown(struct fault_proxy *p, const char *method, const char *path)
{
	if (!is_write(method))
		return;
	char *key = xasprintf("%s %s", method, path);
	pthread_mutex_lock(&p->lock);
	hashmap_put(&p->unknown, key, (void *)1);
	pthread_mutex_unlock(&p->lock);
	free(key);
}

/* The faults answered by the proxy itself, not forwarded. */
static const struct {
	int code;
	const char *reason;
} status_answers[FAULT_KINDS] = {
	[FAULT_TOO_MANY] = {429, "Too Many Requests"},
	[FAULT_INTERNAL] = {500, "Internal Server Error"},
	[FAULT_UNAVAILABLE] = {503, "Service Unavailable"},
	[FAULT_TIMEOUT] = {504, "Gateway Timeout"},
};

/* One request on one connection: read it, fault it or forward it. */
static void serve(struct fault_proxy *p, struct served *s, SSL *ssl)
{
	char *head = xmalloc(HEAD_MAX + 1), *body = NULL;
	size_t have = 0;
	char *end = NULL;
	while (!end && have < HEAD_MAX) {
		int n = SSL_read(ssl, head + have, (int)(HEAD_MAX - have));
		if (n <= 0)
			goto out;
		have += (size_t)n;
		head[have] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (!end)
		goto out;
	size_t head_len = (size_t)(end - head) + 4;
	char method[16], path[4096];
	if (sscanf(head, "%15s %4095s", method, path) != 2)
		goto out;
	const char *cl = header_value(head, "content-length");
	size_t body_len = cl ? strtoul(cl, NULL, 10) : 0;
	if (body_len > BODY_MAX)
		goto out;
	body = xmalloc(body_len + 1);
	size_t got = have - head_len < body_len ? have - head_len : body_len;
	memcpy(body, head + head_len, got);
	while (got < body_len) {
		int n = SSL_read(ssl, body + got, (int)(body_len - got));
		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	body[body_len] = '\0';
	head[head_len] = '\0';

	int latency_ms = 0;
	bool cut = false;
	enum fault_kind k = decide(p, method, path, body, &latency_ms);
	switch (k) {
	case FAULT_TOO_MANY:
	case FAULT_INTERNAL:
	case FAULT_UNAVAILABLE:
	case FAULT_TIMEOUT:
		answer(ssl, status_answers[k].code, status_answers[k].reason, k == FAULT_TOO_MANY);
		break;
	case FAULT_RESET_BEFORE:
		break; /* closed unanswered */
	case FAULT_LATENCY:
		usleep((useconds_t)latency_ms * 1000);
		/* fall through */
	case FAULT_NONE:
	case FAULT_RESET_AFTER:
	case FAULT_CUT_WATCH:
	case FAULT_KINDS:
		/*
		 * A cut lands after the response's head, inside the first events;
		 * a watch that ends (or sees no event) before that is not cut.
		 */
		if (!forward(p, s, ssl, head, body, body_len, k == FAULT_RESET_AFTER,
			     k == FAULT_CUT_WATCH ? 300 + (size_t)latency_ms : 0, &cut))
			outcome_unknown(p, method, path);
		if (cut)
			count_cut(p);
		break;
	}
out:
	free(head);
	free(body);
}

struct conn_arg {
	struct fault_proxy *p;
	struct served *s;
};

static void *connection(void *arg)
{
	struct conn_arg *ca = arg;
	struct fault_proxy *p = ca->p;
	struct served *s = ca->s;
	free(ca);
	SSL *ssl = SSL_new(p->server_ctx);
	SSL_set_fd(ssl, s->fd);
	if (SSL_accept(ssl) == 1)
		serve(p, s, ssl);
	SSL_free(ssl); /* no close_notify: a reset is what a fault means */
	ERR_clear_error();
	pthread_mutex_lock(&p->lock);
	for (struct served **pp = &p->served; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	close(s->fd);
	free(s);
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void *acceptor(void *arg)
{
	struct fault_proxy *p = arg;
	struct pollfd fds[2] = {{p->listen_fd, POLLIN, 0}, {p->wake[0], POLLIN, 0}};
	while (poll(fds, 2, -1) >= 0 || errno == EINTR) {
		if (fds[1].revents)
			break;
		if (!(fds[0].revents & POLLIN))
			continue;
		int fd = accept(p->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		struct conn_arg *ca = xmalloc(sizeof(*ca));
		ca->p = p;
		ca->s = xcalloc(1, sizeof(*ca->s));
		ca->s->fd = fd;
		ca->s->up_fd = -1;
		pthread_mutex_lock(&p->lock);
		ca->s->next = p->served;
		p->served = ca->s;
		pthread_mutex_unlock(&p->lock);
		pthread_t t;
		if (pthread_create(&t, NULL, connection, ca))
			abort();
		pthread_detach(t);
	}
	return NULL;
}

struct fault_proxy *fault_proxy_start(const char *ca_cert_file, const char *ca_key_file, int upstream_port,
				      const struct fault_plan *plan, char **err)
{
	char *why = NULL;
	/* OpenSSL writes with write(2): a client gone must be an error, not SIGPIPE for the test. */
	signal(SIGPIPE, SIG_IGN);
	struct fault_proxy *p = xcalloc(1, sizeof(*p));
	p->listen_fd = -1;
	p->upstream_port = upstream_port;
	p->plan = *plan;
	p->server_ctx = server_context(ca_cert_file, ca_key_file, &why);
	p->client_ctx = SSL_CTX_new(TLS_client_method());
	if (!p->server_ctx || !p->client_ctx || SSL_CTX_load_verify_locations(p->client_ctx, ca_cert_file, NULL) != 1)
		goto fail;
	SSL_CTX_set_verify(p->client_ctx, SSL_VERIFY_PEER, NULL);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(p->listen_fd, 128) < 0 || getsockname(p->listen_fd, (struct sockaddr *)&a, &len) < 0 ||
	    pipe(p->wake) < 0)
		goto fail;
	p->port = ntohs(a.sin_port);
	hashmap_init(&p->seen);
	hashmap_init(&p->unknown);
	p->unsafe = json_array();
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->idle, NULL);
	if (pthread_create(&p->acceptor, NULL, acceptor, p))
		abort();
	return p;
fail:
	if (err)
		*err = why ? why : xstrdup("cannot start the fault proxy (TLS contexts or socket)");
	else
		free(why);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	SSL_CTX_free(p->server_ctx);
	SSL_CTX_free(p->client_ctx);
	ERR_clear_error();
	free(p);
	return NULL;
}

void fault_proxy_stop(struct fault_proxy *p)
{
	if (!p)
		return;
	if (write(p->wake[1], "x", 1) != 1)
		abort();
	pthread_join(p->acceptor, NULL);
	pthread_mutex_lock(&p->lock);
	for (struct served *s = p->served; s; s = s->next) {
		shutdown(s->fd, SHUT_RDWR);
		if (s->up_fd >= 0)
			shutdown(s->up_fd, SHUT_RDWR);
	}
	while (p->served)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
	close(p->listen_fd);
	close(p->wake[0]);
	close(p->wake[1]);
	hashmap_release(&p->seen, NULL);
	hashmap_release(&p->unknown, NULL);
	json_decref(p->unsafe);
	SSL_CTX_free(p->server_ctx);
	SSL_CTX_free(p->client_ctx);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->idle);
	free(p);
}

int fault_proxy_port(const struct fault_proxy *p)
{
	return p->port;
}

void fault_proxy_set_percent(struct fault_proxy *p, int percent)
{
	pthread_mutex_lock(&p->lock);
	p->plan.percent = percent;
	pthread_mutex_unlock(&p->lock);
}

long fault_proxy_counts(struct fault_proxy *p, long counts[FAULT_KINDS])
{
	long total = 0;
	pthread_mutex_lock(&p->lock);
	for (int k = 0; k < FAULT_KINDS; k++) {
		counts[k] = p->counts[k];
		total += counts[k];
	}
	pthread_mutex_unlock(&p->lock);
	return total;
}

long fault_proxy_non_watch_faults(struct fault_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	long n = p->non_watch_faults;
	pthread_mutex_unlock(&p->lock);
	return n;
}

json_t *fault_proxy_unsafe_repeats(struct fault_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	json_t *copy = json_deep_copy(p->unsafe);
	pthread_mutex_unlock(&p->lock);
	return copy;
}
