"""The example in docs/python.md runs as written."""

import os
import pathlib
import re

import pytest

DOCS = pathlib.Path(os.environ.get(
    "ETPACK_DOCS_DIR", pathlib.Path(__file__).resolve().parents[2] / "docs"))


EXIR_HEADING = "\n## Using etpack from ExecuTorch's exporter\n"


def test_python_md_example(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    text = (DOCS / "python.md").read_text().split(EXIR_HEADING)[0]
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], str(DOCS / "python.md"), "exec"), {"__name__": "__docs__"})
    assert "model.pte + model.ptd" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ptd", "model.pte"]


def test_python_md_exir_example(tmp_path, monkeypatch, capsys):
    """The exir section's example, without executorch (install() finds none)."""
    section = (DOCS / "python.md").read_text().split(EXIR_HEADING)[1].split("\n## ")[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(__import__("sys").modules, "executorch", None)
    scope = {"__name__": "__docs__"}
    exec(compile(blocks[0], str(DOCS / "python.md"), "exec"), scope)
    assert scope["patched"] is False
    out = capsys.readouterr().out
    assert "ptd files ['extras']" in out and "wrote exported.pte + ./extras.ptd" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exported.pte", "extras.ptd",
                                                          "model.pte"]
    import etpack
    etpack.verify(tmp_path / "model.pte")
    etpack.verify(tmp_path / "exported.pte", [tmp_path / "extras.ptd"])
