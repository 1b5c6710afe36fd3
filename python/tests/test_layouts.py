"""A tensor layout's sizes and dim_order are range-checked once, by the
library (LayoutOfInts): etpack.save_ptd and etpack.exir say the same, with
the same error class."""

import numpy as np
import pytest

import etpack
import etpack.exir as ex
import exir_classes as C


def entry(sizes, dim_order):
    return etpack.Entry(b"\0" * 8, dtype="BYTE", sizes=sizes, dim_order=dim_order)


def payload(sizes, dim_order):
    layout = C.TensorLayout(C.ScalarType(0), sizes, dim_order)
    return C.DataPayload([b"\0" * 8], {"w": C.DataEntry(0, 1, layout)})


@pytest.mark.parametrize("sizes, dim_order, cls, says", [
    ([2, 2**31], [0, 1], etpack.OutOfRangeError,
     "sizes[1] = 2147483648 is not a size the format holds (0 to 2147483647)"),
    ([-1], [0], etpack.OutOfRangeError, "sizes[0] = -1 is not a size the format holds"),
    ([8], [256], etpack.InvalidArgumentError,
     "dim_order[0] = 256 is not a dimension index (0 to 255)"),
])
def test_both_front_ends_refuse_alike(tmp_path, sizes, dim_order, cls, says):
    with pytest.raises(cls, match=r"tensors\['w'\]: ") as saved:
        etpack.save_ptd(tmp_path / "w.ptd", {"w": entry(sizes, dim_order)})
    assert says in str(saved.value)
    with pytest.raises(cls, match=r"data_payload\.named_data\['w'\]\.tensor_layout: ") as exir:
        ex.serialize_ptd(payload(sizes, dim_order))
    assert says in str(exir.value)
    assert list(tmp_path.iterdir()) == []
