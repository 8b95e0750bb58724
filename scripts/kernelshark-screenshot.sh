#!/bin/sh
# Draws docs/formats.md's KernelShark picture (docs/img/kernelshark-linux-guest.png): records the Linux test
# guest's file workload (stub probes on vfs_*, ksys_*, do_sys_*, *_openat*; boot to power-off under
# QEMU TCG) to trace.dat, opens it in Debian's KernelShark on a virtual X display (Xvfb) as an
# unprivileged user (as root KernelShark first asks to confirm) and takes the screen with ImageMagick.
# Needs: xvfb, kernelshark, imagemagick, the test guest (make guest). Run as root from the checkout.
#   kernelshark-screenshot.sh [--trixie [--host]] [OUT]
# --trixie: Debian 13's KernelShark 2.4, its Xvfb and ImageMagick, run chrooted in the trixie root of
# scripts/trixie-chroot.sh (installed there if missing; /proc and /dev mounted there meanwhile); default
# OUT docs/img/kernelshark-2.4-linux-guest.png.
# --host (after --trixie): record --host, and KernelShark opens the host's file with the guest's
# appended (-a): both streams on one timeline; default OUT docs/img/kernelshark-2.4-host-guest.png.
set -eu
cd "$(dirname "$0")/.."
trixie= host=
if [ "${1:-}" = --trixie ]; then
	trixie=$(scripts/trixie-chroot.sh kernelshark xvfb imagemagick)
	shift
fi
if [ -n "$trixie" ] && [ "${1:-}" = --host ]; then
	host=--host
	shift
fi
if [ -n "$host" ]; then
	out=${1:-docs/img/kernelshark-2.4-host-guest.png}
else
	out=${1:-docs/img/kernelshark${trixie:+-2.4}-linux-guest.png}
fi
work=$(mktemp -d "$trixie/tmp/kshot.XXXXXX")
in=${work#"$trixie"} # $work as the tools see it
chmod 755 "$work"
run() { if [ -n "$trixie" ]; then chroot "$trixie" "$@"; else "$@"; fi; }
# each of Xvfb and KernelShark (runuser's child) in a process group of its own, ended whole
cleanup() {
	for g in $ks $xvfb; do kill -- "-$g" 2>/dev/null || true; done
	sleep 1
	rm -rf "$work"
	if [ -n "$trixie" ]; then umount "$trixie/dev" "$trixie/proc" 2>/dev/null || true; fi
}
ks= xvfb=
trap cleanup EXIT
./hvtrace record --qemu --kernel build/guest/vmlinuz --initrd build/guest/initramfs.cpio.gz \
	--probe stub -p function -l 'vfs_*' -l 'ksys_*' -l 'do_sys_*' -l '*_openat*' \
	--console /dev/null --timeout 300 $host -o "$work/linux.dat"
if [ -n "$trixie" ]; then
	mount -t proc proc "$trixie/proc"
	mount --bind /dev "$trixie/dev"
fi
run sh -c 'id kshot >/dev/null 2>&1 || useradd -m kshot'
chmod 644 "$work/linux.dat"
files="$in/linux.dat"
if [ -n "$host" ]; then
	chmod 644 "$work/linux-host.dat"
	files="$in/linux-host.dat -a $in/linux.dat"
fi
if [ -n "$trixie" ]; then set -- chroot "$trixie"; else set --; fi
setsid "$@" Xvfb :77 -screen 0 1280x800x24 >/dev/null 2>&1 &
xvfb=$!
sleep 2
setsid "$@" runuser -u kshot -- env DISPLAY=:77 HOME=/home/kshot kernelshark -geometry 1200x720+0+0 $files >/dev/null 2>&1 &
ks=$!
sleep 15
run env DISPLAY=:77 import -window root "$in/shot.png"
run convert "$in/shot.png" -trim +repage "$in/out.png"
cp "$work/out.png" "$out"
echo "$out"
