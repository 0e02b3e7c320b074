#include "webhook/template_diff.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube_object.h"
#include "client/quantity.h"
#include "controllers/contract.h"
#include "util/strbuf.h"
#include "util/work_budget.h"
#include "util/xalloc.h"
#include "webhook/class_lookup.h"
#include "webhook/template_fields.h"

#define CHANGEABLE                                                                                           \
	"only spec.resources.requests.storage, spec.storageClassName, spec.volumeAttributesClassName, " \
	"metadata.labels and metadata.annotations of a volumeClaimTemplate can change"

enum strategy { STRATEGY_AUTO, STRATEGY_EXPAND, STRATEGY_COPY, STRATEGY_INVALID };

struct diff {
	const struct admission_view *view;
	const json_t *annotations; /* the applied object's: a manifest may add allow-shrink with the change */
	enum strategy strategy;
	bool allow_shrink;
	struct strbuf denial;
	json_t *warnings;
};

/* NULL equals NULL: an absent field is a value of its own here. */
static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static const char *shown(const char *s, const char *absent)
{
	return s ? s : absent;
}

static void deny(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void deny(struct diff *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = xvasprintf(fmt, ap);
	va_end(ap);
	strbuf_appendf(&d->denial, "%s%s", d->denial.len ? "; " : "", m);
	free(m);
}

/* ---- what the cluster has ---- */

/*
 * The StorageClass a template's claims get (cls, or the default one when
 * cls is NULL) into *sc. Returns false, denying, when the caches know the
 * classes and it does not exist; *sc is NULL also when the classes are
 * unknown or cls is "" (no class: pre-provisioned volumes only).
 */
static bool resolve_class(struct diff *d, const char *name, const char *cls, const json_t **sc)
{
	const json_t *classes = d->view ? d->view->storage_classes : NULL;
	*sc = NULL;
	if (!classes || (cls && !*cls))
		return true;
	*sc = cls ? kube_list_find(classes, NULL, cls) : class_default(classes);
	if (*sc)
		return true;
	char *existing = class_names(classes);
	if (cls)
		deny(d, "volumeClaimTemplate \"%s\": StorageClass \"%s\" does not exist (existing: %s); create it or fix "
			"spec.storageClassName", name, cls, existing);
	else
		deny(d, "volumeClaimTemplate \"%s\" names no StorageClass and the cluster has no default one "
			"(existing: %s); set spec.storageClassName", name, existing);
	free(existing);
	return false;
}

/* RFC 1123 subdomain (at most 253 of a-z, 0-9, '-' and '.', each part alphanumeric at both ends): a class name. */
static bool dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
		bool edge = i == 0 || i + 1 == n || s[i - 1] == '.' || s[i + 1] == '.';
		if (!alnum && (edge || (s[i] != '-' && s[i] != '.')))
			return false;
	}
	return true;
}

/* Denies a volumeAttributesClassName that names no VolumeAttributesClass ("" and NULL unset it). */
static void check_attributes_class(struct diff *d, const char *name, const char *vac)
{
	const json_t *classes = d->view ? d->view->attributes_classes : NULL;
	if (!vac || !*vac)
		return;
	if (!classes && d->view && d->view->attributes_classes_unlisted) {
		if (!dns_subdomain(vac))
			deny(d, "volumeClaimTemplate \"%s\": volumeAttributesClassName \"%s\" is no VolumeAttributesClass "
				"name (a DNS subdomain: a-z, 0-9, '-' and '.'); fix the field", name, vac);
		return;
	}
	if (!classes && d->view && d->view->attributes_classes_unreadable) {
		deny(d, "volumeClaimTemplate \"%s\": volumeAttributesClassName \"%s\" cannot be checked: the operator "
			"may not list VolumeAttributesClasses; grant it list and watch (ClusterRole "
			"stateful-operator-webhook, deploy/webhook), or remove the field", name, vac);
		return;
	}
	if (!classes) {
		deny(d, "volumeClaimTemplate \"%s\": volumeAttributesClassName \"%s\", but this cluster serves no "
			"VolumeAttributesClass (storage.k8s.io/v1, Kubernetes 1.34); remove the field", name, vac);
		return;
	}
	if (kube_list_find(classes, NULL, vac))
		return;
	char *existing = class_names(classes);
	deny(d, "volumeClaimTemplate \"%s\": VolumeAttributesClass \"%s\" does not exist (existing: %s); create it "
		"or fix spec.volumeAttributesClassName", name, vac, existing);
	free(existing);
}

