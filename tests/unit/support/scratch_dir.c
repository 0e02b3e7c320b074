#include "scratch_dir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/xalloc.h"

char *scratch_dir_make(const char *prefix)
{
	const char *t = getenv("TMPDIR");
	char *tmpl = xasprintf("%s/%s.XXXXXX", t && *t ? t : "/tmp", prefix);
	if (!mkdtemp(tmpl)) {
		free(tmpl);
		return NULL;
	}
	return tmpl;
}

static int remove_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void scratch_dir_remove(char *dir)
{
	if (!dir)
		return;
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

char *scratch_file_write(const char *dir, const char *rel, const char *content, mode_t mode)
{
	char *path = xasprintf("%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(content, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

char *scratch_file_sized(const char *dir, const char *rel, const char *head, char fill, size_t size)
{
	size_t hlen = strlen(head);
	assert_true(hlen <= size);
	char *text = xmalloc(size + 1);
	memcpy(text, head, hlen);
	memset(text + hlen, fill, size - hlen);
	text[size] = '\0';
	char *path = scratch_file_write(dir, rel, text, 0600);
	free(text);
	return path;
}
