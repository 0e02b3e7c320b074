/*
 * One line per event, as text or JSON (--log-format), filtered by level
 * (--log-level). Callers never pass secrets (tokens, keys) to it. A JSON
 * line is always valid JSON: message bytes that are not UTF-8 become U+FFFD,
 * and controls a terminal acts on are \u escapes (the message reads back
 * the same). A text line shows the message as text_sanitize does (one line,
 * controls replaced), so `kubectl logs` never replays a tenant's escapes.
 * Thread-safe: each line is written with one write(2).
 */
#ifndef SOP_UTIL_LOG_H
#define SOP_UTIL_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

void log_setup(enum log_level level, enum log_format format);
/* Parse "error|warn|info|debug" / "text|json"; -1 when unknown. */
int log_level_parse(const char *s, enum log_level *out) __attribute__((warn_unused_result));
int log_format_parse(const char *s, enum log_format *out) __attribute__((warn_unused_result));
bool log_enabled(enum log_level level);

/* component names the module ("informer", "resize", ...). */
void log_msg(enum log_level level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_error(c, ...) log_msg(LOG_ERROR, c, __VA_ARGS__)
#define log_warn(c, ...) log_msg(LOG_WARN, c, __VA_ARGS__)
#define log_info(c, ...) log_msg(LOG_INFO, c, __VA_ARGS__)
#define log_debug(c, ...)                           \
	do {                                            \
		if (log_enabled(LOG_DEBUG))                 \
			log_msg(LOG_DEBUG, c, __VA_ARGS__);     \
	} while (0)

#endif
