#!/usr/bin/env python3
"""Writes the manifest of a fat .pte for scripts/bench.sh's `fat` job.

    gen_fat_manifest.py WEIGHTS MLX VULKAN -o MANIFEST

One method `forward` calls one NativeBackend delegate whose payload is an
NFAT container of three lowerings: the native program (its weight EXTERNAL
under "layer.w"), an MLX and a Vulkan payload (the files MLX and VULKAN).
All three bring the same weights (the file WEIGHTS) as named data under
their own keys, so the .pte stores them once. File paths in the manifest
are absolute; nothing large passes through JSON.
"""
import argparse
import json
import os


def tensor(nbytes, key):
    # A BYTE tensor of nbytes, as [rows, 4096] so any size below 8 TiB fits int32.
    rows, rem = divmod(nbytes, 4096)
    sizes = [rows, 4096] if rem == 0 else [nbytes]
    return {"val_type": "Tensor", "val": {
        "scalar_type": 0, "storage_offset": 0, "sizes": sizes,
        "dim_order": list(range(len(sizes))), "requires_grad": False, "layout": 0,
        "data_buffer_idx": 0, "allocation_info": None, "shape_dynamism": 0,
        "extra_tensor_info": {"fully_qualified_name": key, "location": 1}}}


def method(values, delegates):
    return {"name": "forward",
            "container_meta_type": {"encoded_inp_str": "", "encoded_out_str": ""},
            "values": values, "inputs": [], "outputs": [0] if values else [],
            "chains": [{"inputs": [], "outputs": [], "instructions": []}],
            "operators": [], "delegates": delegates,
            "non_const_buffer_sizes": [0], "non_const_buffer_device": None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("mlx")
    ap.add_argument("vulkan")
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    weights = os.path.abspath(a.weights)
    nbytes = os.path.getsize(weights)

    def named(key):
        return {"buffers": [{"file": weights}],
                "entries": [{"key": key, "buffer_index": 0, "alignment": 64}]}

    native = {"version": 0, "execution_plan": [method([tensor(nbytes, "layer.w")], [])],
              "constant_buffer": [{"storage": {"base64": "", "size": 0}}]}
    fat = {"nfat": {"payload_alignment": 64, "entries": [
        {"backend_id": "NativeBackend", "program": {"program": native},
         "named_data": named("layer.w")},
        {"backend_id": "MLXBackend", "data": {"file": os.path.abspath(a.mlx)},
         "named_data": named("mlx/layer.w")},
        {"backend_id": "VulkanBackend", "data": {"file": os.path.abspath(a.vulkan)},
         "named_data": named("vk/layer.w")}]}}
    delegate = {"id": "NativeBackend", "processed": {"location": 0, "index": 0},
                "compile_specs": []}
    program = {"version": 0, "execution_plan": [method([], [delegate])],
               "constant_buffer": [{"storage": {"base64": "", "size": 0}}],
               "backend_delegate_data": [{"data": fat}]}
    with open(a.o, "w") as f:
        json.dump({"format": "pte", "program": program}, f)


if __name__ == "__main__":
    main()
