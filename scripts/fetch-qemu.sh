#!/bin/bash
# Puts another QEMU beside the machine's own (Debian 12's 7.2 in /usr/bin stays as it is): its Debian
# packages downloaded with the private apt configuration of scripts/apt-private.sh and unpacked with
# dpkg-deb into $HVTRACE_CACHE/qemu/VERSION (default /var/cache/hvtrace); nothing of QEMU is installed.
# Prints the path of a qemu-system-x86_64 there: a wrapper that runs the unpacked binary with its own
# data files, firmware and modules (-L, $QEMU_MODULE_DIR), so that `HVTRACE_QEMU=$(fetch-qemu.sh 10.0)
# hvtrace run --qemu ...`, a test or a libvirt <emulator> use it as they would /usr/bin's.
# With TARGET aarch64 (issue 38), the same for qemu-system-aarch64 (Debian's qemu-system-arm of the same
# suite, beside the x86 one in the same folder, which stays as it is): `QEMU_AARCH64=$(fetch-qemu.sh 11
# aarch64) build/tests/qemu/test_arm64`.
#
#   fetch-qemu.sh VERSION [TARGET]   (TARGET x86_64, the default, or aarch64)
# VERSION 10.0: qemu-system-x86, -common and -data of bookworm-backports (built for Debian 12), with the
# SeaBIOS of bookworm-backports it asks for. Shared libraries the binary lacks (ldd) are installed from
# the machine's own archive (Debian 12 packages, never QEMU). Quick when the cache has it.
# VERSION 11 (or 11.1): qemu-system-x86 of trixie-backports (built for Debian 13, whose C library the
# machine's may predate), installed into the Debian 13 root of scripts/trixie-chroot.sh; the wrapper runs
# that root's binary through the root's own dynamic loader and libraries, in the machine's namespace (no
# chroot: host paths for -kernel, sockets and console files are the caller's).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${1:?usage: fetch-qemu.sh VERSION (10.0, 11) [TARGET (x86_64, aarch64)]}
target=${2:-x86_64}
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
# the Debian package of the target's system emulator; x86's has SeaBIOS beside it, arm's boots -kernel
# on -M virt without firmware files
case $target in
x86_64) qpkg=qemu-system-x86 firmware=seabios stamp=.unpacked ;;
aarch64) qpkg=qemu-system-arm firmware="" stamp=.unpacked-aarch64 ;;
*) echo "hvtrace: fetch-qemu.sh: target $target: only x86_64 and aarch64 are known" >&2; exit 1 ;;
esac
case $version in
10.0) suite=bookworm-backports ;;
11 | 11.1) suite=trixie-backports ;;
*) echo "hvtrace: fetch-qemu.sh: QEMU $version: only 10.0 (bookworm-backports) and 11 (trixie-backports)" \
	"are known" >&2; exit 1 ;;
esac
root="$cache/qemu/$version"
fw_opt() { # ROOT -> the wrapper's -L for the firmware's data folder there, if the target has one
	[ -z "$firmware" ] || printf ' -L "%s"' "$1/usr/share/$firmware"
}
wrapper="$root/qemu-system-$target"
if [ -x "$wrapper" ] && [ -e "$root/$stamp" ] && [ ! "$wrapper" -ot "$0" ]; then
	echo "$wrapper"
	exit 0
fi

if [ "$suite" = trixie-backports ]; then
	troot=$("$here/trixie-chroot.sh" "$qpkg/trixie-backports")
	libs="$troot/lib/x86_64-linux-gnu:$troot/usr/lib/x86_64-linux-gnu"
	mkdir -p "$root"
	# -L and $QEMU_MODULE_DIR as for 10.0 below: the root's data files, SeaBIOS and modules
	cat > "$wrapper.tmp" <<WRAP
