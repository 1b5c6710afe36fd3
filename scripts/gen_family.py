#!/usr/bin/env python3
"""Write the manifests of a family of exported variants of one model: the
input of `scripts/bench.sh --jobs share`.

    gen_family.py CKPT_DIR OUT_DIR --variants 5 [--variant-bytes 4MiB] [--names]

CKPT_DIR holds a safetensors checkpoint (scripts/gen_safetensors.py). Each
variant OUT_DIR/vK.json (K = 1..N) is the manifest scripts/gen_manifest.py
writes for it (every tensor a constant read from the shards, nothing
copied) plus one constant of its own: OUT_DIR/maskK.bin, --variant-bytes of
F32 whose contents differ per variant, as a causal mask or a rope table
differs per context window. With --names every constant carries its
checkpoint name as fully_qualified_name (extra_tensor_info), as an
exporter that names its weights does; without, none has a name.
`etpack pack OUT_DIR/vK.json -o vK.pte` makes the programs.
"""

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_manifest  # noqa: E402
from gen_safetensors import parse_size  # noqa: E402


def named(value, name):
    value["val"]["extra_tensor_info"] = {
        "mutable_data_segments_idx": 0, "fully_qualified_name": name,
        "location": 0, "device_type": 0, "device_index": 0}
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ckpt_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--variants", type=int, default=5)
    ap.add_argument("--variant-bytes", type=parse_size, default=4 << 20)
    ap.add_argument("--names", action="store_true")
    args = ap.parse_args()
    if args.variant_bytes % 4:
        sys.exit("--variant-bytes must be a multiple of 4 (F32)")
    os.makedirs(args.out_dir, exist_ok=True)
    base = os.path.join(args.out_dir, "base.json")
    gen_manifest.sys.argv = ["gen_manifest.py", args.ckpt_dir, "-o", base]
    gen_manifest.main()
    with open(base) as f:
        manifest = json.load(f)
    os.remove(base)
    program = manifest["program"]
    plan = program["execution_plan"][0]
    if args.names:
        shards = sorted(os.path.join(args.ckpt_dir, n) for n in os.listdir(args.ckpt_dir)
                        if n.endswith(".safetensors"))
        names = [t[0] for s in shards for t in gen_manifest.shard_tensors(s)]
        for value, name in zip(plan["values"], names):
            named(value, name)
    # The planned input/output tensor stays last; the variant's own
    # constant goes before it.
    io = plan["values"].pop()
    for k in range(1, args.variants + 1):
        mask = os.path.join(args.out_dir, f"mask{k}.bin")
        with open(mask, "wb") as f:
            f.write(random.Random(1000 + k).randbytes(args.variant_bytes))
        constants = program["constant_buffer"] + [
            {"storage": {"file": f"mask{k}.bin", "offset": 0, "length": args.variant_bytes}}]
        mask_value = gen_manifest.tensor_value(6, [args.variant_bytes // 4], len(constants) - 1)
        if args.names:
            named(mask_value, "causal_mask")
        values = plan["values"] + [mask_value, io]
        index = len(values) - 1
        variant = dict(manifest)
        variant["program"] = dict(program, constant_buffer=constants, execution_plan=[
            dict(plan, values=values, inputs=[index], outputs=[index],
                 chains=[dict(plan["chains"][0], inputs=[index], outputs=[index])])])
        out = os.path.join(args.out_dir, f"v{k}.json")
        with open(out, "w") as f:
            json.dump(variant, f, separators=(",", ":"))
            f.write("\n")
    print(f"{args.out_dir}: {args.variants} variants of {len(plan['values'])} shared constants "
          f"+ {args.variant_bytes} bytes each")


if __name__ == "__main__":
    main()
