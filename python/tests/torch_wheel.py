"""An installed etpack wheel beside torch in one process, as in an exporter's
venv: scripts/test_exir.sh runs it with the python of the exir venv
(torch 2.13.0, executorch; scripts/setup.sh exir), the cp311 wheel
pip-installed into it. torch is imported first, so
its C++ runtime (the system's libstdc++) is loaded before the extension's
own, static and local one; then a state_dict is saved as a .ptd and in a
.pte, read back and compared, and an error crosses the extension as an
etpack exception. Exit status 0 and a last line "torch_wheel: ok" on success.

Usage: VENV/bin/python python/tests/torch_wheel.py
"""

import pathlib
import sys
import tempfile

import torch  # first, on purpose

import etpack  # noqa: E402


def main():
    module = pathlib.Path(etpack.__file__).resolve()
    assert pathlib.Path(sys.prefix).resolve() in module.parents, f"etpack from {module}"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32))
    weights = {k: v.detach() for k, v in model.to(torch.bfloat16).state_dict().items()}
    with tempfile.TemporaryDirectory(prefix="etpack-torch-") as tmp:
        ptd = pathlib.Path(tmp) / "w.ptd"
        etpack.save_ptd(ptd, weights)
        etpack.verify(ptd)
        back = etpack.load_ptd(ptd)
        for key, t in weights.items():
            bits = torch.from_numpy(back[key].view("int16").copy()).view(torch.bfloat16)
            assert torch.equal(bits.reshape(t.shape), t), key
        del back
        try:
            etpack.save_ptd(ptd, {"strided": torch.zeros(4, 4)[:, :2]})  # not dense
        except etpack.InvalidArgumentError as e:
            assert "strided" in str(e), e
        else:
            raise AssertionError("a strided tensor was accepted")
    print(f"torch_wheel: ok (torch {torch.__version__}, etpack from {module.parent})")


if __name__ == "__main__":
    main()
