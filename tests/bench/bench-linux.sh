#!/bin/bash
# make bench, Linux part: the guest's own ftrace function tracer (tracefs, in the test initramfs),
# hvtrace's stub probes and hvtrace's trap probes on the same workload (BENCH_ROUNDS rounds of the
# initramfs's file workload, hvt.bench=N), each in a fresh `run --qemu` boot under TCG, side by side in one
# run. The window between the guest's "bench start" and "bench end" lines is timed on the host clock
# (TCG's guest clock stands still while the gdbstub holds the VM, so the guest cannot time trap probes).
# BENCH_CLOCK=guest (the default for an arm64 guest) times it with the guest's own uptime, which those
# lines carry, plus the time hvtrace held the VM for its drain (--stats' paused-us): the console lines
# hvtrace relays can reach the host together when its drain takes every function's records under
# TCG on 2 shared cores, where the guest's clock (the virtual counter, QEMU's virtual clock) runs with
# the host's while the VM runs.
# Per-event cost = (window - untraced window) / events, with the event count from the guest's ftrace run
# of the same functions (the workload makes the same calls whoever traces them).
#
# BENCH_VMM=kvm (run it in the nested lane: scripts/nested-kvm.sh env BENCH_VMM=kvm
# tests/bench/bench-linux.sh, or make bench-nested): the same windows with the kernel booted by
# hvtrace's own VMM (`run --kernel`) on real KVM, stub probes only (INT3 does not exit there): the
# per-event cost of stub probes on a few functions and on every function, against the guest's own
# ftrace.
set -euo pipefail
guest=${1:-build/guest}
rounds=${BENCH_ROUNDS:-20}
vmm=${BENCH_VMM:-qemu}
# an arm64 guest (make guest-arm64: build/guest/arm64-SERIES) boots its Image under
# qemu-system-aarch64 (run --qemu learns the architecture from it)
kimage=$guest/vmlinuz
[ -f "$guest/Image" ] && kimage=$guest/Image
if [ "$vmm" = kvm ]; then
	boot=(--kernel "$guest/vmlinuz" --initrd "$guest/initramfs.cpio.gz")
	kaslr=""
elif [ -f "$guest/System.map" ]; then
	boot=(--qemu --kernel "$guest/vmlinuz" --initrd "$guest/initramfs.cpio.gz"
		--system-map "$guest/System.map")
	kaslr="nokaslr "
else
	# a kernel Debian ships no System.map for (make guest KERNEL=6.12, 7.3, ...): symbols from the
	# guest's own kallsyms, KASLR on
	boot=(--qemu --kernel "$kimage" --initrd "$guest/initramfs.cpio.gz")
	kaslr=""
