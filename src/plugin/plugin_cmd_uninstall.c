/*
 * `kubectl stateful uninstall [--dry-run] [--force]`: run after the
 * operator was stopped and before its objects are deleted
 * (docs/upgrade-uninstall.md). Takes the operator's finalizer off every
 * StatefulSet (in every namespace, or -n's), so none hangs in Terminating
 * once no operator is left to remove it. Refused, changing nothing, while
 * the operator still runs (it would put the finalizer back) or while work
 * is in flight that only the operator can bring to an end (a scale-down
 * cleanup pod, a resize, a StatefulSet held by its backup ConfigMap):
 * each is named with how to finish or abort it. --force goes on anyway;
 * --dry-run says what would be done.
 *
 * Each removal is a JSON patch whose `test` ops check that the entries
 * removed are still ours (uninstall_finalizer_patch): another
 * controller's finalizer is never touched, and a list changed meanwhile
 * is read again.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/kube_object.h"
#include "controllers/contract.h"
#include "plugin/plugin_commands.h"
#include "plugin/plugin_uninstall.h"
#include "util/text_sanitize.h"
#include "util/xalloc.h"

/* A list refused, or attempts at a patch whose test keeps failing. */
#define PATCH_ATTEMPTS 3

/* LIST of r in ns (NULL: every namespace) with selector: a new array, or NULL after saying why. */
static json_t *list(struct plugin_session *s, const struct kube_resource *r, const char *ns, const char *selector)
{
	json_t *items = NULL;
	struct kube_error err;
	if (kube_list_all(s->client, r, ns, selector, 0, &items, NULL, &err) < 0) {
		plugin_error("listing %s%s%s: %s%s", r->plural, ns ? " in namespace " : " in every namespace",
			     ns ? ns : "", err.message,
			     !ns && err.code == 403 ? " (-n NAMESPACE looks at the namespace the operator watched)" : "");
		return NULL;
	}
	return items;
}

/*
 * Removes our finalizer from StatefulSet ns/name, seen as obj (borrowed).
 * Returns 1 when removed, 0 when there was none left (or the set is
 * gone), -1 after saying why not.
 */
static int remove_finalizer(struct plugin_session *s, const char *ns, const char *name, const json_t *obj)
{
	json_t *fresh = NULL;
	int out = -1;
	for (int attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
		json_t *patch = uninstall_finalizer_patch(fresh ? fresh : obj, FINALIZER_SCALEDOWN);
		if (!patch) {
			out = 0;
			break;
		}
		struct kube_error err;
		int r = kube_patch(s->client, &KUBE_STATEFULSETS, ns, name, NULL, KUBE_PATCH_JSON, patch, NULL, &err);
		json_decref(patch);
		if (r == 0) {
			out = 1;
			break;
		}
		if (err.code == 404) {
			out = 0;
			break;
		}
		/* 422: a test failed, the list changed since it was read; read it again. */
		json_decref(fresh);
		fresh = NULL;
		if (err.code != 422 || kube_get(s->client, &KUBE_STATEFULSETS, ns, name, &fresh, &err) < 0) {
			if (err.code == 404) {
				out = 0;
				break;
			}
			plugin_error("statefulset.apps/%s -n %s: removing finalizer %s: %s", name, ns, FINALIZER_SCALEDOWN,
				     err.message);
			break;
		}
	}
	if (out < 0 && fresh)
		plugin_error("statefulset.apps/%s -n %s: its finalizers kept changing; run the command again", name, ns);
	json_decref(fresh);
	return out;
}

/* Prints the blockers of row r, as refusals (or, with --force or --dry-run, as what is left half-way). */
static void print_blockers(const json_t *r, bool refused)
{
	const char *ns = kube_obj_str(r, "namespace"), *name = kube_obj_str(r, "name");
	size_t i;
	const json_t *b;
	json_array_foreach(json_object_get(r, "blockers"), i, b) {
		char *what = text_sanitize(kube_obj_str(b, "what"), 0);
		char *finish = text_sanitize(kube_obj_str(b, "finish"), 0);
		if (refused)
			plugin_error("statefulset.apps/%s -n %s: %s", name, ns, what);
		else
			plugin_warning("statefulset.apps/%s -n %s: %s; without the operator it stays half-way", name, ns,
				       what);
		fprintf(stderr, "  to go on: %s\n", finish);
		free(what);
		free(finish);
	}
}

