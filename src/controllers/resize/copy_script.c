/*
 * The copy script (copy_script.sh, which the build turns into lines of C:
 * cmake/embed_lines.cmake), and the reader of its progress.
 *
 * Why the script looks the way it does:
 * - rsync is the only tool beyond POSIX sh, awk, du, df and tr, so the Job
 *   runs on any image with rsync (busybox or GNU userland).
 * - rsync -x / du -x: a source is one volume; whatever is mounted below it
 *   is not part of it.
 * - The totals come from rsync's own dry-run count, so the progress it
 *   logs per entry (--info=name2: unchanged entries too) and per chunk
 *   (--info=progress2) adds up to exactly those totals.
 * - The verify pass is a checksum dry-run: size and mtime can match while
 *   the content does not. --modify-window=-1 everywhere: rsync otherwise
 *   compares mtimes to the second, and leaves a directory's nanoseconds as
 *   they were.
 * Edit copy_script.sh; check it with `shellcheck -s sh copy_script.sh` and
 * tests/copy/copy_script_test.sh.
 */
#include "controllers/resize/copy_script.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/strbuf.h"

static const char *const script_lines[] = {
#include "copy_script_lines.inc"
	NULL,
};

char *copy_script_text(void)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; script_lines[i]; i++)
		strbuf_appendf(&sb, "%s\n", script_lines[i]);
	return strbuf_detach(&sb);
}

/* p past the blanks before end (blank false: past the other characters). */
static const char *skip(const char *p, const char *end, bool blank)
{
	while (p < end && (*p == ' ' || *p == '\t') == blank)
		p++;
	return p;
}

/* Does line (len bytes) start with word followed by a blank or its end? Sets *rest past the blanks. */
static bool starts_with_word(const char *line, size_t len, const char *word, const char **rest)
{
	size_t n = strlen(word);
	if (len < n || memcmp(line, word, n) != 0 || (len > n && line[n] != ' ' && line[n] != '\t'))
		return false;
	*rest = skip(line + n, line + len, true);
	return true;
}

/* Parses a decimal number of exactly len digits into *v; refuses signs, overflow and "". */
static bool parse_count(const char *s, size_t len, long long *v)
{
	long long x = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		int d = s[i] - '0';
		if (x > (LLONG_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

/* "bytes=N files=N totalBytes=N totalFiles=N", in any order; other keys are ignored. */
static bool parse_progress(const char *p, const char *end, struct copy_progress *out)
{
	static const char *const keys[] = {"bytes", "files", "totalBytes", "totalFiles"};
	long long v[4];
	bool seen[4] = {false, false, false, false};

	while (p < end) {
		const char *tok = p;
		p = skip(p, end, false);
		const char *eq = memchr(tok, '=', (size_t)(p - tok));
		if (!eq)
			return false;
		for (int k = 0; k < 4; k++) {
			if ((size_t)(eq - tok) == strlen(keys[k]) && memcmp(tok, keys[k], (size_t)(eq - tok)) == 0) {
				if (!parse_count(eq + 1, (size_t)(p - eq - 1), &v[k]))
					return false;
				seen[k] = true;
			}
		}
		p = skip(p, end, true);
	}
	for (int k = 0; k < 4; k++)
		if (!seen[k])
			return false;
	out->bytes = v[0];
	out->files = v[1];
	out->total_bytes = v[2];
	out->total_files = v[3];
	return true;
}

/* Length of the valid UTF-8 sequence at s (at most avail bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
	size_t n;
	unsigned int min;
	unsigned int c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
		c &= 0x07;
	} else {
		return 0;
	}
	if (n > avail)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

/*
 * Copies p..end into out->reason: blanks at both ends dropped, control
 * characters as spaces, invalid UTF-8 as '?', cut at a character boundary
 * (the reason ends up in Events, which must be valid UTF-8).
 */
static void set_reason(struct copy_progress *out, const char *p, const char *end)
{
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t o = 0;
	while (p < end) {
		const unsigned char *u = (const unsigned char *)p;
		size_t n = utf8_len(u, (size_t)(end - p));
		if (n == 0) {
			if (o + 1 >= sizeof(out->reason))
				break;
			out->reason[o++] = '?';
			p++;
			continue;
		}
		if (o + n >= sizeof(out->reason))
			break;
		if (n == 1 && (u[0] < 0x20 || u[0] == 0x7f)) {
			out->reason[o++] = ' ';
		} else {
			memcpy(out->reason + o, p, n);
			o += n;
		}
		p += n;
	}
	out->reason[o] = '\0';
	if (o == 0)
		snprintf(out->reason, sizeof(out->reason), "no reason given");
}

int copy_progress_parse(const char *log_text, struct copy_progress *out)
{
	bool found = false;
	memset(out, 0, sizeof(*out));
	if (!log_text)
		return -1;
	const char *p = log_text;
	while (*p) {
		size_t len = strcspn(p, "\r\n");
		const char *end = p + len;
		const char *rest;
		if (starts_with_word(p, len, "SOP-PROGRESS", &rest)) {
			if (parse_progress(rest, end, out))
				found = true;
		} else if (starts_with_word(p, len, "SOP-RESULT", &rest)) {
			const char *word_end = skip(rest, end, false);
			const char *after = skip(word_end, end, true);
			if (word_end - rest == 2 && memcmp(rest, "ok", 2) == 0 && after == end) {
				out->result = 1;
				out->reason[0] = '\0';
				found = true;
			} else if (word_end - rest == 4 && memcmp(rest, "fail", 4) == 0) {
				out->result = -1;
				set_reason(out, after, end);
				found = true;
			}
		}
		p = *end ? end + 1 : end;
	}
	return found ? 0 : -1;
}
