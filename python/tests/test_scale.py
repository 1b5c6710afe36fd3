"""Scale limits are refused up front, naming the limit and the count, and
nothing is written (issue 22: a .ptd that etpack's own readers reject was
published)."""

import os

import numpy as np
import pytest

import etpack


def test_save_ptd_over_the_verifiers_table_limit_is_refused(tmp_path):
    # 500,000 keys, one shared 4-byte array: a root, one segment, and an
    # entry and a layout per key make 1,000,002 FlatBuffers tables, two more
    # than the verifier of etpack's readers (and of the runtime) accepts.
    w = np.zeros(1, np.float32)
    tensors = {f"k{i}": w for i in range(500000)}
    path = tmp_path / "many.ptd"
    with pytest.raises(etpack.OutOfRangeError,
                       match=r"500000 entries in 1 segments need 1000002 flatbuffer tables; "
                             r"the runtime's verifier accepts at most 1000000"):
        etpack.save_ptd(path, tensors)
    assert os.listdir(tmp_path) == []
