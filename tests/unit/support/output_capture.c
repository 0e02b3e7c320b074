#include "output_capture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char *output_capture(void (*run)(void *ctx), void *ctx, bool out, bool err)
{
	fflush(stdout);
	fflush(stderr);
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
	assert_true(saved_out >= 0 && saved_err >= 0);
	if (out)
		assert_true(dup2(fileno(tmp), STDOUT_FILENO) >= 0);
	if (err)
		assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	run(ctx);
	fflush(stdout);
	fflush(stderr);
	assert_true(dup2(saved_out, STDOUT_FILENO) >= 0 && dup2(saved_err, STDERR_FILENO) >= 0);
	close(saved_out);
	close(saved_err);
	off_t len = lseek(fileno(tmp), 0, SEEK_END);
	assert_true(len >= 0);
	char *text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(pread(fileno(tmp), text, (size_t)len, 0), (ssize_t)len);
	fclose(tmp);
	return text;
}
