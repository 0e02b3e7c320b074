/*
 * Golden outputs of every -o (and --no-headers) of the commands that list
 * (status, members, cleanup): the render functions over the fixtures in
 * the JSON files of tests/fixtures/plugin, compared byte for byte with the files
 * beside them. After an intended change, SOP_GOLDEN_UPDATE=1 rewrites the
 * files; review the diff.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_args.h"
#include "plugin/plugin_cleanup.h"
#include "plugin/plugin_members.h"
#include "plugin/plugin_output.h"
#include "plugin/plugin_status.h"
#include "util/yaml_json.h"

#define MAXARGS 16

static const struct golden {
	const char *fixture;
	const char *line; /* the command line, as typed after kubectl stateful */
	const char *golden;
} goldens[] = {
	{"status-rows.json", "status", "status.txt"},
	{"status-rows.json", "status -A", "status-A.txt"},
	{"status-rows.json", "status -o wide", "status-wide.txt"},
	{"status-rows.json", "status -A -o wide --no-headers", "status-A-wide-no-headers.txt"},
	{"status-rows.json", "status --no-headers", "status-no-headers.txt"},
	{"status-rows.json", "status -o name", "status-name.txt"},
	{"status-rows.json", "status -o json", "status.json"},
	{"status-rows.json", "status -o yaml", "status.yaml"},
	{"status-rows.json", "status -o 'jsonpath={range [*]}{.kind}/{.name}{\"\\t\"}{.phase}{\"\\n\"}{end}'",
	 "status-jsonpath.txt"},
	{"members.json", "members stc/coder", "members.txt"},
	{"members.json", "members stc/coder -o wide", "members-wide.txt"},
	{"members.json", "members stc/coder --no-headers", "members-no-headers.txt"},
	{"members.json", "members stc/coder -o name", "members-name.txt"},
	{"members.json", "members stc/coder -o json", "members.json.out"},
	{"members.json", "members stc/coder -o yaml", "members.yaml"},
	{"members.json", "members stc/coder -o jsonpath={[*].identity}", "members-jsonpath.txt"},
	{"cleanup-rows.json", "cleanup sts/web", "cleanup.txt"},
	{"cleanup-rows.json", "cleanup sts/web -o wide", "cleanup-wide.txt"},
	{"cleanup-rows.json", "cleanup sts/web --no-headers", "cleanup-no-headers.txt"},
	{"cleanup-rows.json", "cleanup sts/web -o name", "cleanup-name.txt"},
	{"cleanup-rows.json", "cleanup sts/web -o json", "cleanup.json"},
	{"cleanup-rows.json", "cleanup sts/web -o yaml", "cleanup.yaml"},
	{"cleanup-rows.json", "cleanup sts/web -o 'jsonpath={range [*]}{.ordinal}={.failures}/{.maxAttempts} {end}'",
	 "cleanup-jsonpath.txt"},
};

static char *path_of(const char *name)
{
	size_t n = strlen(SOP_PLUGIN_FIXTURES_DIR) + strlen(name) + 2;
	char *p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", SOP_PLUGIN_FIXTURES_DIR, name);
	return p;
}

/* The file's text (new), or NULL when it does not exist. */
static char *read_text(const char *name)
{
	char *path = path_of(name);
	FILE *f = fopen(path, "rb");
	free(path);
	if (!f)
		return NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	assert_non_null(m);
	int c;
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return text;
}

/* The command line's output of doc, rendered as the command does. New string. */
static char *render(const char *line, const json_t *doc)
{
	/* Split as a shell would: spaces apart, '...' together (the quotes dropped). */
	char buf[512];
	char *argv[MAXARGS];
	int argc = 0;
	argv[argc++] = (char *)"kubectl-stateful";
	char *w = buf;
	bool quoted = false, in_word = false;
	for (const char *p = line; *p && argc < MAXARGS; p++) {
		if (*p == '\'' ) {
			quoted = !quoted;
		} else if (*p == ' ' && !quoted) {
			if (in_word)
				*w++ = 0;
			in_word = false;
			continue;
		} else {
			*w++ = *p;
		}
		if (!in_word)
			argv[argc++] = w - (*p == '\'' ? 0 : 1);
		in_word = true;
	}
	*w = 0;
	struct plugin_args a;
	char *err = NULL, *out = NULL;
	if (plugin_args_parse(argc, argv, &a, &err) < 0)
		fail_msg("%s: %s", line, err);
	struct plugin_format f = plugin_format_of(&a);
	int rc = a.cmd == PLUGIN_STATUS	   ? status_render(doc, &f, a.all_namespaces, &out, &err)
		 : a.cmd == PLUGIN_MEMBERS ? members_render(doc, &f, &out, &err)
					   : cleanup_render(doc, &f, &out, &err);
	if (rc < 0)
		fail_msg("%s: %s", line, err);
	plugin_args_release(&a);
	return out;
}

static void test_goldens(void **state)
{
	(void)state;
	bool update = getenv("SOP_GOLDEN_UPDATE") && !strcmp(getenv("SOP_GOLDEN_UPDATE"), "1");
	int failed = 0;
	for (size_t i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++) {
		const struct golden *g = &goldens[i];
		char *fixture = read_text(g->fixture);
		assert_non_null(fixture);
		json_t *doc = json_loads(fixture, 0, NULL);
		assert_non_null(doc);
		char *got = render(g->line, doc);
		char *want = read_text(g->golden);
		if (update) {
			char *path = path_of(g->golden);
			FILE *f = fopen(path, "wb");
			assert_non_null(f);
			fputs(got, f);
			fclose(f);
			free(path);
		} else if (!want || strcmp(got, want)) {
			print_error("%s: output differs from %s:\n--- got\n%s--- want\n%s", g->line, g->golden, got,
				    want ? want : "(no file)\n");
			failed++;
		}
		free(want);
		free(got);
		json_decref(doc);
		free(fixture);
	}
	assert_int_equal(failed, 0);
}

/* The documents read back as the fixture: json and yaml keep every value, controls escaped. */
static void test_documents_read_back(void **state)
{
	(void)state;
	static const char *const fixtures[] = {"status-rows.json", "members.json", "cleanup-rows.json"};
	for (size_t i = 0; i < 3; i++) {
		char *fixture = read_text(fixtures[i]);
		json_t *doc = json_loads(fixture, 0, NULL);
		for (int o = PLUGIN_OUT_JSON; o <= PLUGIN_OUT_YAML; o++) {
			struct plugin_format f = {.output = (enum plugin_output)o};
			char *out = NULL, *err = NULL;
			assert_int_equal(status_render(doc, &f, false, &out, &err), 0);
			assert_null(strchr(out, '\033'));
			json_t *back = NULL;
			char *msg = NULL;
			assert_int_equal(yaml_to_json(out, strlen(out), &back, &msg), 0);
			if (!json_equal(back, doc))
				fail_msg("%s as %d does not read back:\n%s", fixtures[i], o, out);
			json_decref(back);
			free(out);
		}
		json_decref(doc);
		free(fixture);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goldens),
		cmocka_unit_test(test_documents_read_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
