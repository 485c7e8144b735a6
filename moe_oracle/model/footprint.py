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
The shapes the entries name are in :mod:`.footprint_shapes`; the reader is :mod:`.footprint_read`.

Units: element counts and bytes. Formats are :class:`~moe_oracle.model.types.QuantSpec`; a
linear weight of ``[N, K]`` stored in a block format carries its scales (see
:func:`linear_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from moe_oracle.model.footprint_shapes import (
    Att,
    Cfg,
    Gqa,
    Layers,
    asymmetric,
    dsv4,
    dsv4_extra,
    gated_deltanet,
    gemma4_attention,
    gemma4_extra,
    kv_asymmetric,
    kv_dsv4,
    kv_gemma4,
    kv_gqa,
    kv_mamba_hybrid,
    kv_mla,
    mamba2,
    mla_dsa,
    qwen3_vl_vision,
)
from moe_oracle.model.types import (
    BF16,
    ModelDescription,
    Part,
    QuantSpec,
)

__all__ = ["ATTENTION_KINDS", "UNWEIGHED", "AttentionKind", "Formats", "unweighed_note"]


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

    attention: Callable[[Cfg], Att]
    kv: Callable[[Cfg, Layers, int], tuple[int, int, str]]
    source: str
    linear: Callable[[Cfg], Att] | None = None
    extra: Callable[[Cfg, Layers], list[Part]] | None = None
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
    sliding: Callable[[Cfg], Att] | None = None
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
_MLA = AttentionKind(mla_dsa, kv_mla, source=f"MLA (DeepSeek V3; {_VLLM}/deepseek_v2.py)")
_QWEN3 = AttentionKind(
    Gqa(qk_norm=True), kv_gqa, router_bias=0, source=f"GQA with q/k norms ({_HF}/qwen3_moe/modeling_qwen3_moe.py)"
)
_QWEN_NEXT = AttentionKind(
    Gqa(qk_norm=True, output_gate=True),
    kv_gqa,
    linear=gated_deltanet,
    router_bias=0,
    mtp_keys=("mtp_num_hidden_layers", "num_nextn_predict_layers"),
    source=f"Gated DeltaNet + gated GQA every full_attention_interval layers ({_HF}/qwen3_next/modeling_qwen3_next.py)",
    mtp_note="its MTP layer (mtp.*) is not counted: the config states no mtp_num_hidden_layers",
)
_LLAMA4 = AttentionKind(
    Gqa(),
    kv_gqa,
    router_bias=0,
    dense_width="intermediate_size_mlp",
    source=f"GQA, qk L2 norm without weights, chunked-local rope layers ({_HF}/llama4/modeling_llama4.py)",
)

#: ``model_type`` (the language model's) -> the family's table entry.
ATTENTION_KINDS: dict[str, AttentionKind] = {
    "deepseek_v4": AttentionKind(
        dsv4,
        kv_dsv4,
        extra=dsv4_extra,
        source="DeepSeek V4 attention (wq_a, wq_b, wkv, wo_a, wo_b; compressors, indexers, hyper-connections)",
    ),
    "glm_moe_dsa": AttentionKind(mla_dsa, kv_mla, source="MLA with DSA indexer (GLM-5.x)"),
    "deepseek_v32": AttentionKind(mla_dsa, kv_mla, source="MLA with DSA indexer (DeepSeek V3.2)"),
    "deepseek_v3": _MLA,
    "kimi_k2": _MLA,
    "glm4_moe_lite": AttentionKind(mla_dsa, kv_mla, source=f"MLA (GLM-4.7-Flash; {_VLLM}/glm4_moe_lite.py)"),
    "glm4_moe": AttentionKind(
        Gqa(qkv_bias="attention_bias", qk_norm="use_qk_norm"),
        kv_gqa,
        source=f"GQA with q/k/v biases, optional q/k norms ({_HF}/glm4_moe/modeling_glm4_moe.py)",
    ),
    "qwen3_moe": _QWEN3,
    "qwen3_vl_moe_text": AttentionKind(
        Gqa(qk_norm=True),
        kv_gqa,
        router_bias=0,
        vision=qwen3_vl_vision,
        source=f"GQA with q/k norms + ViT ({_HF}/qwen3_vl_moe/modeling_qwen3_vl_moe.py)",
    ),
    "qwen2_moe": AttentionKind(
        Gqa(qkv_bias=True),
        kv_gqa,
        router_bias=0,
        source=f"GQA with q/k/v biases ({_HF}/qwen2_moe/modeling_qwen2_moe.py)",
    ),
    "qwen3_next": _QWEN_NEXT,
    "qwen3_5_moe_text": AttentionKind(
        Gqa(qk_norm=True, output_gate="attn_output_gate"),
        kv_gqa,
        linear=gated_deltanet,
        router_bias=0,
        mtp_keys=("mtp_num_hidden_layers",),
        vision=qwen3_vl_vision,
        source=f"Gated DeltaNet + gated GQA, Qwen3-VL ViT ({_VLLM}/qwen3_5.py)",
    ),
    "mixtral": AttentionKind(Gqa(), kv_gqa, router_bias=0, source=f"GQA ({_HF}/mixtral/modeling_mixtral.py)"),
    "gpt_oss": AttentionKind(
        Gqa(qkv_bias="attention_bias", o_bias="attention_bias", sinks=True),
        kv_gqa,
        router_bias=2,
        source=f"GQA with biases and sinks, alternating sliding window ({_HF}/gpt_oss/modeling_gpt_oss.py)",
    ),
    "llama4_text": _LLAMA4,
    "minimax_m2": AttentionKind(
        Gqa(qk_norm="use_qk_norm", qk_norm_full=True),
        kv_gqa,
        mtp_keys=(),
        source=f"GQA with q/k norms over all heads ({_VLLM}/minimax_m2.py)",
        notes=("MiniMax-M2's MTP modules (num_mtp_modules) are not in the released checkpoint: not counted",),
    ),
    "ernie4_5_moe": AttentionKind(
        Gqa(qkv_bias="use_bias", o_bias="use_bias"),
        kv_gqa,
        mtp_keys=(),
        source=f"GQA, optional biases ({_VLLM}/ernie45_moe.py)",
    ),
    "bailing_moe": AttentionKind(
        Gqa(qkv_bias="use_qkv_bias", o_bias="use_bias", qk_norm="use_qk_norm"),
        kv_gqa,
        source=f"GQA with fused query_key_value ({_VLLM}/bailing_moe.py)",
    ),
    "mimo_v2_flash": AttentionKind(
        partial(asymmetric, prefix=""),
        kv_asymmetric,
        sliding=partial(asymmetric, prefix="swa_"),
        layer_pattern="hybrid_layer_pattern",
        router_dtype="moe_router_dtype",
        mtp_note="its MTP layers (model.mtp.layers.*) are not counted: the config states no num_nextn_predict_layers "
        "(vLLM's main model skips them, mimo_v2.py:287; its MTP drafter builds one, mimo_v2_mtp.py:177)",
        source=f"full and sliding-window GQA with their own heads, V head narrower than QK ({_VLLM}/mimo_v2.py)",
    ),
    "nemotron_h": AttentionKind(
        Gqa(),
        kv_mamba_hybrid,
        linear=mamba2,
        block_pattern="hybrid_override_pattern",
        mtp_keys=(),
        mtp_note="MTP layers are not counted (Nemotron-H's MTP drafter, vLLM nemotron_h_mtp.py, is not weighed)",
        source=f"one block per layer: GQA, Mamba-2 (mamba_mixer2.py), MoE or MLP ({_VLLM}/nemotron_h.py)",
    ),
    "gemma4_text": AttentionKind(
        partial(gemma4_attention, full=True),
        kv_gemma4,
        sliding=partial(gemma4_attention, full=False),
        extra=gemma4_extra,
        router_bias=0,
        norms_per_layer=7,
        parallel_mlp="intermediate_size",
        mtp_keys=(),
        source=f"sliding and global GQA with their own heads, a dense MLP beside the experts ({_VLLM}/gemma4.py)",
    ),
    "laguna": AttentionKind(
        Gqa(qkv_bias="attention_bias", o_bias="attention_bias", qk_norm=True, head_gate="gating"),
        kv_gqa,
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
