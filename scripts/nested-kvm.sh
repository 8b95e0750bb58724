#!/bin/bash
# The nested lane (issue 14): runs COMMAND on a real kvm_amd. Debian's cloud kernel (build/guest/vmlinuz,
# `make guest`) boots under QEMU TCG with an SVM CPU model (L1), loads kvm + kvm_amd from the cached
# linux-image package and runs COMMAND in this host's file system, shared read-only through virtiofs
# (virtiofsd, QEMU's), the current checkout writable at the same path, /tmp a tmpfs of L1's. COMMAND
# runs with the current directory and the environment variables HVT*, GUEST, BUILD, CMOCKA* and PATH
# of the caller; its stdout and stderr come out together on this script's stdout (L1's second serial
# port). L1's console goes to $HVT_LANE_LOG (default build/nested-kvm.log).
#
# Exit status: COMMAND's. An infrastructure failure (L1 panic, oops or soft lockup, the lane's timeout
# $HVT_LANE_TIMEOUT seconds, default 1800; L1 never reaching COMMAND) is retried once; if it happens
# again the status is 125 with one line "nested-kvm: infrastructure failure: WHY (LOG)" on stderr.
# Status 2 with one line where the lane cannot run here (no QEMU, no TCG, no kernel package).
# Tunables: HVT_LANE_SMP (2), HVT_LANE_MEM (MiB, 4096: room for the tests' --mem 3072), HVT_LANE_CPU (EPYC),
# HVT_LANE_HOLD_VM (1: L1 holds one idle KVM VM for the whole run, see /init; 0: not),
# HVT_LANE_APPEND (more of L1's kernel command line).
# L0 (issue 40): the lane's QEMU, INT3 intercepted as AMD's manual says so that L1's KVM sees INT3 exit
# (scripts/build-lane-qemu.sh, cached in $HVTRACE_CACHE/lane-qemu), when it is there; the machine's
# qemu-system-x86_64 otherwise (INT3 does not exit), or always with HVT_LANE_QEMU=stock. The first
# line of the L1 console log names it.
# Stalls: L1 writes "hvt-lane: alive UPTIME" to its console every 30 s. When the console has been
# silent for $HVT_LANE_STALL seconds (180), L1 has stopped: the script samples L1's vCPUs through L0's
# monitor (RIP with its symbol, CPL, halted or not, three times 2 s apart) and L0's threads (state,
# CPU time), appends that to the console log under "nested-kvm: stall", says whose the stop looks like
# (L0 hung, L1 idle with no timer, L1 spinning in SYMBOL); then an NMI through L0's monitor makes L1
# panic (unknown_nmi_panic) with every CPU's backtrace on its console (panic_print=0x40), and the boot
# ends as an infrastructure failure. Each sample's full registers go to $log.regs.
set -uo pipefail

