#!/bin/bash
# scripts/same-traces.sh OLD NEW [GUEST_DIR]: do two hvtrace builds write the same traces of the Linux
# test guest? For a change that should change no output (a refactoring), run it with the hvtrace binary
# of the commit before and of the change. Each case launches QEMU (TCG, one vCPU) on the same kernel
# with the same workload (hvt.bm=3 hvt.tmpfs=4: dd's reads, known in number) once per build, and
# compares every output the case writes: the text trace, JSON Lines, trace.dat through `trace-cmd
# report`, the Perfetto JSON and folded stacks of `report` (text or graph, json, folded), --summary and --profile. What differs
# between two boots of one build is taken out first: timestamps, durations, pids. Prints one line per
# case (same / DIFFERS, with the diff) and exits 1 if any case differs. CASES=a,b runs those cases
# alone; KEEP=DIR keeps every output there.
set -uo pipefail
old=${1:?usage: same-traces.sh OLD-HVTRACE NEW-HVTRACE [GUEST_DIR]}
new=${2:?usage: same-traces.sh OLD-HVTRACE NEW-HVTRACE [GUEST_DIR]}
guest=${3:-build/guest}
work=$(mktemp -d /tmp/same-traces.XXXXXX)
trap 'rm -rf "$work"' EXIT
append="hvt.bm=3 hvt.tmpfs=4 hvt.rounds=1 hvt.yes=0 hvt.yes_sec=0"

cases=(
	"trap-function|-p function -l vfs_read -l shmem_file_read_iter --comm dd"
	"stub-function|--probe stub -p function -l vfs_read -l shmem_file_read_iter --comm dd"
	"trap-graph|-p function_graph -l vfs_read -l shmem_file_read_iter --funcgraph-retval --comm dd"
	"stub-graph|--probe stub -p function_graph -g vfs_read --funcgraph-retval --funcgraph-tail --comm dd"
	"trap-events|-e vfs_read(count) -r vfs_read -e do_sys_openat2(int dfd, string filename) --comm dd"
	"stub-jsonl|--probe stub -p function -l vfs_read -e vfs_read(count) --comm dd --format jsonl"
	"trap-profile|-p function_graph -l vfs_read -l ksys_read --comm dd --profile"
)

# What two boots of one build may write differently: times, durations, pids, KASLR's addresses.
normalize() {
	sed -E -e 's/[0-9]+\.[0-9]{6}:/T:/g' \
		-e 's/([a-z0-9_.]+)-[0-9]+( +\[)/\1-P\2/g' \
		-e 's/\) +[!#@*$+]? *[0-9]+\.[0-9]+ us +\|/) D |/; s/[0-9]+\.[0-9]+ ?us/D us/g' \
		-e 's/[!#@*$+] D us/D us/g; s/duration=[0-9.]+/duration=D/g; s/"ts_ns":[0-9]+/"ts_ns":N/g' \
		-e 's/^([^ ]+;[^ ]+|[^ ;]+) [0-9]+$/\1 N/; s/opening .*\/(old|new)\//opening /' \
		-e 's/"(ts|pid|tid|dur|duration_ns|time_ns|total_ns|min_ns|max_ns|avg_ns|elapsed_ns|t0_ns)": ?[0-9.]+/"\1":N/g' \
		-e 's/(elapsed|held-us|us|ns|avg|min|max|total|time)[ =:]+[0-9.]+/\1 N/g' \
		-e 's/([a-z0-9_.]+)-[0-9]+( +=>| *$)/\1-P\2/g' \
		-e 's/"(task|name)": "([a-z0-9_.]+)-[0-9]+"/"\1": "\2-P"/g' \
		-e 's/"elapsed": [0-9.]+/"elapsed": N/; s/(0x)?ffffffff[0-9a-f]{8}/ADDR/g' \
		-e 's/pid=[0-9]+/pid=P/g; s/\(([0-9]+)\)/(P)/g' "$@"
}

run_case() { # hv dir opts...
	local hv=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	"$hv" run --qemu --kernel "$guest/vmlinuz" --initrd "$guest/initramfs.cpio.gz" --smp 1 \
		--append "$append" --console "$dir/console" --summary "$dir/summary.json" \
		--quiet --timeout 600 "$@" -o "$dir/trace" 2> "$dir/stderr"
	echo "exit $?" > "$dir/exit"
	"$hv" record --qemu --kernel "$guest/vmlinuz" --initrd "$guest/initramfs.cpio.gz" --smp 1 \
		--append "$append" --console /dev/null --quiet --timeout 600 "$@" -o "$dir/trace.dat" \
		2> "$dir/record.stderr" > /dev/null
	echo "record exit $?" >> "$dir/exit"
	trace-cmd report -i "$dir/trace.dat" 2>&1 | sed 1d > "$dir/trace-cmd.txt"
	"$hv" report -i "$dir/trace.dat" > "$dir/report.txt" 2>> "$dir/stderr"
	"$hv" report --format json -i "$dir/trace.dat" > "$dir/chrome.json" 2>> "$dir/stderr"
	"$hv" report --format folded -i "$dir/trace.dat" > "$dir/folded" 2>> "$dir/stderr"
	grep -h '^hvtrace: \(profile\|expect\)\|^ *[a-z_]* *hits' "$dir/stderr" > "$dir/profile" || true
	python3 -m json.tool --sort-keys "$dir/summary.json" > "$dir/summary.sorted" 2>&1
	python3 -m json.tool --sort-keys "$dir/chrome.json" > "$dir/chrome.sorted" 2>&1
	for f in trace trace-cmd.txt report.txt chrome.sorted folded summary.sorted profile exit; do
		normalize "$dir/$f" > "$dir/$f.norm" 2> /dev/null || echo "(missing)" > "$dir/$f.norm"
	done
}

bad=0
for c in "${cases[@]}"; do
	name=${c%%|*}
	[ -n "${CASES:-}" ] && [[ ",$CASES," != *",$name,"* ]] && continue
	# the -e specs hold spaces: split on the option words, not inside parentheses
	mapfile -t opts < <(python3 -c 'import re,sys; print("\n".join(re.findall(r"\S+\([^)]*\)|\S+", sys.argv[1])))' "${c#*|}")
	run_case "$old" "$work/$name/old" "${opts[@]}"
	run_case "$new" "$work/$name/new" "${opts[@]}"
	d=$(cd "$work/$name" && for f in old/*.norm; do diff -u "$f" "new/${f#old/}"; done)
	lines=$(wc -l < "$work/$name/new/trace.norm")
	if [ -z "$d" ]; then
		echo "same     $name ($lines trace lines; $(cat "$work/$name/new/exit" | tr '\n' ' '))"
	else
		echo "DIFFERS  $name"
		echo "$d" | head -60
		bad=1
	fi
done
[ -n "${KEEP:-}" ] && cp -r "$work" "$KEEP"
exit $bad
