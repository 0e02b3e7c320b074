/*
 * What autoresize said last, so that a Warning comes once per change and
 * not at every poll: "<ns>/<name>/<template>/<what>" -> the news last
 * said. Its keys come from what tenants write (workload names, policy
 * annotation keys), so it is bounded: each poll forgets the entries of
 * workloads, and of policies, that are gone, and it never holds more than
 * AUTORESIZE_SAID_MAX entries. When full, news of a new subject is not
 * said (an Event that could not be remembered would come again at every
 * poll), and the log says so once.
 *
 * Threads: the autoresize controller's one worker.
 */
#ifndef SOP_CONTROLLERS_AUTORESIZE_SAID_H
#define SOP_CONTROLLERS_AUTORESIZE_SAID_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Entries kept at most. A workload needs one or two per template with a
 * policy, and one or two per claim of a scope=claim policy. Measured
 * (test_autoresize_said, test_memory_bound, with the bucket array): the
 * longest entry (names at their limits, news longer than any message)
 * 1,224 bytes, a full map of them 9.6 MiB; the usual entry
 * ("shop/db-0/data/usage" -> "unavailable") 168 bytes, 1.3 MiB full.
 */
#define AUTORESIZE_SAID_MAX 8192

struct autoresize_said {
	json_t *said;     /* "<ns>/<name>/<template>/<what>" -> the news last said (string) */
	bool full_logged; /* the log said the map is full; again once it was not */
};

void autoresize_said_init(struct autoresize_said *m);
void autoresize_said_release(struct autoresize_said *m);

/*
 * True when news (borrowed) is not what was said last under key: it is
 * remembered now, and the caller says it. False when it was said, or when
 * key is new and the map is full (nothing remembered, nothing to say).
 */
bool autoresize_said_news(struct autoresize_said *m, const char *key, const char *news);
/* Forgets key; true when something was said under it. */
bool autoresize_said_forget(struct autoresize_said *m, const char *key);
/*
 * Forgets every entry but those of a (workload, template) that sets or
 * clusters (arrays of StatefulSets, StatefulClusters; borrowed; either may
 * be NULL) carry a policy annotation for, of workload-wide news
 * (template "*") of those workloads, and of the subjects "<a>/<b>/<c>"
 * that are keys of also (borrowed, may be NULL: the templates a
 * Namespace's or StorageClass's policy covers, and those objects).
 */
void autoresize_said_prune(struct autoresize_said *m, const json_t *sets, const json_t *clusters,
			   const json_t *also);
size_t autoresize_said_size(const struct autoresize_said *m);

#endif