fi
[ -f "$guest/vmlinuz" ] || { echo "bench-linux: no kernel in $guest (make guest KERNEL=...)" >&2; exit 1; }
kernel_name=$(file -b "$guest/vmlinuz" | sed -n 's/.*version \([^ ,]*\).*/\1/p')
clock=${BENCH_CLOCK:-host}
[ -f "$guest/Image" ] && clock=${BENCH_CLOCK:-guest}
# arm64: file(1) names no version in an Image; fetch-guest.sh's config names it
[ -n "$kernel_name" ] || kernel_name=$(sed -n 's/^# Linux\/arm64 \([^ ]*\) Kernel Configuration$/arm64 \1/p' "$guest/config" 2>/dev/null)
few=vfs_read,vfs_write,do_sys_openat2,vfs_open
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# one NAME APPEND [hvtrace options...]: sets $window (seconds), $events (guest ftrace events or 0) and
# $flost (events the guest's ftrace overwrote: its buffers' overrun)
one() {
	local name=$1 append=$2 con=$work/$1.con pid t0 t1
	shift 2
	rm -f "$con"
	"${HVTRACE:-./hvtrace}" run "${boot[@]}" --append "${kaslr}hvt.bench=$rounds $append" \
		--timeout 900 -o /dev/null --console "$con" --stats "$@" 2> "$work/$name.err" &
	pid=$!
	until grep -q "bench start" "$con" 2>/dev/null; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.005
	done
	t0=$(date +%s.%N)
	until grep -q "bench end" "$con" 2>/dev/null; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.005
	done
	t1=$(date +%s.%N)
	if ! wait $pid || ! grep -q "bench end" "$con"; then
		echo "bench-linux: $name failed" >&2
		cat "$work/$name.err" >&2
		echo "bench-linux: the guest's console, last 40 lines:" >&2
		tail -n 40 "$con" >&2
		exit 1
	fi
	window=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	if [ "$clock" = guest ]; then
		local g0 g1 held
		g0=$(sed -n 's/.*bench start \([0-9.]*\).*/\1/p' "$con")
		g1=$(sed -n 's/.*bench end \([0-9.]*\).*/\1/p' "$con")
		held=$(sed -n 's/.*stats: stub probes .* paused-us \([0-9]*\).*/\1/p' "$work/$name.err")
		if [ -z "$g0" ] || [ -z "$g1" ]; then
			echo "bench-linux: $name: the guest's bench lines carry no uptime (an initramfs older than scripts/guest-init.sh: make guest-arm64)" >&2
			exit 1
		fi
		window=$(awk -v a="$g0" -v b="$g1" -v h="${held:-0}" 'BEGIN { printf "%.3f", b - a + h / 1e6 }')
	fi
	events=$(sed -n 's/.*bench ftrace-events \([0-9]*\).*/\1/p' "$con")
	events=${events:-0}
	flost=$(sed -n 's/.*bench ftrace-lost \([0-9]*\).*/\1/p' "$con")
	flost=${flost:-0}
}

l_few=()
for f in ${few//,/ }; do l_few+=(-l "$f"); done
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }

if [ "$vmm" = kvm ]; then
	# a few functions: every function traced from boot on takes L1's host side (under TCG) too long
	# stub_idle: hvtrace's threads (drain, writer, the backpressure poll) running, probing only
	# start_kernel, which never runs in the window: what stub_few costs beyond it is the stubs'
	t_base="" t_ff="" t_sf="" t_si=""
	for _ in $(seq "${BENCH_REPEAT:-2}"); do
		one base "" -p nop
		t_base=$(min "$t_base" "$window")
		one ftrace_few "hvt.ftrace=$few" -p nop
		t_ff=$(min "$t_ff" "$window") e_few=$events
		one stub_idle "" -p function --probe stub -l start_kernel
		t_si=$(min "$t_si" "$window")
		one stub_few "" -p function --probe stub "${l_few[@]}"
		t_sf=$(min "$t_sf" "$window")
	done
	records=$(sed -n 's/.*stats: stub probes [0-9]* records \([0-9]*\) .*/\1/p' "$work/stub_few.err")
	awk -v r="$rounds" -v b="$t_base" -v ff="$t_ff" -v sf="$t_sf" -v si="$t_si" -v ef="$e_few" \
		-v few="$few" -v rec="${records:-0}" 'BEGIN {
	printf "hvtrace bench (Linux guest, hvtrace'"'"'s own VMM on KVM): %d rounds of the file workload, window timed on the host\n", r
	printf "  untraced window: %.3f s; with hvtrace'"'"'s threads running and no event in the window: %.3f s\n", b, si
	cf = (ff - b) / ef; cs = (sf - si) / ef
	printf "  %s: %d calls in the window (the guest'"'"'s ftrace count), %d records in the stub run (boot included)\n", few, ef, rec
	printf "    guest ftrace function tracer %8.3f s  %9.3f us/event  (against the untraced window)\n", ff, 1e6 * cf
	printf "    hvtrace stub probes          %8.3f s  %9.3f us/event  (against the idle-threads window)\n", sf, 1e6 * cs
	printf "    ratio stub / guest ftrace (per event): %.2f\n", cs / cf
}'
	exit 0
fi

