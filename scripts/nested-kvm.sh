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
# Tunables: HVT_LANE_SMP (2), HVT_LANE_MEM (MiB, 4096: room for the tests' --mem 3072), HVT_LANE_CPU (EPYC).
# L0 (issue 40): the lane's QEMU, INT3 intercepted as AMD's manual says so that L1's KVM sees INT3 exit
# (scripts/build-lane-qemu.sh, cached in $HVTRACE_CACHE/lane-qemu), when it is there; the machine's
# qemu-system-x86_64 otherwise (INT3 does not exit), or always with HVT_LANE_QEMU=stock. The first
# line of the L1 console log names it.
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
for a in sh mount insmod poweroff cat chroot mkdir echo sleep stty cp ifconfig; do ln -s busybox "$root/bin/$a"; done
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
# L1's own tracefs (record --host records L1's kvm events about the vCPU threads)
mount -t tracefs nodev /new/sys/kernel/tracing 2>/dev/null || true
stty -F /dev/ttyS1 raw -echo
cp /command /new/tmp/hvt-lane-command
echo "hvt-lane: start"
chroot /new /bin/bash /tmp/hvt-lane-command </dev/null >/dev/ttyS1 2>&1
echo "hvt-lane: status \$?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null) >"$work/initrd.cpio"

# One L1 boot; sets $why to the infrastructure failure, empty if COMMAND ran to its end.
status=
boot() {
	why=
	status=
	echo "nested-kvm: L0 $qemu" >"$log"
	"$virtiofsd" --socket-path="$work/vfs.sock" -o source=/ -o sandbox=chroot -o cache=auto -o no_posix_lock \
		-o log_level=err >>"$work/virtiofsd.log" 2>&1 &
	vpid=$!
	for _ in $(seq 50); do [ -S "$work/vfs.sock" ] && break; sleep 0.1; done
	timeout --foreground -k 10 "$lane_timeout" "$qemu" "${qemu_data[@]}" -accel tcg,thread=multi \
		-cpu "${HVT_LANE_CPU:-EPYC}" \
		-smp "${HVT_LANE_SMP:-2}" -m "${HVT_LANE_MEM:-4096}" \
		-object memory-backend-memfd,id=mem,size="${HVT_LANE_MEM:-4096}M",share=on -numa node,memdev=mem \
		-chardev socket,id=vfs,path="$work/vfs.sock" -device vhost-user-fs-pci,chardev=vfs,tag=hostroot \
		-kernel "$kernel" -initrd "$work/initrd.cpio" \
		-append "console=ttyS0 panic=-1 oops=panic quiet" -display none -nodefaults -no-reboot \
		-serial file:"$log" -serial stdio </dev/null 2>>"$work/qemu.err" &
	qpid=$!
	wait "$qpid"
	local rc=$?
	qpid=
	kill "$vpid" 2>/dev/null
	wait "$vpid" 2>/dev/null
	vpid=
	rm -f "$work/vfs.sock"
	status=$(sed -n 's/^hvt-lane: status \([0-9]*\).*/\1/p' "$log" | tail -1)
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
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
