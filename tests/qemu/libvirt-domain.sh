#!/bin/bash
# Test helper: libvirt's daemons started by hand (no systemd here), and a transient TCG domain that boots
# the Linux test guest.
#   libvirt-domain.sh start NAME KERNEL INITRD CMDLINE CONSOLE_LOG
#     (machine type $HVT_DOMAIN_MACHINE, default pc; RAM $HVT_DOMAIN_MEM_MB MiB, default 256;
#     $HVT_DOMAIN_ARCH x86_64, the default, or aarch64: qemu-system-aarch64 -M virt -cpu max, a PL011
#     console, for an arm64 Image)
#   libvirt-domain.sh state NAME          prints running / shut off / gone
#   libvirt-domain.sh stop NAME
#   libvirt-domain.sh daemons           starts virtlogd and libvirtd if they are not running
set -euo pipefail
uri=${HVT_LIBVIRT_URI:-qemu:///system} # the tests boot a qemu:///session domain too

daemons() {
	mkdir -p /var/log/libvirt /run/libvirt
	# one starter at a time (make test runs test binaries side by side); the daemons do not keep
	# the lock's descriptor
	exec 9>/run/libvirt/hvtrace-daemons.lock
	flock 9
	getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
	id libvirt-qemu >/dev/null 2>&1 || useradd -r -g libvirt-qemu -d /var/lib/libvirt \
		-s /usr/sbin/nologin libvirt-qemu
	pgrep -x virtlogd >/dev/null || virtlogd -d 9>&-
	pgrep -x libvirtd >/dev/null || libvirtd -d 9>&-
	for _ in $(seq 100); do
		if timeout 10 virsh -c "$uri" version >/dev/null 2>&1; then
			exec 9>&-
			return 0
		fi
		sleep 0.1
	done
	exec 9>&-
	echo "libvirtd did not come up" >&2
	return 1
}

case "$1" in
start)
	name=$2 kernel=$3 initrd=$4 cmdline=$5 console=$6
	arch=${HVT_DOMAIN_ARCH:-x86_64} mem=${HVT_DOMAIN_MEM_MB:-256}
	case "$arch" in
	x86_64)
		machine=${HVT_DOMAIN_MACHINE:-pc} console_dev=ttyS0 features='<features><acpi/></features>'
		case "$machine" in pc|q35) ;; *) echo "HVT_DOMAIN_MACHINE=$machine: pc or q35" >&2; exit 2;; esac
		;;
	aarch64)
		# direct kernel boot, no firmware: no ACPI (the kernel finds virt's devices in its DT)
		machine=${HVT_DOMAIN_MACHINE:-virt} console_dev=ttyAMA0 features=''
		case "$machine" in virt) ;; *) echo "HVT_DOMAIN_MACHINE=$machine: virt" >&2; exit 2;; esac
		;;
	*) echo "HVT_DOMAIN_ARCH=$arch: x86_64 or aarch64" >&2; exit 2;;
	esac
	case "$mem" in ''|*[!0-9]*) echo "HVT_DOMAIN_MEM_MB=$mem: a number of MiB" >&2; exit 2;; esac
	daemons
	dir=$(dirname "$console")
	mkdir -p "$dir" && chmod 0755 "$dir"
	# the QEMU of libvirt runs as libvirt-qemu: give it copies it can read
	cp "$kernel" "$dir/vmlinuz" && cp "$initrd" "$dir/initrd"
	chmod 0644 "$dir/vmlinuz" "$dir/initrd"
	rm -f "$console"
	cat > "$dir/$name.xml" <<XML
<domain type='qemu'>
  <name>$name</name>
  <memory unit='MiB'>$mem</memory>
  <vcpu>2</vcpu>
  <os>
    <type arch='$arch' machine='$machine'>hvm</type>
    <kernel>$dir/vmlinuz</kernel>
    <initrd>$dir/initrd</initrd>
    <cmdline>console=$console_dev $cmdline</cmdline>
  </os>
  $features
  <cpu mode='maximum'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>$(command -v "qemu-system-$arch")</emulator>
    <serial type='file'><source path='$console'/><target port='0'/></serial>
    <memballoon model='none'/>
  </devices>
</domain>
XML
	# a domain of this test's name left running by a test run that was killed
	timeout 60 virsh -q -c "$uri" destroy "$name" >/dev/null 2>&1 || true
	timeout 300 virsh -q -c "$uri" create "$dir/$name.xml" >/dev/null
	;;
state)
	state=$(timeout 60 virsh -c "$uri" domstate "$2" 2>/dev/null | sed '/^$/d' | head -1 || true)
	echo "${state:-gone}"
	;;
daemons)
	daemons
	;;
stop)
	timeout 60 virsh -q -c "$uri" destroy "$2" >/dev/null 2>&1 || true
	;;
*)
	echo "usage: $0 daemons|start|state|stop NAME ..." >&2
	exit 2
	;;
esac
