#!/usr/bin/env bash
# The operator's /metrics text as Prometheus reads it, without a cluster:
#   - build/test_metrics_exposition renders the real registry after an
#     observation in every family (and checks each TYPE by kind);
#   - Prometheus' own parser accepts it: promtool check metrics prints
#     nothing and exits 0 (the pinned promtool of scripts/testbed-build;
#     PROMTOOL=path overrides it; without it this check fails, it is not
#     skipped);
#   - every family rendered has the type docs/reference.md gives it, and
#     every family the reference lists is rendered (but the one that needs a
#     resize under way).
#
#   tests/metrics/exposition_check.sh [BUILD_DIR]   (default build)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."

BUILD=${1:-build}
REF=docs/reference.md
# Series that exist only while something is under way: documented, not rendered here.
ONLY_WHEN_BUSY='stateful_operator_resize_in_flight_seconds'

fail() { echo "metrics exposition: FAIL: $*" >&2; exit 1; }

[ -x "$BUILD/test_metrics_exposition" ] || fail "$BUILD/test_metrics_exposition is not built"
if [ -z "${PROMTOOL:-}" ]; then
	bin=$(scripts/testbed-build) || fail "scripts/testbed-build failed, so there is no promtool"
	PROMTOOL=$bin/promtool
fi
[ -x "$PROMTOOL" ] || fail "promtool not found ($PROMTOOL); scripts/testbed-build builds it"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
SOP_METRICS_EXPOSITION=$work/metrics.prom "$BUILD/test_metrics_exposition" >"$work/test.log" 2>&1 ||
	{ cat "$work/test.log" >&2; fail "$BUILD/test_metrics_exposition failed"; }
[ -s "$work/metrics.prom" ] || fail "no exposition text written"

if ! "$PROMTOOL" check metrics <"$work/metrics.prom" >"$work/promtool.out" 2>&1 || [ -s "$work/promtool.out" ]; then
	cat "$work/promtool.out" >&2
	fail "promtool check metrics refused the exposition (above)"
fi
echo "ok: $("$PROMTOOL" --version 2>&1 | head -1 | cut -d' ' -f1-3) check metrics: $(grep -c '^# TYPE' "$work/metrics.prom") families, $(grep -vc '^#' "$work/metrics.prom") samples, no complaint"

# name<TAB>type, rendered and documented.
awk '$1 == "#" && $2 == "TYPE" {print $3 "\t" $4}' "$work/metrics.prom" | sort -u >"$work/rendered"
awk -v h="## Metrics" '$0 == h {on = 1; next} on && /^## / {on = 0} on' "$REF" |
	awk -F'|' '/^\| *`[a-z_]+`/ { n = $2; gsub(/[ `]/, "", n); t = $3; gsub(/ /, "", t); print n "\t" t }' |
	sort -u >"$work/documented"
[ "$(wc -l <"$work/documented")" -ge 40 ] || fail "only $(wc -l <"$work/documented") families read from $REF: the extraction broke"
grep -q summary "$work/rendered" && fail "a summary is rendered (every duration is a histogram): $(grep summary "$work/rendered")"
diff=$(comm -3 "$work/rendered" "$work/documented" | grep -vE "^	?($ONLY_WHEN_BUSY)	" || true)
if [ -n "$diff" ]; then
	echo "rendered (left) against $REF (right), name and type:" >&2
	echo "$diff" >&2
	fail "the exposition and the reference disagree"
fi
echo "ok: every family rendered has the type $REF gives it; none missing but $ONLY_WHEN_BUSY"
