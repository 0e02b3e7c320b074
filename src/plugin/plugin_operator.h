/*
 * Is an operator running? kubectl-stateful asks before it writes an
 * annotation nobody would act on. The operator counts as running when
 * its Lease (stateful-operator, in the operator's namespace) has a holder
 * that renewed it within its duration (plus a few seconds of clock skew),
 * or, for an operator run without --leader-elect, when a pod labelled
 * app.kubernetes.io/name=stateful-operator in that namespace is Ready (a
 * pod run with --leader-elect is Ready once it can serve, standby or not:
 * only the Lease tells whether it acts).
 * What the user may not read (403) proves nothing either way.
 *
 * Pure: the objects and the time come in. Thread-safe.
 */
#ifndef SOP_PLUGIN_OPERATOR_H
#define SOP_PLUGIN_OPERATOR_H

#include <jansson.h>
#include <stdbool.h>

#define OPERATOR_LEASE_NAME "stateful-operator"
#define OPERATOR_POD_SELECTOR "app.kubernetes.io/name=stateful-operator"
#define OPERATOR_LEASE_SKEW_S 5

enum operator_seen {
	OPERATOR_RUNNING,
	OPERATOR_NOT_RUNNING,
	OPERATOR_UNKNOWN, /* neither the Lease nor the pods could be read */
};

struct operator_evidence {
	const json_t *lease;   /* borrowed; NULL: none */
	bool lease_readable;   /* false: the read was refused */
	const json_t *pods;    /* array, borrowed; NULL: none */
	bool pods_readable;
};

/*
 * Judges ev at now_s. *why (new string) says what was seen: who leads
 * (the Lease's holder), or why no operator counts as running (to quote to
 * the user).
 */
enum operator_seen operator_judge(const struct operator_evidence *ev, const char *ns, long long now_s, char **why);

#endif
