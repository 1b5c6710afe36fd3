"""Every golden case written from Python equals its golden: the same decoded
structure (flatc rendering) and byte-identical segment data, as
test/writer/golden_test.cc checks for the C++ writers."""

import base64
import copy
import json

import pytest

import etpack
from conftest import GOLDEN


def blob(b):
    return base64.b64decode(b["base64"])


def is_blob(x):
    return isinstance(x, dict) and set(x) == {"base64", "size"}


def small_blobs_to_bytes(x):
    """Blobs left in the program (CompileSpec values) become bytes."""
    if is_blob(x):
        return blob(x)
    if isinstance(x, dict):
        return {k: small_blobs_to_bytes(v) for k, v in x.items()}
    if isinstance(x, list):
        return [small_blobs_to_bytes(v) for v in x]
    return x


def pte_arguments(case):
    """The golden input as an export tool would hand it to save_pte."""
    doc = json.loads((GOLDEN / f"{case}.input.json").read_text())
    program = copy.deepcopy(doc["program"])
    constants = []
    for buffer in program.get("constant_buffer") or []:
        constants.append(blob(buffer["storage"]) if buffer.get("storage") else b"")
        buffer["storage"] = None
    delegates = []
    for inline in program.get("backend_delegate_data") or []:
        delegates.append(blob(inline["data"]))
        inline["data"] = None
    mutable = [blob(m["storage"]) for m in doc.get("mutable_data") or []]
    named = {}
    if doc.get("named_data"):
        buffers = [blob(b) for b in doc["named_data"]["buffers"]]  # one object per buffer
        for e in doc["named_data"]["entries"]:
            named[e["key"]] = etpack.Entry(buffers[e["buffer_index"]], alignment=e["alignment"])
    options = doc["serializer_options"]
    kwargs = dict(segment_alignment=options["segment_alignment"],
                  extract_delegate_segments=options["extract_delegate_segments"])
    if options.get("constant_tensor_alignment"):
        kwargs["constant_alignment"] = options["constant_tensor_alignment"]
    if options.get("delegate_alignment"):
        kwargs["delegate_alignment"] = options["delegate_alignment"]
    return small_blobs_to_bytes(program), constants, mutable, delegates, named, kwargs


def segment_data(path, header_key):
    report = etpack.inspect(path)
    h = report[header_key]
    data = path.read_bytes() if hasattr(path, "read_bytes") else open(path, "rb").read()
    return data[h["segment_base_offset"]:h["segment_base_offset"] + h["segment_data_size"]]


PTE_CASES = sorted(p.name[:-len(".input.json")] for p in GOLDEN.glob("pte_*.input.json"))
PTD_CASES = sorted(p.name[:-len(".input.json")] for p in GOLDEN.glob("ptd_*.input.json"))
BPTE_CASES = sorted(p.name[:-len(".input.json")] for p in GOLDEN.glob("bpte_*.input.json"))


def test_every_case_is_covered():
    assert len(PTE_CASES) >= 10 and len(PTD_CASES) == 2 and len(BPTE_CASES) == 2


@pytest.mark.parametrize("case", PTE_CASES)
@pytest.mark.parametrize("form", ["dict", "str"])
def test_pte_golden(case, form, tmp_path):
    program, constants, mutable, delegates, named, kwargs = pte_arguments(case)
    if form == "str":
        try:
            program = json.dumps(program)
        except TypeError:  # bytes in the tree: the dict form only
            pytest.skip("program holds bytes")
    out = tmp_path / f"{case}.pte"
    etpack.save_pte(out, program, constants=constants, mutable=mutable, delegates=delegates,
                    named_data=named, **kwargs)
    assert etpack._etpack._flatc_json(str(out)) == (GOLDEN / f"{case}.flatc.json").read_text()
    assert segment_data(out, "extended_header") == segment_data(GOLDEN / f"{case}.pte",
                                                                "extended_header")
    etpack.verify(out)


