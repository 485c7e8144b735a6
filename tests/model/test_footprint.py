"""The footprint's parts (what a model holds besides its routed experts), field by field on real configs."""

from __future__ import annotations

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import PartKind

GIB = 1 << 30


def _parts(model: str):
    desc = resolve_model(model)
    assert desc.footprint is not None
    return desc.footprint


def test_every_part_has_a_kind_and_embeddings_and_head_are_two_parts():
    fp = _parts("deepseek-ai/DeepSeek-V4-Flash")
    by_name = {p.name: p for p in fp.parts}
    emb, head = by_name["embeddings"], by_name["LM head"]
    assert emb.kind is PartKind.EMBEDDING and head.kind is PartKind.HEAD
    assert emb.linear == head.linear == ((1, 129280, 4096),)  # vocab_size x hidden_size, bf16
    assert not fp.tied_embeddings
    assert {p.kind for p in fp.parts} >= {PartKind.ATTENTION, PartKind.ROUTER, PartKind.NORM, PartKind.SHARED_EXPERTS}


def test_bytes_by_kind_sums_to_the_total_the_fit_uses():
    fp = _parts("zai-org/GLM-5-FP8")
    for built in (False, True):
        assert sum(fp.bytes_by_kind(mtp_built=built).values()) == fp.bytes(mtp_built=built)
    assert fp.bytes_by_kind(mtp_built=False)[PartKind.HEAD] == 154880 * 6144 * 2
    assert fp.bytes_by_kind(mtp_built=False)[PartKind.DENSE_MLP] > 0  # first_k_dense_replace = 3


def test_the_split_keeps_the_totals_of_the_fit():
    """Splitting "embeddings and head" and the V4 extras into kinds moved no byte (figures from before the split)."""
    fp = _parts("deepseek-ai/DeepSeek-V4-Flash")
    assert (fp.bytes(mtp_built=False), fp.bytes(mtp_built=True)) == (9012485504, 9180271104)
    fp = _parts("zai-org/GLM-5")
    assert (fp.bytes(mtp_built=False), fp.bytes(mtp_built=True)) == (38271012864, 38849046016)
