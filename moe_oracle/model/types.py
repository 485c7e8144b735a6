"""Typed description of a model's MoE layers: what every capability decision reads.

A model is a list of :class:`MoELayerGroup`. A group is a set of layers that share one
expert shape, one routed-expert weight format and one routing method, so one backend
decision covers all of them. Models mix groups: DeepSeek V4 has hash-routed and
score-routed layers plus an MTP layer, NVIDIA's NVFP4 exports keep MTP experts in MXFP4,
DeepSeek V4.1 draft layers have their own expert count and top-k.

Everything here is plain validated data (pydantic, frozen); parsing lives in
:mod:`moe_oracle.model.adapters`.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

PositiveInt = Annotated[int, Field(gt=0)]

#: Hard upper bounds that catch absurd or corrupt configs before any arithmetic.
MAX_HIDDEN_SIZE = 1 << 17
MAX_INTERMEDIATE_SIZE = 1 << 18
MAX_EXPERTS = 1 << 16
MAX_TOP_K = 1024
MAX_LAYERS = 1 << 14


class _Frozen(BaseModel):
    """Frozen, strict base. ``_OMIT_AT_DEFAULT`` names fields added after records were first written: they are
    left out of ``model_dump`` while they hold their default, so older descriptions (and the fingerprints of
    decision records over them) stay byte-identical."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    _OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self._OMIT_AT_DEFAULT:
                default = type(self).model_fields[name].default
                if name in data and getattr(self, name) == default:
                    del data[name]
        return data


class WeightFormat(str, Enum):
    """Storage format of routed-expert weights in the checkpoint."""

    BF16 = "bf16"
    FP8_BLOCK = "fp8_block"
    FP8_CHANNEL = "fp8_channel"
    MXFP4 = "mxfp4"
    MXFP8 = "mxfp8"
    NVFP4 = "nvfp4"
    #: Integer weight-only schemes (compressed-tensors ``pack-quantized``, AWQ, GPTQ): no mega-MoE kernel consumes them.
    INT4 = "int4"
    INT8 = "int8"


#: Formats no mega-MoE kernel consumes (integer weights); judged by their own reason code.
INTEGER_FORMATS = frozenset({WeightFormat.INT4, WeightFormat.INT8})


class ScaleFormat(str, Enum):
    """Element type of the weight scales."""

    NONE = "none"
    FP32 = "fp32"
    UE8M0 = "ue8m0"
    E4M3 = "e4m3"
    #: 16-bit scales of integer schemes (compressed-tensors / AWQ / GPTQ store them in the model dtype).
    BF16 = "bf16"


