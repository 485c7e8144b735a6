"""Reading a footprint: :func:`read_footprint` from the raw ``config.json`` and the description the family reader
derived (its layer schedule, its shared experts), through the family's table entry (:mod:`.footprint`), into a
:class:`~moe_oracle.model.types.Footprint`: one part per kind of weight and the KV bytes per token.
"""

from __future__ import annotations

from typing import Any

from moe_oracle.model.footprint import ATTENTION_KINDS, AttentionKind, Formats
from moe_oracle.model.footprint_shapes import Att, Cfg, Layers
from moe_oracle.model.types import (
    MAX_LAYERS,
    ActivationKind,
    Footprint,
    ModelDescription,
    MoELayerGroup,
    Part,
    PartKind,
    QuantSpec,
)

_WRAPPERS = ("text_config", "llm_config", "language_config")


def checkpoint_kv_fp8(config: dict[str, Any], hf_quant_config: object = None) -> bool:
    """Whether the checkpoint states an FP8 KV cache (compressed-tensors ``kv_cache_scheme`` of 8-bit floats,
    ModelOpt ``kv_cache_quant_algo: FP8``)."""
    inner = hf_quant_config.get("quantization") if isinstance(hf_quant_config, dict) else None
    for holder in (config.get("quantization_config"), hf_quant_config, inner):
        if not isinstance(holder, dict):
            continue
        scheme = holder.get("kv_cache_scheme")
        if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type", "float") == "float":
            return True
        if str(holder.get("kv_cache_quant_algo", "")).upper() == "FP8":
            return True
    return False


def language_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's keys: the first wrapper (``text_config``...) that is an object, else the config."""
    for key in _WRAPPERS:
        inner = config.get(key)
        if isinstance(inner, dict):
            return inner
    return config


def entry_for(config: dict[str, Any]) -> AttentionKind | None:
    """The table entry of ``config``: by the language model's ``model_type``, then the top-level one."""
    for holder in (language_config(config), config):
        kind = ATTENTION_KINDS.get(str(holder.get("model_type")))
        if kind is not None:
            return kind
    return None


def read_footprint(
    config: dict[str, Any], model: ModelDescription, formats: Formats | None = None, *, kv_fp8: bool = False
) -> Footprint | None:
    """The footprint of ``config`` as ``model`` describes its MoE layers (``None`` when its family has no table
    entry or a field the entry needs is missing or malformed: the fit then says it could not weigh the rest).

    ``formats`` gives the non-expert linear weights' storage formats (all bf16 when None); ``kv_fp8`` that the
    checkpoint states an FP8 KV cache (:func:`checkpoint_kv_fp8`).
    """
    kind = entry_for(config)
    if kind is None:
        return None
    try:
        return _read(kind, config, model, formats or Formats(), kv_fp8)
    except (KeyError, TypeError, ValueError, ArithmeticError, IndexError):
        return None  # a field the footprint needs is missing or malformed: the fit says it could not weigh it


