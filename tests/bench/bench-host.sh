#!/bin/bash
# make bench-host: the host pipeline alone on a recorded ring stream. The stream is recorded once (and
# kept in OUT_DIR): `record --qemu` of the Linux test guest with the function tracer on every function
# (stub probes), over BENCH_HOST_ROUNDS rounds of its file workload (hvt.bench); then BENCH_BIN reads
# it back into records and times the writer and each sink on it (tests/bench/bench_host.c).
# BENCH_HOST_DAT=FILE: replay that trace.dat instead (any function trace recorded by hvtrace).
set -euo pipefail
guest=${1:-build/guest}
dir=${2:-build/bench-host}
bin=${3:-build/tests/bench_host}
dat=${BENCH_HOST_DAT:-$dir/all-functions.dat}
if [ ! -s "$dat" ]; then
	[ -f "$guest/vmlinuz" ] || { echo "bench-host: no kernel in $guest (make guest)" >&2; exit 1; }
	mkdir -p "$dir"
	echo "bench-host: recording the ring stream once: every function of the Linux test guest," \
		"${BENCH_HOST_ROUNDS:-2} rounds of its file workload (stub probes, QEMU TCG) into $dat"
	"${HVTRACE:-./hvtrace}" record --qemu --kernel "$guest/vmlinuz" \
		--initrd "$guest/initramfs.cpio.gz" --system-map "$guest/System.map" \
		--append "nokaslr hvt.bench=${BENCH_HOST_ROUNDS:-2}" -p function -l '*' --probe stub \
		--timeout 900 --console "$dir/console" -o "$dat.tmp" --stats 2> "$dir/record.err" || {
		echo "bench-host: the recording failed:" >&2
		cat "$dir/record.err" >&2
		exit 1
	}
	mv "$dat.tmp" "$dat"
	grep "stats: stub probes" "$dir/record.err" || true
fi
"$bin" "$dat" "${BENCH_HOST_REPEAT:-3}"
