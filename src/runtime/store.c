#include "runtime/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "client/kube_object.h"
#include "util/hashmap.h"
#include "util/xalloc.h"

#define STORE_MAX_INDEXES 8
/* deflate's window: a longer dictionary would not be used. */
#define DICT_MAX 32768
/* The shared deflater's output buffer is kept up to this size between objects. */
#define PACKER_KEEP_MAX (256 * 1024)

struct store_entry;

/*
 * The entries indexed under one value. An array, not a set: the indexes
 * the controllers use hold a few objects per value (a workload's, an
 * owner's), where 8 bytes an entry beat a hash set's key copies. Removal
 * is linear in the value's entries.
 */
struct index_set {
	struct store_entry **v;
	size_t n, cap;
};

struct store_index {
	char *name;
	store_index_fn fn;
	struct hashmap values; /* value -> struct index_set */
};

/*
 * One allocation per object: a fleet's caches hold tens of thousands, and
 * separate blocks for the text, the resourceVersion and each index value
 * cost more than the compressed object itself.
 */
struct store_entry {
	uint32_t zlen;      /* data[0..zlen): the object's compact JSON, raw-deflated with the store's dictionary */
	uint32_t len;       /* uncompressed length */
	const char *rv;     /* in data, or NULL */
	/* The values this entry is indexed under, to unindex it without a parse: index i's come after index i-1's. */
	const char **values; /* in data */
	uint16_t nvalues[STORE_MAX_INDEXES];
	unsigned char data[];
};

struct store {
	pthread_rwlock_t lock;
	struct hashmap objects; /* key -> struct store_entry */
	/* Keys left out (store_refuse): the object exists but is too large to read; value (void *)1. */
	struct hashmap refused;
	struct store_index indexes[STORE_MAX_INDEXES];
	int nindexes;
	/*
	 * Objects of one type share most of their text (keys, labels,
	 * defaults), so the first object stored serves as the deflate
	 * dictionary for all: about 10x smaller than plain JSON, 4x smaller
	 * than deflate without it. Set once; every entry depends on it.
	 */
	unsigned char *dict;
	uInt dict_len;
	atomic_size_t parsed; /* objects handed out (each one an inflate and a parse) */
};

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Index i's values of e, and their number in *n. */
static const char *const *entry_values(const struct store_entry *e, int i, size_t *n)
{
	size_t off = 0;
	for (int k = 0; k < i; k++)
		off += e->nvalues[k];
	*n = e->nvalues[i];
	return e->values + off;
}

static void free_set(void *p)
{
	struct index_set *set = p;
	free(set->v);
	free(set);
}

struct store *store_new(void)
{
	struct store *s = xcalloc(1, sizeof(*s));
	pthread_rwlock_init(&s->lock, NULL);
	hashmap_init(&s->objects);
	hashmap_init(&s->refused);
	return s;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	struct hashmap_iter it;
	const char *key;
	void *v;
	hashmap_iter_init(&it, &s->objects);
	while (hashmap_iter_next(&it, &key, &v))
		free(v);
	hashmap_release(&s->objects, NULL);
	hashmap_release(&s->refused, NULL);
	for (int i = 0; i < s->nindexes; i++) {
		free(s->indexes[i].name);
		hashmap_release(&s->indexes[i].values, free_set);
	}
	free(s->dict);
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

int store_add_index(struct store *s, const char *name, store_index_fn fn)
{
	if (s->nindexes == STORE_MAX_INDEXES || hashmap_len(&s->objects))
		abort(); /* a programming error, not a runtime condition */
	struct store_index *ix = &s->indexes[s->nindexes];
	ix->name = xstrdup(name);
	ix->fn = fn;
	hashmap_init(&ix->values);
	return s->nindexes++;
}

bool store_has_index(struct store *s, const char *name)
{
	for (int i = 0; i < s->nindexes; i++)
		if (!strcmp(s->indexes[i].name, name))
			return true;
	return false;
}

/* Adds e under value; entry_new gave each entry every value once. */
static void index_add(struct store_index *ix, const char *value, struct store_entry *e)
{
	struct index_set *set = hashmap_get(&ix->values, value);
	if (!set) {
		set = xcalloc(1, sizeof(*set));
		hashmap_put(&ix->values, value, set);
	}
	if (set->n == set->cap) {
		set->cap = set->cap ? set->cap * 2 : 2;
		set->v = xrealloc(set->v, set->cap * sizeof(*set->v));
	}
	set->v[set->n++] = e;
}

static void index_remove(struct store_index *ix, const char *value, const struct store_entry *e)
{
	struct index_set *set = hashmap_get(&ix->values, value);
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++) {
		if (set->v[i] == e) {
			set->v[i] = set->v[--set->n];
			break;
		}
	}
	if (!set->n)
		free_set(hashmap_remove(&ix->values, value));
}

