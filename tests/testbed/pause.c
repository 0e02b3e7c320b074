/*
 * testbed-pause: the sandbox ("pause") container of the test bed's real node.
 * A pod's sandbox holds its namespaces open and, as PID 1 of a shared PID
 * namespace, reaps orphans; it exits on SIGTERM/SIGINT. No registry is
 * reachable here, so the upstream image cannot be pulled; this one is built
 * static into an image of one file (scripts/testbed-images). A test tool.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void reap(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "-v")) {
		puts("testbed-pause");
		return 0;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = reap;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	for (;;)
		pause();
}
