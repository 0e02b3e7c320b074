#include "runtime/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "client/kube_client.h"
#include "util/hashmap.h"
#include "util/xalloc.h"

#define STORE_MAX_INDEXES 8
/* deflate's window: a longer dictionary would not be used. */
#define DICT_MAX 32768

struct store_index {
	char *name;
	store_index_fn fn;
	struct hashmap values; /* value -> struct hashmap of keys (a set) */
};

struct store_entry {
	unsigned char *z;   /* the object's compact JSON, raw-deflated with the store's dictionary */
	uint32_t zlen;
	uint32_t len;       /* uncompressed length */
	char *rv;
	/* The values this entry is indexed under, per index, to unindex it without a parse. */
	char **index_values[STORE_MAX_INDEXES];
	size_t nindex_values[STORE_MAX_INDEXES];
};

struct store {
	pthread_rwlock_t lock;
	struct hashmap objects; /* key -> struct store_entry */
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
	z_stream deflater; /* used under the write lock */
	bool deflater_ready;
	atomic_size_t parsed; /* objects handed out (each one an inflate and a parse) */
};

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void entry_free(struct store_entry *e, int nindexes)
{
	if (!e)
		return;
	free(e->z);
	free(e->rv);
	for (int i = 0; i < nindexes; i++)
		free_strings(e->index_values[i], e->nindex_values[i]);
	free(e);
}

static void free_set(void *p)
{
	struct hashmap *set = p;
	hashmap_release(set, NULL);
	free(set);
}

struct store *store_new(void)
{
	struct store *s = xcalloc(1, sizeof(*s));
	pthread_rwlock_init(&s->lock, NULL);
	hashmap_init(&s->objects);
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
		entry_free(v, s->nindexes);
	hashmap_release(&s->objects, NULL);
	for (int i = 0; i < s->nindexes; i++) {
		free(s->indexes[i].name);
		hashmap_release(&s->indexes[i].values, free_set);
	}
	if (s->deflater_ready)
		deflateEnd(&s->deflater);
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

static void index_add(struct store_index *ix, const char *value, const char *key)
{
	struct hashmap *set = hashmap_get(&ix->values, value);
	if (!set) {
		set = xcalloc(1, sizeof(*set));
		hashmap_put(&ix->values, value, set);
	}
	hashmap_put(set, key, (void *)1);
}

static void index_remove(struct store_index *ix, const char *value, const char *key)
{
	struct hashmap *set = hashmap_get(&ix->values, value);
	if (!set)
		return;
	hashmap_remove(set, key);
	if (!hashmap_len(set))
		free_set(hashmap_remove(&ix->values, value));
}

static void unindex(struct store *s, struct store_entry *e, const char *key)
{
	for (int i = 0; i < s->nindexes; i++)
		for (size_t j = 0; j < e->nindex_values[i]; j++)
			index_remove(&s->indexes[i], e->index_values[i][j], key);
}

/* Compresses text into e; caller holds the write lock. */
static void pack(struct store *s, struct store_entry *e, const char *text, size_t len)
{
	if (!s->deflater_ready) {
		s->dict_len = (uInt)(len < DICT_MAX ? len : DICT_MAX);
		s->dict = xmalloc(s->dict_len);
		memcpy(s->dict, text, s->dict_len);
		memset(&s->deflater, 0, sizeof(s->deflater));
		/* Raw deflate (no header), level 1: sync speed matters more than the last bytes. */
		if (deflateInit2(&s->deflater, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			abort();
		s->deflater_ready = true;
	} else if (deflateReset(&s->deflater) != Z_OK) {
		abort();
	}
	if (deflateSetDictionary(&s->deflater, s->dict, s->dict_len) != Z_OK)
		abort();
	uLong bound = deflateBound(&s->deflater, (uLong)len);
	unsigned char *out = xmalloc(bound);
	s->deflater.next_in = (Bytef *)(uintptr_t)text;
	s->deflater.avail_in = (uInt)len;
	s->deflater.next_out = out;
	s->deflater.avail_out = (uInt)bound;
	if (deflate(&s->deflater, Z_FINISH) != Z_STREAM_END)
		abort();
	e->zlen = (uint32_t)(bound - s->deflater.avail_out);
	e->len = (uint32_t)len;
	e->z = xrealloc(out, e->zlen);
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
	in.next_in = e->z;
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
	struct store_entry *prev = hashmap_get(&s->objects, key);
	if (prev && rv && prev->rv && !strcmp(prev->rv, rv)) {
		pthread_rwlock_unlock(&s->lock);
		free(key);
		return false;
	}
	struct store_entry *e = xcalloc(1, sizeof(*e));
	char *text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		abort();
	pack(s, e, text, strlen(text));
	free(text);
	e->rv = rv ? xstrdup(rv) : NULL;
	if (prev) {
		unindex(s, prev, key);
		if (old)
			*old = parse(s, prev);
		entry_free(prev, s->nindexes);
	}
	for (int i = 0; i < s->nindexes; i++) {
		e->nindex_values[i] = s->indexes[i].fn(obj, &e->index_values[i]);
		for (size_t j = 0; j < e->nindex_values[i]; j++)
			index_add(&s->indexes[i], e->index_values[i][j], key);
	}
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
	struct store_entry *e = hashmap_remove(&s->objects, key);
	if (e) {
		unindex(s, e, key);
		if (old)
			*old = parse(s, e);
		entry_free(e, s->nindexes);
	}
	pthread_rwlock_unlock(&s->lock);
	return e != NULL;
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
		struct hashmap *set = hashmap_get(&s->indexes[i].values, value);
		if (!set)
			break;
		struct hashmap_iter it;
		const char *key;
		void *unused;
		hashmap_iter_init(&it, set);
		while (hashmap_iter_next(&it, &key, &unused)) {
			struct store_entry *e = hashmap_get(&s->objects, key);
			if (e)
				json_array_append_new(out, parse(s, e));
		}
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

void store_ensure_namespace_index(struct store *s)
{
	if (!store_has_index(s, "namespace"))
		store_add_index(s, "namespace", store_index_namespace);
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
