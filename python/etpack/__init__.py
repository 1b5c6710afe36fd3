"""etpack: write ExecuTorch programs (.pte), external data (.ptd) and bundled
programs (.bpte) of any size, streaming, from Python.

Writing borrows the caller's memory (never copied into Python bytes), releases
the GIL while bytes stream, and publishes each file atomically: on any error
the destination is left as it was. numpy and torch are optional; arrays and
tensors are recognized when their module is loaded. See docs/python.md.
"""

import math
import operator
import os
import sys

from . import _etpack
from ._etpack import (  # noqa: F401  (re-exported)
    CorruptError,
    Error,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    OutOfRangeError,
    UnimplementedError,
)

__all__ = [
    "save_pte", "save_ptd", "save_bpte", "load_ptd", "inspect", "verify", "update", "share",
    "Entry",
    "Error", "InvalidArgumentError", "NotFoundError", "CorruptError", "OutOfRangeError",
    "IoError", "UnimplementedError",
]

# ExecuTorch ScalarType codes.
_CODES = {"BYTE": 0, "CHAR": 1, "SHORT": 2, "INT": 3, "LONG": 4, "HALF": 5, "FLOAT": 6,
          "DOUBLE": 7, "BOOL": 11, "BFLOAT16": 15, "UINT16": 27, "UINT32": 28, "UINT64": 29}
_NUMPY_CODES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                "float32": 6, "float64": 7, "bool": 11, "uint16": 27, "uint32": 28,
                "uint64": 29}
_TORCH_CODES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                "float32": 6, "float64": 7, "bool": 11, "bfloat16": 15, "uint16": 27,
                "uint32": 28, "uint64": 29}
# What load_ptd gives back with numpy; bfloat16 (which numpy lacks) comes back
# as its raw bits in uint16.
_NUMPY_OF_CODE = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
                  6: "float32", 7: "float64", 11: "bool", 15: "uint16", 27: "uint16",
                  28: "uint32", 29: "uint64"}


class Entry:
    """A data item with what its bare form cannot say.

    data       an array, a tensor, any buffer, a path or a (path, offset, length) range
    dtype      ExecuTorch ScalarType name ("FLOAT") or code, or a numpy/torch dtype;
               with sizes (and dim_order, default row-major) it gives the layout of
               raw bytes; leave them out for an array or tensor (taken from it) or
               an opaque blob (a .ptd entry without tensor_layout)
    alignment  this entry's alignment in the file (a power of two)
    """

    __slots__ = ("data", "dtype", "sizes", "dim_order", "alignment")

    def __init__(self, data, *, dtype=None, sizes=None, dim_order=None, alignment=None):
        self.data, self.dtype, self.sizes = data, dtype, sizes
        self.dim_order, self.alignment = dim_order, alignment


def _numpy_array(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, (np.ndarray, np.generic))


