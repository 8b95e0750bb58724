#!/usr/bin/env python3
"""Checks that docs/architecture.md names every product file: each .c, .h and .S under host/, vmi/,
arch/ and guest-stub/ must be named in the file table ("| folder | file | what it does |"), where a
name without extension stands for the .c and the .h of that name, and a name with one for that file
alone. Also refuses names in the table that are no file any more. Prints one line per file and exits
1 if there is any."""
import os, re, subprocess, sys

DOC = 'docs/architecture.md'
PRODUCT = ('host', 'vmi', 'arch', 'guest-stub')
EXTS = ('.c', '.h', '.S')
NAME = re.compile(r'`([A-Za-z0-9_.-]+)`')


def table_names(text):
    """(folder, name) pairs of the file table: rows after the "| folder | file |" header until the
    first line that is not a table row. A row with an empty folder cell keeps the folder above."""
    names = []
    rows = iter(text.splitlines())
    for line in rows:
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) >= 3 and cells[0] == 'folder' and cells[1] == 'file':
            break
    else:
        return None
    folder = None
    for line in rows:
        if not line.startswith('|'):
            break
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 3 or all(c and set(c) <= set('-: ') for c in cells):
            continue
        if cells[0]:
            folder = cells[0].strip('`').rstrip('/')
        for n in NAME.findall(cells[1]):
            names.append((folder, n))
    return names


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    files = subprocess.check_output(['git', 'ls-files', '-co', '--exclude-standard', '--'] +
                                    list(PRODUCT)).decode().split()
    files = sorted(f for f in files if f.endswith(EXTS) and os.path.exists(f))
    try:
        text = open(DOC, encoding='utf-8').read()
    except OSError as e:
        print(f'check-architecture: {DOC}: {e.strerror}')
        return 1
    names = table_names(text)
    if names is None:
        print(f'check-architecture: {DOC} has no "| folder | file | ..." table')
        return 1
    named = set()
    bad = 0
    for folder, n in names:
        stem, ext = os.path.splitext(n)
        paths = [f'{folder}/{n}'] if ext in EXTS else [f'{folder}/{n}{e}' for e in EXTS]
        found = [p for p in paths if p in files]
        if not found:
            print(f'{DOC}: names {folder}/{n}, which is no product file')
            bad += 1
        named.update(found)
    for f in files:
        if f not in named:
            print(f'{f}: not named in the file table of {DOC}')
            bad += 1
    if bad:
        print(f'check-architecture: {bad} problem(s)')
        return 1
    print(f'check-architecture: {len(files)} product files, each named in {DOC}')
    return 0


sys.exit(main())
