"""What a model holds besides its routed experts: attention, dense MLPs, shared experts, router,
embeddings and head, and the KV cache one token costs.

The MoE description (:class:`~moe_oracle.model.types.MoELayerGroup`) carries the routed experts;
a memory fit needs the rest too. :func:`read_footprint` reads it from the raw ``config.json``
into a :class:`Footprint`: one :class:`Part` per kind of weight (element counts and the format
they are stored in) and the KV bytes per token. Families are table entries
(:data:`ATTENTION_KINDS`, keyed by ``model_type``): a family is added by naming which attention
shape it has and where its dense layers are, not by new code. A config whose family is not in
the table gets no footprint (``None``), and the fit then says it could not weigh the rest.

Units: element counts and bytes. Formats are :class:`~moe_oracle.model.types.QuantSpec`; a
linear weight of ``[N, K]`` stored in a block format carries its scales (see
:func:`linear_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moe_oracle.model.types import BF16, Footprint, Part, PartKind, QuantSpec, linear_bytes

__all__ = ["ATTENTION_KINDS", "AttentionKind", "Footprint", "Part", "PartKind", "linear_bytes", "read_footprint"]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class _Cfg:
    """Integer fields of a config with defaults; a missing required field raises KeyError."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.c = config

    def int(self, key: str, default: int | None = None) -> int:
        value = self.c.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise KeyError(key)
        return value

    def list(self, key: str) -> list[Any]:
        value = self.c.get(key)
        return value if isinstance(value, list) else []


@dataclass(frozen=True)
class _Layers:
    """Which layers exist: ``n`` main layers, ``mtp`` extra MTP layers, ``dense`` main layers with a dense MLP."""

    n: int
    mtp: int
    dense: int


# --- attention shapes (per layer): (linear matrices in the dense format, bf16 matrices, raw bytes) ----------------


def _mla_dsa(cfg: _Cfg) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """DeepSeek-V3.2 style MLA with the DSA lightning indexer (GLM-5.x ``glm_moe_dsa``)."""
    h, nh = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    q_lora, kv_lora = cfg.int("q_lora_rank"), cfg.int("kv_lora_rank")
    nope, rope, v = cfg.int("qk_nope_head_dim"), cfg.int("qk_rope_head_dim"), cfg.int("v_head_dim")
    dense = [(q_lora, h), (nh * (nope + rope), q_lora), (kv_lora + rope, h), (nh * (nope + v), kv_lora), (h, nh * v)]
    bf16: list[tuple[int, int]] = []
    ih, ihd = cfg.int("index_n_heads", 0), cfg.int("index_head_dim", 0)
    if ih:
        dense += [(ih * ihd, q_lora), (ihd, h)]
        bf16 += [(ih, h)]
    return dense, bf16, 2 * (q_lora + kv_lora + 2 * ihd)


