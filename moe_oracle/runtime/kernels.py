"""Base classes of the real-kernel backends (DeepGEMM mega-MoE, AITER MegaMoEV2).

Each variant's ``backend.py`` subclasses one of these with its constants (entry points, buffer and
kernel arguments, weights/staging modules). The vendor library is imported inside ``__init__``
(never at module import); everything that can be missing raises one
:class:`~moe_oracle.runtime.errors.BackendUnavailableError` line.

DeepGEMM (kernels.md §0-§1, vLLM 0.33 §2.6-§2.9): the symmetric buffer is created once per
``(process group, device, kind, E, max tokens, top-k, H, I, activation)`` and shared by every
layer with that shape; ``forward`` stages into ``buf.x``/``x_sf``/``topk_idx``/``topk_weights``
(views, no allocation) and calls the kernel on a view ``y[:T]`` of an output preallocated for
``max_tokens_per_rank``: no host synchronization, so the call can be captured in a CUDA graph.

AITER (kernels.md §2, vLLM 0.33 §3.2-§3.3): ``MegaMoEV2(rank, world_size, model_dim, inter_dim,
experts, topk, quant, w1, w1_scale, w2, w2_scale, max_tok_per_rank (power of two),
swiglu_limit)`` on a MoRI symmetric heap (``mori.shmem.shmem_torch_process_group_init``); one runtime
per shape, shared across layers by rebinding its weight attributes (as vLLM does).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from moe_oracle.runtime.errors import BackendUnavailableError, LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer
from moe_oracle.runtime.layouts import LOAD_CHUNK_EXPERTS, KernelWeights
from moe_oracle.runtime.vendor import (
    ensure_process_group,
    require_attrs,
    require_cuda_arch,
    require_module,
    require_rocm_arch,
)

_DEEP_GEMM_BUFFERS: dict[tuple[Any, ...], Any] = {}
_AITER_RUNTIMES: dict[tuple[Any, ...], Any] = {}


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


@dataclass(frozen=True)
class KernelCall:
    """A kernel launch as data: ``getattr(module, function)(*args, **kwargs)`` (inspectable on CPU)."""

    function: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class DeepGemmMegaMoE(MegaMoELayer):
    """Common DeepGEMM mega-MoE layer; subclasses set the class constants."""

    VARIANT: ClassVar[str] = ""
    ARCH_MAJORS: ClassVar[tuple[int, ...]] = (10,)
    KERNEL: ClassVar[str] = ""
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    BUFFER_FNS: ClassVar[tuple[str, ...]] = ("get_symm_buffer_for_mega_moe",)
    BUFFER_KWARGS: ClassVar[dict[str, Any]] = {}
    KERNEL_KWARGS: ClassVar[dict[str, Any]] = {}
    WEIGHTS: ClassVar[str] = ""
    STAGING: ClassVar[str] = ""
    PROVIDED_BY: ClassVar[str] = "a DeepGEMM build with the mega-MoE kernels"
    ENV_MUST_BE_OFF: ClassVar[tuple[str, ...]] = ()
    ENV_DEFAULTS: ClassVar[dict[str, str]] = {}
    SUPPORTS_ALPHA_BETA: ClassVar[bool] = False

    def __init__(self, config: LayerConfig) -> None:
        super().__init__(config)
        self.check_config(config)
        fix = f"install {self.PROVIDED_BY}, or build emulation:{self.VARIANT} for the numerics twin"
        for name, value in self.ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self.dg = require_module("deep_gemm", key=self.key, fix=fix)
        require_attrs(self.dg, key=self.key, all_of=self.REQUIRED, any_of=self.BUFFER_FNS, fix=fix)
        for name in self.ENV_MUST_BE_OFF:
            if os.environ.get(name, "0") not in ("", "0"):
                raise BackendUnavailableError(
                    f"{self.key}: the kernel asserts {name}=0 (it is {os.environ[name]!r}).", fix=f"unset {name}."
                )
        self.device = require_cuda_arch(
            key=self.key,
            majors=self.ARCH_MAJORS,
            device=config.device,
            fix=f"run on SM{self.ARCH_MAJORS[0]}x, or use emulation:{self.VARIANT}",
        )
        torch.cuda.set_device(self.device)
        self.group = ensure_process_group(config, backend="nccl", key=self.key)
        self.buffer = self._get_buffer()
        g = config.group
        self.y = torch.empty((config.max_tokens_per_rank, g.hidden_size), dtype=torch.bfloat16, device=self.device)
        self.weights: KernelWeights | None = None
        self._weights_mod = _import(self.WEIGHTS)
        self._staging_mod = _import(self.STAGING)

    # ---------------------------------------------------------------- pure (CPU-testable) parts
    @classmethod
    def check_config(cls, config: LayerConfig) -> None:
        g = config.group
        if g.num_experts % config.ep_size:
            raise LayerInputError(f"{cls.key}: {g.num_experts} experts do not divide over ep_size={config.ep_size}")
        if config.max_tokens_per_rank < 1:
            raise LayerInputError(f"{cls.key}: max_tokens_per_rank must be positive")
        act = g.activation
        if not cls.SUPPORTS_ALPHA_BETA and not act.plain:
            raise BackendUnavailableError(
                f"{cls.key}: the kernel has swiglu with a clamp only; layer group '{g.name}' has alpha={act.alpha}, "
                f"beta={act.beta}.",
                fix="use an SM100 DeepGEMM build with activation_alpha/beta, or another backend.",
            )

    @classmethod
    def buffer_arguments(cls, config: LayerConfig, group: Any = None) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments of the symmetric-buffer constructor."""
        g = config.group
        args = (group, g.num_experts, config.max_tokens_per_rank, g.top_k, g.hidden_size, g.moe_intermediate_size)
        return args, dict(cls.BUFFER_KWARGS)

    @classmethod
    def buffer_cache_key(cls, config: LayerConfig, group: Any = None) -> tuple[Any, ...]:
        g = config.group
        return (
            id(group),
            str(config.device),
            cls.BUFFER_FNS,
            tuple(sorted(cls.BUFFER_KWARGS.items())),
            g.num_experts,
            config.max_tokens_per_rank,
            g.top_k,
            g.hidden_size,
            g.moe_intermediate_size,
        )

    def activation_kwargs(self) -> dict[str, Any]:
        act = self.config.group.activation
        kw: dict[str, Any] = {"activation_clamp": None if act.clamp is None else float(act.clamp)}
        if act.alpha != 1.0:
            kw["activation_alpha"] = float(act.alpha)
        if act.beta != 0.0:
            kw["activation_beta"] = float(act.beta)
        return kw

    def kernel_call(self, num_tokens: int) -> KernelCall:
        """The launch ``forward`` makes for ``num_tokens`` tokens (y is a view of the preallocated output)."""
        if self.weights is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        w = self.weights
        l1: Any = w.w13 if w.w13_sf is None else (w.w13, w.w13_sf)
        l2: Any = w.w2 if w.w2_sf is None else (w.w2, w.w2_sf)
        kwargs = {**self.KERNEL_KWARGS, **self.activation_kwargs(), **self.extra_kernel_kwargs()}
        return KernelCall(self.KERNEL, (self.y[:num_tokens], l1, l2, self.buffer), kwargs)

    def extra_kernel_kwargs(self) -> dict[str, Any]:
        return {}

    # ---------------------------------------------------------------- device parts
    def _get_buffer(self) -> Any:
        key = self.buffer_cache_key(self.config, self.group)
        buf = _DEEP_GEMM_BUFFERS.get(key)
        if buf is None:
            fn_name = next(n for n in self.BUFFER_FNS if _has(self.dg, n))
            args, kwargs = self.buffer_arguments(self.config, self.group)
            buf = _resolve(self.dg, fn_name)(*args, **kwargs)
            _DEEP_GEMM_BUFFERS[key] = buf
        return buf

    def load(self, experts: CheckpointExperts) -> None:
        if experts.num_experts != self.config.num_local_experts:
            raise LayerInputError(
                f"{self.key}: got {experts.num_experts} experts, this rank holds {self.config.num_local_experts}"
            )
        chunk = int(self.config.options.get("load_chunk_experts", LOAD_CHUNK_EXPERTS))
        self.weights = self._weights_mod.to_kernel(experts, device=self.device, chunk_experts=chunk)
        self._check_signature()

    def _check_signature(self) -> None:
        fn = _resolve(self.dg, self.KERNEL)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return
        call = self.kernel_call(1)
        unknown = [
            k for k in call.kwargs if k not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values())
        ]
        if unknown:
            raise BackendUnavailableError(
                f"{self.key}: deep_gemm.{self.KERNEL} of this build takes no {', '.join(unknown)}.",
                fix=f"install {self.PROVIDED_BY}.",
            )

    def forward(self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        t = int(hidden_states.shape[0])
        if t > self.config.max_tokens_per_rank:
            raise LayerInputError(f"{t} tokens exceed max_tokens_per_rank={self.config.max_tokens_per_rank}")
        self._staging_mod.stage_to_buffer(self.buffer, hidden_states, topk_ids, topk_weights)
        call = self.kernel_call(t)
        _resolve(self.dg, call.function)(*call.args, **call.kwargs)
        return call.args[0]


class AiterMegaMoE(MegaMoELayer):
    """Common AITER MegaMoEV2 layer (``quant`` = ``QUANT``)."""

    VARIANT: ClassVar[str] = ""
    QUANT: ClassVar[str] = "a8w4"
    MODULE: ClassVar[str] = "aiter.ops.flydsl.kernels.mega_moe"
    WEIGHTS: ClassVar[str] = "moe_oracle_backends.rocm_mi355._runtime"
    MAX_TOKENS: ClassVar[int] = 32768
    PG_NAME: ClassVar[str] = "moe_oracle_mori"
    HEAP_DEFAULT: ClassVar[str] = "8G"
    _mori_ready: ClassVar[set[int]] = set()

    def __init__(self, config: LayerConfig) -> None:
        super().__init__(config)
        self.max_tok_per_rank = self.check_config(config)
        fix = f"install amd-aiter >= v0.1.20 with FlyDSL and amd-mori (a ROCm image), or use emulation:{self.VARIANT}"
        mod = require_module(self.MODULE, key=self.key, fix=fix)
        require_attrs(mod, key=self.key, any_of=("MegaMoEV2", "MegaMoE"), fix=fix)
        self.runtime_cls = getattr(mod, "MegaMoEV2", None) or mod.MegaMoE
        self.mori = require_module("mori.shmem", key=self.key, fix=fix)
        self.device = require_rocm_arch(
            key=self.key, device=config.device, fix=f"run on MI355X (gfx950), or use emulation:{self.VARIANT}"
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

    @classmethod
    def check_config(cls, config: LayerConfig) -> int:
        g = config.group
        if g.num_experts % config.ep_size:
            raise LayerInputError(f"{cls.key}: {g.num_experts} experts do not divide over ep_size={config.ep_size}")
        cap = next_power_of_two(config.max_tokens_per_rank)
        if cap > cls.MAX_TOKENS:
            raise LayerInputError(
                f"{cls.key}: max_tokens_per_rank={config.max_tokens_per_rank} rounds up to {cap}, above MegaMoEV2's "
                f"{cls.MAX_TOKENS}"
            )
        if not g.activation.plain:
            raise BackendUnavailableError(
                f"{cls.key}: MegaMoEV2 has swiglu with swiglu_limit only; group '{g.name}' has alpha/beta.",
                fix="use another backend.",
            )
        return cap

    def runtime_arguments(self, w: KernelWeights) -> dict[str, Any]:
        """Keyword arguments of ``MegaMoEV2(...)`` for this layer's kernel-layout weights."""
        g = self.config.group
        e = w.w13.shape[0]
        return {
            "rank": self.config.ep_rank,
            "world_size": self.config.ep_size,
            "model_dim": g.hidden_size,
            "inter_dim": g.moe_intermediate_size,
            "experts": g.num_experts,
            "topk": g.top_k,
            "quant": self.QUANT,
            "w1": w.w13,
            "w1_scale": w.w13_sf.reshape(e * w.w13_sf.shape[1], -1),
            "w2": w.w2,
            "w2_scale": w.w2_sf.reshape(e * w.w2_sf.shape[1], -1),
            "max_tok_per_rank": self.max_tok_per_rank,
            "swiglu_limit": 0.0 if g.activation.clamp is None else float(g.activation.clamp),
        }

    def _init_mori(self) -> None:
        key = id(self.group)
        if key in self._mori_ready:
            return
        import torch._C._distributed_c10d as c10d

        c10d._register_process_group(self.PG_NAME, self.group)
        self.mori.shmem_torch_process_group_init(self.PG_NAME)
        self._mori_ready.add(key)

    def load(self, experts: CheckpointExperts) -> None:
        if experts.num_experts != self.config.num_local_experts:
            raise LayerInputError(
                f"{self.key}: got {experts.num_experts} experts, this rank holds {self.config.num_local_experts}"
            )
        weights_mod = _import(self.WEIGHTS)
        self.weights = weights_mod.to_kernel(experts, device=self.device, chunk_experts=LOAD_CHUNK_EXPERTS)
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
        runtime = _AITER_RUNTIMES.get(cache_key)
        if runtime is None:
            try:
                runtime = self.runtime_cls(**kwargs)
            except (ValueError, TypeError) as exc:
                raise BackendUnavailableError(
                    f"{self.key}: this AITER MegaMoEV2 refuses the configuration ({' '.join(str(exc).split())}).",
                    fix="use quant a8w4 intranode (a4w4 needs an AITER that supports it), or use emulation:"
                    + self.VARIANT,
                ) from None
            _AITER_RUNTIMES[cache_key] = runtime
        self.runtime = runtime

    def _bind(self) -> None:
        """Point the shared runtime at this layer's weights (vLLM's rebinding; version-specific attributes)."""
        rt, w = self.runtime, self.weights
        for attr in ("_s1_w1", "_s1_w1_scale", "w2", "w2_scale"):
            if not hasattr(rt, attr):
                raise BackendUnavailableError(
                    f"{self.key}: this AITER MegaMoE runtime has no '{attr}' to rebind per layer.",
                    fix="use the AITER this backend follows (mega_moe_v2.py @ e404860), or one runtime per layer.",
                )
        rt._s1_w1 = w.w13.view(torch.uint8)
        rt._s1_w1_scale = w.w13_sf.view(torch.uint8)
        rt.w2 = w.w2
        rt.w2_scale = w.w2_sf

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


def _import(path: str) -> Any:
    import importlib

    return importlib.import_module(path)


def _has(module: Any, path: str) -> bool:
    try:
        _resolve(module, path)
        return True
    except AttributeError:
        return False


def _resolve(module: Any, path: str) -> Any:
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj
