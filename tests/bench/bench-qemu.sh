#!/bin/bash
# make bench, QEMU part: breakpoint events per second on ksys_write of a Linux guest running
# `yes > /dev/null`, through hvtrace's QEMU backend and through plain gdb (a breakpoint whose command list
# counts and continues) and through a raw Z0 stop/continue loop (tests/bench/gdb-z0-loop.py: the gdbstub's own
# limit, no tracer), side by side on the same VM in one run; and the same function as a stub probe.
# QEMU (up to 10.1) flushes its whole TCG translation cache at every debug stop (gdb_vm_state_change):
# the VM then retranslates all it runs until the next hit, which bounds all three; the TB flushes per
# stop of the raw loop are counted (`info jit`) to show it. The three breakpoint runs are interleaved
# BENCH_ROUNDS times (default 3), each one's best round kept. HVTRACE=path runs another hvtrace build;
# HVTRACE_QEMU=path another QEMU (e.g. `scripts/fetch-qemu.sh 11`: 10.2 and later flush no more).
set -euo pipefail
guest=${1:-build/guest}
hv=${HVTRACE:-./hvtrace}
secs=${BENCH_SECS:-8}
work=$(mktemp -d)
trap 'kill $qemu 2>/dev/null; wait $qemu 2>/dev/null; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${HVTRACE_QEMU:-qemu-system-x86_64}" -accel tcg,thread=multi -cpu max -smp 2 -m 256 -display none -nodefaults \
	-no-user-config -no-reboot -serial "file:$work/console" -monitor none \
	-qmp "unix:$work/qmp,server=on,wait=off" -gdb "tcp:127.0.0.1:$port" \
	-kernel "$guest/vmlinuz" -initrd "$guest/initramfs.cpio.gz" \
	-append "console=ttyS0 nokaslr hvt.yes=2 hvt.yes_sec=600" &
qemu=$!
for _ in $(seq 600); do
	grep -q "workload start" "$work/console" 2>/dev/null && break
	sleep 0.1
done
sleep 2 # the yes loops are up

addr=0x$(awk '$3 == "ksys_write" { print $1 }' "$guest/System.map")

# hvtrace: function tracer on ksys_write for $secs seconds; sets hv_hits, hv_held (us the VM stood
# stopped in hvtrace's hands)
trap_run() {
	"$hv" attach --qmp "$work/qmp" --system-map "$guest/System.map" -p function -l ksys_write \
		--duration "$secs" --stats -o /dev/null 2> "$work/hv.err"
	hv_hits=$(sed -n 's/.* hits \([0-9]*\) .*/\1/p' "$work/hv.err")
	hv_held=$(sed -n 's/.* held-us \([0-9]*\).*/\1/p' "$work/hv.err")
}

# the raw Z0 loop on the same breakpoint, with QEMU's TB flush count before and after; sets z0_stops,
# z0_wall, z0_flushes
tb_flushes() {
	python3 - "$work/qmp" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
for cmd in ({"execute": "qmp_capabilities"},
            {"execute": "human-monitor-command", "arguments": {"command-line": "info jit"}}):
    f.write(json.dumps(cmd) + "\n")
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r or "error" in r:
            break
for line in str(r.get("return", "")).splitlines():
    if line.startswith("TB flush count"):
        print(line.split()[-1])
PY
}
z0_run() {
	local fl0 fl1
	fl0=$(tb_flushes)
	tests/bench/gdb-z0-loop.py "$port" "$addr" "$secs" > "$work/z0.out"
	fl1=$(tb_flushes)
	read -r _ z0_stops z0_wall < "$work/z0.out"
	z0_flushes=$(( ${fl1:-0} - ${fl0:-0} ))
}

# gdb: the same breakpoint, counted by a command list, for $secs seconds; sets gdb_hits
cat > "$work/gdb.cmd" <<GDB
set pagination off
set confirm off
target remote 127.0.0.1:$port
set \$n = 0
break *$addr
commands
silent
set \$n = \$n + 1
continue
end
continue
GDB
cat > "$work/gdb.end" <<'GDB'
printf "gdb-hits %d\n", $n
delete
detach
GDB
gdb_run() {
	local gdb_pid
	gdb -q -batch -x "$work/gdb.cmd" -x "$work/gdb.end" > "$work/gdb.out" 2>&1 &
	gdb_pid=$!
	sleep "$secs"
	# gdb can swallow an interrupt that lands while it runs a breakpoint's commands: repeat
	while kill -INT $gdb_pid 2>/dev/null; do sleep 1; done
	wait $gdb_pid || true
	gdb_hits=$(sed -n 's/^gdb-hits \([0-9]*\)/\1/p' "$work/gdb.out")
}

