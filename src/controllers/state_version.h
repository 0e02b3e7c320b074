/*
 * The version of the state documents the controllers keep in annotations
 * (resize-state, scaledown-state, cluster-state): key "v", an integer.
 * A release may only add fields to a state; one that changes what a field
 * means writes a higher version, and keeps reading the versions before it
 * for at least one release (docs/design.md, "State versions").
 *
 * The reader takes a state without "v" as version 1 (what every release
 * before versions wrote), reads every version up to STATE_VERSION, and
 * refuses any other: a state written by a newer operator (or a "v" that is
 * not a positive integer) is left as it is, with a Warning Event that says
 * to upgrade the operator or roll the state's writer back.
 *
 * Pure; safe from any thread.
 */
#ifndef SOP_CONTROLLERS_STATE_VERSION_H
#define SOP_CONTROLLERS_STATE_VERSION_H

#include <jansson.h>
#include <stdbool.h>

#define STATE_VERSION_KEY "v"
#define STATE_VERSION 1 /* what this operator writes, and the highest it reads */
/* The Warning Event's reason on a state this operator does not read. */
#define STATE_VERSION_REFUSED "StateVersionUnknown"

/* The version of state (borrowed; may be NULL): 1 without "v"; -1 when "v" is not a positive integer. */
long long state_version_of(const json_t *state);

/* True when this operator reads state (borrowed; NULL: there is none, which it reads too). */
bool state_version_known(const json_t *state);

/* Records STATE_VERSION in state (borrowed, modified; a JSON object), as every write does. */
void state_version_stamp(json_t *state);

/*
 * The Warning Event's message for state (borrowed), kept in annotation
 * (its key) of object (e.g. "StatefulSet ns/web"). New string.
 */
char *state_version_refusal(const json_t *state, const char *annotation, const char *object);

/*
 * The planners' guard: when the state in annotation (its key) of obj
 * (borrowed, e.g. a StatefulSet; kind names it in the message) is a JSON
 * object of a version this operator does not read, a is made a refusal
 * (ACTION_REFUSE) with a Warning STATE_VERSION_REFUSED Event, and true is
 * returned: the caller plans nothing else. False otherwise (a untouched).
 */
struct action;
bool state_version_refuse(const json_t *obj, const char *annotation, const char *kind, struct action *a);

#endif
