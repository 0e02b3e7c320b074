/*
 * The state fixtures (tests/fixtures/state/<controller>/<phase>.json): the
 * objects a controller's planner reads, as a release wrote them in one
 * phase, and the step that release planned next. Written by the planner
 * tests' simulations (SOP_STATE_FIXTURES_OUT=<dir>), read by
 * test_state_fixtures.c, which plans each with the current code.
 *
 * A fixture is one JSON object: "comment", "controller", "phase", "now"
 * (RFC 3339), "objects" ({"statefulSet", "backup", "statefulCluster": an
 * object or absent; "pvcs", "pods", "pvs", "jobs", "storageClasses",
 * "revisions", "nodes": arrays}) and "next" ({"verb", "step", "object"}).
 * The states are not sealed (the seal key is a secret of each cluster):
 * the reader seals them with a test key, as the controller does.
 *
 * Failures end the test through cmocka. Not thread-safe.
 */
#ifndef SOP_TEST_STATE_FIXTURE_H
#define SOP_TEST_STATE_FIXTURE_H

#include <jansson.h>
#include <stdbool.h>

#include "runtime/action.h"

#define STATE_FIXTURES_OUT_ENV "SOP_STATE_FIXTURES_OUT"

/* The directory fixtures are written to ($SOP_STATE_FIXTURES_OUT), or NULL: the tests run as usual. Borrowed. */
const char *state_fixture_out(void);

/*
 * Writes <out>/<controller>/<phase>.json (directories made) with objects
 * (borrowed; its keys as above), now and the step a planned next. Returns
 * false, writing nothing, when that file was written already by this
 * program (the first time a phase is seen is the one kept).
 */
bool state_fixture_write(const char *out, const char *controller, const char *phase, const char *comment,
			 const json_t *objects, long long now_ms, const struct action *a);

/* The fixture at path: a new reference; fails the test when it cannot be read. */
json_t *state_fixture_load(const char *path);

/* The object name of the step a plans: what it creates, patches or deletes ("" when none). Borrowed from a. */
const char *state_fixture_object(const struct action *a);

#endif
