/*
 * One step a controller takes: the vocabulary every planner speaks, and
 * the one function that performs it against the API server.
 *
 * A planner (pure: the cluster in, one action out) fills a struct action;
 * the reconcile driver (reconciler.h) performs it with action_perform and
 * records it (Event, metrics, crash hook). Every step is one create, patch
 * or delete of one object with preconditions. A step the lagging cache
 * must not decide alone gets a live check first (reconciler_ops.check); a
 * step whose request is built from a live read is ACTION_OWN and its
 * controller sends it (reconciler_ops.perform_own: resize's Save).
 *
 * Threads: an action belongs to the reconcile that made it.
 */
#ifndef SOP_RUNTIME_ACTION_H
#define SOP_RUNTIME_ACTION_H

#include <jansson.h>
#include <stdbool.h>

#include "client/kube_client.h"

enum action_verb {
	ACTION_NOTHING, /* nothing to do */
	ACTION_REFUSE,  /* bad input: the Event says what to fix; nothing changed */
	ACTION_WAIT,    /* the cluster is working: look again after requeue_ms */
	ACTION_CREATE,  /* create body as resource */
	ACTION_PATCH,   /* patch object name (subresource) with body as patch_type */
	ACTION_DELETE,  /* delete object name with the preconditions, propagation, grace */
	ACTION_OWN,     /* the controller sends it itself (reconciler_ops.perform_own) */
};

/*
 * What an error answer means (action.answers). By default every error is a
 * failure (the key is retried with backoff). OK: the step is done (a create
 * repeated after a crash finds its object; a delete finds it gone). STALE:
 * the cluster moved on since the planner looked (a precondition failed):
 * look again soon; no Event, no crash hook.
 */
#define ACTION_OK_404 (1u << 0)
#define ACTION_OK_409 (1u << 1)
#define ACTION_STALE_404 (1u << 2)
#define ACTION_STALE_409 (1u << 3)

#define ACTION_MAX_COUNTS 2
/* The longest status line (bytes): what a status annotation holds, whatever it quotes. */
#define ACTION_STATUS_MAX 1024

struct action {
	enum action_verb verb;
	const char *what; /* the step's name for logs and SOP_TEST_CRASH_AFTER, e.g. "OrphanDelete" (static) */
	/* The object: its namespace comes from the reconciled key when resource->namespaced. */
	const struct kube_resource *resource;
	char name[256];
	const char *subresource;   /* PATCH: "status", or NULL */
	char uid[64];              /* DELETE: precondition (empty: none) */
	char resource_version[32]; /* DELETE: precondition (empty: none); a PATCH carries its own in the body */
	json_t *body;              /* CREATE, PATCH, OWN: new reference */
	enum kube_patch_type patch_type;
	const char *propagation;   /* DELETE: "Orphan", "Background", or NULL */
	bool force;                /* DELETE: grace period 0 */
	unsigned answers;          /* ACTION_OK_* / ACTION_STALE_* */
	/* Recorded once the step succeeded: */
	const char *event_type;    /* "Normal" / "Warning", or NULL: no Event */
	const char *event_reason;  /* static */
	char *event_message;       /* new string */
	struct {
		const char *family; /* metric family (static), or NULL */
		long long by;
	} counts[ACTION_MAX_COUNTS];
	struct {
		const char *family; /* histogram family (static), or NULL */
		const char *label;  /* its one label's value (static) */
		double v;
	} observed;
	char *status;              /* the controller's status line for this step (new string, clean: text_sanitize), or NULL */
	json_t *state;             /* the controller's state this step writes (new reference), or NULL */
	long requeue_ms;           /* WAIT: look again then; otherwise at the latest then (0: the default) */
	json_t *created;           /* a CREATE performed: the object as the API server answered (new reference), or NULL */
};

void action_init(struct action *a);
/* Frees what the action owns and leaves it as action_init does. */
void action_release(struct action *a);

/* The verb's name: "Nothing", "Create"... Static. */
const char *action_verb_name(enum action_verb v);
/* what, or the verb's name. Static. */
const char *action_name(const struct action *a);

void action_event(struct action *a, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void action_status(struct action *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void action_wait(struct action *a, long ms);
void action_count(struct action *a, const char *family, long long by);
/* One observation v in histogram family (its label value: label), recorded with the step. */
void action_observe(struct action *a, const char *family, const char *label, double v);


/* Fills the object fields. body is stolen (may be NULL); name may be NULL (create: from the body). */
void action_create(struct action *a, const char *what, const struct kube_resource *r, json_t *body);
void action_patch(struct action *a, const char *what, const struct kube_resource *r, const char *name,
		  json_t *body);
/* A delete of obj (borrowed), with its UID as precondition. */
void action_delete(struct action *a, const char *what, const struct kube_resource *r, const json_t *obj);
/*
 * Preconditions of a merge patch, in its body: metadata.resourceVersion
 * (a decision on a stale cache then conflicts) or metadata.uid (the object
 * the planner saw, not one made since under its name). NULL: none.
 */
void action_patch_precondition(struct action *a, const char *resource_version, const char *uid);

/*
 * Performs a CREATE, PATCH or DELETE (other verbs do nothing) in namespace
 * ns. Returns 0 when done (or an OK answer), -1 with *err filled on
 * failure; *stale is set on a STALE answer (then 0). A create the server
 * answered with its object leaves that in a->created.
 */
int action_perform(struct kube_client *client, const char *ns, struct action *a, bool *stale,
		   struct kube_error *err) __attribute__((warn_unused_result));

#endif
