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


@pytest.mark.parametrize("name, value, error", [
    ("min_bytes", 2 ** 64, etpack.OutOfRangeError),
    ("min_bytes", -1, ValueError),
    ("min_bytes", 1.5, TypeError),
    ("min_bytes", True, TypeError),
    ("max_shard_bytes", 2 ** 64, etpack.OutOfRangeError),
    ("align", 2 ** 64, etpack.OutOfRangeError),
    ("integrity", "yes", TypeError),
    ("integrity", 1, TypeError),
    ("dry_run", "no", TypeError),
])
def test_share_arguments_are_checked_by_name(tmp_path, name, value, error):
    # A clear error naming the argument and its value, never pybind11's
    # "incompatible function arguments"; flags are bools, as `align` is an int.
    inputs = _family(tmp_path, 2)
    with pytest.raises(error) as e:
        etpack.share(inputs, tmp_path / "out", **{name: value})
    message = str(e.value)
    assert name in message and (repr(value) in message or str(value) in message)
    assert "incompatible function arguments" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_save_pte_flags_are_bools(tmp_path):
    with pytest.raises(TypeError, match="dedup_constants"):
        etpack.save_pte(str(tmp_path / "a.pte"), _program([4]), constants=[b"", b"0123" * 4],
                        dedup_constants="yes")


def test_share_ptd_per_variant_loads_with_the_shared_file_alone(tmp_path):
    # A variant exported with its weights in a .ptd of its own (A.ptd with
    # A.pte): what stays its own goes back inside its thin program.
    paths = []
    weight = np.arange(4096, dtype=np.float32)
    for v in range(2):
        program = _program([4096, 1024 * (v + 1)])
        for i, key in enumerate(["w", "rope"]):
            program["execution_plan"][0]["values"][i]["val"]["extra_tensor_info"] = {
                "location": "EXTERNAL", "fully_qualified_name": key}
            program["execution_plan"][0]["values"][i]["val"]["data_buffer_idx"] = 0
        program["constant_buffer"] = [{}]
        pte = str(tmp_path / f"ctx{v}.pte")
        etpack.save_pte(pte, program, constants=[b""])
        etpack.save_ptd(str(tmp_path / f"ctx{v}.ptd"),
                        {"w": weight, "rope": np.full(1024 * (v + 1), v, dtype=np.float32)})
        paths += [pte, str(tmp_path / f"ctx{v}.ptd")]
    out = tmp_path / "out"
    r = etpack.share(paths, out)
    assert sorted(os.listdir(out)) == [".etpack-unit", "ctx0.pte", "ctx1.pte", "shared.ptd"]
    assert [e["key"] for e in r["entries"]] == ["w"]
    for f in r["files"][::2]:
        assert f["data"] == [str(out / "shared.ptd")]
        assert f["items_taken"] == 1
        etpack.verify([f["output"], str(out / "shared.ptd")])


def _named_data_keys(path):
    return [n["key"] for n in etpack.inspect(str(path))["named_data"]]


def test_the_way_back_restores_the_order_of_named_data(tmp_path):
    """share, then `repack THIN.pte --data shared.ptd`: named data in its order."""
    import subprocess
    cli = os.environ.get("ETPACK_CLI")
    if not cli:
        pytest.skip("ETPACK_CLI is not set")
    weight = np.arange(4096, dtype=np.float32)
    inputs = []
    for v in range(2):
        path = str(tmp_path / f"v{v}.pte")
        etpack.save_pte(path, _program([4096]), constants=[b"", weight],
                        named_data={"zeta": np.ones(2048, dtype=np.float32),
                                    "alpha": np.full(2048, 3, dtype=np.float32)})
        inputs.append(path)
    assert _named_data_keys(inputs[0]) == ["zeta", "alpha"]
    out = tmp_path / "out"
    etpack.share(inputs, out)
    back = tmp_path / "back.pte"
    subprocess.run([cli, "repack", str(out / "v0.pte"), "--data", str(out / "shared.ptd"),
                    "-o", str(back)], check=True, capture_output=True)
    assert _named_data_keys(back) == ["zeta", "alpha"]


def test_share_reports_what_etpack_share_json_reports(tmp_path):
    """One rendering (ShareReportJson): etpack.share and `etpack share --json` agree."""
    import json
    import subprocess
    cli = os.environ.get("ETPACK_CLI")
    if not cli:
        pytest.skip("ETPACK_CLI is not set")
    weight = np.arange(4096, dtype=np.float32)
    inputs = []
    for v in range(2):
        path = str(tmp_path / f"v{v}.pte")
        etpack.save_pte(path, _program([4096]), constants=[b"", weight])
        inputs.append(path)
    r = etpack.share(inputs, tmp_path / "py")
    out = subprocess.run([cli, "share", *inputs, "-o", str(tmp_path / "cli"), "--json"],
                         check=True, capture_output=True, text=True).stdout
    c = json.loads(out)
    assert set(r) == set(c)
    assert r["written"] == [str(tmp_path / "py" / n) for n in ("shared.ptd", "v0.pte", "v1.pte")]
    assert [p.replace("/cli/", "/py/") for p in c["written"]] == r["written"]
    assert r["bytes_written"] == c["bytes_written"] > 0
    dry = etpack.share(inputs, tmp_path / "dry", dry_run=True)
    assert dry["dry_run"] and "written" not in dry and "bytes_written" not in dry
