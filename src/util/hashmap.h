/*
 * A string-keyed hash map with separate chaining. Keys are copied; values
 * are borrowed pointers the caller owns. Not thread-safe: the owner locks.
 */
#ifndef SOP_UTIL_HASHMAP_H
#define SOP_UTIL_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hashmap_entry;

struct hashmap {
	struct hashmap_entry **buckets;
	size_t nbuckets;
	size_t len;
};

struct hashmap_iter {
	const struct hashmap *map;
	size_t bucket;
	struct hashmap_entry *next;
};

#define HASHMAP_INIT {NULL, 0, 0}

void hashmap_init(struct hashmap *m);
/* Frees the entries; free_value (may be NULL) is called on each value. */
void hashmap_release(struct hashmap *m, void (*free_value)(void *));
/* The value stored under key, or NULL. */
void *hashmap_get(const struct hashmap *m, const char *key);
/* Stores value (not NULL) under key; returns the value it replaced, or NULL. */
void *hashmap_put(struct hashmap *m, const char *key, void *value);
/* Removes key; returns its value, or NULL when absent. */
void *hashmap_remove(struct hashmap *m, const char *key);
static inline size_t hashmap_len(const struct hashmap *m) { return m->len; }

/* Iteration; the map must not change while iterating. */
void hashmap_iter_init(struct hashmap_iter *it, const struct hashmap *m);
/* Returns 1 and sets *key (borrowed) and *value, or 0 at the end. */
int hashmap_iter_next(struct hashmap_iter *it, const char **key, void **value);

uint64_t hashmap_hash(const char *s);

#endif