#!/bin/sh
# QEMU $version of $troot (scripts/fetch-qemu.sh): run by that root's dynamic loader with its libraries,
# its own data files, firmware and modules, in this machine's namespace
QEMU_MODULE_DIR="$troot/usr/lib/x86_64-linux-gnu/qemu" exec "$troot/lib64/ld-linux-x86-64.so.2" \\
	--library-path "$libs" "$troot/usr/bin/qemu-system-$target" \\
	-L "$troot/usr/share/qemu"$(fw_opt "$troot") "\$@"
WRAP
	chmod +x "$wrapper.tmp"
	"$wrapper.tmp" --version | grep -q "version $version\." ||
		{ echo "hvtrace: $troot/usr/bin/qemu-system-$target is not QEMU $version" \
			"($("$wrapper.tmp" --version 2>&1 | head -1))" >&2; exit 1; }
	mv "$wrapper.tmp" "$wrapper"
	touch "$root/$stamp"
	echo "hvtrace: QEMU $("$wrapper" --version | head -1 | sed 's/^QEMU emulator version //') in $troot" >&2
	echo "$wrapper"
	exit 0
fi

# shellcheck source=scripts/apt-private.sh
. "$here/apt-private.sh"
apt_private_setup
mkdir -p "$root"
bin="$root/usr/bin/qemu-system-$target"
# what is unpacked here already (a target's stamp) is not unpacked again, as a QEMU of this folder may
# be running meanwhile: the shared packages once for both targets, each target's own once
pkgs="$qpkg $firmware"
if [ -e "$root/$stamp" ] && [ -x "$bin" ]; then
	pkgs=""
elif [ ! -e "$root/.unpacked" ] && [ ! -e "$root/.unpacked-aarch64" ]; then
	pkgs="$pkgs qemu-system-common qemu-system-data"
fi
for pkg in $pkgs; do
	deb=$(apt_private_fetch "$pkg/$suite")
	dpkg-deb -x "$deb" "$root"
done
"$bin" --version | grep -q "version $version\." ||
	{ echo "hvtrace: $bin is not QEMU $version" >&2; exit 1; }

# libraries the binary lacks: their Debian 12 packages (apt-file is not needed: the package that ships
# the library's file name, asked of dpkg's own archive index through apt-cache)
missing=$(ldd "$bin" | sed -n 's/^\s*\(\S*\) => not found$/\1/p')
if [ -n "$missing" ]; then
	pkgs=""
	for lib in $missing; do
		# libfoo.so.1 -> the package named after it (libfoo1, libfoo-1-1, ...) as Debian's policy does
		stem=${lib%%.so*}
		soname=${lib#*.so.}
		pkg=$(apt-cache pkgnames "$stem" | grep -E "^${stem}(-)?${soname%%.*}(t64)?\$" | head -1 || true)
		[ -n "$pkg" ] || { echo "hvtrace: QEMU $version needs $lib: no Debian package named after it" >&2; exit 1; }
		pkgs="$pkgs $pkg"
	done
	echo "hvtrace: QEMU $version needs$pkgs: apt-get install" >&2
	if [ "$(id -u)" = 0 ]; then apt-get install -y -q $pkgs >/dev/null; else sudo apt-get install -y -q $pkgs >/dev/null; fi
	if ldd "$bin" | grep -q "not found"; then
		echo "hvtrace: QEMU $version still lacks: $(ldd "$bin" | grep "not found" | tr -s ' \n' ' ')" >&2
		exit 1
	fi
fi

# -L: its own data files (option ROMs such as linuxboot_dma.bin) and SeaBIOS before the ones of the
# machine's QEMU that its compiled-in paths name; modules of its own build only
cat > "$wrapper.tmp" <<WRAP
#!/bin/sh
# QEMU $version unpacked by scripts/fetch-qemu.sh: its own data files, firmware and modules
QEMU_MODULE_DIR="$root/usr/lib/x86_64-linux-gnu/qemu" exec "$bin" -L "$root/usr/share/qemu"$(fw_opt "$root") "\$@"
WRAP
chmod +x "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"
touch "$root/$stamp"
echo "hvtrace: QEMU $("$bin" --version | head -1 | sed 's/^QEMU emulator version //') in $root" >&2
echo "$wrapper"
