"""What the tests compare: upstream's own decoding of both files, the runtime's
outputs, etpack's CLI. Short helpers; each returns what the test asserts on."""

import dataclasses
import json
import os
import subprocess

import torch

CLI = os.environ.get("ETPACK_CLI", "etpack")

# Per file: how etpack's bytes compare with upstream's (printed at the end of
# the session by conftest.py).
REPORT = {}
# Free-form findings (the family report, XNNPACK keys), printed likewise.
NOTES = []


# --- upstream's decoders ---------------------------------------------------

def read(path):
    with open(path, "rb") as f:
        return f.read()


def pte_segments(data):
    """The raw segments of a .pte, as its own program lists them."""
    from executorch.exir._serialize._program import _get_extended_header
    from executorch.exir._serialize._program import _flatbuffer_to_program
    eh = _get_extended_header(data)
    if eh is None or not eh.is_valid():
        return _flatbuffer_to_program(data), []
    program = _flatbuffer_to_program(data[:eh.program_size])
    base = eh.segment_base_offset
    return program, [data[base + s.offset:base + s.offset + s.size] for s in program.segments]


def decode_pte(data):
    from executorch.exir._serialize._program import deserialize_pte_binary
    return deserialize_pte_binary(data)


def decode_ptd(data):
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer
    from executorch.exir._serialize._cord import Cord
    return FlatTensorSerializer().deserialize(Cord(data))


def decode_ptd_raw(data):
    from executorch.extension.flat_tensor.serialize.serialize import (
        FlatTensorHeader, _deserialize_to_flat_tensor)
    header = FlatTensorHeader.from_bytes(data[8:])
    return _deserialize_to_flat_tensor(data[:header.flatbuffer_offset + header.flatbuffer_size])


def decode_bpte(data):
    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program)
    return deserialize_from_flatbuffer_to_bundled_program(data)


def diffs(a, b, path="", limit=20):
    """Paths at which two decoded objects (upstream's dataclasses) differ."""
    out = []

    def walk(x, y, p):
        if len(out) >= limit:
            return
        if type(x) is not type(y):
            out.append(f"{p}: {type(x).__name__} != {type(y).__name__}")
        elif dataclasses.is_dataclass(x):
            for f in dataclasses.fields(x):
                walk(getattr(x, f.name), getattr(y, f.name), f"{p}.{f.name}")
        elif isinstance(x, dict):
            if x.keys() != y.keys():
                out.append(f"{p}: keys {sorted(set(x) ^ set(y))[:5]} differ")
            for k in x.keys() & y.keys():
                walk(x[k], y[k], f"{p}[{k!r}]")
        elif isinstance(x, (list, tuple)):
            if len(x) != len(y):
                out.append(f"{p}: {len(x)} items != {len(y)}")
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{p}[{i}]")
        elif isinstance(x, (bytes, bytearray, memoryview)):
            if bytes(x) != bytes(y):
                out.append(f"{p}: {len(x)} bytes != {len(y)} bytes"
                           f" (first difference at {first_difference(bytes(x), bytes(y))})")
        elif x != y and not (isinstance(x, float) and x != x and y != y):  # NaN is NaN
            out.append(f"{p}: {x!r} != {y!r}")

    walk(a, b, path)
    return out


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else None


def record_bytes(label, upstream, ours, explain):
    """Writes down whether two files are byte-identical; if not, where they
    first differ and `explain()`'s account of why."""
    if upstream == ours:
        REPORT[label] = "byte-identical"
        return True
    at = first_difference(upstream, ours)
    REPORT[label] = (f"differs: {len(upstream)} vs {len(ours)} bytes, first at offset {at}; "
                     + "; ".join(explain()[:6]))
    return False


# --- the runtime -----------------------------------------------------------

def runtime():
    from executorch.runtime import Runtime
    return Runtime.get()


def load(pte, data_path=None):
    return runtime().load_program(str(pte), data_path=None if data_path is None else str(data_path))


def run_calls(program, calls):
    """{method: [outputs of each call]}; each method loaded once, so state
    (mutable buffers, a KV cache) carries from call to call as in an app."""
    out = {}
    for name, seq in calls.items():
        method = program.load_method(name)
        assert method is not None, name
        out[name] = [[clone(v) for v in method.execute(list(inputs))] for inputs in seq]
    return out


def clone(v):
    return v.clone() if isinstance(v, torch.Tensor) else v


def same_bits(a, b):
    """Outputs equal bit for bit (dtype, shape and every byte; NaN == NaN)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_bits(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_bits(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(a.contiguous().view(torch.uint8) if a.numel() else a,
                                b.contiguous().view(torch.uint8) if b.numel() else b))
    return type(a) is type(b) and a == b


def greedy(program, prompt, steps):
    """Tokens a greedy decoder generates after `prompt`, one token per call
    (the model is exported for one token at a time, with its KV cache)."""
    method = program.load_method("forward")
    pos, out, logits = 0, [], None
    for tok in prompt:
        logits = method.execute([torch.tensor([[tok]]), torch.tensor([pos])])[0]
        pos += 1
    for _ in range(steps):
        tok = int(torch.argmax(logits.reshape(-1)))
        out.append(tok)
        logits = method.execute([torch.tensor([[tok]]), torch.tensor([pos])])[0]
        pos += 1
    return out


PROMPT = [1, 17, 42, 99]


# --- etpack's CLI ----------------------------------------------------------

def cli(*args, check=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, f"etpack {' '.join(map(str, args))}: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def cli_json(*args):
    return json.loads(cli(*args).stdout)
