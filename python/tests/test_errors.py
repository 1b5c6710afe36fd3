"""Every kind of bad input is a clear Python exception, never a crash, and
never leaves a file behind."""

import json
import os

import numpy as np
import pytest

import etpack
from conftest import GOLDEN

torch = pytest.importorskip("torch")


def nothing_written(folder):
    return sorted(os.listdir(folder)) == []


@pytest.fixture
def out(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    return d


def test_error_classes_are_per_code():
    for cls in (etpack.InvalidArgumentError, etpack.NotFoundError, etpack.CorruptError,
                etpack.OutOfRangeError, etpack.IoError, etpack.UnimplementedError):
        assert issubclass(cls, etpack.Error)
    assert issubclass(etpack.InvalidArgumentError, ValueError)
    assert etpack.CorruptError.code == "corrupt"


def test_invalid_argument(out):
    cases = [
        lambda p: etpack.save_ptd(p, {"x": np.arange(10)[::2]}),            # non-contiguous
        lambda p: etpack.save_ptd(p, {"x": np.zeros(3, np.complex64)}),     # no scalar type
        lambda p: etpack.save_ptd(p, {"x": np.zeros(3, ">f4")}),            # big-endian
        lambda p: etpack.save_ptd(p, {"x": torch.zeros(4, 4)[:, ::2]}),     # non-contiguous
        lambda p: etpack.save_ptd(p, {"x": torch.zeros(3, device="meta")}),  # another device
        lambda p: etpack.save_ptd(p, {"x": torch.zeros(3, dtype=torch.complex64)}),
        lambda p: etpack.save_ptd(p, {"x": memoryview(bytes(8))[::2]}),
        lambda p: etpack.save_ptd(p, {"x": b"1"}, alignment=3),
        lambda p: etpack.save_ptd(p, {"": np.zeros(3)}),                      # empty key
        lambda p: etpack.save_pte(p, {"no_such_field": 1}),
        lambda p: etpack.save_pte(p, "{not json"),
        lambda p: etpack.save_pte(p, {"version": 2**64}),
        lambda p: etpack.save_bpte(p, GOLDEN / "pte_constants.pte", {}, layout="sideways"),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(etpack.InvalidArgumentError) as e:
            case(out / "x")
        assert str(e.value), i
    loop = {}
    loop["self"] = loop
    with pytest.raises(etpack.InvalidArgumentError, match="contain itself"):
        etpack.save_pte(out / "x", loop)
    assert nothing_written(out)


def test_messages_name_the_item(out):
    with pytest.raises(etpack.InvalidArgumentError, match=r"tensors\['layer.1'\]"):
        etpack.save_ptd(out / "x", {"layer.0": np.zeros(2), "layer.1": np.arange(10)[::2]})
    with pytest.raises(etpack.InvalidArgumentError, match="device 'meta'"):
        etpack.save_ptd(out / "x", {"w": torch.zeros(1, device="meta")})


def test_type_errors(out):
    for case in [
        lambda: etpack.save_pte(out / "x", 42),
        lambda: etpack.save_pte(out / "x", {"version": object()}),
        lambda: etpack.save_pte(out / "x", {}, constants=[object()]),
        lambda: etpack.save_pte(out / "x", {}, constants=[None]),
        lambda: etpack.save_pte(out / "x", {}, constants=[("a", 1)]),
        lambda: etpack.save_ptd(out / "x", [np.zeros(2)]),
        lambda: etpack.save_ptd(out / "x", {1: np.zeros(2)}),
        lambda: etpack.save_ptd(42, {"x": np.zeros(2)}),
        lambda: etpack.save_bpte(out / "x", GOLDEN / "pte_constants.pte", 5),
    ]:
        with pytest.raises(TypeError):
            case()
    assert nothing_written(out)


def test_not_found(out, tmp_path):
    with pytest.raises(etpack.NotFoundError, match="missing.bin"):
        etpack.save_pte(out / "x", {}, constants=[b"", tmp_path / "missing.bin"])
    with pytest.raises(etpack.NotFoundError):
        etpack.verify(tmp_path / "missing.pte")
    with pytest.raises(etpack.NotFoundError):
        etpack.load_ptd(tmp_path / "missing.ptd")
    with pytest.raises(etpack.NotFoundError):
        etpack.verify(GOLDEN / "pte_external.pte", data=[GOLDEN / "ptd_shared_blob.ptd"])
    assert nothing_written(out)


def test_corrupt(tmp_path):
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"\0" * 100)
    with pytest.raises(etpack.CorruptError):
        etpack.verify(junk)
    with pytest.raises(etpack.CorruptError):
        etpack.inspect(junk)
    with pytest.raises(etpack.CorruptError):
        etpack.load_ptd(GOLDEN / "pte_constants.pte")
    truncated = tmp_path / "t.ptd"
    truncated.write_bytes((GOLDEN / "ptd_basic.ptd").read_bytes()[:-10])
    with pytest.raises(etpack.CorruptError, match="t.ptd"):
        etpack.load_ptd(truncated)


def test_out_of_range(out, tmp_path):
    raw = tmp_path / "raw.bin"
    raw.write_bytes(b"x" * 10)
    with pytest.raises(etpack.OutOfRangeError, match="raw.bin"):
        etpack.save_ptd(out / "x", {"r": (raw, 4, 100)})
    with pytest.raises(etpack.OutOfRangeError):
        etpack.save_ptd(out / "x", {"r": (raw, -1, 4)})
    assert nothing_written(out)


def test_io_error(tmp_path):
    afile = tmp_path / "afile"
    afile.write_bytes(b"")
    with pytest.raises(etpack.Error) as e:
        etpack.save_ptd(afile / "x.ptd", {"x": np.zeros(2)})
    assert isinstance(e.value, (etpack.IoError, etpack.NotFoundError))
    assert "afile" in str(e.value)


def test_unimplemented(out, tmp_path):
    npy = tmp_path / "x.npy"
    npy.write_bytes(b"\x93NUMPY\x09\x00" + bytes(120))
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"methods": {"forward": [
        {"inputs": [{"tensor": {"npy": "x.npy"}}], "expected_outputs": []}]}}))
    with pytest.raises(etpack.UnimplementedError, match="version 9"):
        etpack.save_bpte(out / "x.bpte", GOLDEN / "pte_constants.pte", cases)
    assert nothing_written(out)


