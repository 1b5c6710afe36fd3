#!/usr/bin/env python3
"""This tree against an earlier revision, interleaved in one run: the check a
refactoring has to pass (`scripts/bench.sh --against REV`).

    scripts/bench_against.py --base-etpack OLD/apps/etpack --base-module OLD/python
        --etpack NEW/apps/etpack --module NEW/python --dir DIR [--size 1GiB] [--runs 5]

For each run, old and new one after the other (which goes first alternates),
each in a fresh process on a cold page cache (when it can be dropped):
  demo     etpack demo --size SIZE
  pack     etpack pack of a manifest whose constants are ranges of a
           3-shard safetensors checkpoint of SIZE (scripts/gen_manifest.py)
  ptd      etpack ptd of that checkpoint
  bundle   etpack bundle of a demo program of SIZE with one test case
  exir (a) etpack.exir serialize_pte_binary(...).save() of 50,000 constants
           of 64 MiB in all (bench/exir_bench.py's tree)
Inputs are made once, untimed, by the new build. Prints a markdown section:
per job the median wall time and the largest peak RSS of each side and the
ratio new / old of the medians (below 1: the new code is faster).
"""

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import exir_bench  # noqa: E402

# The demo's method `forward` takes one input: LONG[1, 64] token ids.
CASES = ('{"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "LONG", "sizes": [1, 64], '
         '"base64": "' + base64.b64encode(bytes(512)).decode() + '"}}]}]}}\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-etpack", required=True)
    ap.add_argument("--base-module", required=True)
    ap.add_argument("--etpack", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--rev", default="the base revision")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    d = args.dir
    new = os.path.abspath(args.etpack)
    old = os.path.abspath(args.base_etpack)

    # Inputs, untimed.
    ckpt = os.path.join(d, "ckpt")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_safetensors.py"), ckpt, "--size",
                    args.size, "--shards", "3"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_manifest.py"), ckpt, "-o",
                    os.path.join(d, "manifest.json")], check=True, stdout=subprocess.DEVNULL)
    demo_dir = os.path.join(d, "demo")
    os.makedirs(demo_dir, exist_ok=True)
    subprocess.run([new, "demo", "--size", args.size, "-o", demo_dir], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(d, "cases.json"), "w") as f:
        f.write(CASES)
    out = os.path.join(d, "out")

    def cli(etpack, job):
        if job == "demo":
            os.makedirs(out, exist_ok=True)
            return [etpack, "demo", "--size", args.size, "-o", out]
        if job == "pack":
            return [etpack, "pack", os.path.join(d, "manifest.json"), "-o", out]
        if job == "ptd":
            return [etpack, "ptd", os.path.join(ckpt, "model.safetensors.index.json"), "-o", out]
        return [etpack, "bundle", os.path.join(demo_dir, "demo.pte"), "--cases",
                os.path.join(d, "cases.json"), "-o", out]

    def exir(module):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(module) + ":" + exir_bench.TESTS)
        return ["/usr/bin/python3", "-c", exir_bench.CHILD, "a", out, "50000", str(64 << 20)], env

    jobs = ["demo", "pack", "ptd", "bundle", "exir (a)"]
    times = {(j, s): [] for j in jobs for s in ("old", "new")}
    rss = {(j, s): [] for j in jobs for s in ("old", "new")}
    for run in range(args.runs):
        sides = ("old", "new") if run % 2 == 0 else ("new", "old")
        for job in jobs:
            for side in sides:
                if os.path.isdir(out):
                    shutil.rmtree(out)
                elif os.path.exists(out):
                    os.remove(out)
                if job == "exir (a)":
                    cmd, env = exir(args.base_module if side == "old" else args.module)
                    stdout, _, peak = exir_bench.timed(cmd, env)
                    wall = json.loads(stdout)["exir"]
                else:
                    _, wall, peak = exir_bench.timed(cli(old if side == "old" else new, job))
                times[(job, side)].append(wall)
                rss[(job, side)].append(peak)
            print(f"   against run {run + 1} {job}: old {times[(job, 'old')][-1]:.2f} s, "
                  f"new {times[(job, 'new')][-1]:.2f} s", file=sys.stderr)
    shutil.rmtree(d, ignore_errors=True)

    med = statistics.median
    print(f"## Against {args.rev} (`scripts/bench.sh --against`)")
    print()
    print(f"scripts/bench_against.py, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores: "
          f"{args.rev} (old) and this tree (new), both release builds, run interleaved "
          f"({args.runs} runs, the side going first alternating), each a fresh process on a "
          "cold page cache; size " + args.size + " for the CLI jobs; exir (a) is "
          "bench/exir_bench.py's 50,000 constants of 64 MiB (the call alone, in-process time).")
    print()
    print("| job | old s (median) | new s (median) | new / old | old peak RSS MiB | "
          "new peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for job in jobs:
        o, n = med(times[(job, "old")]), med(times[(job, "new")])
        print(f"| {job} | {o:.2f} | {n:.2f} | **{n / o:.2f}** | "
              f"{max(rss[(job, 'old')]) / 1024:.1f} | {max(rss[(job, 'new')]) / 1024:.1f} |")


if __name__ == "__main__":
    main()
