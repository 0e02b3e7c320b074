/*
 * kubectl's global flags over a resolved kubeconfig (struct kube_overrides,
 * kube_config.h): the fields they replace, checked as the kubeconfig's own
 * are (a URL without userinfo, header values without control characters).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_config.h"
#include "client/kube_config_internal.h"
#include "util/xalloc.h"

static void set_str(char **field, const char *value)
{
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

void kube_config_drop_credentials(struct kube_config *cfg)
{
	set_str(&cfg->cert_file, NULL);
	set_str(&cfg->key_file, NULL);
	FREE_AND_NULL(cfg->cert_data.data);
	cfg->cert_data.len = 0;
	if (cfg->key_data.data)
		explicit_bzero(cfg->key_data.data, cfg->key_data.len);
	FREE_AND_NULL(cfg->key_data.data);
	cfg->key_data.len = 0;
	if (cfg->token)
		explicit_bzero(cfg->token, strlen(cfg->token));
	set_str(&cfg->token, NULL);
	set_str(&cfg->token_file, NULL);
	kube_exec_config_free(cfg->exec);
	cfg->exec = NULL;
}

/* A flag's value that goes into a header: no control characters, not empty. */
static int flag_header_value(const char *flag, const char *v, char **err)
{
	for (const char *p = v; *p; p++) {
		if (iscntrl((unsigned char)*p)) {
			*err = xasprintf("%s contains a line break or control character", flag);
			return -1;
		}
	}
	if (!*v) {
		*err = xasprintf("%s is empty", flag);
		return -1;
	}
	return 0;
}

int kube_config_apply_overrides(struct kube_config *cfg, const struct kube_overrides *o, char **err)
{
	if (o->server) {
		char *url = NULL, *why = NULL;
		if (kube_server_url(o->server, &url, &why) < 0) {
			*err = xasprintf("--server %s", why);
			free(why);
			return -1;
		}
		free(cfg->server);
		cfg->server = url;
	}
	if (o->tls_server_name)
		set_str(&cfg->tls_server_name, *o->tls_server_name ? o->tls_server_name : NULL);
	if (o->certificate_authority) {
		set_str(&cfg->ca_file, o->certificate_authority);
		FREE_AND_NULL(cfg->ca_data.data);
		cfg->ca_data.len = 0;
		cfg->insecure_skip_tls_verify = false;
	}
	if (o->insecure_skip_tls_verify >= 0) {
		cfg->insecure_skip_tls_verify = o->insecure_skip_tls_verify == 1;
		if (cfg->insecure_skip_tls_verify && o->certificate_authority) {
			*err = xstrdup("--insecure-skip-tls-verify and --certificate-authority are both given; keep one");
			return -1;
		}
		if (cfg->insecure_skip_tls_verify) {
			set_str(&cfg->ca_file, NULL);
			FREE_AND_NULL(cfg->ca_data.data);
			cfg->ca_data.len = 0;
		}
	}
	if ((o->client_certificate != NULL) != (o->client_key != NULL)) {
		*err = xstrdup(o->client_certificate ? "--client-certificate needs --client-key"
						     : "--client-key needs --client-certificate");
		return -1;
	}
	if (o->token && o->client_certificate) {
		*err = xstrdup("--token and --client-certificate are both given; keep one");
		return -1;
	}
	if (o->token) {
		if (flag_header_value("--token", o->token, err) < 0)
			return -1;
		kube_config_drop_credentials(cfg);
		cfg->token = xstrdup(o->token);
	} else if (o->client_certificate) {
		kube_config_drop_credentials(cfg);
		cfg->cert_file = xstrdup(o->client_certificate);
		cfg->key_file = xstrdup(o->client_key);
	}
	if (o->as) {
		if (flag_header_value("--as", o->as, err) < 0)
			return -1;
		set_str(&cfg->impersonate_user, o->as);
	}
	if (o->as_uid) {
		if (flag_header_value("--as-uid", o->as_uid, err) < 0)
			return -1;
		set_str(&cfg->impersonate_uid, o->as_uid);
	}
	if (o->nas_groups) {
		for (size_t i = 0; i < o->nas_groups; i++)
			if (flag_header_value("--as-group", o->as_groups[i], err) < 0)
				return -1;
		for (size_t i = 0; i < cfg->nimpersonate_groups; i++)
			free(cfg->impersonate_groups[i]);
		cfg->impersonate_groups = xrealloc(cfg->impersonate_groups, o->nas_groups * sizeof(char *));
		for (size_t i = 0; i < o->nas_groups; i++)
			cfg->impersonate_groups[i] = xstrdup(o->as_groups[i]);
		cfg->nimpersonate_groups = o->nas_groups;
	}
	if ((cfg->impersonate_uid || cfg->nimpersonate_groups) && !cfg->impersonate_user) {
		*err = xstrdup("--as-group and --as-uid need --as (the user to act as)");
		return -1;
	}
	return 0;
}