/* ---- judging one template ---- */

/* Parses a template's size into *q; false, denying, when it is not a quantity above zero. */
static bool positive_size(struct diff *d, const char *name, const char *text, struct quantity *q)
{
	char *err = NULL;
	if (!text) {
		deny(d, "volumeClaimTemplate \"%s\" has no spec.resources.requests.storage; set its size", name);
		return false;
	}
	if (quantity_parse(text, q, &err) < 0) {
		deny(d, "volumeClaimTemplate \"%s\": spec.resources.requests.storage %s", name, err);
		free(err);
		return false;
	}
	if (quantity_sign(q) <= 0) {
		deny(d, "volumeClaimTemplate \"%s\": size %s is not above zero", name, text);
		return false;
	}
	return true;
}

/*
 * The per-template annotations (resize.stateful-operator.io/<t>,
 * storage-class.stateful-operator.io/<t>) must agree with a template this
 * update changes: the resize controller reads both, and the webhook never
 * lets them disagree (a later edit of one of them then wins).
 */
static void check_user_annotations(struct diff *d, const char *name, const json_t *t)
{
	char *key = xasprintf(RESIZE_ANNOTATION_PREFIX "%s", name);
	const json_t *v = json_object_get(d->annotations, key);
	if (v) {
		const char *want = json_string_value(v), *size = template_size(t);
		struct quantity a, b;
		bool agree = want && size && quantity_parse(want, &a, NULL) == 0 &&
			     quantity_parse(size, &b, NULL) == 0 && quantity_cmp(&a, &b) == 0;
		if (!agree)
			deny(d, "annotation %s is \"%s\" but volumeClaimTemplate \"%s\" asks for %s; remove the annotation "
				"or make it agree", key, shown(want, "?"), name, shown(size, "no size"));
	}
	free(key);

	key = xasprintf(CLASS_ANNOTATION_PREFIX "%s", name);
	v = json_object_get(d->annotations, key);
	if (v) {
		const char *want = json_string_value(v), *cls = kube_obj_str(t, "spec.storageClassName");
		const json_t *classes = d->view ? d->view->storage_classes : NULL;
		/* No class in the template means the default one; with the classes unknown, that cannot be checked. */
		bool agree = want && (cls ? !strcmp(want, cls)
					  : !classes || same_str(want, kube_obj_str(class_default(classes), "metadata.name")));
		if (!agree)
			deny(d, "annotation %s is \"%s\" but volumeClaimTemplate \"%s\" asks for StorageClass %s; remove "
				"the annotation or make it agree", key, shown(want, "?"), name, shown(cls, "(default)"));
	}
	free(key);
}

static void warn(struct diff *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct diff *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = xvasprintf(fmt, ap);
	va_end(ap);
	json_array_append_new(d->warnings, json_sprintf("stateful-operator: %s", m));
	free(m);
}