# BENCH_PARTS=entry: a stub detour (do_syscall_64, which has no fentry site) against fentry stub
# probes (__x64_sys_read and __x64_sys_write), per event, on a syscall-dense workload (dd's one-byte
# reads and writes: one event of each per syscall), interleaved windows, each one's shortest
if [ "${BENCH_PARTS:-all}" = entry ]; then
	rounds=${BENCH_ROUNDS:-10}
	t_base="" t_det="" t_fen=""
	srec() { sed -n 's/.*stats: stub probes [0-9]* records \([0-9]*\) .*/\1/p' "$work/$1.err"; }
	for _ in $(seq "${BENCH_REPEAT:-3}"); do
		kaslr_save=$kaslr
		kaslr="${kaslr_save}hvt.bench_work=syscalls "
		one base "" -p nop
		t_base=$(min "$t_base" "$window")
		one detour "" -p function --probe stub -l do_syscall_64
		grep -q "through a stub detour" "$work/detour.err" ||
			{ echo "bench-linux: do_syscall_64 got no detour:" >&2; cat "$work/detour.err" >&2; exit 1; }
		t_det=$(min "$t_det" "$window") r_det=$(srec detour)
		one fentry "" -p function --probe stub -l __x64_sys_read -l __x64_sys_write
		t_fen=$(min "$t_fen" "$window") r_fen=$(srec fentry)
		kaslr=$kaslr_save
	done
	awk -v kn="${kernel_name:-?}" -v b="$t_base" -v d="$t_det" -v f="$t_fen" -v rd="$r_det" \
		-v rf="$r_fen" 'BEGIN {
	cd = (d - b) / rd; cf = (f - b) / rf
	printf "%s: untraced %.3f s; detour (do_syscall_64) %.3f s, %d events, %.3f us/event; fentry stub (__x64_sys_read/write) %.3f s, %d events, %.3f us/event; ratio %.2f\n", kn, b, d, rd, 1e6 * cd, f, rf, 1e6 * cf, cd / cf
}'
	exit 0
fi

# BENCH_PARTS=profile (issue 39): the function profiler on every function counted in the guest
# (--profile -p nop -l '*' --probe stub: no record) against the guest's own function_graph tracer on
# every function, the same workload, BENCH_REPEAT (3) interleaved windows each, each one's median:
# the ratio of what each adds to the untraced window (issue 39's bound: at most 0.3)
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if [ "${BENCH_PARTS:-all}" = profile ]; then
	t_base="" t_graph="" t_prof=""
	# every function counted from the kernel's first traced call on slows its early boot under TCG
	# on a loaded host enough that the IO-APIC timer check can fail (a panic); it checks nothing
	# of the bench window
	kaslr="${kaslr}no_timer_check "
	for _ in $(seq "${BENCH_REPEAT:-3}"); do
		one base "" -p nop
		t_base="$t_base $window"
		one graph_all "hvt.ftrace=all hvt.ftrace_tracer=function_graph" -p nop
		t_graph="$t_graph $window" e_graph=$events
		one profile_all "" -p nop -l '*' --probe stub --profile
		t_prof="$t_prof $window"
	done
	t_base=$(median "$t_base") t_graph=$(median "$t_graph") t_prof=$(median "$t_prof")
	recs=$(sed -n 's/.*stats: stub probes [0-9]* records \([0-9]*\) .*/\1/p' "$work/profile_all.err")
	sites=$(sed -n 's/.*stats: stub counting sites \([0-9]*\) .*/\1/p' "$work/profile_all.err")
	awk -v kn="${kernel_name:-?}" -v r="$rounds" -v b="$t_base" -v g="$t_graph" -v p="$t_prof" \
		-v eg="$e_graph" -v rec="${recs:-?}" -v ns="${sites:-?}" 'BEGIN {
	printf "profile: %s, %d rounds, medians of interleaved windows: untraced %.3f s; guest function_graph on every function %.3f s (%d events); hvtrace --profile -p nop --probe stub on every function %.3f s (%s counting sites, %s records); ratio profile / function_graph (time added): %.2f\n", kn, r, b, g, eg, p, ns, rec, (p - b) / (g - b)
}'
	exit 0
