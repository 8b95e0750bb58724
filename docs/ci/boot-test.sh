#!/usr/bin/env bash
# Boots a Linux kernel under hvtrace (QEMU, TCG unless ACCEL=kvm) and asserts on what it did: the
# expectations of a session file (default: boot-test.session next to this script), the verdict as the
# exit status, and in $OUT: junit.xml (one test case per expectation, for the CI's test report),
# summary.json (counts per function, lost events, exit reason, verdicts), trace.jsonl (the trace as
# JSON Lines) and console.log (the guest's console). The GitHub Actions workflow and the GitLab CI job
# next to it call this script; hvtrace's own tests run it too (tests/qemu/test_ci_example.c).
#
# usage: boot-test.sh KERNEL [INITRD] [-- EXTRA HVTRACE OPTIONS...]
# environment: HVTRACE (default: hvtrace on PATH), SESSION, OUT (default hvtrace-results), APPEND
# (the kernel command line after console=ttyS0), ACCEL (tcg or kvm), TIMEOUT (seconds, default 600).
# Exit status: hvtrace's: 0 all expectations met, 7 one was not, 124 timeout, others see hvtrace(1).
set -u

usage() {
	echo "usage: boot-test.sh KERNEL [INITRD] [-- EXTRA HVTRACE OPTIONS...]" >&2
	exit 2
}

[ $# -ge 1 ] && [ "$1" != "--" ] || usage
kernel=$1
shift
initrd=
if [ $# -ge 1 ] && [ "$1" != "--" ]; then
	initrd=$1
	shift
fi
if [ $# -ge 1 ]; then
	[ "$1" = "--" ] || usage
	shift
fi

hvtrace=${HVTRACE:-hvtrace}
session=${SESSION:-$(dirname "$0")/boot-test.session}
out=${OUT:-hvtrace-results}
for f in "$kernel" "$session" ${initrd:+"$initrd"}; do
	if [ ! -r "$f" ]; then
		echo "boot-test.sh: $f: cannot read it" >&2
		exit 2
	fi
done
mkdir -p "$out" || exit 2
rm -f "$out/junit.xml" "$out/summary.json" "$out/trace.jsonl" "$out/console.log"

args=(run --qemu --kernel "$kernel" --accel "${ACCEL:-tcg}" --append "console=ttyS0 ${APPEND:-}"
      --session "$session" --timeout "${TIMEOUT:-600}" --quiet
      --junit "$out/junit.xml" --summary "$out/summary.json"
      --format jsonl -o "$out/trace.jsonl" --console "$out/console.log")
[ -n "$initrd" ] && args+=(--initrd "$initrd")
# the caller's options come last: they win over the session file's
"$hvtrace" "${args[@]}" "$@"
status=$?

if [ -r "$out/summary.json" ] && command -v jq >/dev/null; then
	jq -r '"boot-test: \(.exit_reason) (exit \(.exit_status)), \(.lost) events lost, " +
	       "\(.unmet) of \(.expectations | length) expectations unmet"' "$out/summary.json"
else
	echo "boot-test: hvtrace exited with status $status"
fi
exit "$status"
