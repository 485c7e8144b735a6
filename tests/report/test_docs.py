"""The generated docs: committed files are current, and they cover every declaration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from moe_oracle.cli.docs import FILES
from moe_oracle.releases import engine_profile
from moe_oracle.report.docs import DOCS_COMMAND, MATRIX_MD, REASONS_MD, VARIANTS_MD, docs_registry
from moe_oracle.rules import Engine, ReasonCode
from tests.report.conftest import DOCS, REPO


@pytest.mark.parametrize("name", FILES)
def test_committed_doc_is_current(name: str, generated_docs: dict[str, str]):
    path = DOCS / name
    assert path.is_file(), f"docs/{name} is missing; generate it with: {DOCS_COMMAND} (from the repository root)"
    from moe_oracle.cli.docs import comparable

    # machine-dependent outputs (probe, accuracy timings) are compared by their command only
    current = comparable(path.read_text(encoding="utf-8"))
    assert current == comparable(generated_docs[name]), (
        f"docs/{name} is stale (a declaration, preset or rule changed); regenerate it with: {DOCS_COMMAND} "
        "(from the repository root) and commit the result"
    )


def test_generated_files_say_how_to_regenerate(generated_docs: dict[str, str]):
    for name in FILES:
        head = generated_docs[name][:2000]
        assert "do not edit" in head and DOCS_COMMAND in head, name


def test_markdown_matrix_has_legend_and_one_table_per_device(generated_docs: dict[str, str]):
    md = generated_docs[MATRIX_MD]
    assert "## Legend" in md
    for device in ("h100", "h200", "b200", "b300", "gb200", "mi300x", "mi325x", "mi355x"):
        assert f"\n## {device} (" in md, device


def test_variants_doc_lists_every_requirement_and_gate(generated_docs: dict[str, str]):
    text = generated_docs[VARIANTS_MD]
    for v in docs_registry().variants:
        assert f"## `{v.key}`" in text
        for field in (v.summary, v.kernel):
            assert field in text
        section = text.split(f"## `{v.key}`", 1)[1].split("\n## ", 1)[0]
        for check in v.checks:
            assert f"`{check.code.value}`" in section and check.rule.replace("|", "\\|") in section
    for engine in (Engine.VLLM, Engine.SGLANG):
        profile = engine_profile(engine)
        assert profile is not None
        assert f"## Engine gates: {profile.engine} {profile.version}" in text
        for support in profile.supports:
            assert f"### {profile.engine} {profile.version}: `{support.backend}`" in text
            for check in support.checks:
                assert check.rule.replace("|", "\\|") in text


def test_reason_codes_doc_covers_every_code(generated_docs: dict[str, str]):
    text = generated_docs[REASONS_MD]
    for code in ReasonCode:
        assert f"## `{code.value}`" in text and code.meaning in text
    arch = text.split("## `ARCH_UNSUPPORTED`", 1)[1].split("\n## ", 1)[0]
    for v in docs_registry().variants:
        assert f"`{v.key}`" in arch
    known_bad = text.split("## `KNOWN_BAD`", 1)[1].split("\n## ", 1)[0]
    assert "advisory MOA-" in known_bad


def test_docs_module_and_matrix_docs_write_the_same_files(tmp_path: Path, generated_docs: dict[str, str]):
    out = tmp_path / "docs"
    p = subprocess.run(
        [sys.executable, "-m", "moe_oracle.cli.docs", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,  # the CLI page runs accuracy (torch) once
    )
    assert p.returncode == 0, p.stderr
    from moe_oracle.cli.docs import comparable

    assert sorted(f.name for f in out.iterdir()) == sorted(FILES)
    for name in FILES:
        assert comparable((out / name).read_text(encoding="utf-8")) == comparable(generated_docs[name]), name


def test_family_table_reads_every_family_and_names_the_true_blockers(generated_docs: dict[str, str]):
    from moe_oracle.report.docs import FAMILIES_MD
    from moe_oracle.report.families import ROWS

    text = generated_docs[FAMILIES_MD]
    rows = {
        line.split(" | ")[1].strip("`"): line for line in text.splitlines() if line.startswith("| ") and "`" in line
    }
    assert set(rows) == {folder for _, folder in ROWS}
    h200 = {folder: line.split(" | ")[3] for folder, line in rows.items()}
    assert h200["Qwen--Qwen3-235B-A22B-FP8"] == "★ sm90_fp8xfp8"
    assert "EXPERT_BIAS_UNSUPPORTED" in rows["openai--gpt-oss-120b"]
    assert "EXPERT_WIDTH_EXCEEDS" in h200["mistralai--Mixtral-8x7B-v0.1"]
    assert "QUANT_INTEGER" in rows["moonshotai--Kimi-K2.5"] and "QUANT_UNSUPPORTED" not in rows["moonshotai--Kimi-K2.5"]
    assert "ROUTER_WEIGHT_ON_INPUT" in rows["meta-llama--Llama-4-Scout-17B-16E-Instruct"]
    assert "**dbrx**" in text and "**hunyuan_v1_moe**" in text
