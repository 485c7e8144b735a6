"""The config-derived weight total against the checkpoint's own size (index ``total_size``, a verbatim quote of
it, vLLM's logged shard total, or a rounded card figure), and the docs page that states the comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import ModelDescription

ROOT = Path(__file__).resolve().parents[2]
SIZES = json.loads((ROOT / "tests/fixtures/checkpoint_sizes/checkpoint_sizes.json").read_text(encoding="utf-8"))
GIB = 1 << 30
#: Every reference is matched within 1 %: an index to the byte, the vLLM logs to their 2 decimals (+0.09 %,
#: +0.07 %), the rounded 750GB card figure for GLM-5.1-FP8 (+0.82 %).
TOLERANCE = 0.01


def derived_total(desc: ModelDescription) -> int:
    """Every weight a checkpoint stores: the footprint's parts with the MTP layers, and the routed experts of every
    layer group (MTP and draft groups included) in their stored format."""
    assert desc.footprint is not None, desc.model
    experts = sum(len(g.layers) * g.num_experts * g.expert_weight_bytes() for g in desc.layer_groups)
    return experts + desc.footprint.bytes(mtp_built=True)


def _model(config: str) -> ModelDescription:
    return resolve_model(str(ROOT / config) if config.startswith("tests/") else config)


@pytest.mark.parametrize("entry", SIZES["sizes"], ids=lambda e: e["model"])
def test_derived_weight_total_matches_the_checkpoint(entry):
    got, ref = derived_total(_model(entry["config"])), entry["bytes"]
    assert abs(got - ref) / ref <= TOLERANCE, f"{entry['model']}: {got / GIB:.2f} GiB vs {ref / GIB:.2f} GiB"
    if entry["evidence"] in ("index", "index-quote"):
        assert got == ref  # a real index: to the byte


@pytest.mark.parametrize("entry", SIZES["sizes"], ids=lambda e: e["model"])
def test_docs_memory_page_states_the_comparison(entry):
    page = (ROOT / "docs/memory-reference.md").read_text(encoding="utf-8")
    got, ref = derived_total(_model(entry["config"])), entry["bytes"]
    row = f"| {entry['model']} | {got / GIB:.2f} | {ref / GIB:.2f} | {(got - ref) / ref:+.2%} |"
    assert row in page, row


BUNDLED = (
    "deepseek-ai/DeepSeek-V4-Flash",
    "deepseek-ai/DeepSeek-V4-Pro",
    "nvidia/DeepSeek-V4-Flash-NVFP4",
    "zai-org/GLM-5",
    "zai-org/GLM-5-FP8",
    "nvidia/GLM-5.1-NVFP4",
)


@pytest.mark.parametrize("model", BUNDLED)
def test_docs_memory_page_states_every_bundled_total(model):
    page = (ROOT / "docs/memory-reference.md").read_text(encoding="utf-8")
    row = f"| {model} | {derived_total(resolve_model(model)) / GIB:.2f} GiB |"
    assert row in page, row
