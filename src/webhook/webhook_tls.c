#include "webhook/webhook_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "util/base64.h"
#include "util/log.h"
#include "util/xalloc.h"
#include "runtime/own_secret.h"
#include "webhook/webhook.h"
#include "webhook/webhook_cert.h"

#define CA_COMMON_NAME "stateful-operator-webhook-ca"
#define CA_DAYS CERT_CA_DAYS_DEFAULT
#define SERVING_DAYS CERT_SERVING_DAYS_DEFAULT
#define SYNC_ATTEMPTS 3 /* conflicts in a row before giving up until the next sync */

struct webhook_tls {
	struct kube_client *client;
	char *ns;
	char **names;
	bool dry_run;
	struct cert_bundle bundle;
	char *config_problem; /* the last reason the caBundle could not be written, to log it once */
};

struct webhook_tls *webhook_tls_new(struct kube_client *client, const char *ns, const char *const *names,
				    bool dry_run)
{
	struct webhook_tls *t = xcalloc(1, sizeof(*t));
	size_t n = 0;
	while (names[n])
		n++;
	t->names = xcalloc(n + 1, sizeof(*t->names));
	for (size_t i = 0; i < n; i++)
		t->names[i] = xstrdup(names[i]);
	t->client = client;
	t->ns = xstrdup(ns);
	t->dry_run = dry_run;
	return t;
}

void webhook_tls_free(struct webhook_tls *t)
{
	if (!t)
		return;
	for (char **n = t->names; *n; n++)
		free(*n);
	free(t->names);
	cert_bundle_release(&t->bundle);
	free(t->config_problem);
	free(t->ns);
	free(t);
}

const char *webhook_tls_cert(const struct webhook_tls *t)
{
	return t->bundle.cert_pem;
}

const char *webhook_tls_key(const struct webhook_tls *t)
{
	return t->bundle.key_pem;
}

/*
 * What the Secret should hold from now on, made from what it holds (*b,
 * replaced when something was due). Returns 1 when the Secret must be
 * written, 0 when it is fine as it is, -1 with *err.
 */
static int renew(struct webhook_tls *t, struct cert_bundle *b, long long now_s, char **err)
{
	char *why = NULL;
	enum cert_action action = cert_bundle_check(b, (const char *const *)t->names, now_s, &why);
	if (action == CERT_OK) {
		free(why);
		return 0;
	}
	log_info("webhook", "%s: %s", action == CERT_NEW_CA ? "making a new webhook CA" : "renewing the webhook's "
												  "serving certificate",
		 why);
	free(why);
	/* A new CA drops the serving certificate it did not sign; the old CA stays in the caBundle until it expires. */
	if (action == CERT_NEW_CA && cert_bundle_make_ca(b, CA_COMMON_NAME, CA_DAYS, now_s, err) < 0)
		return -1;
	if (cert_bundle_make_serving(b, (const char *const *)t->names, SERVING_DAYS, now_s, err) < 0)
		return -1;
	return 1;
}

/*
 * One read (and maybe one write) of the Secret into t->bundle; 1 to try
 * again (a conflict), 0 done, -1 error. The Secret is installed empty
 * (runtime/own_secret.h): it is filled and renewed by an update guarded by
 * the resourceVersion read, never created. A dry run that finds none
 * serves a certificate kept nowhere.
 */
static int sync_secret_once(struct webhook_tls *t, long long now_s, char **err)
{
	struct kube_error kerr = {0};
	json_t *secret = NULL;
	struct cert_bundle b = CERT_BUNDLE_INIT;
	int rc = kube_get(t->client, &KUBE_SECRETS, t->ns, WEBHOOK_SECRET, &secret, &kerr);
	if (rc < 0 && kerr.code == 404 && !t->dry_run) {
		*err = own_secret_missing(t->ns, WEBHOOK_SECRET);
		return -1;
	}
	if (rc < 0 && kerr.code != 404) {
		*err = xasprintf("cannot read Secret %s/%s: %s (the operator needs get and update on it: see "
				 "deploy/webhook/rbac.yaml)",
				 t->ns, WEBHOOK_SECRET, kerr.message);
		return -1;
	}
	if (secret) {
		char *perr = NULL;
		if (cert_bundle_from_secret(secret, &b, &perr) < 0) {
			log_warn("webhook", "Secret %s/%s cannot be read (%s): making a new certificate", t->ns,
				 WEBHOOK_SECRET, perr);
			cert_bundle_release(&b);
		}
		free(perr);
	}
	int write = renew(t, &b, now_s, err);
	rc = write < 0 ? -1 : 0;
	if (write > 0 && secret && !t->dry_run) {
		json_t *put = own_secret_filled(secret, cert_bundle_secret_data(&b));
		int w = kube_replace(t->client, &KUBE_SECRETS, t->ns, WEBHOOK_SECRET, NULL, put, NULL, &kerr);
		json_decref(put);
		if (w < 0 && kerr.code == 409) {
			rc = 1; /* another replica wrote it first: its certificate is the one to serve */
		} else if (w < 0 && kerr.code == 404) {
			*err = own_secret_missing(t->ns, WEBHOOK_SECRET);
			rc = -1;
		} else if (w < 0) {
			*err = xasprintf("cannot write Secret %s/%s: %s (the operator needs update on it: see "
					 "deploy/webhook/rbac.yaml)",
					 t->ns, WEBHOOK_SECRET, kerr.message);
			rc = -1;
		} else {
			log_info("webhook", "wrote the certificate into Secret %s/%s", t->ns, WEBHOOK_SECRET);
		}
	}
	if (rc == 0) {
		cert_bundle_release(&t->bundle);
		t->bundle = b;
	} else {
		cert_bundle_release(&b);
	}
	json_decref(secret);
	return rc;
}

