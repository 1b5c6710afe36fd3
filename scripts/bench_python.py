#!/usr/bin/python3
"""The `python` job of scripts/bench.sh: etpack.save_ptd and etpack.save_pte
of SIZE of numpy arrays against ndarray.tofile + fsync of the same arrays,
with numpy.savez and torch.save (+ fsync) as further comparisons.

  scripts/bench_python.py --module-dir build-release/python --dir DIR [--size 2GiB] [--runs 3]
  scripts/bench_python.py --from-log LOG [--size 2GiB]   (the table again from a run's
                                                         progress lines on stderr)

Every run is a fresh /usr/bin/python3 under /usr/bin/time -v (peak RSS) on a
cold page cache: it fills the arrays (untimed: 16 float32 arrays of SIZE/16,
every page touched), then times the write including making it durable (etpack
syncs before publishing; the others are followed by fsync). Peak RSS counts
the arrays; the table gives RSS minus their size. Prints a markdown section.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

CHILD = r"""
import os, sys, time
import numpy as np
job, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
count = 16
arrays = {f"layers.{i}.weight": np.full(size // count // 4, i + 0.5, np.float32)
          for i in range(count)}
if job == "torch.save":
    import torch
    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
if job.startswith("etpack"):
    import etpack
if job == "etpack.save_pte":
    values = [{"val_type": "Tensor", "val": {"scalar_type": 6, "sizes": [a.size],
               "dim_order": [0], "data_buffer_idx": i + 1}} for i, a in enumerate(arrays.values())]
    program = {"version": 0, "execution_plan": [{"name": "forward", "values": values,
               "inputs": [], "outputs": [0], "chains": [], "operators": [], "delegates": [],
               "non_const_buffer_sizes": [0]}]}
start = time.perf_counter()
if job == "etpack.save_ptd":
    etpack.save_ptd(path, arrays)
elif job == "etpack.save_pte":
    etpack.save_pte(path, program, constants=[b""] + list(arrays.values()))
else:
    with open(path, "wb") as f:
        if job == "tofile":
            for a in arrays.values():
                a.tofile(f)
        elif job == "numpy.savez":
            np.savez(f, **arrays)
        elif job == "torch.save":
            torch.save(tensors, f)
        f.flush()
        os.fsync(f.fileno())
print(time.perf_counter() - start)
"""

JOBS = ["tofile", "etpack.save_ptd", "etpack.save_pte", "numpy.savez", "torch.save"]


def parse_size(text):
    m = re.fullmatch(r"(\d+)\s*(|K|M|G|KiB|MiB|GiB)", text.strip(), re.I)
    if not m:
        sys.exit(f"bench_python: bad size {text!r}")
    scale = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
             "g": 1 << 30, "gib": 1 << 30}[m.group(2).lower()]
    return int(m.group(1)) * scale


def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def run(job, path, size, module_dir):
    drop_caches()
    env = dict(os.environ, PYTHONPATH=module_dir)
    timing = path + ".time"
    out = subprocess.run(["/usr/bin/time", "-v", "-o", timing, "/usr/bin/python3", "-c", CHILD,
                          job, path, str(size)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_python: {job} failed:\n{out.stderr}")
    rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                            open(timing).read()).group(1))
    os.remove(timing)
    file_size = os.path.getsize(path)
    os.remove(path)
    return float(out.stdout.strip().splitlines()[-1]), rss_kib * 1024, file_size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module-dir")
    ap.add_argument("--dir")
    ap.add_argument("--from-log")
    ap.add_argument("--size", default="2GiB")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size = parse_size(args.size)
    mib = 1 << 20
    results = {job: [] for job in JOBS}
    if args.from_log:
        for m in re.finditer(r"run \d+: (\S+) ([\d.]+) s, RSS (\d+) MiB, (\d+) MiB",
                             open(args.from_log).read()):
            results[m.group(1)].append((float(m.group(2)), int(m.group(3)) * mib,
                                        int(m.group(4)) * mib))
        args.runs = len(results["tofile"])
    for r in range(0 if args.from_log else args.runs):
        for job in JOBS:  # interleaved, so drift hits every job alike
            seconds, rss, file_size = run(job, os.path.join(args.dir, "out.bin"), size,
                                          args.module_dir)
            results[job].append((seconds, rss, file_size))
            print(f"   python {args.size} run {r + 1}: {job} {seconds:.2f} s, "
                  f"RSS {rss / mib:.0f} MiB, {file_size // mib} MiB", file=sys.stderr)
    arrays = size // 16 // 4 * 4 * 16
    base = statistics.median(s for s, _, _ in results["tofile"])
    lines = [
        "## Python module (`scripts/bench.sh --jobs python`)",
        "",
        f"{args.size} of numpy arrays (16 float32 arrays of {arrays // 16 // mib} MiB, filled "
        "untimed) written by a fresh `/usr/bin/python3` per run, page cache dropped "
        "first; time of the write including making it durable (etpack syncs before its "
        "rename; the others are followed by `fsync`); median of "
        f"{args.runs} runs (range in brackets), interleaved. Ratio = throughput / "
        "throughput of `ndarray.tofile` + fsync of the same arrays in the same run. "
        "Peak RSS (`/usr/bin/time -v`, largest run) counts the arrays; "
        "\"above arrays\" subtracts their size (the interpreter, numpy and the writer).",
        "",
        "| writer | file MiB | s | MiB/s | ratio to tofile | peak RSS MiB | RSS above arrays MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for job in JOBS:
        secs = [s for s, _, _ in results[job]]
        med = statistics.median(secs)
        rss = max(r for _, r, _ in results[job])
        fsize = results[job][0][2]
        lines.append(
            f"| `{job}` | {fsize / mib:.0f} | {med:.2f} ({min(secs):.2f}–{max(secs):.2f}) | "
            f"{arrays / mib / med:.0f} | **{base / med:.2f}×** | {rss / mib:.0f} | "
            f"{(rss - arrays) / mib:.0f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