def _torch_tensor(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _dim_order(sizes, strides):
    """Dimensions from outermost to innermost in memory (ties keep their order)."""
    return sorted(range(len(sizes)), key=lambda d: -strides[d])


def _index(value, what):
    """An int (or a numpy/torch integer) as an int; TypeError naming `what` else."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None


def _list(values, what):
    """The items of a sequence argument; TypeError naming `what` for a non-iterable."""
    try:
        return list(values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence, not {type(values).__name__}") from None


def _items(mapping, what):
    """The (key, value) pairs of mapping.items(), each checked to be a pair."""
    for i, kv in enumerate(mapping.items()):
        if not isinstance(kv, (tuple, list)) or len(kv) != 2:
            found = (f"a {type(kv).__name__} of {len(kv)}" if isinstance(kv, (tuple, list))
                     else f"a {type(kv).__name__}")
            raise TypeError(f"{what}.items() gave {found} as item {i}, "
                            f"expected a (key, value) pair")
        yield kv


def _code_of_dtype(dtype, what):
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return dtype
    if isinstance(dtype, str) and dtype in _CODES:
        return _CODES[dtype]
    name = str(dtype)
    if name.startswith("torch."):
        code = _TORCH_CODES.get(name[len("torch."):])
    else:
        try:
            np = sys.modules.get("numpy")
            code = _NUMPY_CODES.get(np.dtype(dtype).name) if np is not None else None
        except TypeError:
            code = None
    if code is None:
        raise InvalidArgumentError(f"{what}: dtype {name} has no ExecuTorch scalar type")
    return code


def _array(x, what):
    """(buffer, (scalar_type, sizes, dim_order)) of a numpy array or torch tensor,
    the buffer holding its bytes in memory order, without a copy."""
    if _torch_tensor(x):
        torch = sys.modules["torch"]
        if x.device.type != "cpu":
            raise InvalidArgumentError(
                f"{what}: tensor on device '{x.device}'; etpack reads CPU memory "
                f"(move it with .cpu())")
        if x.layout != torch.strided:
            raise InvalidArgumentError(f"{what}: a {x.layout} tensor; give a dense (strided) one")
        if x.is_conj() or x.is_neg():
            raise InvalidArgumentError(f"{what}: a tensor with a lazy conj/neg bit; "
                                       f"call .resolve_conj()/.resolve_neg() first")
        code = _TORCH_CODES.get(str(x.dtype)[len("torch."):])
        if code is None:
            raise InvalidArgumentError(f"{what}: dtype {x.dtype} has no ExecuTorch scalar type")
        sizes = list(x.shape)
        order = _dim_order(sizes, x.stride())
        dense = x.detach().permute(order) if order else x.detach()
        if not dense.is_contiguous():
            raise InvalidArgumentError(
                f"{what}: tensor of sizes {sizes} with strides {list(x.stride())} is not "
                f"contiguous in any dim order; pass .contiguous()")
        nbytes = dense.numel() * dense.element_size()
        buffer = _etpack._Borrowed(dense.data_ptr() if nbytes else 0, nbytes, dense)
        return buffer, (code, sizes, order)
    np = sys.modules["numpy"]
    x = np.asarray(x)  # a numpy scalar: a 0-d array (an array stays as it is)
    if x.dtype.byteorder == ">" or (x.dtype.byteorder == "=" and sys.byteorder == "big"):
        raise InvalidArgumentError(f"{what}: big-endian dtype {x.dtype}; ExecuTorch data is "
                                   f"little-endian (use .astype('<{x.dtype.char}'))")
    code = _NUMPY_CODES.get(x.dtype.name)
    if code is None:
        raise InvalidArgumentError(f"{what}: dtype {x.dtype} has no ExecuTorch scalar type")
    sizes = list(x.shape)
    order = _dim_order(sizes, x.strides)
    dense = np.transpose(x, order) if order else x
    if not dense.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{what}: array of shape {tuple(sizes)} with strides {x.strides} is not "
            f"contiguous in any dim order; pass np.ascontiguousarray(...)")
    return dense, (code, sizes, order)


def _is_array(x):
    return _numpy_array(x) or _torch_tensor(x)


def _item(x, what):
    """A data item for the C++ side: arrays become their bytes."""
    if isinstance(x, Entry):
        x = x.data
    if _is_array(x):
        return _array(x, what)[0]
    return x


def _tensor(x, what, required):
    """(item, layout or None, alignment or None) of a value or an Entry."""
    entry = x if isinstance(x, Entry) else Entry(x)
    data = entry.data
    if entry.dtype is not None:
        if entry.sizes is None:
            raise TypeError(f"{what}: Entry with a dtype needs sizes")
        sizes = [_index(s, f"{what}.sizes[{i}]")
                 for i, s in enumerate(_list(entry.sizes, what + ".sizes"))]
        order = (list(range(len(sizes))) if entry.dim_order is None else
                 [_index(d, f"{what}.dim_order[{i}]")
                  for i, d in enumerate(_list(entry.dim_order, what + ".dim_order"))])
        layout = (_code_of_dtype(entry.dtype, what), sizes, order)
        return _item(data, what), layout, entry.alignment
    if _is_array(data):
        buffer, layout = _array(data, what)
        return buffer, layout, entry.alignment
    if required:
        raise TypeError(f"{what}: a {type(data).__name__} has no dtype; give a numpy array, "
                        f"a torch tensor or an etpack.Entry with dtype and sizes")
    return data, None, entry.alignment


def _alignment(value, what):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value <= 0 or value & (value - 1):
        raise InvalidArgumentError(f"{what} = {value} is not a power of two")
    if value >= 1 << 64:
        raise OutOfRangeError(f"{what} = {value} does not fit in 64 bits")
    return value


def save_pte(path, program, *, constants=(), mutable=(), delegates=(), named_data={},
             segment_alignment=128, constant_alignment=16, progress=None,
             external_constants=None, delegate_alignment=16, extract_delegate_segments=True,
             dedup_constants=False, max_shard_bytes=None):
    """Writes a program (.pte) to `path` atomically. Returns the .ptd paths
    written with it (none without external_constants).

    program     flatc JSON (a str or a dict) or Program flatbuffer bytes, without data
    constants   data for data_buffer_idx = i (entry 0 is the empty placeholder)
    mutable     initial values of memory-planned tensors by data_buffer_idx (0: placeholder)
    delegates   payloads of delegates {location: INLINE, index: i}
    named_data  {key: item or Entry(item, alignment=N)}; the same memory is stored once
    progress    progress(done_bytes, total_bytes), called from the writing thread
    external_constants  a .ptd path: constants move there (keyed by their
                fully_qualified_name) and both files are written as one unit
    max_shard_bytes  with external_constants: the .ptd is written as shards of at
                most this many bytes each (header and padding included), named
                after it with a hash of their keys: "w.ptd" -> "w-<16 hex>.ptd"
    dedup_constants  store constants with identical bytes once (equal offsets in the
                constant segment; off by default, as the reference serializer).
                Named data, and the .ptd of external_constants, always store
                every content once.
    Every item: a buffer (bytes, memoryview, numpy array, CPU torch tensor), a path or
    a (path, offset, length) range.
    """
    named = []
    if not hasattr(named_data, "items"):
        raise TypeError("named_data must be a mapping of key to data item")
    for key, value in _items(named_data, "named_data"):
        what = f"named_data[{key!r}]"
        alignment = value.alignment if isinstance(value, Entry) else None
        named.append((key, _item(value, what),
                      1 if alignment is None else _alignment(alignment, what + ".alignment")))
    if max_shard_bytes is not None and external_constants is None:
        raise ValueError("max_shard_bytes applies to external_constants")
    return _etpack._save_pte(
        path, program,
        [_item(x, f"constants[{i}]") for i, x in enumerate(constants)],
        [_item(x, f"mutable[{i}]") for i, x in enumerate(mutable)],
        [_item(x, f"delegates[{i}]") for i, x in enumerate(delegates)],
        named, _alignment(segment_alignment, "segment_alignment"),
        _alignment(constant_alignment, "constant_alignment"),
        _alignment(delegate_alignment, "delegate_alignment"),
        _flag(extract_delegate_segments, "extract_delegate_segments"),
        _flag(dedup_constants, "dedup_constants"), progress, external_constants,
        _max_shard_bytes(max_shard_bytes))


def _flag(value, what):
    """A bool argument: True or False only (as an int argument refuses a
    bool, a flag refuses anything else: "yes" is not taken as true)."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, not {value!r}")
    return value


