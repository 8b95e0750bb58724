#!/bin/bash
# Builds a Linux test guest: vmlinuz, System.map (when the packages have a real one) and config of a Debian
# kernel, and initramfs.cpio.gz with busybox, the /init of scripts/guest-init.sh and binfmt_misc.ko (a
# module it loads) of that same kernel. Packages are fetched with `apt-get download` and unpacked with
# dpkg-deb into a cache folder ($HVTRACE_CACHE, default /var/cache/hvtrace); nothing is installed.
#
#   fetch-guest.sh [OUT] [KERNEL]
# KERNEL (default 6.1, into OUT, default build/guest): Debian 12's cloud kernel, the one the machine's apt
# resolves linux-image-cloud-amd64 to, its System.map out of the -dbg package. Any other choice
# SERIES[-FLAVOUR] (6.12, 6.12-rt, 6.18-rt, 7.2, 7.3, 7.3-generic; FLAVOUR cloud (default), rt or generic;
# SERIES may name the patch level, 6.12.117) goes into OUT/KERNEL: the newest package of that series and
# flavour by version, linux-image-<ver>-<flavour> (bookworm's 6.1: linux-image-6.1.0-<abi>-<flavour>) or
# 7.x's linux-binary-unsigned-<ver>-<flavour> (with linux-base-<ver> for config and linux-modules-<ver>
# for modules), fetched with a private apt configuration in $HVTRACE_CACHE/apt: the machine's archive,
# suites trixie, trixie-backports, sid and bookworm-backports. Debian's image packages ship a stub
# System.map: OUT/KERNEL has none then.
# arm64-SERIES[-FLAVOUR] (issue 38's matrix: arm64-6.1, arm64-6.12, arm64-6.12-generic, arm64-6.12-rt,
# arm64-6.18, arm64-7.3, arm64-7.3-16k; FLAVOUR cloud (default), rt, generic or 16k, 16 KiB pages):
# Debian's arm64 kernel of that series through the private configuration's arm64 twin
# (scripts/apt-private.sh, with bookworm), bookworm's busybox-static for arm64 (its applet links made
# from this machine's busybox of the same version), into OUT/KERNEL with Image, the kernel uncompressed
# (vmlinuz itself, or gunzipped: qemu-system-aarch64 boots either).
# Quick when the outputs are already there and newer than this script and the init.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build/guest}
choice=${2:-${KERNEL:-6.1}}
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
[ "$choice" = 6.1 ] || out="$out/$choice"
mkdir -p "$out" "$cache/debs"

isa=amd64
case $choice in arm64-*) isa=arm64 ;; esac
outputs="$out/vmlinuz $out/config $out/initramfs.cpio.gz"
[ "$choice" = 6.1 ] && outputs="$outputs $out/System.map"
[ "$isa" = arm64 ] && outputs="$outputs $out/Image"
fresh=1
for f in $outputs; do
	if [ ! -s "$f" ] || [ "$f" -ot "$0" ] || [ "$f" -ot "$here/guest-init.sh" ]; then
		fresh=0
	fi
done
[ "$fresh" = 1 ] && exit 0

# busybox-static from the machine's archive, as the 6.1 guest has it
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

unpack() { # package fetcher [folder] -> its unpacked root in the cache (or in its folder there)
	local root="$cache/${3:+$3/}$1" deb
	if [ ! -e "$root/.unpacked" ]; then
		deb=$($2 "$1") || exit 1
		# over what is there (a copy unpacked by hand stays readable meanwhile)
		mkdir -p "$root" && dpkg-deb -x "$deb" "$root" && touch "$root/.unpacked"
	fi
	echo "$root"
}

