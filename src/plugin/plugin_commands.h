/*
 * The subcommands of kubectl-stateful, one file each. Each takes an open
 * session (its args say what was asked) and returns the exit status
 * (PLUGIN_EXIT_*), having printed what the user needs.
 */
#ifndef SOP_PLUGIN_COMMANDS_H
#define SOP_PLUGIN_COMMANDS_H

#include "plugin/plugin_session.h"

int plugin_cmd_status(struct plugin_session *s);
int plugin_cmd_resize(struct plugin_session *s);
/*
 * Follows the resize of StatefulSet name to its end (resize --wait): a
 * state whose "started" is stale_started (may be NULL) is the one before
 * the request, and Events before since_s, or in before (NULL, or what
 * plugin_resize_events_before said just before the request), are older ones.
 */
int plugin_wait_resize(struct plugin_session *s, const char *name, const char *stale_started, long long since_s,
		       const json_t *before);
/* The Events about StatefulSet name now, as name -> {count, message} (a new object). */
json_t *plugin_resize_events_before(struct plugin_session *s, const char *name);
int plugin_cmd_abort(struct plugin_session *s);
int plugin_cmd_explain(struct plugin_session *s);
int plugin_cmd_cleanup(struct plugin_session *s);
int plugin_cmd_members(struct plugin_session *s);
/* members remove|replace stc/NAME MEMBER... (args->members_op). */
int plugin_cmd_members_edit(struct plugin_session *s);
int plugin_cmd_uninstall(struct plugin_session *s);

/* The completion script for shell ("bash" or "zsh"; static text), or NULL. */
const char *plugin_completion_script(const char *shell);

#endif
