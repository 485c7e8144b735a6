"""Every source the package cites resolves for a user: a public URL or a page under docs/ (issue 20).

The project's own reference notes (``shared/reference/*.md``, ``seeds/``) do not ship, so neither the generated
docs, the README, nor what the commands print may cite them; a cited ``docs/<page>`` must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.runner import cli

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = re.compile(
    r"shared/reference|seeds/\d|\b(?:vllm-0\.33|kernels|h200|field-2026-12|families-2026-12|users|models)\.md\b"
)
DOCS_PAGE = re.compile(r"\bdocs/([\w./-]+\.(?:md|html))")


def _shipped_texts() -> dict[str, str]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "docs").rglob("*.html"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files}


def _problems(name: str, text: str) -> list[str]:
    out = [f"{name}: cites {m.group(0)!r}" for m in INTERNAL.finditer(text)]
    out += [
        f"{name}: cites missing docs/{m.group(1)}"
        for m in DOCS_PAGE.finditer(text)
        if not (ROOT / "docs" / m.group(1)).exists()
    ]
    return out


def test_docs_and_readme_cite_only_what_ships():
    problems = [p for name, text in _shipped_texts().items() for p in _problems(name, text)]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize(
    "args",
    [
        ("select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "h200", "--engine", "vllm", "--all-reasons"),
        ("select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "mi355x", "--engine", "vllm", "--json"),
        ("select", "zai-org/GLM-5-FP8", "--device", "b200", "--dp", "8", "--ep", "8", "--json"),
        ("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "h200", "--engine", "vllm", "--json"),
        ("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "mi355x", "--engine", "sglang", "--json"),
        (
            "plan",
            "zai-org/GLM-5-FP8",
            "--device",
            "h200",
            "--nodes",
            "2",
            "--dp",
            "16",
            "--ep",
            "16",
            "--engine",
            "vllm",
        ),
        ("list", "builds"),
    ],
)
def test_command_output_cites_only_what_ships(args):
    r = cli(*args)
    assert r.code == 0, r.err
    problems = _problems(" ".join(args), r.out + r.err)
    assert not problems, "\n".join(problems[:20])
