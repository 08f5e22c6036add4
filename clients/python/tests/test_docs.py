"""The Python blocks of docs/python.md run, in order, against a live server."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "python.md"


def test_python_md_runs(server, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 8
    monkeypatch.setenv("EBB_SERVER", server.url)
    namespace: dict = {"__name__": "python_md"}
    for i, block in enumerate(blocks):
        code = compile(block, f"{DOC.name} block {i + 1}", "exec")
        exec(code, namespace)
    namespace["ebb"].close()
    out = capsys.readouterr().out
    assert "ok" in out and "not_found 404" in out