fi

# BENCH_PARTS=few (make bench-arm64): stub probes on vfs_read and vfs_write against the guest's own
# ftrace function tracer on the same two, per event, on the syscall-dense workload (dd's one-byte
# reads and writes: one event of each per syscall; the event count is the guest's ftrace count),
# interleaved windows, each one's shortest. The stub's cost is taken against a window with hvtrace's
# threads running and no event in it (stub_idle: start_kernel probed), as the KVM part does: under
# TCG on shared cores what hvtrace's threads take from QEMU is not a per-event cost. (Stub probes on
# every function work on arm64 too since docs/arm64.md's What is left 4: BENCH_PARTS=stub there.)
if [ "${BENCH_PARTS:-all}" = few ]; then
	two=vfs_read,vfs_write
	kaslr="${kaslr}hvt.bench_work=syscalls "
	t_base="" t_ff="" t_sf="" t_si=""
	for _ in $(seq "${BENCH_REPEAT:-2}"); do
		one base "" -p nop
		t_base=$(min "$t_base" "$window")
		one ftrace_two "hvt.ftrace=$two" -p nop
		t_ff=$(min "$t_ff" "$window") e_two=$events
		one stub_idle "" -p function --probe stub -l start_kernel
		t_si=$(min "$t_si" "$window")
		one stub_two "" -p function --probe stub -l vfs_read -l vfs_write
		t_sf=$(min "$t_sf" "$window")
	done
	sfield() { sed -n "s/.*stats: stub probes .* $1 \([0-9]*\).*/\1/p" "$work/stub_two.err"; }
	lost=$(($(sfield lost) + $(sfield guest-reported-lost)))
	records=$(sed -n 's/.*stats: stub probes [0-9]* records \([0-9]*\) .*/\1/p' "$work/stub_two.err")
	awk -v kn="${kernel_name:-?}" -v r="$rounds" -v b="$t_base" -v ff="$t_ff" -v sf="$t_sf" \
		-v si="$t_si" -v ef="$e_two" -v two="$two" -v rec="${records:-0}" -v lost="$lost" 'BEGIN {
	cf = (ff - b) / ef; cs = (sf - si) / ef
	printf "%s: %d rounds of dd'"'"'s one-byte reads and writes; %s: %d calls in the window (the guest'"'"'s ftrace count)\n", kn, r, two, ef
	printf "  untraced %.3f s; hvtrace'"'"'s threads running, no event in the window %.3f s\n", b, si
	printf "  guest ftrace function tracer %.3f s  %.3f us/event (against the untraced window)\n", ff, 1e6 * cf
	cu = (sf - b) / ef
	printf "  hvtrace stub probes          %.3f s  %.3f us/event (against the idle-threads window; %d records, boot included; lost %d)\n", sf, 1e6 * cs, rec, lost
	printf "                                        %.3f us/event (against the untraced window)\n", 1e6 * cu
	printf "  ratio stub / guest ftrace (per event): %.2f (against the untraced window: %.2f)\n", cs / cf, cu / cf
}'
	exit 0
fi

# the cheap-per-event runs twice, interleaved, keeping each one's shortest window (machine noise only
# ever adds time)
t_base="" t_ftrace_all="" t_stub_all=""
for _ in $(seq "${BENCH_REPEAT:-2}"); do
	one base "" -p nop
	t_base=$(min "$t_base" "$window")
	one ftrace_all "hvt.ftrace=all" -p nop
	t_ftrace_all=$(min "$t_ftrace_all" "$window") e_all=$events f_all=$flost
	one stub_all "" -p function --probe stub
	t_stub_all=$(min "$t_stub_all" "$window")
