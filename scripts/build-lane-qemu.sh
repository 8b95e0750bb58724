#!/bin/bash
# The nested lane's L0 with INT3 intercepted as AMD's manual says (issue 40): QEMU's TCG checks SVM's
# INTn intercept for INT3, where the APM has INT3 raise #BP and be intercepted through the exception
# intercept bitmap, the one L1's KVM sets for KVM_SET_GUEST_DEBUG(USE_SW_BP). This script fetches the
# Debian source of the QEMU the machine runs (`apt-get source`, deb-src lines of the machine's own
# archive in a private configuration, scripts/apt-private.sh), applies scripts/lane-qemu-int3.patch,
# builds x86_64-softmmu alone (TCG, vhost-user for the lane's virtiofs; no docs, UI or tools) and
# caches the binary as $HVTRACE_CACHE/lane-qemu/qemu-system-x86_64 (default /var/cache/hvtrace), which
# scripts/nested-kvm.sh then uses as L0. Test infrastructure: the product never depends on it.
#
#   build-lane-qemu.sh [--force]
# Prints the binary's path. Quick when the cache has it for the same source version and patch
# (lane-qemu/stamp); --force builds again. The build runs under `nice -n 10` with
# $HVT_LANE_QEMU_JOBS jobs (default 2): the machine's cores are shared. Missing build packages are
# installed when run as root (apt-get), else named in one line (status 1). Firmware and data files
# are the machine's own (/usr/share/qemu, qemu-system-data): the binary is configured with prefix /usr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
out=$cache/lane-qemu
bin=$out/qemu-system-x86_64
patch=$here/lane-qemu-int3.patch
force=
case "$#:${1:-}" in
0:) ;;
1:--force) force=1 ;;
*) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

# shellcheck source=scripts/apt-private.sh
. "$here/apt-private.sh"
mkdir -p "$out/src"
apt_private_src_setup "$out/apt"
# the source version of the machine's own QEMU (L0 then differs from it by the patch alone), else the
# newest the machine's archive has
ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null || true)
[ -n "$ver" ] || ver=$(apt-cache "${apt_opts[@]}" showsrc qemu | sed -n 's/^Version: //p' | sort -V | tail -1)
[ -n "$ver" ] || { echo "hvtrace: build-lane-qemu: no qemu source in $out/apt/sources.list" >&2; exit 1; }
key="qemu $ver patch $(sha256sum "$patch" | cut -d' ' -f1)"
if [ -z "$force" ] && [ -x "$bin" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$key" ]; then
	echo "$bin"
	exit 0
fi

# libfdt-dev: x86_64-softmmu requires fdt (meson: "fdt not available but required by targets"),
# and --without-default-features leaves out the bundled dtc
pkgs="gcc make ninja-build meson pkg-config python3 python3-venv flex bison dpkg-dev xz-utils patch
      libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	[ "$(id -u)" = 0 ] ||
		{ echo "hvtrace: build-lane-qemu: missing Debian packages:$missing (run as root)" >&2; exit 1; }
	echo "hvtrace: build-lane-qemu: installing$missing" >&2
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

upver=${ver#*:}
dsc="$out/src/qemu_${upver}.dsc"
if [ ! -s "$dsc" ]; then
	(cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only -qq "qemu=$ver" >/dev/null 2>&1) ||
		{ echo "hvtrace: build-lane-qemu: apt-get source qemu=$ver failed" >&2; exit 1; }
fi
start=$(date +%s)
tree=$out/build/qemu-$upver
rm -rf "$out/build"
mkdir -p "$out/build"
dpkg-source -q -x "$dsc" "$tree" >"$out/build/source.log" 2>&1 # Debian's patches applied, as in the machine's QEMU (apt checked the files)
patch -s -p1 -d "$tree" <"$patch"
mkdir "$tree/b"
(cd "$tree/b" && ../configure --prefix=/usr --target-list=x86_64-softmmu --without-default-features \
	--enable-tcg --enable-vhost-user --disable-docs --disable-werror --disable-debug-info \
	--disable-install-blobs >"$out/build/configure.log" 2>&1) ||
	{ echo "hvtrace: build-lane-qemu: configure failed ($out/build/configure.log)" >&2; exit 1; }
nice -n 10 ninja -C "$tree/b" -j "${HVT_LANE_QEMU_JOBS:-2}" qemu-system-x86_64 >"$out/build/build.log" 2>&1 ||
	{ echo "hvtrace: build-lane-qemu: build failed ($out/build/build.log)" >&2; exit 1; }
strip -o "$bin.tmp" "$tree/b/qemu-system-x86_64"
mv "$bin.tmp" "$bin"
echo "$key" >"$out/stamp"
cp "$out/build/build.log" "$out/build.log"
rm -rf "$out/build" # the tree is ~1 GiB; the source packages stay in $out/src
echo "hvtrace: build-lane-qemu: QEMU $ver with $(basename "$patch") built in $(($(date +%s) - start)) s" >&2
echo "$bin"
