/*
 * The informer's in-memory cache: objects keyed "namespace/name", with
 * secondary indexes. Objects are kept as compact JSON text, deflated with
 * a dictionary (the first object of the store: objects of one type are
 * alike), not as parsed trees. That costs an inflate and a parse per read
 * but a twentieth of the memory of jansson trees; and readers get their
 * own copy, so nobody can change the cache by accident.
 *
 * Everything it holds was parsed under the informer's budget
 * (KUBE_OBJECT_MAX_PARSED) and is kept as the text of a subset of that
 * tree (managedFields dropped), so no read of it can cost more.
 *
 * Threads: every function may be called from any thread (a rwlock inside).
 */
#ifndef SOP_RUNTIME_STORE_H
#define SOP_RUNTIME_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct store;

/*
 * An index function: the values obj is indexed under, as a new array of
 * new strings (*values), and their count. May return 0 values.
 */
typedef size_t (*store_index_fn)(const json_t *obj, char ***values);

struct store *store_new(void);
void store_free(struct store *s);

/* Adds an index; only before the first object is stored. Returns its id. */
int store_add_index(struct store *s, const char *name, store_index_fn fn);
bool store_has_index(struct store *s, const char *name);

/*
 * Stores obj (borrowed) under its key. *old (when old is not NULL)
 * receives the object it replaced (new reference) or NULL. Returns false,
 * storing nothing, when the stored object has the same resourceVersion
 * (a duplicate delivery).
 */
bool store_upsert(struct store *s, const json_t *obj, json_t **old);

/* Removes key; *old (may be NULL) receives the removed object. Returns false when absent. */
bool store_delete(struct store *s, const char *key, json_t **old);

/*
 * Key is left out (informer.h: its object too large to read): removes its
 * object (*old as store_delete) and remembers the key until an object is
 * stored or deleted under it. A controller must not take the key's absence
 * for the object being gone. Returns whether an object was removed.
 */
bool store_refuse(struct store *s, const char *key, json_t **old);
/* Whether key is left out: its object exists but this cache cannot hold it. */
bool store_refused(struct store *s, const char *key);

/* A new reference to a copy of the object, or NULL. */
json_t *store_get(struct store *s, const char *key);

/* The stored resourceVersion of key (new string) or NULL. */
char *store_resource_version(struct store *s, const char *key);

/*
 * Objects whose index (by name) includes value: a new array of copies.
 * Indexes are made for values that hold a few objects each (a workload's,
 * an owner's): updating an object costs time linear in the objects under
 * each of its values.
 */
json_t *store_by_index(struct store *s, const char *index, const char *value);

/* Every object: a new array of copies. */
json_t *store_list(struct store *s);

/* Every key: a new array of new strings, *n items. */
char **store_keys(struct store *s, size_t *n);

size_t store_len(struct store *s);
/*
 * How many objects the store has handed out so far (each one an inflate and
 * a parse): what a reconcile costs in reads, for tests and benchmarks.
 */
size_t store_objects_read(struct store *s);

/* Ready-made index functions. */
size_t store_index_namespace(const json_t *obj, char ***values);
/* The UIDs of the object's owner references. */
size_t store_index_owner_uid(const json_t *obj, char ***values);

#endif
