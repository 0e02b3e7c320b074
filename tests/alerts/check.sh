#!/usr/bin/env bash
# Checks the alert rules and the Grafana dashboard with promtool:
#   - promtool check rules on charts/stateful-operator/files/alerts.rules.yaml;
#   - promtool test rules on tests/alerts/*.test.yaml, and every alert has a test;
#   - every query of deploy/monitoring/dashboard.json parses (each becomes a
#     recording rule of a generated rules file that promtool checks);
#   - every metric named in the rules or the dashboard is one the operator
#     exports (a typo would make an alert that can never fire).
# promtool is a test tool built from the Go module proxy by
# scripts/testbed-build (PROMTOOL=path overrides it); without it this check
# fails, it is not skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."

RULES=charts/stateful-operator/files/alerts.rules.yaml
DASHBOARD=deploy/monitoring/dashboard.json

fail() { echo "alerts check: FAIL: $*" >&2; exit 1; }

# The pinned promtool (PROMETHEUS_VERSION in scripts/testbed-build), not
# whichever is on PATH: Debian's prometheus package has an older one.
if [ -z "${PROMTOOL:-}" ]; then
	bin=$(scripts/testbed-build) || fail "scripts/testbed-build failed, so there is no promtool"
	PROMTOOL=$bin/promtool
fi
[ -x "$PROMTOOL" ] || fail "promtool not found ($PROMTOOL); scripts/testbed-build builds it"
echo "alerts check: $("$PROMTOOL" --version 2>&1 | head -1)"
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps installs it)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PROMTOOL" check rules "$RULES"
"$PROMTOOL" test rules tests/alerts/*.test.yaml

# Every alert is tested: named in an alert_rule_test with an alert expected.
for alert in $(sed -n 's/^ *- alert: *//p' "$RULES"); do
	grep -q "alertname: $alert\$" tests/alerts/*.test.yaml || fail "alert $alert has no test"
done

# Grafana fills its variables in before Prometheus sees a query: do the same,
# with a typical value, for the built-in interval variables and the
# dashboard's own variables. Any other $ is an error.
jq -r '[.templating.list[].name] | .[]' "$DASHBOARD" >"$work/vars"
jq -r '.. | objects | select(has("expr")) | .expr' "$DASHBOARD" >"$work/exprs"
[ -s "$work/exprs" ] || fail "no query found in $DASHBOARD"
{
	echo "groups:"
	echo "  - name: dashboard-queries"
	echo "    rules:"
	n=0
	while IFS= read -r expr; do
		n=$((n + 1))
		expr=${expr//'$__rate_interval'/5m}
		expr=${expr//'$__interval'/1m}
		expr=${expr//'$__range'/6h}
		while read -r v; do
			expr=${expr//"\${$v}"/.*}
			expr=${expr//"\$$v"/.*}
		done <"$work/vars"
		case $expr in *'$'*) fail "query $n uses an unknown variable: $expr" ;; esac
		echo "      - record: dashboard:query_$n"
		printf '        expr: %s\n' "$(jq -Rn --arg e "$expr" '$e')"
	done <"$work/exprs"
} >"$work/dashboard.rules.yaml"
"$PROMTOOL" check rules "$work/dashboard.rules.yaml"
echo "dashboard: $(wc -l <"$work/exprs") queries parse"

# The metric names used exist in the operator's source: its own, and the
# stock names it exports (controller-runtime's, client-go's work queue's,
# the process collector's).
names='(stateful_operator|controller_runtime|workqueue|process)_[a-z_]+'
grep -rhoE "\"$names\"" src | tr -d '"' | sort -u >"$work/exported"
{
	grep -v '^ *#' "$RULES" | grep -oE "$names" || true
	grep -oE "$names" "$work/exprs" || true
} | sed -E 's/_(bucket|sum|count)$//' | sort -u >"$work/used"
# A latency is read from a histogram as a quantile (p99), never as a mean.
grep -E '_seconds_(sum|count)' "$work/exprs" "$RULES" && fail "a mean of a duration above: use histogram_quantile over _bucket"

unknown=$(comm -23 "$work/used" "$work/exported")
[ -z "$unknown" ] || fail "metrics the operator does not export: $unknown"
echo "alerts check: $(wc -l <"$work/used") metrics used, all exported"