def _uint64(value, what):
    """An int argument of 0 .. 2**64 - 1, naming `what` and the value
    otherwise (never pybind11's "incompatible function arguments")."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be an int, not {value!r}")
    value = operator.index(value)
    if value < 0:
        raise ValueError(f"{what} must be an int >= 0, not {value!r}")
    if value >= 1 << 64:
        raise OutOfRangeError(f"{what} = {value} does not fit in 64 bits")
    return value


def _max_shard_bytes(value):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"max_shard_bytes must be a positive int, not {value!r}")
    if value >= 1 << 64:
        raise OutOfRangeError(f"max_shard_bytes = {value} does not fit in 64 bits")
    return value


def save_ptd(path, tensors, *, alignment=None, progress=None, max_shard_bytes=None):
    """Writes external data (.ptd): `tensors` maps each key to an array or
    tensor (dtype, sizes and dim_order come from it; channels-last is a
    dim_order), an Entry, or raw bytes (an opaque blob).

    alignment   each entry's alignment (default 1; every segment starts
                max(128, alignment)-aligned, as `etpack ptd --align` does)
    max_shard_bytes  write shards of at most this many bytes each (as files:
                header and padding included) instead of one file, entries in
                the mapping's order, named "w-<16 hex of their keys' hash>.ptd"
                for path "w.ptd"; all are published together
    Returns the paths written: [path], or the shards.
    """
    if not hasattr(tensors, "items"):
        raise TypeError("tensors must be a mapping of key to array")
    default = 1 if alignment is None else _alignment(alignment, "alignment")
    cap = _max_shard_bytes(max_shard_bytes)

    # One entry at a time, as the module takes them: a list of them all
    # would hold a tuple per entry through the whole call.
    def entries():
        for key, value in _items(tensors, "tensors"):
            if not isinstance(key, str):
                raise TypeError(f"tensors: keys must be str, not {type(key).__name__}")
            what = f"tensors[{key!r}]"
            item, layout, align = _tensor(value, what, required=False)
            align = default if align is None else _alignment(align, what + ".alignment")
            yield (key, item, align, layout)
    return _etpack._save_ptd(path, entries(), max(128, default), cap, progress)


def update(path, tensors, *, progress=None):
    """Replaces weights of the .pte or .ptd at `path` in place, as
    `etpack update` does (docs/cli.md): every new tensor must match one of
    the file by key, dtype and shape, else nothing changes; equal bytes are
    skipped; the file is replaced atomically (on XFS or btrfs by a clone that
    shares the unchanged bytes) and its integrity table kept true.

    tensors   a mapping key -> array, tensor, Entry or bytes (as save_ptd takes
              them; bytes match a blob or tensor of that many bytes), or a path
              or list of paths of .safetensors, *.index.json and .ptd files
    Returns a dict, `etpack update --json`'s report without its "seconds":
    path, tensors_rewritten, bytes_rewritten, tensors_unchanged,
    bytes_unchanged, written (False when nothing changed), cloned, file_size,
    bytes_written, bytes_shared (with the old file, when cloned), other_links.
    progress  progress(done_bytes, total_bytes), called from the writing thread
              as for save_pte (the bytes the update writes); an exception it
              raises, or Ctrl-C, stops the update and leaves the file as it was.
    """
    import json
    if isinstance(tensors, (str, os.PathLike)):
        return json.loads(_etpack._update(path, [], [tensors], progress))
    if isinstance(tensors, (list, tuple)):
        return json.loads(_etpack._update(path, [], list(tensors), progress))
    if not hasattr(tensors, "items"):
        raise TypeError("tensors must be a mapping of key to array, or paths of weight files")
    entries = []
    for key, value in _items(tensors, "tensors"):
        if not isinstance(key, str):
            raise TypeError(f"tensors: keys must be str, not {type(key).__name__}")
        item, layout, _ = _tensor(value, f"tensors[{key!r}]", required=False)
        entries.append((key, item, 1, layout))
    return json.loads(_etpack._update(path, entries, [], progress))


def _case_value(v, what):
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("double", v)
    item, layout, _ = _tensor(v, what, required=True)
    return ("tensor", item, layout)


def save_bpte(path, program_pte, cases, *, layout="standard"):
    """Writes a bundled program: the .pte `program_pte` (a path, range or
    bytes) with test cases.

    cases   a CASES.json path (docs/bundle-cases.md), or
            {method: [{"inputs": [...], "expected_outputs": [...]}, ...]} whose values
            are int, bool, float, arrays, tensors or Entry(bytes, dtype=, sizes=)
    layout  "standard" (the reference format, up to 2 GiB) or "segmented"
    """
    if isinstance(cases, (str, bytes, os.PathLike)):
        suites = cases
    elif hasattr(cases, "items"):
        suites = []
        for method, tests in _items(cases, "cases"):
            if not isinstance(tests, (list, tuple)):
                raise TypeError(f"cases[{method!r}] must be a list of test cases "
                                f"({{'inputs': [...], 'expected_outputs': [...]}}), "
                                f"not {type(tests).__name__}")
            converted = []
            for c, test in enumerate(tests):
                where = f"cases[{method!r}][{c}]"
                if not hasattr(test, "keys"):
                    raise TypeError(f"{where} must be a dict with 'inputs' and "
                                    f"'expected_outputs', not {type(test).__name__}")
                unknown = set(test) - {"inputs", "expected_outputs"}
                if unknown:
                    raise TypeError(f"{where}: unknown members {sorted(unknown)}")
                ins = [_case_value(v, f"{where}.inputs[{i}]")
                       for i, v in enumerate(_list(test.get("inputs", ()), where + ".inputs"))]
                outs = [_case_value(v, f"{where}.expected_outputs[{i}]")
                        for i, v in enumerate(_list(test.get("expected_outputs", ()),
                                                     where + ".expected_outputs"))]
                converted.append((ins, outs))
            suites.append((method, converted))
    else:
        raise TypeError("cases must be a CASES.json path or a mapping of method to cases")
    _etpack._save_bpte(path, _item(program_pte, "program_pte"), suites, layout)


def load_ptd(path):
    """{key: read-only array} over a mapping of the file, without copying:
    numpy arrays when numpy is installed (bfloat16 as uint16 bits; opaque
    blobs as uint8), memoryviews of the bytes otherwise. The mapping lives as
    long as any array from it."""
    mapping, entries = _etpack._open_ptd(path)
    view = memoryview(mapping)
    try:
        import numpy as np
    except ImportError:
        np = None
    out = {}
    for key, offset, nbytes, layout in entries:
        data = view[offset:offset + nbytes]
        if np is None:
            out[key] = data
        elif layout is None:
            out[key] = np.frombuffer(data, dtype=np.uint8)
        else:
            code, sizes, order = layout
            dtype = np.dtype(_NUMPY_OF_CODE.get(code, "uint8"))
            if code not in _NUMPY_OF_CODE:  # a dtype numpy lacks: its bytes
                out[key] = np.frombuffer(data, dtype=np.uint8)
                continue
            stored = [sizes[d] for d in order]
            count = math.prod(stored)
            flat = (np.frombuffer(data, dtype=dtype, count=count) if count
                    else np.empty(0, dtype=dtype))
            inverse = [order.index(d) for d in range(len(order))]
            array = flat.reshape(stored).transpose(inverse)
            array.flags.writeable = False
            out[key] = array
    return out


def share(inputs, out_dir, *, data="shared.ptd", max_shard_bytes=None, align=None,
          min_bytes=4096, integrity=False, dry_run=False, progress=None):
    """One copy of the data a family of programs holds alike, as `etpack
    share` (docs/share.md): every constant, named-data key and .ptd entry
    two or more of `inputs` (.pte paths, and the .ptd files they use) hold
    moves once into out_dir/`data`; each program is written thin under its
    own name in out_dir (made if missing), with what stays its own (its .ptd's
    other entries) inside it, so that it loads with the shared file alone.
    All files appear together, or none.

    max_shard_bytes  the shared file as shards of at most this many bytes
    align            every segment and constant of every output at a
                     multiple of it (a power of two, at most 65536)
    min_bytes        smaller items stay where they are
    integrity        an integrity table in every output
    dry_run          plan only: write nothing
    progress         progress(done, total) while writing
    Returns the report (`etpack share --json`) as a dict."""
    import json
    if isinstance(inputs, (str, bytes, os.PathLike)):
        raise TypeError("inputs must be a list of paths (two or more .pte files)")
    min_bytes = _uint64(min_bytes, "min_bytes")
    alignment = 0 if align is None else _alignment(align, "align")
    return json.loads(_etpack._share(list(inputs), out_dir, data,
                                     _max_shard_bytes(max_shard_bytes), alignment, min_bytes,
                                     _flag(integrity, "integrity"), _flag(dry_run, "dry_run"),
                                     progress))


def inspect(path):
    """The report `etpack inspect --json` prints, as a dict."""
    import json
    return json.loads(_etpack._inspect(path))


def verify(path, data=()):
    """Validates a .pte, .ptd or .bpte completely, as `etpack verify` does:
    its integrity table, a .pte's fat delegates; with `data` (.ptd paths),
    also that every EXTERNAL tensor of a .pte resolves in them. `path` may be
    a list: a .pte and its .ptd files, or .ptd files loaded together (each key
    in exactly one). Returns None or raises."""
    def paths(p):  # one path, not a sequence of characters
        return [p] if isinstance(p, (str, bytes, os.PathLike)) else list(p)
    _etpack._verify(paths(path), paths(data))
