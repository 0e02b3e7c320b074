/*
 * What the harnesses share: the fuzz input read as a C string, as JSON, or
 * as "key\nvalue" for an annotation on a fixed StatefulSet, so one corpus
 * file can be a whole object or just the text a user types into one
 * annotation.
 */
#ifndef SOP_FUZZ_INPUT_H
#define SOP_FUZZ_INPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Aborts with msg when cond is false: libFuzzer then keeps the input as a crash. */
#define FUZZ_CHECK(cond, msg) fuzz_check((cond), #cond, (msg))
void fuzz_check(int ok, const char *cond, const char *msg);

/* data as a NUL-terminated string (new; caller frees). An embedded NUL ends it early, as in C. */
char *fuzz_string(const uint8_t *data, size_t size);

/* data as a JSON object (new reference), or NULL when it is not one. */
json_t *fuzz_json_object(const uint8_t *data, size_t size);

/*
 * A StatefulSet "db" in namespace "ns" with 3 replicas, selector app=db and
 * one volumeClaimTemplate "data" of 1Gi (new reference); when data holds a
 * newline, the bytes before it name an annotation and the bytes after it
 * are its value.
 */
json_t *fuzz_statefulset_annotated(const uint8_t *data, size_t size);

#endif
