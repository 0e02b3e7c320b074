#!/usr/bin/env bash
# Writes the seed corpora fuzz/corpus/<target>/: real-looking inputs and the
# edge cases each parser documents. Run it again after changing a seed here;
# the files it writes are committed (make fuzz and scripts/test read them).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus && cd corpus

seed() { # target name text: one seed file, exactly text (printf %b: \n, \t, \0 escapes)
	mkdir -p "$1"
	printf '%b' "$3" >"$1/$2"
}

# ---- quantity: every suffix, signs, fractions, exponents, the refusals ----
for q in 0 1 20Gi 1.5Gi 1536Mi 500m 0.5 1000 1k 100M 12e6 1E3 1e-3 -1 +5 .5 5. 0.1n -0.1n 8Ei 9223372036854775807 \
	1e21 1000E 10e2147483647 1e4294967297 1e-2147483647 Gi . - 20Gb " 1Gi" 1Ti 2Pi 123456789012345678901234567890 \
	0.000000001 1u 999999999999999999999Ei; do
	seed quantity "q_$(printf '%s' "$q" | tr -c 'A-Za-z0-9.+-' '_')" "$q"
done

# ---- watch decoder: first byte is where the stream is cut in two reads ----
pod='{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-0","namespace":"ns","resourceVersion":"12"}}}'
seed watch_decoder added "\x20$pod\n"
seed watch_decoder two_events "\x30$pod\n{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"db-0\"}}}\n"
seed watch_decoder bookmark "\x05{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"99\"}}}\n"
seed watch_decoder error_410 "\x10{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old resource version\",\"reason\":\"Expired\",\"code\":410}}\n"
seed watch_decoder deleted_crlf "\x40{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"db-1\"}}}\r\n"
seed watch_decoder unfinished "\x08{\"type\":\"ADDED\",\"object\":{\"kind\""
seed watch_decoder blank_lines "\x01\n\n$pod\n\n"
seed watch_decoder not_json "\x02not json\n"
seed watch_decoder no_type "\x03{\"object\":{}}\n"
seed watch_decoder escaped "\x11{\"type\":\"ADDED\",\"object\":{\"data\":\"\\\\u003c\\\\n\\\\\"}\"}}\n"

# ---- LIST scanner ----
seed list_scan pods '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","labels":{"x":"]}"}}}]}'
seed list_scan empty_items '{"kind":"List","metadata":{},"items":[]}'
seed list_scan null_items '{"kind":"List","items":null}'
seed list_scan items_first '{"items":[1,"two",[3],{"4":4},true,null],"metadata":{"resourceVersion":"7"}}'
seed list_scan whitespace ' \n\t{ "items" : [ { } , { "a" : "\\"" } ] } '
seed list_scan nested_items_key '{"metadata":{"items":[9]},"items":[{"items":[1]}]}'
seed list_scan truncated '{"kind":"PodList","items":[{"metadata":{"name":"a"}},{"meta'
seed list_scan not_object '[{"items":[]}]'
seed list_scan no_items '{"kind":"PodList","metadata":{}}'
seed list_scan escapes '{"items":["\\u00e9\\ud83d\\ude00","\\\\",""]}'

# ---- kubeconfig ----
kc='apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
contexts:
- name: dev
  context:
    cluster: dev
    user: admin
    namespace: ns
users:
- name: admin
  user:
    token: abc.def
