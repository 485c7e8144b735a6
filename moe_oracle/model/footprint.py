"""What a model holds besides its routed experts: attention, dense MLPs, shared experts, router,
embeddings and head, MTP layers, a vision tower, and the KV cache one token costs.

The MoE description (:class:`~moe_oracle.model.types.MoELayerGroup`) carries the routed experts;
a memory fit needs the rest too. :func:`read_footprint` reads it from the raw ``config.json`` and
the description the family reader derived (its layer schedule: which layers are MoE, which MTP;
its shared experts) into a :class:`Footprint`: one :class:`Part` per kind of weight (element
counts and the format they are stored in) and the KV bytes per token.

Families are table entries (:data:`ATTENTION_KINDS`, keyed by ``model_type``, the language
model's first): an entry names the attention shape (MLA, DeepSeek V4, or MHA/GQA with its
options), the router's bias, the dense-MLP width key and the source it was read from; which
layers are full, sliding-window, chunked or linear attention comes from the config itself
(``layer_types``, ``full_attention_interval``, ``no_rope_layers``). A config whose family is not
in the table, or that lacks a field its entry needs, gets no footprint (``None``), and the fit
then says it could not weigh the rest.

Units: element counts and bytes. Formats are :class:`~moe_oracle.model.types.QuantSpec`; a
linear weight of ``[N, K]`` stored in a block format carries its scales (see
:func:`linear_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from moe_oracle.model.types import (
    BF16,
    ActivationKind,
    Footprint,
    ModelDescription,
    MoELayerGroup,
    Part,
    PartKind,
    QuantSpec,
    linear_bytes,
)

__all__ = [
    "ATTENTION_KINDS",
    "UNWEIGHED",
    "AttentionKind",
    "Footprint",
    "Formats",
    "Part",
    "PartKind",
    "checkpoint_kv_fp8",
    "linear_bytes",
    "read_footprint",
    "unweighed_note",
]

_WRAPPERS = ("text_config", "llm_config", "language_config")
#: ``(linear matrices [N, K] in the attention format, bf16 matrices, raw bytes)`` of one layer.
_Att = tuple[list[tuple[int, int]], list[tuple[int, int]], int]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class _Cfg:
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
class Formats:
    """The storage format of each kind of non-expert linear weight, as the checkpoint's quantization config
    resolves it (the family reader's resolver): ``mtp_experts`` is the MTP layer's routed experts' format
    when the description has no MTP group of its own (Qwen3.5 ``mtp_num_hidden_layers``)."""

    attention: QuantSpec = BF16
    dense_mlp: QuantSpec = BF16
    mtp: QuantSpec = BF16
    mtp_projection: QuantSpec = BF16
    mtp_experts: QuantSpec | None = None


@dataclass(frozen=True)
class _Layers:
    """Which layers exist: ``n`` main layers, ``mtp`` extra MTP layers, ``dense`` main layers with a dense MLP,
    ``kinds`` the attention kind of each main layer (``full``, ``sliding``, ``chunked``, ``linear``)."""

    n: int
    mtp: int
    dense: int
    kinds: tuple[str, ...] = ()

    def count(self, kind: str) -> int:
        return sum(1 for k in self.kinds if k == kind)


# --- attention shapes (per layer) ----------------------------------------------------------------------------------


def _mla_dsa(cfg: _Cfg) -> _Att:
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


def _dsv4(cfg: _Cfg) -> _Att:
    """DeepSeek V4 attention: one latent KV head, grouped low-rank output (``o_groups`` x ``o_lora_rank``)."""
    h, nh, hd = cfg.int("hidden_size"), cfg.int("num_attention_heads"), cfg.int("head_dim")
    q_lora, groups, o_lora = cfg.int("q_lora_rank"), cfg.int("o_groups"), cfg.int("o_lora_rank")
    if groups == 0:
        raise KeyError("o_groups")
    dense = [(q_lora, h), (nh * hd, q_lora), (hd, h), (groups * o_lora, nh * hd // groups), (h, groups * o_lora)]
    return dense, [], 4 * nh + 2 * (q_lora + hd)


def _head_dim(cfg: _Cfg) -> int:
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

    def __call__(self, cfg: _Cfg) -> _Att:
        h, nh, nkv, d = cfg.int("hidden_size"), cfg.int("num_attention_heads"), _kv_heads(cfg), _head_dim(cfg)
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


def _asymmetric(cfg: _Cfg, prefix: str) -> _Att:
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


def _kv_asymmetric(cfg: _Cfg, layers: _Layers, kv_bytes: int) -> tuple[int, int, str]:
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


def _kv_heads(cfg: _Cfg) -> int:
    return cfg.int("num_key_value_heads", cfg.int("num_attention_heads"))


def _gated_deltanet(cfg: _Cfg) -> _Att:
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


def _deltanet_state_bytes(cfg: _Cfg) -> int:
    """One sequence's recurrent state in one linear-attention layer: the conv window (kernel - 1 steps of q, k, v,
    bf16) and the delta-rule state (value heads x Dk x Dv, fp32 when ``mamba_ssm_dtype`` says float32, else bf16)."""
    hk, dk = cfg.int("linear_num_key_heads"), cfg.int("linear_key_head_dim")
    hv, dv = cfg.int("linear_num_value_heads"), cfg.int("linear_value_head_dim")
    ssm = 4 if cfg.c.get("mamba_ssm_dtype") == "float32" else 2
    conv = 2 * (2 * hk * dk + hv * dv) * (cfg.int("linear_conv_kernel_dim") - 1)
    return conv + ssm * hv * dk * dv


def _gemma4_heads(cfg: _Cfg, full: bool) -> tuple[int, int]:
    """``(KV heads, head dim)`` of a Gemma-4 layer: full-attention layers take ``global_head_dim`` (default 512)
    and, unless ``attention_k_eq_v`` is false, ``num_global_key_value_heads`` (transformers
    ``configuration_gemma4.py:210-222``, ``per_layer_config``)."""
    if not full:
        return _kv_heads(cfg), _head_dim(cfg)
    kv = _kv_heads(cfg)
    if cfg.c.get("attention_k_eq_v", True) is not False and cfg.c.get("num_global_key_value_heads") is not None:
        kv = cfg.int("num_global_key_value_heads")
    return kv, cfg.int("global_head_dim", 512)


def _gemma4_attention(cfg: _Cfg, *, full: bool) -> _Att:
    """One Gemma-4 layer (vLLM 0.33 gemma4.py Gemma4Attention): q/k/v/o at the layer's head dim and KV heads (a
    k_eq_v layer's K is loaded into both the K and the V slots, so V is held too), q and k norms over one head
    (v's has no weight), biases when ``attention_bias``."""
    for key in ("num_kv_shared_layers", "hidden_size_per_layer_input"):
        if cfg.int(key, 0):  # layers that reuse another's KV, per-layer input embeddings: not weighed here
            raise KeyError(key)
    h, nh = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    nkv, d = _gemma4_heads(cfg, full)
    dense = [(nh * d, h), (nkv * d, h), (nkv * d, h), (h, nh * d)]
    raw = 2 * 2 * d + (2 * (nh * d + 2 * nkv * d + h) if cfg.flag("attention_bias") else 0)
    return dense, [], raw


def _kv_gemma4(cfg: _Cfg, layers: _Layers, kv_bytes: int) -> tuple[int, int, str]:
    """K and V per token on the full-attention layers (their own KV heads and head dim); the sliding-window layers
    hold at most ``sliding_window`` tokens."""
    (gkv, gd), (skv, sd) = _gemma4_heads(cfg, True), _gemma4_heads(cfg, False)
    full, sliding = layers.count("full"), layers.count("sliding")
    window = cfg.int("sliding_window")
    formula = (
        f"{full} full-attention layers x 2 (K, V) x {gkv} KV heads x {gd} x {kv_bytes} B; fixed: {sliding} "
        f"sliding-window layers x {window} tokens x 2 x {skv} KV heads x {sd}"
    )
    return full * 2 * gkv * gd * kv_bytes, sliding * window * 2 * skv * sd * kv_bytes, formula


def _gemma4_extra(cfg: _Cfg, layers: _Layers) -> list[Part]:
    """Gemma-4's router input scale ``[H]`` and per-expert output scale ``[E]`` (Gemma4Router), and each layer's
    ``layer_scalar`` buffer, bf16."""
    h, experts = cfg.int("hidden_size"), cfg.int("num_experts")
    moe = layers.n - layers.dense
    return [
        Part(name="router scales", kind=PartKind.ROUTER, raw_bytes=moe * 2 * (h + experts)),
        Part(name="layer scalars", kind=PartKind.OTHER, raw_bytes=2 * layers.n),
    ]


def _mamba2(cfg: _Cfg) -> _Att:
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


def _mamba2_state_bytes(cfg: _Cfg) -> int:
    """One sequence's state in one Mamba-2 layer (vLLM ``mamba_utils.py`` ``mamba2_state_shape``): the conv window
    (``conv_kernel - 1`` steps of ``I + 2GN`` channels, bf16) and the SSM state (heads x head_dim x N, fp32 when
    ``mamba_ssm_cache_dtype`` says float32, else bf16)."""
    heads, hd, n = cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim"), cfg.int("ssm_state_size")
    conv = heads * hd + 2 * cfg.int("n_groups") * n
    ssm = 4 if cfg.c.get("mamba_ssm_cache_dtype") == "float32" else 2
    return 2 * conv * (cfg.int("conv_kernel") - 1) + ssm * heads * hd * n


def _kv_mamba_hybrid(cfg: _Cfg, layers: _Layers, kv_bytes: int) -> tuple[int, int, str]:
    """GQA KV on the attention layers, plus each Mamba-2 layer's fixed state per sequence."""
    attention_only = replace(layers, kinds=tuple(k for k in layers.kinds if k != "linear"))
    per_token, fixed, formula = _kv_gqa(cfg, attention_only, kv_bytes)
    state, mamba = _mamba2_state_bytes(cfg), layers.count("linear")
    return per_token, fixed + mamba * state, formula + f"; fixed: {mamba} Mamba-2 layers x {state:,} B of state"


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


def _kv_mla(cfg: _Cfg, layers: _Layers, kv_bytes: int) -> tuple[int, int, str]:
    kv_lora, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
    ihd = cfg.int("index_head_dim", 0) if cfg.int("index_n_heads", 0) else 0
    per_layer = 2 * (kv_lora + rope) + (ihd + 4 if ihd else 0)
    formula = (
        f"{layers.n} layers x (2 bytes x (kv_lora_rank {kv_lora} + rope {rope})"
        + (f" + indexer key {ihd} fp8 + 4-byte scale" if ihd else "")
        + ") (bf16 latent cache, the engines' default kv-cache dtype)"
    )
    return layers.n * per_layer, 0, formula


def _kv_dsv4(cfg: _Cfg, layers: _Layers, kv_bytes: int) -> tuple[int, int, str]:
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


def _kv_gqa(cfg: _Cfg, layers: _Layers, kv_bytes: int) -> tuple[int, int, str]:
    """K and V of every KV head on full (and chunked) layers per token; sliding-window layers hold at most
    ``sliding_window`` tokens and linear-attention layers a fixed recurrent state, per sequence."""
    d, nkv = _head_dim(cfg), _kv_heads(cfg)
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
        state = _deltanet_state_bytes(cfg)
        fixed += linear * state
        formula += f"; fixed: {linear} linear-attention layers x {state:,} B of recurrent state"
    return (full + chunked) * entry, fixed, formula


# --- vision towers ------------------------------------------------------------------------------------------------


def _qwen3_vl_vision(vision: dict[str, Any]) -> Part:
    """Qwen3-VL / Qwen3.5 vision tower (HF ``Qwen3VLVisionModel``): a Conv3d patch embedding, learned position
    embeddings, ``depth`` pre-LayerNorm blocks (qkv, proj, fc1, fc2 with biases), a patch merger over
    ``spatial_merge_size``^2 patches and one more per ``deepstack_visual_indexes`` entry; bf16."""
    cfg = _Cfg(vision)
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


# --- the table ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionKind:
    """One family's table entry.

    ``attention`` weighs one full-attention layer, ``linear`` one linear-attention layer (hybrid families),
    ``kv`` the cache; ``router_bias`` is the router's bias bytes per expert (4: an fp32 score-correction bias,
    2: a bf16 bias, 0: none); ``dense_width`` the key of a dense MLP's width; ``mtp_keys`` the keys that count
    MTP layers; ``mtp_embeds`` whether an MTP layer carries an input projection ``[H, 2H]``; ``vision`` weighs
    ``vision_config``; ``notes`` and ``mtp_note`` (when no MTP layer is counted) say what is left out; ``source``
    names the modeling file the entry was read from.
    """

    attention: Callable[[_Cfg], _Att]
    kv: Callable[[_Cfg, _Layers, int], tuple[int, int, str]]
    source: str
    linear: Callable[[_Cfg], _Att] | None = None
    extra: Callable[[_Cfg, _Layers], list[Part]] | None = None
    router_bias: int = 4
    dense_width: str = "intermediate_size"
    mtp_keys: tuple[str, ...] = ("num_nextn_predict_layers",)
    mtp_embeds: bool = True
    vision: Callable[[dict[str, Any]], Part] | None = None
    notes: tuple[str, ...] = field(default=())
    mtp_note: str = ""  # said when the config counts no MTP layer though the checkpoint ships one
    #: a config key listing each layer's query-head count (Laguna-XS ``num_attention_heads_per_layer``)
    heads_per_layer: str = ""
    #: a boolean config key that gives every sliding-window layer a learned sink logit per head (bf16)
    sliding_sinks: str = ""
    #: weighs one sliding-window layer when its attention has its own shape (MiMo-V2's ``swa_*``)
    sliding: Callable[[_Cfg], _Att] | None = None
    #: a config key listing each layer's attention kind as 0 (full) / 1 (sliding window): MiMo-V2's
    #: ``hybrid_layer_pattern``
    layer_pattern: str = ""
    #: a config key naming the router weight's dtype (default float32: stored in fp32, not the attention format)
    router_dtype: str = ""
    #: a config key spelling each layer as one block (Nemotron-H ``hybrid_override_pattern``: ``*`` attention,
    #: ``M`` a ``linear`` mixer, ``E`` MoE, ``-`` a dense MLP), each with one norm
    block_pattern: str = ""
    #: hidden-size norms per layer (Gemma-4: 7 with its MoE block; a block-pattern family: 1), plus the final one
    norms_per_layer: int = 2
    #: the width key of a dense MLP every MoE layer runs beside its experts (Gemma-4 ``intermediate_size``)
    parallel_mlp: str = ""


_HF = "https://github.com/huggingface/transformers/blob/v4.57.1/src/transformers/models"
_VLLM = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models"
_MLA = AttentionKind(_mla_dsa, _kv_mla, source=f"MLA (DeepSeek V3; {_VLLM}/deepseek_v2.py)")
_QWEN3 = AttentionKind(
    Gqa(qk_norm=True), _kv_gqa, router_bias=0, source=f"GQA with q/k norms ({_HF}/qwen3_moe/modeling_qwen3_moe.py)"
)
_QWEN_NEXT = AttentionKind(
    Gqa(qk_norm=True, output_gate=True),
    _kv_gqa,
    linear=_gated_deltanet,
    router_bias=0,
    mtp_keys=("mtp_num_hidden_layers", "num_nextn_predict_layers"),
    source=f"Gated DeltaNet + gated GQA every full_attention_interval layers ({_HF}/qwen3_next/modeling_qwen3_next.py)",
    mtp_note="its MTP layer (mtp.*) is not counted: the config states no mtp_num_hidden_layers",
)
_LLAMA4 = AttentionKind(
    Gqa(),
    _kv_gqa,
    router_bias=0,
    dense_width="intermediate_size_mlp",
    source=f"GQA, qk L2 norm without weights, chunked-local rope layers ({_HF}/llama4/modeling_llama4.py)",
)

#: ``model_type`` (the language model's) -> the family's table entry.
ATTENTION_KINDS: dict[str, AttentionKind] = {
    "deepseek_v4": AttentionKind(
        _dsv4,
        _kv_dsv4,
        extra=_dsv4_extra,
        source="DeepSeek V4 attention (wq_a, wq_b, wkv, wo_a, wo_b; compressors, indexers, hyper-connections)",
    ),
    "glm_moe_dsa": AttentionKind(_mla_dsa, _kv_mla, source="MLA with DSA indexer (GLM-5.x)"),
    "deepseek_v32": AttentionKind(_mla_dsa, _kv_mla, source="MLA with DSA indexer (DeepSeek V3.2)"),
    "deepseek_v3": _MLA,
    "kimi_k2": _MLA,
    "glm4_moe_lite": AttentionKind(_mla_dsa, _kv_mla, source=f"MLA (GLM-4.7-Flash; {_VLLM}/glm4_moe_lite.py)"),
    "glm4_moe": AttentionKind(
        Gqa(qkv_bias="attention_bias", qk_norm="use_qk_norm"),
        _kv_gqa,
        source=f"GQA with q/k/v biases, optional q/k norms ({_HF}/glm4_moe/modeling_glm4_moe.py)",
    ),
    "qwen3_moe": _QWEN3,
    "qwen3_vl_moe_text": AttentionKind(
        Gqa(qk_norm=True),
        _kv_gqa,
        router_bias=0,
        vision=_qwen3_vl_vision,
        source=f"GQA with q/k norms + ViT ({_HF}/qwen3_vl_moe/modeling_qwen3_vl_moe.py)",
    ),
    "qwen2_moe": AttentionKind(
        Gqa(qkv_bias=True),
        _kv_gqa,
        router_bias=0,
        source=f"GQA with q/k/v biases ({_HF}/qwen2_moe/modeling_qwen2_moe.py)",
    ),
    "qwen3_next": _QWEN_NEXT,
    "qwen3_5_moe_text": AttentionKind(
        Gqa(qk_norm=True, output_gate="attn_output_gate"),
        _kv_gqa,
        linear=_gated_deltanet,
        router_bias=0,
        mtp_keys=("mtp_num_hidden_layers",),
        vision=_qwen3_vl_vision,
        source=f"Gated DeltaNet + gated GQA, Qwen3-VL ViT ({_VLLM}/qwen3_5.py)",
    ),
    "mixtral": AttentionKind(Gqa(), _kv_gqa, router_bias=0, source=f"GQA ({_HF}/mixtral/modeling_mixtral.py)"),
    "gpt_oss": AttentionKind(
        Gqa(qkv_bias="attention_bias", o_bias="attention_bias", sinks=True),
        _kv_gqa,
        router_bias=2,
        source=f"GQA with biases and sinks, alternating sliding window ({_HF}/gpt_oss/modeling_gpt_oss.py)",
    ),
    "llama4_text": _LLAMA4,
    "minimax_m2": AttentionKind(
        Gqa(qk_norm="use_qk_norm", qk_norm_full=True),
        _kv_gqa,
        mtp_keys=(),
        source=f"GQA with q/k norms over all heads ({_VLLM}/minimax_m2.py)",
        notes=("MiniMax-M2's MTP modules (num_mtp_modules) are not in the released checkpoint: not counted",),
    ),
    "ernie4_5_moe": AttentionKind(
        Gqa(qkv_bias="use_bias", o_bias="use_bias"),
        _kv_gqa,
        mtp_keys=(),
        source=f"GQA, optional biases ({_VLLM}/ernie45_moe.py)",
    ),
    "bailing_moe": AttentionKind(
        Gqa(qkv_bias="use_qkv_bias", o_bias="use_bias", qk_norm="use_qk_norm"),
        _kv_gqa,
        source=f"GQA with fused query_key_value ({_VLLM}/bailing_moe.py)",
    ),
    "mimo_v2_flash": AttentionKind(
        partial(_asymmetric, prefix=""),
        _kv_asymmetric,
        sliding=partial(_asymmetric, prefix="swa_"),
        layer_pattern="hybrid_layer_pattern",
        router_dtype="moe_router_dtype",
        mtp_note="its MTP layers (model.mtp.layers.*) are not counted: the config states no num_nextn_predict_layers "
        "(vLLM's main model skips them, mimo_v2.py:287; its MTP drafter builds one, mimo_v2_mtp.py:177)",
        source=f"full and sliding-window GQA with their own heads, V head narrower than QK ({_VLLM}/mimo_v2.py)",
    ),
    "nemotron_h": AttentionKind(
        Gqa(),
        _kv_mamba_hybrid,
        linear=_mamba2,
        block_pattern="hybrid_override_pattern",
        mtp_keys=(),
        mtp_note="MTP layers are not counted (Nemotron-H's MTP drafter, vLLM nemotron_h_mtp.py, is not weighed)",
        source=f"one block per layer: GQA, Mamba-2 (mamba_mixer2.py), MoE or MLP ({_VLLM}/nemotron_h.py)",
    ),
    "gemma4_text": AttentionKind(
        partial(_gemma4_attention, full=True),
        _kv_gemma4,
        sliding=partial(_gemma4_attention, full=False),
        extra=_gemma4_extra,
        router_bias=0,
        norms_per_layer=7,
        parallel_mlp="intermediate_size",
        mtp_keys=(),
        source=f"sliding and global GQA with their own heads, a dense MLP beside the experts ({_VLLM}/gemma4.py)",
    ),
    "laguna": AttentionKind(
        Gqa(qkv_bias="attention_bias", o_bias="attention_bias", qk_norm=True, head_gate="gating"),
        _kv_gqa,
        heads_per_layer="num_attention_heads_per_layer",
        sliding_sinks="swa_attention_sink_enabled",
        source=f"GQA with q/k norms, a softplus head gate (g_proj) and per-layer head counts ({_VLLM}/laguna.py)",
    ),
}
ATTENTION_KINDS["bailing_moe_v2"] = ATTENTION_KINDS["bailing_moe"]

#: Families the model reader reads that no entry above weighs (by ``FamilyRules.family``), each with what sets it
#: apart from the shapes above (empty: no entry has been written for it yet). Their fit weighs the routed experts
#: only and its note names what it leaves out (:func:`unweighed_note`); ``tests/model/test_family_facts.py`` keeps
#: this list, the table and the reader in agreement.
UNWEIGHED: dict[str, str] = {
    "deepseek_v41": "its engram embedding tables (engram_*), the KV and indexer it shares across layers "
    "(kv_source_layer_ids, index_source_layer_ids), its DSpark draft layers and its vision tower",
    "minimax_m3": "its sparse-attention index heads (sparse_attention_config) and its MTP modules",
    "kimi_k3": "its KDA linear-attention layers (linear_attn_config), its gated MLA layers and the latent projections "
    "around its experts (routed_expert_hidden_size)",
    "step3": "its multi-matrix factorization attention (share_q_dim, num_attention_groups) and its vision tower",
    "deepseek_v2": "",
    "mellum": "",
    "qwen4_exp": "",
    "glm5_next": "",
    "hy_v3": "",
    "hy_v4": "",
    "aria": "",
    "k2_horizon": "",
    "interns2_preview": "",
    "mistral_large_3": "",
}


def unweighed_note(model: ModelDescription) -> str:
    """The fit's note for a model without a footprint: exactly which weights it leaves out, and why."""
    n = model.num_hidden_layers
    moe = sum(len(g.layers) for g in model.layer_groups if g.role not in ("mtp", "draft"))
    items = [f"attention ({n} layers)" if n else "attention"]
    if n and n > moe:
        k = n - moe
        items.append(f"the {k} layer{'s' if k != 1 else ''} without MoE (its dense MLP or mixer)")
    if model.main_group.num_shared_experts:
        items.append("shared experts")
    items += ["the router", "embeddings and the LM head", "norms"]
    if any(g.role in ("mtp", "draft") for g in model.layer_groups):
        items.append("the MTP/draft layers' attention and projections")
    items.append("the KV cache (so no context length is checked)")
    family = model.family or model.model_type or "this family"
    if family in UNWEIGHED:
        why = f"no footprint entry weighs {family}" + (f" ({UNWEIGHED[family]})" if UNWEIGHED[family] else "")
    else:
        why = f"the footprint entry for {family} could not read this config (a field it needs is missing or malformed)"
    return f"not weighed: {', '.join(items)}: {why} (moe_oracle/model/footprint.py)"


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


def _attention_kinds(cfg: _Cfg, kind: AttentionKind, n: int) -> tuple[str, ...]:
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


def _attention_groups(kind: AttentionKind, cfg: _Cfg, layers: _Layers) -> list[tuple[int, _Att, int]]:
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
        (count, kind.attention(_Cfg({**cfg.c, "num_attention_heads": heads})), count * 2 * heads if sink else 0)
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
    cfg = _Cfg(language_config(config))
    main = model.main_group
    n = cfg.int("num_hidden_layers")
    moe_layers = sum(len(g.layers) for g in model.layer_groups if g.role not in ("mtp", "draft"))
    mtp_groups = [g for g in model.layer_groups if g.role == "mtp"]
    mtp = sum(len(g.layers) for g in mtp_groups) or next((cfg.int(k, 0) for k in kind.mtp_keys if k in cfg.c), 0)
    kinds = _attention_kinds(cfg, kind, n)
    if kind.block_pattern and cfg.c.get("moe_latent_size") is not None:
        raise KeyError("moe_latent_size")  # latent MoE projections (vLLM nemotron_h.py:198-213): not weighed here
    dense = sum(1 for k in kinds if k == "mlp") if kind.block_pattern else max(0, n - moe_layers)
    layers = _Layers(n, mtp, dense, kinds)
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
        parts += kind.extra(cfg, _Layers(n, 0, layers.dense))
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
    att: _Att,
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
