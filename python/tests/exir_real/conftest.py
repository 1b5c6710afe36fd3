"""The real exporter's tests: run by scripts/test_exir.sh in the venv that
scripts/setup.sh exir makes (torch 2.13.0, executorch 1.5).

Each model is exported and lowered once per session (a session-scoped
fixture), then serialized by upstream's serializer and by etpack; the tests
compare the two sets of files."""

import time

import pytest
import torch

import realcheck
import realmodels

# The KV cache and the mutable buffers are updated in place: export refuses
# that with autograd on.
torch.set_grad_enabled(False)

from realmodels import CONTEXTS, TIMES as _TIMES, timed


@pytest.fixture(scope="session")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("exir_real")


def _llama_case(root, name, context, quantized, tag=None, lora=False):
    def make():
        edge, config = realmodels.export_llama(context, quantized, tag, lora)
        calls = {"forward": [realmodels.llama_inputs(t, p) for p, t in enumerate((1, 5, 9))]}
        return realmodels.write_both(edge, root, name, calls, config, llama=True)
    return timed(name, make)


@pytest.fixture(scope="session")
def case_llama_fp32(root):
    return _llama_case(root, "llama_fp32", 128, False)


@pytest.fixture(scope="session")
def case_llama_8da4w(root):
    return _llama_case(root, "llama_8da4w", CONTEXTS[0], True)


@pytest.fixture(scope="session")
def case_llama_8da4w_ptd(root):
    return _llama_case(root, "llama_8da4w_ptd", CONTEXTS[0], True, tag="llama_8da4w_ptd")


@pytest.fixture(scope="session")
def case_lora(root):
    # Model 5: the foundation's weights in a .ptd, the adapter's in the .pte.
    # (executorch.runtime 1.5 loads one data file, so the adapter cannot be a
    # second .ptd and still run here: see the report.)
    return _llama_case(root, "lora", CONTEXTS[0], False, tag="lora_foundation", lora=True)


def _small_case(root, name, export):
    """A non-Llama program `export()` lowers, written by both serializers."""
    def make():
        edge, calls = export()
        return realmodels.write_both(edge, root, name, calls)
    return timed(name, make)


@pytest.fixture(scope="session")
def case_mutable(root):
    return _small_case(root, "mutable", realmodels.export_mutable)


@pytest.fixture(scope="session")
def case_two_methods(root):
    return _small_case(root, "two_methods", realmodels.export_two_methods)


LLAMA_CASES = ["llama_fp32", "llama_8da4w", "llama_8da4w_ptd", "lora"]
CASES = LLAMA_CASES + ["mutable", "two_methods"]


@pytest.fixture(params=CASES)
def case(request):
    return request.getfixturevalue(f"case_{request.param}")


@pytest.fixture(params=LLAMA_CASES)
def llama_case(request):
    return request.getfixturevalue(f"case_{request.param}")


def pytest_terminal_summary(terminalreporter):
    if realcheck.REPORT:
        terminalreporter.section("etpack vs upstream, byte for byte")
        for label, verdict in sorted(realcheck.REPORT.items()):
            terminalreporter.write_line(f"{label}: {verdict}")
    if _TIMES:
        terminalreporter.section("export + lower + both serializations (s)")
        for name, t in _TIMES.items():
            terminalreporter.write_line(f"{name}: {t:.1f}")
    for line in realcheck.NOTES:
        terminalreporter.write_line(line)