'
seed kubeconfig token "$kc"
seed kubeconfig exec 'apiVersion: v1
kind: Config
current-context: c
clusters: [{name: k, cluster: {server: "https://user:pw@k.example:443", tls-server-name: api, insecure-skip-tls-verify: false}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token, --cluster-name, k]
      env: [{name: AWS_PROFILE, value: dev}]
      provideClusterInfo: true
      interactiveMode: Never
'
seed kubeconfig client_cert 'apiVersion: v1
kind: Config
current-context: c
clusters: [{name: k, cluster: {server: "http://localhost:8080", certificate-authority: ca.crt}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {client-certificate-data: Zm9v, client-key-data: YmFy, token-file: token}}]
'
seed kubeconfig json '{"apiVersion":"v1","kind":"Config","current-context":"c","clusters":[{"name":"k","cluster":{"server":"https://[::1]:6443"}}],"contexts":[{"name":"c","context":{"cluster":"k","user":"u"}}],"users":[{"name":"u","user":{"username":"a","password":"b"}}]}'
seed kubeconfig no_context 'apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "https://k"}}]
'
seed kubeconfig missing_cluster 'current-context: c
contexts: [{name: c, context: {cluster: nope, user: u}}]
users: [{name: u, user: {}}]
'
seed kubeconfig anchors 'current-context: &c c
clusters: [{name: k, cluster: &k {server: "https://k"}}]
contexts: [{name: *c, context: {cluster: k, user: u, <<: {namespace: n}}}]
users: [{name: u, user: {token: t}}]
'
seed kubeconfig bad_base64 'current-context: c
clusters: [{name: k, cluster: {server: "https://k", certificate-authority-data: "!!!"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {token: t}}]
'
seed kubeconfig empty ''
seed kubeconfig not_yaml '{[: :'

# ---- exec credential (apiVersion client.authentication.k8s.io/v1) ----
av='"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"'
seed exec_credential token "{$av,\"status\":{\"token\":\"k8s-aws-v1.abc\",\"expirationTimestamp\":\"2026-11-25T10:00:00Z\"}}"
seed exec_credential cert "{$av,\"status\":{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\\\n\",\"clientKeyData\":\"-----BEGIN PRIVATE KEY-----\\\\n\"}}"
seed exec_credential fractional_time "{$av,\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2026-02-28T23:59:59.123+05:30\"}}"
seed exec_credential bad_time "{$av,\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2026-13-45T99:00:00Z\"}}"
seed exec_credential cert_without_key "{$av,\"status\":{\"clientCertificateData\":\"c\"}}"
seed exec_credential control_char "{$av,\"status\":{\"token\":\"a\\\\nb\"}}"
seed exec_credential v1beta1 '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'
seed exec_credential no_status "{$av}"
seed exec_credential spec_only "{$av,\"spec\":{\"interactive\":false},\"status\":{}}"
seed exec_credential not_json 'error: token expired'
seed exec_credential array '[]'

# ---- YAML -> JSON ----
seed yaml_json pod_template 'metadata:
  labels: {app: cleanup}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "rm -rf /data/*"]
    volumeMounts: [{name: data, mountPath: /data}]
'
seed yaml_json paragraph_separator '{"a\\Pb": ["\\L"]}'
seed yaml_json scalars 'a: null
b: ~
c: true
d: False
e: 0x1F
f: 0o17
g: -12
h: 1.5e3
i: .inf
j: -.Inf
k: .nan
l: "quoted\ttab \u00e9"
m: '"'"'single '"'"''"'"' quote'"'"'
n: 12:30
o: 2026-11-25
'
seed yaml_json anchors_merge 'base: &b {cpu: 100m, memory: 64Mi}
limits: *b
requests:
  <<: *b
  cpu: 50m
list: &l [1, 2]
again: [*l, *l]
'
seed yaml_json block_scalars 'literal: |
  line 1
  line 2
folded: >-
  folded
  text
keep: |+
  kept

'
seed yaml_json json '{"resources":{"requests":{"storage":"10Gi"}},"n":[1,2.5,-3e2,true,null,"s"]}'
seed yaml_json multi_doc 'a: 1
---
b: 2
'
seed yaml_json tags 'a: !!str 123
b: !custom x
'
seed yaml_json complex_key '? [a, b]
: v
'
seed yaml_json duplicate_key 'a: 1
a: 2
'
seed yaml_json alias_bomb 'a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]
'
seed yaml_json deep '[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]'
seed yaml_json undefined_alias 'a: *nope'
seed yaml_json empty ''
seed yaml_json bad_indent 'a:
  b: 1
 c: 2
'

# ---- label selectors ----
seed label_selector match_labels '{"selector":{"matchLabels":{"app":"db","tier":"data"}},"labels":{"app":"db","tier":"data","x":"y"}}'
seed label_selector expressions '{"selector":{"matchExpressions":[{"key":"app","operator":"In","values":["db","cache"]},{"key":"env","operator":"NotIn","values":["prod"]},{"key":"tier","operator":"Exists"},{"key":"old","operator":"DoesNotExist"}]},"labels":{"app":"db","tier":"x"}}'
seed label_selector both '{"selector":{"matchLabels":{"app":"db"},"matchExpressions":[{"key":"app","operator":"In","values":["db"]}]},"labels":{"app":"web"}}'
seed label_selector empty '{"selector":{},"labels":{}}'
seed label_selector no_labels '{"selector":{"matchLabels":{"a":"b"}}}'
seed label_selector bad_operator '{"selector":{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]},"labels":{"a":"2"}}'
seed label_selector in_without_values '{"selector":{"matchExpressions":[{"key":"a","operator":"In"}]},"labels":{"a":"b"}}'
seed label_selector exists_with_values '{"selector":{"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]},"labels":{"a":"b"}}'
seed label_selector wrong_types '{"selector":{"matchLabels":{"a":1},"matchExpressions":{"key":"a"}},"labels":{"a":1}}'
seed label_selector labels_array '{"selector":{"matchLabels":{"a":"b"}},"labels":["a","b"]}'

# ---- resize request: a whole StatefulSet, or "annotation\nvalue" on a fixed one ----
sts() { # annotations-json templates-json: a StatefulSet "db"
	printf '{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"ns","uid":"u1","annotations":%s},"spec":{"replicas":3,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres:16","volumeMounts":[{"name":"data","mountPath":"/var/lib/postgresql"}]}]}},"volumeClaimTemplates":%s}}' "$1" "$2"
}
vct='[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"1Gi"}}}},{"metadata":{"name":"wal"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"500Mi"}}}}]'
seed resize_request sts_expand "$(sts '{"resize.stateful-operator.io/data":"20Gi","stateful-operator.io/resize-strategy":"expand"}' "$vct")"
seed resize_request sts_copy "$(sts '{"resize.stateful-operator.io/data":"512Mi","stateful-operator.io/resize-strategy":"copy","stateful-operator.io/allow-shrink":"true","stateful-operator.io/copy-mode":"offline","stateful-operator.io/copy-timeout":"2h","stateful-operator.io/keep-old-volumes":"24h","stateful-operator.io/copy-resources":"{\"limits\":{\"cpu\":\"1\"}}","stateful-operator.io/copy-pod-annotations":"{\"a\":\"b\"}"}' "$vct")"
seed resize_request sts_class "$(sts '{"storage-class.stateful-operator.io/wal":"fast","stateful-operator.io/precopy":"true"}' "$vct")"
seed resize_request sts_desired "$(sts '{"stateful-operator.io/desired-volume-claim-templates":"[{\"metadata\":{\"name\":\"data\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"2Gi\"}}}},{\"metadata\":{\"name\":\"logs\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]"}' "$vct")"
seed resize_request sts_unknown_template "$(sts '{"resize.stateful-operator.io/nope":"2Gi"}' "$vct")"
seed resize_request sts_no_templates "$(sts '{"resize.stateful-operator.io/data":"2Gi"}' '[]')"
seed resize_request sts_abort_ignore "$(sts '{"stateful-operator.io/resize-abort":"true","stateful-operator.io/ignore":"true"}' "$vct")"
seed resize_request ann_size 'resize.stateful-operator.io/data\n2Gi'
seed resize_request ann_shrink 'resize.stateful-operator.io/data\n100Mi'
seed resize_request ann_bad_size 'resize.stateful-operator.io/data\n2GB'
seed resize_request ann_class 'storage-class.stateful-operator.io/data\nfast-ssd'
seed resize_request ann_strategy 'stateful-operator.io/resize-strategy\nsideways'
seed resize_request ann_timeout 'stateful-operator.io/copy-timeout\n90m'
seed resize_request ann_keep_old 'stateful-operator.io/keep-old-volumes\n-1h'
seed resize_request ann_copy_image 'stateful-operator.io/copy-image\nregistry.example/copy:1@sha256:abc'
seed resize_request ann_copy_resources 'stateful-operator.io/copy-resources\n{"requests":{"memory":"64Mi"},"limits":{"memory":"x"}}'
seed resize_request ann_pod_annotations 'stateful-operator.io/copy-pod-annotations\n{"a":1}'
seed resize_request ann_desired 'stateful-operator.io/desired-volume-claim-templates\n[{"metadata":{"name":"data"},"spec":{"storageClassName":"fast","resources":{"requests":{"storage":"3Gi"}}}}]'
seed resize_request ann_desired_dup 'stateful-operator.io/desired-volume-claim-templates\n[{"metadata":{"name":"data"}},{"metadata":{"name":"data"}}]'
seed resize_request ann_desired_bad 'stateful-operator.io/desired-volume-claim-templates\n{"metadata":{}}'
seed resize_request ann_desired_by_hand 'stateful-operator.io/desired-volume-claim-templates\n[{"metadata":{"name":"data"}},{"metadata":{"name":"Data_1","finalizers":["x"]},"spec":{"volumeAttributesClassName":"Gold_1","resources":{"requests":{"storage":"1Gi"}}}}]'

# ---- scale-down request ----
tmpl_json='{"metadata":{"labels":{"role":"cleanup"}},"spec":{"containers":[{"name":"c","image":"busybox","command":["sh","-c","rm -rf /data/*"],"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}'
seed scaledown_request ann_json "stateful-operator.io/scaledown-pod-template\n$tmpl_json"
seed scaledown_request ann_yaml 'stateful-operator.io/scaledown-pod-template\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: busybox\n    args: [echo, bye]\n'
seed scaledown_request ann_legacy 'statefulsets.kubernetes.io/scaledown-pod-template\n{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"i"}]}}'
seed scaledown_request ann_wrong_kind 'stateful-operator.io/scaledown-pod-template\n{"kind":"Deployment","spec":{"containers":[{"name":"c","image":"i"}]}}'
seed scaledown_request ann_no_containers 'stateful-operator.io/scaledown-pod-template\n{"spec":{"containers":[]}}'
seed scaledown_request ann_restart_always 'stateful-operator.io/scaledown-pod-template\n{"spec":{"restartPolicy":"Always","containers":[{"name":"c","image":"i"}]}}'
seed scaledown_request ann_selector_match 'stateful-operator.io/scaledown-pod-template\n{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"i"}]}}'
seed scaledown_request ann_volume_conflict 'stateful-operator.io/scaledown-pod-template\n{"spec":{"volumes":[{"name":"data","emptyDir":{}}],"containers":[{"name":"c","image":"i"}]}}'
seed scaledown_request ann_not_yaml 'stateful-operator.io/scaledown-pod-template\n{[: x'
seed scaledown_request ann_alias_bomb 'stateful-operator.io/scaledown-pod-template\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b]\n'
ann_sd() { # extra-annotations: a StatefulSet with the JSON template and these annotations
	sts "{\"stateful-operator.io/scaledown-pod-template\":$(printf '%s' "$tmpl_json" | sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$/"/')$1}" "$vct"
}
seed scaledown_request sts_parallel "$(ann_sd ',"stateful-operator.io/scaledown-parallelism":"4","stateful-operator.io/scaledown-timeout":"10m","stateful-operator.io/scaledown-max-attempts":"5"' | sed 's/"serviceName"/"podManagementPolicy":"Parallel","serviceName"/')"
seed scaledown_request sts_bad_settings "$(ann_sd ',"stateful-operator.io/scaledown-parallelism":"0","stateful-operator.io/scaledown-timeout":"1ms","stateful-operator.io/scaledown-max-attempts":"101"')"
seed scaledown_request sts_when_scaled_delete "$(ann_sd '' | sed 's/"serviceName"/"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"},"serviceName"/')"
seed scaledown_request sts_template_not_string "$(sts '{"stateful-operator.io/scaledown-pod-template":{"spec":{}}}' "$vct")"

# ---- cluster plan: a StatefulCluster, alone or with its pods, claims, revisions, nodes ----
sc='{"apiVersion":"stateful-operator.io/v1alpha1","kind":"StatefulCluster","metadata":{"name":"kv","namespace":"ns","uid":"uid-kv","resourceVersion":"5","generation":2},"spec":{"replicas":3,"serviceName":"kv","selector":{"matchLabels":{"app":"kv"}},"template":{"metadata":{"labels":{"app":"kv"}},"spec":{"containers":[{"name":"kv","image":"etcd:3"}]}},"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}],"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"34%","partition":1}},"replacement":{"unhealthyAfterSeconds":60,"nodeLostAfterSeconds":30,"startupGraceSeconds":10},"whenReplaced":"Delete","whenScaled":"Retain","whenDeleted":"Delete","revisionHistoryLimit":2,"minReadySeconds":5}}'
seed cluster_plan new_cluster "$sc"
state='{"next":3,"members":["kv-0","kv-1","kv-2"],"released":{"kv-9":"Replaced"},"currentRevision":"kv-abc"}'
sc_state=$(printf '%s' "$sc" | sed "s/\"generation\":2/\"generation\":2,\"annotations\":{\"stateful-operator.io\/cluster-state\":$(printf '%s' "$state" | sed 's/"/\\\\"/g; s/^/"/; s/$/"/')}/")
seed cluster_plan with_state "$sc_state"
podj() { # name phase ready node
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"ns","uid":"uid-%s","creationTimestamp":"2025-12-31T23:00:00Z","labels":{"app":"kv","stateful-operator.io/cluster":"kv","stateful-operator.io/cluster-member":"%s","controller-revision-hash":"kv-abc"},"ownerReferences":[{"apiVersion":"stateful-operator.io/v1alpha1","kind":"StatefulCluster","name":"kv","uid":"uid-kv","controller":true}]},"spec":{"nodeName":"%s","hostname":"%s","subdomain":"kv"},"status":{"phase":"%s","conditions":[{"type":"Ready","status":"%s","lastTransitionTime":"2025-12-31T23:30:00Z"}]}}' "$1" "$1" "$1" "$4" "$1" "$2" "$3"
}
pvcj() { printf '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-%s","namespace":"ns","labels":{"stateful-operator.io/cluster":"kv","stateful-operator.io/cluster-member":"%s"}},"spec":{"resources":{"requests":{"storage":"1Gi"}}},"status":{"phase":"Bound"}}' "$1" "$1"; }
node='{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
lost='{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"status":{"conditions":[{"type":"Ready","status":"Unknown","lastTransitionTime":"2025-12-31T23:50:00Z"}]}}'
rev='{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"kv-abc","namespace":"ns","labels":{"stateful-operator.io/cluster":"kv"}},"revision":1,"data":{"spec":{"template":{}}}}'
seed cluster_plan members "{\"cluster\":$sc_state,\"pods\":[$(podj kv-0 Running True n1),$(podj kv-1 Running False n2),$(podj kv-2 Failed False n1)],\"pvcs\":[$(pvcj kv-0),$(pvcj kv-1),$(pvcj kv-2)],\"revisions\":[$rev],\"nodes\":[$node,$lost]}"
# The same claim listed three times once overflowed a member's claims (test_claim_listed_twice).
# Pods as the API server sends them (containers, tolerations, the token volume, every condition, a
# start time; kv-2 not Ready since long ago but started only now, after hours Pending, so its start
# time keeps it from being replaced): the harness also plans from them as the Pod cache keeps them
# (pod_fields.h), which must give the same step.
podfull() { # name ready since start
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","generateName":"kv-","namespace":"ns","uid":"uid-%s","resourceVersion":"77","creationTimestamp":"2025-12-31T22:00:00Z","labels":{"app":"kv","stateful-operator.io/cluster":"kv","stateful-operator.io/cluster-member":"%s","controller-revision-hash":"kv-abc"},"annotations":{"prometheus.io/scrape":"true"},"ownerReferences":[{"apiVersion":"stateful-operator.io/v1alpha1","kind":"StatefulCluster","name":"kv","uid":"uid-kv","controller":true,"blockOwnerDeletion":true}]},"spec":{"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-%s"}},{"name":"kube-api-access-x7k2p","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}]}}],"containers":[{"name":"kv","image":"etcd:3","env":[{"name":"A","value":"b"}],"readinessProbe":{"tcpSocket":{"port":2379}}}],"nodeName":"n1","hostname":"%s","subdomain":"kv","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]},"status":{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True","lastTransitionTime":"2025-12-31T22:00:00Z"},{"type":"Ready","status":"%s","lastTransitionTime":"%s"},{"type":"ContainersReady","status":"%s","lastTransitionTime":"%s"}],"hostIP":"10.0.0.1","podIP":"10.244.0.7","startTime":"%s","containerStatuses":[{"name":"kv","state":{"running":{"startedAt":"2025-12-31T22:00:02Z"}},"ready":false,"restartCount":3,"image":"etcd:3","imageID":"etcd@sha256:00","containerID":"containerd://01","started":true}],"qosClass":"BestEffort"}}' "$1" "$1" "$1" "$1" "$1" "$2" "$3" "$2" "$3" "$4"
}
seed cluster_plan apiserver_pods "{\"cluster\":$sc_state,\"pods\":[$(podfull kv-0 True 2025-12-31T22:00:05Z 2025-12-31T22:00:01Z),$(podfull kv-1 True 2025-12-31T22:00:05Z 2025-12-31T22:00:01Z),$(podfull kv-2 False 2025-12-31T22:00:05Z 2025-12-31T23:59:30Z)],\"pvcs\":[$(pvcj kv-0),$(pvcj kv-1),$(pvcj kv-2)],\"revisions\":[$rev],\"nodes\":[$node]}"
seed cluster_plan claim_listed_thrice "{\"cluster\":$sc_state,\"pods\":[$(podj kv-0 Running True n1)],\"pvcs\":[$(pvcj kv-0),$(pvcj kv-0),$(pvcj kv-0)]}"
seed cluster_plan rebuild_state "{\"cluster\":$sc,\"pods\":[$(podj kv-4 Running True n1),$(podj kv-11 Pending False n1)],\"pvcs\":[$(pvcj kv-12)],\"revisions\":[]}"
seed cluster_plan scale_to_zero "$(printf '%s' "$sc_state" | sed 's/"replicas":3/"replicas":0/')"
seed cluster_plan on_delete "$(printf '%s' "$sc" | sed 's/"type":"RollingUpdate"/"type":"OnDelete"/')"
seed cluster_plan bad_policy "$(printf '%s' "$sc" | sed 's/"whenReplaced":"Delete"/"whenReplaced":"Burn"/')"
seed cluster_plan bad_selector "$(printf '%s' "$sc" | sed 's/"matchLabels":{"app":"kv"}/"matchExpressions":[{"key":"app","operator":"Near"}]/')"
seed cluster_plan deleting "$(printf '%s' "$sc_state" | sed 's/"generation":2/"generation":2,"deletionTimestamp":"2026-01-01T00:00:00Z"/')"
seed cluster_plan bad_state "$(printf '%s' "$sc" | sed 's/"generation":2/"generation":2,"annotations":{"stateful-operator.io\/cluster-state":"{\\"next\\":-4,\\"members\\":[\\"kv-x\\",7]}"}/')"
seed cluster_plan minimal '{"metadata":{"name":"kv"}}'

