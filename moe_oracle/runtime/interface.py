"""The contract every backend implements (real kernels and the emulation twin alike).

A :class:`MegaMoELayer` is built for one MoE layer group on one rank, takes one layer's routed
experts in the checkpoint layout (:class:`CheckpointExperts`), converts them to its kernel's
layout once (``load``), and runs ``forward``:

    forward(hidden_states [T, H] bf16, topk_ids [T, k] int, topk_weights [T, k] fp32) -> [T, H] bf16

Routing is the caller's (see :mod:`moe_oracle.runtime.routing`): ``topk_ids`` are global expert
ids (``-1`` skips a slot), ``topk_weights`` are final (renormalized and multiplied by the routed
scaling factor); ``forward_logits(hidden_states, router_logits, bias=...)`` routes first (fused with
the staging into one launch on the SM90 DeepGEMM variants). Under expert parallelism each rank passes
its own tokens and gets its own tokens' combined output; the layer holds only its rank's experts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from moe_oracle.model.types import MoELayerGroup, QuantSpec

if TYPE_CHECKING:
    import torch
    from torch.distributed import ProcessGroup

    from moe_oracle.runtime.routing_path import RoutingPath


@dataclass
class CheckpointExperts:
    """One layer's routed experts as a checkpoint stores them (this rank's slice).

    ``w13``: gate and up stacked along rows, ``[E, 2I, H/vpe]`` (gate rows first); ``w2``:
    ``[E, H, I/vpe]``; ``vpe`` values per element (2 for packed FP4, uint8). Scales follow the
    format: FP8 block ``[E, 2I/128, H/128]`` FP32 (or UE8M0 bytes); MXFP4/MXFP8 ``[E, N, K/32]``
    UE8M0 bytes; NVFP4 ``[E, N, K/16]`` E4M3 plus ``w13_global`` / ``w2_global`` FP32 ``[E]``
    (the ``weight_scale_2``) and ``w2_input_scale``. BF16 has no scales.
    """

    quant: QuantSpec
    w13: torch.Tensor
    w2: torch.Tensor
    w13_scale: torch.Tensor | None = None
    w2_scale: torch.Tensor | None = None
    w13_global: torch.Tensor | None = None
    w2_global: torch.Tensor | None = None
    w2_input_scale: torch.Tensor | None = None
    first_expert: int = 0

    @property
    def num_experts(self) -> int:
        return int(self.w13.shape[0])

    def scales(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(w13_scale, w2_scale)``; ``LayerInputError`` for experts stored without scales (BF16)."""
        if self.w13_scale is None or self.w2_scale is None:
            from moe_oracle.runtime.errors import LayerInputError

            raise LayerInputError(f"{self.quant.label()} experts carry no w13/w2 scales")
        return self.w13_scale, self.w2_scale

    def nvfp4_scales(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """NVFP4's ``(w13_global, w2_global, w2_input_scale)``; ``LayerInputError`` for experts without them."""
        if self.w13_global is None or self.w2_global is None or self.w2_input_scale is None:
            from moe_oracle.runtime.errors import LayerInputError

            raise LayerInputError(f"{self.quant.label()} experts carry no global (weight_scale_2) or w2 input scales")
        return self.w13_global, self.w2_global, self.w2_input_scale


class TakesBlockMHint(Protocol):
    """A layer whose kernel may take the step's mean tokens per EP rank (``num_tokens_for_block_m``), so
    every rank of a launch picks the same BLOCK_M (DeepGEMM's SM100 mega-MoE builds that have the argument)."""

    @property
    def takes_block_m_hint(self) -> bool: ...

    def forward(
        self,
        hidden_states: torch.Tensor,
        topk_ids: torch.Tensor,
        topk_weights: torch.Tensor,
        num_tokens_for_block_m: int | None = None,
    ) -> torch.Tensor: ...


@dataclass(frozen=True)
class LayerConfig:
    """Everything a backend needs to size its buffers, decided once at build time.

    ``max_tokens_per_rank`` bounds ``T`` in ``forward`` (it sizes symmetric buffers);
    ``ep_group`` is a ``torch.distributed`` process group or None for a single rank.
    """

    group: MoELayerGroup
    max_tokens_per_rank: int
    ep_rank: int = 0
    ep_size: int = 1
    device: str = "cuda"
    ep_group: ProcessGroup | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from moe_oracle.runtime.errors import LayerInputError

        if self.max_tokens_per_rank < 1:
            raise LayerInputError(f"max_tokens_per_rank must be positive, got {self.max_tokens_per_rank}")
        if self.ep_size < 1 or not 0 <= self.ep_rank < self.ep_size:
            raise LayerInputError(f"ep_rank={self.ep_rank} must lie in [0, ep_size={self.ep_size})")

    @property
    def num_local_experts(self) -> int:
        return self.group.num_experts // self.ep_size

    @property
    def first_local_expert(self) -> int:
        return self.ep_rank * self.num_local_experts


class MegaMoELayer(ABC):
    """A built MoE layer of one backend variant."""

    #: ``backend:variant`` this class implements (``emulation:<variant>`` for the twin).
    key: str = ""

    def __init__(self, config: LayerConfig) -> None:
        self.config = config

    @abstractmethod
    def load(self, experts: CheckpointExperts) -> None:
        """Take this rank's experts in checkpoint layout and keep them in kernel layout.

        Implementations transform expert by expert (or in chunks) and may consume ``experts``'
        tensors, so loading a model never needs a second full copy of its expert weights.
        """

    @abstractmethod
    def forward(self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        """Combined routed-expert output for this rank's tokens, BF16 ``[T, H]``."""

    def __call__(self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        return self.forward(hidden_states, topk_ids, topk_weights)

    def routing_path(
        self, hidden_states: torch.Tensor, router_logits: torch.Tensor, bias: torch.Tensor | None = None
    ) -> RoutingPath:
        """The path :meth:`forward_logits` takes for these inputs (:mod:`moe_oracle.runtime.routing_path`)."""
        from moe_oracle.runtime.routing_path import RoutingPath

        return RoutingPath.FALLBACK_HASH if self.config.group.routing.hash else RoutingPath.FALLBACK_BACKEND

    def forward_logits(
        self,
        hidden_states: torch.Tensor,
        router_logits: torch.Tensor,
        *,
        bias: torch.Tensor | None = None,
        token_ids: torch.Tensor | None = None,
        hash_table: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Route ``router_logits [T, E]`` (:func:`moe_oracle.runtime.routing.route`, with the gate's ``bias``, or
        ``token_ids`` and ``hash_table`` on hash layers) and run :meth:`forward`. Layers with a fused router
        (the SM90 DeepGEMM variants) route and stage in one launch where :meth:`routing_path` says ``FUSED``,
        with the same result bit for bit."""
        from moe_oracle.runtime.routing import route

        ids, w = route(self.config.group, router_logits, bias=bias, token_ids=token_ids, hash_table=hash_table)
        return self.forward(hidden_states, ids, w)
