"""etpack.exir takes the exporter's object tree (here: the stand-in classes
of exir_classes.py) and writes what upstream's serializer writes: every
golden case is rebuilt as objects and compared with its golden the way
test_golden.py compares save_pte's output."""

import io
import json
import math
import os
import sys

import pytest

import etpack
import etpack.exir as ex
import exir_classes as C
from conftest import GOLDEN
from test_golden import PTD_CASES, PTE_CASES, pte_arguments, segment_data


def pte_file_of(case):
    """(PTEFile, serializer options) of a golden .pte case."""
    doc = json.loads((GOLDEN / f"{case}.input.json").read_text())
    program = C.from_flatc(C.Program, doc["program"])
    mutable = [C.Buffer(C.blob(m["storage"])) for m in doc.get("mutable_data") or []] or None
    named = None
    if doc.get("named_data"):
        nd = doc["named_data"]
        named = C.NamedDataStoreOutput(
            [C.blob(b) for b in nd["buffers"]],
            {e["key"]: C.DataEntry(e["buffer_index"], e["alignment"]) for e in nd["entries"]})
    return C.PTEFile(program, mutable, named), doc["serializer_options"]


def payload_of(case):
    doc = json.loads((GOLDEN / f"{case}.input.json").read_text())
    entries = {}
    for e in doc["entries"]:
        layout = e["tensor_layout"]
        if layout is not None:
            layout = C.TensorLayout(C.ScalarType(layout["scalar_type"]), layout["sizes"],
                                    layout["dim_order"])
        entries[e["key"]] = C.DataEntry(e["buffer_index"], e["alignment"], layout)
    return C.DataPayload([C.blob(b) for b in doc["buffers"]], entries), doc


def check_pte_golden(path, case):
    assert etpack._etpack._flatc_json(str(path)) == (GOLDEN / f"{case}.flatc.json").read_text()
    assert segment_data(path, "extended_header") == segment_data(GOLDEN / f"{case}.pte",
                                                                 "extended_header")
    etpack.verify(path)


def check_ptd_golden(path, case):
    assert etpack._etpack._flatc_json(str(path)) == (GOLDEN / f"{case}.flatc.json").read_text()
    assert segment_data(path, "header") == segment_data(GOLDEN / f"{case}.ptd", "header")
    ours, ref = etpack.inspect(path), etpack.inspect(GOLDEN / f"{case}.ptd")
    assert ours["entries"] == ref["entries"] and ours["segments"] == ref["segments"]


@pytest.mark.parametrize("case", PTE_CASES)
def test_pte_golden(case, tmp_path):
    pte_file, options = pte_file_of(case)
    artifact = ex.serialize_pte_binary(pte_file, **options)
    out = tmp_path / f"{case}.pte"
    artifact.save(out)
    check_pte_golden(out, case)
    # The same bytes as etpack's own writer given the same input, by every route.
    program, constants, mutable, delegates, named, kwargs = pte_arguments(case)
    ref = tmp_path / "save_pte.pte"
    etpack.save_pte(ref, program, constants=constants, mutable=mutable, delegates=delegates,
                    named_data=named, **kwargs)
    assert out.read_bytes() == ref.read_bytes()
    assert len(artifact) == len(ref.read_bytes())
    assert bytes(artifact) == ref.read_bytes()
    streamed = tmp_path / "streamed.pte"
    with open(streamed, "wb") as f:
        artifact.write_to_file(f)
    assert streamed.read_bytes() == ref.read_bytes()


@pytest.mark.parametrize("case", PTD_CASES)
def test_ptd_golden(case, tmp_path):
    payload, doc = payload_of(case)
    artifact = ex.serialize_ptd(payload,
                                segment_alignment=doc["serializer_options"]["segment_alignment"])
    out = tmp_path / f"{case}.ptd"
    artifact.save(out)
    check_ptd_golden(out, case)
    assert bytes(artifact) == out.read_bytes()


def test_old_signature_takes_the_program_itself(tmp_path):
    pte_file, options = pte_file_of("pte_named_data")
    a = ex.serialize_pte_binary(pte_file, **options)
    b = ex.serialize_pte_binary(pte_file.program, mutable_data=pte_file.mutable_data,
                                named_data=pte_file.named_data, **options)
    assert bytes(a) == bytes(b)


