"""pytest plugin for scripts/upstream_tests.sh: runs upstream's serializer
tests as they are, optionally with etpack's entry points in place of
upstream's, and records each test's outcome.

Options:
  --etpack-substitute   replace, before any test module is imported (so
                        their ``from ... import serialize_pte_binary`` take
                        etpack's): ``serialize_pte_binary`` and
                        ``serialize_for_executorch`` (where upstream defines
                        them and where it imports them by name) and
                        ``FlatTensorSerializer.serialize``.
  --etpack-results=F    write {nodeid: {"outcome": "passed"|"failed"|"skipped",
                        "error": the failure's exception line}} to F.

etpack returns planned Artifacts; upstream's callers expect a Cord. The
adaptation is here, in one place, not in the tests: each Artifact becomes a
Cord of its bytes.
"""

import json

_results = {}


def pytest_addoption(parser):
    group = parser.getgroup("etpack")
    group.addoption("--etpack-substitute", action="store_true", default=False)
    group.addoption("--etpack-results", default=None)


def _substitute():
    import importlib

    import etpack.exir as ex
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize import serialize as flat

    def cord(artifact):
        return Cord(bytes(artifact))

    def serialize_pte_binary(pte_file, **options):
        return cord(ex.serialize_pte_binary(pte_file, **options))

    def serialize_for_executorch(*args, **kwargs):
        pte, ptds = ex.serialize_for_executorch(*args, **kwargs)
        # A DataSerializer that is not etpack's (a test's mock) returns its
        # own objects: those pass through as they are.
        return cord(pte), {tag: cord(p) if isinstance(p, ex.Artifact) else p
                           for tag, p in ptds.items()}

    def serialize(self, data_payload):
        return cord(ex.serialize_ptd(data_payload,
                                     segment_alignment=self.config.segment_alignment))

    for name in ("executorch.exir._serialize._program",
                 "executorch.exir._serialize._serialize",
                 "executorch.exir._serialize",
                 "executorch.exir.program._program"):
        module = importlib.import_module(name)
        if hasattr(module, "serialize_pte_binary"):
            module.serialize_pte_binary = serialize_pte_binary
        if hasattr(module, "serialize_for_executorch"):
            module.serialize_for_executorch = serialize_for_executorch
    flat.FlatTensorSerializer.serialize = serialize


def pytest_configure(config):
    if config.getoption("etpack_substitute"):
        _substitute()


def _error(report):
    """The exception line of a failure ("E   ValueError: ..."), or ""."""
    lines = [line for line in str(report.longrepr).splitlines() if line.startswith("E ")]
    return lines[0][1:].strip() if lines else str(report.longrepr).splitlines()[-1:][0]


def pytest_runtest_logreport(report):
    # A test fails when any of its phases (or subtests) fails; it is skipped
    # when its setup skipped it.
    now = _results.get(report.nodeid)
    if report.failed:
        if now is None or now["outcome"] != "failed":
            _results[report.nodeid] = {"outcome": "failed", "error": _error(report)}
    elif report.skipped and report.when == "setup":
        _results[report.nodeid] = {"outcome": "skipped", "error": ""}
    elif report.when == "call" and now is None:
        _results[report.nodeid] = {"outcome": "passed", "error": ""}


def pytest_collectreport(report):
    if report.failed:  # a module that does not import: every test in it fails
        _results[report.nodeid + "::<collection>"] = {"outcome": "failed",
                                                      "error": _error(report)}


def pytest_sessionfinish(session):
    path = session.config.getoption("etpack_results")
    if path:
        with open(path, "w") as f:
            json.dump(_results, f, indent=1, sort_keys=True)
