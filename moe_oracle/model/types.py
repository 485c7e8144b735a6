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
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PositiveInt = Annotated[int, Field(gt=0)]

#: Hard upper bounds that catch absurd or corrupt configs before any arithmetic.
MAX_HIDDEN_SIZE = 1 << 17
MAX_INTERMEDIATE_SIZE = 1 << 18
MAX_EXPERTS = 1 << 16
MAX_TOP_K = 1024
MAX_LAYERS = 1 << 14


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WeightFormat(str, Enum):
    """Storage format of routed-expert weights in the checkpoint."""

    BF16 = "bf16"
    FP8_BLOCK = "fp8_block"
    FP8_CHANNEL = "fp8_channel"
    MXFP4 = "mxfp4"
    MXFP8 = "mxfp8"
    NVFP4 = "nvfp4"


class ScaleFormat(str, Enum):
    """Element type of the weight scales."""

    NONE = "none"
    FP32 = "fp32"
    UE8M0 = "ue8m0"
    E4M3 = "e4m3"


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
        elif self.block is None:
            raise ValueError(f"{fmt.value} weights need a scale block")
        if self.global_scale and fmt is not WeightFormat.NVFP4:
            raise ValueError("only nvfp4 carries a global scale")
        return self

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
        }[self.format]

    def label(self) -> str:
        """Short human label, e.g. ``fp8_block 128x128 fp32`` or ``mxfp4 g32 ue8m0``."""
        if self.block is None:
            return self.format.value
        rows, cols = self.block
        tile = f"g{cols}" if rows == 1 else f"{rows}x{cols}"
        return f"{self.format.value} {tile} {self.scale_format.value}"


class ActivationKind(str, Enum):
    SWIGLU = "swiglu"
    SITU = "situ"


class Activation(_Frozen):
    """Expert activation.

    ``swiglu`` computes ``gate * sigmoid(alpha * gate) * (up + beta)``; with ``clamp=L`` the
    gate is first clamped from above and ``up`` symmetrically to ``L`` (DeepSeek V4:
    ``silu(min(gate, L)) * clamp(up, -L, L)``, alpha 1, beta 0). GPT-OSS style is alpha 1.702,
    beta 1. ``situ`` is Kimi K3's activation. ``clamp=None`` means no clamp. Gate and up are
    stacked, not interleaved, in the checkpoint.
    """

    kind: ActivationKind = ActivationKind.SWIGLU
    clamp: float | None = Field(default=None, gt=0)
    alpha: float = Field(default=1.0, gt=0)
    beta: float = 0.0

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
    ``routed_scaling_factor``.
    """

    scoring: Scoring
    hash: bool = False
    correction_bias: bool = False
    renormalize: bool = True
    num_groups: PositiveInt = 1
    topk_groups: PositiveInt = 1
    routed_scaling_factor: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _groups(self) -> Routing:
        if self.topk_groups > self.num_groups:
            raise ValueError(f"topk_groups={self.topk_groups} exceeds num_groups={self.num_groups}")
        return self


LayerRole = Literal["routed", "hash", "mtp", "draft"]

#: The default group name of each role (a format suffix is added when one role has two formats).
ROLE_GROUP_NAMES: dict[str, str] = {"routed": "moe", "hash": "moe_hash", "mtp": "mtp", "draft": "draft"}


class MoELayerGroup(_Frozen):
    """Layers of one model that share shape, weight format and routing.

    Sizes are in elements. ``moe_intermediate_size`` is one expert's width (I); the fused
    gate+up weight is ``[num_experts, 2*I, hidden_size]`` and the down weight
    ``[num_experts, hidden_size, I]``.
    """

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
        return self

    @property
    def weight_format(self) -> WeightFormat:
        """The routed-expert weight format (shorthand for ``weight_quant.format``)."""
        return self.weight_quant.format

    @property
    def shared_intermediate_size(self) -> int:
        """Width of the shared-expert MLP (``num_shared_experts * I``)."""
        return self.num_shared_experts * self.moe_intermediate_size

    def expert_weight_bytes(self) -> int:
        """Bytes of one routed expert's weights and scales as stored (w13 + w2)."""
        q = self.weight_quant
        elems = 3 * self.hidden_size * self.moe_intermediate_size
        data = elems * q.bits // 8
        if q.block is None:
            scales = 0 if q.format is WeightFormat.BF16 else 4 * 3 * self.moe_intermediate_size
        else:
            rows, cols = q.block
            per_scale = 4 if q.scale_format is ScaleFormat.FP32 else 1
            h, i = self.hidden_size, self.moe_intermediate_size
            n_scales = _cdiv(2 * i, rows) * _cdiv(h, cols) + _cdiv(h, rows) * _cdiv(i, cols)
            scales = n_scales * per_scale
        return data + scales


def layer_span(layers: tuple[int, ...] | list[int]) -> str:
    """Compact layer list for messages: ``0-2,5,7-9``."""
    parts: list[str] = []
    start = prev = None
    for layer in sorted(layers):
        if start is None or prev is None:
            start = prev = layer
        elif layer == prev + 1:
            prev = layer
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = layer
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


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
