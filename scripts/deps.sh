#!/bin/sh
# Installs the Debian packages hvtrace needs to build and test, if any is missing.
# Run as root (CI and the project's machines are); prints what it installs.
set -eu

# build: compiler, libelf, libbpf (BTF), libvirt (attach by name), cmocka;
# Linux guest tests: cpio to pack the initramfs, QEMU to run it, libvirt's daemons for attach by name
PKGS="gcc make pkg-config libc6-dev libelf-dev libbpf-dev libvirt-dev libcmocka-dev cpio
      qemu-system-x86 libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients"
# record / report (trace.dat): libtracecmd and libtraceevent to read it (libtracecmd.pc requires
# libtracefs), trace-cmd for the tests
PKGS="$PKGS libtracecmd-dev libtraceevent-dev libtracefs-dev trace-cmd"
# run --kernel: a bzImage's payload decompressed (lz4: Debian 12's kernels; zstd: Debian 13's and 7.x;
# xz and lzma; gzip; bzip2; lzo)
PKGS="$PKGS liblz4-dev libzstd-dev liblzma-dev zlib1g-dev libbz2-dev liblzo2-dev"
# probes without an fentry NOP (arch/x86/x86_reloc.c): Zydis decodes the instructions a detour displaces;
# a freestanding guest built without -pg (vmi/vmi_dwarf.c): libdw tells its C functions from its DWARF
PKGS="$PKGS libzydis-dev libdw-dev"
# arm64 guests (issue 38): qemu-system-aarch64, beside the machine's qemu-system-x86
# and its in-guest stub (guest-stub/arm64/stub.S), assembled by binutils-aarch64-linux-gnu
PKGS="$PKGS qemu-system-arm binutils-aarch64-linux-gnu"
# tests that read a guest kernel's own bytes (tests/common/kernel_image.c): the decompressors, as
# extract-vmlinux uses them (lz4 for Debian 12's kernels, zstd for Debian 13's)
PKGS="$PKGS lz4 zstd xz-utils"
# make fuzz: clang with its libFuzzer/sanitizer runtime; make check-layers: python3
PKGS="$PKGS clang libclang-rt-14-dev python3"
# --summary / --junit tests (tests/kvm/test_kvm_expect.c): jq and python3 read the JSON, xmllint
# checks the JUnit XML against tests/common/junit.xsd, junitparser (a JUnit consumer) reads it; the man
# page check (tests/unit/host/cli/test_manpage.c): groff and man
PKGS="$PKGS jq libxml2-utils python3-junitparser groff-base man-db"
# run --format jsonl and the CI example (tests/kvm/test_kvm_json.c, tests/qemu/test_ci_example.c): jq
# parses the JSON Lines, python3's pty module gives the progress line a terminal, PyYAML parses the
# example GitHub Actions and GitLab CI files (tests/common/ci_yaml.py)
PKGS="$PKGS python3-yaml"
# make test's viewer check (tests/viewer/check-viewers.sh): headless Chromium, node for speedscope
# and puppeteer-core (from npm, at test time)
PKGS="$PKGS chromium nodejs"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
# npm: Debian's own package, unless the installed nodejs (e.g. NodeSource's) brings it
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "hvtrace: missing Debian packages:$missing (run scripts/deps.sh as root)" >&2
	exit 1
fi
echo "hvtrace: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
