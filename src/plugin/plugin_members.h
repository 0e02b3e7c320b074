/*
 * What `kubectl stateful members stc/NAME` prints of a StatefulCluster's
 * status.members ([{"identity", "pod", "node", "ready", "revision",
 * "phase"}]): kubectl's way for pods, IDENTITY, POD, READY, PHASE, with
 * NODE and REVISION under -o wide; the array itself for json, yaml and
 * jsonpath; pod/NAME lines for -o name. Pure; thread-safe.
 */
#ifndef SOP_PLUGIN_MEMBERS_H
#define SOP_PLUGIN_MEMBERS_H

#include <jansson.h>

#include "plugin/plugin_output.h"

/* members (an array, borrowed) as f asks: 0 with *out a new string, or -1 with *err a new message. */
int members_render(const json_t *members, const struct plugin_format *f, char **out, char **err)
	__attribute__((warn_unused_result));

#endif
