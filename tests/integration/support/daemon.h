/*
 * Runs the stateful-operator binary under test as a child process, its
 * output in a log file, with helpers to wait for a log line, probe its
 * HTTP endpoints and stop it. Test-only.
 */
#ifndef SOP_IT_DAEMON_H
#define SOP_IT_DAEMON_H

#include <stdbool.h>
#include <sys/types.h>

struct daemon {
	pid_t pid;
	char log[64];
};

/*
 * Starts the operator with args (NULL-terminated) and env (NULL-terminated
 * "NAME=VALUE" items added to the environment; may be NULL).
 */
void daemon_start(struct daemon *d, const char *const *args, const char *const *env);
/*
 * Starts the operator as its own ServiceAccount (SOP_OPERATOR_KUBECONFIG),
 * listeners off, with env (may be NULL) added; waits for its caches to
 * sync unless wait_sync is false (a process that will kill itself early).
 */
void daemon_start_operator(struct daemon *d, const char *const *env, bool wait_sync);
/*
 * The operator with SOP_TEST_CRASH_AFTER=step (it kills itself right after
 * that step), or, when step is NULL, a normal one whose caches have synced.
 */
struct daemon daemon_start_operator_crashing(const char *step);
/*
 * Runs an operator with SOP_TEST_CRASH_AFTER=step until it kills itself.
 * Returns true when it did (SIGKILL) within timeout_ms; otherwise false with
 * its log in *log (new string), the process gone.
 */
bool daemon_run_operator_until_crash(const char *step, long timeout_ms, char **log);
/* SIGTERM, then the operator must exit 0 within 10 s; its log is removed. */
void daemon_stop_operator(struct daemon *d);

/* The log so far: a new string. */
char *daemon_log(const struct daemon *d);
/* Waits until the log contains needle; false after timeout_ms. */
bool daemon_wait_log(const struct daemon *d, const char *needle, long timeout_ms);
/* Waits for the process to exit; its exit status (128+signal when killed), or -1 after timeout_ms (then it is killed). */
int daemon_wait_exit(struct daemon *d, long timeout_ms);
/* Sends sig. */
void daemon_signal(const struct daemon *d, int sig);
/* d still runs; once it has exited (reaped here), false with *exit_code as daemon_wait_exit gives it. */
bool daemon_running(struct daemon *d, int *exit_code);
/* Removes the log file. */
void daemon_cleanup(struct daemon *d);
/* GET http://127.0.0.1:port/path; returns the HTTP code (0 when no answer); *body (may be NULL) a new string. */
long http_get(int port, const char *path, char **body);

#endif
