#!/bin/bash
# Runs embedded-VMM test binaries on real KVM (AMD, nested): Debian's cloud kernel (build/guest, `make
# guest`) boots under QEMU TCG with an SVM CPU model (-cpu EPYC), loads kvm_amd and runs each test there
# with ./hvtrace and the test guests. INT3 is not intercepted on that host (QEMU 7.2 TCG checks SVM's
# INTn intercept, not #BP), and a triple fault resets the vCPU: what the INT3 check and the fault report
# are for. Usage: scripts/nested-kvm-tests.sh build/tests/kvm/test_kvm_int3_check ... (built first).
# Prints the guest's console; exit status 0 if every test binary passed. Takes about a minute.
set -euo pipefail

build=${BUILD:-build}
kernel=$build/guest/vmlinuz
kver=$(ls /var/cache/hvtrace | sed -n 's/^linux-image-\(.*\)$/\1/p' | head -1)
mods=${HVTRACE_CACHE:-/var/cache/hvtrace}/linux-image-$kver/lib/modules/$kver/kernel
busybox=${HVTRACE_CACHE:-/var/cache/hvtrace}/busybox-static/bin/busybox
[ -s "$kernel" ] && [ -d "$mods" ] && [ -x "$busybox" ] || { echo "nested-kvm-tests: run make guest first" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: $0 TEST_BINARY..." >&2; exit 2; }

work=$(mktemp -d /tmp/hvt-nested.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,lib,lib64,guest,tests,proc,sys,dev,tmp}
cp "$mods/virt/lib/irqbypass.ko" "$mods/arch/x86/kvm/kvm.ko" "$mods/arch/x86/kvm/kvm-amd.ko" "$root/lib/"
cp "$busybox" "$root/bin/"
for a in sh mount insmod poweroff cat; do ln -s busybox "$root/bin/$a"; done
cp ./hvtrace "$root/bin/"
cp "$build"/guest/test-guest*.elf "$build"/guest/System.map "$build"/guest/vmlinuz \
	"$build"/guest/initramfs.cpio.gz "$root/guest/"
cp "$@" "$root/tests/"
for l in $(ldd ./hvtrace "$@" | awk '/=>/ {print $3}' | sort -u); do cp -L "$l" "$root/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
cat > "$root/init" <<'INIT'
#!/bin/sh
export PATH=/bin LD_LIBRARY_PATH=/lib HVTRACE=/bin/hvtrace GUEST=/guest/test-guest.elf
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
insmod /lib/irqbypass.ko; insmod /lib/kvm.ko; insmod /lib/kvm-amd.ko
cd /
failed=0
for t in /tests/*; do echo "== $t"; $t || failed=1; done
echo "== nested-kvm-tests: failed=$failed"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null) > "$work/initrd.cpio"
timeout 1200 qemu-system-x86_64 -accel tcg,thread=multi -cpu EPYC -smp 2 -m 2048 -kernel "$kernel" \
	-initrd "$work/initrd.cpio" -append "console=ttyS0 quiet" -display none -nodefaults \
	-serial stdio -no-reboot 2>/dev/null | tee "$work/console"
grep -q "== nested-kvm-tests: failed=0" "$work/console"
