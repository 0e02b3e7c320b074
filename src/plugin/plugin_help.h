/*
 * kubectl-stateful's help: the general usage (kubectl stateful --help)
 * and each command's, with examples (kubectl stateful resize --help, or
 * kubectl stateful help resize), as kubectl's own commands have them.
 *
 * Static texts; thread-safe.
 */
#ifndef SOP_PLUGIN_HELP_H
#define SOP_PLUGIN_HELP_H

#include "plugin/plugin_args.h"

/* The general usage: commands, kubectl's flags, exit statuses. */
const char *plugin_usage(void);

/* The help of one command (PLUGIN_HELP: the general usage). */
const char *plugin_command_help(enum plugin_cmd cmd);

#endif