done
stub_probes=$(sed -n 's/.*stats: stub probes \([0-9]*\) .*/\1/p' "$work/stub_all.err")
# stub probes: lost = what the host knows lost + what the guest counted; backpressure's VM holds
sfield() { sed -n "s/.*stats: stub probes .* $1 \([0-9]*\).*/\1/p" "$work/stub_all.err"; }
stub_lost=$(($(sfield lost) + $(sfield guest-reported-lost)))
stub_pauses=$(sfield pauses) stub_paused=$(sfield paused-us)
# BENCH_PARTS=stub: the stub-against-ftrace part alone (trying a change to the stub)
if [ "${BENCH_PARTS:-all}" = stub ]; then
	stub_records=$(sed -n 's/.*stats: stub probes [0-9]* records \([0-9]*\) .*/\1/p' "$work/stub_all.err")
	awk -v kn="${kernel_name:-?}" -v b="$t_base" -v fa="$t_ftrace_all" -v sa="$t_stub_all" -v ea="$e_all" \
		-v lost="$stub_lost" -v r="$rounds" -v clk="$clock" -v rep="${BENCH_REPEAT:-2}" \
		-v np="${stub_probes:-0}" -v rec="${stub_records:-0}" -v pauses="${stub_pauses:-0}" 'BEGIN {
	ca = (fa - b) / ea; cs = (sa - b) / ea
	printf "%s: every function, %d rounds, window timed on the %s clock, each the shortest of %d: untraced %.3f s, guest ftrace %.3f s (%d events, %.3f us/event), hvtrace stub probes %.3f s (%d sites, %d records, %.3f us/event, lost %d, VM held %d times), ratio stub / guest ftrace (per event) %.2f\n", kn, r, clk, rep, b, fa, ea, 1e6 * ca, sa, np, rec, 1e6 * cs, lost, pauses, cs / ca
}'
	exit 0
fi
# trap probes cost milliseconds each through the gdbstub: a few functions only
one ftrace_few "hvt.ftrace=$few" -p nop
e_few=$events
one trap_few "" -p function --probe trap "${l_few[@]}"
t_trap_few=$window
trap_stops=$(sed -n 's/.* stops \([0-9]*\) hits .*/\1/p' "$work/trap_few.err")
trap_held=$(sed -n 's/.* held-us \([0-9]*\).*/\1/p' "$work/trap_few.err")

awk -v kn="${kernel_name:-?}" -v r="$rounds" -v b="$t_base" -v tf="$t_trap_few" -v fa="$t_ftrace_all" -v sa="$t_stub_all" \
	-v ef="$e_few" -v ea="$e_all" -v np="$stub_probes" -v lost="$stub_lost" -v few="$few" \
	-v flost="$f_all" -v sp="$stub_pauses" -v spu="$stub_paused" \
	-v ts="${trap_stops:-0}" -v th="${trap_held:-0}" 'BEGIN {
	printf "hvtrace bench (Linux guest %s, QEMU TCG): %d rounds of the file workload, window timed on the host\n", kn, r
	printf "  untraced window: %.3f s\n", b
	printf "  every traceable function (%d stub probes; %d calls in the window, counted by the guest'"'"'s ftrace):\n", np, ea
	ca = (fa - b) / ea; cs = (sa - b) / ea
	printf "    guest ftrace function tracer %8.3f s  %9.3f us/event  %9.0f events/s  lost %d (overrun, 4096 KB/cpu)\n", fa, 1e6 * ca, ea / fa, flost
	printf "    hvtrace stub probes          %8.3f s  %9.3f us/event  %9.0f events/s  lost %d (backpressure: %d pauses, %.3f s)\n", sa, 1e6 * cs, ea / sa, lost, sp, spu / 1e6
	printf "    ratio stub / guest ftrace (per event): %.2f\n", cs / ca
	ct = (tf - b) / ef
	printf "  trap probes on %s (%d calls in the window):\n", few, ef
	printf "    hvtrace trap probes          %8.3f s  %9.1f us/event\n", tf, 1e6 * ct
	printf "    of which hvtrace held the VM %.0f us per stop (%d stops); the rest is QEMU'"'"'s: every debug stop\n", th / (ts ? ts : 1), ts
	printf "    flushes its whole TCG translation cache, and the guest'"'"'s code is translated again until the next hit\n"
	printf "    ratio trap / stub (per event): %.0f   trap / guest ftrace: %.0f\n", ct / cs, ct / ca
}'