class QuantSpec(_Frozen):
    """Routed-expert weight quantization.

    ``block`` is the scale tile in elements as (rows along N, columns along K): (128, 128) for
    DeepSeek/GLM FP8 blocks, (32, 32) for DeepSeek V4.1, (1, 32) for MXFP4/MXFP8 groups,
    (1, 16) for NVFP4; ``None`` for BF16 and per-channel FP8. ``global_scale`` is true for
    NVFP4's extra per-tensor FP32 scale.
    """

    format: WeightFormat
    block: tuple[PositiveInt, PositiveInt] | None = None
    scale_format: ScaleFormat = ScaleFormat.NONE
    global_scale: bool = False
    source: str = Field(default="", description="Which config key decided the format.")

    @model_validator(mode="after")
    def _consistent(self) -> QuantSpec:
        fmt = self.format
        if fmt is WeightFormat.BF16:
            if self.block is not None or self.scale_format is not ScaleFormat.NONE:
                raise ValueError("bf16 weights carry no block and no scale format")
        elif fmt is WeightFormat.FP8_CHANNEL:
            if self.block is not None:
                raise ValueError("fp8_channel weights have one scale per output row, not a block")
        elif fmt in (WeightFormat.INT4, WeightFormat.INT8) and self.block is None:
            pass  # per-channel integer weights: one scale per output row
        elif self.block is None:
            raise ValueError(f"{fmt.value} weights need a scale block")
        if self.global_scale and fmt is not WeightFormat.NVFP4:
            raise ValueError("only nvfp4 carries a global scale")
        return self

    @property
    def tile(self) -> tuple[int, int]:
        """``block`` of a block-scaled format; ``ValueError`` for one without (BF16, per-channel)."""
        if self.block is None:
            raise ValueError(f"{self.format.value} weights have no scale block")
        return self.block

    @property
    def bits(self) -> int:
        """Bits per stored weight element."""
        return {
            WeightFormat.BF16: 16,
            WeightFormat.FP8_BLOCK: 8,
            WeightFormat.FP8_CHANNEL: 8,
            WeightFormat.MXFP8: 8,
            WeightFormat.MXFP4: 4,
            WeightFormat.NVFP4: 4,
            WeightFormat.INT4: 4,
            WeightFormat.INT8: 8,
        }[self.format]

    @property
    def scale_bytes(self) -> int:
        """Bytes of one stored scale (0 without scales)."""
        return {
            ScaleFormat.NONE: 0,
            ScaleFormat.FP32: 4,
            ScaleFormat.BF16: 2,
            ScaleFormat.UE8M0: 1,
            ScaleFormat.E4M3: 1,
        }[self.scale_format]

    def label(self) -> str:
        """Short human label, e.g. ``fp8_block 128x128 fp32`` or ``mxfp4 g32 ue8m0``."""
        if self.block is None:
            return self.format.value
        rows, cols = self.block
        tile = f"g{cols}" if rows == 1 else f"{rows}x{cols}"
        return f"{self.format.value} {tile} {self.scale_format.value}"


class ActivationKind(str, Enum):
    """``swiglu``: gated SiLU (with clamp / alpha / beta, see :class:`Activation`); ``situ``: Kimi K3;
    ``gelu``: gated GELU (Gemma-4 ``gelu_pytorch_tanh``); ``relu2``: squared ReLU, not gated (Nemotron-H)."""

    SWIGLU = "swiglu"
    SITU = "situ"
    GELU = "gelu"
    RELU2 = "relu2"


class Activation(_Frozen):
    """Expert activation.

    ``swiglu`` computes ``gate * sigmoid(alpha * gate) * (up + beta)``; with ``clamp=L`` the
    gate is first clamped from above and ``up`` symmetrically to ``L`` (DeepSeek V4:
    ``silu(min(gate, L)) * clamp(up, -L, L)``, alpha 1, beta 0). GPT-OSS style is alpha 1.702,
    beta 1 with clamp 7 (``swigluoai``: ``(clamp(up, -L, L) + 1) * g * sigmoid(1.702 g)``, ``g = min(gate, L)``).
    ``situ`` is Kimi K3's activation. ``clamp=None`` means no clamp. ``interleaved``: the
    checkpoint stores gate and up rows interleaved (gpt-oss ``gate_up_proj[..., ::2]`` is gate),
    not stacked; a layout matter for weight loading, not for the kernel's math.
    """

    _OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("interleaved",)

    kind: ActivationKind = ActivationKind.SWIGLU
    clamp: float | None = Field(default=None, gt=0)
    alpha: float = Field(default=1.0, gt=0)
    beta: float = 0.0
    interleaved: bool = False

    def label(self) -> str:
        """Short label: ``swiglu``, ``swiglu clamp 10``, ``swigluoai a1.702 b1 clamp 7 interleaved``, ``gelu``."""
        if self.kind is ActivationKind.SWIGLU and (self.alpha, self.beta) == (1.702, 1.0):
            text = "swigluoai"
        else:
            text = self.kind.value
            if self.alpha != 1.0 or self.beta != 0.0:
                text += f" a{self.alpha:g} b{self.beta:g}"
        if self.clamp is not None:
            text += f" clamp {self.clamp:g}"
        return text + (" interleaved" if self.interleaved else "")

    @property
    def plain(self) -> bool:
        """SwiGLU with the default alpha 1 and beta 0 (clamp allowed)."""
        return self.kind is ActivationKind.SWIGLU and self.alpha == 1.0 and self.beta == 0.0