/* Logs why the caBundle is not in step, once per reason. */
static void config_problem(struct webhook_tls *t, char *why)
{
	if (!t->config_problem || strcmp(t->config_problem, why))
		log_warn("webhook", "%s", why);
	free(t->config_problem);
	t->config_problem = why;
}

/*
 * Every webhook of the configuration gets the CA in its caBundle, ahead of
 * the CAs it held that have not expired (a CA rotation: replicas still
 * serving a certificate of the old CA stay trusted); a JSON patch per
 * webhook that differs, each guarded by a test of its name.
 */
static void sync_ca_bundle(struct webhook_tls *t, long long now_s)
{
	json_t *config = NULL;
	struct kube_error kerr = {0};
	if (kube_get(t->client, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, WEBHOOK_CONFIGURATION, &config, &kerr) <
	    0) {
		config_problem(t, xasprintf("cannot read MutatingWebhookConfiguration %s (%s): the API server does not "
					    "call the webhook, so template changes are refused as without the operator; "
					    "apply deploy/webhook, or grant get and patch on it",
					    WEBHOOK_CONFIGURATION, kerr.message));
		return;
	}
	json_t *ops = json_array();
	size_t i;
	json_t *hook;
	json_array_foreach(json_object_get(config, "webhooks"), i, hook) {
		const char *now_b64 = kube_obj_str(hook, "clientConfig.caBundle");
		size_t len = 0;
		char *now_pem = now_b64 ? base64_decode(now_b64, &len) : NULL;
		char *pem = cert_ca_bundle(t->bundle.ca_cert_pem, now_pem, now_s);
		char *want = pem ? base64_encode(pem, strlen(pem)) : NULL;
		if (want && (!now_b64 || strcmp(now_b64, want))) {
			char path[64];
			snprintf(path, sizeof(path), "/webhooks/%zu/name", i);
			json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path", path, "value",
							     kube_obj_str(hook, "name")));
			snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
			json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "add", "path", path, "value", want));
		}
		free(want);
		free(pem);
		free(now_pem);
	}
	if (!json_array_size(ops) || t->dry_run) {
		free(t->config_problem);
		t->config_problem = NULL;
	} else if (kube_patch(t->client, &KUBE_MUTATINGWEBHOOKCONFIGURATIONS, NULL, WEBHOOK_CONFIGURATION, NULL,
			      KUBE_PATCH_JSON, ops, NULL, &kerr) < 0) {
		config_problem(t, xasprintf("cannot write the caBundle of MutatingWebhookConfiguration %s: %s (the "
					    "operator needs patch on it: see deploy/webhook/rbac.yaml)",
					    WEBHOOK_CONFIGURATION, kerr.message));
	} else {
		log_info("webhook", "caBundle of MutatingWebhookConfiguration %s set (%zu webhooks)", WEBHOOK_CONFIGURATION,
			 json_array_size(ops) / 2);
		free(t->config_problem);
		t->config_problem = NULL;
	}
	json_decref(ops);
	json_decref(config);
}

int webhook_tls_sync(struct webhook_tls *t, long long now_s, char **err)
{
	*err = NULL;
	char *before = t->bundle.cert_pem ? xstrdup(t->bundle.cert_pem) : NULL;
	int rc = 1;
	for (int attempt = 0; rc == 1 && attempt < SYNC_ATTEMPTS; attempt++)
		rc = sync_secret_once(t, now_s, err);
	if (rc == 1 && !*err)
		*err = xasprintf("Secret %s/%s changed under every write (another replica?); trying again later",
				 t->ns, WEBHOOK_SECRET);
	if (rc != 0 || !t->bundle.cert_pem) {
		free(before);
		return -1;
	}
	sync_ca_bundle(t, now_s);
	bool changed = !before || strcmp(before, t->bundle.cert_pem);
	free(before);
	return changed ? 1 : 0;
}