# initramfs.cpio.gz in $out: busybox (this machine's, or the unpacked busybox-static at @3 for another
# ISA, of the same version: the applet links are made from this machine's list), its applet links, /init,
# and the binfmt_misc module at @1 (a .ko, .ko.xz or .ko.zst, stored uncompressed: the guest's insmod
# hands it to init_module), or none (@2 says why)
pack_initramfs() {
	local ko=$1 bbroot guestbb
	bbroot=$(unpack busybox-static fetch)
	guestbb=${3:-$bbroot}
	stage=$(mktemp -d)
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,root,lib/modules}
	cp "$guestbb/bin/busybox" "$stage/bin/busybox"
	for applet in $("$bbroot/bin/busybox" --list); do
		[ -e "$stage/bin/$applet" ] || ln -s busybox "$stage/bin/$applet"
	done
	install -m 0755 "$here/guest-init.sh" "$stage/init"
	case $ko in
	*.ko.xz) xz -dc "$ko" > "$stage/lib/modules/binfmt_misc.ko" ;;
	*.ko.zst) zstd -qdc "$ko" > "$stage/lib/modules/binfmt_misc.ko" ;;
	*.ko) cp "$ko" "$stage/lib/modules/binfmt_misc.ko" ;;
	"") echo "hvtrace: $2: the guest has no binfmt_misc.ko" >&2 ;;
	esac
	echo "hvtrace test guest" > "$stage/etc/motd"
	(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -9 > "$out/initramfs.cpio.gz.tmp"
	mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
}

