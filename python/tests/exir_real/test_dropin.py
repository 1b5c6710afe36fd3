"""Issue 36, "What must hold for every model": each export written by
upstream's serializer and by etpack (etpack.exir.install()) decodes the same,
runs the same, and etpack's own tools agree on both."""

import json

import etpack
import pytest

import realcheck as rc
import realmodels


def _pairs(case):
    """(label, upstream path, etpack path) of every file of the case."""
    yield f"{case.name}/{case.upstream.pte.name}", case.upstream.pte, case.etpack.pte
    assert [p.name for p in case.upstream.ptds] == [p.name for p in case.etpack.ptds]
    for u, e in zip(case.upstream.ptds, case.etpack.ptds):
        yield f"{case.name}/{u.name}", u, e


def _explain_pte(up, ours):
    from executorch.exir._serialize._program import _get_extended_header
    pu, su = rc.pte_segments(up)
    po, so = rc.pte_segments(ours)
    why = rc.diffs(pu, po, "program")
    hu, ho = _get_extended_header(up), _get_extended_header(ours)
    if hu and ho:
        why.append(f"flatbuffer {hu.program_size} vs {ho.program_size} bytes, "
                   + ("decoding equal" if not why else "decoding different"))
        tail_u, tail_o = up[hu.segment_base_offset:], ours[ho.segment_base_offset:]
        why.append("segment data from segment_base_offset on: "
                   + ("identical" if tail_u == tail_o else
                      f"differs at +{rc.first_difference(tail_u, tail_o)}"))
    why += [f"segment {i}: {len(a)} vs {len(b)} bytes" for i, (a, b) in
            enumerate(zip(su, so)) if a != b]
    return why


def _explain_ptd(up, ours):
    why = rc.diffs(rc.decode_ptd_raw(up), rc.decode_ptd_raw(ours), "flat_tensor")
    return why or ["the flatbuffers decode equal: the difference is in its encoding"]


def test_decodes_the_same(case):
    """Drop-in: upstream's deserializers read etpack's files as the same
    program, data and segment bytes as upstream's own."""
    for label, u, e in _pairs(case):
        up, ours = rc.read(u), rc.read(e)
        if u.suffix == ".pte":
            # deserialize_pte_binary puts segments back into the program
            # (delegates, constants with their padding, mutable data, named data).
            assert rc.diffs(rc.decode_pte(up), rc.decode_pte(ours), "pte") == [], label
            (_, su), (_, so) = rc.pte_segments(up), rc.pte_segments(ours)
            assert [bytes(s) for s in su] == [bytes(s) for s in so], label
            rc.record_bytes(label, up, ours, lambda: _explain_pte(up, ours))
        else:
            du, do = rc.decode_ptd(up), rc.decode_ptd(ours)
            assert rc.diffs(du, do, "ptd") == [], label
            rc.record_bytes(label, up, ours, lambda: _explain_ptd(up, ours))


def _outputs(files, calls):
    return rc.run_calls(rc.load(files.pte, files.data_path), calls)


def test_runs_the_same(case):
    """Every method's outputs on fixed inputs, bit for bit."""
    expected = _outputs(case.upstream, case.calls)
    assert rc.same_bits(_outputs(case.etpack, case.calls), expected)


def test_greedy_decoding_the_same(llama_case):
    """A fixed prompt, 16 greedy tokens: identical token by token."""
    def tokens(files):
        return rc.greedy(rc.load(files.pte, files.data_path), rc.PROMPT, 16)
    expected = tokens(llama_case.upstream)
    assert len(expected) == 16
    assert tokens(llama_case.etpack) == expected


def test_verify_accepts_both(case):
    """etpack verify (CLI and Python) accepts upstream's files and etpack's,
    and every EXTERNAL tensor resolves in the .ptd."""
    for files in (case.upstream, case.etpack):
        rc.cli("verify", files.pte, *files.ptds)
        report = rc.cli_json("verify", "--json", files.pte, *files.ptds)
        assert report["ok"]
        if files.ptds:
            assert report["external_tensors"] > 0 and report["external_resolved"]
        etpack.verify([files.pte, *files.ptds])
        for ptd in files.ptds:
            rc.cli("verify", ptd)