# ---- admission: AdmissionReviews of StatefulSet updates ----
review() { # uid operation old-templates new-templates [annotations]
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"group":"apps","version":"v1","kind":"StatefulSet"},"resource":{"group":"apps","version":"v1","resource":"statefulsets"},"operation":"%s","name":"db","namespace":"ns","dryRun":false,"object":%s,"oldObject":%s}}' \
		"$1" "$2" "$(sts "${5:-{\}}" "$4")" "$(sts '{}' "$3")"
}
big='[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"20Gi"}}}},{"metadata":{"name":"wal"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"500Mi"}}}}]'
seed admission grow "$(review u1 UPDATE "$vct" "$big")"
seed admission same "$(review u2 UPDATE "$vct" "$vct")"
seed admission reordered "$(review u3 UPDATE "$vct" '[{"metadata":{"name":"wal"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"0.5Gi"}}}},{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"1024Mi"}}}}]')"
seed admission shrink "$(review u4 UPDATE "$vct" "$(printf '%s' "$vct" | sed 's/"1Gi"/"1Mi"/')")"
seed admission class_change "$(review u5 UPDATE "$vct" '[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"unknown","resources":{"requests":{"storage":"1Gi"}}}},{"metadata":{"name":"wal"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"500Mi"}}}}]')"
seed admission added_template "$(review u6 UPDATE "$vct" "$(printf '%s' "$big" | sed 's/]$/,{"metadata":{"name":"logs","labels":{"a":"b"}},"spec":{"storageClassName":"standard","resources":{"requests":{"storage":"1Gi"}}}}]/')")"
seed admission other_field "$(review u7 UPDATE "$vct" '[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteMany"],"storageClassName":"standard","resources":{"requests":{"storage":"1Gi"}}}},{"metadata":{"name":"wal"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"500Mi"}}}}]')"
seed admission copy_shrink "$(review u8 UPDATE "$vct" '[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"512Mi"}}}},{"metadata":{"name":"wal"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"500Mi"}}}}]' '{"stateful-operator.io/resize-strategy":"copy","stateful-operator.io/allow-shrink":"true"}')"
seed admission create_saved "$(review u9 CREATE '[]' "$vct")"
seed admission opted_out "$(review u10 UPDATE "$vct" "$big" '{"stateful-operator.io/ignore":"true"}')"
seed admission not_a_review '{"apiVersion":"v1","kind":"Status"}'
seed admission no_request '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}'
seed admission scale_subresource '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u11","kind":{"group":"autoscaling","version":"v1","kind":"Scale"},"subResource":"scale","operation":"UPDATE","object":{},"oldObject":{}}}'

