#!/bin/bash
# Test helper: Debian 13's libvirt (11.x of trixie, or 12.x of trixie-backports) run inside the trixie root
# of scripts/trixie-chroot.sh, beside the machine's own libvirt 9, its socket reachable from the machine:
# hvtrace (built against the machine's libvirt 9 client library) attaches to its domains by name with
# `attach -c URI NAME`. The root's libvirtd runs chrooted in the machine's namespaces (its QEMU is the
# root's: QEMU 11 of trixie-backports where scripts/fetch-qemu.sh 11 put it there), so the QEMU's pid,
# its memory and a gdbstub on loopback are the machine's to see. /tmp/hvtrace-libvirt is bind-mounted at
# the same path in the root: libvirt-domain.sh's kernel, initrd and console file mean the same on both
# sides. Its QEMU runs as root, without cgroups, namespaces or a security driver (none of them can be
# set up inside a chroot beside the machine's own libvirtd).
#   libvirt-trixie.sh daemons  installs libvirt in the root if it has none (trixie's: 11.x; 12.x where
#                           the root has trixie-backports' installed), starts the root's libvirtd if it
#                           is not running (its version on stderr); prints the URI. Exit 77 with one line
#                           "SKIPPED: ..." on stdout when the root or its libvirtd cannot be had.
#   libvirt-trixie.sh stop  stops that libvirtd and unmounts what `daemons` mounted
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=${HVTRACE_CACHE:-/var/cache/hvtrace}
root=$cache/trixie
sock=/run/libvirt/libvirt-sock
uri="qemu+unix:///system?socket=$root$sock"

skip() {
	echo "SKIPPED: libvirt of Debian 13: $*"
	exit 77
}

# the libvirtd of the root, by its pid file, if it runs chrooted there
running() {
	local pid
	pid=$(cat "$root/run/libvirtd.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ]
}

mounted() { mountpoint -q "$root$1"; }

mount_all() {
	mounted /proc || mount -t proc proc "$root/proc"
	mounted /sys || mount --bind /sys "$root/sys"
	mounted /dev || mount --bind /dev "$root/dev"
	mkdir -p /tmp/hvtrace-libvirt "$root/tmp/hvtrace-libvirt"
	mounted /tmp/hvtrace-libvirt || mount --bind /tmp/hvtrace-libvirt "$root/tmp/hvtrace-libvirt"
}

umount_all() {
	for m in /tmp/hvtrace-libvirt /dev /sys /proc; do
		if mounted "$m"; then umount "$root$m" || umount -l "$root$m"; fi
	done
}

daemons() {
	scripts/trixie-chroot.sh libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients \
		>/dev/null 2>"$cache/libvirt-trixie.err" ||
		skip "scripts/trixie-chroot.sh: $(tail -1 "$cache/libvirt-trixie.err")"
	[ -x "$root/usr/bin/qemu-system-x86_64" ] ||
		skip "no QEMU in $root (scripts/fetch-qemu.sh 11 puts QEMU 11 there)"
	if running; then
		echo "$uri"
		return 0
	fi
	cat >"$root/etc/libvirt/qemu.conf" <<CONF
# written by tests/qemu/libvirt-trixie.sh: a libvirtd chrooted beside the machine's own
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
stdio_handler = "file"
CONF
	cat >"$root/etc/libvirt/libvirtd.conf" <<CONF
# written by tests/qemu/libvirt-trixie.sh: the unix socket only, root's alone
unix_sock_rw_perms = "0700"
auth_unix_rw = "none"
CONF
	mount_all
	mkdir -p "$root/run/libvirt" "$root/var/log/libvirt" "$root/var/lib/libvirt/qemu"
	rm -f "$root/run/libvirtd.pid"
	chroot "$root" /usr/sbin/libvirtd -d -p /run/libvirtd.pid >"$cache/libvirt-trixie.log" 2>&1 ||
		skip "its libvirtd did not start: $(tail -1 "$cache/libvirt-trixie.log")"
	for _ in $(seq 100); do
		if timeout 10 virsh -c "$uri" version >/dev/null 2>&1; then
			echo "hvtrace: libvirtd $(chroot "$root" libvirtd --version | sed 's/.* //') of $root at" \
				"$uri" >&2
			echo "$uri"
			return 0
		fi
		sleep 0.1
	done
	skip "its libvirtd does not answer at $uri: $(timeout 10 virsh -c "$uri" version 2>&1 | tail -1)"
}

stop() {
	local pid
	if running; then
		pid=$(cat "$root/run/libvirtd.pid")
		kill "$pid"
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	umount_all
}

case "${1:-}" in
daemons) daemons ;;
stop) stop ;;
*)
	echo "usage: $0 daemons | stop" >&2
	exit 2
	;;
esac
