#!/usr/bin/env python3
"""scripts/lane-tsc-offsets.py HOST.dat GUEST.dat TSC_KHZ: how far a `record --host` pair's stub events
sit from their vCPU's guest-mode intervals, as recorded and as they would be if the guest clock followed
each vCPU's TSC offset as the host's kvm:kvm_write_tsc_offset events give it (issue 40's clock item).

Record the pair with the offsets in the host's file:
    hvtrace record -o T.dat --host --host-event kvm:kvm_write_tsc_offset --probe stub ... GUEST
then run this with the guest TSC's rate (L1's tsc_khz in the nested lane). It reads
`trace-cmd report -R -i HOST -i GUEST` and `trace-cmd dump --options -i HOST` (the vCPU -> host thread
map), and prints per vCPU how many `function` events (the stub's) lie inside a kvm_entry..kvm_exit of
their vCPU's thread, both ways, and the spread of the distances to the nearest interval (us).

The model: hvtrace stamps stub records with one anchor, vCPU 0's guest TSC against CLOCK_MONOTONIC
before the vCPUs run; KVM's guest TSC is the host TSC plus the vCPU's offset, which KVM rewrites (in
the lane twice per KVM_RUN: back to where the guest TSC stopped, then forward to catch up, and at a
vCPU's first run by tens of milliseconds, a different amount per vCPU). So an event's host time is its
recorded time less (offset of its vCPU in force then - vCPU 0's offset at the anchor) / rate; the
anchor's offset is vCPU 0's in force at the session's start (the guest file's TIME_SHIFT offset). Exit status 0; 2 on bad arguments.
"""
import bisect
import re
import subprocess
import sys


def s64(x):
    x %= 1 << 64
    return x - (1 << 64) if x >= 1 << 63 else x


def main():
    if len(sys.argv) != 4:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    host, guest, khz = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        khz = float(khz)
        if khz <= 0:
            raise ValueError
    except ValueError:
        print("lane-tsc-offsets: TSC_KHZ: '%s' is not a positive number" % sys.argv[3], file=sys.stderr)
        return 2
    opts = subprocess.run(["trace-cmd", "dump", "--options", "-i", host], capture_output=True, text=True).stdout
    tids = {}
    for line in opts.splitlines():
        m = re.match(r"\s+(\d+) (\d+) \[guest cpu, host pid\]", line)
        if m:
            tids[int(m.group(2))] = int(m.group(1))
    if not tids:
        print("lane-tsc-offsets: %s names no vCPU threads (no GUEST option)" % host, file=sys.stderr)
        return 2
    nv = max(tids.values()) + 1
    text = subprocess.run(["trace-cmd", "report", "-R", "-i", host, "-i", guest],
                          capture_output=True, text=True).stdout
    writes = {v: [] for v in range(nv)}  # (time, previous, next)
    ints = {v: [] for v in range(nv)}
    entered = {}
    events = []  # (time, vcpu)
    hostname = host.rsplit("/", 1)[-1]
    for line in text.splitlines():
        if hostname + ":" in line:
            m = re.search(r"-(\d+)\s+\[\d+\]\s+([\d.]+): (\w+):(.*)", line)
            if not m or int(m.group(1)) not in tids:
                continue
            v, t, ev = tids[int(m.group(1))], float(m.group(2)), m.group(3)
            if ev == "kvm_write_tsc_offset":
                o = re.search(r"previous_tsc_offset=(\d+) next_tsc_offset=(\d+)", m.group(4))
                writes[v].append((t, int(o.group(1)), int(o.group(2))))
            elif ev == "kvm_entry":
                entered[v] = t
            elif ev == "kvm_exit" and v in entered:
                ints[v].append((entered.pop(v), t))
            continue
        m = re.search(r"\[(\d+)\]\s+([\d.]+): function:", line)
        if m and int(m.group(1)) < nv:
            events.append((float(m.group(2)), int(m.group(1))))
    if not writes[0]:
        print("lane-tsc-offsets: no kvm_write_tsc_offset of vCPU 0 in %s (--host-event)" % host,
              file=sys.stderr)
        return 2
    # the anchor: vCPU 0's offset in force at the session's start (the guest file's TIME_SHIFT offset,
    # hvtrace's t0, CLOCK_MONOTONIC ns), before its first write if none came earlier
    gopts = subprocess.run(["trace-cmd", "dump", "--options", "-i", guest], capture_output=True,
                           text=True).stdout
    m = re.search(r"^\s*(\d+) \d+ \d+ \d+\s*\[offset \* scaling", gopts, re.M)
    t0 = int(m.group(1)) / 1e9 if m else None
    wtimes = {v: [w[0] for w in writes[v]] for v in range(nv)}
    if t0 is None:
        print("lane-tsc-offsets: %s has no TIME_SHIFT (not a record --host guest file)" % guest,
              file=sys.stderr)
        return 2
    k = bisect.bisect_right(wtimes[0], t0) - 1
    ref = writes[0][0][1] if k < 0 else writes[0][k][2]

    def offset(v, t):
        i = bisect.bisect_right(wtimes[v], t) - 1
        if not writes[v]:
            return ref
        return writes[v][0][1] if i < 0 else writes[v][i][2]

    def follow(t, v):
        at = t
        for _ in range(4):  # the offset in force at the event's host time
            at = t - s64(offset(v, at) - ref) / khz / 1000.0
        return at

    def distance(t, v):
        starts = [a for a, _ in ints[v]]
        j = bisect.bisect_right(starts, t) - 1
        best = None
        for k in (j, j + 1):
            if 0 <= k < len(ints[v]):
                a, b = ints[v][k]
                d = 0.0 if a <= t <= b else (a - t if t < a else b - t)
                if best is None or abs(d) < abs(best):
                    best = d
        return best

    for name, fix in (("as recorded", False), ("following the offsets", True)):
        for v in range(nv):
            ds = [distance(follow(t, v) if fix else t, v) for t, vv in events if vv == v and ints[v]]
            ds = sorted(d * 1e6 for d in ds if d is not None)
            inside = sum(1 for d in ds if d == 0)
            spread = "min %.0f median %.0f max %.0f" % (ds[0], ds[len(ds) // 2], ds[-1]) if ds else "-"
            print("%s: vCPU %d: %d of %d stub events inside a kvm_entry..kvm_exit of its thread "
                  "(%d offset writes; distance us %s)" % (name, v, inside, len(ds), len(writes[v]), spread))
    return 0


if __name__ == "__main__":
    sys.exit(main())
