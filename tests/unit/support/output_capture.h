/*
 * What a function prints: its standard output and/or standard error sent
 * to a temporary file while it runs, then read back. Failures end the
 * test through cmocka.
 */
#ifndef SOP_TEST_OUTPUT_CAPTURE_H
#define SOP_TEST_OUTPUT_CAPTURE_H

#include <stdbool.h>

/* Runs run(ctx) with stdout (when out) and stderr (when err) into one file; what was written (new string). */
char *output_capture(void (*run)(void *ctx), void *ctx, bool out, bool err);

#endif
