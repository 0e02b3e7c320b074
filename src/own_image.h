/*
 * The image this operator runs, read from its own Pod: the default image of
 * the resize copy Jobs (the operator image carries rsync), so that an
 * operator image that was retagged or mirrored (kustomize images:, a Helm
 * value) is also what the copies use, without --copy-image.
 */
#ifndef SOP_OWN_IMAGE_H
#define SOP_OWN_IMAGE_H

#include <jansson.h>

/*
 * The image of the operator's container in pod (borrowed): the only
 * container, else the one named "manager" (deploy/base). New string, or NULL
 * with *why (new string) saying why none could be chosen.
 */
char *own_image_of_pod(const json_t *pod, char **why);

#endif