/* A template in both: only the changeable fields may differ, and each change must be one the operator can make. */
static void judge_changed(struct diff *d, const char *name, const json_t *old, const json_t *new)
{
	char *fixed = template_fixed_differences(old, new);
	if (*fixed) {
		deny(d, "volumeClaimTemplate \"%s\": %s cannot change; " CHANGEABLE, name, fixed);
		free(fixed);
		return;
	}
	free(fixed);

	struct strbuf what = STRBUF_INIT;
	bool resized = false, grows = false, others = false; /* others: a change besides the size */
	const char *old_size = template_size(old), *new_size = template_size(new);
	if (!same_str(old_size, new_size)) {
		struct quantity nq, oq;
		if (!positive_size(d, name, new_size, &nq))
			goto out;
		int cmp = old_size && quantity_parse(old_size, &oq, NULL) == 0 ? quantity_cmp(&nq, &oq) : 1;
		if (cmp < 0 && !(d->strategy == STRATEGY_COPY && d->allow_shrink))
			deny(d, "volumeClaimTemplate \"%s\": %s -> %s is a shrink; shrinking copies the data to new volumes "
				"and needs the annotations %s: copy and %s: \"true\"", name, old_size, new_size,
				ANNOTATION_STRATEGY, ANNOTATION_ALLOW_SHRINK);
		resized = cmp != 0;
		grows = cmp > 0;
		strbuf_appendf(&what, "%s -> %s%s", shown(old_size, "(no size)"), new_size, resized ? "" : " (same size)");
	}

	const char *old_cls = kube_obj_str(old, "spec.storageClassName");
	const char *new_cls = kube_obj_str(new, "spec.storageClassName");
	bool reclassed = !same_str(old_cls, new_cls);
	others |= reclassed;
	if (reclassed) {
		if (d->strategy == STRATEGY_EXPAND)
			deny(d, "volumeClaimTemplate \"%s\": StorageClass %s -> %s copies the data to new volumes, but "
				"annotation %s is \"expand\"; use strategy copy or auto", name,
				shown(old_cls, "(default)"), shown(new_cls, "(default)"), ANNOTATION_STRATEGY);
		strbuf_appendf(&what, "%sStorageClass %s -> %s", what.len ? ", " : "", shown(old_cls, "(default)"),
			       shown(new_cls, "(default)"));
	}
	const json_t *sc = NULL;
	if ((resized || reclassed) && !resolve_class(d, name, new_cls, &sc))
		goto out;
	if (grows && !reclassed && d->strategy == STRATEGY_EXPAND && sc &&
	    !json_is_true(json_object_get(sc, "allowVolumeExpansion")))
		deny(d, "volumeClaimTemplate \"%s\": annotation %s is \"expand\", but StorageClass %s does not allow "
			"volume expansion (allowVolumeExpansion is not true); use strategy copy or auto", name,
			ANNOTATION_STRATEGY, shown(kube_obj_str(sc, "metadata.name"), "?"));

	const char *old_vac = kube_obj_str(old, "spec.volumeAttributesClassName");
	const char *new_vac = kube_obj_str(new, "spec.volumeAttributesClassName");
	if (!same_str(old_vac, new_vac)) {
		others = true;
		check_attributes_class(d, name, new_vac);
		strbuf_appendf(&what, "%sVolumeAttributesClass %s -> %s", what.len ? ", " : "", shown(old_vac, "(none)"),
			       shown(new_vac, "(none)"));
	}
	if (!template_same_map(kube_obj_labels(old), kube_obj_labels(new)) ||
	    !template_same_map(kube_obj_annotations(old), kube_obj_annotations(new))) {
		others = true;
		strbuf_appendf(&what, "%slabels/annotations", what.len ? ", " : "");
	}
	check_user_annotations(d, name, new);

	warn(d, "volumeClaimTemplate %s %s will be %s by the operator; follow with resize-status", name,
	     strbuf_str(&what), resized && !others ? "resized" : "changed");
out:
	strbuf_release(&what);
}

