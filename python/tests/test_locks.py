"""Waiting for another writer: Ctrl-C stops the wait and publishes nothing;
concurrent updates of one file both land; two paths to one folder (a bind
mount) are one folder."""

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import etpack


class Held:
    """An exclusive flock on `path` (a folder or a file) through an open of
    this test's own, as another writer would hold it, freed after
    `seconds` at the latest so a wait that ignores Ctrl-C fails the test
    instead of hanging it."""

    def __init__(self, path, seconds=5.0):
        self.fd = os.open(path, os.O_RDONLY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.freed_by_timer = False
        self.timer = threading.Timer(seconds, self._free_by_timer)
        self.timer.start()

    def _free_by_timer(self):
        self.freed_by_timer = True
        os.close(self.fd)

    def release(self):
        self.timer.cancel()
        self.timer.join()
        if not self.freed_by_timer:
            os.close(self.fd)


def ctrl_c_soon(delay=0.05):
    """SIGINT to the main thread shortly, as a terminal's Ctrl-C."""
    main = threading.main_thread().ident
    threading.Timer(delay, lambda: signal.pthread_kill(main, signal.SIGINT)).start()


def test_ctrl_c_while_waiting_for_the_folder_lock_publishes_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    held = Held(out)

    def progress(done, total):
        if done == total:  # the last report: publishing (and its lock wait) is next
            ctrl_c_soon()

    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            etpack.save_ptd(out / "x.ptd", {"x": np.zeros(100)}, progress=progress)
        elapsed = time.monotonic() - start
    finally:
        held.release()
    assert not held.freed_by_timer, "the save waited for the lock instead of stopping"
    assert elapsed < 4
    assert os.listdir(out) == []


def test_ctrl_c_while_an_update_waits_for_another_update(tmp_path):
    path = tmp_path / "m.ptd"
    etpack.save_ptd(path, {"a": np.zeros(4, dtype=np.float32)})
    before = path.read_bytes()
    held = Held(path)  # another update of the file holds it
    try:
        ctrl_c_soon()
        with pytest.raises(KeyboardInterrupt):
            etpack.update(path, {"a": np.ones(4, dtype=np.float32)})
            time.sleep(2)  # an update that did not wait is interrupted here instead
    finally:
        held.release()
    assert not held.freed_by_timer
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.ptd"]


def test_two_updates_at_once_both_land(tmp_path):
    path = tmp_path / "m.ptd"
    etpack.save_ptd(path, {"a": np.zeros(4, dtype=np.float32),
                           "b": np.ones(4, dtype=np.float32)})
    held = Held(path)  # both wait for it, then run one after the other
    results = {}

    def update(key):
        results[key] = etpack.update(path, {key: np.full(4, 3.0, dtype=np.float32)})

    threads = [threading.Thread(target=update, args=(k,)) for k in "ab"]
    for t in threads:
        t.start()
    time.sleep(0.1)  # not needed for the result: either order lands both
    held.release()
    for t in threads:
        t.join()
    assert all(r["tensors_rewritten"] == 1 for r in results.values())
    back = etpack.load_ptd(path)
    np.testing.assert_array_equal(back["a"], np.full(4, 3.0, dtype=np.float32))
    np.testing.assert_array_equal(back["b"], np.full(4, 3.0, dtype=np.float32))


@pytest.fixture
def bind_mount(tmp_path):
    src, bind = tmp_path / "src", tmp_path / "bind"
    src.mkdir()
    bind.mkdir()
    r = subprocess.run(["mount", "--bind", str(src), str(bind)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"mount --bind needs root or CAP_SYS_ADMIN: {r.stderr.strip()}")
    yield src, bind
    subprocess.run(["umount", "-l", str(bind)], check=True)


CHILD = """
import sys
import etpack
import etpack.exir as ex
from test_exir import config_of, external_emitter_output
src, bind = sys.argv[1:3]
emitted, options = external_emitter_output()
ex.save(src + "/m.pte", emitted, config=config_of(options), ptd_dir=bind)
try:
    ex.save(src + "/model.ptd", emitted, config=config_of(options), ptd_dir=bind)
except etpack.InvalidArgumentError as e:
    print(e)
"""


def test_save_with_ptd_dir_through_a_bind_mount(bind_mount):
    src, bind = bind_mount
    # In a child with a timeout: a save waiting for its own lock (as it did)
    # would hang this process.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__)] + sys.path)
    r = subprocess.run([sys.executable, "-c", CHILD, str(src), str(bind)], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(src)) == ["m.pte", "model.ptd"]
    etpack.verify(src / "m.pte", [src / "model.ptd"])
    # One name reached both ways: the same file, refused, nothing changed.
    assert "are the same file" in r.stdout