def test_nan_and_infinities_and_every_value_kind(tmp_path):
    pte_file, options = pte_file_of("pte_all_kinds")
    values = pte_file.program.execution_plan[0].values
    kinds = {type(v.val).__name__ for v in values}
    assert kinds == {"Null", "Int", "Bool", "Double", "String", "IntList", "DoubleList",
                     "BoolList", "Tensor", "TensorList", "OptionalTensorList"}
    assert [v.val.double_val for v in values if isinstance(v.val, C.Double)][1:] == ["inf", "-inf"]
    values[5] = C.EValue(C.Double(float("nan")))
    out = tmp_path / "nan.pte"
    ex.serialize_pte_binary(pte_file, **options).save(out)
    text = etpack._etpack._flatc_json(str(out))
    assert "double_val: nan" in text or '"double_val": nan' in text or "nan" in text
    assert "inf" in text and "-inf" in text


def external_emitter_output():
    """pte_external's program with ptd_basic's tensors as the emitter's
    external constants of tag "model"."""
    pte_file, options = pte_file_of("pte_external")
    payload, _ = payload_of("ptd_basic")
    fqns = {key: e.buffer_index for key, e in payload.named_data.items()}
    return C.EmitterOutput(pte_file.program, None, payload.buffers, {"model": fqns}), options


def config_of(options):
    return C.ExecutorchBackendConfig(options["extract_delegate_segments"],
                                     options["segment_alignment"],
                                     options["constant_tensor_alignment"],
                                     options["delegate_alignment"])


def test_for_executorch_places_external_constants_in_their_tag(tmp_path):
    emitted, options = external_emitter_output()
    pte, ptds = ex.serialize_for_executorch(emitted, config_of(options))
    assert list(ptds) == ["model"]
    pte.save(tmp_path / "p.pte")
    ptds["model"].save(tmp_path / "model.ptd")
    check_pte_golden(tmp_path / "p.pte", "pte_external")
    etpack.verify(tmp_path / "p.pte", [tmp_path / "model.ptd"])
    ours = etpack.inspect(tmp_path / "model.ptd")
    ref = etpack.inspect(GOLDEN / "ptd_basic.ptd")
    strip = [{k: v for k, v in e.items() if k not in ("segment", "alignment", "offset")}
             for e in ours["entries"]]
    assert strip == [{k: v for k, v in e.items() if k not in ("segment", "alignment", "offset")}
                     for e in ref["entries"]]


def test_for_executorch_store_external_data_equals_golden(tmp_path):
    pte_file, options = pte_file_of("pte_external")
    payload, _ = payload_of("ptd_basic")
    store = C.NamedDataStoreOutput(payload.buffers, {}, {"weights": payload.named_data})
    emitted = C.EmitterOutput(pte_file.program)
    pte, ptds = ex.serialize_for_executorch(emitted, config_of(options), None, store)
    assert list(ptds) == ["weights"]
    ptds["weights"].save(tmp_path / "weights.ptd")
    check_ptd_golden(tmp_path / "weights.ptd", "ptd_basic")


def test_for_executorch_pte_data_stays_in_the_pte(tmp_path):
    pte_file, options = pte_file_of("pte_named_data")
    store = pte_file.named_data
    store.external_data = {"extra": {"x.blob": C.DataEntry(0, 1)}}
    emitted = C.EmitterOutput(pte_file.program, pte_file.mutable_data)
    pte, ptds = ex.serialize_for_executorch(emitted, config_of(options), None, store)
    pte.save(tmp_path / "p.pte")
    check_pte_golden(tmp_path / "p.pte", "pte_named_data")
    assert list(ptds) == ["extra"]
    ptds["extra"].save(tmp_path / "extra.ptd")
    assert [e["key"] for e in etpack.inspect(tmp_path / "extra.ptd")["entries"]] == ["x.blob"]
    # Older upstream code passes the store as named_data=.
    pte2, ptds2 = ex.serialize_for_executorch(emitted, config_of(options), None,
                                              named_data=store)
    assert bytes(pte2) == bytes(pte) and bytes(ptds2["extra"]) == bytes(ptds["extra"])


