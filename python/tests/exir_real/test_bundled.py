"""Issue 36, model 4: a bundled program made with upstream's bundled-program
API (MethodTestCase, MethodTestSuite, BundledProgram,
serialize_from_bundled_program_to_flatbuffer), from the export written by
upstream's serializer and by etpack; and etpack's own .bpte writer
(etpack.save_bpte) given the same program and test cases."""

import etpack
import pytest

import realcheck as rc
import realmodels


@pytest.fixture(scope="session")
def bundled(root):
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.core import BundledProgram
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer)
    edge, calls = realmodels.export_two_methods()
    upstream, ours = realmodels.to_executorch_both(edge)
    # Expected outputs as upstream's file computes them, so that bit-exact
    # verification (rtol = atol = 0) is meaningful.
    expected = rc.run_calls(rc.runtime().load_program(upstream.buffer), calls)
    suites = [MethodTestSuite(method_name=m, test_cases=[
        MethodTestCase(inputs=list(c), expected_outputs=list(expected[m][i]))
        for i, c in enumerate(seq)]) for m, seq in calls.items()]
    d = root / "bundled"
    d.mkdir()
    files = {}
    for side, et in (("upstream", upstream), ("etpack", ours)):
        files[side] = d / f"{side}.bpte"
        files[side].write_bytes(
            serialize_from_bundled_program_to_flatbuffer(BundledProgram(et, suites)))
    # etpack's writer: the etpack-written .pte plus the same cases.
    pte = d / "etpack.pte"
    pte.write_bytes(ours.buffer)
    files["etpack.save_bpte"] = d / "etpack-native.bpte"
    # Upstream's BundledProgram sorts the suites by method name; etpack keeps
    # the order it is given, so it is given that order.
    etpack.save_bpte(files["etpack.save_bpte"], str(pte), {
        m: [{"inputs": list(c), "expected_outputs": list(expected[m][i])}
            for i, c in enumerate(calls[m])] for m in sorted(calls)})
    return files, calls, expected


def _decoded(path):
    """The bundled program with its embedded .pte decoded by upstream too."""
    bp = rc.decode_bpte(rc.read(path))
    program = rc.decode_pte(bytes(bp.program))
    bp.program = b""
    return bp, program


@pytest.mark.parametrize("side", ["etpack", "etpack.save_bpte"])
def test_bundled_decodes_the_same(bundled, side):
    files, _, _ = bundled
    up, ours = rc.read(files["upstream"]), rc.read(files[side])
    (bu, pu), (bo, po) = _decoded(files["upstream"]), _decoded(files[side])
    assert rc.diffs(bu, bo, "bundled") == []
    assert rc.diffs(pu, po, "bundled.program") == []

    def explain():
        why = rc.diffs(rc.decode_bpte(up), rc.decode_bpte(ours), "bundled")
        return why or ["the flatbuffers decode equal: the difference is in its encoding"]
    rc.record_bytes(f"bundled/{files[side].name} ({side})", up, ours, explain)


@pytest.mark.parametrize("side", ["upstream", "etpack", "etpack.save_bpte"])
def test_bundled_runs_and_verifies(bundled, side):
    """The runtime's bundled loader runs every test case and checks it
    against its expected outputs, bit for bit."""
    from executorch.extension.pybindings import portable_lib as rt
    files, calls, expected = bundled
    bundle = rt._load_bundled_program_from_buffer(rc.read(files[side]))
    for m, seq in calls.items():
        for i in range(len(seq)):
            got = bundle.verify_result_with_bundled_expected_output(m, i, rtol=0.0, atol=0.0)
            assert rc.same_bits([rc.clone(v) for v in got], expected[m][i]), (m, i)


@pytest.mark.parametrize("side", ["upstream", "etpack", "etpack.save_bpte"])
def test_bundled_tools_agree(bundled, side, tmp_path):
    """etpack verify accepts it, inspect --sizes tiles it, and the program
    etpack unbundle takes out of it runs as upstream's program."""
    files, calls, expected = bundled
    path = files[side]
    rc.cli("verify", path)
    etpack.verify(path)
    report = rc.cli_json("inspect", "--sizes", "--all", "--json", path)
    assert sum(r["size"] for r in report["rows"]) == path.stat().st_size
    out = tmp_path / "program.pte"
    rc.cli("unbundle", path, "-o", out)
    assert rc.same_bits(rc.run_calls(rc.load(out), calls), expected)
