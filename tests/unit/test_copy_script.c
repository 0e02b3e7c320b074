/*
 * The copy script's text (the flags the SPEC requires, the lines the parser
 * reads) and copy_progress_parse over the log tails it meets: cut at the
 * start, \r-separated, other lines in between, bad numbers, every result.
 * The script itself runs on real files in tests/copy/copy_script_test.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/resize/copy_script.h"

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the script ---- */

static void test_script_shape(void **state)
{
	(void)state;
	char *s = copy_script_text();
	char *again = copy_script_text();
	assert_non_null(s);
	assert_ptr_not_equal(s, again);
	assert_string_equal(s, again);
	assert_memory_equal(s, "#!/bin/sh\n", 10);
	assert_int_equal(s[strlen(s) - 1], '\n');
	/* It travels as one argument of `sh -c`: Linux caps one at 128 KiB. */
	assert_true(strlen(s) < 128 * 1024);
	assert_null(strchr(s, '\r'));
	free(again);
	free(s);
}

static void test_script_rsync_flags(void **state)
{
	(void)state;
	char *s = copy_script_text();
	static const char *const required[] = {
		/* The copy: hard links, ACLs, xattrs, sparse, one filesystem, numeric ids, deletions, whole files. */
		"rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --whole-file --no-h --info=progress2,name2",
		/* The verify: a checksum dry-run that must list nothing. */
		"rsync -aHAXSx --numeric-ids --modify-window=-1 --delete --dry-run --checksum --out-format='%i %n'",
		/* After a checked precopy: what changed since it started, by ctime, by checksum. */
		"find . -xdev ! -type d -newerct \"@$t\" -print0",
		"--dry-run --checksum --out-format='%i %n' --no-h \\\n\t\t\t--from0 --files-from=\"$tmp/changed\"",
		/* The fit check: allocated sizes, free space. */
		"du -skx \"$s\"",
		"df -Pk \"$d\"",
		/* What copy_progress_parse reads. */
		"echo \"SOP-PROGRESS bytes=$((done_bytes + cur_bytes)) files=$((done_files + cur_files)) "
		"totalBytes=$total_bytes totalFiles=$total_files\"",
		"result=\"SOP-RESULT ok\"",
		"result=\"SOP-RESULT fail ",
		"echo \"$result\"",
		/* In a pod, the totals and the result are also the termination message. */
		"term=${SOP_TERMINATION_LOG-/dev/termination-log}",
		"full | precopy | delta)",
	};
	for (size_t i = 0; i < NITEMS(required); i++)
		if (!strstr(s, required[i]))
			fail_msg("the script lacks: %s", required[i]);

	/* Exit codes as the header promises. */
	char want[32];
	const int codes[] = {COPY_EXIT_USAGE, COPY_EXIT_NO_FIT, COPY_EXIT_VERIFY, COPY_EXIT_RSYNC};
	for (size_t i = 0; i < NITEMS(codes); i++) {
		snprintf(want, sizeof(want), "finish %d ", codes[i]);
		if (!strstr(s, want))
			fail_msg("the script never exits with %d", codes[i]);
	}

	/* No compression anywhere: every rsync's short flags lack z. */
	assert_null(strstr(s, "--compress"));
	for (const char *p = s; (p = strstr(p, "rsync -")); p++) {
		size_t n = strcspn(p + 6, " \n");
		for (size_t k = 0; k < n; k++)
			if (p[6 + k] == 'z')
				fail_msg("compression in: %.60s", p);
	}
	free(s);
}

/* ---- the parser ---- */

#define MAXLL 9223372036854775807LL

struct parse_case {
	const char *name;
	const char *log;
	int rc;
	long long bytes, files, total_bytes, total_files;
	int result;
	const char *reason;
};