/* RFC 1123 label: a template's name is a pod volume's name. */
static bool dns_label(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

static void judge_added(struct diff *d, const char *name, const json_t *t)
{
	struct quantity q;
	const json_t *sc;
	if (!dns_label(name)) {
		deny(d, "volumeClaimTemplate name \"%s\" is not a DNS label (at most 63 of a-z, 0-9 and '-', starting "
			"and ending with a letter or digit)", name);
		return;
	}
	bool ok = positive_size(d, name, template_size(t), &q);
	ok &= resolve_class(d, name, kube_obj_str(t, "spec.storageClassName"), &sc);
	check_attributes_class(d, name, kube_obj_str(t, "spec.volumeAttributesClassName"));
	check_user_annotations(d, name, t);
	if (ok)
		warn(d, "volumeClaimTemplate %s will be added by the operator, which re-creates the StatefulSet; "
			"follow with resize-status", name);
}

/* ---- an attributes class change together with a copy ---- */

/*
 * What the resize controller reads as asked of stored template name,
 * applied as new (resize_request.c): a per-template annotation wins over
 * the template for its field.
 */
static void asked_of(const struct diff *d, const char *name, const json_t *new, const char **size, const char **cls)
{
	char *key = xasprintf(RESIZE_ANNOTATION_PREFIX "%s", name);
	const json_t *v = json_object_get(d->annotations, key);
	*size = v ? json_string_value(v) : template_size(new);
	free(key);
	key = xasprintf(CLASS_ANNOTATION_PREFIX "%s", name);
	v = json_object_get(d->annotations, key);
	*cls = v ? json_string_value(v) : kube_obj_str(new, "spec.storageClassName");
	free(key);
}

/* How size compares with stored template old's; 0 also when either is no quantity (denied elsewhere). */
static int size_change(const char *size, const json_t *old)
{
	const char *old_size = template_size(old);
	struct quantity want, have;
	return size && old_size && quantity_parse(size, &want, NULL) == 0 && quantity_parse(old_size, &have, NULL) == 0
		       ? quantity_cmp(&want, &have)
		       : 0;
}

/*
 * Why the resize controller would copy the data of stored template old
 * (applied as new) when the resize starts, or NULL when it would not: a
 * size or class that differs is a target; a target is copied when it
 * shrinks, changes class, grows on a class that cannot expand, or the
 * strategy is copy (resize_plan.c, check_target). With the classes unknown
 * (namespace scope) growth is not counted: check_resizable denies every
 * target there. Static text.
 */
static const char *copy_reason(const struct diff *d, const char *name, const json_t *old, const json_t *new)
{
	const char *size, *cls;
	asked_of(d, name, new, &size, &cls);
	const char *old_cls = kube_obj_str(old, "spec.storageClassName");
	int cmp = size_change(size, old);
	if (cls && *cls && !same_str(cls, old_cls))
		return "another StorageClass";
	if (cmp < 0)
		return "a smaller size";
	if (cmp == 0)
		return NULL; /* nothing asked of this template */
	if (d->strategy == STRATEGY_COPY)
		return "resize-strategy copy";
	const json_t *classes = d->view ? d->view->storage_classes : NULL;
	const json_t *sc = !classes ? NULL : old_cls ? kube_list_find(classes, NULL, old_cls) : class_default(classes);
	if (sc && !json_is_true(json_object_get(sc, "allowVolumeExpansion")))
		return "growth on a StorageClass that cannot expand";
	return NULL;
}

/*
 * A copy makes new claims, so the resize controller refuses to change an
 * attributes class in the same resize (ResizeAttributesClassWithCopy):
 * recorded, such an update would never be carried out. Denied here, naming
 * the templates. Only a class set counts: an unset one is no change of the
 * claims (resize_modify_plan.c, modify_targets).
 */
static void check_attributes_with_copy(struct diff *d, const json_t *old, const json_t *new)
{
	struct strbuf modified = STRBUF_INIT, copied = STRBUF_INIT;
	size_t i;
	json_t *t;
	json_array_foreach(new, i, t) {
		const char *name = template_name(t);
		const json_t *o = template_find(old, name);
		if (!o)
			continue; /* added: its claims get the class from the template */
		const char *vac = kube_obj_str(t, "spec.volumeAttributesClassName");
		if (vac && *vac && !same_str(vac, kube_obj_str(o, "spec.volumeAttributesClassName")))
			strbuf_appendf(&modified, "%s\"%s\"", modified.len ? ", " : "", name);
		const char *why = copy_reason(d, name, o, t);
		if (why)
			strbuf_appendf(&copied, "%s\"%s\" (%s)", copied.len ? ", " : "", name, why);
	}
	if (modified.len && copied.len)
		deny(d, "volumeClaimTemplate %s changes its volumeAttributesClassName in the same update as a change "
			"that copies the data of volumeClaimTemplate %s; a copy makes new claims, and the operator "
			"cannot change their attributes class in the same resize: apply the two changes one after the "
			"other (the second once resize-status shows the first done)",
			strbuf_str(&modified), strbuf_str(&copied));
	strbuf_release(&modified);
	strbuf_release(&copied);
}

/* ---- namespace scope: no resize at all ---- */

/*
 * In namespace scope the operator cannot read StorageClasses (a Role
 * cannot grant them), and the resize controller refuses every target, a
 * new size or StorageClass asked of a stored template, before it starts
 * (ResizeStorageClassUnknown, resize_plan.c check_target): recorded, such
 * an update would never be carried out, nor the rest of its template
 * changes. Denied here, naming the templates; labels, annotations, an
 * attributes class alone and templates added or removed still pass. As
 * the controller reads them (resize_desired.c), the per-template
 * annotations count, a template's storageClassName removed or set to ""
 * is no target, and a size written otherwise is none. A shrink the
 * annotations do not allow (the controller refuses it as such) is named
 * too: allowing it would not make it possible. Whether denied.
 */
static bool check_resizable(struct diff *d, const json_t *old, const json_t *new)
{
	if (d->view && d->view->storage_classes)
		return false;
	struct strbuf names = STRBUF_INIT;
	size_t i;
	json_t *t;
	json_array_foreach(new, i, t) {
		const char *name = template_name(t), *size, *cls;
		const json_t *o = template_find(old, name);
		if (!o)
			continue; /* added: its claims are made from the template, no resize */
		asked_of(d, name, t, &size, &cls);
		if (size_change(size, o) || (cls && *cls && !same_str(cls, kube_obj_str(o, "spec.storageClassName"))))
			strbuf_appendf(&names, "%s\"%s\"", names.len ? ", " : "", name);
	}
	bool denied = names.len > 0;
	if (denied)
		deny(d, "volumeClaimTemplate %s: a new size or StorageClass needs a resize, but the operator runs in "
			"namespace scope and cannot read StorageClasses (a Role cannot grant them), so it cannot resize; "
			"run it with cluster RBAC (deploy/overlays/cluster, or the Helm chart with scope=cluster), or "
			"keep the size and storageClassName as stored", strbuf_str(&names));
	strbuf_release(&names);
	return denied;
}

/* ---- the whole update ---- */

/* The prefix of a per-template annotation naming template name, or NULL. */
static const char *removed_target_annotation(const json_t *annotations, const char *name)
{
	static const char *const prefixes[] = {RESIZE_ANNOTATION_PREFIX, CLASS_ANNOTATION_PREFIX};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		char *key = xasprintf("%s%s", prefixes[i], name);
		bool found = json_object_get(annotations, key) != NULL;
		free(key);
		if (found)
			return prefixes[i];
	}
	return NULL;
}

