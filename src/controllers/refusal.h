/*
 * Why a request parser refused what a user asked: the Event's reason and a
 * message that says what is wrong and what to fix. Both parsers (resize,
 * scale-down) fill one; the planner turns it into a Warning Event.
 */
#ifndef SOP_CONTROLLERS_REFUSAL_H
#define SOP_CONTROLLERS_REFUSAL_H

struct refusal {
	const char *reason; /* CamelCase Event reason; static */
	char *message;      /* new string: what is wrong and what to fix */
};

/* Fills r and returns -1, for `return refuse(r, ...)`. */
int refuse(struct refusal *r, const char *reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Frees the message and empties r. Safe on an empty refusal. */
void refusal_release(struct refusal *r);

#endif
