#include "runtime/listener.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/xalloc.h"

#define LISTEN_BACKLOG 64

/*
 * Splits "host:port", "[v6]:port" or ":port" into *host (new string, ""
 * for all interfaces) and *port. On error returns -1 and sets *why
 * (static text).
 */
static int split_address(const char *addr, char **host, char port[6], bool *bracketed, const char **why)
{
	const char *colon, *host_start = addr, *host_end;

	*bracketed = false;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close) {
			*why = "missing ']' after the IPv6 address";
			return -1;
		}
		if (close == addr + 1) {
			*why = "empty IPv6 address in []";
			return -1;
		}
		if (close[1] != ':') {
			*why = "missing port after ']' (e.g. \"[::1]:8080\")";
			return -1;
		}
		*bracketed = true;
		host_start = addr + 1;
		host_end = close;
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon) {
			*why = "missing port (e.g. \":8080\" for all interfaces, \"127.0.0.1:8080\", or \"0\" to disable)";
			return -1;
		}
		if (memchr(addr, ':', (size_t)(colon - addr))) {
			*why = "an IPv6 address needs brackets (e.g. \"[::1]:8080\")";
			return -1;
		}
		host_end = colon;
	}

	const char *p = colon + 1;
	size_t n = strlen(p);
	if (n == 0) {
		*why = "missing port after ':'";
		return -1;
	}
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || i >= 5) {
			*why = "the port must be a number from 0 to 65535";
			return -1;
		}
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v > 65535) {
		*why = "the port must be a number from 0 to 65535";
		return -1;
	}
	snprintf(port, 6, "%lu", v);
	*host = xstrndup(host_start, (size_t)(host_end - host_start));
	return 0;
}

/* A listening socket for sa, or -1 with errno set. */
static int listen_on(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int on = 1, off = 0, saved;

	if (fd < 0)
		return -1;
	/* Restarts must not wait for TIME_WAIT connections of the old process. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		goto fail;
	/* "[::]:port" (and ":port") serve IPv4 too, as Go's net.Listen does. */
	if (sa->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0)
		goto fail;
	if (bind(fd, sa, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

int listener_open(const char *addr, char **err)
{
	char *host = NULL;
	char port[6];
	bool bracketed;
	const char *why;
	int fd = -1;

	if (split_address(addr, &host, port, &bracketed, &why) < 0) {
		*err = xasprintf("invalid bind address \"%s\": %s", addr, why);
		goto out;
	}

	if (!*host) {
		/* All interfaces: IPv6 dual-stack, or IPv4 where the kernel has
		 * no IPv6 (some container runtimes switch it off). */
		struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
					    .sin6_port = htons((uint16_t)atoi(port))};
		struct sockaddr_in any4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
					   .sin_port = htons((uint16_t)atoi(port))};
		fd = listen_on((const struct sockaddr *)&any6, sizeof(any6));
		if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
			fd = listen_on((const struct sockaddr *)&any4, sizeof(any4));
		if (fd < 0)
			*err = xasprintf("cannot listen on \"%s\": %s", addr, strerror(errno));
		goto out;
	}

	struct addrinfo hints = {
		.ai_family = bracketed ? AF_INET6 : AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV | (bracketed ? AI_NUMERICHOST : 0),
	};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		*err = xasprintf("invalid bind address \"%s\": %s%s", addr,
				 bracketed ? "not an IPv6 address: " : "cannot resolve host: ",
				 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		goto out;
	}
	int last_errno = EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = listen_on(ai->ai_addr, ai->ai_addrlen);
		if (fd < 0)
			last_errno = errno;
	}
	freeaddrinfo(res);
	if (fd < 0)
		*err = xasprintf("cannot listen on \"%s\": %s", addr, strerror(last_errno));
out:
	free(host);
	return fd;
}

int listener_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

