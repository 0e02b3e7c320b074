/*
 * A scratch directory for a unit test program (kubeconfigs, token files,
 * plugin scripts): made under $TMPDIR (or /tmp), removed with everything in
 * it at the end. Failures end the test through cmocka.
 */
#ifndef SOP_TEST_SCRATCH_DIR_H
#define SOP_TEST_SCRATCH_DIR_H

#include <sys/types.h>

/* A new directory <tmp>/<prefix>.XXXXXX: its path (new string), or NULL when it cannot be made. */
char *scratch_dir_make(const char *prefix);

/* Removes dir and everything below it, and frees dir (may be NULL). */
void scratch_dir_remove(char *dir);

/* Writes content to dir/rel with mode, making parent directories; returns the full path (new string). */
char *scratch_file_write(const char *dir, const char *rel, const char *content, mode_t mode);

/*
 * Writes dir/rel (mode 0600) of exactly size bytes: head, then fill to the
 * end; for files at a size cap and one byte past it. Returns the full path
 * (new string).
 */
char *scratch_file_sized(const char *dir, const char *rel, const char *head, char fill, size_t size);

#endif