# ---- autoresize policy: the annotation text (also read as a StorageClass granularity) ----
for pol in "max=500Gi" "used=80%, free=5Gi, step=20%, max=500Gi, cooldown=6h" \
	" scope = claim ,allow-copy=true, mode=recommend,cooldown=1h30m,max=1Ti,step=10Gi,inodes=95% ,free=5Gi,used=70%," \
	"inodes=90%,step=1000%,max=8Ei" "step=1e9,max=10737418240,free=0.5" "max=1Ti,cooldown=0s" "" "max" "max=" \
	"=5Gi" "step=20,max=1Ti" "used=100%,max=1Ti" "used=80,max=1Ti" "max=20Gb" "max=1500m" "max=0" "max=10E" \
	"free=5Gi,max=5Gi" "max=1Ti,max=2Ti" "colour=red,max=1Ti" "max=1Ti,mode=shrink" "max=1Ti,cooldown=6d" \
	"used=99999999999999999999%,max=1Ti" ",,,max=1Gi,,," 4Gi 64Mi "caf\\xc3\\xa9=1,max=1Ti" \
	"max=1Ti,cooldown=6\\xc2\\xb5" "max=1Ti\\x01" "mode=off" "mode=off, used=80"; do
	seed autoresize_policy "p_$(printf '%s' "$pol" | tr -c 'A-Za-z0-9.%=+-' '_' | cut -c1-60)" "$pol"
