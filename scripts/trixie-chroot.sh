#!/bin/bash
# A Debian 13 (trixie) root for the tools of Debian 13 the tests run on hvtrace's output: trace-cmd 3.3 (and
# what else is named on the command line: packages of trixie, KernelShark 2.4 among them, or PACKAGE/SUITE for
# one of trixie-backports with what it depends on preferred from there, as `apt-get install -t SUITE` does:
# qemu-system-x86/trixie-backports is QEMU 11).
# Made once with debootstrap from the machine's own archive, into $HVTRACE_CACHE/trixie (default
# /var/cache/hvtrace/trixie), trixie-backports enabled; nothing on the machine itself changes but for
# debootstrap, which is installed if missing. Prints the root's path; quick when it is there and holds the
# packages. Run a tool in it as: chroot ROOT trace-cmd report -i /tmp/FILE (copy FILE under ROOT/tmp).
#
#   trixie-chroot.sh [PACKAGE[/SUITE]...]   (default: trace-cmd)
set -euo pipefail

cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
root=$cache/trixie
pkgs=${*:-trace-cmd}
# the machine's archive, as its apt sources name it
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/* *$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
	head -1)
mirror=${mirror:-http://deb.debian.org/debian}

have_all() {
	for p in $pkgs; do
		p=${p%%/*}
		chroot "$root" dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			return 1
	done
}

if [ -x "$root/usr/bin/apt-get" ] && [ -f "$root/.hvtrace-complete" ] && have_all; then
	echo "$root"
	exit 0
fi
command -v debootstrap >/dev/null ||
	apt-get install -y -q debootstrap >/dev/null 2>&1 ||
	{ echo "hvtrace: cannot install debootstrap (apt-get install debootstrap)" >&2; exit 1; }
mkdir -p "$cache"
if [ ! -f "$root/.hvtrace-complete" ]; then
	umount "$root/proc" 2>/dev/null || true # a tool run left /proc mounted: never removed through it
	rm -rf --one-file-system "$root"
	debootstrap --variant=minbase trixie "$root" "$mirror" >"$cache/trixie-debootstrap.log" 2>&1 ||
		{ echo "hvtrace: debootstrap trixie failed, see $cache/trixie-debootstrap.log" >&2; exit 1; }
	cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror trixie main
deb $mirror trixie-backports main
SRC
	touch "$root/.hvtrace-complete"
fi
# no package starts a service in the root when it installs (libvirt's daemons are started by the tests)
if [ ! -x "$root/usr/sbin/policy-rc.d" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
fi
# PACKAGE (trixie) -> PACKAGE; PACKAGE/SUITE -> `-t SUITE PACKAGE`, one apt-get per suite; a conffile a
# test rewrote (tests/qemu/libvirt-trixie.sh: libvirt's) is kept as it is, never asked about
confold="-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold"
install() {
	local p plain="" suite
	for p in $pkgs; do
		[ "$p" != "${p%%/*}" ] || plain="$plain $p"
	done
	[ -z "$plain" ] ||
		DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q $confold --no-install-recommends $plain ||
		return 1
	for suite in $(printf '%s\n' $pkgs | sed -n 's|^[^/]*/||p' | sort -u); do
		DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q $confold --no-install-recommends \
			-t "$suite" $(printf '%s\n' $pkgs | sed -n "s|/$suite\$||p") || return 1
	done
}
{
	chroot "$root" apt-get update -q && install
} >"$cache/trixie-apt.log" 2>&1 ||
	{ echo "hvtrace: apt-get install $pkgs in $root failed, see $cache/trixie-apt.log" >&2; exit 1; }
echo "$root"
