/* own_image_of_pod: which container of the operator's pod is the operator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "own_image.h"

static char *image_of(const char *pod_json, char **why)
{
	json_t *pod = json_loads(pod_json, 0, NULL);
	assert_non_null(pod);
	char *image = own_image_of_pod(pod, why);
	json_decref(pod);
	return image;
}

static void test_the_only_container(void **state)
{
	(void)state;
	char *why;
	char *image = image_of("{\"spec\":{\"containers\":[{\"name\":\"op\",\"image\":\"registry.example/sop:1.2\"}]}}", &why);
	assert_string_equal(image, "registry.example/sop:1.2");
	assert_null(why);
	free(image);
}

/* With a sidecar (a service mesh proxy, say), the container named manager. */
static void test_manager_among_sidecars(void **state)
{
	(void)state;
	char *why;
	char *image = image_of("{\"spec\":{\"containers\":[{\"name\":\"istio-proxy\",\"image\":\"proxy:1\"},"
			       "{\"name\":\"manager\",\"image\":\"mirror.local/stateful-operator:0.1.0\"}]}}",
			       &why);
	assert_string_equal(image, "mirror.local/stateful-operator:0.1.0");
	free(image);
}

static void test_none_to_choose(void **state)
{
	(void)state;
	const char *pods[] = {"{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}}",
			      "{\"spec\":{\"containers\":[]}}", "{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}", "{}"};
	for (size_t i = 0; i < sizeof(pods) / sizeof(*pods); i++) {
		char *why;
		assert_null(image_of(pods[i], &why));
		assert_non_null(why);
		free(why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_only_container),
		cmocka_unit_test(test_manager_among_sidecars),
		cmocka_unit_test(test_none_to_choose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
