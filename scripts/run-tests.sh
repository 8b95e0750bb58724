#!/bin/bash
# Runs each cmocka test binary given as an argument, in order, even after a failure, and closes with one
# line "hvtrace: N passed, N failed, N skipped" summed from cmocka's own summaries. Exits non-zero if a
# test failed or a binary crashed. An argument NAME=VALUE,BINARY runs BINARY with NAME=VALUE in its
# environment.
set -u
passed=0 failed=0 skipped=0 crashed=0
for t in "$@"; do
	echo "== $t"
	if [[ $t == *=*,* ]]; then
		out=$(env "${t%%,*}" "${t#*,}" 2>&1)
	else
		out=$("$t" 2>&1)
	fi
	rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' | tail -1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' | tail -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
		echo "hvtrace: $t exited with status $rc"
		crashed=$((crashed + 1))
	fi
done
failed=$((failed + crashed))
echo "hvtrace: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