def _dsv4(cfg: _Cfg) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """DeepSeek V4 attention: one latent KV head, grouped low-rank output (``o_groups`` x ``o_lora_rank``)."""
    h, nh, hd = cfg.int("hidden_size"), cfg.int("num_attention_heads"), cfg.int("head_dim")
    q_lora, groups, o_lora = cfg.int("q_lora_rank"), cfg.int("o_groups"), cfg.int("o_lora_rank")
    dense = [(q_lora, h), (nh * hd, q_lora), (hd, h), (groups * o_lora, nh * hd // groups), (h, groups * o_lora)]
    return dense, [], 4 * nh + 2 * (q_lora + hd)


def _dsv4_extra(cfg: _Cfg, layers: _Layers) -> list[Part]:
    """V4's per-layer compressors and indexers (``compress_ratios``) and hyper-connections (``hc_mult``),
    stored in bf16/fp32; the hash layers' token-to-expert tables (int32)."""
    h, hd, hc = cfg.int("hidden_size"), cfg.int("head_dim"), cfg.int("hc_mult", 1)
    ih, ihd, q_lora = cfg.int("index_n_heads", 0), cfg.int("index_head_dim", 0), cfg.int("q_lora_rank")
    comp: list[tuple[int, int, int]] = []
    raw = 0
    for ratio in cfg.list("compress_ratios")[: layers.n + layers.mtp]:
        if not isinstance(ratio, int) or ratio <= 0:
            continue
        coff = 2 if ratio == 4 else 1
        comp.append((2, coff * hd, h))  # wkv, wgate
        raw += 4 * ratio * coff * hd
        if ratio == 4 and ih:
            comp += [(1, ih * ihd, q_lora), (1, ih, h), (2, 2 * ihd, h)]  # wq_b, weights_proj, own compressor
            raw += 4 * ratio * 2 * ihd
    mix = (2 + hc) * hc
    hc_bytes = (layers.n + layers.mtp) * 2 * 4 * mix * hc * h if hc > 1 else 0
    hash_layers = cfg.int("num_hash_layers", 0)
    table = hash_layers * cfg.int("vocab_size") * cfg.int("num_experts_per_tok") * 4
    return [
        Part(name="compressors and indexers", kind=PartKind.ATTENTION, linear=tuple(comp), raw_bytes=raw),
        Part(name="hyper-connection mixers", kind=PartKind.OTHER, raw_bytes=hc_bytes),
        Part(name="hash-routing tables", kind=PartKind.ROUTER, raw_bytes=table),
    ]


# --- KV bytes per token ------------------------------------------------------------------------------------------


def _kv_mla(cfg: _Cfg, layers: _Layers) -> tuple[int, int, str]:
    kv_lora, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
    ihd = cfg.int("index_head_dim", 0)
    per_layer = 2 * (kv_lora + rope) + (ihd + 4 if ihd else 0)
    formula = (
        f"{layers.n} layers x (2 bytes x (kv_lora_rank {kv_lora} + rope {rope})"
        + (f" + indexer key {ihd} fp8 + 4-byte scale" if ihd else "")
        + ") (bf16 latent cache, the engines' default kv-cache dtype)"
    )
    return layers.n * per_layer, 0, formula


def _kv_dsv4(cfg: _Cfg, layers: _Layers) -> tuple[int, int, str]:
    """V4 caches one compressed entry per ``ratio`` tokens on ratio>0 layers (plus the indexer's keys on
    ratio-4 layers) and a ``sliding_window`` of raw entries on every layer; an entry is fp8 for the
    no-rope part with a scale per 64 and bf16 for the rope part."""
    hd, rope = cfg.int("head_dim"), cfg.int("qk_rope_head_dim")
    window, ihd = cfg.int("sliding_window", 0), cfg.int("index_head_dim", 0)
    entry = (hd - rope) + 2 * rope + 4 * _cdiv(hd - rope, 64)
    per_token = 0.0
    for ratio in cfg.list("compress_ratios")[: layers.n]:
        if isinstance(ratio, int) and ratio > 0:
            per_token += entry / ratio + ((ihd + 4) / ratio if ratio == 4 and ihd else 0)
    formula = (
        f"sum over layers with compress ratio r > 0 of ({entry} B/r), plus indexer keys ({ihd}+4 B)/4 on ratio-4 "
        f"layers; fixed: {layers.n} sliding windows of {window} entries"
    )
    return int(per_token + 0.999), layers.n * window * entry, formula


@dataclass(frozen=True)
class AttentionKind:
    """One family's table entry: its attention shape, extra parts, KV cache and where its dense layers are."""

    attention: Callable[[_Cfg], tuple[list[tuple[int, int]], list[tuple[int, int]], int]]
    kv: Callable[[_Cfg, _Layers], tuple[int, int, str]]
    dense_layers: Callable[[_Cfg], int] = lambda cfg: cfg.int("first_k_dense_replace", 0)
    extra: Callable[[_Cfg, _Layers], list[Part]] | None = None
    mtp_embeds: bool = False  # the MTP layer carries an input projection [H, 2H] (DeepSeek V3 style)
    source: str = ""


#: ``model_type`` -> the family's table entry.
ATTENTION_KINDS: dict[str, AttentionKind] = {
    "deepseek_v4": AttentionKind(
        _dsv4,
        _kv_dsv4,
        dense_layers=lambda cfg: 0,
        extra=_dsv4_extra,
        mtp_embeds=True,
        source="DeepSeek V4 attention (wq_a, wq_b, wkv, wo_a, wo_b; compressors, indexers, hyper-connections)",
    ),
    "glm_moe_dsa": AttentionKind(_mla_dsa, _kv_mla, mtp_embeds=True, source="MLA with DSA indexer (GLM-5.x)"),
    "deepseek_v32": AttentionKind(_mla_dsa, _kv_mla, mtp_embeds=True, source="MLA with DSA indexer (DeepSeek V3.2)"),
    "deepseek_v3": AttentionKind(_mla_dsa, _kv_mla, mtp_embeds=True, source="MLA (DeepSeek V3)"),
}


def read_footprint(
    config: dict[str, Any], dense_fmt: QuantSpec | None, shared: tuple[int, int, int] | None, experts: int
) -> Footprint | None:
    """The footprint of ``config`` (``None`` when its ``model_type`` has no table entry).

    ``dense_fmt`` is the format of the non-expert linear layers (the shared experts' format as the
    adapters read it; bf16 when None); ``shared`` is ``(num_shared, H, I)`` of a MoE layer's shared
    experts; ``experts`` the routed-expert count (router size).
    """
    kind = ATTENTION_KINDS.get(str(config.get("model_type")))
    if kind is None:
        return None
    try:
        return _read(kind, config, dense_fmt, shared, experts)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return None  # a field the footprint needs is missing or malformed: the fit says it could not weigh it


def _read(
    kind: AttentionKind,
    config: dict[str, Any],
    dense_fmt: QuantSpec | None,
    shared: tuple[int, int, int] | None,
    experts: int,
) -> Footprint:
    cfg = _Cfg(config)
    fmt = dense_fmt or BF16
    n, mtp = cfg.int("num_hidden_layers"), cfg.int("num_nextn_predict_layers", 0)
    layers = _Layers(n, mtp, kind.dense_layers(cfg))
    h, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    dense_att, bf16_att, raw_att = kind.attention(cfg)
    moe_layers = n - layers.dense
    tied = config.get("tie_word_embeddings") is True
    parts = [
        Part(
            name="attention",
            kind=PartKind.ATTENTION,
            linear=tuple((n, a, b) for a, b in dense_att),
            fmt=fmt,
            raw_bytes=n * raw_att,
        ),
        Part(name="attention (bf16 parts)", kind=PartKind.ATTENTION, linear=tuple((n, a, b) for a, b in bf16_att)),
        Part(
            name="router", kind=PartKind.ROUTER, linear=((moe_layers, experts, h),), raw_bytes=moe_layers * 4 * experts
        ),
        Part(
            name="embeddings (tied: also the LM head)" if tied else "embeddings",
            kind=PartKind.EMBEDDING,
            linear=((1, vocab, h),),
        ),
        Part(name="norms", kind=PartKind.NORM, raw_bytes=2 * h * (2 * n + 1)),
    ]
    if not tied:
        parts.append(Part(name="LM head", kind=PartKind.HEAD, linear=((1, vocab, h),)))
    if shared is not None and shared[0]:
        count, sh, si = shared
        parts.append(
            Part(
                name="shared experts",
                kind=PartKind.SHARED_EXPERTS,
                linear=((moe_layers, count * si, sh), (2 * moe_layers, sh, count * si)),
                fmt=fmt,
            )
        )
    if layers.dense:
        inter = cfg.int("intermediate_size")
        parts.append(
            Part(
                name="dense MLP layers",
                kind=PartKind.DENSE_MLP,
                linear=((2 * layers.dense, inter, h), (layers.dense, h, inter)),
                fmt=fmt,
            )
        )
    if kind.extra is not None:
        parts += kind.extra(cfg, _Layers(n, 0, layers.dense))
    if mtp:
        mtp_linear = tuple((mtp, a, b) for a, b in dense_att)
        mtp_parts = [
            Part(
                name="MTP attention",
                kind=PartKind.ATTENTION,
                linear=mtp_linear,
                fmt=fmt,
                raw_bytes=mtp * raw_att,
                mtp=True,
            )
        ]
        if kind.mtp_embeds:
            mtp_parts.append(
                Part(name="MTP input projection", kind=PartKind.OTHER, linear=((mtp, h, 2 * h),), fmt=fmt, mtp=True)
            )
        mtp_parts.append(Part(name="MTP router", kind=PartKind.ROUTER, linear=((mtp, experts, h),), mtp=True))
        if shared is not None and shared[0]:
            count, sh, si = shared
            mtp_parts.append(
                Part(
                    name="MTP shared experts",
                    kind=PartKind.SHARED_EXPERTS,
                    linear=((mtp, count * si, sh), (2 * mtp, sh, count * si)),
                    fmt=fmt,
                    mtp=True,
                )
            )
        parts += mtp_parts
    per_token, fixed, formula = kind.kv(cfg, layers)
    max_ctx = config.get("max_position_embeddings")
    return Footprint(
        parts=tuple(p for p in parts if p.linear or p.raw_bytes),
        kv_bytes_per_token=per_token,
        kv_bytes_fixed=fixed,
        kv_formula=formula,
        max_context=max_ctx if isinstance(max_ctx, int) and not isinstance(max_ctx, bool) and max_ctx > 0 else None,
        source=kind.source,
    )