static void index_entry(struct store *s, struct store_entry *e)
{
	for (int i = 0; i < s->nindexes; i++) {
		size_t n;
		const char *const *v = entry_values(e, i, &n);
		for (size_t j = 0; j < n; j++)
			index_add(&s->indexes[i], v[j], e);
	}
}

static void unindex(struct store *s, const struct store_entry *e)
{
	for (int i = 0; i < s->nindexes; i++) {
		size_t n;
		const char *const *v = entry_values(e, i, &n);
		for (size_t j = 0; j < n; j++)
			index_remove(&s->indexes[i], v[j], e);
	}
}

/* Drops repeated strings from v[0..n) (the index sets hold each entry once); the new count. */
static size_t dedupe(size_t n, char **v)
{
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < kept && !seen; j++)
			seen = !strcmp(v[j], v[i]);
		if (seen)
			free(v[i]);
		else
			v[kept++] = v[i];
	}
	return kept;
}

/*
 * One deflater for every store: its state is about 400 KB (a 32 KB window
 * and its hash chains), a process has a dozen stores, and their writes
 * seldom overlap. Made on first use and kept for the process's life.
 */
static struct {
	pthread_mutex_t lock;
	z_stream z;
	bool ready;
	unsigned char *out; /* the last object deflated */
	size_t out_len, out_cap;
} packer = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Compresses text with s's dictionary into packer.out; caller holds packer.lock and s's write lock. */
static void pack(struct store *s, const char *text, size_t len)
{
	if (!s->dict) {
		s->dict_len = (uInt)(len < DICT_MAX ? len : DICT_MAX);
		s->dict = xmalloc(s->dict_len);
		memcpy(s->dict, text, s->dict_len);
	}
	if (!packer.ready) {
		/*
		 * Raw deflate (no header), level 6: against level 1, a cached pod
		 * holds 7-10% less heap trimmed and 17-23% less whole, for 0-3 us
		 * (trimmed) or 10 us (whole) more of the 30-80 us storing one
		 * takes (bench_pod_cache).
		 */
		if (deflateInit2(&packer.z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			abort();
		packer.ready = true;
	} else if (deflateReset(&packer.z) != Z_OK) {
		abort();
	}
	if (deflateSetDictionary(&packer.z, s->dict, s->dict_len) != Z_OK)
		abort();
	uLong bound = deflateBound(&packer.z, (uLong)len);
	if (bound > packer.out_cap) {
		packer.out = xrealloc(packer.out, bound);
		packer.out_cap = bound;
	}
	packer.z.next_in = (Bytef *)(uintptr_t)text;
	packer.z.avail_in = (uInt)len;
	packer.z.next_out = packer.out;
	packer.z.avail_out = (uInt)bound;
	if (deflate(&packer.z, Z_FINISH) != Z_STREAM_END)
		abort();
	packer.out_len = bound - packer.z.avail_out;
}

/*
 * A new entry for obj, whose compact JSON is text: the compressed bytes, rv
 * and the index values in one block. Caller holds s's write lock.
 */
static struct store_entry *entry_new(struct store *s, const json_t *obj, const char *rv, const char *text,
				     size_t len)
{
	char **values[STORE_MAX_INDEXES];
	size_t nvalues[STORE_MAX_INDEXES], total_values = 0, strings = rv ? strlen(rv) + 1 : 0;
	for (int i = 0; i < s->nindexes; i++) {
		values[i] = NULL; /* an index function returning 0 may leave it */
		nvalues[i] = s->indexes[i].fn(obj, &values[i]);
		nvalues[i] = dedupe(nvalues[i], values[i]);
		if (nvalues[i] > UINT16_MAX)
			abort(); /* index functions return a handful */
		total_values += nvalues[i];
		for (size_t j = 0; j < nvalues[i]; j++)
			strings += strlen(values[i][j]) + 1;
	}
	pthread_mutex_lock(&packer.lock);
	pack(s, text, len);
	size_t pointers_at = (packer.out_len + 7) & ~(size_t)7;
	struct store_entry *e = xmalloc(sizeof(*e) + pointers_at + total_values * sizeof(char *) + strings);
	e->zlen = (uint32_t)packer.out_len;
	e->len = (uint32_t)len;
	memcpy(e->data, packer.out, packer.out_len);
	if (packer.out_cap > PACKER_KEEP_MAX) {
		/* One large object (a saved StatefulSet, someone's big ConfigMap) must not pin its size. */
		FREE_AND_NULL(packer.out);
		packer.out_cap = 0;
	}
	pthread_mutex_unlock(&packer.lock);
	e->values = (const char **)(void *)(e->data + pointers_at);
	char *str = (char *)(e->values + total_values);
	e->rv = NULL;
	if (rv) {
		e->rv = strcpy(str, rv);
		str += strlen(rv) + 1;
	}
	size_t k = 0;
	for (int i = 0; i < s->nindexes; i++) {
		e->nvalues[i] = (uint16_t)nvalues[i];
		for (size_t j = 0; j < nvalues[i]; j++) {
			e->values[k++] = strcpy(str, values[i][j]);
			str += strlen(values[i][j]) + 1;
		}
		free_strings(values[i], nvalues[i]);
	}
	return e;
}

/* The entry's object, parsed: a new reference. Caller holds a lock. */
static json_t *parse(struct store *s, const struct store_entry *e)
{
	atomic_fetch_add_explicit(&s->parsed, 1, memory_order_relaxed);
	z_stream in;
	memset(&in, 0, sizeof(in));
	if (inflateInit2(&in, -15) != Z_OK || inflateSetDictionary(&in, s->dict, s->dict_len) != Z_OK)
		abort();
	char *text = xmalloc((size_t)e->len + 1);
	in.next_in = (Bytef *)(uintptr_t)e->data;
	in.avail_in = e->zlen;
	in.next_out = (Bytef *)text;
	in.avail_out = e->len;
	if (inflate(&in, Z_FINISH) != Z_STREAM_END)
		abort(); /* we wrote these bytes ourselves */
	inflateEnd(&in);
	json_t *o = json_loadb(text, e->len, 0, NULL);
	free(text);
	if (!o)
		abort();
	return o;
}

bool store_upsert(struct store *s, const json_t *obj, json_t **old)
{
	char *key = kube_obj_key(obj);
	const char *rv = kube_obj_str(obj, "metadata.resourceVersion");
	if (old)
		*old = NULL;
	pthread_rwlock_wrlock(&s->lock);
	hashmap_remove(&s->refused, key);
	struct store_entry *prev = hashmap_get(&s->objects, key);
	if (prev && rv && prev->rv && !strcmp(prev->rv, rv)) {
		pthread_rwlock_unlock(&s->lock);
		free(key);
		return false;
	}
	char *text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		abort();
	size_t len = strlen(text);
	struct store_entry *e = entry_new(s, obj, rv, text, len);
	free(text);
	if (prev) {
		unindex(s, prev);
		if (old)
			*old = parse(s, prev);
		free(prev);
	}
	index_entry(s, e);
	hashmap_put(&s->objects, key, e);
	pthread_rwlock_unlock(&s->lock);
	free(key);
	return true;
}

bool store_delete(struct store *s, const char *key, json_t **old)
{
	if (old)
		*old = NULL;
	pthread_rwlock_wrlock(&s->lock);
	hashmap_remove(&s->refused, key);
	struct store_entry *e = hashmap_remove(&s->objects, key);
	if (e) {
		unindex(s, e);
		if (old)
			*old = parse(s, e);
		free(e);
	}
	pthread_rwlock_unlock(&s->lock);
	return e != NULL;
}

bool store_refuse(struct store *s, const char *key, json_t **old)
{
	bool removed = store_delete(s, key, old);
	pthread_rwlock_wrlock(&s->lock);
	hashmap_put(&s->refused, key, (void *)1);
	pthread_rwlock_unlock(&s->lock);
	return removed;
}

bool store_refused(struct store *s, const char *key)
{
	pthread_rwlock_rdlock(&s->lock);
	bool refused = hashmap_get(&s->refused, key) != NULL;
	pthread_rwlock_unlock(&s->lock);
	return refused;
}

json_t *store_get(struct store *s, const char *key)
{
	pthread_rwlock_rdlock(&s->lock);
	struct store_entry *e = hashmap_get(&s->objects, key);
	json_t *o = e ? parse(s, e) : NULL;
	pthread_rwlock_unlock(&s->lock);
	return o;
}

char *store_resource_version(struct store *s, const char *key)
{
	pthread_rwlock_rdlock(&s->lock);
	struct store_entry *e = hashmap_get(&s->objects, key);
	char *rv = e && e->rv ? xstrdup(e->rv) : NULL;
	pthread_rwlock_unlock(&s->lock);
	return rv;
}

json_t *store_by_index(struct store *s, const char *index, const char *value)
{
	json_t *out = json_array();
	pthread_rwlock_rdlock(&s->lock);
	for (int i = 0; i < s->nindexes; i++) {
		if (strcmp(s->indexes[i].name, index))
			continue;
		const struct index_set *set = hashmap_get(&s->indexes[i].values, value);
		for (size_t k = 0; set && k < set->n; k++)
			json_array_append_new(out, parse(s, set->v[k]));
		break;
	}
	pthread_rwlock_unlock(&s->lock);
	return out;
}

json_t *store_list(struct store *s)
{
	json_t *out = json_array();
	pthread_rwlock_rdlock(&s->lock);
	struct hashmap_iter it;
	const char *key;
	void *v;
	hashmap_iter_init(&it, &s->objects);
	while (hashmap_iter_next(&it, &key, &v))
		json_array_append_new(out, parse(s, v));
	pthread_rwlock_unlock(&s->lock);
	return out;
}

char **store_keys(struct store *s, size_t *n)
{
	pthread_rwlock_rdlock(&s->lock);
	char **keys = xcalloc(hashmap_len(&s->objects) + 1, sizeof(*keys));
	size_t i = 0;
	struct hashmap_iter it;
	const char *key;
	void *v;
	hashmap_iter_init(&it, &s->objects);
	while (hashmap_iter_next(&it, &key, &v))
		keys[i++] = xstrdup(key);
	pthread_rwlock_unlock(&s->lock);
	*n = i;
	return keys;
}

size_t store_objects_read(struct store *s)
{
	return atomic_load_explicit(&s->parsed, memory_order_relaxed);
}

size_t store_len(struct store *s)
{
	pthread_rwlock_rdlock(&s->lock);
	size_t n = hashmap_len(&s->objects);
	pthread_rwlock_unlock(&s->lock);
	return n;
}

size_t store_index_namespace(const json_t *obj, char ***values)
{
	const char *ns = kube_obj_str(obj, "metadata.namespace");
	if (!ns)
		return 0;
	*values = xmalloc(sizeof(char *));
	(*values)[0] = xstrdup(ns);
	return 1;
}

size_t store_index_owner_uid(const json_t *obj, char ***values)
{
	json_t *owners = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	size_t n = 0;
	size_t i;
	json_t *ref;
	json_array_foreach(owners, i, ref) {
		const char *uid = json_string_value(json_object_get(ref, "uid"));
		if (!uid)
			continue;
		*values = xrealloc(n ? *values : NULL, (n + 1) * sizeof(char *));
		(*values)[n++] = xstrdup(uid);
	}
	return n;
}