/*
 * NULL (no templates), or an array of objects that each have a
 * metadata.name. False too once budget is spent: the caller abandons.
 */
static bool understood(const json_t *list, struct work_budget *budget)
{
	size_t i;
	json_t *t;
	if (!list)
		return true;
	if (!json_is_array(list))
		return false;
	json_array_foreach(list, i, t) {
		if (work_budget_step(budget) || !json_is_object(t) || !template_name(t))
			return false;
	}
	return true;
}

/* A name two templates of list share, or NULL. Pairwise: only for lists within ADMISSION_MAX_TEMPLATES. */
static const char *duplicate_name(const json_t *list)
{
	size_t i, j;
	json_t *t;
	json_array_foreach(list, i, t) {
		for (j = 0; j < i; j++)
			if (same_str(template_name(json_array_get(list, j)), template_name(t)))
				return template_name(t);
	}
	return NULL;
}

static enum strategy read_strategy(const json_t *annotations)
{
	const json_t *v = json_object_get(annotations, ANNOTATION_STRATEGY);
	const char *s = json_string_value(v);
	if (!v || same_str(s, "auto"))
		return STRATEGY_AUTO;
	if (same_str(s, "expand"))
		return STRATEGY_EXPAND;
	if (same_str(s, "copy"))
		return STRATEGY_COPY;
	return STRATEGY_INVALID;
}

