/*
 * resize --wait's drawing: on a terminal each frame is redrawn in place
 * (cursor up over exactly the lines drawn before, every line erased, cut
 * to the width), a shorter frame erases what is left; off a terminal only
 * changed lines are printed, without escape sequences; cluster text in a
 * frame reaches neither as a control.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_draw.h"
#include "terminal_scan.h"

static json_t *frame(const char *a, const char *b, const char *c)
{
	json_t *f = json_array();
	const char *lines[] = {a, b, c};
	for (int i = 0; i < 3; i++)
		if (lines[i])
			json_array_append_new(f, json_string(lines[i]));
	return f;
}

static void expect(struct wait_drawer *d, json_t *f, const char *want)
{
	char *got = wait_drawer_render(d, f);
	assert_string_equal(got, want);
	free(got);
	json_decref(f);
}

static void test_terminal(void **state)
{
	(void)state;
	struct wait_drawer d = {.tty = true, .width = 20};
	expect(&d, frame("sts/db: Copying 1/2", "  db-1  Copy", "  db-0  waiting"),
	       "\r\033[2Ksts/db: Copying 1/2\n\r\033[2K  db-1  Copy\n\r\033[2K  db-0  waiting\n");
	/* In place: up 3, each line again; a line wider than the terminal is cut. */
	expect(&d, frame("sts/db: Copying 1/2", "  db-1  [=====>     ]  50%", "  db-0  waiting"),
	       "\033[3A\r\033[2Ksts/db: Copying 1/2\n\r\033[2K  db-1  [=====> ...\n\r\033[2K  db-0  waiting\n");
	/* Shorter: the third line is erased and the cursor ends under the frame. */
	expect(&d, frame("sts/db: done", "  db-1  done", NULL), "\033[3A\r\033[2Ksts/db: done\n\r\033[2K  db-1  done\n\r\033[2K\n\033[1A");
	expect(&d, frame("x", NULL, NULL), "\033[2A\r\033[2Kx\n\r\033[2K\n\033[1A");
	wait_drawer_release(&d);
}

static void test_not_a_terminal(void **state)
{
	(void)state;
	struct wait_drawer d = {.tty = false, .width = 20};
	expect(&d, frame("sts/db: Copying 1/2", "  db-1  Copy", "  db-0  waiting"),
	       "sts/db: Copying 1/2\n  db-1  Copy\n  db-0  waiting\n");
	expect(&d, frame("sts/db: Copying 1/2", "  db-1  Copy", "  db-0  waiting"), ""); /* nothing changed */
	expect(&d, frame("sts/db: Copying 1/2", "  db-1  a line much longer than twenty columns", "  db-0  waiting"),
	       "  db-1  a line much longer than twenty columns\n"); /* never cut, no escapes */
	wait_drawer_release(&d);
	wait_drawer_release(&d); /* twice is harmless */
}

/* What the issue measured: a resize-status with escapes, ESC, BEL and U+009B (CSI). */
#define DIRTY_STATUS "\033]0;x\007\033[2J\xc2\x9b" "2J"

/*
 * A frame's lines quote cluster text (the resize-status, a step): on a
 * terminal the only escape sequences are the drawer's own, off one there
 * are none; the text around the controls is still shown.
 */
static void test_cluster_text_is_drawn_inert(void **state)
{
	(void)state;
	struct wait_drawer d = {.tty = true, .width = 80};
	json_t *f = frame("sts/db: " DIRTY_STATUS, "  db-1  Copy\xc2\x9b" "1A\xe2\x80\xae" "evil", "  db-0  waiting\r\033[1A");
	char *got = wait_drawer_render(&d, f);
	terminal_expect_safe("terminal frame", got, true);
	assert_non_null(strstr(got, "]0;x"));
	assert_non_null(strstr(got, "evil"));
	free(got);
	got = wait_drawer_render(&d, f); /* the redraw: cursor up over the 3 lines */
	terminal_expect_safe("terminal redraw", got, true);
	assert_true(!strncmp(got, "\033[3A", 4));
	free(got);
	wait_drawer_release(&d);

	struct wait_drawer plain = {.tty = false, .width = 80};
	got = wait_drawer_render(&plain, f);
	terminal_expect_safe("frame off a terminal", got, false);
	assert_non_null(strstr(got, "sts/db: "));
	free(got);
	wait_drawer_release(&plain);
	json_decref(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_terminal),
		cmocka_unit_test(test_not_a_terminal),
		cmocka_unit_test(test_cluster_text_is_drawn_inert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
