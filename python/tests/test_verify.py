"""etpack.verify and `etpack verify` give the same verdict on the same files:
both are the library's Verify (etpack/verify.h)."""

import os
import shutil
import subprocess

import pytest

import etpack
from conftest import GOLDEN

CLI = os.environ.get("ETPACK_CLI")


def cli(*args):
    if not CLI:
        pytest.skip("ETPACK_CLI (the etpack tool) is not set")
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)


def python_verdict(paths, data=()):
    """None when etpack.verify accepts, else (exception class, message)."""
    try:
        etpack.verify(paths, data)
        return None
    except etpack.Error as e:
        return type(e), str(e)


def listed(paths):
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def cli_verdict(paths, data=()):
    """None when `etpack verify` accepts, else its stderr."""
    args = listed(paths)
    for d in data:
        args += ["--data", d]
    run = cli("verify", *args)
    assert run.returncode in (0, 1), run.stderr
    return None if run.returncode == 0 else run.stderr


def same_verdict(paths, data=()):
    """Both accept, or both refuse and the CLI prints the message Python
    raises (as "FILE: invalid: why", the file named once)."""
    mine, theirs = python_verdict(paths, data), cli_verdict(paths, data)
    assert (mine is None) == (theirs is None), (mine, theirs)
    if mine is None:
        return None
    why = mine[1]
    for p in map(str, listed(paths) + list(data)):
        if why.startswith(p + ": "):
            why = why[len(p) + 2:]
    assert why in theirs, (mine, theirs)
    return mine


@pytest.fixture
def table_pte(tmp_path):
    """A .pte with an integrity table, and a copy with one byte flipped in a
    segment it covers."""
    good = tmp_path / "t.pte"
    run = cli("repack", GOLDEN / "pte_all_kinds.pte", "-o", good, "--integrity")
    assert run.returncode == 0, run.stderr
    segments = etpack.inspect(good)["segments"]
    covered = next(s for s in segments if s["size"] > 0)
    data = bytearray(good.read_bytes())
    data[covered["absolute_offset"]] ^= 0x80
    bad = tmp_path / "bad.pte"
    bad.write_bytes(bytes(data))
    return good, bad


def test_a_flipped_byte_under_an_integrity_table(table_pte):
    good, bad = table_pte
    assert same_verdict(good) is None
    cls, message = same_verdict(bad)
    assert cls is etpack.CorruptError
    assert "the integrity table records" in message, message


def test_a_key_in_two_ptd_files_of_a_set(tmp_path):
    a, b = tmp_path / "a.ptd", tmp_path / "b.ptd"
    shutil.copy(GOLDEN / "ptd_basic.ptd", a)
    shutil.copy(GOLDEN / "ptd_basic.ptd", b)
    assert same_verdict(a) is None
    cls, message = same_verdict([a, b])
    assert cls is etpack.InvalidArgumentError
    assert f"is in both {a} and {b}" in message, message
    # The same two files as a program's data.
    pte = GOLDEN / "pte_external.pte"
    assert same_verdict(pte, [a]) is None
    cls, message = same_verdict([pte, a, b])
    assert f"is in both {a} and {b}" in message, message
    assert same_verdict(pte, [a, b]) == (cls, message)


def test_a_bad_fat_delegate(tmp_path):
    data = bytearray((GOLDEN / "pte_fat.pte").read_bytes())
    container = int.from_bytes(data[24:32], "little")  # eh00 segment_base_offset
    assert data[container:container + 4] == b"NFAT"
    data[container + 4] = 2
    bad = tmp_path / "fat.pte"
    bad.write_bytes(bytes(data))
    assert same_verdict(GOLDEN / "pte_fat.pte") is None
    cls, message = same_verdict(bad)
    assert cls is etpack.CorruptError
    assert "delegate 0 (forward[0] NativeBackend)" in message and "version = 2" in message


def test_unresolved_data_and_wrong_kinds(tmp_path):
    pte = GOLDEN / "pte_external.pte"
    cls, _ = same_verdict(pte, [GOLDEN / "ptd_shared_blob.ptd"])
    assert cls is etpack.NotFoundError
    cls, message = same_verdict(pte, [GOLDEN / "pte_constants.pte"])
    assert cls is etpack.InvalidArgumentError and "must be a .ptd" in message
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"\0" * 100)
    assert same_verdict(junk)[0] is etpack.CorruptError
    assert same_verdict(GOLDEN / "bpte_basic.bpte") is None


def test_the_report_as_json(tmp_path, table_pte):
    import json
    good, bad = table_pte
    run = cli("verify", "--json", good)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["ok"] is True and "failed" not in report
    (f,) = report["files"]
    assert f["file"] == str(good) and f["kind"] == "pte" and f["integrity_table"] is True
    assert f["file_size"] == good.stat().st_size
    run = cli("verify", "--json", bad)
    assert run.returncode == 1
    report = json.loads(run.stdout)
    assert report["ok"] is False and report["failed"] == str(bad)
    assert report["error"]["code"] == "corrupt"
    assert report["error"]["message"] == python_verdict(bad)[1]
    a, b = tmp_path / "a.ptd", tmp_path / "b.ptd"
    shutil.copy(GOLDEN / "ptd_basic.ptd", a)
    shutil.copy(GOLDEN / "ptd_basic.ptd", b)
    report = json.loads(cli("verify", "--json", a, b).stdout)
    assert report["data_set"] is True and len(report["files"]) == 2
    assert report["failed"] == f"{a}, {b}"
    assert report["error"]["message"] == python_verdict([a, b])[1]