void template_diff_decide(const json_t *old, const json_t *new, const json_t *applied,
			  const struct admission_view *view, struct template_decision *out)
{
	const json_t *annotations = kube_obj_annotations(applied);
	struct diff d = {.view = view, .annotations = annotations, .denial = STRBUF_INIT};
	struct work_budget *budget = view ? view->budget : NULL;
	size_t i;
	json_t *t;

	memset(out, 0, sizeof(*out));
	if (!understood(old, budget) || !understood(new, budget)) {
		out->verdict = TEMPLATES_NOT_UNDERSTOOD;
		return;
	}
	/* The count first: every check below compares templates in pairs, or walks the pod template per template. */
	size_t nold = json_array_size(old), nnew = json_array_size(new);
	if (nold > ADMISSION_MAX_TEMPLATES || nnew > ADMISSION_MAX_TEMPLATES) {
		out->verdict = TEMPLATES_DENIED;
		out->message = xasprintf("%zu volumeClaimTemplates stored, %zu applied: the operator changes at most %d",
					 nold, nnew, ADMISSION_MAX_TEMPLATES);
		return;
	}
	if (duplicate_name(old)) {
		out->verdict = TEMPLATES_NOT_UNDERSTOOD;
		return;
	}
	if (duplicate_name(new)) {
		out->verdict = TEMPLATES_DENIED;
		out->message = xasprintf("volumeClaimTemplate \"%s\" appears twice; template names must be unique",
					 duplicate_name(new));
		return;
	}

	d.strategy = read_strategy(annotations);
	d.allow_shrink = same_str(json_string_value(json_object_get(annotations, ANNOTATION_ALLOW_SHRINK)), "true");
	d.warnings = json_array();
	bool changed = false;
	json_array_foreach(new, i, t) {
		if (work_budget_step(budget))
			goto out;
		const char *name = template_name(t);
		const json_t *o = template_find(old, name);
		if (!o)
			judge_added(&d, name, t);
		else if (!template_same(o, t))
			judge_changed(&d, name, o, t);
		else
			continue;
		changed = true;
	}
	json_array_foreach(old, i, t) {
		if (work_budget_step(budget))
			goto out;
		const char *name = template_name(t);
		if (template_find(new, name))
			continue;
		const char *container = template_mounted_by(applied, name);
		const char *target = removed_target_annotation(annotations, name);
		if (target)
			deny(&d, "volumeClaimTemplate \"%s\" is removed but annotation %s%s still asks to change it; "
				 "remove the annotation", name, target, name);
		if (container)
			deny(&d, "volumeClaimTemplate \"%s\" is removed but container %s still mounts it; remove the "
				 "volumeMount (or volumeDevice) too", name, container);
		if (!target && !container)
			warn(&d, "volumeClaimTemplate %s will be removed by the operator, which re-creates the "
				 "StatefulSet; its claims are kept", name);
		changed = true;
	}
	if (changed && d.strategy == STRATEGY_INVALID)
		deny(&d, "annotation %s is \"%s\"; use auto, expand or copy", ANNOTATION_STRATEGY,
		     shown(json_string_value(json_object_get(annotations, ANNOTATION_STRATEGY)), "?"));
	/* Every copy is a target, denied in namespace scope: the one message that matters there. */
	if (changed && !check_resizable(&d, old, new))
		check_attributes_with_copy(&d, old, new);
	work_budget_step(budget);
out:
	if (budget && budget->spent) {
		/* Out of time: nothing decided, which the caller must say rather than answer. */
		out->verdict = TEMPLATES_NOT_UNDERSTOOD;
		json_decref(d.warnings);
	} else if (!changed) {
		out->verdict = TEMPLATES_EQUAL;
		json_decref(d.warnings);
	} else if (d.denial.len) {
		out->verdict = TEMPLATES_DENIED;
		out->message = strbuf_detach(&d.denial);
		json_decref(d.warnings);
	} else {
		out->verdict = TEMPLATES_CHANGED;
		out->warnings = d.warnings;
	}
	strbuf_release(&d.denial);
}

void template_decision_release(struct template_decision *d)
{
	FREE_AND_NULL(d->message);
	json_decref(d->warnings);
	d->warnings = NULL;
}
