/*
 * kubectl-style tables: upper-case headers, columns padded to their widest
 * cell, three spaces apart, the last column unpadded. Every cell goes
 * through text_sanitize (one line; C0, DEL, C1, bidi controls and invalid
 * UTF-8 replaced), so a message a tenant wrote can neither break the
 * layout nor reach the terminal as a control. Not thread-safe; one owner.
 */
#ifndef SOP_PLUGIN_TABLE_H
#define SOP_PLUGIN_TABLE_H

#include <stddef.h>

struct table;

/* A table of ncols columns with these headers (copied). */
struct table *table_new(size_t ncols, const char *const *headers);
void table_free(struct table *t);
/* Adds a row of ncols cells (copied; NULL prints as "-"). */
void table_add(struct table *t, const char *const *cells);
size_t table_rows(const struct table *t);
/* --no-headers: table_render leaves the header line out. */
void table_hide_headers(struct table *t);
/* The whole table, one line per row, each ending in "\n". New string. */
char *table_render(const struct table *t);

/* s cut to max bytes at a UTF-8 boundary with "..." at the end when longer. New string. */
char *table_ellipsize(const char *s, size_t max);

#endif
