"""docs/api.md's examples run: every ```python block, in order, as one script (a page whose examples do not run is
a page that lies)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moe_oracle.inputs import RELEVANT_ENV

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def blocks(path: Path = DOC) -> list[str]:
    """The page's python code blocks, in order."""
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def test_the_page_has_examples_for_each_caller() -> None:
    text = "\n".join(blocks())
    for needed in ("moe_oracle.select(", "moe_oracle.check(", "moe_oracle.plan(", "def mega_moe_is_supported_config",
                   "def check_mega_moe_server_args"):  # fmt: skip
        assert needed in text


def test_every_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key in RELEVANT_ENV:
        monkeypatch.delenv(key, raising=False)
    namespace: dict[str, object] = {"__name__": "docs_api"}
    for index, code in enumerate(blocks()):
        try:
            exec(compile(code, f"docs/api.md block {index + 1}", "exec"), namespace)
        except Exception as exc:  # name the block that failed
            raise AssertionError(f"docs/api.md block {index + 1} failed: {exc!r}\n{code}") from exc
    printed = capsys.readouterr().out
    assert "MOA-2026-001" in printed and "sha256:" in printed
