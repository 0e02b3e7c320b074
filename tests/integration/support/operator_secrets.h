/*
 * The operator's two Secrets (the state key, the webhook's certificate) as
 * deploy/ installs them: empty, for the operator to fill. It may not create
 * them (runtime/own_secret.h), so every test that runs it makes them first.
 */
#ifndef SOP_IT_OPERATOR_SECRETS_H
#define SOP_IT_OPERATOR_SECRETS_H

#include "client/kube_client.h"

/* Where the test bed runs the operator as its ServiceAccount (SOP_OPERATOR_KUBECONFIG). */
#define IT_OPERATOR_NS "stateful-operator-system"

/*
 * Creates the Secrets of deploy/base/state-key-secret.yaml and
 * deploy/webhook/secret.yaml in ns, empty; one already there is left as it
 * is (filled or not). Fails the test on any other error.
 */
void it_operator_secrets(struct kube_client *admin, const char *ns);

/* it_operator_secrets in IT_OPERATOR_NS, once per test program. */
void it_operator_secrets_once(void);

#endif
