"""The footprint of a described model: the formats its non-expert weights are stored in, resolved by the same
quantization resolver that decides the experts' (:mod:`._quant`), then
:func:`moe_oracle.model.footprint.read_footprint`.

Module names are the checkpoints' spellings of one layer's attention (Hugging Face ``self_attn`` / ``linear_attn``
/ ``attention``, DeepSeek V4 ``attn``), dense MLP and MTP layer; a multimodal checkpoint's wrappers are added by the
resolver.
"""

from __future__ import annotations

from typing import Any

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters._patterns import Site
from moe_oracle.model.adapters._quant import QuantResolver
from moe_oracle.model.footprint import Formats
from moe_oracle.model.footprint_read import checkpoint_kv_fp8, read_footprint
from moe_oracle.model.types import Footprint, ModelDescription, QuantSpec

_ATTENTION = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "self_attn.q_a_proj",
    "self_attn.q_b_proj",
    "self_attn.kv_a_proj_with_mqa",
    "self_attn.kv_b_proj",
    "linear_attn.in_proj_qkvz",
    "linear_attn.in_proj_qkv",
    "linear_attn.out_proj",
    "attention.query_key_value",
)
_V4_ATTENTION = ("attn.wq_a", "attn.wq_b", "attn.wkv", "attn.wo_a", "attn.wo_b")
_MLP = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
_EXPERTS = ("mlp.experts", "mlp.experts.0.gate_proj", "mlp.experts.0.up_proj", "mlp.experts.0.down_proj")


def _names(roots: list[str], leaves: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{root}.{leaf}" for root in roots for leaf in leaves)


def _format(resolver: QuantResolver, label: str, names: tuple[str, ...]) -> QuantSpec:
    try:
        return resolver.shared(Site(label, (), names))
    except ModelConfigError:
        return resolver.base_shared()


#: The largest vocabulary taken as real (the largest public ones are ~256k tokens; 2^31 bounds any int32 id).
MAX_VOCAB = 2**31


def check_footprint_fields(config: dict[str, Any]) -> None:
    """``vocab_size`` and ``tie_word_embeddings`` as the memory fit reads them, refused when present but malformed
    (exit 2 naming the key, the value and the fix) instead of silently weighing less: a vocab of -1, 1e308, 256.5,
    true or null would drop the embeddings and LM head from the fit, and 256 or "yes" for ``tie_word_embeddings``
    would read as untied."""
    import json

    from moe_oracle.errors import excerpt
    from moe_oracle.model.footprint_read import language_config

    def shown(value: Any) -> str:  # as config.json spells it (true, null, "yes")
        return excerpt(json.dumps(value))[1:-1]

    holders = [config] + ([language_config(config)] if language_config(config) is not config else [])
    for holder in holders:
        where = "config.json" if holder is config else "config.json's language-model config"
        if "vocab_size" in holder:
            vocab = holder["vocab_size"]
            if isinstance(vocab, bool) or not isinstance(vocab, int) or not 1 <= vocab <= MAX_VOCAB:
                raise ModelConfigError(
                    f"{where} vocab_size {shown(vocab)} is not a whole number of tokens from 1 to {MAX_VOCAB} "
                    "(the memory fit weighs the embeddings and the LM head with it)",
                    fix="correct vocab_size in config.json: the tokenizer's vocabulary size (e.g. 129280)",
                )
        tied = holder.get("tie_word_embeddings")
        if tied is not None and not isinstance(tied, bool):
            raise ModelConfigError(
                f"{where} tie_word_embeddings {shown(tied)} is not true or false (a JSON boolean): whether the LM "
                "head is a second copy of the embeddings decides the weights the fit weighs",
                fix="write tie_word_embeddings as true or false in config.json",
            )


def describe_footprint(
    config: dict[str, Any], hf_quant_config: Any, desc: ModelDescription, resolver: QuantResolver
) -> Footprint | None:
    """The footprint of ``desc`` (None when its family has no table entry or its config lacks a needed field;
    exit 2 for a malformed ``vocab_size`` / ``tie_word_embeddings``: :func:`check_footprint_fields`)."""
    check_footprint_fields(config)
    n = desc.num_hidden_layers or 0
    main = sorted(i for g in desc.layer_groups if g.role not in ("mtp", "draft") for i in g.layers)
    first = main[0] if main else 0
    dense = next((i for i in range(n) if i not in set(main)), None)

    def layer(i: int | str) -> list[str]:
        return [f"model.layers.{i}", f"layers.{i}"]

    attention = _format(resolver, "attention", _names(layer(first), _ATTENTION + _V4_ATTENTION))
    dense_mlp = (
        _format(resolver, "dense MLP", _names(layer(dense), (*_MLP, "ffn.w1", "ffn.w2", "ffn.w3")))
        if dense is not None
        else attention
    )
    mtp_roots = [*layer(n), "mtp.layers.0", "model.mtp.layers.0", "mtp.0"]
    mtp = _format(resolver, "MTP attention", _names(mtp_roots, _ATTENTION + _V4_ATTENTION))
    mtp_projection = _format(resolver, "MTP input projection", (*_names(mtp_roots, ("eh_proj", "e_proj")), "mtp.fc"))
    mtp_experts: QuantSpec | None
    try:
        mtp_experts = resolver.routed(Site("MTP experts", _names(["mtp.layers.0", "model.mtp.layers.0"], _EXPERTS), ()))
    except ModelConfigError:
        mtp_experts = None
    formats = Formats(attention, dense_mlp, mtp, mtp_projection, mtp_experts)
    return read_footprint(config, desc, formats, kv_fp8=checkpoint_kv_fp8(config, hf_quant_config))
