#include "util/hashmap.h"

#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

struct hashmap_entry {
	struct hashmap_entry *next;
	uint64_t hash;
	void *value;
	char key[]; /* stored inline: one allocation per entry */
};

/* FNV-1a: short keys, no adversary choosing them beyond API object names. */
uint64_t hashmap_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

void hashmap_init(struct hashmap *m)
{
	m->buckets = NULL;
	m->nbuckets = 0;
	m->len = 0;
}

void hashmap_release(struct hashmap *m, void (*free_value)(void *))
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hashmap_entry *e = m->buckets[i];
		while (e) {
			struct hashmap_entry *next = e->next;
			if (free_value)
				free_value(e->value);
			free(e);
			e = next;
		}
	}
	FREE_AND_NULL(m->buckets);
	m->nbuckets = 0;
	m->len = 0;
}

static struct hashmap_entry **find_slot(const struct hashmap *m, const char *key, uint64_t h)
{
	struct hashmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
	while (*pp && ((*pp)->hash != h || strcmp((*pp)->key, key)))
		pp = &(*pp)->next;
	return pp;
}

void *hashmap_get(const struct hashmap *m, const char *key)
{
	if (!m->len)
		return NULL;
	struct hashmap_entry *e = *find_slot(m, key, hashmap_hash(key));
	return e ? e->value : NULL;
}

static void grow(struct hashmap *m)
{
	size_t n = m->nbuckets ? m->nbuckets * 2 : 4; /* index sets hold a few keys each */
	struct hashmap_entry **b = xcalloc(n, sizeof(*b));
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hashmap_entry *e = m->buckets[i];
		while (e) {
			struct hashmap_entry *next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
}

void *hashmap_put(struct hashmap *m, const char *key, void *value)
{
	if (m->len >= m->nbuckets * 3 / 4)
		grow(m);
	uint64_t h = hashmap_hash(key);
	struct hashmap_entry **pp = find_slot(m, key, h);
	if (*pp) {
		void *old = (*pp)->value;
		(*pp)->value = value;
		return old;
	}
	size_t klen = strlen(key);
	struct hashmap_entry *e = xmalloc(sizeof(*e) + klen + 1);
	e->next = NULL;
	e->hash = h;
	e->value = value;
	memcpy(e->key, key, klen + 1);
	*pp = e;
	m->len++;
	return NULL;
}

void *hashmap_remove(struct hashmap *m, const char *key)
{
	if (!m->len)
		return NULL;
	struct hashmap_entry **pp = find_slot(m, key, hashmap_hash(key));
	struct hashmap_entry *e = *pp;
	if (!e)
		return NULL;
	*pp = e->next;
	void *value = e->value;
	free(e);
	m->len--;
	return value;
}

void hashmap_iter_init(struct hashmap_iter *it, const struct hashmap *m)
{
	it->map = m;
	it->bucket = 0;
	it->next = NULL;
}

int hashmap_iter_next(struct hashmap_iter *it, const char **key, void **value)
{
	while (!it->next) {
		if (it->bucket >= it->map->nbuckets)
			return 0;
		it->next = it->map->buckets[it->bucket++];
	}
	struct hashmap_entry *e = it->next;
	it->next = e->next;
	*key = e->key;
	*value = e->value;
	return 1;
}
