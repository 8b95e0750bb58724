#!/bin/bash
# Runs each cmocka test binary given as an argument, in order, even after a failure, and closes with one
# line "hvtrace: N passed, N failed, N skipped" summed from cmocka's own summaries (CI parses that line).
# A binary that cannot run here prints "SKIPPED: <reason>" and exits 77 (KSFT_SKIP, tests/common/skip.h):
# it counts as one skipped, and the lines before the closing one name each such binary with its reason.
# (cmocka's own exit status is its number of failed tests: 77 with a "[  FAILED  ]" line is 77 failures.)
# Exits non-zero if a test failed or a binary crashed; the 60 lines before each failure are repeated
# before that line (the end of a truncated CI log). An argument NAME=VALUE,BINARY runs BINARY with
# NAME=VALUE in its environment (NAME=VALUE,NAME2=VALUE2,BINARY: both; no value holds a comma).
# HVT_TEST_TIMEOUT=SECONDS ends each binary still running after that long (status 124, a failure).
# Before the closing line, one line per binary that ran a minute or more says how long it took.
set -u
limit=()
# (line-buffered: what a binary ended this way had printed is shown, its last test named)
[ -n "${HVT_TEST_TIMEOUT:-}" ] && limit=(timeout -k 10 "$HVT_TEST_TIMEOUT" stdbuf -oL)
passed=0 failed=0 skipped=0 crashed=0 digest= skips=
times=
for t in "$@"; do
	echo "== $t"
	start=$SECONDS
	if [[ $t == *=*,* ]]; then
		IFS=, read -ra vars <<< "${t%,*}"
		out=$(env "${vars[@]}" "${limit[@]}" "${t##*,}" 2>&1)
	else
		out=$("${limit[@]}" "$t" 2>&1)
	fi
	rc=$?
	printf '%s\n' "$out"
	[ $((SECONDS - start)) -ge 60 ] && times+=$(printf '\nhvtrace: %s took %d s' "$t" $((SECONDS - start)))
	if [ "$rc" -eq 77 ] && ! printf '%s\n' "$out" | grep -q '^\[  FAILED  \]'; then
		why=$(printf '%s\n' "$out" | sed -n 's/^SKIPPED: //p' | tail -1)
		skips+=$(printf '\nhvtrace: skipped %s: %s' "$t" "${why:-no reason given}")
		skipped=$((skipped + 1))
		continue
	fi
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' | tail -1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' | tail -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
	if [ -n "$f" ] || [ "$rc" -ne 0 ]; then
		# what led to each failure, repeated at the end where a truncated CI log still shows it
		digest+=$(printf '\n== %s (the 60 lines before each failure)\n' "$t"
			printf '%s\n' "$out" | awk '{ l[NR] = $0 }
				/^\[  FAILED  \] test_|^\[  ERROR   \]/ && !seen[$0]++ {
					for (i = NR - 60 > last ? NR - 60 : last + 1; i <= NR; i++) print l[i]
					last = NR }')
	fi
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
		echo "hvtrace: $t exited with status $rc"
		crashed=$((crashed + 1))
	fi
done
failed=$((failed + crashed))
[ -n "$digest" ] && printf '%s\n' "$digest"
[ -n "$skips" ] && printf '%s\n' "${skips#?}"
# the binaries that took a minute or more (where CI's time goes)
[ -n "$times" ] && printf '%s\n' "${times#?}"
echo "hvtrace: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
