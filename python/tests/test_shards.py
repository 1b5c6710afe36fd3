"""Sharded .ptd from Python: save_ptd, save_pte(external_constants=...) and
etpack.exir.save with max_shard_bytes (no numpy needed)."""

import os
import re

import pytest

import etpack
import etpack.exir as ex
import exir_classes as C
from test_exir import config_of, external_emitter_output

SHARD = re.compile(r"w-[0-9a-f]{16}\.ptd")


def tensors():
    # Opaque blobs and uint8 tensors of growing size, in this order.
    out = {}
    for i in range(10):
        data = bytes((i * 7 + j) % 251 for j in range(1000 + 300 * i))
        out[f"layers.{i}.w"] = data if i % 2 else etpack.Entry(data, dtype="BYTE",
                                                              sizes=[len(data)])
    return out


def as_bytes(value):
    return bytes(value.data if isinstance(value, etpack.Entry) else value)


def test_save_ptd_shards_under_the_cap(tmp_path):
    state = tensors()
    written = etpack.save_ptd(tmp_path / "w.ptd", state, max_shard_bytes=6000)
    assert len(written) > 2
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in written)
    keys = []
    for path in written:
        assert SHARD.fullmatch(os.path.basename(path))
        assert os.path.getsize(path) <= 6000
        loaded = etpack.load_ptd(path)
        for key, value in loaded.items():
            assert bytes(value) == as_bytes(state[key])
        keys += list(loaded)
    assert keys == list(state)  # every key once, in the mapping's order

    # The same tensors give the same names and bytes.
    again = tmp_path / "again"
    again.mkdir()
    second = etpack.save_ptd(again / "w.ptd", state, max_shard_bytes=6000)
    assert [os.path.basename(p) for p in second] == [os.path.basename(p) for p in written]
    for a, b in zip(written, second):
        assert open(a, "rb").read() == open(b, "rb").read()


def test_save_ptd_without_a_cap_returns_the_one_path(tmp_path):
    assert etpack.save_ptd(tmp_path / "w.ptd", tensors()) == [str(tmp_path / "w.ptd")]


def test_a_tensor_too_big_for_the_cap_is_named_and_nothing_is_written(tmp_path):
    with pytest.raises(etpack.InvalidArgumentError,
                       match=r"'layers.6.w' \(2800 bytes\).*max_shard_bytes = 3000"):
        etpack.save_ptd(tmp_path / "w.ptd", tensors(), max_shard_bytes=3000)
    assert os.listdir(tmp_path) == []
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_shard_bytes"):
            etpack.save_ptd(tmp_path / "w.ptd", tensors(), max_shard_bytes=bad)


def program(n):
    values = [{"val_type": "Tensor", "val": {
        "scalar_type": 0, "sizes": [400], "dim_order": [0], "data_buffer_idx": i + 1,
        "extra_tensor_info": {"fully_qualified_name": f"w{i}"}}} for i in range(n)]
    return {"version": 0, "execution_plan": [{
        "name": "forward", "values": values, "inputs": [], "outputs": list(range(n)),
        "chains": [{"inputs": [], "outputs": [], "instructions": []}], "operators": [],
        "delegates": [], "non_const_buffer_sizes": [0]}]}


def test_save_pte_external_constants_sharded(tmp_path):
    constants = [b""] + [bytes([i]) * 400 for i in range(4)]
    pte = tmp_path / "m.pte"
    written = etpack.save_pte(pte, program(4), constants=constants,
                              external_constants=tmp_path / "w.ptd", max_shard_bytes=1024)
    assert len(written) > 1
    assert all(os.path.getsize(p) <= 1024 for p in written)
    etpack.verify(pte, data=written)
    with pytest.raises(etpack.NotFoundError, match="EXTERNAL key"):
        etpack.verify(pte, data=written[1:])
    with pytest.raises(ValueError, match="external_constants"):
        etpack.save_pte(pte, program(4), constants=constants, max_shard_bytes=1024)


def test_exir_save_shards_each_tag(tmp_path):
    emitted, options = external_emitter_output()
    written = ex.save(tmp_path / "m.pte", emitted, config=config_of(options),
                      max_shard_bytes=512)
    assert len(written) > 1
    for p in written:
        assert re.fullmatch(r"model-[0-9a-f]{16}\.ptd", os.path.basename(p))
        assert os.path.getsize(p) <= 512
    etpack.verify(tmp_path / "m.pte", written)
