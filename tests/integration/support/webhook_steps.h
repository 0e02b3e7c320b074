/*
 * Steps the webhook integration tests share (it_webhook.c,
 * it_webhook_templates.c): deploy/webhook's configuration registered to call
 * this test's operator on 127.0.0.1 (wh_group_setup/teardown), a per-test
 * fixture (namespace, the operator serving the webhook, a manifest file),
 * kubectl verbs on the manifest, waits on the set's claims. Failures abort
 * the test through cmocka's fail_msg. Test-only; call from the test's thread.
 */
#ifndef SOP_IT_WEBHOOK_STEPS_H
#define SOP_IT_WEBHOOK_STEPS_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"
#include "daemon.h"

#define WH_SET "web"
#define WH_WAIT_MS 90000L

struct wh_test {
	struct kube_client *admin;
	char *ns;
	struct daemon d;    /* the operator; d.pid 0 when none runs */
	char manifest[128]; /* the file kubectl is given */
};

/* cmocka group setup/teardown: a free port, the webhook configuration; removed after. */
int wh_group_setup(void **state);
int wh_group_teardown(void **state);
/* cmocka setup/teardown: namespace, an operator serving the webhook with every controller, caBundle written. */
int wh_setup(void **state);
int wh_teardown(void **state);

/* Starts an operator serving the webhook with controllers (a --controllers list); waits for its caches. */
void wh_start_operator(struct daemon *d, const char *controllers);
/* The same with --webhook-cert-dir cert_dir (NULL: without). */
void wh_start_operator_cert_dir(struct daemon *d, const char *controllers, const char *cert_dir);
/* Kills it (-9). */
void wh_kill_operator(struct daemon *d);
/* A port nobody listens on now (the kernel's pick), for an operator to bind. */
int wh_free_port(void);
/* "127.0.0.1:PORT" the operator's webhook listens on. */
const char *wh_address(void);

/* A 2-replica set WH_SET, template "data" of size in class cls (NULL: default), container image. New object. */
json_t *wh_statefulset(const char *size, const char *cls, const char *image);
/* Writes obj to f->manifest. */
void wh_write(struct wh_test *f, const json_t *obj);
/* Writes wh_statefulset(size, NULL, image). */
void wh_write_manifest(struct wh_test *f, const char *size, const char *image);
/* The data template of a manifest (borrowed). */
json_t *wh_template(json_t *sts, size_t i);

/* kubectl <verb> -n ns -f manifest: its exit status, its output in *out (new string; may be NULL). */
int wh_kubectl(struct wh_test *f, const char *verb, char **out);
/* Applies (kubectl apply) the manifest and waits for the set's 2 pods and claims. */
void wh_create(struct wh_test *f);

/* Waits until the template and both claims are at size, no resize in flight or left; the log on failure. */
void wh_wait_all_at_size(struct wh_test *f, const char *size);
/*
 * Waits until the set has no resize state, no desired templates and no
 * saved copy left (with a new UID when old_uid is given).
 */
void wh_wait_settled(struct wh_test *f, const char *old_uid);
/* The set (new reference) or NULL. */
json_t *wh_get_set(struct wh_test *f);
/* The operator's log on stderr. */
void wh_dump_log(struct wh_test *f);

#endif