# --check: only whether the lane can run here (status 0, else 2 and the line saying why).
# --l0: which L0 the lane would use, one line: "lane PATH" (INT3 exits to L1's KVM) or "stock PATH".
[ $# -gt 0 ] || { echo "usage: $0 --check | --l0 | COMMAND [ARG...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
[[ $build == /* ]] || build=$here/$build
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
kernel=$build/guest/vmlinuz
pkg=$(ls -d "$cache"/linux-image-*/ 2>/dev/null | head -1)
kver=$(basename "${pkg%/}")
kver=${kver#linux-image-}
mods=${pkg}lib/modules/$kver/kernel
busybox=$cache/busybox-static/bin/busybox
virtiofsd=$(command -v virtiofsd || ls /usr/lib/qemu/virtiofsd /usr/libexec/virtiofsd 2>/dev/null | head -1)
log=${HVT_LANE_LOG:-$build/nested-kvm.log}
lane_timeout=${HVT_LANE_TIMEOUT:-1800}
lane_stall=${HVT_LANE_STALL:-180}
sysmap=$build/guest/System.map

qemu=qemu-system-x86_64 qemu_data=()
if [ "${HVT_LANE_QEMU:-}" != stock ] && [ -x "$cache/lane-qemu/qemu-system-x86_64" ]; then
	qemu=$cache/lane-qemu/qemu-system-x86_64
	# the machine's data files and firmware, as Debian's build finds them (else QEMU looks beside its binary)
	qemu_data=(-L /usr/share/qemu -L /usr/share/seabios)
fi

if [ "$1" = --l0 ]; then
	[ "$qemu" = qemu-system-x86_64 ] && echo "stock $(command -v qemu-system-x86_64)" || echo "lane $qemu"
	exit 0
fi

skip() { echo "nested-kvm: cannot run here: $*" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64" # its firmware serves both L0s
"$qemu" -accel help 2>/dev/null | grep -qx tcg || skip "QEMU has no TCG ($qemu)"
[ -s "$kernel" ] || skip "no $kernel (make guest)"
[ -n "$pkg" ] && [ -f "$mods/arch/x86/kvm/kvm-amd.ko" ] || skip "no linux-image package with kvm-amd.ko in $cache"
[ -x "$busybox" ] || skip "no $busybox (make guest)"
[ -n "$virtiofsd" ] || skip "no virtiofsd"
[ "$1" != --check ] || exit 0

work=$(mktemp -d /tmp/hvt-nested.XXXXXX)
vpid= qpid=
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null
	[ -n "$vpid" ] && kill "$vpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The initramfs: busybox, the modules, the caller's command and environment, and /init.
root=$work/root
mkdir -p "$root"/{bin,lib,proc,sys,dev,new}
cp "$busybox" "$root/bin/"
for a in sh mount insmod poweroff cat chroot mkdir echo sleep stty cp ifconfig grep; do ln -s busybox "$root/bin/$a"; done
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev \
	drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci fs/fuse/fuse fs/fuse/virtiofs \
	virt/lib/irqbypass arch/x86/kvm/kvm arch/x86/kvm/kvm-amd; do
	cp "$mods/$m.ko" "$root/lib/"
	echo "$(basename "$m").ko" >>"$root/lib/order"
done
{
	env | grep -E '^(HVT[A-Z0-9_]*|GUEST|BUILD|CMOCKA[A-Z0-9_]*|PATH)=' | grep -v '^HVT_LANE_' |
		while IFS= read -r kv; do printf 'export %q\n' "$kv"; done
	printf 'cd %q || exit 126\n' "$PWD"
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} >"$root/command"
cat >"$root/init" <<INIT
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in \$(cat /lib/order); do insmod /lib/\$m || echo "hvt-lane: insmod \$m failed"; done
[ -c /dev/kvm ] || { echo "hvt-lane: no /dev/kvm"; poweroff -f; }
ifconfig lo 127.0.0.1 up
mount -t virtiofs hostroot /new || { echo "hvt-lane: no virtiofs"; poweroff -f; }
mkdir -p /checkout; mount --bind /new$here /checkout
mount -o remount,bind,ro /new
mount -t tmpfs tmpfs /new/tmp; mount -t proc proc /new/proc; mount -t sysfs sysfs /new/sys
mkdir -p /new$here; mount --move /checkout /new$here
mount -t devtmpfs devtmpfs /new/dev; mkdir -p /new/dev/pts; mount -t devpts devpts /new/dev/pts
# One KVM VM held for the whole run (QEMU, no machine, never started). KVM turns the scheduler's
# preempt-notifier static key on at a VM's creation and off with the last VM's end: a jump label in
# __schedule, rewritten through INT3 (text_poke_bp) at every test VM's start and end. L0's TCG has
# been seen to keep executing that INT3 from a stale translation after L1 put the NOP back, and L1's
# kprobe handler then backs up over the "removed" INT3 forever (both vCPUs in exc_int3 and
# __schedule, the bytes there 0f 1f 44 00 00). With one VM always there the key never changes.
[ "${HVT_LANE_HOLD_VM:-1}" = 0 ] || { chroot /new qemu-system-x86_64 -machine none -accel kvm -S -display none \
	-nodefaults -monitor none -serial none </dev/null >/dev/null 2>&1 & echo "hvt-lane: holding a KVM VM"; }
# L1's own tracefs (record --host records L1's kvm events about the vCPU threads)
mount -t tracefs nodev /new/sys/kernel/tracing 2>/dev/null || true
stty -F /dev/ttyS1 raw -echo
# where L1's kernel is (KASLR): the stall report's symbols
echo "hvt-lane: _text \$(grep -m1 ' _text\$' /proc/kallsyms)"
# the heartbeat the script's stall watch reads (L1's timers and scheduler still work)
(while sleep 30; do read up _ </proc/uptime; echo "hvt-lane: alive \$up"; done) &
cp /command /new/tmp/hvt-lane-command
echo "hvt-lane: start"
chroot /new /bin/bash /tmp/hvt-lane-command </dev/null >/dev/ttyS1 2>&1
echo "hvt-lane: status \$?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null) >"$work/initrd.cpio"

# One monitor command to L0 ($work/mon.in/.out, HMP); its output on stdout, at most 5 s.
mon() {
	local line
	exec 7<>"$work/mon.out" 8<>"$work/mon.in" # read-write: neither open waits for L0
	while read -r -t 0.2 -u 7 line; do :; done # what an earlier command left
	echo "$*" >&8
	while read -r -t 5 -u 7 line; do
		line=${line//$'\r'/}
		[[ $line == *$'\e'* ]] && continue # the monitor's echo of the command
		[[ $line == "(qemu)"* ]] && [ -n "${seen:-}" ] && break
		[[ $line == "(qemu)"* ]] && { seen=1; continue; }
		echo "$line"
	done
	unset seen
	exec 7<&- 8>&-
}

# The symbol of a kernel address of L1's, from its System.map and where L1 said its _text is (KASLR):
# "sym+0xoff", or the address.
sym() {
	local a hit text slide=0
	text=$(sed -n 's/^hvt-lane: _text \([0-9a-f]\{16\}\) .*/\1/p' "$log" | head -1)
	[ -n "$text" ] && [ -s "$sysmap" ] &&
		slide=$((16#$text - 16#$(awk '$3 == "_text" { print $1; exit }' "$sysmap")))
	a=$(printf '%016x' "$((16#${1#0x}))" 2>/dev/null) || { echo "$1"; return; }
	[[ $a == ffff* ]] && [ -s "$sysmap" ] || { echo "0x$a"; return; } # user space, or L2's
	a=$(printf '%016x' "$((16#$a - slide))")
	hit=$(awk -v a="$a" '$1 <= a && $2 ~ /^[tTwW]$/ { s = $3; b = $1 } END { if (s != "") print b, s }' "$sysmap")
	[ -n "$hit" ] || { echo "0x$a"; return; }
	printf '%s+0x%x\n' "${hit#* }" "$((16#$a - 16#${hit%% *}))"
}

# Where a vCPU at RIP @1 with CPL @2 is: "L1 SYMBOL" (L1's kernel text, KASLR taken into account),
# "L2 0xRIP" (a kernel address outside L1's text: the nested guest, the vCPU in guest mode), "user 0xRIP".
where() {
	local s
	[ "$2" = 3 ] && { echo "user 0x$1"; return; }
	s=$(sym "$1")
	case $s in
	0x*) echo "L2 $s" ;;
	_etext* | __sched_text_end* | exit_amd_microcode* | *+0x[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]*) echo "L2 0x$1" ;;
	*) echo "L1 $s" ;;
	esac
}

# L1 has been silent for $lane_stall s: what its vCPUs and L0's threads are doing, appended to $log,
# and one line of whose stop it looks like in $stall_why.
stall_report() {
	local i rips=() cpus halted threads cpu0 cpu1 qemu_pid task places=() v
	local -a first last hl
	qemu_pid=$(pgrep -P "$qpid" | head -1)
	{
		echo "nested-kvm: stall: L1's console silent for ${lane_stall}s (last: $(grep -a '^hvt-lane: alive' "$log" | tail -1))"
		echo "nested-kvm: stall: host load $(cut -d' ' -f1-3 /proc/loadavg)"
	} >>"$log"
	cpu0=$(awk '{ s += $14 + $15 } END { print s }' /proc/"$qemu_pid"/task/*/stat 2>/dev/null)
	for i in 1 2 3; do
		cpus=$(mon info registers -a)
		echo "$cpus" | sed "s/^/sample $i: /" >>"$log.regs"
		if [ -z "$cpus" ]; then
			echo "nested-kvm: stall: L0's monitor does not answer" >>"$log"
			break
		fi
		local r c x
		r=$(echo "$cpus" | grep -o 'RIP=[0-9a-f]*' | cut -d= -f2 | tr '\n' ' ')
		c=($(echo "$cpus" | grep -o 'CPL=[0-3]' | cut -d= -f2))
		rips+=("$r")
		halted=$(echo "$cpus" | grep -o 'HLT=[01]' | tr '\n' ' ')
		places=()
		for x in $r; do places+=("$(where "$x" "${c[${#places[@]}]:-0}")"); done
		{
			echo -n "nested-kvm: stall: sample $i:"
			for x in "${places[@]}"; do echo -n " [$x]"; done
			echo " ($halted; GS $(echo "$cpus" | grep -o '^GS =[0-9]* [0-9a-f]*' | cut -d' ' -f3 | tr '\n' ' '))"
		} >>"$log"
		sleep 2
	done
	cpu1=$(awk '{ s += $14 + $15 } END { print s }' /proc/"$qemu_pid"/task/*/stat 2>/dev/null)
	threads=$(for task in /proc/"$qemu_pid"/task/*; do
		echo "$(cut -d' ' -f3 "$task/stat" 2>/dev/null)/$(cat "$task/wchan" 2>/dev/null)"; done | sort | uniq -c | tr -s ' \n' ' ')
	echo "nested-kvm: stall: L0 threads (count state/wchan):$threads; L0 CPU ticks over the samples $((cpu1 - cpu0))" >>"$log"
	local vm
	vm=$(mon info status)
	echo "nested-kvm: stall: L0 says: $vm" >>"$log"
	if [ ${#rips[@]} -eq 0 ]; then
		stall_why="L0 hung (its monitor does not answer)"
	elif [[ $vm != *running* ]]; then
		stall_why="L0 paused L1 ($vm)"
	else
		# each vCPU: where it is, and whether it moved over the samples
		first=(${rips[0]}) last=(${rips[${#rips[@]} - 1]}) hl=($halted)
		stall_why=
		for v in "${!last[@]}"; do
			local state=moving
			[ "${hl[$v]}" = HLT=1 ] && state=halted
			[ "$state" = moving ] && [ "${first[$v]}" = "${last[$v]}" ] && state="at one instruction"
			# the bytes there, through vCPU v's view (the monitor's x)
			mon "cpu $v" >/dev/null
			echo "nested-kvm: stall: vCPU $v at ${places[$v]}: $(mon "x/16xb 0x${last[$v]}" | head -2 | tr -s ' \n' ' ')" >>"$log"
			stall_why+="vCPU $v ${state} in ${places[$v]}; "
		done
		case $stall_why in
		*"at one instruction in L2"*) stall_why+="a vCPU stays in L2 and L1 never gets it back (L0's SVM or interrupt emulation)" ;;
		*"moving in L1"*) stall_why+="L1's kernel spins (L1's, or L0's emulation under it)" ;;
		*) [ $((cpu1 - cpu0)) -lt 50 ] && stall_why+="L0 idle: no timer or interrupt wakes L1 (L0's)" || stall_why+="not classified" ;;
		esac
	fi
	echo "nested-kvm: stall: $stall_why" >>"$log"
	# L1's own view: every CPU's backtrace, as it panics on the NMI (its console, into $log)
	if [ ${#rips[@]} -gt 0 ]; then
		mon nmi >/dev/null
		echo "nested-kvm: stall: NMI sent: L1's backtraces follow, if it can print them" >>"$log"
		sleep 15
	fi
}

# One L1 boot; sets $why to the infrastructure failure, empty if COMMAND ran to its end.
status=
boot() {
	why=
	status=
	echo "nested-kvm: L0 $qemu" >"$log" # L0 appends L1's console to it
	"$virtiofsd" --socket-path="$work/vfs.sock" -o source=/ -o sandbox=chroot -o cache=auto -o no_posix_lock \
		-o log_level=err >>"$work/virtiofsd.log" 2>&1 &
	vpid=$!
	for _ in $(seq 50); do [ -S "$work/vfs.sock" ] && break; sleep 0.1; done
	rm -f "$work/mon.in" "$work/mon.out" "$work/stalled" "$log.regs"
	mkfifo "$work/mon.in" "$work/mon.out"
	timeout --foreground -k 10 "$lane_timeout" "$qemu" "${qemu_data[@]}" -accel tcg,thread=multi \
		-cpu "${HVT_LANE_CPU:-EPYC}" \
		-smp "${HVT_LANE_SMP:-2}" -m "${HVT_LANE_MEM:-4096}" \
		-object memory-backend-memfd,id=mem,size="${HVT_LANE_MEM:-4096}M",share=on -numa node,memdev=mem \
		-chardev socket,id=vfs,path="$work/vfs.sock" -device vhost-user-fs-pci,chardev=vfs,tag=hostroot \
		-kernel "$kernel" -initrd "$work/initrd.cpio" \
		-append "console=ttyS0 panic=-1 oops=panic quiet ${HVT_LANE_APPEND:-} unknown_nmi_panic panic_print=0x40" -display none -nodefaults -no-reboot \
		-chardev pipe,id=mon0,path="$work/mon" -mon chardev=mon0,mode=readline \
		-chardev file,id=con0,path="$log",append=on -serial chardev:con0 -serial stdio </dev/null 2>>"$work/qemu.err" &
	qpid=$!
	# the stall watch: L1's console (its heartbeat) silent for $lane_stall s ends the boot
	(
		while sleep 10; do
			kill -0 "$qpid" 2>/dev/null || exit 0
			[ $(($(date +%s) - $(stat -c %Y "$log"))) -ge "$lane_stall" ] || continue
			stall_report
			echo "$stall_why" >"$work/stalled"
			pkill -TERM -P "$qpid"
			exit 0
		done
	) &
	local wpid=$!
	wait "$qpid"
	local rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	qpid=
	kill "$vpid" 2>/dev/null
	wait "$vpid" 2>/dev/null
	vpid=
	rm -f "$work/vfs.sock"
	status=$(sed -n 's/^hvt-lane: status \([0-9]*\).*/\1/p' "$log" | tail -1)
	if [ -s "$work/stalled" ]; then
		why="L1 stopped, its console silent for ${lane_stall}s: $(cat "$work/stalled")"
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		why="lane timeout (${lane_timeout}s)"
	elif grep -q 'Kernel panic' "$log"; then
		why="L1 panic: $(grep -m1 -o 'Kernel panic.*' "$log" | tr -d '\r')"
	elif grep -q 'soft lockup' "$log" && [ "$status" != 0 ]; then
		why="L1 soft lockup: $(grep -m1 -o 'soft lockup.*' "$log" | tr -d '\r')"
	elif [ -z "$status" ]; then
		if grep -q '^hvt-lane: start' "$log"; then
			why="L1 ended before COMMAND did (QEMU status $rc)"
		else
			why="L1 never reached COMMAND: $(grep -m1 '^hvt-lane: ' "$log" || echo "QEMU status $rc")"
		fi
	fi
	[ -s "$work/qemu.err" ] && [ -n "$why" ] && why="$why; qemu: $(tail -1 "$work/qemu.err")"
}

boot
if [ -n "$why" ]; then
	cp "$log" "$log.1"
	echo "nested-kvm: retrying once: $why (L1 console: $log.1)" >&2
	: >"$work/qemu.err"
	boot
fi
if [ -n "$why" ]; then
	echo "nested-kvm: infrastructure failure: $why (L1 console: $log)" >&2
	exit 125
fi
exit "$status"
