#!/bin/bash
# Runs one shell command on real KVM (AMD, nested): Debian's cloud kernel (build/guest, `make guest`)
# boots under QEMU TCG with an SVM CPU model (-cpu EPYC) as L1, loads kvm + kvm_amd and runs COMMAND
# there in / with ./hvtrace, build/guest/* and build/tests/kvm/* at the same relative paths (packed
# into L1's initramfs; nothing is copied back). INT3 does not exit in that L1 (QEMU 7.2 TCG), so only
# stub probes trace there (NESTED_QEMU=1 packs QEMU as well). Usage: scripts/nested-run.sh 'COMMAND ...'. L1's console goes to stdout;
# exits with COMMAND's status, or 125 when L1 did not report one (panic, hang: NESTED_TIMEOUT seconds,
# default 900).
set -euo pipefail

build=${BUILD:-build}
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
kernel=$build/guest/vmlinuz
kver=$(ls "$cache" | sed -n 's/^linux-image-\(.*\)$/\1/p' | head -1)
mods=$cache/linux-image-$kver/lib/modules/$kver/kernel
busybox=$cache/busybox-static/bin/busybox
[ -s "$kernel" ] && [ -d "$mods" ] && [ -x "$busybox" ] || { echo "nested-run: run make guest first" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: $0 'COMMAND'" >&2; exit 2; }

work=$(mktemp -d /tmp/hvt-nested-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,lib,lib64,proc,sys,dev,tmp,build/guest,build/tests/kvm}
cp "$mods/virt/lib/irqbypass.ko" "$mods/arch/x86/kvm/kvm.ko" "$mods/arch/x86/kvm/kvm-amd.ko" "$root/lib/"
cp "$busybox" "$root/bin/"
for a in sh mount insmod poweroff cat grep wc sed head tail echo time date true false env ls; do
	ln -s busybox "$root/bin/$a"
done
cp ./hvtrace "$root/"
cp "$build"/guest/* "$root/build/guest/" 2>/dev/null || true
bins=(./hvtrace)
# NESTED_QEMU=1: QEMU too (as /bin/qemu-system-x86_64, its firmware in /usr/share), to compare
if [ -n "${NESTED_QEMU:-}" ]; then
	q=$(command -v qemu-system-x86_64)
	cp "$q" "$root/bin/"
	bins+=("$q")
	mkdir -p "$root/usr/share"
	cp -rL /usr/share/qemu /usr/share/seabios "$root/usr/share/" 2>/dev/null || true
fi
for t in "$build"/tests/kvm/test_*; do
	[ -x "$t" ] && [ -f "$t" ] && { cp "$t" "$root/build/tests/kvm/"; bins+=("$t"); }
done
for l in $(ldd "${bins[@]}" 2>/dev/null | awk '/=>/ {print $3}' | sort -u); do cp -L "$l" "$root/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
printf '%s\n' "$1" > "$root/command"
cat > "$root/init" <<'INIT'
#!/bin/sh
export PATH=/bin LD_LIBRARY_PATH=/lib HOME=/
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
insmod /lib/irqbypass.ko; insmod /lib/kvm.ko; insmod /lib/kvm-amd.ko
cd /
echo "== nested-run: L1 up after $(cut -d' ' -f1 /proc/uptime) s"
sh /command
echo "== nested-run: status=$?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null) > "$work/initrd.cpio"
timeout "${NESTED_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg,thread=multi -cpu EPYC -smp 2 -m 2048 \
	-kernel "$kernel" -initrd "$work/initrd.cpio" -append "console=ttyS0 quiet" -display none \
	-nodefaults -serial stdio -no-reboot 2>/dev/null | tee "$work/console" || true
st=$(sed -n 's/^== nested-run: status=\([0-9]*\).*/\1/p' "$work/console" | tr -d '\r' | tail -1)
[ -n "$st" ] || { echo "nested-run: L1 reported no status (see its console above)" >&2; exit 125; }
exit "$st"
