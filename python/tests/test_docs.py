"""The example in docs/python.md runs as written."""

import os
import pathlib
import re

import pytest

DOCS = pathlib.Path(os.environ.get(
    "ETPACK_DOCS_DIR", pathlib.Path(__file__).resolve().parents[2] / "docs"))


def test_python_md_example(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "python.md").read_text(), re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], str(DOCS / "python.md"), "exec"), {"__name__": "__docs__"})
    assert "model.pte + model.ptd" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ptd", "model.pte"]
