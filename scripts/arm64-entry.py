#!/usr/bin/env python3
"""Reads function entries of a running arm64 test guest through QEMU's gdbstub (issue 38, the kernel
table of docs/arm64.md): boots GUEST (build/guest/arm64-K, as scripts/fetch-guest.sh makes it) under
qemu-system-aarch64 ($QEMU_AARCH64, or the one on $PATH; -M virt -cpu max as tests/qemu/test_arm64.c)
with its initramfs given a first /init that prints the functions' addresses from /proc/kallsyms (KASLR:
they change each boot) before the guest's own, stops it through the gdbstub, reads 8 bytes before each
function and 32 from its entry with `m` packets and disassembles them with binutils-aarch64-linux-gnu's
objdump; then kills QEMU. Nothing is left behind.

    scripts/arm64-entry.py GUEST [FUNCTION...]   (default: vfs_read ksys_read schedule __schedule ftrace_caller)
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BEFORE, AFTER = 8, 32


class Gdb:
    """The few gdbstub packets this needs: one request, one reply, acknowledged."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def drain(self, seconds):
        """Drops what the stub sent unasked (stop replies after the connection stopped the VM)."""
        self.sock.settimeout(seconds)
        try:
            while self.sock.recv(65536):
                pass
        except socket.timeout:
            pass
        self.sock.settimeout(None)
        self.sock.sendall(b"+")
        self.buf = b""

    def packet(self, cmd):
        self.sock.sendall(b"$%s#%02x" % (cmd.encode(), sum(cmd.encode()) & 0xFF))
        while True:
            m = re.search(rb"\$([^#]*)#..", self.buf)
            if m:
                self.buf = self.buf[m.end():]
                self.sock.sendall(b"+")
                return m.group(1).decode()
            data = self.sock.recv(65536)
            if not data:
                raise SystemExit("arm64-entry: the gdbstub closed the connection")
            self.buf += data


def initrd_with_symbols(guest, work, names):
    """The guest's initramfs with a first /init printing `hvt-sym: ADDR T NAME` for @names."""
    stage = os.path.join(work, "stage")
    os.mkdir(stage)
    subprocess.run(f"zcat '{guest}/initramfs.cpio.gz' | cpio -id --quiet", shell=True, cwd=stage,
                   check=True)
    os.rename(f"{stage}/init", f"{stage}/init.guest")
    with open(f"{stage}/init", "w") as f:
        f.write(f"""#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
echo 0 > /proc/sys/kernel/kptr_restrict
grep -E ' ({"|".join(map(re.escape, names))})$' /proc/kallsyms | sed 's/^/hvt-sym: /'
umount /proc
exec /init.guest
""")
    os.chmod(f"{stage}/init", 0o755)
    initrd = os.path.join(work, "initrd.gz")
    subprocess.run(f"find . | cpio -o -H newc --quiet -R 0:0 | gzip -1 > '{initrd}'", shell=True,
                   cwd=stage, check=True)
    return initrd


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    guest = os.path.abspath(sys.argv[1])
    names = sys.argv[2:] or ["vfs_read", "ksys_read", "schedule", "__schedule", "ftrace_caller"]
    qemu = os.environ.get("QEMU_AARCH64") or "qemu-system-aarch64"
    work = tempfile.mkdtemp(prefix="hvt-arm64-entry-")
    proc = None
    try:
        initrd = initrd_with_symbols(guest, work, names)
        console = os.path.join(work, "console")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        proc = subprocess.Popen(
            [qemu, "-M", "virt", "-cpu", "max", "-accel", "tcg", "-smp", "2", "-m", "512",
             "-display", "none", "-nodefaults", "-no-user-config", "-no-reboot",
             "-serial", f"file:{console}", "-gdb", f"tcp:127.0.0.1:{port}",
             "-kernel", f"{guest}/Image", "-initrd", initrd,
             "-append", "console=ttyAMA0 panic=-1 hvt.wait=60"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        addr, text, t0 = {}, "", time.time()
        while time.time() - t0 < 600 and "hvt-linux:" not in text and proc.poll() is None:
            time.sleep(0.5)
            text = open(console, errors="replace").read() if os.path.exists(console) else ""
        for m in re.finditer(r"hvt-sym: ([0-9a-f]+) \w (\S+)", text):
            addr.setdefault(m.group(2), int(m.group(1), 16))
        if not addr:
            sys.exit(f"arm64-entry: no symbol address on the console of {guest}")
        gdb = Gdb(port)
        gdb.packet("?")
        gdb.drain(1.0)
        for name in names:
            if name not in addr:
                print(f"== {name}: not in /proc/kallsyms")
                continue
            start = addr[name] - BEFORE
            reply = gdb.packet("m%x,%x" % (start, BEFORE + AFTER))
            if not re.fullmatch(r"([0-9a-f]{2})+", reply):
                print(f"== {name} at {addr[name]:#x}: read failed ({reply})")
                continue
            raw = os.path.join(work, name + ".bin")
            with open(raw, "wb") as f:
                f.write(bytes.fromhex(reply))
            out = subprocess.run(["aarch64-linux-gnu-objdump", "-D", "-b", "binary", "-m", "aarch64",
                                  f"--adjust-vma={start:#x}", raw],
                                 capture_output=True, text=True, check=True).stdout
            print(f"== {name} at {addr[name]:#x}")
            for line in out.splitlines():
                m = re.match(r"\s*([0-9a-f]+):\t(.*)", line)
                if m:
                    print(f"  {int(m.group(1), 16) - addr[name]:+#06x}  {m.group(2).strip()}")
    finally:
        if proc:
            proc.kill()
            proc.wait()
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