# Lossless recording (issues 12, 13): the whole session (boot to power-off) with every traceable
# function stub-probed at the default buffers, as text to /dev/null and as trace.dat (`record`), both
# with backpressure (the default), and as text with --no-backpressure, side by side: records taken,
# lost (host + guest-reported), host-ring stalls, VM holds, records per second of session wall time.
whole() {
	local name=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	"$@" --qemu --kernel "$guest/vmlinuz" --initrd "$guest/initramfs.cpio.gz" --probe stub \
		-p function --console /dev/null --timeout 900 --stats 2>"$work/$name.err" >/dev/null ||
		{ echo "bench-linux: $name failed" >&2; cat "$work/$name.err" >&2; exit 1; }
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	line=$(grep "stats: stub probes" "$work/$name.err")
}
whole text "${HVTRACE:-./hvtrace}" run -o /dev/null
t_text=$secs l_text=$line
whole lossy "${HVTRACE:-./hvtrace}" run -o /dev/null --no-backpressure
t_lossy=$secs l_lossy=$line
whole record "${HVTRACE:-./hvtrace}" record -o "$work/all.dat"
t_rec=$secs l_rec=$line
dat_bytes=$(stat -c %s "$work/all.dat")
field() { sed -n "s/.* $2 \([0-9]*\).*/\1/p" <<<"$1"; }
awk -v tt="$t_text" -v tr="$t_rec" -v tl="$t_lossy" -v bytes="$dat_bytes" \
	-v pt="$(field "$l_text" pauses)" -v ut="$(field "$l_text" paused-us)" \
	-v pr="$(field "$l_rec" pauses)" -v ur="$(field "$l_rec" paused-us)" \
	-v rl="$(field "$l_lossy" records)" -v ll="$(field "$l_lossy" lost)" \
	-v gl="$(field "$l_lossy" guest-reported-lost)" -v sl="$(field "$l_lossy" host-ring-stalls)" \
	-v rt="$(field "$l_text" records)" -v lt="$(field "$l_text" lost)" \
	-v gt="$(field "$l_text" guest-reported-lost)" -v st="$(field "$l_text" host-ring-stalls)" \
	-v rr="$(field "$l_rec" records)" -v lr="$(field "$l_rec" lost)" \
	-v gr="$(field "$l_rec" guest-reported-lost)" -v sr="$(field "$l_rec" host-ring-stalls)" 'BEGIN {
	printf "  whole session, every traceable function, stub probes, default buffers:\n"
	printf "    run -o /dev/null (text)   %8.3f s  %9d records  %9.0f records/s  lost %d + guest-reported %d (%.3f%%)  host-ring stalls %d  pauses %d (%.3f s)\n", tt, rt, rt / tt, lt, gt, 100 * (lt + gt) / (rt + lt + gt), st, pt, ut / 1e6
	printf "    record -o trace.dat       %8.3f s  %9d records  %9.0f records/s  lost %d + guest-reported %d (%.3f%%)  host-ring stalls %d  pauses %d (%.3f s)  (%.0f MB)\n", tr, rr, rr / tr, lr, gr, 100 * (lr + gr) / (rr + lr + gr), sr, pr, ur / 1e6, bytes / 1e6
	printf "    run, --no-backpressure    %8.3f s  %9d records  %9.0f records/s  lost %d + guest-reported %d (%.3f%%)  host-ring stalls %d\n", tl, rl, rl / tl, ll, gl, 100 * (ll + gl) / (rl + ll + gl), sl
	printf "    ratio record / text (records/s): %.2f\n", (rr / tr) / (rt / tt)
}'