def test_for_executorch_without_external_data_has_no_ptd():
    pte_file, options = pte_file_of("pte_constants")
    emitted = C.EmitterOutput(pte_file.program)
    pte, ptds = ex.serialize_for_executorch(emitted, config_of(options))
    assert ptds == {}
    pte2, ptds2 = ex.serialize_for_executorch(emitted, config_of(options), None,
                                              C.NamedDataStoreOutput())
    assert ptds2 == {} and bytes(pte) == bytes(pte2)


def test_file_backed_buffer_is_copied_from_its_file(tmp_path):
    payload, doc = payload_of("ptd_basic")
    for i, b in enumerate(payload.buffers):
        (tmp_path / f"b{i}.bin").write_bytes(b)
    payload.buffers = [C.FileBackedData(tmp_path / f"b{i}.bin")
                       for i in range(len(payload.buffers))]
    ex.serialize_ptd(payload).save(tmp_path / "f.ptd")
    check_ptd_golden(tmp_path / "f.ptd", "ptd_basic")


# Writing.

def test_write_to_file_at_a_position(tmp_path):
    pte_file, options = pte_file_of("pte_mutable")
    a = ex.serialize_pte_binary(pte_file, **options)
    data = bytes(a)
    path = tmp_path / "cord.bin"
    with open(path, "wb") as f:
        f.write(b"HEAD")
        a.write_to_file(f)
        f.write(b"TAIL")
    assert path.read_bytes() == b"HEAD" + data + b"TAIL"
    # Over existing bytes: the padding is zeros again, the rest untouched.
    path.write_bytes(b"\xff" * (len(data) + 20))
    with open(path, "r+b") as f:
        f.seek(7)
        a.write_to_file(f)
        assert f.tell() == 7 + len(data)
    assert path.read_bytes() == b"\xff" * 7 + data + b"\xff" * 13
    # No descriptor: written through f.write in chunks.
    buf = io.BytesIO()
    buf.write(b"xy")
    a.write_to_file(buf)
    assert buf.getvalue() == b"xy" + data
    # Append mode: the kernel ignores offsets there, so it goes through write().
    with open(path, "ab") as f:
        a.write_to_file(f)
    assert path.read_bytes() == b"\xff" * 7 + data + b"\xff" * 13 + data