def test_inspect_sizes_sum_to_the_file(case):
    for files in (case.upstream, case.etpack):
        for path in (files.pte, *files.ptds):
            report = rc.cli_json("inspect", "--sizes", "--all", "--json", path)
            assert report["file_size"] == path.stat().st_size
            assert sum(r["size"] for r in report["rows"]) == report["file_size"], path
            # Rows tile the file: each starts where the one before ended.
            ends = [r["offset"] + r["size"] for r in report["rows"]]
            assert [r["offset"] for r in report["rows"]][1:] == ends[:-1], path


def test_repack_runs_the_same(case, tmp_path):
    """etpack repack of each etpack file (and of upstream's) runs as upstream's
    does: laid out again as it is, and moved the other way (constants out to
    a .ptd, or a .ptd's data back in)."""
    expected = _outputs(case.upstream, case.calls)
    for side, files in (("upstream", case.upstream), ("etpack", case.etpack)):
        out = tmp_path / side
        out.mkdir()
        rc.cli("repack", files.pte, "-o", out / "same.pte")
        assert rc.same_bits(_outputs(realmodels.Files(out / "same.pte", files.ptds), case.calls),
                            expected), side
        if files.ptds:
            rc.cli("repack", files.pte, "-o", out / "inside.pte",
                   *[a for p in files.ptds for a in ("--data", p)])
            moved = realmodels.Files(out / "inside.pte", [])
        else:
            rc.cli("repack", files.pte, "-o", out / "outside.pte",
                   "--external-constants", out / "outside.ptd")
            moved = realmodels.Files(out / "outside.pte", [out / "outside.ptd"])
        rc.cli("verify", moved.pte, *moved.ptds)
        assert rc.same_bits(_outputs(moved, case.calls), expected), side


def _cases_json(case, expected, directory):
    """CASES.json (docs/bundle-cases.md) of the case's calls with upstream's
    outputs; tensors as .npy files. Only the first call of each method: a
    bundled test case runs on a freshly loaded method."""
    import numpy as np
    methods = {}

    def value(v, name):
        if isinstance(v, bool):
            return {"bool": v}
        if isinstance(v, int):
            return {"int": v}
        if isinstance(v, float):
            return {"double": v}
        path = directory / f"{name}.npy"
        np.save(path, v.numpy())
        return {"tensor": {"npy": str(path)}}

    for method, calls in case.calls.items():
        methods[method] = [{
            "inputs": [value(v, f"{method}_in{i}") for i, v in enumerate(calls[0])],
            "expected_outputs": [value(v, f"{method}_out{i}")
                                 for i, v in enumerate(expected[method][0])]}]
    path = directory / "cases.json"
    path.write_text(json.dumps({"methods": methods}))
    return path


def run_bundled(bpte, ptd, methods):
    """{method: outputs of its test case 0}, run by the runtime's bundled-
    program loader, which also checks them against the bundled expectation.
    executorch 1.5's BundledModule takes no data file: with a .ptd, the
    bundled program is loaded with it and run on the same inputs instead."""
    from executorch.extension.pybindings import portable_lib as rt
    bundle = rt._load_bundled_program_from_buffer(rc.read(bpte))
    if ptd is None:
        return {m: [[rc.clone(v) for v in bundle.verify_result_with_bundled_expected_output(
            m, 0, rtol=0.0, atol=0.0)]] for m in methods}
    # Named: the module points into these bytes without keeping them alive.
    data = rc.read(ptd)
    module = rt._load_for_executorch_from_bundled_program(bundle, data_map_buffer=data)
    out = {m: [[rc.clone(v) for v in module.run_method(m, list(inputs[0]))]]
           for m, inputs in methods.items()}
    del module
    return out


def test_bundle_runs_the_same(case, tmp_path):
    """etpack bundle of the etpack-written file: the bundled program's test
    cases run in the runtime with the outputs of upstream's file. (The
    standard layout: the segmented one is etpack's extension, which
    upstream's loader does not read.)"""
    first = {m: calls[:1] for m, calls in case.calls.items()}
    expected = _outputs(case.upstream, first)
    cases = _cases_json(case, expected, tmp_path)
    bpte = tmp_path / "out.bpte"
    rc.cli("bundle", case.etpack.pte, "--cases", cases, "-o", bpte)
    rc.cli("verify", bpte)
    assert rc.same_bits(run_bundled(bpte, case.etpack.data_path, first), expected)
