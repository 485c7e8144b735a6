"""Where each kind of weight lives on an engine's ranks: over which group it is divided, with the engine's source.

A :class:`~moe_oracle.model.types.Part` of kind ``k`` is divided over one group of the engine's
layout (:class:`Over`) or held whole on every rank (``REPLICATED``). The groups, in moe-oracle's
layout terms (``tp`` attention TP per DP rank, ``dp`` attention DP ranks):

- vLLM 0.33: its TP group is ``tp`` (each DP rank is its own TP group); DP + EP with ``tp 1``
  replicates attention, embeddings, head, shared experts and dense MLPs on every rank.
- SGLang 0.5.23: ``--tp-size`` is the whole group ``tp*dp`` (``TP``), attention runs over
  ``--tp-size / --attn-dp-size`` (``ATTN_TP``), dense MLPs over ``--moe-dense-tp-size``
  (default: the whole TP group, ``MOE_DENSE_TP``).

Rows are data (:data:`PLACEMENT`, per engine and attention mode, then per-architecture exceptions in
:data:`ARCH_PLACEMENT`); :func:`placement` looks one up and :func:`group_size` sizes a group.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from moe_oracle.model.types import PartKind
from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Parallelism


class Over(str, Enum):
    """The group a weight is divided over."""

    TP = "tp"
    ATTN_TP = "attention tp"
    MOE_DENSE_TP = "moe-dense tp"
    EXPERTS = "the MoE group"
    REPLICATED = "replicated"


class AttentionMode(str, Enum):
    TP = "tp attention"
    DP = "dp attention"


@dataclass(frozen=True)
class Placement:
    over: Over
    source: str


_SG = f"sglang {sglang_release.VERSION} srt/"
_VL = f"vllm {vllm_release.SERIES} "

_VLLM_ANY: dict[PartKind, Placement] = {
    PartKind.ATTENTION: Placement(
        Over.TP,
        _VL + "model_executor/models/deepseek_v2.py (QKV/Row/ColumnParallelLinear "
        "over the TP group; DP ranks are separate TP groups)",
    ),
    PartKind.EMBEDDING: Placement(
        Over.TP, _VL + "model_executor/layers/vocab_parallel_embedding.py (VocabParallelEmbedding over the TP group)"
    ),
    PartKind.HEAD: Placement(Over.TP, _VL + "model_executor/layers/vocab_parallel_embedding.py (ParallelLMHead)"),
    PartKind.SHARED_EXPERTS: Placement(
        Over.TP, _VL + "model_executor/models/deepseek_v2.py (shared experts are an MLP over the TP group)"
    ),
    PartKind.SHARED_EXPERT_GATE: Placement(Over.REPLICATED, _VL + "ReplicatedLinear shared_expert_gate"),
    PartKind.DENSE_MLP: Placement(Over.TP, _VL + "model_executor/models/deepseek_v2.py (DeepseekV2MLP over TP)"),
    PartKind.ROUTER: Placement(Over.REPLICATED, _VL + "ReplicatedLinear gate"),
    PartKind.NORM: Placement(Over.REPLICATED, _VL + "RMSNorm (whole on every rank)"),
    PartKind.VISION: Placement(Over.TP, _VL + "vision towers over the TP group"),
    PartKind.OTHER: Placement(Over.REPLICATED, _VL + "MTP input projections and mixers (whole on every rank)"),
}

_SGLANG_COMMON: dict[PartKind, Placement] = {
    PartKind.ATTENTION: Placement(
        Over.ATTN_TP, _SG + "models/deepseek_v2.py, deepseek_v4.py:1124-1166 (parallel_group='attn_tp')"
    ),
    PartKind.HEAD: Placement(
        Over.TP,
        _SG + "models/deepseek_v4.py:4710-4716, deepseek_v2.py:3291-3297 "
        "(ParallelLMHead use_attn_tp_group=enable_dp_lm_head, default False: the whole TP group)",
    ),
    PartKind.SHARED_EXPERTS: Placement(
        Over.TP,
        _SG + "models/deepseek_v2.py:870-897 (parallel_group 'tp' unless "
        "--moe-a2a-backend or SGLANG_SHARED_EXPERT_TP1: then replicated)",
    ),
    PartKind.SHARED_EXPERT_GATE: Placement(Over.REPLICATED, _SG + "ReplicatedLinear shared_expert_gate"),
    PartKind.DENSE_MLP: Placement(
        Over.MOE_DENSE_TP,
        _SG + "models/deepseek_v2.py:2665-2676 (parallel_group "
        "'replicated' only when --moe-dense-tp-size 1, layers/layer_boundary/layout.py:83)",
    ),
    PartKind.ROUTER: Placement(Over.REPLICATED, _SG + "ReplicatedLinear gate"),
    PartKind.NORM: Placement(Over.REPLICATED, _SG + "RMSNorm (whole on every rank)"),
    PartKind.VISION: Placement(
        Over.REPLICATED, _SG + "vision encoders (whole on every rank unless --mm-enable-dp-encoder)"
    ),
    PartKind.OTHER: Placement(
        Over.REPLICATED,
        _SG + "models/deepseek_v4.py hyper-connection mixers, MTP input projections (whole on every rank)",
    ),
}

#: (engine, attention mode) -> kind -> placement.
PLACEMENT: dict[tuple[Engine, AttentionMode], dict[PartKind, Placement]] = {
    (Engine.VLLM, AttentionMode.TP): _VLLM_ANY,
    (Engine.VLLM, AttentionMode.DP): _VLLM_ANY,
    (Engine.NONE, AttentionMode.TP): _VLLM_ANY,
    (Engine.NONE, AttentionMode.DP): _VLLM_ANY,
    (Engine.SGLANG, AttentionMode.TP): {
        **_SGLANG_COMMON,
        PartKind.EMBEDDING: Placement(
            Over.TP,
            _SG + "layers/vocab_parallel_embedding.py (VocabParallelEmbedding "
            "over the TP group when attention DP is off)",
        ),
    },
    (Engine.SGLANG, AttentionMode.DP): {
        **_SGLANG_COMMON,
        PartKind.EMBEDDING: Placement(
            Over.ATTN_TP,
            _SG + "models/glm4_moe.py:880-884, qwen2_moe.py, minimax_m2.py "
            "(use_attn_tp_group=is_dp_attention_enabled()); deepseek_v2.py:2943-2947 via "
            "layers/vocab_parallel_embedding.py:166-184 get_embedding_tp_kwargs",
        ),
    },
}

#: Per-architecture exceptions: (engine, attention mode, architecture) -> kind -> placement.
ARCH_PLACEMENT: dict[tuple[Engine, AttentionMode, str], dict[PartKind, Placement]] = {
    (Engine.SGLANG, AttentionMode.DP, "DeepseekV4ForCausalLM"): {
        PartKind.EMBEDDING: Placement(
            Over.REPLICATED,
            _SG + "models/deepseek_v4.py:3770-3774 (VocabParallelEmbedding "
            "enable_tp=not is_dp_attention_enabled(): whole on every rank)",
        ),
    },
}

#: SGLang's shared experts are replicated when a ``--moe-a2a-backend`` is set (models/deepseek_v2.py:874-887).
SGLANG_A2A_SHARED = Placement(
    Over.REPLICATED,
    _SG + "models/deepseek_v2.py:874-897 (_shared_expert_use_tp1: "
    "--moe-a2a-backend megamoe/flashinfer_megamoe/deepep/...: parallel_group 'replicated')",
)


#: Routed-expert tensors the MoE description does not weigh (expert biases, an MTP layer's routed experts): every
#: engine shards them with the experts they belong to (FusedMoE's per-expert parameters).
EXPERT_TENSORS = Placement(
    Over.EXPERTS,
    f"vllm {vllm_release.SERIES} / sglang {sglang_release.VERSION} FusedMoE: per-expert parameters live with the "
    "rank's experts (expert parallel, TP within an expert)",
)


def attention_mode(par: Parallelism) -> AttentionMode:
    return AttentionMode.DP if par.dp > 1 else AttentionMode.TP


def placement(
    engine: Engine, par: Parallelism, architecture: str, kind: PartKind, *, a2a_backend: str = "none"
) -> Placement:
    """Where ``kind`` lives for ``engine`` on the layout ``par`` (``a2a_backend``: SGLang's ``--moe-a2a-backend``)."""
    mode = attention_mode(par)
    if kind is PartKind.ROUTED_EXPERTS:
        return EXPERT_TENSORS
    if engine is Engine.SGLANG and kind is PartKind.SHARED_EXPERTS and a2a_backend != "none":
        return SGLANG_A2A_SHARED
    own = ARCH_PLACEMENT.get((engine, mode, architecture), {})
    return own.get(kind) or PLACEMENT[(engine, mode)][kind]


def group_size(engine: Engine, par: Parallelism, over: Over) -> int:
    """How many ranks share one copy of a weight placed ``over`` (1: replicated)."""
    if over is Over.REPLICATED:
        return 1
    if over is Over.EXPERTS:  # like the routed experts: tp*dp ranks hold one copy (ep ways x tp*dp/ep)
        return par.moe_group_size
    if engine is Engine.SGLANG:
        return par.tp if over is Over.ATTN_TP else par.tp * par.dp
    return par.tp