static const struct parse_case parse_cases[] = {
	{"no SOP lines", "copy: full pass\nrsync: something\n", -1, 0, 0, 0, 0, 0, ""},
	{"empty", "", -1, 0, 0, 0, 0, 0, ""},
	{"one progress line", "SOP-PROGRESS bytes=10 files=2 totalBytes=100 totalFiles=5\n", 0, 10, 2, 100, 5, 0, ""},
	{"the last progress line counts",
	 "SOP-PROGRESS bytes=0 files=0 totalBytes=100 totalFiles=5\n"
	 "copy: something else\n"
	 "SOP-PROGRESS bytes=60 files=3 totalBytes=100 totalFiles=5\n",
	 0, 60, 3, 100, 5, 0, ""},
	{"cut at the start",
	 "ESS bytes=99 files=99 totalBytes=99 totalFiles=99\n"
	 "SOP-PROGRESS bytes=7 files=1 totalBytes=9 totalFiles=2\n",
	 0, 7, 1, 9, 2, 0, ""},
	{"cut at the start, only a fragment", "S bytes=1 files=1 totalBytes=1 totalFiles=1\n", -1, 0, 0, 0, 0, 0, ""},
	{"\\r-separated",
	 "SOP-PROGRESS bytes=1 files=1 totalBytes=9 totalFiles=9\r"
	 "SOP-PROGRESS bytes=2 files=2 totalBytes=9 totalFiles=9\r",
	 0, 2, 2, 9, 9, 0, ""},
	{"\\r\\n line ends",
	 "SOP-PROGRESS bytes=3 files=4 totalBytes=9 totalFiles=9\r\nSOP-RESULT ok\r\n", 0, 3, 4, 9, 9, 1, ""},
	{"no line end at all", "SOP-RESULT ok", 0, 0, 0, 0, 0, 1, ""},
	{"ok after progress",
	 "SOP-PROGRESS bytes=0 files=0 totalBytes=5 totalFiles=2\n"
	 "SOP-PROGRESS bytes=5 files=2 totalBytes=5 totalFiles=2\n"
	 "copy: verified: the target is identical to the source\n"
	 "SOP-RESULT ok\n",
	 0, 5, 2, 5, 2, 1, ""},
	{"fail with a reason",
	 "copy: does not fit: pair 1 needs 5 bytes\nSOP-RESULT fail does not fit: pair 1 needs 5 bytes\n", 0, 0, 0, 0,
	 0, -1, "does not fit: pair 1 needs 5 bytes"},
	{"fail without a reason", "SOP-RESULT fail\n", 0, 0, 0, 0, 0, -1, "no reason given"},
	{"fail with only blanks", "SOP-RESULT fail   \t \n", 0, 0, 0, 0, 0, -1, "no reason given"},
	{"fail: tabs and control characters become spaces", "SOP-RESULT fail a\tb\x01" "c  \n", 0, 0, 0, 0, 0, -1,
	 "a b c"},
	{"fail: invalid UTF-8 becomes ?, valid stays",
	 "SOP-RESULT fail caf\xc3\xa9 \xff\xfe end \xe2\x82 x\n", 0, 0, 0, 0, 0, -1,
	 "caf\xc3\xa9 ?? end ?? x"},
	{"the last result counts", "SOP-RESULT fail first\nSOP-RESULT ok\n", 0, 0, 0, 0, 0, 1, ""},
	{"the last result counts (fail last)", "SOP-RESULT ok\nSOP-RESULT fail later\n", 0, 0, 0, 0, 0, -1, "later"},
	{"rsync error lines around",
	 "SOP-PROGRESS bytes=10 files=1 totalBytes=50 totalFiles=3\n"
	 "rsync: [receiver] write failed on \"/t/x\": No space left on device (28)\n"
	 "rsync error: error in file IO (code 11) at receiver.c(381) [receiver=3.2.7]\n"
	 "SOP-RESULT fail rsync failed copying pair 1 (exit 11): rsync: [receiver] write failed\n",
	 0, 10, 1, 50, 3, -1, "rsync failed copying pair 1 (exit 11): rsync: [receiver] write failed"},
	{"keys in another order, an unknown key",
	 "SOP-PROGRESS totalFiles=4 files=3 speed=9 totalBytes=20 bytes=10\n", 0, 10, 3, 20, 4, 0, ""},
	{"largest number", "SOP-PROGRESS bytes=9223372036854775807 files=0 totalBytes=9223372036854775807 totalFiles=1\n",
	 0, MAXLL, 0, MAXLL, 1, 0, ""},
	{"overflow: line ignored, the earlier one stays",
	 "SOP-PROGRESS bytes=1 files=1 totalBytes=2 totalFiles=2\n"
	 "SOP-PROGRESS bytes=9223372036854775808 files=1 totalBytes=2 totalFiles=2\n",
	 0, 1, 1, 2, 2, 0, ""},
	{"negative: ignored", "SOP-PROGRESS bytes=-1 files=1 totalBytes=2 totalFiles=2\n", -1, 0, 0, 0, 0, 0, ""},
	{"plus sign: ignored", "SOP-PROGRESS bytes=+1 files=1 totalBytes=2 totalFiles=2\n", -1, 0, 0, 0, 0, 0, ""},
	{"trailing junk in a number: ignored", "SOP-PROGRESS bytes=12x files=1 totalBytes=2 totalFiles=2\n", -1, 0, 0, 0,
	 0, 0, ""},
	{"empty value: ignored", "SOP-PROGRESS bytes= files=1 totalBytes=2 totalFiles=2\n", -1, 0, 0, 0, 0, 0, ""},
	{"a key missing: ignored", "SOP-PROGRESS bytes=1 files=1 totalBytes=2\n", -1, 0, 0, 0, 0, 0, ""},
	{"a token without =: ignored", "SOP-PROGRESS bytes=1 files=1 totalBytes=2 totalFiles=2 junk\n", -1, 0, 0, 0, 0,
	 0, ""},
	{"cut in the last line: the earlier line stays",
	 "SOP-PROGRESS bytes=1 files=1 totalBytes=2 totalFiles=2\nSOP-PROGRESS bytes=2 files=2 totalBy", 0, 1, 1, 2, 2,
	 0, ""},
	{"not at the line start", "copy: SOP-RESULT ok\n  SOP-RESULT ok\nx SOP-PROGRESS bytes=1 files=1 totalBytes=1 totalFiles=1\n",
	 -1, 0, 0, 0, 0, 0, ""},
	{"glued words", "SOP-RESULTok\nSOP-PROGRESSbytes=1 files=1 totalBytes=1 totalFiles=1\n", -1, 0, 0, 0, 0, 0, ""},
	{"unknown results", "SOP-RESULT okay\nSOP-RESULT ok extra\nSOP-RESULT failed x\nSOP-RESULT\n", -1, 0, 0, 0, 0, 0,
	 ""},
	{"blanks after ok", "SOP-RESULT ok  \t\n", 0, 0, 0, 0, 0, 1, ""},
	{"other SOP- words", "SOP-DIFF x\nSOP-ITEM .f 12\n", -1, 0, 0, 0, 0, 0, ""},
};

