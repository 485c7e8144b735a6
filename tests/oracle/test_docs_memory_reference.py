"""docs/memory-reference.md states the fit's code as it is: the placement table and its sources are
:data:`~moe_oracle.decide.placement.PLACEMENT`'s rows, each group as :func:`group_size` sizes it, and the engines'
constants the page names are the code's (issue 32, Why 11: the contributor half of the old docs/memory.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moe_oracle.decide import fit, memory_share, settings_search, share_advice
from moe_oracle.decide.fit import _kind_label
from moe_oracle.decide.placement import (
    ARCH_PLACEMENT,
    EXPERT_TENSORS,
    PLACEMENT,
    SGLANG_A2A_SHARED,
    AttentionMode,
    Over,
    group_size,
)
from moe_oracle.model.types import PartKind
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Parallelism

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "memory-reference.md").read_text(encoding="utf-8")
TEXT = " ".join(PAGE.split())  # sources wrap across lines in the page's prose
KINDS = [k for k in PartKind if k is not PartKind.ROUTED_EXPERTS]
#: The page's words for each group: (engine, group) -> cell text.
CELL = {
    (Engine.VLLM, Over.TP): "over `tp` (the TP group)",
    (Engine.SGLANG, Over.TP): "over `tp x dp` (`--tp-size`)",
    (Engine.SGLANG, Over.ATTN_TP): "over `tp` (attention TP)",
    (Engine.SGLANG, Over.MOE_DENSE_TP): "over `tp x dp` (`--moe-dense-tp-size` default)",
}


def _cell(engine: Engine, over: Over) -> str:
    return "replicated" if over is Over.REPLICATED else CELL[(engine, over)]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_placement_row(kind: PartKind) -> None:
    vllm = PLACEMENT[(Engine.VLLM, AttentionMode.TP)][kind]
    assert PLACEMENT[(Engine.VLLM, AttentionMode.DP)][kind] == vllm  # one vLLM column for both modes
    assert PLACEMENT[(Engine.NONE, AttentionMode.TP)][kind] == vllm  # and for --engine none
    sg_tp, sg_dp = (PLACEMENT[(Engine.SGLANG, mode)][kind] for mode in (AttentionMode.TP, AttentionMode.DP))
    row = (
        f"| {_kind_label(kind)} | {_cell(Engine.VLLM, vllm.over)} | {_cell(Engine.SGLANG, sg_tp.over)} | "
        f"{_cell(Engine.SGLANG, sg_dp.over)} |"
    )
    assert row in PAGE, row
    for source in (vllm.source, sg_tp.source, sg_dp.source):
        assert " ".join(source.split()) in TEXT, source


@pytest.mark.parametrize("engine, over", [*CELL, (Engine.VLLM, Over.REPLICATED)])
def test_the_group_a_cell_names_is_the_one_group_size_gives(engine: Engine, over: Over) -> None:
    par = Parallelism(tp=2, dp=4, ep=8)
    expression = re.search(r"`(tp(?: x dp)?)`", CELL.get((engine, over), "`1`"))
    expected = {"tp": par.tp, "tp x dp": par.tp * par.dp}.get(expression.group(1), 1) if expression else 1
    assert group_size(engine, par, over) == expected


def test_exceptions_and_expert_tensors_are_stated() -> None:
    assert " ".join(SGLANG_A2A_SHARED.source.split()) in TEXT and "`EXPERT_TENSORS`" in PAGE
    for (engine, mode, architecture), kinds in ARCH_PLACEMENT.items():
        assert engine is Engine.SGLANG and mode is AttentionMode.DP and f"`{architecture}`" in PAGE
        for placement in kinds.values():
            assert placement.over is Over.REPLICATED and " ".join(placement.source.split()) in TEXT
    assert group_size(Engine.VLLM, Parallelism(tp=2, dp=4, ep=8), EXPERT_TENSORS.over) == 8  # the tp*dp ranks


def test_the_constants_the_page_names() -> None:
    gib = 1 << 30
    assert f"`2 GiB + {memory_share.ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN} B x tokens per rank x hidden`" in PAGE
    assert 2 * gib == memory_share.RESERVE_CUDA_GRAPHS
    assert f"default `VLLM_DEFAULT_UTILIZATION` = {memory_share.VLLM_DEFAULT_UTILIZATION:g}" in TEXT
    assert f"{memory_share.VLLM_MAX_PROPOSED_UTILIZATION:g} (`VLLM_MAX_PROPOSED_UTILIZATION`" in TEXT
    assert f"`TINY_SHARE` = {share_advice.TINY_SHARE:g}" in TEXT
    assert f"(`MAX_PROPOSED_SHARE` = {share_advice.MAX_PROPOSED_SHARE:g})" in TEXT
    assert f"`MIN_CONTEXT` = {fit.MIN_CONTEXT:,} tokens" in TEXT
    assert fit.CONCURRENCY_CONTEXTS == (4096, 32768, 131072) and "(4K, 32K, 128K tokens)" in TEXT
    batches = ", ".join(str(b) for b in settings_search.SGLANG_GRAPH_BATCHES)
    assert f"`--cuda-graph-max-bs-decode` {batches}" in TEXT
    assert f"down to {settings_search.MIN_PREFILL_PER_RANK} tokens (`MIN_PREFILL_PER_RANK`)" in TEXT
    assert memory_share.sglang_default_settings(139.8 * 1024, 8) == (8192, 512)  # the tiers the page describes


def test_the_sglang_formula_as_the_page_writes_it() -> None:
    """The page's formula, evaluated by hand, gives the fraction SGLang's reproduced formula gives (DeepSeek V4,
    no prefill graph; and an MLA model with one)."""
    for mla, prefill in ((False, False), (True, True)):
        x = memory_share.SGLangMemoryInputs(
            gpu_mem_mib=139.8 * 1024, chunked_prefill_size=32768, cuda_graph_max_bs=512, tp_size=8, attn_dp_size=8,
            mla=mla, prefill_graph=prefill,
        )  # fmt: skip
        graphs = 2 * 512 + 3 * 512 * 8 + 1.5 * 512 * 8 + ((1536 if mla else 0) if prefill else 0)
        reserved = max(512 + 1.5 * 32768 + 8 * 1 / 8 * 1024 + graphs, 10240)
        assert memory_share.sglang_mem_fraction_static(x) == round((x.gpu_mem_mib - reserved) / x.gpu_mem_mib, 3)
