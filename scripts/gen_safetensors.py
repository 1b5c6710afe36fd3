#!/usr/bin/env python3
"""Write a synthetic, sharded Hugging Face-style safetensors checkpoint.

    gen_safetensors.py OUT_DIR --size 8GiB --shards 3 [--seed N]
    gen_safetensors.py OUT_DIR --count N [--tensor-bytes B]

OUT_DIR gets model-0000K-of-0000S.safetensors and model.safetensors.index.json
holding llama-shaped tensors (BF16 matrices, F32 norms) whose bytes total
about --size. Tensor contents are a deterministic function of --seed: one
random block, rotated by a different amount for each block-sized chunk, so
many gigabytes are written at disk speed with bounded memory (two blocks).

With --count, OUT_DIR/model.safetensors instead holds N distinct U8 tensors
of B bytes each (default 64; all of one size, each starting with its
index): the input of the planning benchmark (scripts/bench.sh --jobs plan).
"""

import argparse
import bisect
import json
import os
import random
import re
import struct
import sys

BLOCK = 16 << 20

UNITS = {
    "": 1, "B": 1,
    "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40,
    "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
}

DTYPE_SIZE = {"BF16": 2, "F32": 4}


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in UNITS:
        raise argparse.ArgumentTypeError(
            f"size {text!r} is not a number with an optional unit (KiB, MiB, GiB, MB, GB...)")
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def round_up(x, m):
    return (x + m - 1) // m * m


def llama_tensors(hidden, layers, vocab):
    """(name, dtype, shape) in the order a llama checkpoint stores them."""
    kv = hidden // 4          # grouped-query attention, 4 query heads per kv head
    inter = round_up(hidden * 8 // 3, 32)
    out = [("model.embed_tokens.weight", "BF16", [vocab, hidden])]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", "F32", [hidden]),
            (p + "self_attn.q_proj.weight", "BF16", [hidden, hidden]),
            (p + "self_attn.k_proj.weight", "BF16", [kv, hidden]),
            (p + "self_attn.v_proj.weight", "BF16", [kv, hidden]),
            (p + "self_attn.o_proj.weight", "BF16", [hidden, hidden]),
            (p + "post_attention_layernorm.weight", "F32", [hidden]),
            (p + "mlp.gate_proj.weight", "BF16", [inter, hidden]),
            (p + "mlp.up_proj.weight", "BF16", [inter, hidden]),
            (p + "mlp.down_proj.weight", "BF16", [hidden, inter]),
        ]
    out += [("model.norm.weight", "F32", [hidden]),
            ("lm_head.weight", "BF16", [vocab, hidden])]
    return out


def nbytes(dtype, shape):
    n = DTYPE_SIZE[dtype]
    for d in shape:
        n *= d
    return n


def total_bytes(tensors):
    return sum(nbytes(d, s) for _, d, s in tensors)


def choose_model(size):
    """The largest llama shape whose bytes fit in `size`, then the vocabulary
    grown to take up the slack (a vocabulary row costs the same in embedding
    and head), so the total lands within 4*hidden bytes of `size`."""
    layers = max(2, min(32, size // (256 << 20)))

    def model(hidden, vocab=None):
        return llama_tensors(hidden, layers, vocab or min(32000, 16 * hidden))

    if total_bytes(model(32)) > size:
        sys.exit(f"--size {size} is too small: the smallest model needs "
                 f"{total_bytes(model(32))} bytes")
    lo, hi = 1, 2
    while total_bytes(model(32 * hi)) <= size:
        hi *= 2
    while hi - lo > 1:                      # largest multiple of 32 that fits
        mid = (lo + hi) // 2
        if total_bytes(model(32 * mid)) <= size:
            lo = mid
        else:
            hi = mid
    hidden = 32 * lo
    base_vocab = min(32000, 16 * hidden)
    vocab = base_vocab + (size - total_bytes(model(hidden))) // (2 * hidden * 2)
    return model(hidden, vocab), hidden, layers, vocab


def split(sizes, shards):
    """Shard boundaries at tensor indices: shard k holds tensors
    [bounds[k], bounds[k+1]), each shard non-empty and about total/shards."""
    n = len(sizes)
    if shards > n:
        sys.exit(f"--shards {shards} is more than the {n} tensors of the model")
    cum = [0]
    for s in sizes:
        cum.append(cum[-1] + s)
    bounds = [0]
    for k in range(1, shards):
        j = bisect.bisect_left(cum, cum[-1] * k / shards)
        j = max(j, bounds[-1] + 1)
        j = min(j, n - (shards - k))
        bounds.append(j)
    bounds.append(n)
    return bounds


class Pattern:
    """An endless deterministic byte stream: chunk c is the random block
    rotated by a per-chunk amount, written as two views (no copy)."""

    def __init__(self, seed):
        self.block = memoryview(random.Random(seed).randbytes(BLOCK))
        self.pos = 0

    def write(self, f, n):
        while n:
            chunk, off = divmod(self.pos, BLOCK)
            rot = (chunk * 0x9E3779B1 + 12345) % BLOCK
            start = (rot + off) % BLOCK
            take = min(n, BLOCK - off, BLOCK - start)
            f.write(self.block[start:start + take])
            self.pos += take
            n -= take


def write_many(out_dir, count, size, seed):
    """--count: one file of `count` distinct tensors of `size` bytes."""
    if size < 8:
        sys.exit(f"--tensor-bytes {size} is less than the 8 bytes of a tensor's index")
    header = {"__metadata__": {"format": "pt"}}
    for i in range(count):
        header[f"t.{i}"] = {"dtype": "U8", "shape": [size],
                            "data_offsets": [i * size, (i + 1) * size]}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    fill = random.Random(seed).randbytes(size - 8)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for i in range(count):
            f.write(struct.pack("<Q", i))
            f.write(fill)
    print(f"{out_dir}: {count} tensors of {size} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--size", type=parse_size, default=parse_size("1GiB"),
                    help="total tensor bytes, e.g. 8GiB, 16MiB (default 1GiB)")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=0,
                    help="write N small distinct tensors of one size instead")
    ap.add_argument("--tensor-bytes", type=int, default=64)
    args = ap.parse_args()
    if args.count:
        return write_many(args.out_dir, args.count, args.tensor_bytes, args.seed)
    if args.shards < 1:
        ap.error("--shards must be at least 1")

    tensors, hidden, layers, vocab = choose_model(args.size)
    sizes = [nbytes(d, s) for _, d, s in tensors]
    bounds = split(sizes, args.shards)
    os.makedirs(args.out_dir, exist_ok=True)

    pattern = Pattern(args.seed)
    weight_map = {}
    for k in range(args.shards):
        name = f"model-{k + 1:05d}-of-{args.shards:05d}.safetensors"
        header = {"__metadata__": {"format": "pt"}}
        offset = 0
        for i in range(bounds[k], bounds[k + 1]):
            tname, dtype, shape = tensors[i]
            header[tname] = {"dtype": dtype, "shape": shape,
                             "data_offsets": [offset, offset + sizes[i]]}
            offset += sizes[i]
            weight_map[tname] = name
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(args.out_dir, name), "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            pattern.write(f, offset)   # tensors back to back, no padding

    index = {"metadata": {"total_size": sum(sizes)}, "weight_map": weight_map}
    with open(os.path.join(args.out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{args.out_dir}: {len(tensors)} tensors, {sum(sizes)} bytes in "
          f"{args.shards} shards (hidden {hidden}, {layers} layers, vocab {vocab})")


if __name__ == "__main__":
    main()
