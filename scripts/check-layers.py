#!/usr/bin/env python3
"""Checks the include graph of the product code: every include is root-relative, no folder includes a
folder above it (cli -> {kvm, qemu} -> vmm -> session -> {hosttrace, tap -> sink} -> trace -> {vmi, arch,
guest-stub} -> host/util; arch/x86 only from arch),
and no include loop exists between files (a .c file and its own header count as one unit). Prints one line per violation
and exits 1 if there is any."""
import os, re, subprocess, sys

# What each layer may include besides itself.
ALLOWED = {
    'host/cli': {'host/kvm', 'host/qemu', 'host/vmmpid', 'host/vmm', 'host/session', 'host/hosttrace', 'host/tap', 'host/sink', 'host/tracedat',
                 'host/trace', 'vmi', 'arch', 'guest-stub', 'host/util'},
    'host/kvm': {'host/vmm', 'host/session', 'host/hosttrace', 'host/tap', 'host/sink', 'host/tracedat', 'host/trace', 'vmi',
                 'arch', 'guest-stub', 'host/util'},
    'host/vmmpid': {'host/vmm', 'host/session', 'host/hosttrace', 'host/tap', 'host/sink', 'host/tracedat', 'host/trace', 'vmi',
                    'arch', 'guest-stub', 'host/util'},
    'host/qemu': {'host/vmm', 'host/session', 'host/hosttrace', 'host/tap', 'host/sink', 'host/tracedat', 'host/trace', 'vmi',
                  'arch', 'guest-stub', 'host/util'},
    'host/vmm': {'host/session', 'host/hosttrace', 'host/tap', 'host/sink', 'host/tracedat', 'host/trace', 'vmi',
                 'arch', 'guest-stub', 'host/util'},
    'host/session': {'host/hosttrace', 'host/tap', 'host/sink', 'host/tracedat', 'host/trace', 'vmi', 'arch',
                     'guest-stub', 'host/util'},
    'host/hosttrace': {'host/tracedat', 'host/util'},
    'host/tap': {'host/sink', 'host/tracedat', 'host/trace', 'vmi', 'arch', 'guest-stub', 'host/util'},
    'host/sink': {'host/tracedat', 'host/trace', 'vmi', 'arch', 'guest-stub', 'host/util'},
    'host/trace': {'vmi', 'arch', 'guest-stub', 'host/util'},
    'host/tracedat': {'host/util'},
    # the message helpers every layer formats its error lines with (msg_fmt, peer_text)
    'host/util': set(),
    'vmi': {'arch', 'host/util'},
    # arch/arch.h is the one hook header; an ISA's folder is includable only from arch/ (arch.h
    # exposes what backends driving that ISA's machine may name)
    'arch': {'arch/x86', 'arch/arm64'},
    'arch/arm64': {'arch'},
    'arch/x86': {'arch'},
    'guest-stub': set(),
    'guest-stub/x86': {'guest-stub'},
}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(path):
    for l in sorted(ALLOWED, key=len, reverse=True):
        if path.startswith(l + '/'):
            return l
    return None


def unit(path):
    return os.path.splitext(path)[0]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    files = subprocess.check_output(['git', 'ls-files', '-co', '--exclude-standard', '*.c', '*.h',
                                     '*.S']).decode().split()
    files = [f for f in files if layer(f) and os.path.exists(f)]
    bad = 0
    edges = {}
    for f in files:
        for inc in INC.findall(open(f, encoding='utf-8', errors='replace').read()):
            if not os.path.exists(inc):
                print(f'{f}: #include "{inc}" is not a root-relative path')
                bad += 1
                continue
            lf, li = layer(f), layer(inc)
            if li is None or (li != lf and li not in ALLOWED[lf]):
                print(f'{f}: includes {inc} ({li or "outside the product"}), above {lf}')
                bad += 1
            if unit(inc) != unit(f):
                edges.setdefault(unit(f), set()).add(unit(inc))
    # cycles between units
    state = {}
    stack = []

    def visit(u):
        nonlocal bad
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                print('include loop: ' + ' -> '.join(stack[stack.index(v):] + [v]))
                bad += 1
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if u not in state:
            visit(u)
    if bad:
        print(f'check-layers: {bad} violation(s)')
        return 1
    print(f'check-layers: {len(files)} files, no upward include, no loop')
    return 0


sys.exit(main())
