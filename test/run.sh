#!/bin/sh
# Runs every suite: the Check unit binaries, then the end-to-end tests (pytest).
# Prints each runner's own closing line and a total; exits non-zero on any failure.
set -u
: "${BUILD:=build}" "${PYTHON:=python3}"
export BUILD GT_PRELOAD SANITIZE PYTHON
failed=""
ran=0
log=$(mktemp) why=$(mktemp)
trap 'rm -f "$log" "$why"' EXIT
for t in "$BUILD"/test/check_*; do
	[ -x "$t" ] || continue
	ran=$((ran + 1))
	echo "== $t"
	# check_cupti and check_pm run the real libcupti, whose dynamic-TLS reads gcc 12's
	# LeakSanitizer records as garbage ranges (DTLS at 0x8b) and then crashes
	# scanning them at exit: no DTLS tracking for those binaries.
	san_env=
	case "$SANITIZE:$t" in
	address:*check_cupti | address:*check_pm) san_env="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}intercept_tls_get_addr=0" ;;
	esac
	if ! env $san_env CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-120}" "$t" >"$log" 2>&1; then
		failed="$failed $t"
		grep -E '^[^ ]+:[0-9]+:[FE]:' "$log" >>"$why"
	fi
	cat "$log"
done
echo "== pytest"
if ! "$PYTHON" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} test; then
	failed="$failed pytest"
fi
# named last, with the Check failures' own lines: a CI log keeps only its tail
if [ -n "$failed" ]; then
	cat "$why"
	set -- $failed
	echo "gputrace tests: $# suite(s) failed:$failed"
	exit 1
fi
echo "gputrace tests: all $((ran + 1)) suites passed"
