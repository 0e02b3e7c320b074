#!/usr/bin/env bash
# docs/reference.md and docs/troubleshooting.md against the code: every flag,
# metric (with its type and label names), annotation/label/finalizer key and
# Event reason the code defines is documented, and nothing documented is gone
# from the code. Needs no cluster.
#
#   tests/docs/reference_check.sh [BINARY]   (default build/stateful-operator)
#
# Flags come from the binary (--help) and from the getopt table in
# src/options.c, which must agree. Metrics, keys and reasons are read from
# src/ by their registration and emitter calls; a call whose name or reason
# this script cannot read fails the check (so a new way of writing one is
# seen, not skipped).
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
# shellcheck source=../lib/steps.sh
. tests/lib/steps.sh

BIN=${1:-build/stateful-operator}
REF=docs/reference.md
TROUBLE=docs/troubleshooting.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
problems=0

# what code-set docs-set: prints the names missing from the docs and the
# stale ones; counts them.
compare() {
	local what=$1 code=$2 docs=$3 missing stale
	missing=$(comm -23 "$code" "$docs")
	stale=$(comm -13 "$code" "$docs")
	if [ -n "$missing" ]; then
		echo "FAIL: $what in the code but not in the docs:" >&2
		sed 's/^/    /' <<<"$missing" >&2
		problems=$((problems + 1))
	fi
	if [ -n "$stale" ]; then
		echo "FAIL: $what in the docs but not in the code (stale):" >&2
		sed 's/^/    /' <<<"$stale" >&2
		problems=$((problems + 1))
	fi
	[ -n "$missing$stale" ] || echo "ok: $what: $(wc -l <"$code") in the code, all documented, none stale"
}

# section FILE HEADING: the lines of the "## HEADING" section.
section() {
	awk -v h="## $2" '$0 == h {on = 1; next} on && /^## / {on = 0} on' "$1"
}

# table_col N: the Nth cell of every table row on stdin ("| a | b |": a is 1).
table_col() {
	awk -F'|' -v n="$1" '/^\|/ && !/^\|[ -]*\|/ {print $(n + 1)}'
}

step "files"
for f in "$REF" "$TROUBLE" "$BIN"; do
	[ -e "$f" ] || fail "$f is missing"
done

# ---- flags ----
step "flags"
"$BIN" --help >"$work/help" || fail "$BIN --help failed"
grep -oE -- '--[a-z][a-z0-9-]+' "$work/help" | sort -u >"$work/help.flags"
grep -oE '^[[:space:]]*\{"[a-z][a-z0-9-]+", *(no|required|optional)_argument' src/options.c |
	sed -E 's/.*\{"([^"]+)".*/--\1/' | sort -u >"$work/code.flags"
