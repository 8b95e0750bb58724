#!/usr/bin/env python3
"""Runs a command with its stderr on a pseudo-terminal (stdin from /dev/null, stdout to a file),
for the tests of hvtrace's progress line (tests/kvm/test_kvm_json.c, tests/ci/).

usage: pty_stderr.py OUT CMD [ARGS...]     (OUT "-": stdout on the terminal too)

Writes what the command wrote to the terminal to standard output, each byte outside printable ASCII
as \\xHH (so \\r and ESC are visible), and exits with the command's exit status."""
import os
import re
import pty
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    master, slave = pty.openpty()
    with open(os.devnull if sys.argv[1] == "-" else sys.argv[1], "wb") as out, \
            open(os.devnull, "rb") as devnull:
        child = subprocess.Popen(sys.argv[2:], stdin=devnull,
                                 stdout=slave if sys.argv[1] == "-" else out, stderr=slave)
    os.close(slave)
    got = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last holder of the slave side closed it
            break
        if not chunk:
            break
        got += chunk
    status = child.wait()
    os.close(master)
    # one callback per escaped byte, not a Python step per byte: megabytes of trace stay quick
    sys.stdout.write(re.sub(rb"[^\x20-\x5b\x5d-\x7e]", lambda m: b"\\x%02x" % m[0][0],
                            bytes(got)).decode("ascii"))
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
