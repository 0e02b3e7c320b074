/*
 * Who the API server takes a client for: its username, as a
 * SelfSubjectReview (authentication.k8s.io/v1, served from Kubernetes
 * 1.28, and which every authenticated user may create) answers it. The
 * same question whatever the credential: a service account's token in the
 * pod, a kubeconfig's token or client certificate, an exec plugin. The
 * admission webhook compares it with the requester of a create.
 *
 * Threads: one call at start-up, on the client's thread.
 */
#ifndef SOP_CLIENT_KUBE_WHOAMI_H
#define SOP_CLIENT_KUBE_WHOAMI_H

#include "client/kube_client.h"

/* Asks the API server; *username is a new string on success. */
int kube_whoami(struct kube_client *c, char **username, struct kube_error *err) __attribute__((warn_unused_result));

#endif
