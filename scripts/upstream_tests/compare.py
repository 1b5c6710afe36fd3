"""Prints upstream's tests with how each fared as upstream and with etpack
substituted (files written by etpack_substitute.py), one line per test and a
summary per file. Exits 1 when a test that passes upstream does not pass
with etpack, unless divergences.txt lists it and it failed with the error
listed there (a difference etpack keeps on purpose, with its reason).
"""

import json
import os
import sys
from collections import defaultdict


def divergences():
    """{test id: (error text expected, reason)} from divergences.txt."""
    out = {}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "divergences.txt")
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                test, error, reason = (part.strip() for part in line.split("|", 2))
                out[test] = (error, reason)
    return out


def main(upstream_path, etpack_path):
    with open(upstream_path) as f:
        upstream = json.load(f)
    with open(etpack_path) as f:
        etpack = json.load(f)
    known = divergences()
    files = defaultdict(lambda: [0, 0, 0])  # tests, pass upstream, pass with etpack
    regressions, kept = [], []
    absent = {"outcome": "absent", "error": ""}
    for test in sorted(set(upstream) | set(etpack)):
        up, et = upstream.get(test, absent), etpack.get(test, absent)
        mark = "  "
        if up["outcome"] == "passed" and et["outcome"] != "passed":
            error, reason = known.get(test, (None, None))
            if error is not None and error in et["error"]:
                mark = "=="
                kept.append(f"{test}\n      {et['error']}\n      why: {reason}")
            else:
                mark = "!!"
                regressions.append(f"{test}\n      {et['error']}")
        print(f"{mark} upstream {up['outcome']:<7} etpack {et['outcome']:<7} {test}")
        counts = files[test.split("::", 1)[0]]
        counts[0] += 1
        counts[1] += up["outcome"] == "passed"
        counts[2] += et["outcome"] == "passed"
    print()
    print(f"{'file':<48} {'tests':>5} {'upstream':>8} {'etpack':>6}")
    for name, (n, up, et) in sorted(files.items()):
        print(f"{name:<48} {n:>5} {up:>8} {et:>6}")
    if kept:
        print(f"\n{len(kept)} test(s) pass upstream and fail with etpack on purpose "
              "(divergences.txt):")
        for line in kept:
            print("  " + line)
    if regressions:
        print(f"\n{len(regressions)} test(s) pass upstream but not with etpack:")
        for line in regressions:
            print("  " + line)
        return 1
    print("\nevery other test that passes upstream passes with etpack")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