def test_save_writes_pte_and_every_ptd_as_one_unit(tmp_path):
    emitted, options = external_emitter_output()
    payload, _ = payload_of("ptd_shared_blob")
    store = C.NamedDataStoreOutput(payload.buffers, {}, {"extra.ptd": payload.named_data})
    written = ex.save(tmp_path / "m.pte", emitted, config=config_of(options),
                      named_data_store=store)
    assert written == [str(tmp_path / "model.ptd"), str(tmp_path / "extra.ptd")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["extra.ptd", "m.pte", "model.ptd"]
    etpack.verify(tmp_path / "m.pte", [tmp_path / "model.ptd", tmp_path / "extra.ptd"])
    check_ptd_golden(tmp_path / "extra.ptd", "ptd_shared_blob")

    # One destination that cannot be written: none of the three changes.
    out = tmp_path / "second"
    out.mkdir()
    (out / "m.pte").write_bytes(b"old")
    (out / "extra.ptd").mkdir()
    with pytest.raises(etpack.Error):
        ex.save(out / "m.pte", emitted, config=config_of(options), named_data_store=store)
    assert (out / "m.pte").read_bytes() == b"old"
    assert sorted(p.name for p in out.iterdir()) == ["extra.ptd", "m.pte"]

    # ptd_dir elsewhere.
    data = tmp_path / "data"
    data.mkdir()
    ex.save(tmp_path / "n.pte", emitted, config=config_of(options), named_data_store=store,
            ptd_dir=data)
    assert sorted(p.name for p in data.iterdir()) == ["extra.ptd", "model.ptd"]


def test_a_save_stopped_between_its_renames_fails_verify_until_saved_again(tmp_path):
    # A save that replaces files marks each one (.<name>.etpack-publishing)
    # before its first rename and unmarks them after the last; a marker left
    # behind (the writer killed in between) makes verify refuse the file.
    emitted, options = external_emitter_output()
    pte, ptd = tmp_path / "m.pte", tmp_path / "model.ptd"
    for _ in range(2):  # new files, then replacing them
        ex.save(pte, emitted, config=config_of(options))
        assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pte", "model.ptd"]
    etpack.verify(pte, [ptd])
    marker = tmp_path / ".model.ptd.etpack-publishing"
    marker.write_bytes(b"etpack-publishing 1\n%s\n%s\n" % (bytes(ptd), bytes(pte)))
    raises_naming(etpack.Error, lambda: etpack.verify(pte, [ptd]), str(marker),
                  "(%s, %s)" % (ptd, pte), "write the unit again")
    ex.save(pte, emitted, config=config_of(options))
    assert not marker.exists()
    etpack.verify(pte, [ptd])

def raises_naming(exc, fn, *parts):
    with pytest.raises(exc) as info:
        fn()
    for p in parts:
        assert p in str(info.value), (p, str(info.value))


@pytest.fixture
def pte_all_kinds():
    return pte_file_of("pte_all_kinds")


def test_error_missing_attribute(tmp_path, pte_all_kinds):
    pte_file, options = pte_all_kinds
    tensor = pte_file.program.execution_plan[0].values[12].val
    del tensor.sizes
    raises_naming(TypeError, lambda: ex.serialize_pte_binary(pte_file, **options),
                  "pte_file.program.execution_plan[0].values[12].val.sizes: ",
                  "found a Tensor without attribute 'sizes'", "expected list of int")


def test_error_wrong_type(pte_all_kinds):
    pte_file, options = pte_all_kinds
    pte_file.program.execution_plan[0].values[12].val.sizes = "2,3"
    raises_naming(TypeError, lambda: ex.serialize_pte_binary(pte_file, **options),
                  "execution_plan[0].values[12].val.sizes", "found str", "expected list of int")
    pte_file.program.execution_plan[0].values[12].val.sizes = [2, 3.0]
    raises_naming(TypeError, lambda: ex.serialize_pte_binary(pte_file, **options),
                  "execution_plan[0].values[12].val.sizes[1]", "found float", "expected int")
    pte_file.program.execution_plan[0].values[12].val.sizes = [2, 3]
    pte_file.program.execution_plan[0].values[1] = C.EValue(C.Operator("x", ""))
    raises_naming(TypeError, lambda: ex.serialize_pte_binary(pte_file, **options),
                  "execution_plan[0].values[1].val", "found Operator", "expected one of Null, Int")


def test_error_enum_out_of_range(pte_all_kinds):
    pte_file, options = pte_all_kinds
    pte_file.program.execution_plan[0].values[12].val.shape_dynamism = 7
    raises_naming(etpack.InvalidArgumentError,
                  lambda: ex.serialize_pte_binary(pte_file, **options),
                  "execution_plan[0].values[12].val.shape_dynamism", "found int 7",
                  "expected TensorShapeDynamism")
    pte_file.program.execution_plan[0].values[12].val.shape_dynamism = 1
    pte_file.program.execution_plan[0].values[12].val.scalar_type = 300
    raises_naming(etpack.InvalidArgumentError,
                  lambda: ex.serialize_pte_binary(pte_file, **options),
                  "execution_plan[0].values[12].val.scalar_type", "300", "ScalarType")


def test_error_data_buffer_idx_past_constant_buffer(tmp_path):
    pte_file, options = pte_file_of("pte_constants")
    tensors = [v.val for v in pte_file.program.execution_plan[0].values
               if isinstance(v.val, C.Tensor) and v.val.data_buffer_idx > 0]
    tensors[0].data_buffer_idx = 9
    n = len(pte_file.program.constant_buffer)
    with pytest.raises(etpack.InvalidArgumentError) as info:
        ex.serialize_pte_binary(pte_file, **options)
    message = str(info.value)
    assert "data_buffer_idx" in message and "9" in message and str(n) in message, message
    assert "pte_file.program: " in message and "execution_plan[0].values[" in message
    emitted = C.EmitterOutput(pte_file.program)
    with pytest.raises(etpack.InvalidArgumentError):
        ex.save(tmp_path / "x.pte", emitted, config=config_of(options))
    assert list(tmp_path.iterdir()) == []


def test_error_key_in_two_tags(tmp_path):
    emitted, options = external_emitter_output()
    store = C.NamedDataStoreOutput([b"abc"], {},
                                   {"other": {"linear.weight": C.DataEntry(0, 1)}})
    raises_naming(etpack.InvalidArgumentError,
                  lambda: ex.save(tmp_path / "x.pte", emitted, config=config_of(options),
                                  named_data_store=store),
                  "key 'linear.weight' is in both ", "model.ptd and ", "other.ptd")
    assert list(tmp_path.iterdir()) == []


def test_error_buffer_index_and_bad_bytes(tmp_path):
    payload, _ = payload_of("ptd_basic")
    next(iter(payload.named_data.values())).buffer_index = 5
    raises_naming(etpack.InvalidArgumentError, lambda: ex.serialize_ptd(payload),
                  "data_payload.named_data['linear.weight'].buffer_index", "5 is past")
    payload, _ = payload_of("ptd_basic")
    payload.buffers[0] = "not bytes"
    raises_naming(TypeError, lambda: ex.serialize_ptd(payload),
                  "data_payload.buffers[0]", "found str", "expected bytes")
    pte_file, options = pte_file_of("pte_constants")
    pte_file.program.constant_buffer[1].storage = 3
    raises_naming(TypeError, lambda: ex.serialize_pte_binary(pte_file, **options),
                  "pte_file.program.constant_buffer[1].storage", "found int", "expected bytes")


def test_optional_fields_none_and_empty_lists(tmp_path):
    pte_file, options = pte_file_of("pte_all_kinds")
    plan = pte_file.program.execution_plan[0]
    plan.non_const_buffer_device = None
    for chain in plan.chains:
        chain.stacktrace = None
    plan.values.append(C.EValue(C.IntList([])))
    plan.values.append(C.EValue(C.BoolList(())))
    out = tmp_path / "o.pte"
    ex.serialize_pte_binary(pte_file, **options).save(out)
    etpack.verify(out)
    text = etpack._etpack._flatc_json(str(out))
    assert "non_const_buffer_device" not in text and "stacktrace" not in text


# install().

FAKE_PROGRAM = '''
def serialize_for_executorch(emitter_output, config, data_serializer, named_data_store=None):
    raise AssertionError("upstream's serializer was called")


class ExecutorchProgramManager:
    def __init__(self, emitter_output, config):
        self._pte, self._tensor_data = serialize_for_executorch(emitter_output, config, None)

    def write_to_file(self, f):
        self._pte.write_to_file(f)

    @property
    def buffer(self):
        return bytes(self._pte)
'''


def test_install_patches_an_importable_executorch(tmp_path, monkeypatch):
    pkg = tmp_path / "executorch" / "exir" / "program"
    pkg.mkdir(parents=True)
    for d in (tmp_path / "executorch", tmp_path / "executorch" / "exir", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "_program.py").write_text(FAKE_PROGRAM)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "executorch"]:
        monkeypatch.delitem(sys.modules, name)
    try:
        assert ex.install() is True
        from executorch.exir.program import _program
        assert _program.serialize_for_executorch is ex.serialize_for_executorch
        emitted, options = external_emitter_output()
        manager = _program.ExecutorchProgramManager(emitted, config_of(options))
        with open(tmp_path / "m.pte", "wb") as f:
            manager.write_to_file(f)
        assert (tmp_path / "m.pte").read_bytes() == manager.buffer
        assert list(manager._tensor_data) == ["model"]
        check_pte_golden(tmp_path / "m.pte", "pte_external")
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "executorch"]:
            del sys.modules[name]


