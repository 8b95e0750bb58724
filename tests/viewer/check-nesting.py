#!/usr/bin/env python3
"""Checks what Perfetto's and chrome://tracing's JSON importers need beyond valid JSON, on each
Chrome trace-event file given: every track (pid, tid) is named by metadata events; on a track, B/E
events pair up in order with matching names (no E without its B, none left open); and all slices of a
track (B/E pairs and X events) nest: any two are disjoint or one holds the other. Prints one line per
file, "ok FILE: N slices on M tracks" or "FAIL FILE: why"; exits 1 if any failed."""
import json
import sys
from collections import defaultdict


def check(path):
    with open(path, encoding='utf-8') as f:
        doc = json.load(f)
    named, slices, stacks = set(), defaultdict(list), defaultdict(list)
    for e in doc['traceEvents']:
        key = (e['pid'], e['tid'])
        if e['ph'] == 'M':
            if e['name'] == 'thread_name':
                named.add(key)
            continue
        if key not in named:
            return f'track {key} used before its thread_name'
        ts = round(e['ts'] * 1000)
        if e['ph'] == 'B':
            stacks[key].append((e['name'], ts))
        elif e['ph'] == 'E':
            if not stacks[key]:
                return f'E {e["name"]!r} at {e["ts"]} on {key} without a B'
            name, start = stacks[key].pop()
            if name != e['name'] or ts < start:
                return f'E {e["name"]!r} at {e["ts"]} on {key} closes {name!r}'
            slices[key].append((start, ts, name))
        elif e['ph'] == 'X':
            slices[key].append((ts, ts + round(e['dur'] * 1000), e['name']))
        elif e['ph'] != 'i':
            return f'unexpected phase {e["ph"]!r}'
    for key, st in stacks.items():
        if st:
            return f'{len(st)} slices left open on {key}'
    for key, sl in slices.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        open_ = []
        for start, end, name in sl:
            while open_ and open_[-1][1] <= start:
                open_.pop()
            if open_ and end > open_[-1][1]:
                return f'{name!r} [{start}, {end}] overlaps {open_[-1][2]!r} {open_[-1][:2]} on {key}'
            open_.append((start, end, name))
    return f'{sum(map(len, slices.values()))} slices on {len(slices)} tracks'


failed = 0
for p in sys.argv[1:]:
    try:
        r = check(p)
    except (OSError, ValueError, KeyError, TypeError) as e:
        r = f'{type(e).__name__}: {e}'
    ok = r.endswith('tracks')
    failed += not ok
    print(f'{"ok" if ok else "FAIL"} {p}: {r}')
sys.exit(1 if failed else 0)