if [ "$choice" != 6.1 ]; then
	series=${choice%%-*}
	flavour=${choice#"$series"}
	flavour=${flavour#-}
	if [ "$isa" = arm64 ]; then
		series=${choice#arm64-}
		flavour=${series#"${series%%-*}"}
		flavour=${flavour#-}
		series=${series%%-*}
	fi
	case ${flavour:-cloud} in
	cloud) suffix=cloud-$isa ;;
	rt) suffix=rt-$isa ;;
	generic) suffix=$isa ;;
	16k) suffix=arm64-16k ;;
	*) echo "hvtrace: KERNEL=$choice: flavour '$flavour' is not cloud, rt, generic (or 16k on arm64)" >&2; exit 1 ;;
	esac
	if [ "$suffix" = arm64-16k ] && [ "$isa" != arm64 ]; then
		echo "hvtrace: KERNEL=$choice: 16 KiB pages are arm64's (arm64-SERIES-16k)" >&2
		exit 1
	fi
	if ! [[ $series =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]]; then
		echo "hvtrace: KERNEL=$choice: not SERIES[-FLAVOUR] (e.g. 6.12, 6.12-rt, 7.3-generic)" >&2
		exit 1
	fi
	# shellcheck source=scripts/apt-private.sh
	. "$here/apt-private.sh"
	apt_private_setup "$isa"
	# the newest package of the series and flavour by its Debian version; at the same version 7.x's
	# linux-binary-unsigned (its linux-image is then a meta-package around the signed linux-binary)
	# (6.1 of bookworm: linux-image-6.1.0-50-cloud-arm64, an ABI number in place of +debNN)
	re="^linux-(image|binary-unsigned)-${series//./\\.}$([[ $series =~ \..*\. ]] || echo '(\.[0-9]+)?')(\+[^-]*|-[0-9]+)-$suffix\$"
	kpkg="" best=""
	while read -r pkg ver; do
		if [ -z "$best" ] || dpkg --compare-versions "$ver" gt "$best" ||
			{ [ "$ver" = "$best" ] && [[ $pkg == linux-binary-unsigned-* ]]; }; then
			kpkg=$pkg best=$ver
		fi
	done < <(apt-cache "${apt_opts[@]}" pkgnames linux- | grep -E "$re" |
		xargs -r apt-cache "${apt_opts[@]}" show --no-all-versions 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }')
	[ -n "$kpkg" ] || { echo "hvtrace: KERNEL=$choice: no package in $cache/apt/sources.list matches $re" >&2; exit 1; }
	kver=${kpkg#linux-image-}
	kver=${kver#linux-binary-unsigned-}
	# in $cache/kernels: scripts/nested-kvm.sh takes $cache/linux-image-* as the 6.1 package; tests
	# look for amd64 bzImages in $cache/kernels: arm64's go to $cache/arm64/kernels
	kdir=kernels
	[ "$isa" = arm64 ] && kdir=arm64/kernels
	roots=$(unpack "$kpkg" apt_private_fetch $kdir)
	if [ "${kpkg#linux-binary-unsigned-}" != "$kpkg" ]; then
		# 7.x splits the kernel: base files (config) and modules in their own packages
		roots="$roots $(unpack "linux-base-$kver" apt_private_fetch $kdir) $(unpack "linux-modules-$kver" apt_private_fetch $kdir)"
	fi
	pick() { # file name pattern... -> the first match under the roots
		local r p
		for p in "$@"; do
			for r in $roots; do
				ls $r/$p 2>/dev/null || true
			done
		done | head -1
	}
	vmlinuz=$(pick "boot/vmlinuz-$kver" "usr/lib/modules/$kver/vmlinuz.unsigned" "usr/lib/modules/$kver/vmlinuz")
	config=$(pick "boot/config-$kver" "usr/lib/modules/$kver/config")
	sysmap=$(pick "boot/System.map-$kver" "usr/lib/modules/$kver/System.map")
	ko=$(pick "usr/lib/modules/$kver/kernel/fs/binfmt_misc.ko*" "lib/modules/$kver/kernel/fs/binfmt_misc.ko*")
	[ -n "$vmlinuz" ] || { echo "hvtrace: $kpkg: no vmlinuz in the package" >&2; exit 1; }
	[ -n "$config" ] || { echo "hvtrace: $kpkg: no config in its packages" >&2; exit 1; }
	rm -f "$out/Image" # arm64: a link to vmlinuz, made anew below
	cp "$vmlinuz" "$out/vmlinuz"
	cp "$config" "$out/config"
	rm -f "$out/System.map"
	if [ -n "$sysmap" ] && ! grep -q "The real System.map is in" "$sysmap"; then
		cp "$sysmap" "$out/System.map"
	fi
	why="$kver"
	[ -z "$ko" ] && grep -q '^CONFIG_BINFMT_MISC=y' "$config" && why="$kver (binfmt_misc built in)"
	guestbb=""
	if [ "$isa" = arm64 ]; then
		# the kernel uncompressed: vmlinuz is a gzip'd Image (its header says arm64 at 0x38)
		if [ "$(head -c 2 "$out/vmlinuz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
			gzip -dc "$out/vmlinuz" > "$out/Image.tmp"
		else # Debian's 6.12 ships the Image itself
			ln -f "$out/vmlinuz" "$out/Image.tmp"
		fi
		[ "$(dd if="$out/Image.tmp" bs=1 skip=56 count=4 2>/dev/null)" = "$(printf 'ARM\x64')" ] ||
			{ echo "hvtrace: $kpkg: its vmlinuz is no arm64 Image" >&2; rm -f "$out/Image.tmp"; exit 1; }
		mv "$out/Image.tmp" "$out/Image"
		# bookworm's busybox-static for arm64, the version whose applets this machine's lists
		unpack busybox-static fetch > /dev/null # its .deb in $cache/debs, for its version
		guestbb=$(unpack busybox-static/bookworm apt_private_fetch arm64)
		hostv=$(ls "$cache/debs/"busybox-static_*_amd64.deb | head -1 | sed 's/.*_\(.*\)_amd64.deb/\1/; s/%3a/:/; s/+b[0-9]*$//')
		guestv=$(ls "$apt_debs/"busybox-static_*_arm64.deb | head -1 | sed 's/.*_\(.*\)_arm64.deb/\1/; s/%3a/:/; s/+b[0-9]*$//')
		[ "$hostv" = "$guestv" ] || { echo "hvtrace: busybox-static $hostv here, $guestv for arm64: the applet lists may differ" >&2; exit 1; }
	fi
	pack_initramfs "$ko" "$why" "$guestbb"
	echo "hvtrace: guest kernel $kver ($kpkg $best) in $out" >&2
	exit 0
fi

# The kernel the cloud meta-package points at, e.g. linux-image-6.1.0-57-cloud-amd64.
kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
if [ -z "$kpkg" ]; then
	apt-get update -qq >/dev/null
	kpkg=$(apt-cache depends linux-image-cloud-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
fi
[ -n "$kpkg" ] || { echo "hvtrace: cannot resolve linux-image-cloud-amd64" >&2; exit 1; }
kver=${kpkg#linux-image-}

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

cp "$kroot/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$kroot/System.map" "$out/System.map"
cp "$kroot/boot/config-$kver" "$out/config"

# a module the guest loads (module tracing): uncompressed in the image package
pack_initramfs "$kroot/lib/modules/$kver/kernel/fs/binfmt_misc.ko" "$kver"
echo "hvtrace: guest kernel $kver in $out" >&2