static void test_parse_table(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < NITEMS(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct copy_progress p;
		memset(&p, 0x5a, sizeof(p)); /* the parser must fill everything */
		int rc = copy_progress_parse(c->log, &p);
		if (rc != c->rc || p.bytes != c->bytes || p.files != c->files || p.total_bytes != c->total_bytes ||
		    p.total_files != c->total_files || p.result != c->result || strcmp(p.reason, c->reason) != 0) {
			print_error("case \"%s\": got rc %d bytes %lld files %lld total %lld/%lld result %d reason \"%s\"; "
				    "want rc %d bytes %lld files %lld total %lld/%lld result %d reason \"%s\"\n",
				    c->name, rc, p.bytes, p.files, p.total_bytes, p.total_files, p.result, p.reason, c->rc,
				    c->bytes, c->files, c->total_bytes, c->total_files, c->result, c->reason);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_parse_null(void **state)
{
	(void)state;
	struct copy_progress p;
	memset(&p, 0x5a, sizeof(p));
	assert_int_equal(copy_progress_parse(NULL, &p), -1);
	assert_int_equal(p.result, 0);
	assert_int_equal(p.bytes, 0);
	assert_string_equal(p.reason, "");
}

/* A reason longer than the buffer is cut, and never inside a UTF-8 character. */
static void test_parse_long_reason(void **state)
{
	(void)state;
	char log[1024];
	struct copy_progress p;
	size_t n = (size_t)snprintf(log, sizeof(log), "SOP-RESULT fail ");
	memset(log + n, 'a', 400);
	strcpy(log + n + 400, "\n");
	assert_int_equal(copy_progress_parse(log, &p), 0);
	assert_int_equal(p.result, -1);
	assert_int_equal(strlen(p.reason), sizeof(p.reason) - 1);

	/* 254 ASCII bytes, then a 2-byte character that does not fit in the 255 left. */
	n = (size_t)snprintf(log, sizeof(log), "SOP-RESULT fail ");
	memset(log + n, 'b', 254);
	strcpy(log + n + 254, "\xc3\xa9zz\n");
	assert_int_equal(copy_progress_parse(log, &p), 0);
	assert_int_equal(strlen(p.reason), 254);
	assert_int_equal(p.reason[253], 'b');
}

/* Every cut of a real log either finds nothing or reads numbers that were in it. */
static void test_parse_every_cut(void **state)
{
	(void)state;
	static const char log[] = "copy: full pass: 1 pair(s), 11 entries, 17485771 bytes\n"
				  "SOP-PROGRESS bytes=0 files=0 totalBytes=17485771 totalFiles=11\n"
				  "SOP-PROGRESS bytes=3000002 files=2 totalBytes=17485771 totalFiles=11\n"
				  "SOP-PROGRESS bytes=17485771 files=11 totalBytes=17485771 totalFiles=11\n"
				  "copy: verified: the target is identical to the source\n"
				  "SOP-RESULT ok\n";
	for (size_t start = 0; start < sizeof(log) - 1; start++) {
		struct copy_progress p;
		int rc = copy_progress_parse(log + start, &p);
		if (rc == 0) {
			assert_true(p.bytes == 0 || p.bytes == 3000002 || p.bytes == 17485771);
			assert_true(p.total_bytes == 0 || p.total_bytes == 17485771);
			assert_int_equal(p.result, 1); /* the last line survives every cut that finds anything */
		}
	}
	/* Cuts at the end: the text as it was while the copy ran. */
	char buf[sizeof(log)];
	for (size_t len = 0; len < sizeof(log); len++) {
		struct copy_progress p;
		memcpy(buf, log, len);
		buf[len] = '\0';
		int rc = copy_progress_parse(buf, &p);
		assert_true(rc == 0 || len < 120);
		assert_true(p.result == 0 || len >= sizeof(log) - 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_shape),
		cmocka_unit_test(test_script_rsync_flags),
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_parse_null),
		cmocka_unit_test(test_parse_long_reason),
		cmocka_unit_test(test_parse_every_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