class Scoring(str, Enum):
    SOFTMAX = "softmax"
    SIGMOID = "sigmoid"
    SQRTSOFTPLUS = "sqrtsoftplus"


class Routing(_Frozen):
    """How tokens pick experts (done by the caller, not inside the fused kernels).

    ``hash`` layers take their experts from a static ``[vocab, top_k]`` table indexed by token
    id; ``correction_bias`` (noaux_tc) steers the choice but never enters the weights; weights
    are renormalised to sum to one when ``renormalize`` and then multiplied by
    ``routed_scaling_factor``. ``weight_on_input`` (Llama-4): the routing weight scales the
    expert's *input* instead of its output (equal to the usual form only for top-1).
    """

    _OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("weight_on_input",)

    scoring: Scoring
    hash: bool = False
    correction_bias: bool = False
    renormalize: bool = True
    num_groups: PositiveInt = 1
    topk_groups: PositiveInt = 1
    routed_scaling_factor: float = Field(default=1.0, gt=0)
    weight_on_input: bool = False

    @model_validator(mode="after")
    def _groups(self) -> Routing:
        if self.topk_groups > self.num_groups:
            raise ValueError(f"topk_groups={self.topk_groups} exceeds num_groups={self.num_groups}")
        return self


LayerRole = Literal["routed", "hash", "mtp", "draft"]

#: The default group name of each role (a format suffix is added when one role has two formats).
ROLE_GROUP_NAMES: dict[LayerRole, str] = {"routed": "moe", "hash": "moe_hash", "mtp": "mtp", "draft": "draft"}


class MoELayerGroup(_Frozen):
    """Layers of one model that share shape, weight format and routing.

    Sizes are in elements. ``moe_intermediate_size`` is one expert's width (I); the fused
    gate+up weight is ``[num_experts, 2*I, hidden_size]`` and the down weight
    ``[num_experts, hidden_size, I]``.

    Shared experts: ``num_shared_experts`` of them, together ``shared_expert_width`` wide
    (``None``: ``num_shared_experts * I``, the DeepSeek convention; Qwen states the width);
    ``shared_expert_gate``: a per-token sigmoid gate scales their output (Qwen2-MoE / Qwen3-Next /
    Qwen3.5), so they cannot be fused into the routed kernel as a unit-weight expert.
    ``expert_bias``: the routed experts' projections carry bias vectors (gpt-oss).
    """

    _OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("shared_expert_width", "shared_expert_gate", "expert_bias")

    name: str = Field(min_length=1, max_length=64)
    role: LayerRole = "routed"
    layers: tuple[Annotated[int, Field(ge=0, lt=MAX_LAYERS)], ...] = Field(min_length=1)
    hidden_size: Annotated[int, Field(gt=0, le=MAX_HIDDEN_SIZE)]
    moe_intermediate_size: Annotated[int, Field(gt=0, le=MAX_INTERMEDIATE_SIZE)]
    num_experts: Annotated[int, Field(gt=0, le=MAX_EXPERTS)]
    top_k: Annotated[int, Field(gt=0, le=MAX_TOP_K)]
    num_shared_experts: Annotated[int, Field(ge=0, le=64)] = 0
    shared_expert_quant: QuantSpec | None = None
    weight_quant: QuantSpec
    activation: Activation = Activation()
    routing: Routing
    shared_expert_width: Annotated[int, Field(gt=0, le=MAX_INTERMEDIATE_SIZE * 64)] | None = None
    shared_expert_gate: bool = False
    expert_bias: bool = False

    @field_validator("layers")
    @classmethod
    def _sorted_unique(cls, layers: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(layers)) != len(layers):
            raise ValueError("layer indices repeat")
        return tuple(sorted(layers))

    @model_validator(mode="after")
    def _consistent(self) -> MoELayerGroup:
        if self.top_k > self.num_experts:
            raise ValueError(f"top_k={self.top_k} exceeds num_experts={self.num_experts}")
        if self.routing.num_groups > 1 and self.num_experts % self.routing.num_groups:
            raise ValueError(f"num_experts={self.num_experts} is not divisible by num_groups={self.routing.num_groups}")
        if self.num_shared_experts == 0 and (self.shared_expert_width is not None or self.shared_expert_gate):
            raise ValueError("a shared-expert width or gate needs num_shared_experts > 0")
        return self

    @property
    def weight_format(self) -> WeightFormat:
        """The routed-expert weight format (shorthand for ``weight_quant.format``)."""
        return self.weight_quant.format

    @property
    def shared_intermediate_size(self) -> int:
        """Width of the shared-expert MLP (``shared_expert_width``, else ``num_shared_experts * I``)."""
        if self.shared_expert_width is not None:
            return self.shared_expert_width
        return self.num_shared_experts * self.moe_intermediate_size

    def expert_weight_bytes(self) -> int:
        """Bytes of one routed expert's weights and scales as stored (w13 ``[2I, H]`` + w2 ``[H, I]``; a
        squared-ReLU expert is not gated: ``[I, H]`` + ``[H, I]``)."""
        h, i, q = self.hidden_size, self.moe_intermediate_size, self.weight_quant
        rows = i if self.activation.kind is ActivationKind.RELU2 else 2 * i
        return linear_bytes(rows, h, q) + linear_bytes(h, i, q)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


