"""State dicts of numpy arrays and torch tensors through save_ptd/load_ptd."""

import numpy as np
import pytest

import etpack

torch = pytest.importorskip("torch")


def numpy_state():
    rng = np.random.default_rng(7)
    return {
        "embed.weight": rng.standard_normal((16, 8)).astype(np.float32),
        "layer.0.bias": rng.standard_normal(8).astype(np.float16),
        "layer.0.weight.T": rng.standard_normal((8, 4)).astype(np.float64).T,  # column-major
        # NCHW sizes over NHWC memory: channels-last.
        "conv.weight.nhwc": np.transpose(rng.integers(-9, 9, (2, 4, 5, 3), dtype=np.int32),
                                         (0, 3, 1, 2)),
        "mask": rng.integers(0, 2, (3, 3)).astype(bool),
        "ids": np.arange(6, dtype=np.int64),
        "u8": np.arange(10, dtype=np.uint8),
        "u16": np.arange(10, dtype=np.uint16),
        "i8": np.arange(-5, 5, dtype=np.int8),
        "empty": np.zeros((0, 4), np.float32),
        "scalar": np.array(2.5, np.float64),
        "numpy_scalar": np.float32(1.5),
    }


def test_numpy_state_dict_round_trip(tmp_path):
    state = numpy_state()
    path = tmp_path / "w.ptd"
    etpack.save_ptd(path, state)
    back = etpack.load_ptd(path)
    assert list(back) == list(state)
    for key, value in state.items():
        value = np.asarray(value)
        got = back[key]
        assert got.dtype == value.dtype and got.shape == value.shape, key
        assert np.array_equal(got, value), key
        assert not got.flags.writeable
    entries = {e["key"]: e for e in etpack.inspect(path)["entries"]}
    assert entries["layer.0.weight.T"]["tensor_layout"]["dim_order"] == [1, 0]
    assert entries["conv.weight.nhwc"]["tensor_layout"]["dim_order"] == [0, 2, 3, 1]
    assert entries["scalar"]["tensor_layout"]["sizes"] == []
    etpack.verify(path)


def test_torch_state_dict_round_trip(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(),
                                torch.nn.Linear(4, 2))
    state = dict(model.state_dict())
    state["conv.bf16"] = torch.randn(2, 3, 4, 5).to(torch.bfloat16)
    state["conv.channels_last"] = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    state["bf16.channels_last"] = state["conv.channels_last"].to(torch.bfloat16)
    state["empty"] = torch.zeros(0, 3)
    state["scalar"] = torch.tensor(3, dtype=torch.int64)
    state["half"] = torch.arange(4, dtype=torch.float16)
    state["grad"] = torch.ones(3, requires_grad=True)
    path = tmp_path / "w.ptd"
    etpack.save_ptd(path, state)
    back = etpack.load_ptd(path)
    entries = {e["key"]: e for e in etpack.inspect(path)["entries"]}
    for key, value in state.items():
        got = back[key]
        if value.dtype == torch.bfloat16:
            assert entries[key]["tensor_layout"]["scalar_type"] == 15
            # numpy has no bfloat16: the bits come back as uint16.
            got = torch.from_numpy(got.view(np.int16).copy()).view(torch.bfloat16)
        else:
            got = torch.from_numpy(got.copy())
        assert got.shape == value.shape, key
        assert torch.equal(got, value.detach()), key
    assert entries["conv.channels_last"]["tensor_layout"]["dim_order"] == [0, 2, 3, 1]
    assert entries["bf16.channels_last"]["tensor_layout"]["dim_order"] == [0, 2, 3, 1]
    assert back["conv.channels_last"].strides == (240, 4, 60, 12)  # stays channels-last


def test_same_memory_is_stored_once(tmp_path):
    a = np.arange(64, dtype=np.float32)
    path = tmp_path / "w.ptd"
    etpack.save_ptd(path, {"a": a, "alias": etpack.Entry(a, dtype="FLOAT", sizes=[8, 8])})
    report = etpack.inspect(path)
    assert len(report["segments"]) == 1
    assert [e["segment"] for e in report["entries"]] == [0, 0]


def test_alignment_and_file_items(tmp_path):
    raw = tmp_path / "raw.bin"
    raw.write_bytes(bytes(range(256)) * 4)
    path = tmp_path / "w.ptd"
    etpack.save_ptd(path, {"file": raw, "range": (str(raw), 16, 32), "m": memoryview(b"xyz")},
                    alignment=4096)
    report = etpack.inspect(path)
    assert all(s["absolute_offset"] % 4096 == 0 for s in report["segments"])
    back = etpack.load_ptd(path)
    assert bytes(back["file"]) == raw.read_bytes()
    assert bytes(back["range"]) == raw.read_bytes()[16:48]
    assert bytes(back["m"]) == b"xyz"


def test_loaded_arrays_outlive_everything_else(tmp_path):
    path = tmp_path / "w.ptd"
    etpack.save_ptd(path, {"x": np.arange(1000, dtype=np.int32)})
    x = etpack.load_ptd(path)["x"]
    import gc
    gc.collect()
    assert int(x.sum()) == sum(range(1000))


def test_progress_is_called_from_the_writer(tmp_path):
    calls = []
    big = np.ones(80 << 20, np.uint8)  # more than one 64 MiB progress step
    etpack.save_ptd(tmp_path / "w.ptd", {"big": big}, progress=lambda d, t: calls.append((d, t)))
    assert len(calls) >= 2
    assert calls[-1][0] == calls[-1][1] >= big.nbytes
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))


def test_save_pte_with_external_constants(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    program = {"version": 0, "execution_plan": [{
        "name": "forward",
        "values": [{"val_type": "Tensor", "val": {
            "scalar_type": 6, "sizes": [2, 3], "dim_order": [0, 1], "data_buffer_idx": 1,
            "extra_tensor_info": {"fully_qualified_name": "w"}}}],
        "inputs": [], "outputs": [0], "chains": [{"inputs": [], "outputs": [], "instructions": []}], "operators": [], "delegates": [],
        "non_const_buffer_sizes": [0]}]}
    pte, ptd = tmp_path / "m.pte", tmp_path / "m.ptd"
    etpack.save_pte(pte, program, constants=[b"", w], external_constants=ptd)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    etpack.verify(pte, data=[ptd])
    assert np.array_equal(etpack.load_ptd(ptd)["w"], w)
    assert etpack.inspect(pte)["external_tensors"][0]["key"] == "w"
    assert etpack.inspect(pte)["constants"]["tensors"] == 0


def test_save_pte_dedup_constants(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = lambda i: {"val_type": "Tensor", "val": {  # noqa: E731
        "scalar_type": 6, "sizes": [2, 3], "dim_order": [0, 1], "data_buffer_idx": i}}
    program = {"version": 0, "execution_plan": [{
        "name": "forward", "values": [tensor(1), tensor(2)],
        "inputs": [], "outputs": [0, 1],
        "chains": [{"inputs": [], "outputs": [], "instructions": []}], "operators": [],
        "delegates": [], "non_const_buffer_sizes": [0]}]}
    shared, plain = tmp_path / "shared.pte", tmp_path / "plain.pte"
    etpack.save_pte(shared, program, constants=[b"", w, w.copy()], dedup_constants=True)
    etpack.save_pte(plain, program, constants=[b"", w, w.copy()])
    etpack.verify(shared)
    assert etpack.inspect(shared)["dedup"] == {"shared_entries": 1, "bytes_saved": 24}
    assert etpack.inspect(plain)["dedup"] == {"shared_entries": 0, "bytes_saved": 0}
    assert shared.stat().st_size < plain.stat().st_size
