/*
 * What kubeconfig.c and kube_overrides.c share, not for other callers.
 */
#ifndef SOP_CLIENT_KUBE_CONFIG_INTERNAL_H
#define SOP_CLIENT_KUBE_CONFIG_INTERNAL_H

#include "client/kube_config.h"

void kube_exec_config_free(struct kube_exec_config *x);

/* Frees the user's credentials (key and token wiped first) and leaves their fields empty. */
void kube_config_drop_credentials(struct kube_config *cfg);

/* Applies the field overrides of o to cfg (its entries chosen already): 0, or -1 and *err (new) naming the flag. */
int kube_config_apply_overrides(struct kube_config *cfg, const struct kube_overrides *o, char **err)
	__attribute__((warn_unused_result));

#endif