def test_buffer_resized_during_the_call(out):
    data = bytearray(b"x" * 1000)

    def progress(done, total):
        data.extend(b"more")  # the exporter still holds the buffer

    with pytest.raises(BufferError):
        etpack.save_ptd(out / "x.ptd", {"blob": data}, progress=progress)
    assert len(data) == 1000
    assert nothing_written(out)


def test_progress_that_raises_cancels_the_write(out):
    def progress(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        etpack.save_ptd(out / "x.ptd", {"x": np.zeros(100)}, progress=progress)
    assert nothing_written(out)
    # An existing file stays as it was.
    (out / "keep.ptd").write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        etpack.save_ptd(out / "keep.ptd", {"x": np.zeros(100)}, progress=progress)
    assert (out / "keep.ptd").read_bytes() == b"old"
    assert sorted(os.listdir(out)) == ["keep.ptd"]


def test_wrong_data_for_a_pte():
    with pytest.raises(etpack.InvalidArgumentError):
        etpack.verify(GOLDEN / "ptd_basic.ptd", data=[GOLDEN / "ptd_basic.ptd"])


def test_works_without_numpy_and_torch(tmp_path):
    """numpy and torch are optional: with neither importable, bytes go in
    and memoryviews come out."""
    import subprocess
    import sys
    script = f"""
import sys
sys.modules["numpy"] = None  # import numpy now fails
sys.modules["torch"] = None
import etpack
etpack.save_ptd({str(tmp_path / "w.ptd")!r}, {{"a": b"abc", "b": etpack.Entry(bytes(8), dtype="FLOAT", sizes=[2])}})
back = etpack.load_ptd({str(tmp_path / "w.ptd")!r})
assert isinstance(back["a"], memoryview) and back["a"].readonly and bytes(back["a"]) == b"abc"
assert bytes(back["b"]) == bytes(8)
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("given", ["array", "view", "memoryview"])
def test_numpy_resize_without_refcheck_during_the_save(tmp_path, given):
    """ndarray.resize(refcheck=False) ignores buffer exports and frees the
    memory being written; etpack pins the array, so the resize raises (and
    the save with it) instead of the writer reading freed memory. Run in a
    subprocess: before the fix this killed the interpreter."""
    import subprocess
    import sys
    script = f"""
import numpy as np, etpack
arr = np.ones(160 << 20, dtype=np.uint8)  # progress comes every 64 MiB
given = {{"array": arr, "view": arr[:], "memoryview": memoryview(arr)}}[{given!r}]
def progress(done, total):
    if done < total:
        arr.resize((10,), refcheck=False)
try:
    etpack.save_ptd({str(tmp_path / "w.ptd")!r}, {{"w": given}}, progress=progress)
except ValueError as e:
    print("raised", "cannot resize" in str(e))
else:
    back = etpack.load_ptd({str(tmp_path / "w.ptd")!r})["w"]
    print("wrote", bool((back == 1).all()))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("raised True", "wrote True"), result.stdout + result.stderr


def test_no_in_band_values(out, tmp_path):
    """2^64 - 1 is a length like any other, and a NUL byte in a key or a
    path is an error naming it, not a shorter key or another file."""
    raw = tmp_path / "raw.bin"
    raw.write_bytes(b"x" * 10)
    with pytest.raises(etpack.OutOfRangeError, match="18446744073709551615"):
        etpack.save_ptd(out / "x", {"r": (raw, 0, 2**64 - 1)})
    with pytest.raises(etpack.InvalidArgumentError, match="NUL"):
        etpack.save_ptd(out / "x", {"a\0b": np.zeros(2)})
    with pytest.raises(etpack.InvalidArgumentError, match="NUL"):
        etpack.save_pte(out / "x", {"execution_plan": []}, named_data={"a\0b": b"123"})
    with pytest.raises(etpack.InvalidArgumentError, match="NUL"):
        etpack.save_ptd(out / "x", {"r": (str(raw) + "\0x", 0, 4)})
    with pytest.raises(etpack.InvalidArgumentError, match="NUL"):
        etpack.save_ptd(str(out / "x.ptd") + "\0y", {"r": b"1"})
    assert nothing_written(out)


@pytest.mark.parametrize("rank", [17, 32])
def test_rank_above_the_runtime_limit(out, rank):
    with pytest.raises(etpack.InvalidArgumentError, match=f"rank {rank} exceeds"):
        etpack.save_ptd(out / "x.ptd", {"t": np.zeros((1,) * rank, np.float32)})
    with pytest.raises(etpack.InvalidArgumentError, match=f"rank {rank} exceeds"):
        etpack.save_ptd(out / "x.ptd", {"t": etpack.Entry(b"1234", dtype="FLOAT",
                                                          sizes=[1] * rank)})
    assert nothing_written(out)
    etpack.save_ptd(out / "ok.ptd", {"t": np.zeros((1,) * 16, np.float32)})


def test_python_arguments_say_what_is_wrong(out, tmp_path):
    # Lone surrogates: an error naming the key or the path, not pybind11's cast.
    with pytest.raises(etpack.InvalidArgumentError, match="tensors key"):
        etpack.save_ptd(out / "x.ptd", {"a\ud800": np.zeros(2)})
    with pytest.raises(etpack.InvalidArgumentError, match="path"):
        etpack.save_ptd(str(out / "\ud800.ptd"), {"a": np.zeros(2)})
    with pytest.raises(etpack.OutOfRangeError, match="alignment = 1180591620717411303424"):
        etpack.save_ptd(out / "x.ptd", {"a": np.zeros(2)}, alignment=2**70)
    with pytest.raises(TypeError, match=r"cases\['forward'\] must be a list"):
        etpack.save_bpte(out / "x.bpte", GOLDEN / "pte_constants.pte", {"forward": 5})
    with pytest.raises(TypeError, match=r"cases\['forward'\]\[0\] must be a dict"):
        etpack.save_bpte(out / "x.bpte", GOLDEN / "pte_constants.pte", {"forward": [5]})
    assert nothing_written(out)
    # A str for data is one path, not a list of one-character paths.
    with pytest.raises(etpack.InvalidArgumentError, match="data goes with a .pte"):
        etpack.verify(GOLDEN / "ptd_basic.ptd", data=str(GOLDEN / "ptd_basic.ptd"))
    # bytes and os.PathLike paths; a file name that is not UTF-8 is writable.
    name = os.fsencode(str(out)) + b"/w\xff.ptd"
    etpack.save_ptd(name, {"a": np.arange(3, dtype=np.int32)})
    assert (etpack.load_ptd(name)["a"] == np.arange(3)).all()
    etpack.verify(name)
    assert etpack.inspect(os.fsdecode(name))["kind"] == "ptd"
    with pytest.raises(etpack.NotFoundError, match=r"\\xff"):
        etpack.load_ptd(os.fsencode(str(out)) + b"/gone\xff.ptd")


def test_read_paths_with_a_nul_byte(tmp_path):
    """A NUL byte in a path to read is an error, not the file before it."""
    for read in (etpack.load_ptd, etpack.verify, etpack.inspect):
        with pytest.raises(etpack.InvalidArgumentError, match="NUL"):
            read(str(GOLDEN / "ptd_basic.ptd") + "\0x")


def test_saves_with_numpy_blocked(tmp_path):
    # numpy is optional: with its import blocked (sys.modules["numpy"] = None),
    # buffers and bytearrays still save (the exporter's venv may lack numpy).
    import subprocess
    import sys as _sys
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import etpack\n"
            f"etpack.save_ptd({str(tmp_path / 'w.ptd')!r}, "
            "{'w': etpack.Entry(b'12345678', dtype='FLOAT', sizes=[2]), 'b': bytearray(b'op')})\n")
    run = subprocess.run([_sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "w.ptd").stat().st_size > 0


def test_entry_and_mapping_values_are_checked_with_their_names(out):
    """No pybind11 cast error and no CPython internal error reaches the
    caller: each bad value is a TypeError or ValueError naming it."""
    cases = [
        ({"w": etpack.Entry(bytes(8), dtype=2**70, sizes=[2])}, etpack.OutOfRangeError,
         "tensors['w'].dtype = 1180591620717411303424 is outside"),
        ({"w": etpack.Entry(bytes(8), dtype="FLOAT", sizes=[2], dim_order=[2**64])},
         etpack.OutOfRangeError, "tensors['w'].dim_order[0] = 18446744073709551616 is outside"),
        ({"w": etpack.Entry(bytes(8), dtype="FLOAT", sizes=[2**64])},
         etpack.OutOfRangeError, "tensors['w'].sizes[0] = 18446744073709551616 is outside"),
        ({"w": etpack.Entry(bytes(8), dtype="FLOAT", sizes=[2], dim_order=["0"])},
         TypeError, "tensors['w'].dim_order[0] must be an int, not str"),
        ({"w": etpack.Entry(bytes(8), dtype="FLOAT", sizes=["2"])},
         TypeError, "tensors['w'].sizes[0] must be an int, not str"),
        ({"w": etpack.Entry(bytes(8), dtype="FLOAT", sizes=5)},
         TypeError, "tensors['w'].sizes must be a sequence, not int"),
    ]
    for tensors, exc, text in cases:
        with pytest.raises(exc) as info:
            etpack.save_ptd(out / "x.ptd", tensors)
        assert text in str(info.value), str(info.value)
    # numpy integers are ints.
    etpack.save_ptd(out / "x.ptd", {"w": etpack.Entry(bytes(8), dtype="FLOAT",
                                                       sizes=[np.int64(2)],
                                                       dim_order=[np.uint8(0)])})
    with pytest.raises(etpack.OutOfRangeError, match="max_shard_bytes = "):
        etpack.save_ptd(out / "y.ptd", {"w": b"x"}, max_shard_bytes=2**70)
    with pytest.raises(etpack.OutOfRangeError, match=r"cases\['forward'\]\[0\].inputs\[0\]"):
        etpack.save_bpte(out / "x.bpte", GOLDEN / "pte_constants.pte",
                         {"forward": [{"inputs": [2**70], "expected_outputs": []}]})


class OddMapping:
    def __init__(self, items):
        self._items = items

    def items(self):
        return self._items


@pytest.mark.parametrize("item,found", [
    (3, "a int"), (("k",), "a tuple of 1"), (("k", b"x", "extra"), "a tuple of 3"),
])
def test_mapping_items_that_are_not_pairs(out, item, found):
    text = f"items() gave {found} as item 0, expected a (key, value) pair"
    for call, what in [
        (lambda m: etpack.save_ptd(out / "x.ptd", m), "tensors"),
        (lambda m: etpack.update(out / "x.ptd", m), "tensors"),
        (lambda m: etpack.save_pte(out / "x.pte", {}, named_data=m), "named_data"),
        (lambda m: etpack.save_bpte(out / "x.bpte", GOLDEN / "pte_constants.pte", m), "cases"),
    ]:
        with pytest.raises(TypeError) as info:
            call(OddMapping([item]))
        assert f"{what}.{text}" in str(info.value)
    assert nothing_written(out)


def test_ctypes_memory_resized_during_the_save(tmp_path):
    """ctypes.resize() frees the memory it had whatever exports exist, so
    ctypes memory is copied when borrowed: the save writes the bytes it was
    given. Run in a subprocess: before the fix this read freed memory (a
    crash, or the new bytes)."""
    import subprocess
    import sys
    script = f"""
import ctypes, etpack
n = 80 << 20  # progress comes every 64 MiB
arr = (ctypes.c_uint8 * n)()
ctypes.memset(arr, 1, n)
given = {{"w": arr, "view": memoryview(arr)}}
def progress(done, total):
    if done < total:
        ctypes.resize(arr, 3 * n)
        ctypes.memset(ctypes.addressof(arr), 2, 3 * n)
for key, item in given.items():
    etpack.save_ptd({str(tmp_path / "w.ptd")!r}, {{"w": item}}, progress=progress)
    back = bytes(etpack.load_ptd({str(tmp_path / "w.ptd")!r})["w"])
    print(key, back == b"\\x01" * n)
    arr = (ctypes.c_uint8 * n)()
    ctypes.memset(arr, 1, n)
    given["view"] = memoryview(arr)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["w", "True", "view", "True"], result.stdout
