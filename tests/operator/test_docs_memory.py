"""docs/memory.md's examples run as shown (issue 32, Why 11): every ```text block that starts with ``$ `` is run in
a shell at the page's terminal width; it must exit with the ``[exit N]`` the block ends with, and every line shown
must appear in its output, in order (``...`` alone skips lines; inside a line it stands for any text)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "memory.md"
BLOCK = re.compile(r"^```text\n(\$ .*?)^```$", re.M | re.S)
EXIT = re.compile(r"^\[exit (\d+)\]$")


def examples(path: Path = PAGE) -> list[tuple[str, list[str], int]]:
    """(command, lines shown, exit status) of each example block."""
    out = []
    for block in BLOCK.findall(path.read_text(encoding="utf-8")):
        lines = block.rstrip("\n").split("\n")
        status = EXIT.match(lines[-1])
        assert status, f"the example must end with [exit N]: {lines[0]}"
        out.append((lines[0][2:], lines[1:-1], int(status.group(1))))
    return out


def _pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split("...")))


def unmatched(shown: list[str], printed: list[str]) -> str | None:
    """The first shown line not found in ``printed`` after the previous one (None: all found, in order)."""
    at = 0
    for line in shown:
        if line == "...":
            continue
        pattern = _pattern(line)
        while at < len(printed) and not pattern.fullmatch(printed[at]):
            at += 1
        if at == len(printed):
            return line
        at += 1
    return None


def test_the_page_shows_the_operator_examples():
    commands = " ".join(command for command, _, _ in examples())
    for needed in ("--memory-fraction", "--engine sglang", "--max-model-len", "--json"):
        assert needed in commands
    assert {status for _, _, status in examples()} >= {0, 2, 7}
    assert "memory-reference.md" in PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("command, shown, status", examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_example_runs_as_shown(command: str, shown: list[str], status: int):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOE_ORACLE", "MORI_", "VLLM_", "SGLANG_"))}
    env |= {"COLUMNS": "120", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    env["MOE_ORACLE_DEFAULTS"] = ""  # empty: no site defaults file changes the answer
    p = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False
    )
    printed = (p.stdout + p.stderr).splitlines()
    assert p.returncode == status, f"{command}: exit {p.returncode}, the page says {status}\n{p.stderr[-2000:]}"
    missing = unmatched(shown, [line.rstrip() for line in printed])
    assert missing is None, f"docs/memory.md is stale: {command!r} no longer prints\n{missing}"


def test_the_docs_index_lists_the_operator_page_and_the_reference():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    operators, _, reference = index.partition("Reference (for developers and reviewers)")
    assert "| [memory.md](memory.md) |" in operators and "| [memory-reference.md](memory-reference.md) |" in reference
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    assert [p for p in pages if f"]({p})" not in index] == []  # every page is in the index
