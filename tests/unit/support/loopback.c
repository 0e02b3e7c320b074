#include "loopback.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "client/kube_config.h"
#include "util/xalloc.h"

int loopback_listen(int backlog, int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in addr = {.sin_family = AF_INET};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	*port = ntohs(addr.sin_port);
	return fd;
}

struct kube_client *loopback_client(int port, const struct kube_client_options *o)
{
	struct kube_config cfg = {0};
	cfg.server = xasprintf("http://127.0.0.1:%d", port);
	cfg.token = xstrdup("t");
	char *err = NULL;
	struct kube_client *c = kube_client_new(&cfg, o, &err);
	if (!c)
		fail_msg("client: %s", err ? err : "?");
	return c;
}
