#!/usr/bin/python3
"""The `exir` job of scripts/bench.sh: etpack.exir.serialize_pte_binary(...).save()
of an LLM-shaped object tree built with the stand-in classes of
python/tests/exir_classes.py (what ExecuTorch's exporter holds).

  bench/exir_bench.py --module-dir build-release/python --dir DIR [--runs 1]

(a) 50,000 constant tensors totalling 64 MiB: the whole call against
    dataclasses.asdict + json.dumps of the same tree (the JSON route; bytes
    become lists of byte values, as upstream's JSON encoder writes them), each
    in a fresh process that built the same tree.
(b) 200 tensors totalling 2 GiB: peak RSS minus the inputs, and throughput
    against `cp` + sync of the written .pte.
Every measurement is a fresh /usr/bin/python3 under /usr/bin/time -v on a
cold page cache (when it can be dropped); building the tree is untimed.
Prints a markdown section for bench/RESULTS.md.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "python", "tests")

CHILD = r"""
import dataclasses, json, os, sys, time
import exir_classes as C
import etpack.exir as ex
job, path, count, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
each = total // count
base = os.urandom(each)
# Distinct bytes per tensor (the first 8 bytes differ): one copy each, as an
# exporter holds them.
storages = [b""] + [i.to_bytes(8, "little") + base[8:] for i in range(count)]
del base

def tensor(buffer, offset=None, sizes=(each // 2,)):
    return C.EValue(C.Tensor(C.ScalarType.BFLOAT16, 0, list(sizes), list(range(len(sizes))),
                             False, 0, buffer,
                             None if offset is None else C.AllocationDetails(0, offset, 0)))

# Per layer of an LLM: weights (constants), activations (planned), one kernel
# call per weight reading an activation and writing the next.
values = [tensor(i + 1) for i in range(count)]
values += [tensor(0, 4096 * i, (1, 4096)) for i in range(count + 1)]
ops = [C.Operator("aten::linear", "out"), C.Operator("aten::add", "out"),
       C.Operator("aten::mul", "out"), C.Operator("aten::rms_norm", "out")]
instructions = [C.Instruction(C.KernelCall(i % len(ops), [count + i, i, count + i + 1]))
                for i in range(count)]
plan = C.ExecutionPlan("forward", C.ContainerMetadata("[]", "[]"), values, [count],
                       [2 * count], [C.Chain([count], [2 * count], instructions, None)], ops,
                       [], [0, 4096 * (count + 1)])
program = C.Program(0, [plan], [C.Buffer(s) for s in storages], [], [],
                    C.SubsegmentOffsets(0, []))
pte_file = C.PTEFile(program)
result = {}
start = time.perf_counter()
if job == "json":
    # Bytes as upstream's JSON encoder writes them: a list of byte values.
    text = json.dumps(dataclasses.asdict(program), default=list)
    result["json"] = time.perf_counter() - start
    result["json_bytes"] = len(text)
else:
    ex.serialize_pte_binary(pte_file).save(path)
    result["exir"] = time.perf_counter() - start
result["inputs"] = sum(len(s) for s in storages)
print(json.dumps(result))
"""


def drop_caches():
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    except OSError:
        pass


def timed(cmd, env=None):
    """(stdout, wall s, peak RSS KiB) of cmd under /usr/bin/time -v."""
    drop_caches()
    out = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True,
                         env=env, check=True)
    wall = re.search(r"Elapsed \(wall clock\) time .*: (\S+)", out.stderr).group(1)
    seconds = 0.0
    for part in wall.split(":"):
        seconds = seconds * 60 + float(part)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    return out.stdout, seconds, rss


def main():
    import json
    ap = argparse.ArgumentParser()
    ap.add_argument("--module-dir", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.module_dir) + ":" + TESTS)
    out = os.path.join(args.dir, "out.pte")
    a_rows, b_rows = [], []
    for run in range(args.runs):
        print(f"== exir (a) run {run + 1} ({time.strftime('%T')})", file=sys.stderr)
        # Each route in a fresh process of its own: run one after the other in
        # one process, the second would reuse the heap pages the first faulted in.
        a_route, a_rss = {}, {}
        for route in ("a", "json"):
            stdout, wall, a_rss[route] = timed(["/usr/bin/python3", "-c", CHILD, route, out,
                                                "50000", str(64 << 20)], env)
            a_route.update(json.loads(stdout))
        a_rows.append((a_route["exir"], a_route["json"], a_rss["a"], a_route["inputs"]))
        os.remove(out)
        print(f"== exir (b) run {run + 1} ({time.strftime('%T')})", file=sys.stderr)
        stdout, wall, rss = timed(["/usr/bin/python3", "-c", CHILD, "b", out, "200",
                                   str(2 << 30)], env)
        r = json.loads(stdout)
        size = os.path.getsize(out)
        _, cp_wall, _ = timed(["sh", "-c", 'cp "$0" "$1" && sync', out,
                               os.path.join(args.dir, "copy.pte")])
        b_rows.append((r["exir"], cp_wall, rss, r["inputs"], size))
        os.remove(out)
        os.remove(os.path.join(args.dir, "copy.pte"))

    med = statistics.median
    ex_a, js_a = med(r[0] for r in a_rows), med(r[1] for r in a_rows)
    ex_b, cp_b = med(r[0] for r in b_rows), med(r[1] for r in b_rows)
    rss_b = med(r[2] for r in b_rows)
    inputs, size = b_rows[0][3], b_rows[0][4]
    print("## ExecuTorch exporter objects (`scripts/bench.sh --jobs exir`)")
    print()
    print(f"bench/exir_bench.py, {time.strftime('%Y-%m-%d')}, median of {args.runs} run(s); "
          "an LLM-shaped `PTEFile` of python/tests/exir_classes.py objects, one fresh "
          "/usr/bin/python3 per measurement, page cache dropped first (when permitted); "
          "building the tree is untimed.")
    print()
    print("| case | etpack.exir `serialize_pte_binary(...).save()` | comparison | ratio | "
          "peak RSS − inputs MiB |")
    print("|---|---|---|---|---|")
    print(f"| (a) 50,000 constants, 64 MiB | {ex_a:.3f} s | asdict + json.dumps "
          f"{js_a:.3f} s | **{js_a / ex_a:.1f}× faster** (need ≥ 20×); per run: "
          f"{', '.join(f'{r[1] / r[0]:.1f}×' for r in a_rows)} | "
          f"{(med(r[2] for r in a_rows) * 1024 - a_rows[0][3]) / 2**20:.0f} |")
    print(f"| (b) 200 constants, 2 GiB | {ex_b:.2f} s, {size / ex_b / 2**20:.0f} MiB/s | "
          f"cp + sync {cp_b:.2f} s, {size / cp_b / 2**20:.0f} MiB/s | "
          f"**{cp_b / ex_b:.2f}× cp** (need ≥ 0.9×) | "
          f"{(rss_b * 1024 - inputs) / 2**20:.0f} (need ≤ 64) |")


if __name__ == "__main__":
    main()
