#include "itest.h"

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
#include <time.h>

#include "util/strbuf.h"
#include "util/xalloc.h"

#ifndef SOP_SOURCE_DIR
#error "SOP_SOURCE_DIR must name the repository (set by CMake)"
#endif

struct kube_client *it_client_from(const char *kubeconfig, const char *server)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (!kubeconfig)
		fail_msg("no kubeconfig: run the integration tests through scripts/test, or "
			 "eval \"$(scripts/local-cluster env)\" first");
	if (kubeconfig_load(kubeconfig, NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	if (server) {
		free(cfg.server);
		cfg.server = xstrdup(server);
	}
	struct kube_client *c = kube_client_new(&cfg, NULL, &err);
	if (!c)
		fail_msg("%s", err);
	return c;
}

struct kube_client *it_admin_client(void)
{
	return it_client_from(getenv("KUBECONFIG"), NULL);
}

struct kube_client *it_operator_client(void)
{
	return it_client_from(getenv("SOP_OPERATOR_KUBECONFIG"), NULL);
}

char *it_namespace_new(struct kube_client *admin, const char *prefix)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char *name = xasprintf("%s-%lx", prefix, (unsigned long)(ts.tv_nsec ^ (ts.tv_sec << 20)) & 0xffffff);
	json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			       "metadata", "name", name);
	struct kube_error err;
	if (kube_create(admin, &KUBE_NAMESPACES, NULL, ns, NULL, &err) < 0)
		fail_msg("create namespace %s: %s", name, err.message);
	json_decref(ns);
	/* Pods need the namespace's default ServiceAccount, made by the controller-manager. */
	for (int i = 0; i < 500; i++) {
		char *path = xasprintf("/api/v1/namespaces/%s/serviceaccounts/default", name);
		int rc = kube_request(admin, "GET", path, NULL, NULL, NULL, &err);
		free(path);
		if (rc == 0)
			return name;
		it_sleep_ms(20);
	}
	fail_msg("namespace %s: no default ServiceAccount after 10 s", name);
	return name;
}

void it_namespace_delete(struct kube_client *admin, const char *ns)
{
	struct kube_error err;
	struct kube_delete_options o = {.propagation_policy = "Background"};
	if (kube_delete(admin, &KUBE_NAMESPACES, NULL, ns, &o, &err) < 0 && err.code != 404)
		fprintf(stderr, "warning: delete namespace %s: %s\n", ns, err.message);
}

json_t *it_json(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	json_error_t jerr;
	json_t *o = json_loads(text, 0, &jerr);
	if (!o)
		fail_msg("test JSON does not parse: %s: %s", jerr.text, text);
	free(text);
	return o;
}

double it_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void it_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool it_wait(bool (*cond)(void *ctx), void *ctx, long timeout_ms)
{
	double until = it_now_ms() + (double)timeout_ms;
	for (;;) {
		if (cond(ctx))
			return true;
		if (it_now_ms() > until)
			return false;
		it_sleep_ms(10);
	}
}

int it_sh(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	free(cmd);
	if (rc == -1)
		return -1;
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

const char *it_source_dir(void)
{
	return SOP_SOURCE_DIR;
}

char *it_sh_output(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *cmd = xvasprintf(fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	if (!p)
		fail_msg("cannot run %s", cmd);
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		if (strbuf_add(&sb, buf, n) < 0)
			break;
	int rc = pclose(p);
	if (rc != 0)
		fail_msg("command failed (status %d): %s", rc, cmd);
	free(cmd);
	while (sb.len && sb.buf[sb.len - 1] == '\n')
		sb.buf[--sb.len] = '\0';
	return strbuf_detach(&sb);
}

char *it_write_kubeconfig(const char *dir, const char *name, const char *server, const char *token,
			  const char *ns)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("SOP_OPERATOR_KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	char *ca = xasprintf("%s/%s.ca.crt", dir, name);
	FILE *f = fopen(ca, "w");
	if (!f)
		fail_msg("cannot write %s", ca);
	fwrite(cfg.ca_data.data, 1, cfg.ca_data.len, f);
	fclose(f);
	char *path = xasprintf("%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s", path);
	fprintf(f,
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"clusters: [{name: k, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
		"users: [{name: u, user: {token: '%s'}}]\n"
		"contexts: [{name: c, context: {cluster: k, user: u%s%s}}]\n",
		server ? server : cfg.server, ca, token, ns ? ", namespace: " : "", ns ? ns : "");
	fclose(f);
	chmod(path, 0600);
	kube_config_release(&cfg);
	free(ca);
	return path;
}

char *it_operator_token(void)
{
	struct kube_config cfg = {0};
	char *err = NULL;
	if (kubeconfig_load(getenv("SOP_OPERATOR_KUBECONFIG"), NULL, &cfg, &err) < 0)
		fail_msg("%s", err);
	if (!cfg.token)
		fail_msg("the operator kubeconfig has no token");
	char *t = xstrdup(cfg.token);
	kube_config_release(&cfg);
	return t;
}

json_t *it_events(struct kube_client *c, const char *ns, const char *field_selector)
{
	struct kube_list_options lo = {.field_selector = field_selector};
	json_t *page = NULL;
	struct kube_error err;
	if (kube_list_page(c, &KUBE_EVENTS, ns, &lo, &page, &err) < 0)
		fail_msg("list events: %s", err.message);
	json_t *items = json_incref(json_object_get(page, "items"));
	json_decref(page);
	return items;
}

static bool str_is(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

static int count_ready_bound(struct kube_client *c, const char *ns, int *bound)
{
	json_t *pods = NULL, *pvcs = NULL;
	struct kube_error err;
	int ready = 0;
	*bound = 0;
	if (kube_list_all(c, &KUBE_PODS, ns, NULL, 0, &pods, NULL, &err) == 0 &&
	    kube_list_all(c, &KUBE_PVCS, ns, NULL, 0, &pvcs, NULL, &err) == 0) {
		size_t i;
		json_t *o;
		json_array_foreach(pods, i, o) ready += kube_obj_condition(o, "Ready", NULL) &&
							!kube_obj_str(o, "metadata.deletionTimestamp");
		json_array_foreach(pvcs, i, o) *bound += str_is(kube_obj_str(o, "status.phase"), "Bound");
	}
	json_decref(pods);
	json_decref(pvcs);
	return ready;
}

void it_wait_ready_and_bound(struct kube_client *c, const char *ns, int pods, int claims, long timeout_ms)
{
	double until = it_now_ms() + (double)timeout_ms;
	for (;;) {
		int bound;
		int ready = count_ready_bound(c, ns, &bound);
		if (ready == pods && bound == claims)
			return;
		if (it_now_ms() > until)
			fail_msg("%s: %d/%d pods Ready, %d/%d claims Bound after %ld ms", ns, ready, pods, bound,
				 claims, timeout_ms);
		it_sleep_ms(100);
	}
}
