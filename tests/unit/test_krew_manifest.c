/*
 * The krew manifest (plugins/krew/stateful.yaml) has what krew's
 * validation requires (apiVersion, kind, metadata.name, spec.version as
 * vMAJOR.MINOR.PATCH, shortDescription, platforms each with a selector,
 * an https uri, a sha256 of 64 hex digits and bin), and bin is the name
 * of the binary this build makes, so `kubectl stateful` finds it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "util/yaml_json.h"

static json_t *manifest;

static int load(void **state)
{
	(void)state;
	FILE *f = fopen(SOP_SOURCE_DIR "/plugins/krew/stateful.yaml", "r");
	if (!f)
		return -1;
	static char text[65536];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	char *msg = NULL;
	if (yaml_to_json(text, n, &manifest, &msg) != 0) {
		fprintf(stderr, "plugins/krew/stateful.yaml: %s\n", msg);
		free(msg);
		return -1;
	}
	return 0;
}

static int unload(void **state)
{
	(void)state;
	json_decref(manifest);
	return 0;
}

static bool all_hex(const char *s, size_t n)
{
	if (!s || strlen(s) != n)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

static void test_top_fields(void **state)
{
	(void)state;
	assert_string_equal(kube_obj_str(manifest, "apiVersion"), "krew.googlecontainertools.github.com/v1alpha2");
	assert_string_equal(kube_obj_str(manifest, "kind"), "Plugin");
	/* krew runs it as kubectl-<name>: the name must be the binary's suffix. */
	char *want = NULL;
	assert_non_null(kube_obj_str(manifest, "metadata.name"));
	assert_true(asprintf(&want, "kubectl-%s", kube_obj_str(manifest, "metadata.name")) > 0);
	assert_string_equal(want, SOP_PLUGIN_BINARY);
	free(want);
	const char *v = kube_obj_str(manifest, "spec.version");
	unsigned a, b, c;
	char end;
	assert_non_null(v);
	assert_int_equal(sscanf(v, "v%u.%u.%u%c", &a, &b, &c, &end), 3);
	assert_non_null(kube_obj_str(manifest, "spec.shortDescription"));
	assert_true(strlen(kube_obj_str(manifest, "spec.shortDescription")) <= 255);
}

static void test_platforms(void **state)
{
	(void)state;
	const json_t *platforms = json_object_get(json_object_get(manifest, "spec"), "platforms");
	assert_true(json_array_size(platforms) >= 1);
	size_t i;
	const json_t *p;
	bool linux_amd64 = false;
	json_array_foreach(platforms, i, p) {
		const json_t *labels = json_object_get(json_object_get(p, "selector"), "matchLabels");
		assert_true(json_object_size(labels) > 0);
		const char *os = kube_obj_str(labels, "os"), *arch = kube_obj_str(labels, "arch");
		linux_amd64 |= os && arch && !strcmp(os, "linux") && !strcmp(arch, "amd64");
		const char *uri = kube_obj_str(p, "uri");
		assert_non_null(uri);
		assert_memory_equal(uri, "https://", 8);
		assert_true(all_hex(kube_obj_str(p, "sha256"), 64));
		assert_string_equal(kube_obj_str(p, "bin"), SOP_PLUGIN_BINARY);
		/* The binary is among the files the archive gives. */
		bool shipped = false;
		size_t k;
		const json_t *f;
		json_array_foreach(json_object_get(p, "files"), k, f)
			shipped |= kube_obj_str(f, "from") && !strcmp(kube_obj_str(f, "from"), SOP_PLUGIN_BINARY);
		assert_true(shipped);
	}
	assert_true(linux_amd64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_fields),
		cmocka_unit_test(test_platforms),
	};
	return cmocka_run_group_tests(tests, load, unload);
}
