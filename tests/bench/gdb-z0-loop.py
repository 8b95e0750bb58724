#!/usr/bin/env python3
"""make bench: the gdbstub's own limit for a breakpoint on a NOP5 function entry, with no tracer
around it. A raw Z0 stop/continue loop on QEMU's gdbstub: one Z0 breakpoint at ADDR kept inserted;
at each stop `P` RIP = ADDR + 5 (the NOP5 skipped, on the thread that stopped: QEMU makes it the
register thread) and `vCont;c`. No register read, no memory read, no single-step.

usage: gdb-z0-loop.py PORT ADDR SECONDS [QMP-SOCKET]  ->  prints "z0-stops N SECONDS" (stops counted,
wall time); with QMP-SOCKET, at every 10th stop also QEMU's `info jit` "TB count": the translation blocks
QEMU made since the previous stop (whose debug stop flushed them all; this stop's flush is still pending
when its reply comes, unless the vCPUs already ran it as they paused: such samples, 0, are dropped),
then "tbs-per-stop MEDIAN SAMPLES" (the queries slow the loop: a separate run).
"""
import json
import socket
import sys
import time


class Stub:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, payload, ack=True):
        cs = sum(payload.encode()) & 0xFF
        self.s.sendall((b"+" if ack else b"") + b"$%s#%02x" % (payload.encode(), cs))

    def packet(self):
        """The next packet's payload (acks skipped; QEMU 7.2 keeps acknowledgements on)."""
        while True:
            start = self.buf.find(b"$")
            if start >= 0:
                end = self.buf.find(b"#", start)
                if end >= 0 and len(self.buf) >= end + 3:
                    p = self.buf[start + 1:end].decode("latin-1")
                    self.buf = self.buf[end + 3:]
                    return p
            data = self.s.recv(65536)
            if not data:
                raise SystemExit("gdb-z0-loop: the gdbstub closed the connection")
            self.buf += data

    def command(self, payload):
        self.send(payload)
        while True:
            p = self.packet()
            if p[:1] in ("T", "S") and payload not in ("?", "c", "vCont;c"):
                continue  # an unasked stop reply (QEMU sends one when a debugger connects)
            return p


class Monitor:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rw")
        self.f.readline()
        self.run({"execute": "qmp_capabilities"})

    def run(self, cmd):
        self.f.write(json.dumps(cmd) + "\n")
        self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if "return" in r or "error" in r:
                return r

    def tb_count(self):
        r = self.run({"execute": "human-monitor-command", "arguments": {"command-line": "info jit"}})
        for line in str(r.get("return", "")).splitlines():
            if line.startswith("TB count"):
                return int(line.split()[-1])
        raise SystemExit("gdb-z0-loop: no TB count in 'info jit'")


def main():
    port, addr, secs = int(sys.argv[1]), int(sys.argv[2], 0), float(sys.argv[3])
    mon = Monitor(sys.argv[4]) if len(sys.argv) > 4 else None
    tbs = []
    g = Stub(port)
    g.command("qSupported")
    g.command("qXfer:features:read:target.xml:0,ffb")  # QEMU answers P only after this
    g.command("?")
    if g.command("Z0,%x,1" % addr) != "OK":
        raise SystemExit("gdb-z0-loop: Z0 refused")
    set_rip = "P10=" + (addr + 5).to_bytes(8, "little").hex()
    stops = 0
    t0 = time.monotonic()
    end = t0 + secs
    while True:
        g.send("vCont;c")
        p = g.packet()
        if not p.startswith("T05"):
            raise SystemExit("gdb-z0-loop: stop reply %r" % p[:40])
        stops += 1
        if mon and stops % 10 == 0:
            tbs.append(mon.tb_count())
        if g.command(set_rip) != "OK":
            raise SystemExit("gdb-z0-loop: P refused")
        if time.monotonic() >= end:
            break
    wall = time.monotonic() - t0
    g.command("z0,%x,1" % addr)
    g.command("D")
    print("z0-stops %d %.3f" % (stops, wall))
    # a sample of 0: QEMU had already run this stop's flush (queued work, run as the vCPUs pause)
    tbs = sorted(n for n in tbs if n > 0)
    if mon and tbs:
        print("tbs-per-stop %d %d" % (tbs[len(tbs) // 2], len(tbs)))


main()
