#include "kubelet_trap.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "util/xalloc.h"

static const char SUMMARY[] = "{\"node\":{\"nodeName\":\"trap\"},\"pods\":[]}";

struct kubelet_trap {
	int listen_fd;
	int port;
	SSL_CTX *ctx;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;
	struct kubelet_trap_seen seen;
};

/* Any client certificate is taken: the point is to see whether one is sent. */
static int accept_any(int ok, X509_STORE_CTX *store)
{
	(void)ok;
	(void)store;
	return 1;
}

/* The value of header name in head (new string), or NULL. */
static char *header_value(const char *head, const char *name)
{
	size_t n = strlen(name);
	for (const char *line = strstr(head, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
		const char *h = line + 2;
		if (!strncasecmp(h, name, n) && h[n] == ':') {
			h += n + 1;
			while (*h == ' ')
				h++;
			return xstrndup(h, strcspn(h, "\r\n"));
		}
	}
	return NULL;
}

static void serve(struct kubelet_trap *t, int fd)
{
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	SSL *ssl = SSL_new(t->ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		goto out;
	X509 *peer = SSL_get1_peer_certificate(ssl);
	if (peer) {
		pthread_mutex_lock(&t->lock);
		t->seen.client_cert = true;
		pthread_mutex_unlock(&t->lock);
		X509_free(peer);
	}
	char head[16384];
	size_t got = 0;
	while (got < sizeof(head) - 1) {
		int n = SSL_read(ssl, head + got, (int)(sizeof(head) - 1 - got));
		if (n <= 0)
			goto out;
		got += (size_t)n;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	pthread_mutex_lock(&t->lock);
	t->seen.requests++;
	char *auth = header_value(head, "Authorization");
	if (auth) {
		free(t->seen.authorization);
		t->seen.authorization = auth;
	}
	pthread_mutex_unlock(&t->lock);
	char *answer = xasprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
				 "Connection: close\r\n\r\n%s",
				 strlen(SUMMARY), SUMMARY);
	SSL_write(ssl, answer, (int)strlen(answer));
	free(answer);
	SSL_shutdown(ssl);
out:
	SSL_free(ssl);
	ERR_clear_error();
}

static void *run(void *arg)
{
	struct kubelet_trap *t = arg;
	while (!atomic_load(&t->stop)) {
		struct pollfd p = {t->listen_fd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept(t->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		serve(t, fd);
		close(fd);
	}
	return NULL;
}

static void use_pem(SSL_CTX *ctx, const char *cert_pem, const char *key_pem)
{
	BIO *b = BIO_new_mem_buf(cert_pem, -1);
	X509 *cert = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	b = BIO_new_mem_buf(key_pem, -1);
	EVP_PKEY *key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	if (!cert || !key || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1)
		fail_msg("kubelet trap: the serving certificate or key is not usable");
	X509_free(cert);
	EVP_PKEY_free(key);
}

struct kubelet_trap *kubelet_trap_start(const char *address, const char *cert_pem, const char *key_pem)
{
	struct kubelet_trap *t = xcalloc(1, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->ctx = SSL_CTX_new(TLS_server_method());
	if (!t->ctx)
		abort();
	use_pem(t->ctx, cert_pem, key_pem);
	/* Ask for a client certificate: a client that has one configured sends it. */
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, accept_any);
	t->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(t->listen_fd >= 0);
	int one = 1;
	setsockopt(t->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in addr = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, address, &addr.sin_addr) != 1)
		fail_msg("kubelet trap: %s is not an IPv4 address", address);
	socklen_t len = sizeof(addr);
	if (bind(t->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(t->listen_fd, 16) != 0 ||
	    getsockname(t->listen_fd, (struct sockaddr *)&addr, &len) != 0)
		fail_msg("kubelet trap: cannot listen on %s", address);
	t->port = ntohs(addr.sin_port);
	assert_int_equal(pthread_create(&t->thread, NULL, run, t), 0);
	return t;
}

int kubelet_trap_port(const struct kubelet_trap *t)
{
	return t->port;
}

void kubelet_trap_seen(struct kubelet_trap *t, struct kubelet_trap_seen *seen)
{
	pthread_mutex_lock(&t->lock);
	*seen = t->seen;
	seen->authorization = t->seen.authorization ? xstrdup(t->seen.authorization) : NULL;
	pthread_mutex_unlock(&t->lock);
}

void kubelet_trap_seen_release(struct kubelet_trap_seen *seen)
{
	FREE_AND_NULL(seen->authorization);
}

void kubelet_trap_stop(struct kubelet_trap *t)
{
	if (!t)
		return;
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
	close(t->listen_fd);
	SSL_CTX_free(t->ctx);
	kubelet_trap_seen_release(&t->seen);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