done
# ---- published usage: the annotation stateful-operator.io/usage on a claim ----
for u in "used=209715200,available=104857600,capacity=335544320,inodesUsed=12,inodes=163840,observed=2025-11-24T16:00:00Z" \
	"used=1,available=2,capacity=3,observed=2025-11-24T16:00:00.5Z,next=1" "used=4,available=2,capacity=3,observed=2025-11-24T16:00:00Z" \
	"used=1,used=1,available=2,capacity=3,observed=2025-11-24T16:00:00Z" "used=-1,available=0,capacity=1,observed=2025-11-24T16:00:00Z" \
	"used=0,available=0,capacity=1152921504606846977,observed=2025-11-24T16:00:00Z" "used=1Gi" "" ",,," "observed=" \
	"used=1,available=2,capacity=3,inodesUsed=5,inodes=4,observed=2025-11-24T16:00:00Z" \
	"used=0,available=0,capacity=9525111204606846977,observed=2025-11-24T16:00:00Z"; do
	seed usage_published "u_$(printf '%s' "$u" | tr -c 'A-Za-z0-9.=+-' '_' | cut -c1-60)" "$u"
done
# ---- usage sources: "0" + a kubelet stats summary, "1" + a Prometheus answer ----
vol='"time":"2026-11-25T14:00:00Z","availableBytes":858993459,"capacityBytes":1073741824,"usedBytes":214748365'
seed usage_source summary "0{\"node\":{\"nodeName\":\"n1\"},\"pods\":[{\"podRef\":{\"name\":\"db-0\",\"namespace\":\"shop\"},\"volume\":[{$vol,\"inodesFree\":65000,\"inodes\":65536,\"inodesUsed\":536,\"name\":\"data\",\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}},{$vol,\"name\":\"kube-api-access-x\"}]},{\"podRef\":{\"name\":\"b-0\",\"namespace\":\"shop\"},\"volume\":[{$vol,\"name\":\"src\",\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}}]}]}"
seed usage_source summary_inodes_free "0{\"pods\":[{\"volume\":[{$vol,\"inodes\":1000,\"inodesFree\":400,\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"}}]}]}"
seed usage_source summary_unmeasured "0{\"pods\":[{\"volume\":[{\"capacityBytes\":1,\"pvcRef\":{\"name\":\"c\",\"namespace\":\"n\"}}]}]}"
seed usage_source summary_pods_null '0{"node":{},"pods":null}'
seed usage_source summary_no_pods '0{"node":{}}'
# n1 speaks for a claim that pods on n2 mount, and for one of another namespace under a pod not its own.
seed usage_source summary_other_node "0{\"pods\":[{\"podRef\":{\"name\":\"db-1\",\"namespace\":\"shop\"},\"volume\":[{$vol,\"pvcRef\":{\"name\":\"data-db-1\",\"namespace\":\"shop\"}}]},{\"podRef\":{\"name\":\"x\",\"namespace\":\"evil\"},\"volume\":[{$vol,\"pvcRef\":{\"name\":\"data-db-0\",\"namespace\":\"shop\"}}]}]}"
seed usage_source summary_huge '0{"pods":[{"volume":[{"capacityBytes":18446744073709551615,"usedBytes":1,"availableBytes":1,"pvcRef":{"name":"c","namespace":"n"}}]}]}'
series() { # name claim at value
	printf '{"metric":{"__name__":"kubelet_volume_stats_%s","instance":"10.0.0.5:10250","namespace":"shop","persistentvolumeclaim":"%s"},"value":[%s,"%s"]}' "$1" "$2" "$3" "$4"
}
answer() { printf '1{"status":"success","data":{"resultType":"vector","result":[%s]}}' "$1"; }
seed usage_source prometheus "$(answer "$(series capacity_bytes c 1764079200.1 1.073741824e+09),$(series used_bytes c 1764079200.1 2.14748365e+08),$(series available_bytes c 1764079200.1 8.58993459e+08),$(series inodes c 1764079200.1 65536),$(series inodes_used c 1764079200.1 536)")"
seed usage_source prometheus_two_kubelets "$(answer "$(series capacity_bytes c 1764079200 2.147483648e+09),$(series capacity_bytes c 1764078990 1e9),$(series used_bytes c 1764079200 1),$(series available_bytes c 1764078990 1),$(series available_bytes c 1764079200 2)")"
seed usage_source prometheus_odd_values "$(answer "$(series capacity_bytes c 1 NaN),$(series used_bytes c 1 +Inf),$(series available_bytes c 1 -1),$(series capacity_bytes d 1 9.223372036854775808e+18),$(series used_bytes d 1 0x10),$(series available_bytes d x 1)")"
seed usage_source prometheus_error '1{"status":"error","errorType":"bad_data","error":"1:1: parse error"}'
seed usage_source prometheus_matrix '1{"status":"success","data":{"resultType":"matrix","result":[]}}'

# ---- text_sanitize: the first byte is the bound; escapes, C1, bidi, malformed UTF-8 ----
seed text_sanitize plain '\0Copying 2/3: web-1'
seed text_sanitize issue27 '\0\033]0;x\007\033[2J\302\2332J done'
seed text_sanitize bounded '\010\033\033\033\033abc'
seed text_sanitize c1_raw '\0\233\200\237 \302\205'
seed text_sanitize bidi '\0abc\342\200\256fed \342\201\246x\342\201\251 \330\234'
seed text_sanitize malformed '\0caf\303 \300\257 \340\200\257 \355\240\200 \364\220\200\200 \360\237\230'
seed text_sanitize whitespace '\0a\tb\nc\vd\fe\rf \342\200\250 \342\200\251'
seed text_sanitize utf8_cut '\007ab\303\251\303\251\303\251'
