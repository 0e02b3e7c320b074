/*
 * `kubectl stateful <TAB>`: kubectl (1.26+) asks an executable named
 * kubectl_complete-stateful for the candidates, the way cobra's
 * __complete does: one candidate a line, then ":4" (no file names). Ours
 * is `kubectl-stateful __complete WORDS...` (plugins/kubectl_complete-stateful
 * runs it). What to offer depends only on the words (pure, here); the
 * object names come from the cluster (kubectl_stateful.c).
 */
#ifndef SOP_PLUGIN_COMPLETE_H
#define SOP_PLUGIN_COMPLETE_H

enum complete_kind {
	COMPLETE_NOTHING,  /* a value the user types (TEMPLATE=SIZE, a namespace) */
	COMPLETE_COMMANDS,
	COMPLETE_FLAGS,
	COMPLETE_SHELLS,
	COMPLETE_OUTPUTS,
	COMPLETE_STRATEGIES,
	COMPLETE_STS,      /* sts/NAME */
	COMPLETE_STC,      /* stc/NAME */
	COMPLETE_STS_STC,
	COMPLETE_STC_OR_MEMBER_OPS, /* after members: remove, replace, or stc/NAME */
	COMPLETE_MEMBERS,           /* members remove|replace stc/NAME: its members (where->object) */
};

/* The connection flags found among the words (borrowed; NULL when absent). */
struct complete_where {
	const char *kubeconfig, *context, *namespace;
	const char *object; /* COMPLETE_MEMBERS: the StatefulCluster typed (stc/NAME or NAME) */
};

/*
 * What to offer for the last of words[0..n-1] (the word being typed,
 * possibly empty); fills *where from the words before it.
 */
enum complete_kind complete_what(int n, char *const *words, struct complete_where *where);

/* The fixed candidates of kind (a NULL-terminated static list), or NULL for object names and NOTHING. */
const char *const *complete_words(enum complete_kind kind);

#endif
