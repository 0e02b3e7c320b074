#include "util/log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/xalloc.h"

static enum log_level log_max = LOG_INFO;
static enum log_format log_fmt = LOG_FORMAT_TEXT;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_setup(enum log_level level, enum log_format format)
{
	log_max = level;
	log_fmt = format;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (int i = 0; i <= LOG_DEBUG; i++) {
		if (!strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

int log_format_parse(const char *s, enum log_format *out)
{
	if (!strcmp(s, "text"))
		*out = LOG_FORMAT_TEXT;
	else if (!strcmp(s, "json"))
		*out = LOG_FORMAT_JSON;
	else
		return -1;
	return 0;
}

bool log_enabled(enum log_level level)
{
	return level <= log_max;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/*
 * msg with each byte that is not part of valid UTF-8 replaced by U+FFFD, as
 * a new string; NULL when msg is valid already. jansson refuses invalid
 * UTF-8, which would lose the whole line (a "%.200s" cut can split a
 * character, and messages quote what the network sent).
 */
static char *utf8_sanitize(const char *msg)
{
	const unsigned char *s = (const unsigned char *)msg;
	size_t i = 0, n;

	while (s[i] && (n = utf8_len(s + i)))
		i += n;
	if (!s[i])
		return NULL;
	char *out = xmalloc(strlen(msg) * 3 + 1), *o = out;
	memcpy(o, msg, i);
	o += i;
	while (s[i]) {
		n = utf8_len(s + i);
		if (n) {
			memcpy(o, s + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return out;
}

static void write_all(const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, s, len);
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

void log_msg(enum log_level level, const char *component, const char *fmt, ...)
{
	if (!log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[40];
	size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, ".%03ldZ", ts.tv_nsec / 1000000);

	char *line;
	if (log_fmt == LOG_FORMAT_JSON) {
		char *valid = utf8_sanitize(msg);
		if (valid) {
			free(msg);
			msg = valid;
		}
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ts", when, "level", level_names[level],
				      "logger", component, "msg", msg);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		line = xasprintf("%s\n", s ? s : "{}");
		free(s);
	} else {
		/* One event, one line: fold newlines a message might carry. */
		for (char *p = msg; *p; p++)
			if (*p == '\n')
				*p = ' ';
		line = xasprintf("%s %-5s %s: %s\n", when, level_names[level], component, msg);
	}
	write_all(line, strlen(line));
	free(line);
	free(msg);
}