def _attention_kinds(cfg: Cfg, kind: AttentionKind, n: int) -> tuple[str, ...]:
    """Each main layer's attention kind, from the config: ``layer_types``, else ``full_attention_interval``
    (hybrid families), else Llama-4's ``no_rope_layers`` / ``attention_chunk_size``, else all full."""
    names = {"full_attention": "full", "sliding_attention": "sliding", "linear_attention": "linear"}
    if kind.block_pattern:
        blocks = cfg.c.get(kind.block_pattern)
        kinds = {"*": "full", "M": "linear", "E": "moe", "-": "mlp"}
        if not isinstance(blocks, str) or len(blocks) < n or any(b not in kinds for b in blocks[:n]):
            raise ValueError(kind.block_pattern)
        return tuple(kinds[b] for b in blocks[:n])
    if kind.layer_pattern:
        pattern = cfg.list(kind.layer_pattern)
        if len(pattern) < n or any(p not in (0, 1) or isinstance(p, bool) for p in pattern[:n]):
            raise ValueError(kind.layer_pattern)
        return tuple("sliding" if p == 1 else "full" for p in pattern[:n])
    types = cfg.list("layer_types")
    if types:
        if len(types) < n or any(t not in names for t in types[:n]):
            raise ValueError("layer_types")
        return tuple(names[t] for t in types[:n])
    if kind.linear is not None:
        every = cfg.int("full_attention_interval")
        if every == 0:
            raise ValueError("full_attention_interval")
        return tuple("full" if (i + 1) % every == 0 else "linear" for i in range(n))
    if cfg.int("attention_chunk_size", 0):
        rope = cfg.list("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]
        if len(rope) < n:
            raise ValueError("no_rope_layers")
        return tuple("chunked" if rope[i] else "full" for i in range(n))
    return ("full",) * n


def _attention_groups(kind: AttentionKind, cfg: Cfg, layers: Layers) -> list[tuple[int, Att, int]]:
    """``(layers, one layer's attention, sink bytes of those layers)`` over the main model's attention layers (all
    but linear-attention ones), one entry per query-head count when ``kind.heads_per_layer`` lists them."""
    indices = [i for i, k in enumerate(layers.kinds or ("full",) * layers.n) if k in ("full", "sliding", "chunked")]
    per = cfg.list(kind.heads_per_layer) if kind.heads_per_layer else []
    sinks = bool(kind.sliding_sinks) and cfg.flag(kind.sliding_sinks)
    if kind.sliding is not None:
        sliding = sum(1 for i in indices if layers.kinds[i] == "sliding")
        return [(len(indices) - sliding, kind.attention(cfg), 0), (sliding, kind.sliding(cfg), 0)]
    if not per and not sinks:
        return [(len(indices), kind.attention(cfg), 0)]
    if per and (len(per) < layers.n or any(isinstance(x, bool) or not isinstance(x, int) or x <= 0 for x in per)):
        raise ValueError(kind.heads_per_layer)
    counts: dict[tuple[int, bool], int] = {}
    for i in indices:
        heads = per[i] if per else cfg.int("num_attention_heads")
        key = (heads, sinks and layers.kinds[i] == "sliding")
        counts[key] = counts.get(key, 0) + 1
    return [
        (count, kind.attention(Cfg({**cfg.c, "num_attention_heads": heads})), count * 2 * heads if sink else 0)
        for (heads, sink), count in sorted(counts.items())
    ]


def _shared_parts(group: MoELayerGroup, layers: int, fmt: QuantSpec, h: int, prefix: str, mtp: bool) -> list[Part]:
    """The shared experts of ``layers`` MoE layers (and the per-token gate in front of them, Qwen)."""
    if not group.num_shared_experts or not layers:
        return []
    width = group.shared_expert_width or group.num_shared_experts * group.moe_intermediate_size
    up = 1 if group.activation.kind is ActivationKind.RELU2 else 2  # a squared-ReLU expert has no gate half
    parts = [
        Part(
            name=f"{prefix}shared experts",
            kind=PartKind.SHARED_EXPERTS,
            linear=((layers, width, h), ((up - 1) * layers, width, h), (layers, h, width)),
            fmt=group.shared_expert_quant or fmt,
            mtp=mtp,
        )
    ]
    if group.shared_expert_gate:
        parts.append(
            Part(
                name=f"{prefix}shared-expert gate", kind=PartKind.SHARED_EXPERT_GATE, linear=((layers, 1, h),), mtp=mtp
            )
        )
    return parts


def _read(
    kind: AttentionKind, config: dict[str, Any], model: ModelDescription, formats: Formats, kv_fp8: bool
) -> Footprint:
    cfg = Cfg(language_config(config))
    main = model.main_group
    n = cfg.int("num_hidden_layers")
    if n > MAX_LAYERS:  # the model reader's bound: a larger count is malformed, never weighed layer by layer
        raise KeyError("num_hidden_layers")
    moe_layers = sum(len(g.layers) for g in model.layer_groups if g.role not in ("mtp", "draft"))
    mtp_groups = [g for g in model.layer_groups if g.role == "mtp"]
    mtp = sum(len(g.layers) for g in mtp_groups) or next((cfg.int(k, 0) for k in kind.mtp_keys if k in cfg.c), 0)
    kinds = _attention_kinds(cfg, kind, n)
    if kind.block_pattern and cfg.c.get("moe_latent_size") is not None:
        raise KeyError("moe_latent_size")  # latent MoE projections (vLLM nemotron_h.py:198-213): not weighed here
    dense = sum(1 for k in kinds if k == "mlp") if kind.block_pattern else max(0, n - moe_layers)
    layers = Layers(n, mtp, dense, kinds)
    h, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    experts = main.num_experts
    full_att = kind.attention(cfg)
    groups = _attention_groups(kind, cfg, layers)
    att_fmt = formats.attention
    parts = [
        Part(
            name="attention",
            kind=PartKind.ATTENTION,
            linear=tuple((count, a, b) for count, att, _ in groups for a, b in att[0]),
            fmt=att_fmt,
            raw_bytes=sum(count * att[2] + sinks for count, att, sinks in groups),
        ),
        Part(
            name="attention (bf16 parts)",
            kind=PartKind.ATTENTION,
            linear=tuple((count, a, b) for count, att, _ in groups for a, b in att[1]),
        ),
    ]
    if kind.linear is not None and layers.count("linear"):
        lin, lin_bf16, lin_raw = kind.linear(cfg)
        count = layers.count("linear")
        parts.append(
            Part(
                name="linear attention",
                kind=PartKind.ATTENTION,
                linear=tuple((count, a, b) for a, b in lin) + tuple((count, a, b) for a, b in lin_bf16),
                fmt=att_fmt,
                raw_bytes=count * lin_raw,
            )
        )
    router_fp32 = bool(kind.router_dtype) and cfg.c.get(kind.router_dtype, "float32") in ("float32", "fp32")
    parts.append(
        Part(
            name="router",
            kind=PartKind.ROUTER,
            linear=() if router_fp32 else ((moe_layers, experts, h),),
            raw_bytes=moe_layers * (kind.router_bias * experts + (4 * experts * h if router_fp32 else 0)),
        )
    )
    tied = config.get("tie_word_embeddings") is True or cfg.c.get("tie_word_embeddings") is True
    parts.append(
        Part(
            name="embeddings (tied: also the LM head)" if tied else "embeddings",
            kind=PartKind.EMBEDDING,
            linear=((1, vocab, h),),
        )
    )
    per_layer = 1 if kind.block_pattern else kind.norms_per_layer  # one norm per block (Nemotron-H)
    parts.append(Part(name="norms", kind=PartKind.NORM, raw_bytes=2 * h * (per_layer * n + 1)))
    if not tied:
        parts.append(Part(name="LM head", kind=PartKind.HEAD, linear=((1, vocab, h),)))
    parts += _shared_parts(main, moe_layers, formats.dense_mlp, h, "", mtp=False)
    if main.expert_bias:
        parts.append(_expert_biases(main, moe_layers, "routed-expert biases", mtp=False))
    if layers.dense:
        inter = cfg.int(kind.dense_width)
        up = 1 if main.activation.kind is ActivationKind.RELU2 else 2
        parts.append(
            Part(
                name="dense MLP layers",
                kind=PartKind.DENSE_MLP,
                linear=((up * layers.dense, inter, h), (layers.dense, h, inter)),
                fmt=formats.dense_mlp,
            )
        )
    if kind.parallel_mlp and moe_layers:
        inter = cfg.int(kind.parallel_mlp)
        parts.append(
            Part(
                name="dense MLP beside the experts",
                kind=PartKind.DENSE_MLP,
                linear=((2 * moe_layers, inter, h), (moe_layers, h, inter)),
                fmt=formats.dense_mlp,
            )
        )
    if kind.extra is not None:
        parts += kind.extra(cfg, Layers(n, 0, layers.dense))
    if mtp:
        parts += _mtp_parts(kind, full_att, mtp, mtp_groups, main, formats, h)
    notes = list(kind.notes) + ([kind.mtp_note] if kind.mtp_note and not mtp else [])
    vision = config.get("vision_config")
    if isinstance(vision, dict):
        if kind.vision is None:
            notes.append("the vision tower (vision_config) is not counted: no table entry weighs it")
        else:
            parts.append(kind.vision(vision))
    per_token, fixed, formula = kind.kv(cfg, layers, 1 if kv_fp8 else 2)
    max_ctx = cfg.c.get("max_position_embeddings")
    return Footprint(
        parts=tuple(p for p in parts if p.linear or p.raw_bytes),
        kv_bytes_per_token=per_token,
        kv_bytes_fixed=fixed,
        kv_formula=formula,
        max_context=max_ctx if isinstance(max_ctx, int) and not isinstance(max_ctx, bool) and max_ctx > 0 else None,
        source=kind.source,
        notes=tuple(notes),
    )


def _expert_biases(group: MoELayerGroup, layers: int, name: str, *, mtp: bool) -> Part:
    """Biases on the routed experts' projections (gpt-oss: gate_up ``[2I]`` and down ``[H]`` per expert, bf16)."""
    per_expert = 2 * group.moe_intermediate_size + group.hidden_size
    return Part(name=name, kind=PartKind.ROUTED_EXPERTS, raw_bytes=2 * layers * group.num_experts * per_expert, mtp=mtp)


def _mtp_parts(
    kind: AttentionKind,
    att: Att,
    mtp: int,
    groups: list[MoELayerGroup],
    main: MoELayerGroup,
    formats: Formats,
    h: int,
) -> list[Part]:
    """The MTP layers: a full-attention layer each with its router and shared experts, the input projection
    ``[H, 2H]``, and, when the description has no MTP layer group (Qwen3.5), their routed experts."""
    dense_att, _, raw_att = att
    group = groups[0] if groups else main
    parts = [
        Part(
            name="MTP attention",
            kind=PartKind.ATTENTION,
            linear=tuple((mtp, a, b) for a, b in dense_att),
            fmt=formats.mtp,
            raw_bytes=mtp * raw_att,
            mtp=True,
        )
    ]
    if kind.mtp_embeds:
        parts.append(
            Part(
                name="MTP input projection",
                kind=PartKind.OTHER,
                linear=((mtp, h, 2 * h),),
                fmt=formats.mtp_projection,
                mtp=True,
            )
        )
    parts.append(Part(name="MTP router", kind=PartKind.ROUTER, linear=((mtp, group.num_experts, h),), mtp=True))
    parts += _shared_parts(group, mtp, formats.mtp, h, "MTP ", mtp=True)
    if not groups:
        expert_fmt = formats.mtp_experts or main.weight_quant
        experts = main.model_copy(update={"weight_quant": expert_fmt})
        parts.append(
            Part(
                name="MTP routed experts",
                kind=PartKind.ROUTED_EXPERTS,
                raw_bytes=mtp * experts.num_experts * experts.expert_weight_bytes(),
                mtp=True,
            )
        )
    return parts
