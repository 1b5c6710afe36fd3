"""etpack.share: thin programs around one shared .ptd (docs/share.md)."""

import os

import numpy as np
import pytest

import etpack


def _program(sizes):
    """One method with a FLOAT constant per entry of `sizes` (data_buffer_idx i + 1)."""
    values = [{"val_type": "Tensor",
               "val": {"scalar_type": 6, "sizes": [n], "dim_order": [0], "data_buffer_idx": i + 1}}
              for i, n in enumerate(sizes)]
    return {
        "version": 0,
        "execution_plan": [{
            "name": "forward", "values": values, "inputs": [], "outputs": [0],
            "operators": [], "delegates": [],
            "chains": [{"inputs": [], "outputs": [0], "instructions": []}],
            "non_const_buffer_sizes": [0],
        }],
        "constant_buffer": [{}] * (len(sizes) + 1),
        "segments": [],
        "constant_segment": {"segment_index": 0, "offsets": []},
    }


def _family(tmp_path, n=3):
    """Variants sharing a 16 KiB weight, each with a mask of its own size."""
    weight = np.arange(4096, dtype=np.float32)
    paths = []
    for v in range(n):
        mask = np.full(1024 * (v + 1), v + 2, dtype=np.float32)
        path = str(tmp_path / f"v{v}.pte")
        etpack.save_pte(path, _program([4096, mask.size]), constants=[b"", weight, mask],
                        named_data={"xnn.w": np.ones(2048, dtype=np.float32)})
        paths.append(path)
    return paths


def test_share_writes_thin_programs_that_verify(tmp_path):
    inputs = _family(tmp_path)
    out = tmp_path / "out"
    seen = []
    r = etpack.share(inputs, out, progress=lambda done, total: seen.append((done, total)))
    assert [f["input"] for f in r["files"]] == inputs
    assert r["shared_files"] == [str(out / "shared.ptd")]
    keys = sorted(e["key"] for e in r["entries"])
    assert len(keys) == 2 and "xnn.w" in keys
    assert keys[0].startswith("etpack.content.")
    assert r["bytes_after"] < r["bytes_before"]
    assert seen and seen[-1][0] == seen[-1][1]
    for f in r["files"]:
        assert f["items_moved"] == 2
        etpack.verify([f["output"]] + f["data"])
        assert os.path.getsize(f["output"]) == f["bytes_after"]


def test_share_dry_run_writes_nothing(tmp_path):
    inputs = _family(tmp_path, 2)
    r = etpack.share(inputs, tmp_path / "out", dry_run=True)
    assert r["dry_run"] is True
    assert not (tmp_path / "out").exists()
    assert len(r["entries"]) == 2


def test_share_min_bytes_and_shards(tmp_path):
    inputs = _family(tmp_path, 2)
    r = etpack.share(inputs, tmp_path / "out", min_bytes=10000, data="w.ptd",
                     max_shard_bytes=1 << 20, align=4096)
    assert [e["size"] for e in r["entries"]] == [16384]
    assert len(r["shared_files"]) == 1
    assert os.path.basename(r["shared_files"][0]).startswith("w-")


def test_share_refuses_an_output_that_is_an_input(tmp_path):
    inputs = _family(tmp_path, 2)
    before = open(inputs[0], "rb").read()
    with pytest.raises(etpack.InvalidArgumentError, match="refusing to overwrite an input"):
        etpack.share(inputs, tmp_path)
    assert open(inputs[0], "rb").read() == before
    assert not (tmp_path / "shared.ptd").exists()


def test_share_refuses_bad_arguments(tmp_path):
    inputs = _family(tmp_path, 2)
    with pytest.raises(etpack.InvalidArgumentError, match="two or more .pte"):
        etpack.share(inputs[:1], tmp_path / "out")
    with pytest.raises(TypeError):
        etpack.share(inputs[0], tmp_path / "out")
    with pytest.raises(ValueError):
        etpack.share(inputs, tmp_path / "out", min_bytes=-1)
    with pytest.raises(etpack.InvalidArgumentError):
        etpack.share(inputs, tmp_path / "out", align=3)
    assert not (tmp_path / "out").exists()
