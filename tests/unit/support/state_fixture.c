#include "state_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client/kube_object.h"

const char *state_fixture_out(void)
{
	const char *d = getenv(STATE_FIXTURES_OUT_ENV);
	return d && *d ? d : NULL;
}

static void make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

const char *state_fixture_object(const struct action *a)
{
	if (a->name[0])
		return a->name;
	const char *n = a->body ? kube_obj_str(a->body, "metadata.name") : NULL;
	return n ? n : "";
}

bool state_fixture_write(const char *out, const char *controller, const char *phase, const char *comment,
			 const json_t *objects, long long now_ms, const struct action *a)
{
	char dir[2048], path[4096], now[32];
	snprintf(dir, sizeof(dir), "%s/%s", out, controller);
	snprintf(path, sizeof(path), "%s/%s.json", dir, phase);
	/* Each program writes a phase once, the first time it is seen; a file of an earlier run is replaced. */
	static json_t *written;
	if (!written)
		written = json_object(); /* lives as long as the program */
	if (json_object_get(written, path))
		return false;
	json_object_set_new(written, path, json_true());
	make_dir(out);
	make_dir(dir);
	time_t t = (time_t)(now_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:O, s:{s:s, s:s, s:s}}", "comment", comment, "controller",
				controller, "phase", phase, "now", now, "objects", objects, "next", "verb",
				action_verb_name(a->verb), "step", action_name(a), "object", state_fixture_object(a));
	if (!doc || json_dump_file(doc, path, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
		fail_msg("cannot write %s", path);
	json_decref(doc);
	printf("wrote %s\n", path);
	return true;
}

json_t *state_fixture_load(const char *path)
{
	json_error_t e;
	json_t *doc = json_load_file(path, 0, &e);
	if (!json_is_object(doc))
		fail_msg("%s: %s (line %d)", path, e.text, e.line);
	return doc;
}
