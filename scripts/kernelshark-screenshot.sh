#!/bin/sh
# Draws docs/formats.md's KernelShark picture (docs/img/kernelshark-linux-guest.png): records the Linux test
# guest's file workload (stub probes on vfs_*, ksys_*, do_sys_*, *_openat*; boot to power-off under
# QEMU TCG) to trace.dat, opens it in Debian's KernelShark on a virtual X display (Xvfb) as an
# unprivileged user (as root KernelShark first asks to confirm) and takes the screen with ImageMagick.
# Needs: xvfb, kernelshark, imagemagick, the test guest (make guest). Run as root from the checkout.
set -eu
cd "$(dirname "$0")/.."
out=${1:-docs/img/kernelshark-linux-guest.png}
work=$(mktemp -d /tmp/kshot.XXXXXX)
chmod 755 "$work"
trap 'kill $ks $xvfb 2>/dev/null || true; rm -rf "$work"' EXIT
./hvtrace record --qemu --kernel build/guest/vmlinuz --initrd build/guest/initramfs.cpio.gz \
	--probe stub -p function -l 'vfs_*' -l 'ksys_*' -l 'do_sys_*' -l '*_openat*' \
	--console /dev/null --timeout 300 -o "$work/linux.dat"
id kshot >/dev/null 2>&1 || useradd -m kshot
chmod 644 "$work/linux.dat"
Xvfb :77 -screen 0 1280x800x24 >/dev/null 2>&1 &
xvfb=$!
sleep 2
runuser -u kshot -- env DISPLAY=:77 HOME=/home/kshot kernelshark "$work/linux.dat" >/dev/null 2>&1 &
ks=$!
sleep 15
DISPLAY=:77 import -window root "$work/shot.png"
convert "$work/shot.png" -trim +repage "$out"
echo "$out"
