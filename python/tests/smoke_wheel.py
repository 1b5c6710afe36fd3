"""Smoke test of an installed etpack wheel, run by scripts/test.sh with the
python of a fresh venv the wheel was pip-installed into (no pytest there, so
a plain script: exit status 0 and a last line "smoke_wheel: ok" on success).

Checks that the etpack imported is the installed distribution's copy (not
this source tree's, not a build tree's), then writes a .pte (alone, and with
its constants in a .ptd as one unit), a .ptd and a .bpte from bytes, inspects
and verifies them, reads the .ptd back, and checks that errors are raised as
etpack's exceptions with nothing written. numpy and torch are blocked: the
package must work without them.

Usage: VENV/bin/python python/tests/smoke_wheel.py
"""

import sys

sys.modules["numpy"] = None  # `import numpy` now fails, as where it is absent
sys.modules["torch"] = None

import importlib.metadata  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import struct  # noqa: E402
import tempfile  # noqa: E402

import etpack  # noqa: E402

SOURCE_TREE = pathlib.Path(__file__).resolve().parents[2]
FLOATS = struct.pack("<2f", 1.0, 2.0)


def check_installed_copy():
    """etpack comes from the venv's site-packages, as pip installed it."""
    assert sys.prefix != sys.base_prefix, f"{sys.executable} is not a venv's python"
    module = pathlib.Path(etpack.__file__).resolve()
    assert SOURCE_TREE not in module.parents, f"etpack imported from the source tree: {module}"
    dist = importlib.metadata.distribution("etpack")
    installed = pathlib.Path(dist.locate_file("etpack/__init__.py")).resolve()
    assert module == installed, f"etpack imported from {module}, installed at {installed}"
    assert pathlib.Path(sys.prefix).resolve() in module.parents, f"{module} is outside the venv"
    # The wheel holds the package and its metadata, nothing else (no headers,
    # tool, pkg-config file or shared library installed beside the venv).
    recorded = [str(f) for f in dist.files]
    others = [f for f in recorded if f.split("/")[0] not in ("etpack", f"etpack-{dist.version}.dist-info")]
    assert not others, f"the wheel installed more than the package: {others}"
    extension = pathlib.Path(etpack._etpack.__file__).resolve()
    assert extension.parent == module.parent, extension
    assert f"etpack/{extension.name}" in recorded, (extension, recorded)
    return dist.version, module.parent


def program(constant_name=None):
    """A one-method program with one FLOAT[2] constant (data_buffer_idx 1)."""
    tensor = {"scalar_type": 6, "sizes": [2], "dim_order": [0], "data_buffer_idx": 1}
    if constant_name:
        tensor["extra_tensor_info"] = {"fully_qualified_name": constant_name}
    return {
        "version": 0,
        "execution_plan": [{
            "name": "forward",
            "values": [{"val_type": "Tensor", "val": tensor}],
            "inputs": [], "outputs": [0], "operators": [], "delegates": [],
            "chains": [{"inputs": [], "outputs": [0], "instructions": []}],
            "non_const_buffer_sizes": [0],
        }],
        "constant_buffer": [{}, {}],
        "segments": [],
        "constant_segment": {"segment_index": 0, "offsets": []},
    }


def check_writes(out):
    pte = out / "model.pte"
    etpack.save_pte(pte, program(), constants=[b"", FLOATS])
    etpack.verify(pte)
    info = etpack.inspect(pte)
    assert info["kind"] == "pte" and info["constants"] == {"tensors": 1, "bytes": 8}, info
    assert [m["name"] for m in info["methods"]] == ["forward"], info

    ptd = out / "weights.ptd"
    etpack.save_ptd(ptd, {"w": etpack.Entry(FLOATS, dtype="FLOAT", sizes=[2]),
                          "blob": bytearray(b"opaque")})
    etpack.verify(ptd)
    entries = {e["key"]: e for e in etpack.inspect(ptd)["entries"]}
    assert entries["w"]["tensor_layout"]["sizes"] == [2] and entries["blob"]["size"] == 6
    back = etpack.load_ptd(ptd)
    assert isinstance(back["w"], memoryview) and back["w"].readonly
    assert bytes(back["w"]) == FLOATS and bytes(back["blob"]) == b"opaque"
    del back

    # The constants moved to a .ptd: both files published as one unit.
    split = out / "split.pte"
    etpack.save_pte(split, program("linear.weight"), constants=[b"", memoryview(FLOATS)],
                    external_constants=out / "split.ptd")
    etpack.verify(split, data=[out / "split.ptd"])
    assert bytes(etpack.load_ptd(out / "split.ptd")["linear.weight"]) == FLOATS

    bpte = out / "model.bpte"
    etpack.save_bpte(bpte, pte, {"forward": [{"inputs": [], "expected_outputs": [1.5]}]})
    etpack.verify(bpte)
    assert etpack.inspect(bpte)["test_suites"] == [{"method": "forward", "cases": 1}]


def check_errors(out):
    before = sorted(os.listdir(out))
    bad = program()
    bad["execution_plan"][0]["values"][0]["val"]["data_buffer_idx"] = 5
    try:
        etpack.save_pte(out / "bad.pte", bad, constants=[b"", FLOATS])
    except etpack.InvalidArgumentError as e:
        assert "data_buffer_idx" in str(e), e
    else:
        raise AssertionError("a data_buffer_idx past constant_buffer was accepted")
    (out / "corrupt.ptd").write_bytes((out / "weights.ptd").read_bytes()[:100])
    try:
        etpack.verify(out / "corrupt.ptd")
    except etpack.Error as e:
        assert "corrupt.ptd" in str(e), e
    else:
        raise AssertionError("a truncated .ptd verified")
    assert sorted(os.listdir(out)) == sorted(before + ["corrupt.ptd"]), os.listdir(out)


def main():
    version, where = check_installed_copy()
    with tempfile.TemporaryDirectory(prefix="etpack-smoke-") as tmp:
        out = pathlib.Path(tmp)
        check_writes(out)
        check_errors(out)
    print(f"smoke_wheel: ok (etpack {version} from {where}, python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
