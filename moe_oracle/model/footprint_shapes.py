"""The per-layer shapes a footprint entry weighs, read from ``config.json`` fields: attention weights (MLA with
the DSA indexer, DeepSeek V4, MHA/GQA with its options, asymmetric and Gemma-4 attention, Gated DeltaNet and
Mamba-2 mixers), the extra parts of some families, the KV bytes one token costs, and vision towers.

:mod:`moe_oracle.model.footprint` names, per family, which of these its entry uses. Units: element counts and
bytes; a missing or malformed required field raises ``KeyError`` (the reader turns it into "no footprint").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from moe_oracle.model.types import (
    Part,
    PartKind,
)

#: ``(linear matrices [N, K] in the attention format, bf16 matrices, raw bytes)`` of one layer.
Att = tuple[list[tuple[int, int]], list[tuple[int, int]], int]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Cfg:
    """Fields of a config with defaults; a missing or malformed required field raises KeyError."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.c = config

    def int(self, key: str, default: int | None = None) -> int:
        value = self.c.get(key, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise KeyError(key)
        return value

    def flag(self, spec: str | bool) -> bool:
        """A fixed option (``bool``) or a boolean config key (absent: False)."""
        if isinstance(spec, bool):
            return spec
        value = self.c.get(spec, False)
        if not isinstance(value, bool):
            raise KeyError(spec)
        return value

    def list(self, key: str) -> list[Any]:
        value = self.c.get(key)
        return value if isinstance(value, list) else []


@dataclass(frozen=True)
class Layers:
    """Which layers exist: ``n`` main layers, ``mtp`` extra MTP layers, ``dense`` main layers with a dense MLP,
    ``kinds`` the attention kind of each main layer (``full``, ``sliding``, ``chunked``, ``linear``)."""

    n: int
    mtp: int
    dense: int
    kinds: tuple[str, ...] = ()

    def count(self, kind: str) -> int:
        return sum(1 for k in self.kinds if k == kind)


# --- attention shapes (per layer) ----------------------------------------------------------------------------------


def mla_dsa(cfg: Cfg) -> Att:
    """DeepSeek-V3 MLA (``q_lora_rank`` 0/absent: one ``q_proj``), with the DSA lightning indexer when
    ``index_n_heads`` is set (DeepSeek V3.2, GLM-5.x ``glm_moe_dsa``)."""
    h, nh = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    q_lora, kv_lora = cfg.int("q_lora_rank", 0), cfg.int("kv_lora_rank")
    nope, rope, v = cfg.int("qk_nope_head_dim"), cfg.int("qk_rope_head_dim"), cfg.int("v_head_dim")
    q = [(q_lora, h), (nh * (nope + rope), q_lora)] if q_lora else [(nh * (nope + rope), h)]
    dense = [*q, (kv_lora + rope, h), (nh * (nope + v), kv_lora), (h, nh * v)]
    bf16: list[tuple[int, int]] = []
    ih, ihd = cfg.int("index_n_heads", 0), cfg.int("index_head_dim", 0)
    if ih:
        dense += [(ih * ihd, q_lora), (ihd, h)]
        bf16 += [(ih, h)]
    return dense, bf16, 2 * (q_lora + kv_lora + 2 * ihd)


def dsv4(cfg: Cfg) -> Att:
    """DeepSeek V4 attention: one latent KV head, grouped low-rank output (``o_groups`` x ``o_lora_rank``)."""
    h, nh, hd = cfg.int("hidden_size"), cfg.int("num_attention_heads"), cfg.int("head_dim")
    q_lora, groups, o_lora = cfg.int("q_lora_rank"), cfg.int("o_groups"), cfg.int("o_lora_rank")
    if groups == 0:
        raise KeyError("o_groups")
    dense = [(q_lora, h), (nh * hd, q_lora), (hd, h), (groups * o_lora, nh * hd // groups), (h, groups * o_lora)]
    return dense, [], 4 * nh + 2 * (q_lora + hd)


def head_dim_of(cfg: Cfg) -> int:
    nh = cfg.int("num_attention_heads")
    if nh == 0:
        raise KeyError("num_attention_heads")
    return cfg.int("head_dim", cfg.int("hidden_size") // nh)


@dataclass(frozen=True)
class Gqa:
    """Multi-head / grouped-query attention: ``q_proj [H_q*d, H]``, ``k_proj``/``v_proj [H_kv*d, H]``,
    ``o_proj [H, H_q*d]`` with ``d`` = ``head_dim`` (else hidden/heads). Each option is fixed (bool) or a
    boolean config key: ``qkv_bias`` (q/k/v biases), ``o_bias``, ``qk_norm`` (RMSNorm over one head's ``d``),
    ``qk_norm_full`` (over all heads: MiniMax-M2), ``output_gate`` (a sigmoid gate as wide as the output
    doubles ``q_proj``: Qwen3-Next, Qwen3.5 ``attn_output_gate``), ``sinks`` (one learned logit per head:
    gpt-oss), ``head_gate`` (a config key: a separate gate projection ``g_proj``, ``[H_q, H]`` when the key is
    true or ``per-head``, ``[H_q*d, H]`` for any other value: Laguna ``gating``). Partial rotary changes no
    weight."""

    qkv_bias: str | bool = False
    o_bias: str | bool = False
    qk_norm: str | bool = False
    qk_norm_full: bool = False
    output_gate: str | bool = False
    sinks: bool = False
    head_gate: str = ""

    def __call__(self, cfg: Cfg) -> Att:
        h, nh, nkv, d = cfg.int("hidden_size"), cfg.int("num_attention_heads"), kv_heads(cfg), head_dim_of(cfg)
        q_rows = nh * d * (2 if cfg.flag(self.output_gate) else 1)
        dense = [(q_rows, h), (nkv * d, h), (nkv * d, h), (h, nh * d)]
        gate = cfg.c.get(self.head_gate) if self.head_gate else None
        if gate is True or gate == "per-head":  # vLLM laguna.py:331-347: g_out = heads, or heads x head_dim
            dense.append((nh, h))
        elif gate not in (None, False):
            dense.append((nh * d, h))
        raw = 2 * (nh * d + 2 * nkv * d) if cfg.flag(self.qkv_bias) else 0
        raw += 2 * h if cfg.flag(self.o_bias) else 0
        if self.qk_norm_full and cfg.flag(self.qk_norm):
            raw += 2 * (nh * d + nkv * d)
        elif cfg.flag(self.qk_norm):
            raw += 2 * 2 * d
        raw += 2 * nh if self.sinks else 0
        return dense, [], raw


def asymmetric(cfg: Cfg, prefix: str) -> Att:
    """MHA/GQA whose V head is narrower than its QK head (MiMo-V2, vLLM mimo_v2.py MiMoV2Attention:
    ``qkv_proj`` with ``v_head_size``, ``o_proj [H, heads x v_head_dim]``, no q/k norms); ``prefix`` picks the
    layer kind's keys (``swa_`` for the sliding-window layers), whose attention-sink logits (bf16, one per head)
    ``add_swa_attention_sink_bias`` turns on."""
    h, nh = cfg.int("hidden_size"), cfg.int(f"{prefix}num_attention_heads")
    nkv, d = cfg.int(f"{prefix}num_key_value_heads"), cfg.int(f"{prefix}head_dim")
    v = cfg.int(f"{prefix}v_head_dim", d)
    dense = [(nh * d, h), (nkv * d, h), (nkv * v, h), (h, nh * v)]
    raw = 2 * (nh * d + nkv * d + nkv * v) if cfg.flag("attention_bias") else 0
    raw += 2 * nh if prefix and cfg.flag("add_swa_attention_sink_bias") else 0
    return dense, [], raw


def kv_asymmetric(cfg: Cfg, layers: Layers, kv_bytes: int) -> tuple[int, int, str]:
    """K (QK head) and V (its own head) of every KV head: full layers per token, sliding-window layers at most
    ``sliding_window_size`` tokens per sequence."""

    def entry(prefix: str) -> tuple[int, int, int]:
        nkv, d = cfg.int(f"{prefix}num_key_value_heads"), cfg.int(f"{prefix}head_dim")
        return nkv, d, cfg.int(f"{prefix}v_head_dim", d)

    (nkv, d, v), (snkv, sd, sv) = entry(""), entry("swa_")
    full, sliding = layers.count("full"), layers.count("sliding")
    window = cfg.int("sliding_window_size", cfg.int("sliding_window", 0))
    dtype = "fp8 (the checkpoint's kv-cache scheme)" if kv_bytes == 1 else "bf16, the engines' default kv-cache dtype"
    formula = (
        f"{full} full-attention layers x {nkv} KV heads x (K {d} + V {v}) x {kv_bytes} B ({dtype}); fixed: "
        f"{sliding} sliding-window layers x {window} tokens x {snkv} KV heads x (K {sd} + V {sv})"
    )
    return full * nkv * (d + v) * kv_bytes, sliding * window * snkv * (sd + sv) * kv_bytes, formula


def kv_heads(cfg: Cfg) -> int:
    return cfg.int("num_key_value_heads", cfg.int("num_attention_heads"))


def gated_deltanet(cfg: Cfg) -> Att:
    """Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): ``in_proj_qkvz [2*Kd + 2*Vd, H]`` (Qwen3.5 splits
    it into ``in_proj_qkv`` + ``in_proj_z``, same total), ``in_proj_ba [2*Hv, H]``, ``out_proj [H, Vd]``; a
    depthwise conv over q, k, v (``linear_conv_kernel_dim`` taps), ``dt_bias`` and ``A_log`` per value head, and
    a gated RMSNorm over one value head."""
    h = cfg.int("hidden_size")
    hk, dk = cfg.int("linear_num_key_heads"), cfg.int("linear_key_head_dim")
    hv, dv = cfg.int("linear_num_value_heads"), cfg.int("linear_value_head_dim")
    kd, vd = hk * dk, hv * dv
    conv = (2 * kd + vd) * cfg.int("linear_conv_kernel_dim")
    return [(2 * kd + 2 * vd, h), (h, vd)], [(2 * hv, h)], 2 * (conv + 2 * hv + dv)


def deltanet_state_bytes(cfg: Cfg) -> int:
    """One sequence's recurrent state in one linear-attention layer: the conv window (kernel - 1 steps of q, k, v,
    bf16) and the delta-rule state (value heads x Dk x Dv, fp32 when ``mamba_ssm_dtype`` says float32, else bf16)."""
    hk, dk = cfg.int("linear_num_key_heads"), cfg.int("linear_key_head_dim")
    hv, dv = cfg.int("linear_num_value_heads"), cfg.int("linear_value_head_dim")
    ssm = 4 if cfg.c.get("mamba_ssm_dtype") == "float32" else 2
    conv = 2 * (2 * hk * dk + hv * dv) * (cfg.int("linear_conv_kernel_dim") - 1)
    return conv + ssm * hv * dk * dv


def gemma4_heads(cfg: Cfg, full: bool) -> tuple[int, int]:
    """``(KV heads, head dim)`` of a Gemma-4 layer: full-attention layers take ``global_head_dim`` (default 512)
    and, unless ``attention_k_eq_v`` is false, ``num_global_key_value_heads`` (transformers
    ``configuration_gemma4.py:210-222``, ``per_layer_config``)."""
    if not full:
        return kv_heads(cfg), head_dim_of(cfg)
    kv = kv_heads(cfg)
    if cfg.c.get("attention_k_eq_v", True) is not False and cfg.c.get("num_global_key_value_heads") is not None:
        kv = cfg.int("num_global_key_value_heads")
    return kv, cfg.int("global_head_dim", 512)


def gemma4_attention(cfg: Cfg, *, full: bool) -> Att:
    """One Gemma-4 layer (vLLM 0.33 gemma4.py Gemma4Attention): q/k/v/o at the layer's head dim and KV heads (a
    k_eq_v layer's K is loaded into both the K and the V slots, so V is held too), q and k norms over one head
    (v's has no weight), biases when ``attention_bias``."""
    for key in ("num_kv_shared_layers", "hidden_size_per_layer_input"):
        if cfg.int(key, 0):  # layers that reuse another's KV, per-layer input embeddings: not weighed here
            raise KeyError(key)
    h, nh = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    nkv, d = gemma4_heads(cfg, full)
    dense = [(nh * d, h), (nkv * d, h), (nkv * d, h), (h, nh * d)]
    raw = 2 * 2 * d + (2 * (nh * d + 2 * nkv * d + h) if cfg.flag("attention_bias") else 0)
    return dense, [], raw


def kv_gemma4(cfg: Cfg, layers: Layers, kv_bytes: int) -> tuple[int, int, str]:
    """K and V per token on the full-attention layers (their own KV heads and head dim); the sliding-window layers
    hold at most ``sliding_window`` tokens."""
    (gkv, gd), (skv, sd) = gemma4_heads(cfg, True), gemma4_heads(cfg, False)
    full, sliding = layers.count("full"), layers.count("sliding")
    window = cfg.int("sliding_window")
    formula = (
        f"{full} full-attention layers x 2 (K, V) x {gkv} KV heads x {gd} x {kv_bytes} B; fixed: {sliding} "
        f"sliding-window layers x {window} tokens x 2 x {skv} KV heads x {sd}"
    )
    return full * 2 * gkv * gd * kv_bytes, sliding * window * 2 * skv * sd * kv_bytes, formula


def gemma4_extra(cfg: Cfg, layers: Layers) -> list[Part]:
    """Gemma-4's router input scale ``[H]`` and per-expert output scale ``[E]`` (Gemma4Router), and each layer's
    ``layer_scalar`` buffer, bf16."""
    h, experts = cfg.int("hidden_size"), cfg.int("num_experts")
    moe = layers.n - layers.dense
    return [
        Part(name="router scales", kind=PartKind.ROUTER, raw_bytes=moe * 2 * (h + experts)),
        Part(name="layer scalars", kind=PartKind.OTHER, raw_bytes=2 * layers.n),
    ]


def mamba2(cfg: Cfg) -> Att:
    """One Mamba-2 mixer (vLLM 0.33 ``layers/mamba/mamba_mixer2.py``, Nemotron-H): ``in_proj [2I + 2GN + heads, H]``
    and ``out_proj [H, I]`` in the checkpoint's format (I = ``mamba_num_heads x mamba_head_dim``, G ``n_groups``,
    N ``ssm_state_size``); the depthwise ``conv1d`` over ``I + 2GN`` channels (``conv_kernel`` taps, bias when
    ``use_conv_bias``) unquantized; ``A`` fp32, ``D`` and ``dt_bias`` per head and the gated norm over I, bf16."""
    h, heads, hd = cfg.int("hidden_size"), cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim")
    inner, gn = heads * hd, cfg.int("n_groups") * cfg.int("ssm_state_size")
    conv = inner + 2 * gn
    raw = 2 * conv * cfg.int("conv_kernel") + (2 * conv if cfg.flag("use_conv_bias") else 0)
    raw += 4 * heads + 2 * 2 * heads + 2 * inner
    if cfg.flag("use_bias"):
        raw += 2 * (2 * inner + 2 * gn + heads) + 2 * h
    return [(2 * inner + 2 * gn + heads, h), (h, inner)], [], raw


def mamba2_state_bytes(cfg: Cfg) -> int:
    """One sequence's state in one Mamba-2 layer (vLLM ``mamba_utils.py`` ``mamba2_state_shape``): the conv window
    (``conv_kernel - 1`` steps of ``I + 2GN`` channels, bf16) and the SSM state (heads x head_dim x N, fp32 when
    ``mamba_ssm_cache_dtype`` says float32, else bf16)."""
    heads, hd, n = cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim"), cfg.int("ssm_state_size")
    conv = heads * hd + 2 * cfg.int("n_groups") * n
    ssm = 4 if cfg.c.get("mamba_ssm_cache_dtype") == "float32" else 2
    return 2 * conv * (cfg.int("conv_kernel") - 1) + ssm * heads * hd * n


def kv_mamba_hybrid(cfg: Cfg, layers: Layers, kv_bytes: int) -> tuple[int, int, str]:
    """GQA KV on the attention layers, plus each Mamba-2 layer's fixed state per sequence."""
    attention_only = replace(layers, kinds=tuple(k for k in layers.kinds if k != "linear"))
    per_token, fixed, formula = kv_gqa(cfg, attention_only, kv_bytes)
    state, mamba = mamba2_state_bytes(cfg), layers.count("linear")
    return per_token, fixed + mamba * state, formula + f"; fixed: {mamba} Mamba-2 layers x {state:,} B of state"


def dsv4_extra(cfg: Cfg, layers: Layers) -> list[Part]:
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


def kv_mla(cfg: Cfg, layers: Layers, kv_bytes: int) -> tuple[int, int, str]:
    kv_lora, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
    ihd = cfg.int("index_head_dim", 0) if cfg.int("index_n_heads", 0) else 0
    per_layer = 2 * (kv_lora + rope) + (ihd + 4 if ihd else 0)
    formula = (
        f"{layers.n} layers x (2 bytes x (kv_lora_rank {kv_lora} + rope {rope})"
        + (f" + indexer key {ihd} fp8 + 4-byte scale" if ihd else "")
        + ") (bf16 latent cache, the engines' default kv-cache dtype)"
    )
    return layers.n * per_layer, 0, formula


def kv_dsv4(cfg: Cfg, layers: Layers, kv_bytes: int) -> tuple[int, int, str]:
    """V4 caches one compressed entry per ``ratio`` tokens on ratio>0 layers (plus the indexer's keys on
    ratio-4 layers) and a ``sliding_window`` of raw entries on every layer; an entry is fp8 for the
    no-rope part with a scale per 64 and bf16 for the rope part."""
    hd, rope = cfg.int("head_dim"), cfg.int("qk_rope_head_dim")
    window, ihd = cfg.int("sliding_window", 0), cfg.int("index_head_dim", 0)
    entry = (hd - rope) + 2 * rope + 4 * cdiv(hd - rope, 64)
    per_token = 0.0
    for ratio in cfg.list("compress_ratios")[: layers.n]:
        if isinstance(ratio, int) and ratio > 0:
            per_token += entry / ratio + ((ihd + 4) / ratio if ratio == 4 and ihd else 0)
    formula = (
        f"sum over layers with compress ratio r > 0 of ({entry} B/r), plus indexer keys ({ihd}+4 B)/4 on ratio-4 "
        f"layers; fixed: {layers.n} sliding windows of {window} entries"
    )
    return int(per_token + 0.999), layers.n * window * entry, formula


def kv_gqa(cfg: Cfg, layers: Layers, kv_bytes: int) -> tuple[int, int, str]:
    """K and V of every KV head on full (and chunked) layers per token; sliding-window layers hold at most
    ``sliding_window`` tokens and linear-attention layers a fixed recurrent state, per sequence."""
    d, nkv = head_dim_of(cfg), kv_heads(cfg)
    entry = 2 * nkv * d * kv_bytes
    full, chunked = layers.count("full"), layers.count("chunked")
    sliding, linear = layers.count("sliding"), layers.count("linear")
    dtype = "fp8 (the checkpoint's kv-cache scheme)" if kv_bytes == 1 else "bf16, the engines' default kv-cache dtype"
    formula = f"{full + chunked} attention layers x 2 (K, V) x {nkv} KV heads x {d} x {kv_bytes} B ({dtype})"
    if chunked:
        formula += f"; {chunked} of them chunked-local (attention_chunk_size), counted as full (engines page them so)"
    fixed = 0
    if sliding:
        window = cfg.int("sliding_window")
        fixed += sliding * window * entry
        formula += f"; fixed: {sliding} sliding-window layers x {window} tokens"
    if linear:
        state = deltanet_state_bytes(cfg)
        fixed += linear * state
        formula += f"; fixed: {linear} linear-attention layers x {state:,} B of recurrent state"
    return (full + chunked) * entry, fixed, formula


# --- vision towers ------------------------------------------------------------------------------------------------


def qwen3_vl_vision(vision: dict[str, Any]) -> Part:
    """Qwen3-VL / Qwen3.5 vision tower (HF ``Qwen3VLVisionModel``): a Conv3d patch embedding, learned position
    embeddings, ``depth`` pre-LayerNorm blocks (qkv, proj, fc1, fc2 with biases), a patch merger over
    ``spatial_merge_size``^2 patches and one more per ``deepstack_visual_indexes`` entry; bf16."""
    cfg = Cfg(vision)
    h, inner, depth = cfg.int("hidden_size"), cfg.int("intermediate_size"), cfg.int("depth")
    out, merge = cfg.int("out_hidden_size"), cfg.int("spatial_merge_size")
    patch = cfg.int("in_channels", 3) * cfg.int("temporal_patch_size") * cfg.int("patch_size") ** 2
    merged = h * merge * merge
    mergers = 1 + len(cfg.list("deepstack_visual_indexes"))
    linear = [(1, h, patch), (1, cfg.int("num_position_embeddings"), h)]
    linear += [(depth, 3 * h, h), (depth, h, h), (depth, inner, h), (depth, h, inner)]
    linear += [(mergers, merged, merged), (mergers, out, merged)]
    bias = h + depth * (3 * h + h + inner + h + 4 * h) + mergers * (merged + out)
    norms = 2 * h + (mergers - 1) * 2 * merged  # the main merger's LayerNorm spans one patch, deepstack ones all
    return Part(name="vision tower", kind=PartKind.VISION, linear=tuple(linear), raw_bytes=2 * (bias + norms))