def ptd_tensors(case):
    """The golden input as save_ptd's mapping."""
    doc = json.loads((GOLDEN / f"{case}.input.json").read_text())
    assert doc["serializer_options"]["segment_alignment"] == 128  # save_ptd's default
    buffers = [blob(b) for b in doc["buffers"]]
    tensors = {}
    for e in doc["entries"]:
        layout = e["tensor_layout"]
        if layout is None:
            tensors[e["key"]] = etpack.Entry(buffers[e["buffer_index"]], alignment=e["alignment"])
        else:
            tensors[e["key"]] = etpack.Entry(
                buffers[e["buffer_index"]], dtype=layout["scalar_type"], sizes=layout["sizes"],
                dim_order=layout["dim_order"], alignment=e["alignment"])
    return tensors


@pytest.mark.parametrize("case", PTD_CASES)
def test_ptd_golden(case, tmp_path):
    out = tmp_path / f"{case}.ptd"
    etpack.save_ptd(out, ptd_tensors(case))
    assert etpack._etpack._flatc_json(str(out)) == (GOLDEN / f"{case}.flatc.json").read_text()
    assert segment_data(out, "header") == segment_data(GOLDEN / f"{case}.ptd", "header")
    ours, ref = etpack.inspect(out), etpack.inspect(GOLDEN / f"{case}.ptd")
    assert ours["entries"] == ref["entries"] and ours["segments"] == ref["segments"]


def case_value(v):
    kind = v["val_type"]
    val = v["val"]
    if kind == "Int":
        return val["int_val"]
    if kind == "Bool":
        return val["bool_val"]
    if kind == "Double":
        return float(val["double_val"])
    return etpack.Entry(blob(val["data"]), dtype=val["scalar_type"], sizes=val["sizes"],
                        dim_order=val["dim_order"])


def bpte_arguments(case):
    """The golden input as save_bpte's program and cases."""
    doc = json.loads((GOLDEN / f"{case}.input.json").read_text())["bundled_program"]
    cases = {}
    for suite in doc["method_test_suites"]:
        cases[suite["method_name"]] = [
            {"inputs": [case_value(v) for v in c["inputs"]],
             "expected_outputs": [case_value(v) for v in c["expected_outputs"]]}
            for c in suite["test_cases"]]
    return blob(doc["program"]), cases


@pytest.mark.parametrize("case", BPTE_CASES)
def test_bpte_golden(case, tmp_path):
    doc = json.loads((GOLDEN / f"{case}.input.json").read_text())["bundled_program"]
    out = tmp_path / f"{case}.bpte"
    etpack.save_bpte(out, *bpte_arguments(case))
    assert etpack._etpack._flatc_json(str(out)) == etpack._etpack._flatc_json(
        str(GOLDEN / f"{case}.bpte"))
    # Where the program sits may differ (etpack plans the flatbuffer around
    # it); what the file holds may not.
    ours, ref = etpack.inspect(out), etpack.inspect(GOLDEN / f"{case}.bpte")
    for report in (ours, ref):
        del report["program"]["file"]
    for key in ("layout", "program_size", "test_suites", "program"):
        assert ours[key] == ref[key]
    data = out.read_bytes()
    assert data[ours["program_offset"]:][:ours["program_size"]] == blob(doc["program"])


def test_inspect_reports_fat_delegates_and_shared_storage():
    report = etpack.inspect(GOLDEN / "pte_fat.pte")
    fat = report["fat_delegates"]
    assert len(fat) == 1
    assert [e["backend_id"] for e in fat[0]["entries"]] == ["NativeBackend", "MLXBackend"]
    assert fat[0]["entries"][0]["kind"] == "program"
    assert etpack.inspect(GOLDEN / "pte_named_data.pte")["dedup"] == {
        "shared_entries": 1, "bytes_saved": 200}
    assert etpack.inspect(GOLDEN / "pte_constants.pte")["fat_delegates"] == []
