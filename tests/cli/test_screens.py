"""Operator screens (issue 22): every table within the terminal's width without cutting an identifier, wrapped
lines keep their indent, an override refusal is short with its trail on demand, a bare ``moe-oracle`` prints
its help, error echoes are bounded, and one idea has one spelling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.runner import cli

DOCS = Path(__file__).resolve().parents[2] / "docs"
VARIANTS = ("sm90_fp8xfp8", "sm90_fp8xfp4", "sm100_fp8xfp4", "sm100_fp8xfp8", "sm100_nvfp4", "sm100_bf16")


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize(
    "args",
    [
        ["model", "zai-org/GLM-5-FP8"],
        ["list", "backends"],
        ["list", "devices"],
        ["matrix", "--devices", "h200,b200"],
    ],
    ids=["model", "list-backends", "list-devices", "matrix"],
)
@pytest.mark.parametrize("columns", [80, 100])
def test_tables_fit_the_terminal_and_keep_identifiers(args, columns):
    r = cli(*args, env={"COLUMNS": str(columns)})
    assert r.code == 0, r.err
    assert max(len(line) for line in _lines(r.out)) <= columns, [x for x in _lines(r.out) if len(x) > columns]
    if args[0] == "matrix":
        for variant in VARIANTS:
            assert re.search(rf"\b{variant}\b", r.out), variant  # every header whole, never "sm90_fp…"
        assert "…" not in r.out and "deepseek-ai/DeepSeek-V4-Flash" in r.out


def test_matrix_at_80_columns_keeps_rows_and_columns_apart():
    r = cli("matrix", "--devices", "h200", env={"COLUMNS": "80"})
    headers = [line for line in _lines(r.out) if line.startswith("model ")]
    assert len(headers) >= 2  # the variant columns split over tables, each with its row labels
    assert all("weights" in h and "topology" in h for h in headers)


def test_wrapped_lines_keep_their_indent():
    r = cli("select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", env={"COLUMNS": "80"})
    lines = _lines(r.out)
    start = next(i for i, line in enumerate(lines) if line.startswith("    cost basis:"))
    assert lines[start + 1].startswith("    ") and not lines[start + 1].startswith("     cost")


def test_a_bare_command_prints_the_help():
    r = cli()
    assert r.code == 0 and r.out.startswith("Usage: moe-oracle") and "Commands:" in r.out and r.err == ""


@pytest.mark.parametrize(
    "args",
    [
        ["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "x" * 100_000],
        ["select", "m" * 100_000, "--device", "b200"],
        ["model", "y" * 100_000],
    ],
    ids=["device", "model-select", "model"],
)
def test_error_lines_echo_a_bounded_excerpt(args):
    r = cli(*args)
    assert r.code == 2 and r.err.count("\n") == 1 and len(r.err) < 2000, len(r.err)


def test_an_override_refusal_is_short_and_names_each_variant_once():
    args = ["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "mi355x", "--dp", "8", "--ep", "8"]
    r = cli(*args, "--moe-backend", "deep_gemm_mega_moe")
    assert r.code == 3 and r.err.count("\n") == 1 and len(r.err) < 800, len(r.err)
    message = r.err.split(" Fix:")[0]
    for variant in VARIANTS:
        assert len(re.findall(rf"\b{variant}\b(?!\+)", message)) == 1, (variant, message)
    trail = cli(*args, "--moe-backend", "deep_gemm_mega_moe", "--all-reasons")
    assert trail.code == 3
    reasons = [line for line in _lines(trail.err) if line.startswith("  layer group 'moe'")]
    assert len(reasons) >= 6 and all("(fix: " in line for line in reasons)
    assert _lines(trail.err)[-1].startswith("error: --moe-backend deep_gemm_mega_moe cannot run")


def test_one_spelling_per_idea():
    backends = cli("list", "backends", env={"COLUMNS": "200"}).out
    generated = "".join((DOCS / name).read_text("utf-8") for name in ("cli.md", "variants.md", "capability-matrix.md"))
    for text in (backends, generated):
        assert not re.search(r"(?<![uU_])[eE]8[mM]0(?!fnu)", text)  # the format is UE8M0 everywhere
        assert "(all2all: --all2all-backend)" not in text
    select = cli("select", "zai-org/GLM-5-FP8", "--device", "h200", "--nodes", "2", "--dp", "16", "--ep", "16")
    plan = cli("plan", "zai-org/GLM-5-FP8", "--device", "h200", "--nodes", "2", "--dp", "16", "--ep", "16",
               "--engine", "vllm")  # fmt: skip
    assert "on 2 x 8 x h200 (sm90)" in select.out and "on 2 x 8 x h200 (sm90)" in plan.out
    for path in (DOCS / "plans").glob("*.md"):
        for line in path.read_text("utf-8").splitlines():
            found = re.match(r"\s+\S+: \[(\w+)\].*\(also: ([^)]*)\)$", line)
            if found:
                assert found.group(1) not in found.group(2).split(", "), (path.name, line)