def test_install_without_executorch(monkeypatch):
    monkeypatch.setitem(sys.modules, "executorch", None)  # import executorch fails
    assert ex.install() is False


def test_the_module_imports_neither_executorch_nor_torch():
    import subprocess
    code = ("import sys, etpack.exir; "
            "print(any(m.split('.')[0] in ('executorch', 'torch') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), check=True)
    assert out.stdout.strip() == "False"


def test_a_list_changed_while_it_is_walked(tmp_path, pte_all_kinds):
    # Reading an attribute runs Python code, which may change the list being
    # walked; the walk reads a snapshot of it, so nothing reads freed items.
    pte_file, options = pte_all_kinds
    plan = pte_file.program.execution_plan[0]
    first = plan.values[0]

    class Clearing(C.EValue):
        @property
        def val(self):
            plan.values.clear()
            return first.val

        @val.setter
        def val(self, v):
            pass

    plan.values[0] = Clearing(first.val)
    path = tmp_path / "m.pte"
    ex.serialize_pte_binary(pte_file, **options).save(str(path))
    assert plan.values == []  # the property ran, mid-walk
    check_pte_golden(path, "pte_all_kinds")  # every value as it was when the walk began


# The file an artifact reads, given back to write_to_file: refused like save().

def file_backed_payload(tmp_path):
    payload, _ = payload_of("ptd_basic")
    for i, b in enumerate(payload.buffers):
        (tmp_path / f"b{i}.bin").write_bytes(b)
    payload.buffers = [C.FileBackedData(tmp_path / f"b{i}.bin")
                       for i in range(len(payload.buffers))]
    return payload


@pytest.mark.parametrize("mode", ["r+b", "ab", "rb", "wb-raw"])
def test_write_to_file_refuses_a_file_the_artifact_reads(tmp_path, mode):
    a = ex.serialize_ptd(file_backed_payload(tmp_path))
    path = tmp_path / "b0.bin"
    os.link(path, tmp_path / "other-name.bin")  # another name, the same file
    before = path.read_bytes()
    with pytest.raises(etpack.InvalidArgumentError) as info:
        if mode == "wb-raw":
            with open(tmp_path / "other-name.bin", "r+b", buffering=0) as f:
                a.write_to_file(f)
        else:
            with open(tmp_path / "other-name.bin", mode) as f:
                a.write_to_file(f)
    assert f"{path}: is the same file as the output" in str(info.value)
    assert "refusing to overwrite an input" in str(info.value)
    assert path.read_bytes() == before
    with pytest.raises(etpack.InvalidArgumentError, match="same file"):
        a.save(path)
    # Another file is fine, and the artifact is whole.
    with open(tmp_path / "out.ptd", "wb") as f:
        a.write_to_file(f)
    check_ptd_golden(tmp_path / "out.ptd", "ptd_basic")


# File objects that misbehave: an error naming the call, never a hang.

class RawFile(io.RawIOBase):
    """A file object whose write() returns `result` (a function of the data)."""

    def __init__(self, result, tell=None):
        self.result, self._tell, self.taken = result, tell, 0

    name = "odd-file"

    def writable(self):
        return True

    def write(self, data):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 1000:  # a caller that would loop forever fails the test instead
            raise AssertionError("write() called again and again")
        n = self.result(data)
        if isinstance(n, int) and 0 < n <= len(data):
            self.taken += n
        return n

    def tell(self):
        return self._tell if self._tell is not None else self.taken


@pytest.mark.parametrize("result,exc,text", [
    (lambda d: 0, etpack.IoError, "returned 0 (the file took nothing)"),
    (lambda d: -5, etpack.IoError, "returned -5, expected a count from 1 to"),
    (lambda d: 10**30, etpack.IoError, f"returned {10**30}, expected a count from 1 to"),
    (lambda d: len(d) + 1, etpack.IoError, "expected a count from 1 to"),
    (lambda d: "3", TypeError, "returned a str, not the number of bytes written"),
    (lambda d: True, TypeError, "returned a bool"),
])
def test_write_to_file_whose_write_returns_nonsense(result, exc, text):
    pte_file, options = pte_file_of("pte_mutable")
    a = ex.serialize_pte_binary(pte_file, **options)
    with pytest.raises(exc) as info:
        a.write_to_file(RawFile(result))
    assert "odd-file: write() of " in str(info.value) and text in str(info.value)


def test_write_to_file_takes_short_writes():
    pte_file, options = pte_file_of("pte_mutable")
    a = ex.serialize_pte_binary(pte_file, **options)
    chunks = []

    def some(data):
        chunks.append(bytes(data[:7]))
        return min(7, len(data))
    a.write_to_file(RawFile(some))
    assert b"".join(chunks) == bytes(a)


class DescriptorFile:
    """A file object over a real descriptor whose tell() or fileno() lies."""

    def __init__(self, f, tell=None, fileno=None):
        self.f, self._tell, self._fileno, self.name = f, tell, fileno, "liar"

    def fileno(self):
        return self.f.fileno() if self._fileno is None else self._fileno

    def flush(self):
        self.f.flush()

    def seekable(self):
        return True

    def tell(self):
        return self.f.tell() if self._tell is None else self._tell

    def seek(self, n):
        return self.f.seek(n)

    def write(self, data):
        return self.f.write(data)


@pytest.mark.parametrize("tell,fileno,exc,text", [
    (-1, None, etpack.OutOfRangeError, "liar: tell() = -1 is outside"),
    ("0", None, TypeError, "liar: tell() must be an int, not str"),
    (None, 2**70, etpack.OutOfRangeError, "liar: fileno() = "),
    (None, 1.5, TypeError, "liar: fileno() must be an int, not float"),
])
def test_write_to_file_whose_tell_or_fileno_lies(tmp_path, tell, fileno, exc, text):
    pte_file, options = pte_file_of("pte_mutable")
    a = ex.serialize_pte_binary(pte_file, **options)
    with open(tmp_path / "out.bin", "wb") as f:
        with pytest.raises(exc) as info:
            a.write_to_file(DescriptorFile(f, tell=tell, fileno=fileno))
    assert text in str(info.value)
    assert (tmp_path / "out.bin").read_bytes() == b""


# Mappings whose items() are not pairs.

class OddMapping:
    def __init__(self, items):
        self._items = items

    def items(self):
        return self._items


@pytest.mark.parametrize("item,found", [
    (3, "a int"), (("k",), "a tuple of 1"), (("k", C.DataEntry(0, 1, None), "x"), "a tuple of 3"),
])
def test_mapping_items_that_are_not_pairs(item, found):
    payload, _ = payload_of("ptd_basic")
    payload.named_data = OddMapping([item])
    raises_naming(TypeError, lambda: ex.serialize_ptd(payload),
                  "data_payload.named_data: items() gave " + found,
                  "as item 0, expected a (key, value) pair")
    emitted, _ = external_emitter_output()
    emitted.external_constant_map = OddMapping([("model", OddMapping([item]))])
    raises_naming(TypeError, lambda: ex.serialize_for_executorch(emitted, None),
                  "emitter_output.external_constant_map['model']: items() gave " + found)


# _path: only an AttributeError means "no _path"; the wrong type is said.

class RaisingPath:
    def __init__(self, exc):
        self.exc = exc

    @property
    def _path(self):
        raise self.exc


class WrongPath:
    _path = 17


def test_path_lookup_raises_what_the_property_raises():
    payload, _ = payload_of("ptd_basic")
    payload.buffers[0] = RaisingPath(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        ex.serialize_ptd(payload)
    payload.buffers[0] = RaisingPath(RuntimeError("disk gone"))
    with pytest.raises(RuntimeError, match="disk gone"):
        ex.serialize_ptd(payload)
    payload.buffers[0] = RaisingPath(AttributeError("no"))
    raises_naming(TypeError, lambda: ex.serialize_ptd(payload),
                  "data_payload.buffers[0]: expected bytes or file-backed data")
    payload.buffers[0] = WrongPath()
    raises_naming(TypeError, lambda: ex.serialize_ptd(payload),
                  "data_payload.buffers[0]._path: expected a path", "found int")


def test_planner_errors_name_the_object_path(tmp_path):
    payload, _ = payload_of("ptd_basic")
    next(iter(payload.named_data.values())).alignment = 1 << 31  # above 1 GiB; any smaller positive one is taken
    raises_naming(etpack.InvalidArgumentError, lambda: ex.serialize_ptd(payload),
                  "data_payload.named_data['linear.weight']")
    payload, _ = payload_of("ptd_basic")
    entry = next(iter(payload.named_data.values()))
    entry.tensor_layout = C.TensorLayout(C.ScalarType(6), [1 << 20], [0])
    with pytest.raises(etpack.InvalidArgumentError) as info:
        ex.serialize_ptd(payload)
    assert "data_payload.named_data['linear.weight']" in str(info.value)
    assert "entries[" not in str(info.value)
    # The same for a .pte's named data and a tag's .ptd.
    pte_file, options = pte_file_of("pte_named_data")
    key = next(iter(pte_file.named_data.pte_data))
    pte_file.named_data.pte_data[key].alignment = 1 << 31
    raises_naming(etpack.InvalidArgumentError,
                  lambda: ex.serialize_pte_binary(pte_file, **options),
                  f"pte_file.named_data.pte_data['{key}']")
    emitted, options = external_emitter_output()
    store = C.NamedDataStoreOutput([b"abc"], {}, {"model": {"blob": C.DataEntry(0, 1 << 31, None)}})
    raises_naming(etpack.InvalidArgumentError,
                  lambda: ex.serialize_for_executorch(emitted, config_of(options), None, store),
                  "named_data_store.external_data['model']['blob']")


# Borrowed memory lives as long as the artifact: exporters that honour
# exports refuse to free it meanwhile; ctypes memory, which nothing pins, is
# copied when planned.

def test_ctypes_buffer_resized_after_planning(tmp_path):
    import subprocess
    script = f"""
import ctypes, sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
import etpack, etpack.exir as ex
import exir_classes as C
for n in (64 << 10, 8 << 20):
    buf = (ctypes.c_uint8 * n)()
    ctypes.memset(buf, 1, n)
    payload = C.DataPayload([buf], {{"w": C.DataEntry(0, 1, None)}})
    a = ex.serialize_ptd(payload)
    ctypes.resize(buf, 4 * n)
    ctypes.memset(ctypes.addressof(buf), 2, 4 * n)
    a.save({str(tmp_path)!r} + "/w.ptd")
    etpack.verify({str(tmp_path)!r} + "/w.ptd")
    print(n, bytes(etpack.load_ptd({str(tmp_path)!r} + "/w.ptd")["w"]) == b"\\x01" * n)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(64 << 10), "True", str(8 << 20), "True"], result.stdout


def test_exporters_refuse_to_free_what_an_artifact_borrows(tmp_path):
    import array
    import mmap
    m = mmap.mmap(-1, 4096)
    items = [bytearray(b"b" * 100), array.array("b", b"a" * 100), m, memoryview(bytearray(50))]
    payload = C.DataPayload(items, {f"k{i}": C.DataEntry(i, 1, None) for i in range(4)})
    a = ex.serialize_ptd(payload)
    with pytest.raises(BufferError):
        items[0].extend(b"more")
    with pytest.raises(BufferError):
        items[1].extend(b"more")
    with pytest.raises(BufferError):
        m.close()
    with pytest.raises(BufferError):
        items[3].release()
    a.save(tmp_path / "w.ptd")
    back = etpack.load_ptd(tmp_path / "w.ptd")
    assert bytes(back["k0"]) == b"b" * 100 and bytes(back["k1"]) == b"a" * 100
    del a, back
    items[0].extend(b"more")
    m.close()
    items[3].release()


def test_memory_given_twice_stays_exported_by_each_exporter(tmp_path):
    # An ndarray made over a bytearray keeps no export of it (only .base):
    # the bytearray's own export must be kept although its memory was
    # already borrowed through the array.
    np = pytest.importorskip("numpy")
    ba = bytearray(b"z" * 4096)
    arr = np.ndarray((4096,), np.uint8, buffer=ba)
    payload = C.DataPayload([arr, ba], {"a": C.DataEntry(0, 1, None),
                                        "b": C.DataEntry(1, 1, None)})
    a = ex.serialize_ptd(payload)
    del arr
    with pytest.raises(BufferError):
        ba.extend(b"more")
    a.save(tmp_path / "w.ptd")
    assert bytes(etpack.load_ptd(tmp_path / "w.ptd")["b"]) == b"z" * 4096
    del a
    ba.extend(b"more")


def test_write_to_file_lets_a_file_objects_own_exceptions_through():
    class Interrupted(io.BytesIO):
        @property
        def name(self):
            raise KeyboardInterrupt

    pte_file, options = pte_file_of("pte_mutable")
    a = ex.serialize_pte_binary(pte_file, **options)
    with pytest.raises(KeyboardInterrupt):
        a.write_to_file(Interrupted())
    payload, _ = payload_of("ptd_basic")

    class Store:
        @property
        def items(self):
            raise KeyboardInterrupt
    payload.named_data = Store()
    with pytest.raises(KeyboardInterrupt):
        ex.serialize_ptd(payload)
