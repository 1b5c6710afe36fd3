"""What upstream's serializer does at the edges, checked through etpack.exir
with the stand-in classes: alignments that are not powers of two (the least
common multiple rule), [] kept apart from None, no constant segment without
constant_buffer entries, and empty delegate blobs left inline. Written for
etpack (issue 36); the rules were learned by running upstream's tests
(scripts/upstream_tests.sh)."""

import json

import pytest

import etpack
import etpack.exir as ex
import exir_classes as C
from test_exir import pte_file_of


def program_json(artifact, tmp_path, name="o.pte"):
    path = tmp_path / name
    artifact.save(path)
    etpack.verify(path)
    return json.loads(etpack._etpack._flatc_json(str(path)))


def segments(doc):
    return [(s["offset"], s["size"]) for s in doc.get("segments", [])]


def no_segments():
    """A golden program with only the constant placeholder, as a PTEFile."""
    pte_file, _ = pte_file_of("pte_no_segments")
    return pte_file


def named(buffers, alignments):
    entries = {f"key{i}": C.DataEntry(i, a) for i, a in enumerate(alignments)}
    return C.NamedDataStoreOutput(list(buffers), entries, {})


# Alignments that are not powers of two.

def test_named_data_alignment_3_starts_at_multiples_of_lcm_with_128(tmp_path):
    pte_file = no_segments()
    pte_file.named_data = named([b"\x00" * 24, b"\x01" * 8, b"\x02" * 16], [1, 3, 256])
    doc = program_json(ex.serialize_pte_binary(pte_file, segment_alignment=128), tmp_path)
    # The empty constant segment, 24 bytes, then at multiples of lcm(3, 128)
    # = 384 and of lcm(256, 128).
    assert segments(doc) == [(0, 0), (0, 24), (384, 8), (512, 16)]


def test_segment_alignment_12(tmp_path):
    pte_file = no_segments()
    pte_file.program.constant_buffer = []  # no constant segment: named data only
    pte_file.named_data = named([b"a" * 8, b"b" * 16, b"c" * 24], [8, 16, 24])
    artifact = ex.serialize_pte_binary(pte_file, segment_alignment=12)
    doc = program_json(artifact, tmp_path)
    assert segments(doc) == [(0, 8), (48, 16), (72, 24)]
    data = bytes(artifact)
    info = etpack.inspect(tmp_path / "o.pte")
    base = info["extended_header"]["segment_base_offset"]
    assert base % 12 == 0
    assert data[base + 48:base + 64] == b"b" * 16
    assert len(data) == base + 96
    # What each segment achieves in the file: a power of two dividing its offset.
    for s in info["segments"]:
        a = s["alignment"]
        assert a & (a - 1) == 0 and s["absolute_offset"] % a == 0


def test_ptd_entry_alignment_3_and_segment_alignment_12(tmp_path):
    payload = C.DataPayload([b"x" * 5, b"y" * 7], {"a": C.DataEntry(0, 3), "b": C.DataEntry(1, 3)})
    ex.serialize_ptd(payload, segment_alignment=12).save(tmp_path / "o.ptd")
    info = etpack.inspect(tmp_path / "o.ptd")
    assert [s["offset"] for s in info["segments"]] == [0, 12]


def test_alignment_0_asks_for_nothing():
    payload = C.DataPayload([b"x" * 5], {"a": C.DataEntry(0, 0)})
    assert bytes(ex.serialize_ptd(payload)) == bytes(
        ex.serialize_ptd(C.DataPayload([b"x" * 5], {"a": C.DataEntry(0, 1)})))


@pytest.mark.parametrize("option", ["constant_tensor_alignment", "delegate_alignment"])
def test_flatbuffer_alignments_stay_powers_of_two(option):
    with pytest.raises(ValueError, match=option + " = 14 is not a power of two"):
        ex.serialize_pte_binary(no_segments(), **{option: 14})


def test_segment_alignment_0_is_refused():
    with pytest.raises(ValueError, match="segment_alignment = 0 is not a positive alignment"):
        ex.serialize_pte_binary(no_segments(), segment_alignment=0)


# [] is written as [], None as nothing.

@pytest.mark.parametrize("extract", [True, False])
def test_empty_backend_delegate_data_is_written_empty(tmp_path, extract):
    doc = program_json(ex.serialize_pte_binary(no_segments(), extract_delegate_segments=extract),
                       tmp_path)
    assert doc["backend_delegate_data"] == []


@pytest.mark.parametrize("field", ["named_data", "mutable_data_segments"])
def test_empty_list_stays_and_none_stays_absent(tmp_path, field):
    pte_file = no_segments()
    setattr(pte_file.program, field, [])
    assert program_json(ex.serialize_pte_binary(pte_file), tmp_path, "a.pte")[field] == []
    setattr(pte_file.program, field, None)
    assert field not in program_json(ex.serialize_pte_binary(pte_file), tmp_path, "b.pte")


# Constant segments.

def test_no_constant_buffer_entries_no_constant_segment(tmp_path):
    pte_file = no_segments()
    pte_file.program.constant_buffer = []
    pte_file.program.constant_segment = C.SubsegmentOffsets(0, [])
    doc = program_json(ex.serialize_pte_binary(pte_file), tmp_path)
    assert doc["segments"] == []
    assert doc["constant_segment"] == {"segment_index": 0, "offsets": []}


def test_the_placeholder_alone_is_an_empty_constant_segment(tmp_path):
    doc = program_json(ex.serialize_pte_binary(no_segments()), tmp_path)
    assert segments(doc) == [(0, 0)]
    assert doc["constant_segment"]["offsets"] == [0]


# Empty delegate blobs.

def add_delegates(program, blobs):
    plan = program.execution_plan[0]
    for blob in blobs:
        index = len(program.backend_delegate_data)
        program.backend_delegate_data.append(C.BackendDelegateInlineData(blob))
        plan.delegates.append(C.BackendDelegate(
            f"d{index}", C.BackendDelegateDataReference(C.DataLocation.INLINE, index), []))


def test_an_empty_delegate_blob_stays_inline(tmp_path):
    pte_file = no_segments()
    add_delegates(pte_file.program, [b"z" * 40, b""])
    doc = program_json(ex.serialize_pte_binary(pte_file, extract_delegate_segments=True), tmp_path)
    assert segments(doc) == [(0, 0), (0, 40)]
    processed = [d["processed"] for d in doc["execution_plan"][0]["delegates"]]
    assert processed == [{"location": "SEGMENT", "index": 1}, {"location": "INLINE", "index": 0}]
    assert doc["backend_delegate_data"] == [{"data": []}]


def test_only_empty_delegate_blobs_no_header(tmp_path):
    pte_file = no_segments()
    add_delegates(pte_file.program, [b""])
    artifact = ex.serialize_pte_binary(pte_file, extract_delegate_segments=True)
    doc = program_json(artifact, tmp_path)
    assert segments(doc) == [(0, 0)]
    assert bytes(artifact)[8:12] != b"eh00"