# the three breakpoint runs interleaved, BENCH_ROUNDS times, keeping each one's best round (machine
# noise only ever takes events away); the stub run once
best_hv=0 best_held=0 best_z0=0 best_z0w=1 best_fl=0 best_gdb=0
for _ in $(seq "${BENCH_ROUNDS:-3}"); do
	trap_run
	z0_run
	gdb_run
	if [ -z "$gdb_hits" ] || [ -z "$hv_hits" ] || [ -z "$z0_stops" ]; then
		echo "bench-qemu: no result (hvtrace: '$hv_hits', gdb: '$gdb_hits', raw Z0: '$z0_stops')" >&2
		cat "$work/hv.err" "$work/gdb.out" "$work/z0.out" >&2
		exit 1
	fi
	[ "$hv_hits" -gt "$best_hv" ] && best_hv=$hv_hits best_held=${hv_held:-0}
	if awk -v a="$z0_stops" -v aw="$z0_wall" -v b="$best_z0" -v bw="$best_z0w" \
		'BEGIN { exit !(a / aw > b / bw) }'; then
		best_z0=$z0_stops best_z0w=$z0_wall best_fl=$z0_flushes
	fi
	[ "$gdb_hits" -gt "$best_gdb" ] && best_gdb=$gdb_hits
done

# what a stop costs QEMU: the translation blocks it makes again between two stops (median)
tests/bench/gdb-z0-loop.py "$port" "$addr" 4 "$work/qmp" > "$work/tbs.out"
read -r _ tbs_per_stop tbs_samples < <(grep '^tbs-per-stop ' "$work/tbs.out" || echo "- 0 0")

# hvtrace with a stub probe on the same function: no stop at all
"$hv" attach --qmp "$work/qmp" --system-map "$guest/System.map" -p function -l ksys_write \
	--probe stub --duration "$secs" --stats -o /dev/null 2> "$work/stub.err"
stub_events=$(sed -n 's/.*stats: stub probes [0-9]* records \([0-9]*\) .*/\1/p' "$work/stub.err")
if [ -z "$stub_events" ]; then
	echo "bench-qemu: no result from the stub run" >&2
	cat "$work/stub.err" >&2
	exit 1
fi
awk -v hv="$best_hv" -v held="$best_held" -v gdb="$best_gdb" -v st="$stub_events" -v s="$secs" \
	-v z0="$best_z0" -v z0w="$best_z0w" -v fl="$best_fl" -v rounds="${BENCH_ROUNDS:-3}" \
	-v tbs="${tbs_per_stop:-0}" -v tbn="${tbs_samples:-0}" 'BEGIN {
	printf "hvtrace bench (QEMU TCG backend): breakpoint on ksys_write, guest running 2 x yes > /dev/null, %d s each,\n", s
	printf "best of %d interleaved rounds\n", rounds
	hr = hv / s; zr = z0 / z0w; gr = gdb / s
	printf "  hvtrace attach -p function (trap): %8.0f events/s  (%.0f us per event, %.0f us of it with the VM held by hvtrace)\n", hr, 1e6 / (hr ? hr : 1), held / (hv ? hv : 1)
	printf "  raw gdbstub Z0 stop/continue loop: %8.0f stops/s   (%.0f us per stop; %.2f TB flushes per stop)\n", zr, 1e6 / (zr ? zr : 1), fl / (z0 ? z0 : 1)
	printf "  gdb -batch, breakpoint commands:   %8.0f events/s  (%.0f us per event)\n", gr, 1e6 / (gr ? gr : 1)
	printf "  QEMU translates %d blocks again between two stops (median of %d samples; it flushes them all at each)\n", tbs, tbn
	printf "  ratio hvtrace trap / gdb (events/s): %.2f\n", hr / (gr ? gr : 1)
	printf "  ratio hvtrace trap / raw Z0 loop (events/s): %.2f\n", hr / (zr ? zr : 1)
	printf "  hvtrace attach -p function --probe stub: %8.0f events/s (the guest runs at full speed)\n", st / s
	printf "  ratio stub / trap (events/s): %.0f\n", (st / s) / (hr ? hr : 1)
}'
