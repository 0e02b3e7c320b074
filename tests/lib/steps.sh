# Sourced by the shell tests: named steps, a failure that names its step, the
# verdict line. A test may define on_fail to print what helps (objects,
# Events) before it exits.
STEP=

step() {
	STEP=$*
	echo "--- $STEP"
}

fail() {
	echo "FAIL: $STEP: $*" >&2
	if declare -F on_fail >/dev/null; then
		on_fail >&2 || true
	fi
	exit 1
}

# name rc: "PASS: name" or "name: FAILED", then exit rc (end of an EXIT trap).
verdict() {
	if [ "$2" -eq 0 ]; then echo "PASS: $1"; else echo "$1: FAILED" >&2; fi
	exit "$2"
}

# ns: deletes a test's namespace and waits for it; says so and returns 1 if
# it is not gone within 120 s.
delete_namespace() {
	kubectl delete namespace "$1" --ignore-not-found --wait=true --timeout=120s >/dev/null ||
		{ echo "cleanup: namespace $1 not deleted in time" >&2; return 1; }
}