BF16 = QuantSpec(format=WeightFormat.BF16)


class PartKind(str, Enum):
    """What a :class:`Part` is, so an engine's layout can place it (replicated per attention-DP rank, split over
    TP, one copy per pipeline stage...): a closed set; ``mtp`` on the part says whether it belongs to the MTP
    layers, independently of its kind."""

    #: Attention projections of every kind (MHA/GQA, MLA, linear attention, DSA indexers and compressors),
    #: their biases, q/k norms and sinks.
    ATTENTION = "attention"
    #: The token embedding table (also the LM head when the model ties them: then no HEAD part exists).
    EMBEDDING = "embedding"
    #: The LM head (output projection over the vocabulary), when not tied to the embedding.
    HEAD = "head"
    SHARED_EXPERTS = "shared_experts"
    #: The per-token sigmoid gate in front of the shared experts (Qwen2/Qwen3-Next ``shared_expert_gate``).
    SHARED_EXPERT_GATE = "shared_expert_gate"
    #: Dense MLP layers (layers without routed experts).
    DENSE_MLP = "dense_mlp"
    #: Routers (gate weights and biases), and hash-routing tables.
    ROUTER = "router"
    #: RMS/layer norms.
    NORM = "norm"
    #: A vision (or other modality) encoder and its projector.
    VISION = "vision"
    #: Routed-expert tensors the MoE description does not weigh (expert biases; the MTP layer's routed experts
    #: where the description has no MTP group): a layout divides them like the routed experts.
    ROUTED_EXPERTS = "routed_experts"
    #: Anything else (MTP input projections, hyper-connection mixers).
    OTHER = "other"


class Part(_Frozen):
    """One kind of weight: ``linear`` is a tuple of ``(count, N, K)`` matrices stored in ``fmt``;
    ``raw_bytes`` is what is stored outside any format (norms, fp32 tables, biases)."""

    name: str
    kind: PartKind
    linear: tuple[tuple[int, int, int], ...] = ()
    fmt: QuantSpec = BF16
    raw_bytes: int = 0
    mtp: bool = Field(default=False, description="Held only when the launch builds the MTP layers.")

    @property
    def params(self) -> int:
        """Weight elements (scales and raw tensors not counted, as a model card counts)."""
        return sum(c * n * k for c, n, k in self.linear)

    @property
    def bytes(self) -> int:
        return sum(c * linear_bytes(n, k, self.fmt) for c, n, k in self.linear) + self.raw_bytes


