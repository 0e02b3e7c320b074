/*
 * How `resize --wait` puts its frames (status_wait_frame) on the screen.
 * On a terminal each frame replaces the last in place: the cursor goes up
 * over the lines drawn before, each line is erased and written again, cut
 * to the width so none wraps (a wrapped line would throw the next count
 * off). Anywhere else (a pipe, a CI log) only the lines that changed are
 * printed, one per line, with no escape sequences. The lines quote cluster
 * text: each goes through text_sanitize first, so the only escape sequences
 * on the screen are the drawer's own.
 *
 * Pure: it returns the bytes to write. Single-threaded; one per wait.
 */
#ifndef SOP_PLUGIN_DRAW_H
#define SOP_PLUGIN_DRAW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct wait_drawer {
	bool tty;
	int width;       /* the terminal's columns */
	size_t drawn;    /* terminal: lines of the last frame */
	json_t *printed; /* otherwise: the last frame (owned) */
};

/* The bytes that show frame (an array of strings; borrowed) after what was drawn before. New string. */
char *wait_drawer_render(struct wait_drawer *d, json_t *frame);
void wait_drawer_release(struct wait_drawer *d);

#endif
