"""The generated example plans in docs/plans are current (regenerate command printed on failure)."""

from __future__ import annotations

from pathlib import Path

from moe_oracle.launch.examples import EXAMPLES, REGENERATE, generate

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plans"


def test_docs_plans_are_current() -> None:
    files = generate()
    stale = [name for name, text in files.items() if not (DOCS / name).is_file() or (DOCS / name).read_text() != text]
    extra = sorted(p.name for p in DOCS.glob("*.md") if p.name not in files)
    assert not stale and not extra, (
        f"docs/plans is stale (changed: {stale}, not generated: {extra}); regenerate with: {REGENERATE}"
    )


def test_required_examples_cover_both_engines() -> None:
    files = generate()
    required = {e.slug for e in EXAMPLES if e.required}
    assert required == {
        "deepseek-v4-flash--8xb200",
        "deepseek-v4-flash--8xh200",
        "deepseek-v4-flash--8xmi355x",
        "deepseek-v4-flash--2x8xh200",
        "glm-5-fp8--8xh200",
    }
    for slug in required:
        for engine in ("vllm", "sglang"):
            text = files[f"{engine}--{slug}.md"]
            assert "## Launch" in text and "## With `--software all`" in text
            assert f"moe-oracle plan {'zai-org' if 'glm' in slug else 'deepseek-ai'}" in text


def test_examples_show_the_derived_quantities() -> None:
    files = generate()
    assert "MORI_SHMEM_HEAP_SIZE=8G" in files["vllm--deepseek-v4-flash--8xmi355x.md"]
    assert "DeepGEMM symmetric buffer per rank" in files["vllm--deepseek-v4-flash--8xb200.md"]
    assert "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK=1920" in files["sglang--glm-5-fp8--8xh200.md"]
    assert "Replica plan: 2 x DP8+EP8" in files["vllm--deepseek-v4-flash--2x8xb200.md"]
    assert "EP_EXCEEDS_DOMAIN" in files["vllm--deepseek-v4-flash--2x8xh200.md"]


def test_module_entry_point_check_mode(tmp_path: Path) -> None:
    from moe_oracle.launch.examples import main

    assert main([str(tmp_path), "--check"]) == 1
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--check"]) == 0
