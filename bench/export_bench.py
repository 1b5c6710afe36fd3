"""The serialization step of a real export, upstream's serializer against
etpack's (scripts/bench.sh --jobs export).

One Llama-shaped model (executorch's own llama, random weights from a fixed
seed) is built, quantized 8da4w (group size 32) with int8 embeddings, exported
and lowered to XNNPACK once, each step timed. Then the serialization step --
`to_executorch()` through the written .pte -- runs --runs times with upstream's
serializer and --runs times with etpack installed, alternated, each on a cold
page cache (when permitted) and with the process's peak RSS reset first
(/proc/self/clear_refs), so each row's peak is that step's own. The .pte files
of both sides must be equal after decoding (checked once); each run's figures
go to --out as one JSON object.

Usage: python bench/export_bench.py --config 1b|small --dir DIR --out FILE.json [--runs 3]
"""

import argparse
import contextlib
import copy
import json
import os
import statistics
import sys
import time

CONFIGS = {
    # Llama 3.2 1B's shape.
    "1b": dict(dim=2048, n_layers=16, n_heads=32, n_kv_heads=8, hidden_dim=8192,
               vocab_size=128256, max_seq_len=512, max_context_len=512),
    # For trying the bench itself in a minute.
    "small": dict(dim=256, n_layers=4, n_heads=8, n_kv_heads=2, hidden_dim=768,
                  vocab_size=4096, max_seq_len=128, max_context_len=128),
}


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak():
    """VmHWM := VmRSS (Linux >= 4.0), so the next peak is the next step's."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def drop_caches():
    os.sync()
    with contextlib.suppress(OSError):
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")


def build(config):
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    from executorch.examples.models.llama.source_transformation.quantize import (
        get_quant_embedding_transform, quantize)
    from executorch.exir import to_edge_transform_and_lower

    steps = {}
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    t = time.monotonic()
    model = construct_transformer(ModelArgs(use_kv_cache=True, max_batch_size=1,
                                            **CONFIGS[config])).eval()
    steps["build model"] = time.monotonic() - t
    t = time.monotonic()
    model = get_quant_embedding_transform("8,0")(model)
    model = quantize(model, "8da4w", group_size=32)
    steps["quantize (8da4w, int8 embeddings)"] = time.monotonic() - t
    example = (torch.tensor([[1]], dtype=torch.long),
               {"input_pos": torch.tensor([0], dtype=torch.long)})
    t = time.monotonic()
    exported = torch.export.export(model, example, strict=False)
    steps["torch.export"] = time.monotonic() - t
    del model
    t = time.monotonic()
    edge = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    steps["to_edge_transform_and_lower (XNNPACK)"] = time.monotonic() - t
    return edge, steps


def serialize(edge, path):
    """to_executorch() through the written file: seconds, peak RSS above the
    step's start (KiB), the file's size. to_executorch() changes the graphs it
    is given, so each run takes a copy of the lowered program, made untimed."""
    edge = copy.deepcopy(edge)
    drop_caches()
    reset_peak()
    start_rss = rss_kib("VmRSS")
    t = time.monotonic()
    manager = edge.to_executorch()
    with open(path, "wb") as f:
        manager.write_to_file(f)
        f.flush()
        os.fsync(f.fileno())
    seconds = time.monotonic() - t
    peak = rss_kib("VmHWM")
    del manager, edge
    return seconds, peak - start_rss, peak, os.path.getsize(path)


def section(r):
    """The RESULTS.md section of one run's figures."""
    p = r["params"]
    up, ours = r["sides"]["upstream"], r["sides"]["etpack"]
    lines = [
        "## A real export's serialization step",
        "",
        f"`scripts/bench.sh --jobs export` (bench/export_bench.py): executorch's Llama at "
        f"{r['config']} (dim {p['dim']}, {p['n_layers']} layers, {p['n_heads']} heads, "
        f"{p['n_kv_heads']} KV heads, hidden {p['hidden_dim']}, vocab {p['vocab_size']}, "
        f"context {p['max_context_len']}; random weights), 8da4w (group 32) with int8 "
        "embeddings, XNNPACK. The export's steps ran once; the serialization step "
        "(`to_executorch()` through the written, fsynced `.pte`) ran "
        f"{r['runs']} times a side, alternated, each on a cold page cache and a copy of the "
        "lowered program; medians. Peak RSS is the process's (it holds the lowered "
        "program) and its rise during the step. The two `.pte` files decode to the same "
        f"program: {'yes' if r['same_program'] else 'NO'}.",
        "",
        "| step | seconds | share of the export |",
        "|---|---|---|",
    ]
    total = r["export_s"] + up["serialize_s"]
    for name, sec in r["steps_s"].items():
        lines.append(f"| {name} | {sec:.1f} | {sec / total:.0%} |")
    lines += ["", "| serializer | serialization s (runs) | share of the export | "
              "peak RSS MiB | rise MiB | .pte bytes |", "|---|---|---|---|---|---|"]
    for name, side in (("upstream", up), ("etpack", ours)):
        runs = ", ".join(f"{x:.2f}" for x in side["serialize_s_all"])
        lines.append(f"| {name} | {side['serialize_s']:.2f} ({runs}) | "
                     f"{side['share_of_export']:.1%} | {side['process_peak_mib']:.0f} | "
                     f"{side['peak_above_start_mib']:.0f} | {side['file_bytes']:,} |")
    lines += ["", f"etpack / upstream, serialization time: "
              f"{ours['serialize_s'] / up['serialize_s']:.2f}; rise in RSS: "
              f"{ours['peak_above_start_mib']:.0f} against {up['peak_above_start_mib']:.0f} MiB."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=sorted(CONFIGS), default="1b")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    import etpack.exir
    import executorch.exir.program._program as program

    t = time.monotonic()
    edge, steps = build(a.config)
    upstream_fn = program.serialize_for_executorch
    sides = {"upstream": lambda: setattr(program, "serialize_for_executorch", upstream_fn),
             "etpack": etpack.exir.install}
    runs = {side: [] for side in sides}
    for i in range(a.runs):
        for side, use in sides.items():
            use()
            path = os.path.join(a.dir, f"{side}.pte")
            runs[side].append(serialize(edge, path))
            print(f"export_bench: {side} run {i + 1}: {runs[side][-1][0]:.2f} s, "
                  f"peak +{runs[side][-1][1] / 1024:.0f} MiB", file=sys.stderr, flush=True)
    setattr(program, "serialize_for_executorch", upstream_fn)
    from executorch.exir._serialize._program import deserialize_pte_binary
    with open(os.path.join(a.dir, "upstream.pte"), "rb") as f:
        theirs = deserialize_pte_binary(f.read())
    with open(os.path.join(a.dir, "etpack.pte"), "rb") as f:
        ours = deserialize_pte_binary(f.read())
    same = theirs.program == ours.program
    export_s = sum(steps.values())
    out = {"config": a.config, "params": CONFIGS[a.config], "steps_s": steps,
           "export_s": export_s, "same_program": same, "runs": a.runs, "sides": {}}
    for side, rows in runs.items():
        s = statistics.median(r[0] for r in rows)
        out["sides"][side] = {
            "serialize_s": s, "serialize_s_all": [r[0] for r in rows],
            "peak_above_start_mib": statistics.median(r[1] for r in rows) / 1024,
            "process_peak_mib": statistics.median(r[2] for r in rows) / 1024,
            "file_bytes": rows[-1][3],
            "share_of_export": s / (export_s + s)}
    out["wall_s"] = time.monotonic() - t
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(section(out))
    if not same:
        sys.exit("export_bench: etpack's .pte does not decode to upstream's program")


if __name__ == "__main__":
    main()
