#!/usr/bin/env python3
"""Reads the example CI jobs of docs/ci/ (tests/qemu/test_ci_example.c) with a YAML parser and prints,
per file, what a CI system would take from them: the job, the commands that run docs/ci/boot-test.sh,
and where the JUnit report is read. Exits 1 (with the reason) if a file does not parse or lacks one.

usage: ci_yaml.py github-actions.yml gitlab-ci.yml"""
import sys

import yaml


def runs_of_script(commands):
    return [c.strip() for c in commands if "docs/ci/boot-test.sh" in c]


def github(doc):
    # PyYAML reads the bare key `on` as the boolean true (YAML 1.1)
    on = doc.get("on", doc.get(True))
    if not on or "jobs" not in doc:
        raise ValueError("no `on` or no `jobs`")
    for name, job in doc["jobs"].items():
        steps = job["steps"]
        runs = runs_of_script(s["run"] for s in steps if "run" in s)
        junit = [s["with"]["report_paths"] for s in steps
                 if "action-junit-report" in s.get("uses", "")]
        artifacts = [s["with"]["path"] for s in steps if "upload-artifact" in s.get("uses", "")]
        return name, job["env"]["OUT"], runs, junit, artifacts


def gitlab(doc):
    for name, job in doc.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        art = job["artifacts"]
        return name, job["variables"]["OUT"], runs_of_script(job["script"]), \
            [art["reports"]["junit"]], art["paths"]
    raise ValueError("no job with a script")


def main():
    status = 0
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                doc = yaml.safe_load(f)
            name, out, runs, junit, artifacts = (github if "jobs" in doc else gitlab)(doc)
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as e:
            print("%s: %s" % (path, e))
            status = 1
            continue
        print("%s: job %s, OUT=%s, runs %s, junit %s, keeps %s"
              % (path.rsplit("/", 1)[-1], name, out, runs, junit, artifacts))
    return status


if __name__ == "__main__":
    sys.exit(main())
