"""etpack.update: new weights into a .ptd or .pte in place."""

import os
import subprocess

import numpy as np
import pytest

import etpack


def _state():
    return {"a": np.arange(16, dtype=np.float32).reshape(4, 4),
            "b": np.ones(8, dtype=np.float16),
            "c": np.arange(5, dtype=np.int64)}


def test_update_rewrites_matching_tensors_and_skips_equal_bytes(tmp_path):
    path = str(tmp_path / "m.ptd")
    etpack.save_ptd(path, _state())
    new_a = np.full((4, 4), 7.0, dtype=np.float32)
    r = etpack.update(path, {"a": new_a, "b": np.ones(8, dtype=np.float16)})
    assert r["written"] and r["tensors_rewritten"] == 1 and r["bytes_rewritten"] == 64
    assert r["tensors_unchanged"] == 1 and r["bytes_unchanged"] == 16
    back = etpack.load_ptd(path)
    np.testing.assert_array_equal(back["a"], new_a)
    np.testing.assert_array_equal(back["c"], _state()["c"])
    # Same as writing the new state afresh.
    fresh = str(tmp_path / "fresh.ptd")
    etpack.save_ptd(fresh, dict(_state(), a=new_a))
    assert open(path, "rb").read() == open(fresh, "rb").read()

    again = etpack.update(path, {"a": new_a})
    assert not again["written"] and again["tensors_unchanged"] == 1


def test_update_reports_progress_and_a_raising_progress_changes_nothing(tmp_path):
    path = str(tmp_path / "m.ptd")
    etpack.save_ptd(path, _state())
    before = open(path, "rb").read()
    new_a = np.full((4, 4), 3.0, dtype=np.float32)

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        etpack.update(path, {"a": new_a}, progress=interrupt)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["m.ptd"]

    seen = []
    r = etpack.update(path, {"a": new_a}, progress=lambda done, total: seen.append((done, total)))
    assert r["written"] and seen and seen[-1][0] == seen[-1][1]
    np.testing.assert_array_equal(etpack.load_ptd(path)["a"], new_a)


@pytest.mark.parametrize("value, words", [
    (np.zeros((4, 4), dtype=np.float16), ["'a'", "HALF[4, 4]", "FLOAT[4, 4]"]),
    (np.zeros((2, 8), dtype=np.float32), ["'a'", "FLOAT[2, 8]", "FLOAT[4, 4]"]),
])
def test_update_refuses_another_layout_before_changing_a_byte(tmp_path, value, words):
    path = str(tmp_path / "m.ptd")
    etpack.save_ptd(path, _state())
    before = open(path, "rb").read()
    with pytest.raises(etpack.InvalidArgumentError) as e:
        etpack.update(path, {"c": np.zeros(5, dtype=np.int64), "a": value})
    for w in words:
        assert w in str(e.value)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["m.ptd"]


def test_update_refuses_an_unknown_key(tmp_path):
    path = str(tmp_path / "m.ptd")
    etpack.save_ptd(path, _state())
    with pytest.raises(etpack.NotFoundError, match="'nope'"):
        etpack.update(path, {"nope": np.zeros(2, dtype=np.float32)})


def test_update_from_a_ptd_file(tmp_path):
    path = str(tmp_path / "m.ptd")
    etpack.save_ptd(path, _state())
    # The same keys and layouts from another .ptd, one tensor changed.
    other = str(tmp_path / "other.ptd")
    etpack.save_ptd(other, dict(_state(), c=np.arange(5, 10, dtype=np.int64)))
    r = etpack.update(path, other)
    assert r["tensors_rewritten"] == 1 and r["tensors_unchanged"] == 2
    np.testing.assert_array_equal(etpack.load_ptd(path)["c"], np.arange(5, 10))
    etpack.verify(path)


def test_update_pte_constants_by_their_repack_keys(tmp_path, golden):
    path = str(tmp_path / "m.pte")
    with open(golden / "pte_constants.pte", "rb") as f, open(path, "wb") as g:
        g.write(f.read())
    new = np.array([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]], dtype=np.float32)
    assert new.tobytes() not in open(path, "rb").read()
    r = etpack.update(path, {"constant.forward.1": new})
    assert r["tensors_rewritten"] == 1 and r["bytes_rewritten"] == 24
    assert new.tobytes() in open(path, "rb").read()
    etpack.verify(path)
    with pytest.raises(etpack.InvalidArgumentError, match="FLOAT\\[2, 3\\]"):
        etpack.update(path, {"constant.forward.1": new.reshape(3, 2)})
    with pytest.raises(etpack.NotFoundError, match="'w'"):
        etpack.update(path, {"w": np.zeros(1, dtype=np.float32)})


def test_update_reports_what_etpack_update_json_reports(tmp_path):
    """One rendering (UpdateReportJson): the dict has the CLI's members but its timing."""
    import json
    cli = os.environ.get("ETPACK_CLI")
    if not cli:
        pytest.skip("ETPACK_CLI is not set")
    path = str(tmp_path / "m.ptd")
    etpack.save_ptd(path, _state())
    new = str(tmp_path / "new.ptd")
    etpack.save_ptd(new, {"a": np.full((4, 4), 7.0, dtype=np.float32)})
    r = etpack.update(path, {"a": np.full((4, 4), 5.0, dtype=np.float32)})
    out = subprocess.run([cli, "update", path, "--from", new, "--json"], check=True,
                         capture_output=True, text=True).stdout
    c = json.loads(out)
    assert set(c) - set(r) == {"seconds"} and set(r) <= set(c)
    assert r["path"] == c["path"] == path
    assert r["written"] and c["written"] and r["file_size"] == c["file_size"]
    assert r["bytes_shared"] == (r["file_size"] - r["bytes_written"] if r["cloned"] else 0)
