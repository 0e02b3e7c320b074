/*
 * Credentials for each request: a static token, a token file re-read at
 * least every minute (projected service-account tokens rotate) and after
 * a 401, or an exec plugin's credential cached until shortly before it
 * expires.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_client_internal.h"
#include "util/xalloc.h"

/* Token files are re-read at least this often (service-account tokens rotate). */
#define TOKEN_FILE_REFRESH_SECONDS 60
#define TOKEN_FILE_MAX (64u << 10)

static int read_token_file(const char *path, char **out, char **err)
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

int kube__get_auth(struct kube_client *c, bool refresh, struct request_auth *a, char **err)
{
	memset(a, 0, sizeof(*a));
	if (c->cfg.token) {
		a->bearer = xstrdup(c->cfg.token);
		return 0;
	}
	int rc = 0;
	pthread_mutex_lock(&c->auth_lock);
	time_t now = time(NULL);
	if (c->cfg.token_file) {
		if (refresh || !c->file_token || now - c->file_token_at >= TOKEN_FILE_REFRESH_SECONDS) {
			char *tok = NULL;
			if (read_token_file(c->cfg.token_file, &tok, err) < 0) {
				rc = -1;
				goto out;
			}
			free(c->file_token);
			c->file_token = tok;
			c->file_token_at = now;
		}
		a->bearer = xstrdup(c->file_token);
	} else if (c->cfg.exec) {
		/* Renew a little before expiry so a request never carries a dying token. */
		bool expired = c->exec_cred.expires_at && c->exec_cred.expires_at - 10 <= now;
		if (refresh || !c->exec_cred_valid || expired) {
			struct kube_exec_credential cred = {0};
			if (kube_exec_credential_get(c->cfg.exec, c->cfg.server, &cred, err) < 0) {
				rc = -1;
				goto out;
			}
			kube_exec_credential_release(&c->exec_cred);
			c->exec_cred = cred;
			c->exec_cred_valid = true;
		}
		if (c->exec_cred.token)
			a->bearer = xstrdup(c->exec_cred.token);
		a->cert = blob_dup(&c->exec_cred.cert_data);
		a->key = blob_dup(&c->exec_cred.key_data);
	}
out:
	pthread_mutex_unlock(&c->auth_lock);
	return rc;
}

