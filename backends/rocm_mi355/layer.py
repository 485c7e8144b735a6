"""The AITER MegaMoEV2 layer both MI355X variants' ``backend.py`` subclass.

AITER (https://github.com/ROCm/aiter, vLLM 0.33 §3.2-§3.3): ``MegaMoEV2(rank, world_size, model_dim, inter_dim,
experts, topk, quant, w1, w1_scale, w2, w2_scale, max_tok_per_rank (power of two),
swiglu_limit)`` on a MoRI symmetric heap (``mori.shmem.shmem_torch_process_group_init``); one runtime
per shape, shared across layers by rebinding its weight attributes (as vLLM does). The token cap,
format, shape and activation rules are the declaration's (``_common.common_checks``), evaluated by
``build_layer`` before this class is constructed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar, cast

import torch

from moe_oracle.rules import VariantSpec
from moe_oracle.runtime.errors import BackendUnavailableError, LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer
from moe_oracle.runtime.layouts import LOAD_CHUNK_EXPERTS, KernelWeights
from moe_oracle.runtime.vendor import ensure_process_group, require_attrs, require_module, require_rocm_arch
from moe_oracle.spec.units import next_power_of_two

from . import _runtime as layout

if TYPE_CHECKING:
    from torch.distributed.distributed_c10d import GroupName

_RUNTIMES: dict[tuple[Any, ...], Any] = {}


class AiterMegaMoE(MegaMoELayer):
    """Common AITER MegaMoEV2 layer (``quant`` = ``QUANT``)."""

    SPEC: ClassVar[VariantSpec]
    QUANT: ClassVar[str] = "a8w4"
    MODULE: ClassVar[str] = "aiter.ops.flydsl.kernels.mega_moe"
    PG_NAME: ClassVar[str] = "moe_oracle_mori"
    HEAP_DEFAULT: ClassVar[str] = "8G"
    _mori_ready: ClassVar[set[int]] = set()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "SPEC" in cls.__dict__:
            cls.key = cls.SPEC.key

    def __init__(self, config: LayerConfig) -> None:
        super().__init__(config)
        variant = self.SPEC.variant
        self.max_tok_per_rank = next_power_of_two(config.max_tokens_per_rank)
        fix = f"install amd-aiter >= v0.1.20 with FlyDSL and amd-mori (a ROCm image), or use emulation:{variant}"
        mod = require_module(self.MODULE, key=self.key, fix=fix)
        require_attrs(mod, key=self.key, any_of=("MegaMoEV2", "MegaMoE"), fix=fix)
        self.runtime_cls = getattr(mod, "MegaMoEV2", None) or mod.MegaMoE
        self.mori = require_module("mori.shmem", key=self.key, fix=fix)
        self.device = require_rocm_arch(
            key=self.key, device=config.device, fix=f"run on MI355X (gfx950), or use emulation:{variant}"
        )
        torch.cuda.set_device(self.device)
        os.environ.setdefault("MORI_SHMEM_HEAP_SIZE", self.HEAP_DEFAULT)
        self.group = ensure_process_group(config, backend="cpu:gloo,cuda:nccl", key=self.key)
        self._init_mori()
        k = config.group.top_k
        self._ids = torch.full((self.max_tok_per_rank, k), -1, dtype=torch.int32, device=self.device)
        self._w = torch.zeros((self.max_tok_per_rank, k), dtype=torch.float32, device=self.device)
        self.weights: KernelWeights | None = None
        self.runtime: Any = None

    def runtime_arguments(self, w: KernelWeights) -> dict[str, Any]:
        """Keyword arguments of ``MegaMoEV2(...)`` for this layer's kernel-layout weights."""
        g = self.config.group
        e = w.w13.shape[0]
        w13_sf, w2_sf = w.scales()
        return {
            "rank": self.config.ep_rank,
            "world_size": self.config.ep_size,
            "model_dim": g.hidden_size,
            "inter_dim": g.moe_intermediate_size,
            "experts": g.num_experts,
            "topk": g.top_k,
            "quant": self.QUANT,
            "w1": w.w13,
            "w1_scale": w13_sf.reshape(e * w13_sf.shape[1], -1),
            "w2": w.w2,
            "w2_scale": w2_sf.reshape(e * w2_sf.shape[1], -1),
            "max_tok_per_rank": self.max_tok_per_rank,
            "swiglu_limit": 0.0 if g.activation.clamp is None else float(g.activation.clamp),
        }

    def _init_mori(self) -> None:
        key = id(self.group)
        if key in self._mori_ready:
            return
        import torch._C._distributed_c10d as c10d

        # GroupName is a NewType of str (torch/distributed/distributed_c10d.py), absent from older torch
        c10d._register_process_group(cast("GroupName", self.PG_NAME), self.group)
        self.mori.shmem_torch_process_group_init(self.PG_NAME)
        self._mori_ready.add(key)

    def load(self, experts: CheckpointExperts) -> None:
        if experts.num_experts != self.config.num_local_experts:
            raise LayerInputError(
                f"{self.key}: got {experts.num_experts} experts, this rank holds {self.config.num_local_experts}"
            )
        self.weights = layout.to_kernel(experts, device=self.device, chunk_experts=LOAD_CHUNK_EXPERTS)
        kwargs = self.runtime_arguments(self.weights)
        g = self.config.group
        cache_key = (
            id(self.group),
            str(self.device),
            self.QUANT,
            g.num_experts,
            g.top_k,
            g.hidden_size,
            g.moe_intermediate_size,
            self.max_tok_per_rank,
            kwargs["swiglu_limit"],
        )
        runtime = _RUNTIMES.get(cache_key)
        if runtime is None:
            try:
                runtime = self.runtime_cls(**kwargs)
            except (ValueError, TypeError) as exc:
                raise BackendUnavailableError(
                    f"{self.key}: this AITER MegaMoEV2 refuses the configuration ({' '.join(str(exc).split())}).",
                    fix="use quant a8w4 intranode (a4w4 needs an AITER that supports it), or use emulation:"
                    + self.SPEC.variant,
                ) from None
            _RUNTIMES[cache_key] = runtime
        self.runtime = runtime

    def _bind(self) -> None:
        """Point the shared runtime at this layer's weights (vLLM's rebinding; version-specific attributes)."""
        rt, w = self.runtime, self.weights
        if w is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        for attr in ("_s1_w1", "_s1_w1_scale", "w2", "w2_scale"):
            if not hasattr(rt, attr):
                raise BackendUnavailableError(
                    f"{self.key}: this AITER MegaMoE runtime has no '{attr}' to rebind per layer.",
                    fix="use the AITER this backend follows (mega_moe_v2.py @ e404860), or one runtime per layer.",
                )
        w13_sf, w2_sf = w.scales()
        rt._s1_w1 = w.w13.view(torch.uint8)
        rt._s1_w1_scale = w13_sf.view(torch.uint8)
        rt.w2 = w.w2
        rt.w2_scale = w2_sf

    def forward(self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        if self.runtime is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        t = int(hidden_states.shape[0])
        if t > self.config.max_tokens_per_rank:
            raise LayerInputError(f"{t} tokens exceed max_tokens_per_rank={self.config.max_tokens_per_rank}")
        ids, w = self._ids[:t], self._w[:t]
        ids.copy_(topk_ids)
        w.copy_(topk_weights)
        self._bind()
        return self.runtime.forward(hidden_states.contiguous(), w, ids)
