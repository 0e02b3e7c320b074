#include "util/log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/text_sanitize.h"
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
		/* jansson refuses invalid UTF-8, which would lose the whole line (a "%.200s" cut, bytes from the network). */
		char *valid = text_utf8_repair(msg);
		if (valid) {
			free(msg);
			msg = valid;
		}
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ts", when, "level", level_names[level],
				      "logger", component, "msg", msg);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		/* The same message, with no control a terminal (kubectl logs) would act on. */
		char *shown = text_escape_json(s ? s : "{}");
		line = xasprintf("%s\n", shown);
		free(shown);
		free(s);
	} else {
		/* One event, one line, nothing a terminal acts on (text_sanitize.h). */
		char *shown = text_sanitize(msg, 0);
		line = xasprintf("%s %-5s %s: %s\n", when, level_names[level], component, shown);
		free(shown);
	}
	write_all(line, strlen(line));
	free(line);
	free(msg);
}
