/*
 * Credentials for each request: a static token, a token file re-read at
 * least every minute (projected service-account tokens rotate) and after
 * a 401, or an exec plugin's credential cached until it expires and
 * renewed in the background during its last 10 s.
 *
 * The plugin may take up to 60 s, so it never runs under auth_lock: the
 * threads that hold a usable credential go on, the ones that need a new
 * one wait for the run under way and share its outcome (one run, however
 * many waiters, failures included).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client_internal.h"
#include "client/kube_credentials.h"
#include "util/log.h"
#include "util/xalloc.h"

/* Token files are re-read at least this often (service-account tokens rotate). */
#define TOKEN_FILE_REFRESH_SECONDS 60
#define TOKEN_FILE_MAX (64u << 10)

int kube_token_file_read(const char *path, char **out, char **err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		*err = xasprintf("cannot read token file %s: %s", path, strerror(errno));
		return -1;
	}
	struct strbuf sb;
	strbuf_init(&sb, TOKEN_FILE_MAX);
	char buf[4096];
	size_t n;
	int rc = 0;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (strbuf_add(&sb, buf, n) < 0) {
			*err = xasprintf("token file %s is larger than %u bytes", path, TOKEN_FILE_MAX);
			rc = -1;
			break;
		}
	}
	fclose(f);
	if (rc) {
		strbuf_release(&sb);
		return rc;
	}
	while (sb.len && (sb.buf[sb.len - 1] == '\n' || sb.buf[sb.len - 1] == '\r' ||
			  sb.buf[sb.len - 1] == ' '))
		sb.buf[--sb.len] = '\0';
	if (!sb.len) {
		strbuf_release(&sb);
		*err = xasprintf("token file %s is empty", path);
		return -1;
	}
	/* The token goes into a header line: a line break inside would add headers of its own. */
	for (size_t i = 0; i < sb.len; i++) {
		if (iscntrl((unsigned char)sb.buf[i])) {
			explicit_bzero(sb.buf, sb.len);
			strbuf_release(&sb);
			*err = xasprintf("token file %s contains a line break or control character", path);
			return -1;
		}
	}
	*out = strbuf_detach(&sb);
	return 0;
}

void kube__request_auth_release(struct request_auth *a)
{
	FREE_AND_NULL(a->bearer);
	FREE_AND_NULL(a->cert.data);
	FREE_AND_NULL(a->key.data);
}

static struct kube_blob blob_dup(const struct kube_blob *b)
{
	struct kube_blob out = {NULL, 0};
	if (b->data) {
		out.data = xmalloc(b->len + 1);
		memcpy(out.data, b->data, b->len);
		out.data[b->len] = '\0';
		out.len = b->len;
	}
	return out;
}

/* Renew an exec credential this long before it expires (in the background while it lasts). */
#define EXEC_RENEW_AHEAD_SECONDS 10
/* After a failed background renewal, wait this long before the next one. */
#define EXEC_RENEW_RETRY_SECONDS 2

/* Under auth_lock: keeps what a plugin run returned (steals cred) and wakes the waiters. */
static void exec_store(struct kube_client *c, int rc, struct kube_exec_credential *cred,
		       const char *err)
{
	c->exec_running = false;
	c->exec_runs++;
	FREE_AND_NULL(c->exec_err);
	if (rc == 0) {
		kube_exec_credential_release(&c->exec_cred);
		c->exec_cred = *cred;
		c->exec_cred_valid = true;
	} else {
		c->exec_err = xstrdup(err ? err : "exec plugin failed");
		c->exec_retry_at = time(NULL) + EXEC_RENEW_RETRY_SECONDS;
	}
	pthread_cond_broadcast(&c->exec_cond);
}

static void *exec_renew(void *arg)
{
	struct kube_client *c = arg;
	struct kube_exec_credential cred = {0};
	char *err = NULL;
	int rc = kube_exec_credential_get(c->cfg.exec, c->cfg.server, &cred, &err);
	if (rc < 0)
		log_warn("client", "renewing the exec credential: %s; the current one is used until "
			 "it expires", err);
	pthread_mutex_lock(&c->auth_lock);
	exec_store(c, rc, &cred, err);
	pthread_mutex_unlock(&c->auth_lock);
	free(err);
	return NULL;
}

