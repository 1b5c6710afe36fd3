#!/usr/bin/env python3
"""Write an `etpack pack` manifest whose constants are byte ranges of
safetensors shards.

    gen_manifest.py CKPT_DIR [-o CKPT_DIR/manifest.json]

Every tensor of every CKPT_DIR/*.safetensors (shards in name order, tensors
in file order) becomes one constant of a .pte program: constant_buffer[i]
is {"file", "offset", "length"} pointing at the tensor's bytes inside its
shard, and value i-1 of method `forward` is a Tensor with data_buffer_idx
i. Nothing is copied: the manifest stays a few hundred KiB whatever the
checkpoint size. The shard paths are relative to the manifest's folder.
Checkpoints come from scripts/gen_safetensors.py (or Hugging Face).
"""

import argparse
import glob
import json
import os
import struct
import sys

# safetensors dtype -> ExecuTorch ScalarType code (docs/manifest.md)
SCALAR_TYPE = {"U8": 0, "I8": 1, "I16": 2, "I32": 3, "I64": 4, "F16": 5,
               "F32": 6, "F64": 7, "BOOL": 11, "BF16": 15}


def shard_tensors(path):
    """(name, dtype, shape, absolute offset, length) of each tensor of one
    shard, in file order. The header is an 8-byte little-endian length and
    JSON whose data_offsets count from the end of the header."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            sys.exit(f"{path}: shorter than the 8-byte safetensors header length")
        (n,) = struct.unpack("<Q", raw)
        header = json.loads(f.read(n))
    base = 8 + n
    out = []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in SCALAR_TYPE:
            sys.exit(f"{path}: {name}: dtype {t['dtype']} has no ExecuTorch scalar type here")
        begin, end = t["data_offsets"]
        out.append((name, t["dtype"], t["shape"], base + begin, end - begin))
    out.sort(key=lambda t: t[3])
    return out


def tensor_value(scalar_type, sizes, data_buffer_idx, allocation_info=None):
    return {"val_type": "Tensor", "val": {
        "scalar_type": scalar_type, "storage_offset": 0, "sizes": sizes,
        "dim_order": list(range(len(sizes))), "requires_grad": False, "layout": 0,
        "data_buffer_idx": data_buffer_idx, "allocation_info": allocation_info,
        "shape_dynamism": 0, "extra_tensor_info": None}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ckpt_dir")
    ap.add_argument("-o", "--output", help="default: CKPT_DIR/manifest.json")
    args = ap.parse_args()
    out = args.output or os.path.join(args.ckpt_dir, "manifest.json")
    shards = sorted(glob.glob(os.path.join(args.ckpt_dir, "*.safetensors")))
    if not shards:
        sys.exit(f"{args.ckpt_dir}: no *.safetensors files")
    out_dir = os.path.dirname(os.path.abspath(out))

    constants = [{"storage": {"base64": "", "size": 0}}]   # placeholder 0
    values = []
    for shard in shards:
        rel = os.path.relpath(os.path.abspath(shard), out_dir)
        for _, dtype, shape, offset, length in shard_tensors(shard):
            constants.append({"storage": {"file": rel, "offset": offset, "length": length}})
            values.append(tensor_value(SCALAR_TYPE[dtype], shape, len(constants) - 1))
    # One planned FLOAT[1] in arena 1 is the method's input and output, so
    # the method is complete without operators; the constants just sit there.
    io = len(values)
    values.append(tensor_value(6, [1], 0, {"memory_id": 1, "memory_offset_low": 0,
                                           "memory_offset_high": 0}))
    plan = {
        "name": "forward",
        "container_meta_type": {"encoded_inp_str": "", "encoded_out_str": ""},
        "values": values,
        "inputs": [io],
        "outputs": [io],
        "chains": [{"inputs": [io], "outputs": [io], "instructions": [], "stacktrace": None}],
        "operators": [],
        "delegates": [],
        "non_const_buffer_sizes": [0, 16],
        "non_const_buffer_device": None,
    }
    manifest = {
        "format": "pte",
        "serializer_options": None,
        "program": {
            "version": 0,
            "execution_plan": [plan],
            "constant_buffer": constants,
            "backend_delegate_data": [],
            "segments": [],
            "constant_segment": {"segment_index": 0, "offsets": []},
            "mutable_data_segments": None,
            "named_data": None,
        },
        "mutable_data": None,
        "named_data": None,
    }
    with open(out, "w") as f:
        json.dump(manifest, f, separators=(",", ":"))
        f.write("\n")
    total = sum(c["storage"].get("length", 0) for c in constants)
    print(f"{out}: {len(constants) - 1} constants, {total} bytes from {len(shards)} shards")


if __name__ == "__main__":
    main()
