#!/bin/bash
# Builds the Linux test guest in build/guest/: vmlinuz, System.map and config from Debian's cloud kernel
# (the image package, and only System.map out of the -dbg package), and initramfs.cpio.gz with busybox,
# the /init of scripts/guest-init.sh and binfmt_misc.ko (a module it loads). Packages are fetched with
# `apt-get download` and unpacked with dpkg-deb into a cache folder ($HVTRACE_CACHE, default
# /var/cache/hvtrace); nothing is installed.
# Quick when the outputs are already there and newer than this script and the init.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/guest}
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
mkdir -p "$out" "$cache/debs"

outputs="$out/vmlinuz $out/System.map $out/config $out/initramfs.cpio.gz"
fresh=1
for f in $outputs; do
	if [ ! -s "$f" ] || [ "$f" -ot "$0" ] || [ "$f" -ot "$here/guest-init.sh" ]; then
		fresh=0
	fi
done
[ "$fresh" = 1 ] && exit 0

# The kernel the cloud meta-package points at, e.g. linux-image-6.1.0-57-cloud-amd64.
kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
if [ -z "$kpkg" ]; then
	apt-get update -qq >/dev/null
	kpkg=$(apt-cache depends linux-image-cloud-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
fi
[ -n "$kpkg" ] || { echo "hvtrace: cannot resolve linux-image-cloud-amd64" >&2; exit 1; }
kver=${kpkg#linux-image-}

fetch() { # package -> path of its .deb in the cache
	local deb
	deb=$(ls "$cache/debs/$1"_*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		(cd "$cache/debs" && apt-get download -q "$1" >/dev/null 2>&1) ||
			{ echo "hvtrace: apt-get download $1 failed" >&2; exit 1; }
		deb=$(ls "$cache/debs/$1"_*.deb | head -1)
	fi
	echo "$deb"
}

kroot="$cache/$kpkg"
if [ ! -s "$kroot/boot/vmlinuz-$kver" ]; then
	rm -rf "$kroot" && mkdir -p "$kroot"
	dpkg-deb -x "$(fetch "$kpkg")" "$kroot"
fi
# The image package's System.map is a stub; the real one is in the -dbg package.
if [ ! -s "$kroot/System.map" ]; then
	dpkg-deb --fsys-tarfile "$(fetch "$kpkg-dbg")" |
		tar -xO "./usr/lib/debug/boot/System.map-$kver" > "$kroot/System.map.tmp"
	mv "$kroot/System.map.tmp" "$kroot/System.map"
fi
bbroot="$cache/busybox-static"
if [ ! -x "$bbroot/bin/busybox" ]; then
	rm -rf "$bbroot" && mkdir -p "$bbroot"
	dpkg-deb -x "$(fetch busybox-static)" "$bbroot"
fi

cp "$kroot/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$kroot/System.map" "$out/System.map"
cp "$kroot/boot/config-$kver" "$out/config"

# initramfs: busybox, its applet links, /init.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,root}
cp "$bbroot/bin/busybox" "$stage/bin/busybox"
for applet in $("$bbroot/bin/busybox" --list); do
	[ -e "$stage/bin/$applet" ] || ln -s busybox "$stage/bin/$applet"
done
install -m 0755 "$here/guest-init.sh" "$stage/init"
# a module the guest loads (module tracing): uncompressed in the image package
mkdir -p "$stage/lib/modules"
cp "$kroot/lib/modules/$kver/kernel/fs/binfmt_misc.ko" "$stage/lib/modules/binfmt_misc.ko"
echo "hvtrace test guest" > "$stage/etc/motd"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -9 > "$out/initramfs.cpio.gz.tmp"
mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
echo "hvtrace: guest kernel $kver in $out" >&2
