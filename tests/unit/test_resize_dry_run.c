/*
 * The re-create tried before the orphan delete (resize_dry_run.h): the
 * request is a dryRun=All create of the body, and each answer of the API
 * server read as "takes it", "refuses it" or "try again".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/resize/resize_dry_run.h"
#include "loopback.h"
#include "util/xalloc.h"

#define STATUS(code, reason, message)                                                                        \
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"" message "\",\"reason\":\"" \
	reason "\",\"code\":" #code "}"

struct answer {
	const char *what;
	const char *status; /* the HTTP status line's tail */
	const char *body;
	int rc;             /* resize_dry_run_recreate's */
	bool refused;       /* err->reason RESIZE_RECREATE_REFUSED */
	const char *needle; /* refused: in err->message */
};

static const struct answer answers[] = {
	{"created (the set went meanwhile)", "201 Created", "{\"kind\":\"StatefulSet\"}", 0, false, NULL},
	{"everything passed but the name", "409 Conflict",
	 STATUS(409, "AlreadyExists", "statefulsets.apps \\\"web\\\" already exists"), 0, false, NULL},
	{"invalid", "422 Unprocessable Entity",
	 STATUS(422, "Invalid",
		"StatefulSet.apps \\\"web\\\" is invalid: spec.template.spec.volumes[1].name: Invalid value: "
		"\\\"Data_1\\\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters"),
	 -1, true, "422 Invalid: StatefulSet.apps \"web\" is invalid: spec.template.spec.volumes[1].name"},
	{"a webhook's denial, whatever its code", "409 Conflict",
	 STATUS(409, "AlreadyExists",
		"admission webhook \\\"statefulsets.stateful-operator.io\\\" denied the request: no"),
	 -1, true, "denied the request"},
	{"a policy's denial", "403 Forbidden",
	 STATUS(403, "Forbidden", "admission webhook \\\"policy\\\" denied the request: no hostPath"), -1, true,
	 "403 Forbidden"},
	{"a webhook that cannot dry-run: nothing to say", "400 Bad Request",
	 STATUS(400, "BadRequest", "admission webhook \\\"x\\\" does not support dry run"), 0, false, NULL},
	{"a quota the set itself fills", "403 Forbidden",
	 STATUS(403, "Forbidden", "statefulsets.apps \\\"web\\\" is forbidden: exceeded quota: q, requested: "
				  "count/statefulsets.apps=1"),
	 0, false, NULL},
	{"the server's trouble: try again", "503 Service Unavailable", STATUS(503, "ServiceUnavailable", "later"), -1,
	 false, NULL},
};

static void test_answers(void **state)
{
	(void)state;
	json_t *sts = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata",
				"name", "web");
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		const struct answer *w = &answers[i];
		struct canned_server *srv = canned_server_start(w->status, "application/json", w->body);
		struct kube_client_options o = {.max_retries = -1};
		struct kube_client *c = loopback_client(canned_server_port(srv), &o);
		struct kube_error err;
		memset(&err, 0, sizeof(err));
		int rc = resize_dry_run_recreate(c, "ns", sts, &err);
		if (rc != w->rc)
			fail_msg("%s: %d (%ld %s: %s), want %d", w->what, rc, err.code, err.reason, err.message, w->rc);
		bool refused = rc < 0 && !strcmp(err.reason, RESIZE_RECREATE_REFUSED);
		if (refused != w->refused)
			fail_msg("%s: reason %s", w->what, err.reason);
		if (w->needle && !strstr(err.message, w->needle))
			fail_msg("%s: message \"%s\" does not say \"%s\"", w->what, err.message, w->needle);
		char head[8192];
		assert_int_equal(canned_server_last(srv, head, sizeof(head)), 1);
		static const char line[] = "POST /apis/apps/v1/namespaces/ns/statefulsets?dryRun=All HTTP/1.1\r\n";
		if (strncmp(head, line, strlen(line)))
			fail_msg("%s: sent %.80s", w->what, head);
		kube_client_free(c);
		canned_server_stop(srv);
	}
	json_decref(sts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
