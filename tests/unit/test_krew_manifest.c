/*
 * The krew manifest (plugins/krew/stateful.yaml) has what krew's
 * validation requires (apiVersion, kind, metadata.name, spec.version as
 * vMAJOR.MINOR.PATCH, shortDescription, platforms each with a selector,
 * an https uri, a sha256 of 64 hex digits and bin), and bin is the name
 * of the binary this build makes, so `kubectl stateful` finds it.
 *
 *   test_krew_manifest                      the template, plugins/krew/stateful.yaml
 *   test_krew_manifest MANIFEST ARCHIVES    a release's manifest (scripts/release): the
 *       same, and each platform's uri names an archive of the ARCHIVES directory by
 *       the release's version, its sha256 being that file's (krew refuses others)
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

#include <openssl/evp.h>

#include "client/kube_object.h"
#include "util/yaml_json.h"

static json_t *manifest;
static const char *manifest_path = SOP_SOURCE_DIR "/plugins/krew/stateful.yaml";
static const char *archives_dir; /* a release's directory; NULL: the template */

static int load(void **state)
{
	(void)state;
	FILE *f = fopen(manifest_path, "r");
	if (!f) {
		fprintf(stderr, "%s: cannot open\n", manifest_path);
		return -1;
	}
	static char text[65536];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	char *msg = NULL;
	if (yaml_to_json(text, n, &manifest, &msg) != 0) {
		fprintf(stderr, "%s: %s\n", manifest_path, msg);
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
		/* The binary is among the files the archive gives, and with it its lib/:
		 * everything ("*"), as krew does when files is left out. */
		bool shipped = false;
		size_t k;
		const json_t *f;
		json_array_foreach(json_object_get(p, "files"), k, f)
			shipped |= kube_obj_str(f, "from") && !strcmp(kube_obj_str(f, "from"), "*")
				&& kube_obj_str(f, "to") && !strcmp(kube_obj_str(f, "to"), ".");
		assert_true(shipped);
	}
	assert_true(linux_amd64);
}

/* The SHA-256 of a file as 64 lowercase hex digits in hex[65]; 0 or -1. */
static int file_sha256(const char *path, char hex[65])
{
	int rc = -1;
	unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	size_t n;
	FILE *f = fopen(path, "rb");
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!f || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (EVP_DigestUpdate(ctx, buf, n) != 1)
			goto out;
	if (ferror(f) || EVP_DigestFinal_ex(ctx, md, &len) != 1 || len != 32)
		goto out;
	for (unsigned int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	if (f)
		fclose(f);
	return rc;
}

static void test_release_archives(void **state)
{
	(void)state;
	const char *version = kube_obj_str(manifest, "spec.version");
	assert_non_null(version);
	char *in_uri = NULL;
	assert_true(asprintf(&in_uri, "/%s/", version) > 0);
	const json_t *platforms = json_object_get(json_object_get(manifest, "spec"), "platforms");
	size_t i;
	const json_t *p;
	json_array_foreach(platforms, i, p) {
		const char *uri = kube_obj_str(p, "uri"), *sha = kube_obj_str(p, "sha256");
		assert_non_null(uri);
		assert_non_null(sha);
		/* The release's download directory is named by its version. */
		if (!strstr(uri, in_uri))
			fail_msg("%s is not a URI of release %s", uri, version);
		const json_t *labels = json_object_get(json_object_get(p, "selector"), "matchLabels");
		char *name = NULL, *path = NULL, hex[65];
		assert_true(asprintf(&name, "/kubectl-stateful_%s_%s.tar.gz", kube_obj_str(labels, "os"),
				     kube_obj_str(labels, "arch")) > 0);
		if (strlen(uri) < strlen(name) || strcmp(uri + strlen(uri) - strlen(name), name) != 0)
			fail_msg("%s does not end in %s (its selector's os and arch)", uri, name);
		assert_true(asprintf(&path, "%s%s", archives_dir, name) > 0);
		if (file_sha256(path, hex) != 0)
			fail_msg("%s: cannot read it", path);
		if (strcmp(sha, hex) != 0)
			fail_msg("%s: sha256 %s in the manifest, %s the file's", path, sha, hex);
		free(name);
		free(path);
	}
	free(in_uri);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_fields),
		cmocka_unit_test(test_platforms),
	};
	const struct CMUnitTest release_tests[] = {
		cmocka_unit_test(test_top_fields),
		cmocka_unit_test(test_platforms),
		cmocka_unit_test(test_release_archives),
	};
	if (argc == 1)
		return cmocka_run_group_tests(tests, load, unload);
	if (argc != 3) {
		fprintf(stderr, "usage: %s [MANIFEST ARCHIVES_DIR]\n", argv[0]);
		return 2;
	}
	manifest_path = argv[1];
	archives_dir = argv[2];
	return cmocka_run_group_tests(release_tests, load, unload);
}