int plugin_cmd_uninstall(struct plugin_session *s)
{
	const struct plugin_args *a = s->args;
	const char *ns = a->namespace ? s->ns : NULL;
	int code = PLUGIN_EXIT_OK;
	json_t *sets = NULL, *backups = NULL, *pods = NULL, *rows = NULL;

	char *why = NULL;
	enum operator_seen seen = plugin_operator_seen(s, &why);
	if (seen == OPERATOR_RUNNING) {
		plugin_error("the operator still runs (%s): it would put the finalizer back. Stop it first: kubectl -n %s "
			     "scale deployment stateful-operator --replicas=0",
			     why, s->operator_ns);
		code = PLUGIN_EXIT_FAILED;
		if (!a->dry_run)
			goto out;
	} else if (seen == OPERATOR_UNKNOWN) {
		plugin_warning("%s; make sure the operator is stopped", why);
	}

	if (!(sets = list(s, &KUBE_STATEFULSETS, ns, NULL)) ||
	    !(backups = list(s, &KUBE_CONFIGMAPS, ns, LABEL_SAVED_STATEFULSET)) ||
	    !(pods = list(s, &KUBE_PODS, ns, LABEL_CLEANUP_FOR))) {
		code = PLUGIN_EXIT_FAILED;
		goto out;
	}
	rows = uninstall_scan(sets, backups, pods);
	size_t blocked = uninstall_blocked(rows);
	bool refuse = blocked && !a->force;
	size_t i;
	const json_t *r;
	json_array_foreach(rows, i, r)
		print_blockers(r, refuse);
	if (refuse) {
		plugin_error("%zu StatefulSet%s with work in flight: %s. Let it end with the operator running "
			     "(or --force to leave it half-way)",
			     blocked, blocked == 1 ? "" : "s", a->dry_run ? "the command would be refused" : "nothing changed");
		code = PLUGIN_EXIT_FAILED;
		if (!a->dry_run)
			goto out;
	}

	size_t removed = 0, failed = 0, held = 0;
	json_array_foreach(rows, i, r) {
		if (!json_is_true(json_object_get(r, "finalizer")))
			continue;
		held++;
		const char *rns = kube_obj_str(r, "namespace"), *name = kube_obj_str(r, "name");
		bool terminating = json_is_true(json_object_get(r, "terminating"));
		const char *after = !terminating ? ""
				    : json_is_true(json_object_get(r, "claimsDeleted"))
					    ? " (Terminating: its deletion goes on now, without scale-down cleanup; "
					      "whenDeleted: Delete takes its claims with it)"
					    : " (Terminating: its deletion goes on now, without scale-down cleanup; its claims "
					      "stay)";
		if (a->dry_run) {
			printf("statefulset.apps/%s -n %s: would remove finalizer %s%s\n", name, rns, FINALIZER_SCALEDOWN,
			       after);
			continue;
		}
		int got = remove_finalizer(s, rns, name, kube_list_find(sets, rns, name));
		if (got < 0) {
			failed++;
		} else if (got > 0) {
			removed++;
			printf("statefulset.apps/%s -n %s: finalizer %s removed%s\n", name, rns, FINALIZER_SCALEDOWN, after);
		} else {
			printf("statefulset.apps/%s -n %s: finalizer %s already gone\n", name, rns, FINALIZER_SCALEDOWN);
		}
	}
	if (a->dry_run)
		printf("dry run: %zu StatefulSet%s hold%s finalizer %s; nothing changed\n", held, held == 1 ? "" : "s",
		       held == 1 ? "s" : "", FINALIZER_SCALEDOWN);
	else if (!held)
		printf("no StatefulSet%s%s holds finalizer %s; nothing to remove\n", ns ? " in namespace " : "",
		       ns ? ns : "", FINALIZER_SCALEDOWN);
	else
		printf("%zu finalizer%s removed%s. Now uninstall the operator (helm uninstall, or kubectl delete -k); "
		       "docs/upgrade-uninstall.md says what stays on purpose\n",
		       removed, removed == 1 ? "" : "s", failed ? "; some could not be, see above" : "");
	if (failed)
		code = PLUGIN_EXIT_FAILED;
out:
	free(why);
	json_decref(rows);
	json_decref(pods);
	json_decref(backups);
	json_decref(sets);
	return code;
}
