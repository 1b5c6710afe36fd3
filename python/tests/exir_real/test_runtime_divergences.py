"""Why etpack refuses the two flat_tensor fixtures of upstream's own tests
that upstream's serializer writes (scripts/upstream_tests/divergences.txt):
a program exported with its weight in a .ptd runs; the same .ptd written
again by upstream's FlatTensorSerializer with each fixture's defect makes
the runtime refuse the method (fqn3) or silently read 3 bytes past the data
(key0); etpack.exir.serialize_ptd refuses both, naming the entry."""

import etpack
import etpack.exir as ex
import pytest
import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir._serialize.data_serializer import DataEntry, DataPayload
from executorch.exir.schema import ScalarType
from executorch.exir.tensor_layout import TensorLayout
from executorch.extension.flat_tensor.serialize.serialize import (
    FlatTensorConfig,
    FlatTensorSerializer,
)
from executorch.runtime import Runtime


class AddWeight(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)

    def forward(self, x):
        return x + self.w


def _export(w, x, folder):
    """The program and its .ptd as the exporter writes them (the key is "w")."""
    program = to_edge(torch.export.export(AddWeight(w), (x,))).to_executorch(
        ExecutorchBackendConfig(external_constants=True))
    pte = folder / "m.pte"
    pte.write_bytes(program.buffer)
    program.write_tensor_data_to_file(str(folder))
    return pte, folder / (next(iter(program._tensor_data)) + ".ptd")


def _run(pte, ptd, x):
    method = Runtime.get().load_program(pte, data_path=ptd).load_method("forward")
    return method.execute([x])[0].flatten().tolist()


def _payload(layout, data):
    entry = DataEntry(buffer_index=0, alignment=16, tensor_layout=layout)
    return DataPayload(buffers=[data], named_data={"w": entry})


def test_fqn3_dim_order_shorter_than_rank(tmp_path):
    w, x = torch.arange(8, dtype=torch.float32).reshape(2, 2, 2), torch.ones(2, 2, 2)
    pte, ptd = _export(w, x, tmp_path)
    assert _run(pte, ptd, x) == (w + x).flatten().tolist()
    payload = _payload(TensorLayout(ScalarType.FLOAT, [2, 2, 2], [0, 1]), w.numpy().tobytes())
    ptd.write_bytes(bytes(FlatTensorSerializer(FlatTensorConfig()).serialize(payload)))
    with pytest.raises(RuntimeError, match="Failed to load method forward"):
        _run(pte, ptd, x)
    with pytest.raises(etpack.InvalidArgumentError,
                       match=r"named_data\['w'\]: dim_order has 2 entries for 3 dimensions"):
        ex.serialize_ptd(payload)


def test_key0_buffer_smaller_than_its_layout(tmp_path):
    w, x = torch.tensor([[1.0, 2.0]]), torch.zeros(1, 2)
    pte, ptd = _export(w, x, tmp_path)
    assert _run(pte, ptd, x) == [1.0, 2.0]
    payload = _payload(TensorLayout(ScalarType.FLOAT, [1, 2], [0, 1]), w.numpy().tobytes()[:5])
    ptd.write_bytes(bytes(FlatTensorSerializer(FlatTensorConfig()).serialize(payload)))
    # The second float is one byte of the data and three of padding.
    assert _run(pte, ptd, x) == [1.0, 0.0]
    with pytest.raises(etpack.InvalidArgumentError, match=r"needs 8 bytes but its buffer .* holds 5"):
        ex.serialize_ptd(payload)
