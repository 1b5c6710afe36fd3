"""What the module accepts as an input file: only regular files, refused at
once otherwise (a FIFO must not hang the interpreter), and never the file
being written (cp's "are the same file")."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import etpack
from conftest import GOLDEN


def run_isolated(script):
    """Runs `script` in a fresh interpreter with a timeout, so that a call
    that blocks fails the test instead of hanging the suite."""
    try:
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                                capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("blocked for 30 s:\n" + script)
    return result


@pytest.mark.parametrize("call", [
    "etpack.load_ptd(fifo)",
    "etpack.verify(fifo)",
    "etpack.inspect(fifo)",
    "etpack.verify(GOLDEN + '/pte_external.pte', data=[fifo])",
    "etpack.save_ptd(out, {'x': (fifo, 0, 4)})",
    "etpack.save_pte(out, {}, constants=[b'', fifo])",
    "etpack.save_bpte(out, GOLDEN + '/pte_constants.pte', fifo)",
])
def test_a_fifo_is_refused_at_once(tmp_path, call):
    fifo = tmp_path / "f.ptd"
    os.mkfifo(fifo)
    out = tmp_path / "out.bin"
    result = run_isolated(f"""
        import etpack
        fifo, out, GOLDEN = {str(fifo)!r}, {str(out)!r}, {str(GOLDEN)!r}
        try:
            {call}
        except etpack.InvalidArgumentError as e:
            print(e)
    """)
    assert f"{fifo}: is a FIFO, not a regular file" in result.stdout, result.stderr
    assert not out.exists()


PROC = "/proc/self/status"


@pytest.mark.skipif(not os.path.exists(PROC) or os.stat(PROC).st_size != 0,
                    reason=f"no {PROC} of size 0 here")
@pytest.mark.parametrize("call", [
    lambda out: etpack.load_ptd(PROC),
    lambda out: etpack.verify(PROC),
    lambda out: etpack.save_ptd(out, {"x": PROC}),
    lambda out: etpack.save_ptd(out, {"x": (PROC, 0, 0)}),
    lambda out: etpack.save_pte(out, {}, constants=[b"", PROC]),
])
def test_a_file_of_size_0_with_content_is_refused(tmp_path, call):
    # /proc files say 0 bytes and read as text: never stored as empty.
    out = tmp_path / "out.bin"
    with pytest.raises(etpack.InvalidArgumentError,
                       match=f"{PROC}: its size is given as 0 bytes but it has content"):
        call(out)
    assert not out.exists()


def test_no_save_writes_over_one_of_its_inputs(tmp_path):
    raw = tmp_path / "raw.bin"
    raw.write_bytes(b"r" * 64)
    (tmp_path / "link.bin").symlink_to("raw.bin")
    os.link(raw, tmp_path / "hard.bin")
    pte = tmp_path / "c.pte"
    pte.write_bytes((GOLDEN / "pte_constants.pte").read_bytes())
    cases = tmp_path / "cases.json"
    cases.write_text('{"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "FLOAT", '
                     '"sizes": [2, 3], "base64": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}}, '
                     '{"double": 0.5}, {"bool": true}, {"int": 3}]}]}}')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.is_symlink()}

    def refused(input_path, output_path, save):
        with pytest.raises(etpack.InvalidArgumentError) as e:
            save()
        assert (f"{input_path}: is the same file as the output {output_path}; "
                "refusing to overwrite an input") in str(e.value)

    program = {"version": 0, "execution_plan": [{
        "name": "forward",
        "values": [{"val_type": "Tensor", "val": {
            "scalar_type": 0, "sizes": [8], "dim_order": [0], "data_buffer_idx": 1}}],
        "inputs": [], "outputs": [0],
        "chains": [{"inputs": [], "outputs": [], "instructions": []}], "operators": [],
        "delegates": [], "non_const_buffer_sizes": [0]}]}
    for dest in ("raw.bin", "link.bin", "hard.bin"):
        d = tmp_path / dest
        refused(raw, d, lambda: etpack.save_ptd(d, {"w": (raw, 0, 64)}))
        refused(raw, d, lambda: etpack.save_ptd(d, {"a": np.zeros(4), "w": raw}))
        refused(raw, d, lambda: etpack.save_pte(d, program, constants=[b"", (raw, 0, 8)]))
    refused(pte, pte, lambda: etpack.save_bpte(pte, pte, cases))
    refused(cases, cases, lambda: etpack.save_bpte(cases, pte, cases))
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.is_symlink()}
    assert after == before
