#!/bin/bash
# Runs each cmocka test binary given as an argument, even after a failure, and closes with one
# line "hvtrace: N passed, N failed, N skipped" summed from cmocka's own summaries (CI parses that line).
# A binary that cannot run here prints "SKIPPED: <reason>" and exits 77 (KSFT_SKIP, tests/common/skip.h):
# it counts as one skipped, and the lines before the closing one name each such binary with its reason.
# (cmocka's own exit status is its number of failed tests: 77 with a "[  FAILED  ]" line is 77 failures.)
# Exits non-zero if a test failed or a binary crashed; the 60 lines before each failure are repeated
# before that line (the end of a truncated CI log). An argument NAME=VALUE,BINARY runs BINARY with
# NAME=VALUE in its environment (NAME=VALUE,NAME2=VALUE2,BINARY: both; no value holds a comma).
# HVT_TEST_TIMEOUT=SECONDS ends each binary still running after that long (status 124, a failure).
# HVT_TEST_JOBS=N (default 1) runs up to N binaries at once, started in the order given (so give the
# longest first); each binary's output is shown whole, under its "== BINARY" line, when it ends.
# Before the closing line, one line per binary that ran a minute or more says how long it took.
set -u
limit=()
# (line-buffered: what a binary ended this way had printed is shown, its last test named)
[ -n "${HVT_TEST_TIMEOUT:-}" ] && limit=(timeout -k 10 "$HVT_TEST_TIMEOUT" stdbuf -oL)
jobs=${HVT_TEST_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "HVT_TEST_JOBS=$jobs: a number of binaries, 1 or more" >&2; exit 2; }
passed=0 failed=0 skipped=0 crashed=0 digest= skips=
times=
outdir=$(mktemp -d /tmp/hvt-run-tests.XXXXXX)
trap 'rm -rf "$outdir"' EXIT
args=("$@")
declare -A job_of=() started=()
running=0

# run_one I: binary I of the arguments, its output in $outdir/I.out and its status in $outdir/I.rc
run_one() {
	local t=${args[$1]} rc
	if [[ $t == *=*,* ]]; then
		IFS=, read -ra vars <<< "${t%,*}"
		env "${vars[@]}" "${limit[@]}" "${t##*,}" > "$outdir/$1.out" 2>&1
	else
		"${limit[@]}" "$t" > "$outdir/$1.out" 2>&1
	fi
	rc=$?
	echo "$rc" > "$outdir/$1.rc"
}

# account I: shows binary I's output and adds its results to the sums
account() {
	local t=${args[$1]} out rc p f s why
	out=$(cat "$outdir/$1.out")
	rc=$(cat "$outdir/$1.rc" 2>/dev/null || echo 255)
	echo "== $t"
	printf '%s\n' "$out"
	[ $((SECONDS - started[$1])) -ge 60 ] &&
		times+=$(printf '\nhvtrace: %s took %d s' "$t" $((SECONDS - started[$1])))
	if [ "$rc" -eq 77 ] && ! printf '%s\n' "$out" | grep -q '^\[  FAILED  \]'; then
		why=$(printf '%s\n' "$out" | sed -n 's/^SKIPPED: //p' | tail -1)
		skips+=$(printf '\nhvtrace: skipped %s: %s' "$t" "${why:-no reason given}")
		skipped=$((skipped + 1))
		return
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
}

# reap: waits for one running binary to end and accounts for it
reap() {
	local pid
	wait -n -p pid
	account "${job_of[$pid]}"
	unset "job_of[$pid]"
	running=$((running - 1))
}

for i in "${!args[@]}"; do
	[ "$running" -lt "$jobs" ] || reap
	[ "$jobs" -eq 1 ] && echo "== ${args[$i]} (running)"
	started[$i]=$SECONDS
	run_one "$i" &
	job_of[$!]=$i
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do reap; done
failed=$((failed + crashed))
[ -n "$digest" ] && printf '%s\n' "$digest"
[ -n "$skips" ] && printf '%s\n' "${skips#?}"
# the binaries that took a minute or more (where CI's time goes)
[ -n "$times" ] && printf '%s\n' "${times#?}"
echo "hvtrace: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
