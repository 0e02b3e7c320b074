/*
 * The names the operator reads and writes on the cluster: every annotation,
 * label, finalizer and name suffix of the three controllers, in one place,
 * so that one controller never spells another's (SPEC.md lists them for
 * users). Changing one here is changing the API users rely on.
 */
#ifndef SOP_CONTROLLERS_CONTRACT_H
#define SOP_CONTROLLERS_CONTRACT_H

/* ---- shared ---- */
#define ANNOTATION_IGNORE "stateful-operator.io/ignore" /* "true": every controller leaves the object alone */
#define FINALIZER_ORPHAN "orphan"                        /* the API server's, during an orphaning deletion */

/* ---- resize: what users write on the StatefulSet ---- */
#define RESIZE_ANNOTATION_PREFIX "resize.stateful-operator.io/"        /* + template: the new size */
#define CLASS_ANNOTATION_PREFIX "storage-class.stateful-operator.io/" /* + template: the new StorageClass */
#define ANNOTATION_STRATEGY "stateful-operator.io/resize-strategy"
#define ANNOTATION_ALLOW_SHRINK "stateful-operator.io/allow-shrink"
#define ANNOTATION_ABORT "stateful-operator.io/resize-abort"
#define ANNOTATION_COPY_MODE "stateful-operator.io/copy-mode"
#define ANNOTATION_PRECOPY "stateful-operator.io/precopy"
#define ANNOTATION_COPY_IMAGE "stateful-operator.io/copy-image"
#define ANNOTATION_COPY_TIMEOUT "stateful-operator.io/copy-timeout"
#define ANNOTATION_COPY_RESOURCES "stateful-operator.io/copy-resources"
#define ANNOTATION_COPY_POD_ANNOTATIONS "stateful-operator.io/copy-pod-annotations"
#define ANNOTATION_KEEP_OLD_VOLUMES "stateful-operator.io/keep-old-volumes"

/*
 * ---- resize: what the admission webhook writes (GitOps) ----
 * The volumeClaimTemplates an update asked for (a JSON array, as applied:
 * each template's metadata.name/labels/annotations and spec), recorded by
 * the webhook, which puts the stored templates back into the object. The
 * resize controller carries it out and drops it when the StatefulSet is
 * re-created with those templates. See docs/gitops.md.
 */
#define ANNOTATION_DESIRED_TEMPLATES "stateful-operator.io/desired-volume-claim-templates"
/* On a StatefulSet or a namespace: "disabled" keeps the webhook out (the API server then refuses template changes). */
#define LABEL_WEBHOOK "stateful-operator.io/webhook"
#define WEBHOOK_DISABLED "disabled"

/* ---- resize: what the operator writes ---- */
#define ANNOTATION_RESIZE_STATE "stateful-operator.io/resize-state"   /* see resize_state.h */
#define ANNOTATION_RESIZE_STATUS "stateful-operator.io/resize-status" /* one line for humans */
#define BACKUP_SUFFIX "-sts-backup"                                    /* ConfigMap <sts>-sts-backup */
#define BACKUP_KEY "statefulset.json"                                  /* its data key: the saved set */
#define LABEL_SAVED_STATEFULSET "stateful-operator.io/saved-statefulset" /* on it; value: the set */
#define SEALED_SAVED_STATEFULSET "stateful-operator.io/saved-statefulset" /* its seal's name */
/* On it, sealed: the UID of the StatefulSet the operator re-created from it (resize_trust.h). */
#define ANNOTATION_RECREATED_UID "stateful-operator.io/recreated-uid"
#define TEMP_SUFFIX "-copy"                                            /* the copy's new claim <claim>-copy */
/* On claims, PVs and Jobs the copy cycle creates or keeps. */
#define LABEL_COPY_OF "stateful-operator.io/resize-copy-of"          /* value: the StatefulSet */
#define LABEL_OLD_VOLUME "stateful-operator.io/old-volume-of"        /* value: the StatefulSet */
#define LABEL_RESIZE_ORDINAL "stateful-operator.io/resize-ordinal"   /* on copy Jobs: the replica */
#define ANNOTATION_OLD_CLAIM "stateful-operator.io/old-volume-claim" /* ns/claim the PV held */
#define ANNOTATION_RECLAIM_POLICY "stateful-operator.io/original-reclaim-policy"
#define ANNOTATION_RESIZE_STARTED "stateful-operator.io/resize-started"
#define ANNOTATION_BIND_NUDGE "stateful-operator.io/bind-requested"
/*
 * On a PV the copy cycle took over (Retained) for a StatefulSet: value
 * <namespace>/<sts>. Only holders of PV rights can write it, so unlike the
 * state it proves the PV is that set's; every PV write checks it live.
 */
#define ANNOTATION_TAKEN_FOR "stateful-operator.io/taken-for"

/* ---- scale-down ---- */
#define ANNOTATION_SCALEDOWN_TEMPLATE "stateful-operator.io/scaledown-pod-template"
#define ANNOTATION_SCALEDOWN_TEMPLATE_LEGACY "statefulsets.kubernetes.io/scaledown-pod-template"
#define ANNOTATION_SCALEDOWN_PARALLELISM "stateful-operator.io/scaledown-parallelism"
#define ANNOTATION_SCALEDOWN_TIMEOUT "stateful-operator.io/scaledown-timeout"
#define ANNOTATION_SCALEDOWN_MAX_ATTEMPTS "stateful-operator.io/scaledown-max-attempts"
#define FINALIZER_SCALEDOWN "stateful-operator.io/scaledown"
#define ANNOTATION_SCALEDOWN_STATE "stateful-operator.io/scaledown-state"
#define ANNOTATION_SCALEDOWN_STATUS "stateful-operator.io/scaledown-status"
/* On cleanup pods. */
#define LABEL_CLEANUP_FOR "stateful-operator.io/cleanup-for" /* value: the StatefulSet */
#define ANNOTATION_CLEANUP_ORDINAL "stateful-operator.io/cleanup-ordinal"
#define ANNOTATION_CLEANUP_ATTEMPT "stateful-operator.io/cleanup-attempt"
#define ANNOTATION_CLEANUP_CLAIMS "stateful-operator.io/cleanup-claims" /* {"claim": "uid", ...} */

/* ---- StatefulCluster ---- */
#define CLUSTER_API_VERSION "stateful-operator.io/v1alpha1"
#define CLUSTER_KIND "StatefulCluster"
#define ANNOTATION_CLUSTER_STATE "stateful-operator.io/cluster-state"
#define LABEL_CLUSTER "stateful-operator.io/cluster"               /* on pods, claims, revisions */
#define LABEL_CLUSTER_MEMBER "stateful-operator.io/cluster-member" /* on pods and claims: <name>-<n> */
/*
 * On the StatefulCluster, written by `kubectl stateful members replace` (or by
 * hand): the members to rebuild, "<name>-<n>[,<name>-<n>...]". The controller
 * takes each name out once that member left; a value naming no member is
 * refused (Warning Event ReplaceRefused) and removed.
 */
#define ANNOTATION_CLUSTER_REPLACE "stateful-operator.io/replace-members"
#define LABEL_REVISION_HASH "controller-revision-hash"

#endif