[ -s "$work/code.flags" ] || fail "no getopt table read from src/options.c"
compare "flags (src/options.c vs --help)" "$work/code.flags" "$work/help.flags"
# The kubeconfig lookup order --help and the reference state is the one main.c's load_config() follows.
order_of() { # text word...: prints the words in the order they first occur in text
	local text=$1 w
	shift
	for w in "$@"; do
		local rest=${text%%"$w"*}
		[ "$rest" != "$text" ] && echo "${#rest} $w"
	done | sort -n | cut -d' ' -f2 | tr '\n' ' '
}
# In load_config(): the $KUBECONFIG test, the in-cluster return, and the last (fallback) return.
code_order=$(awk '/^static int load_config\(/,/^}/' src/main.c | awk '
	/getenv\("KUBECONFIG"\)/ {print NR, "$KUBECONFIG"}
	/kube_config_in_cluster/ {print NR, "in-cluster"}
	/return kubeconfig_load\(NULL/ {last = NR}
	END {if (last) print last, "~/.kube/config"}' | sort -n | cut -d' ' -f2 | tr '\n' ' ')
help_order=$(order_of "$(grep -A3 -- '--kubeconfig' "$work/help")" '$KUBECONFIG' 'in-cluster' '~/.kube/config')
ref_order=$(order_of "$(section "$REF" "Flags" | grep -- '`--kubeconfig')" '$KUBECONFIG' 'in-cluster' '~/.kube/config')
for got in "--help:$help_order" "reference:$ref_order"; do
	if [ "${got#*:}" != "$code_order" ]; then
		echo "FAIL: kubeconfig lookup order: ${got%%:*} says '${got#*:}', src/main.c load_config() does '$code_order'" >&2
		problems=$((problems + 1))
	fi
done
if [ -z "$code_order" ]; then
	echo "FAIL: load_config() not read from src/main.c" >&2
	problems=$((problems + 1))
elif [ "$help_order" = "$code_order" ] && [ "$ref_order" = "$code_order" ]; then
	echo "ok: kubeconfig lookup order in --help and the reference is load_config()'s: $code_order"
fi
section "$REF" "Flags" | table_col 1 | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u >"$work/ref.flags"
compare "flags (reference, section Flags, first column)" "$work/code.flags" "$work/ref.flags"

# ---- metrics ----
step "metrics"
# One line per registration: name<TAB>type<TAB>labels (comma list, sorted), or UNREAD<TAB>file<TAB>call.
find src -name '*.c' ! -path 'src/runtime/metrics.c' -print0 | sort -z | xargs -0 awk '
BEGIN { RS = "\001" }
function args_of(s, start,    depth, i, n, c, inq) {   # text up to the matching ")"
	depth = 1; n = length(s); inq = 0
	for (i = start; i <= n && depth > 0; i++) {
		c = substr(s, i, 1)
		if (inq) { if (c == "\\") i++; else if (c == "\"") inq = 0 }
		else if (c == "\"") inq = 1
		else if (c == "(") depth++
		else if (c == ")") depth--
	}
	ARGS_END = i
	return substr(s, start, i - start - 1)
}
function split_top(s, out,    depth, i, n, c, inq, k, cur) {  # top-level comma split
	depth = 0; n = length(s); inq = 0; k = 0; cur = ""
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (inq) { if (c == "\\") { cur = cur c; i++; c = substr(s, i, 1) } else if (c == "\"") inq = 0 }
		else if (c == "\"") inq = 1
		else if (c == "(" || c == "[" || c == "{") depth++
		else if (c == ")" || c == "]" || c == "}") depth--
		else if (c == "," && depth == 0) { out[++k] = cur; cur = ""; continue }
		cur = cur c
	}
	out[++k] = cur
	return k
}
function trim(s) { gsub(/^ +| +$/, "", s); return s }
function labels_of(expr, text,    m, re, l, out, n, i, parts) {
	expr = trim(expr)
	if (expr == "NULL" || expr == "METRIC_NO_LABELS") return "-"
	if (expr ~ /^[a-z_][a-z0-9_]*$/) {   # a local: const char *const *x = METRIC_LABELS(...);
		re = "\\*" expr " = METRIC_LABELS\\([^)]*\\)"
		if (!match(text, re)) return ""
		expr = substr(text, RSTART, RLENGTH); sub(/^[^=]*= /, "", expr)
	}
	if (expr !~ /^METRIC_LABELS\(/) return ""
	sub(/^METRIC_LABELS\(/, "", expr); sub(/\)$/, "", expr)
	n = split(expr, parts, ",")
	l = ""
	for (i = 1; i <= n; i++) {
		m = trim(parts[i])
		if (m !~ /^"[a-z_]+"$/) return ""
		l = l (l == "" ? "" : ",") substr(m, 2, length(m) - 2)
	}
	return l
}
{
	text = $0
	gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
	gsub(/[\n\t]+/, " ", text); gsub(/  +/, " ", text)
	rest = text
	while (match(rest, /(^|[^A-Za-z0-9_])metrics_(counter|gauge|histogram|histogram_bounds|summary)\(/)) {
		call = substr(rest, RSTART, RLENGTH); sub(/^[^m]*/, "", call)
		type = call; sub(/^metrics_/, "", type); sub(/\($/, "", type); sub(/_bounds$/, "", type)
		a = args_of(rest, RSTART + RLENGTH)
		rest = substr(rest, RSTART + RLENGTH + length(a))
		if (a ~ /^ *(struct|const) /) continue   # a declaration
		n = split_top(a, arg)
		if (n != (call ~ /_bounds\($/ ? 6 : 4)) { print "UNREAD\t" FILENAME "\t" call a ")"; continue }
		name = trim(arg[2]); labels = labels_of(arg[4], text)
		if (labels == "") { print "UNREAD\t" FILENAME "\t" call a ")"; continue }
		if (name ~ /^"[a-z_]+"$/) {
			print substr(name, 2, length(name) - 2) "\t" type "\t" labels
		} else if (name ~ /^[A-Z][A-Z0-9_]+$/) {     # a macro of src/
			MACROS[name] = type "\t" labels
		} else if (name ~ /^[a-z_]+\[i\]\[0\]$/) {  # a table {"name", "help"}, ...
			tbl = name; sub(/\[.*/, "", tbl)
			if (!match(text, tbl "\\[\\]\\[2\\] = \\{[^;]*;")) { print "UNREAD\t" FILENAME "\t" call a ")"; continue }
			t = substr(text, RSTART, RLENGTH); got = 0
			while (match(t, /\{ *"stateful_operator_[a-z_]+"/)) {
				m = substr(t, RSTART, RLENGTH); sub(/^\{ *"/, "", m); sub(/"$/, "", m)
				print m "\t" type "\t" labels; got = 1
				t = substr(t, RSTART + RLENGTH)
			}
			if (!got) print "UNREAD\t" FILENAME "\t" call a ")"
		} else print "UNREAD\t" FILENAME "\t" call a ")"
	}
}
END { for (m in MACROS) print "MACRO\t" m "\t" MACROS[m] }
' >"$work/metrics.raw"
# metrics_new() registers one family by a macro of src/runtime/metrics.h.
grep -oE '^#define METRICS_DROPPED_SERIES_NAME "[a-z_]+"' src/runtime/metrics.h | awk '{gsub(/"/, "", $3); print $3}' >"$work/dropped"
grep -q 'metrics_counter(m, METRICS_DROPPED_SERIES_NAME,' src/runtime/metrics.c ||
	fail "src/runtime/metrics.c no longer registers METRICS_DROPPED_SERIES_NAME as this script expects; update it"
grep -A3 'metrics_counter(m, METRICS_DROPPED_SERIES_NAME,' src/runtime/metrics.c | grep -q 'METRIC_LABELS("family")' ||
	fail "the dropped-series counter's labels changed; update this script"
echo "$(cat "$work/dropped")	counter	family" >>"$work/metrics.raw"
while IFS=$'\t' read -r _ macro type labels; do
	value=$(grep -rhoE "^#define $macro \"[a-z_]+\"" src | awk '{gsub(/"/, "", $3); print $3}' | head -1)
	[ -n "$value" ] || { echo "FAIL: metric name macro $macro: no #define in src/" >&2; problems=$((problems + 1)); continue; }
	printf '%s\t%s\t%s\n' "$value" "$type" "$labels" >>"$work/metrics.raw"
done < <(grep '^MACRO' "$work/metrics.raw")
if grep -q '^UNREAD' "$work/metrics.raw"; then
	echo "FAIL: metric registrations this check cannot read (give the name as a literal and the labels as METRIC_LABELS(...)):" >&2
	grep '^UNREAD' "$work/metrics.raw" | cut -c1-300 | sed 's/^/    /' >&2
	problems=$((problems + 1))
fi
grep -vE '^(UNREAD|MACRO)' "$work/metrics.raw" | sort -u >"$work/code.metrics"
[ "$(wc -l <"$work/code.metrics")" -ge 20 ] || fail "only $(wc -l <"$work/code.metrics") metrics read from src/: the extraction broke"
# Reference rows: | `name` | type | `label`, `label` (or none) | what |
section "$REF" "Metrics" | awk -F'|' '/^\| *`[a-z_]+` *\|/ {

	name = $2; gsub(/[ `]/, "", name)
	type = $3; gsub(/ /, "", type)
	l = $4; labels = ""
	while (match(l, /`[a-z_]+`/)) { labels = labels (labels == "" ? "" : ",") substr(l, RSTART + 1, RLENGTH - 2); l = substr(l, RSTART + RLENGTH) }
	print name "\t" type "\t" (labels == "" ? "-" : labels)
}' | sort -u >"$work/ref.metrics"
compare "metrics (name, type, label names)" "$work/code.metrics" "$work/ref.metrics"

# ---- annotation, label and finalizer keys ----
step "keys"
keys_re='[a-z0-9.-]*stateful-operator\.io/[A-Za-z0-9._-]*|statefulsets\.kubernetes\.io/[a-z-]+'
# stateful-operator.io/key-id is the HMAC context of the key's id, never a key on an object.
grep -rhoE "\"($keys_re)\"" src --include=*.c --include=*.h | tr -d '"' |
	grep -vx 'stateful-operator.io/key-id' | sort -u >"$work/code.keys"
grep -q '#define STATE_SEAL_SUFFIX "-seal"' src/controllers/state_seal.h ||
	fail "the seal suffix changed (src/controllers/state_seal.h); update this script"
# In the docs a <placeholder> is stripped (resize.stateful-operator.io/<template>), and
# <state>-seal is the seal of a state key.
grep -oE "($keys_re)(<[a-z-]+>)?" "$REF" | sed -E 's/<[a-z-]+>$//' |
	sed -E 's/-seal$//' | sort -u >"$work/ref.keys"
compare "annotation, label and finalizer keys" "$work/code.keys" "$work/ref.keys"
# A -seal key in the docs must be the seal of a state the code seals.
for k in $(grep -oE "($keys_re)" "$REF" | grep -E -- '-seal$' | sort -u); do
	grep -qx "${k%-seal}" "$work/code.keys" || { echo "FAIL: $k: no such sealed key" >&2; problems=$((problems + 1)); }
done

# ---- Event reasons ----
step "Event reasons"
# Every call of an emitter (action_event, refuse, plan_refuse, event_record,
# autoresize's say): its CamelCase literals are reasons; a call without one
# must pass a reason through (listed below) or name a macro of src/.
find src -name '*.c' ! -path 'src/plugin/*' -print0 | sort -z | xargs -0 awk '
BEGIN { RS = "\001"; camel = "^[A-Z][a-z0-9]+([A-Z][a-z0-9]*)+$" }
{
	text = $0
	gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
	gsub(/\/\/[^\n]*/, " ", text)
	gsub(/[\n\t]+/, " ", text); gsub(/  +/, " ", text)
	rest = text
	while (match(rest, /(^|[^A-Za-z0-9_])(action_event|refuse|plan_refuse|event_record|say)\(/)) {
		start = RSTART + RLENGTH
		depth = 1; i = start; n = length(rest); inq = 0
		while (i <= n && depth > 0) {
			c = substr(rest, i, 1)
			if (inq) { if (c == "\\") i++; else if (c == "\"") inq = 0 }
			else if (c == "\"") inq = 1
			else if (c == "(") depth++
			else if (c == ")") depth--
			i++
		}
		a = substr(rest, start, i - start - 1)
		rest = substr(rest, i)
		if (a ~ /^ ?(struct|const|void) /) continue   # a declaration
		found = 0; s = a
		while (match(s, /"[A-Z][A-Za-z0-9]*"/)) {
			w = substr(s, RSTART + 1, RLENGTH - 2)
			if (w ~ camel) { print w; found = 1 }
			s = substr(s, RSTART + RLENGTH)
		}
		s = a
		while (match(s, /[A-Z][A-Z0-9_]*_[A-Z0-9_]+/)) {
			print "MACRO\t" substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
		}
		if (!found) print "CALL\t" FILENAME "\t" a
	}
	s = text   # reason = "X" / *reason = "X": a reason chosen before its emitter is called
	while (match(s, /reason = "[A-Z][A-Za-z0-9]*"/)) {
		w = substr(s, RSTART, RLENGTH); sub(/^reason = "/, "", w); sub(/"$/, "", w)
		if (w ~ camel) print w
		s = substr(s, RSTART + RLENGTH)
	}
}' >"$work/events.raw"
: >"$work/code.events"
grep -vE '^(MACRO|CALL)' "$work/events.raw" >>"$work/code.events"
# Macros named in emitter calls whose value is a CamelCase literal are reasons.
for m in $(grep '^MACRO' "$work/events.raw" | cut -f2 | sort -u); do
	grep -rhoE "^#define $m \"[A-Z][a-z0-9]+([A-Z][a-z0-9]*)+\"" src | awk '{gsub(/"/, "", $3); print $3}' >>"$work/code.events"
done
# Calls that pass a reason read elsewhere: the generic recorders, and
# refusals whose reason a refuse()/reason = above already named.
passthrough='^ ?(a, reason, why|a, refusal\.reason, refusal\.message|a, "Warning", reason, "%s", message|a, "Warning", refusal\.reason, "%s", refusal\.message|ac->deps\.base\.events, t->w, type, reason, "%s", msg|rc->deps\.events, about, a->event_type, a->event_reason, "%s", a->event_message|&p, a)$'
while IFS=$'\t' read -r _ file args; do
	grep -qE "$passthrough" <<<"$args" && continue
	m=$(grep -oE '[A-Z][A-Z0-9_]*_[A-Z0-9_]+' <<<"$args" | while read -r x; do
		grep -rqE "^#define $x \"[A-Z][a-z0-9]+([A-Z][a-z0-9]*)+\"" src && echo "$x"; done)
	[ -n "$m" ] && continue
	echo "FAIL: an Event emitter call in $file whose reason this check cannot read (give it as a literal):" >&2
	echo "    (${args:0:200})" >&2
	problems=$((problems + 1))
done < <(grep '^CALL' "$work/events.raw")
sort -u -o "$work/code.events" "$work/code.events"
[ "$(wc -l <"$work/code.events")" -ge 40 ] || fail "only $(wc -l <"$work/code.events") Event reasons read from src/: the extraction broke"
section "$REF" "Events" | table_col 1 | grep -oE '`[A-Z][A-Za-z0-9]+`' | tr -d '`' | sort -u >"$work/ref.events"
compare "Event reasons (reference, section Events)" "$work/code.events" "$work/ref.events"
table_col 1 <"$TROUBLE" | grep -oE '`[A-Z][a-z0-9]+([A-Z][a-z0-9]*)+`' | tr -d '`' | sort -u >"$work/trouble.events"
compare "Event reasons (troubleshooting, first column of its tables)" "$work/code.events" "$work/trouble.events"

# ---- links: nothing outside the repository, every file and heading linked exists ----
step "links"
if grep -nE '\.\./shared|SPEC\.md|SPEC section' README.md docs/*.md; then
	echo "FAIL: a link to or mention of a document outside the repository (above)" >&2
	problems=$((problems + 1))
fi
# anchors FILE: the GitHub anchors of its headings (outside code blocks).
anchors() {
	awk '/^```/ {code = !code; next} !code && /^#+ / {
		h = tolower($0); sub(/^#+ +/, "", h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h
	}' "$1"
}
for f in README.md docs/*.md; do
	dir=$(dirname "$f")
	grep -oE '\]\([^)[:space:]]+\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/' | sort -u | while read -r link; do
		case $link in http://* | https://* | mailto:*) continue ;; esac
		path=${link%%#*}
		anchor=${link#"$path"}; anchor=${anchor#\#}
		target=$f
		[ -z "$path" ] || target=$dir/$path
		if [ ! -e "$target" ]; then
			echo "FAIL: $f links to $link: no such file" >&2
			echo x
		elif [ -n "$anchor" ] && [ "${target##*.}" = md ] && ! anchors "$target" | grep -qx -- "$anchor"; then
			echo "FAIL: $f links to $link: no such heading in $target" >&2
			echo x
		fi
	done
done >"$work/bad.links"
if [ -s "$work/bad.links" ]; then
	problems=$((problems + 1))
else
	echo "ok: links of README.md and docs/: every file and heading exists"
fi

STEP="docs against the code"
[ "$problems" -eq 0 ] || fail "$problems problem(s) above"
echo "PASS: docs/reference.md and docs/troubleshooting.md match the code"