/* Under auth_lock, no run under way: starts a background renewal (none when threads fail). */
static void exec_start_renewal(struct kube_client *c)
{
	if (c->exec_thread_joinable) {
		/* It has stored its result (exec_running is false): only its return is left. */
		pthread_join(c->exec_thread, NULL);
		c->exec_thread_joinable = false;
	}
	c->exec_running = true;
	if (pthread_create(&c->exec_thread, NULL, exec_renew, c) != 0) {
		c->exec_running = false;
		return;
	}
	c->exec_thread_joinable = true;
}

/*
 * Under auth_lock, released while the plugin runs so that the threads
 * with a usable credential are never held up by it. Fills a's bearer or
 * certificate from the exec credential.
 */
static int exec_auth(struct kube_client *c, bool refresh, struct request_auth *a, char **err)
{
	unsigned long seen = c->exec_runs;
	for (;;) {
		if (c->exec_runs != seen) {
			/* A run ended while we waited: its outcome is ours, a refresh included. */
			if (c->exec_err) {
				*err = xstrdup(c->exec_err);
				return -1;
			}
			refresh = false;
		}
		time_t now = time(NULL);
		long long exp = c->exec_cred.expires_at;
		bool usable = c->exec_cred_valid && (!exp || exp > now);
		bool fresh = usable && (!exp || exp - EXEC_RENEW_AHEAD_SECONDS > now);
		if (!refresh && fresh)
			break;
		if (!refresh && usable) {
			if (!c->exec_running && now >= c->exec_retry_at)
				exec_start_renewal(c);
			break;
		}
		if (c->exec_running) {
			pthread_cond_wait(&c->exec_cond, &c->auth_lock);
			continue;
		}
		c->exec_running = true;
		pthread_mutex_unlock(&c->auth_lock);
		struct kube_exec_credential cred = {0};
		char *e = NULL;
		int rc = kube_exec_credential_get(c->cfg.exec, c->cfg.server, &cred, &e);
		pthread_mutex_lock(&c->auth_lock);
		exec_store(c, rc, &cred, e);
		if (rc < 0) {
			*err = e;
			return -1;
		}
		break; /* what the plugin just gave, even if it says it expires at once */
	}
	if (c->exec_cred.token)
		a->bearer = xstrdup(c->exec_cred.token);
	a->cert = blob_dup(&c->exec_cred.cert_data);
	a->key = blob_dup(&c->exec_cred.key_data);
	return 0;
}

int kube__get_auth(struct kube_client *c, bool refresh, struct request_auth *a, char **err)
{
	memset(a, 0, sizeof(*a));
	if (c->cfg.token) {
		a->bearer = xstrdup(c->cfg.token);
		return 0;
	}
	int rc = 0;
	pthread_mutex_lock(&c->auth_lock);
	if (c->cfg.token_file) {
		time_t now = time(NULL);
		if (refresh || !c->file_token || now - c->file_token_at >= TOKEN_FILE_REFRESH_SECONDS) {
			char *tok = NULL;
			if (kube_token_file_read(c->cfg.token_file, &tok, err) < 0) {
				rc = -1;
				goto out;
			}
			free(c->file_token);
			c->file_token = tok;
			c->file_token_at = now;
		}
		a->bearer = xstrdup(c->file_token);
	} else if (c->cfg.exec) {
		rc = exec_auth(c, refresh, a, err);
	}
out:
	pthread_mutex_unlock(&c->auth_lock);
	return rc;
}

void kube__auth_release(struct kube_client *c)
{
	pthread_mutex_lock(&c->auth_lock);
	bool join = c->exec_thread_joinable;
	c->exec_thread_joinable = false;
	pthread_mutex_unlock(&c->auth_lock);
	if (join)
		pthread_join(c->exec_thread, NULL);
}