class Footprint(_Frozen):
    """The non-routed-expert weights of a model and its KV cache per token.

    ``kv_bytes_per_token`` is summed over every attention layer (one token's cache on a rank that
    holds all attention heads, as each attention-DP rank does); ``kv_bytes_fixed`` is what a
    sequence holds regardless of its length (sliding windows, linear-attention state). ``source`` names the table
    entry.
    """

    parts: tuple[Part, ...]
    kv_bytes_per_token: int = Field(ge=0)
    kv_bytes_fixed: int = Field(default=0, ge=0)
    kv_formula: str = ""
    max_context: int | None = None
    source: str = ""
    #: What the footprint knows it leaves out (a vision tower no entry weighs, MTP modules not released).
    notes: tuple[str, ...] = ()

    def bytes(self, *, mtp_built: bool) -> int:
        return sum(p.bytes for p in self.parts if mtp_built or not p.mtp)

    def bytes_by_kind(self, *, mtp_built: bool) -> dict[PartKind, int]:
        """Bytes of each kind present (MTP parts only when built), in :class:`PartKind` order."""
        out: dict[PartKind, int] = {}
        for kind in PartKind:
            total = sum(p.bytes for p in self.parts if p.kind is kind and (mtp_built or not p.mtp))
            if total:
                out[kind] = total
        return out

    @property
    def tied_embeddings(self) -> bool:
        """The LM head is the embedding table (one EMBEDDING part, no HEAD part)."""
        return not any(p.kind is PartKind.HEAD for p in self.parts)

    def params(self, *, mtp: bool = True) -> int:
        return sum(p.params for p in self.parts if mtp or not p.mtp)


def linear_bytes(n: int, k: int, fmt: QuantSpec) -> int:
    """Bytes of one ``[n, k]`` weight in ``fmt`` with its scales (block scales tile ``(rows, cols)``;
    per-channel FP8 one fp32 scale per row; NVFP4 adds its fp32 global scale)."""
    data = n * k * fmt.bits // 8
    if fmt.block is None:
        return data + (0 if fmt.format is WeightFormat.BF16 else fmt.scale_bytes * n)
    rows, cols = fmt.block
    return data + _cdiv(n, rows) * _cdiv(k, cols) * fmt.scale_bytes + (4 if fmt.global_scale else 0)


class AttentionHeads(_Frozen):
    """The attention head counts an engine shards over its tensor-parallel group, as the config states them.

    ``heads``: ``num_attention_heads``; ``kv_heads``: ``num_key_value_heads`` (None for MLA, whose latent KV is not
    split by heads, and when the config does not say); ``mla``: the config has ``kv_lora_rank`` (DeepSeek-style
    latent attention). ``source``: the config file's keys they were read from.
    """

    heads: PositiveInt
    kv_heads: PositiveInt | None = None
    mla: bool = False
    source: str = ""


class ModelDescription(_Frozen):
    """A model's MoE description: what ``moe-oracle model`` prints.

    ``layer_groups[0]`` is the main group (most layers; ties keep model order).
    """

    model: str
    architecture: str
    model_type: str
    family: str
    layer_groups: tuple[MoELayerGroup, ...] = Field(min_length=1)
    num_hidden_layers: PositiveInt | None = None
    source: str = Field(default="", description="Where the config came from (preset, path, hub cache).")
    #: Derived from the config for the memory fit, never an input of the decision: left out of ``model_dump``
    #: (records and their fingerprints do not carry it).
    footprint: Footprint | None = Field(
        default=None,
        exclude=True,
        description="The weights besides the routed experts and the KV cache per token, when known.",
    )
    #: Read from the config for the engines' own layout checks, never an input of the decision (left out of
    #: ``model_dump``, like the footprint).
    attention: AttentionHeads | None = Field(
        default=None,
        exclude=True,
        description="The attention head counts an engine's tensor-parallel group shards, when the config states them.",
    )
    #: What the description holds that the config (or manual input) did not state, each with its source.
    assumptions: tuple[str, ...] = ()

    _OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("assumptions",)

    @model_validator(mode="after")
    def _unique(self) -> ModelDescription:
        names = [g.name for g in self.layer_groups]
        if len(set(names)) != len(names):
            raise ValueError(f"layer group names repeat: {names}")
        seen: set[int] = set()
        for g in self.layer_groups:
            overlap = seen.intersection(g.layers)
            if overlap:
                raise ValueError(f"layer {min(overlap)} belongs to two layer groups")
            seen.update(g.layers)
        return self

    @property
    def main_group(self) -> MoELayerGroup:
        return self.layer_groups[0]
