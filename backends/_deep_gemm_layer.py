"""The DeepGEMM mega-MoE layer every SM90 and SM100 variant's ``backend.py`` subclasses.

A subclass names its declaration (``SPEC``, the sibling ``config.VARIANT``), its kernel layout
(``WEIGHTS``, the sibling ``weights.LAYOUT``) and what the call needs: the
kernel function, the buffer constructors it may use (in order of preference), the buffer and kernel
keyword arguments. The library's entry points, what provides them, the architectures and the
environment that must be off are read from the declaration's checks, never restated here; the
layer-level checks (shape, format, activation, experts per rank) were evaluated by ``build_layer``
before this class is constructed.

DeepGEMM (https://github.com/deepseek-ai/DeepGEMM/pull/323, vLLM 0.33 §2.6-§2.9): the symmetric buffer is created
once per ``(process group, device,
kind, E, max tokens, top-k, H, I)`` and shared by every layer with that shape, and destroyed when the last of them
is closed or collected (:mod:`moe_oracle.runtime.shared_buffers`); ``forward`` stages into
``buf.x``/``x_sf``/``topk_idx``/``topk_weights`` (views, no allocation) and calls the kernel on a view ``y[:T]`` of
an output preallocated for ``max_tokens_per_rank``: no host synchronization, so the call can be captured in a CUDA
graph.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from moe_oracle.rules import LayerScenario, VariantSpec
from moe_oracle.runtime.errors import BackendUnavailableError, LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer
from moe_oracle.runtime.layouts import LOAD_CHUNK_EXPERTS, KernelLayout, KernelWeights
from moe_oracle.runtime.routing import route
from moe_oracle.runtime.routing_path import RoutingPath, fused_routing_path
from moe_oracle.runtime.shared_buffers import SharedBuffers
from moe_oracle.runtime.staging import StagingSpec
from moe_oracle.runtime.vendor import (
    declared_arch_majors,
    declared_entry_points,
    ensure_process_group,
    has_attr,
    require_attrs,
    require_build_limits,
    require_cuda_arch,
    require_env_off,
    require_module,
    resolve_attr,
)

LIBRARY = "deep_gemm"


@contextlib.contextmanager
def _pdl_off(dg: Any) -> Iterator[None]:
    """DeepGEMM's process-wide PDL switch off for one launch (``deep_gemm.set_pdl``), restored afterwards even when
    the launch raises; a host-side flag, so a CUDA-graph capture records the launch without PDL."""
    set_pdl = getattr(dg, "set_pdl", None)
    if not callable(set_pdl):
        yield
        return
    set_pdl(False)
    try:
        yield
    finally:
        set_pdl(True)


#: keyword of the kernels that take the step's mean tokens per EP rank to choose BLOCK_M (seed 000)
BLOCK_M_HINT = "num_tokens_for_block_m"
#: symmetric buffers by :meth:`DeepGemmMegaMoE.buffer_cache_key`, released with the last layer that uses one
BUFFERS = SharedBuffers()


@dataclass(frozen=True)
class KernelCall:
    """A kernel launch as data: ``getattr(module, function)(*args, **kwargs)`` (inspectable on CPU)."""

    function: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class DeepGemmMegaMoE(MegaMoELayer):
    """Common DeepGEMM mega-MoE layer; subclasses set ``SPEC``, the modules and the call's constants."""

    SPEC: ClassVar[VariantSpec]
    WEIGHTS: ClassVar[KernelLayout]
    #: built from ``SPEC.staging`` (``StagingSpec.declared``) unless a subclass sets its own
    STAGING: ClassVar[StagingSpec]
    KERNEL: ClassVar[str] = ""
    BUFFER_FNS: ClassVar[tuple[str, ...]] = ("get_symm_buffer_for_mega_moe",)
    BUFFER_KWARGS: ClassVar[dict[str, Any]] = {}
    KERNEL_KWARGS: ClassVar[dict[str, Any]] = {}
    ENV_DEFAULTS: ClassVar[dict[str, str]] = {}
    #: the kernel waits on the grid dependency (``cudaGridDependencySynchronize``) before its first load, so it may
    #: be launched as a PDL secondary. DeepGEMM PR #447 (review of 2026-09-15): only the SM100 FP8xFP4 kernel
    #: (``sm100_fp8_fp4_mega_moe.cuh``) does; the SM90 FP8 and SM100 NVFP4 mega kernels never wait (advisory
    #: MOA-2026-002, ``data/launch_advisories.json``). False unless a variant's kernel is known to wait.
    KERNEL_WAITS_FOR_GRID_DEPENDENCY: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec = cls.__dict__.get("SPEC")
        if spec is None:
            return
        cls.key = spec.key
        if "STAGING" not in cls.__dict__:
            cls.STAGING = StagingSpec.declared(spec)
        declared = declared_entry_points(spec, LIBRARY)
        names = set(declared.all_of) | set(declared.any_of)
        undeclared = [n for n in (cls.KERNEL, *cls.BUFFER_FNS) if n not in names]
        if undeclared:  # the call must use only what the declaration promises the library has
            raise TypeError(f"{spec.key}: {', '.join(undeclared)} not declared in its deep_gemm entry-point check")

    def __init__(self, config: LayerConfig) -> None:
        super().__init__(config)
        spec = self.SPEC
        declared = declared_entry_points(spec, LIBRARY)
        fix = f"install {declared.provided_by}, or build emulation:{spec.variant} for the numerics twin"
        for name, value in self.ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        self.dg = require_module(LIBRARY, key=self.key, fix=fix)
        require_attrs(self.dg, key=self.key, all_of=declared.all_of, any_of=declared.any_of, fix=fix)
        layer = LayerScenario(config.group, ep=config.ep_size, tokens_per_rank=config.max_tokens_per_rank)
        #: the DeepGEMM build recognised (``moe-oracle list builds``), None when none is
        self.build = require_build_limits(declared, layer, key=self.key)
        require_env_off(spec, key=self.key)
        majors = declared_arch_majors(spec)
        self.device = require_cuda_arch(
            key=self.key,
            majors=majors,
            device=config.device,
            fix=f"run on SM{majors[0]}x, or use emulation:{spec.variant}",
        )
        torch.cuda.set_device(self.device)
        self.group = ensure_process_group(config, backend="nccl", key=self.key)
        self.buffer = self._get_buffer()
        g = config.group
        self.y: torch.Tensor | None = torch.empty(
            (config.max_tokens_per_rank, g.hidden_size), dtype=torch.bfloat16, device=self.device
        )
        self.weights: KernelWeights | None = None
        self._params: tuple[str, ...] | None = None

    # ---------------------------------------------------------------- pure (CPU-testable) parts
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

    def kernel_call(self, num_tokens: int, num_tokens_for_block_m: int | None = None) -> KernelCall:
        """The launch ``forward`` makes for ``num_tokens`` tokens (y is a view of the preallocated output).

        ``num_tokens_for_block_m``: the mean tokens per EP rank of the step, passed to kernels that take
        the hint (:attr:`takes_block_m_hint`) so every rank of a launch picks the same BLOCK_M.
        """
        if self.weights is None or self.y is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        w, y = self.weights, self.y
        l1: Any = w.w13 if w.w13_sf is None else (w.w13, w.w13_sf)
        l2: Any = w.w2 if w.w2_sf is None else (w.w2, w.w2_sf)
        kwargs = {**self.KERNEL_KWARGS, **self.activation_kwargs(), **self.extra_kernel_kwargs()}
        if num_tokens_for_block_m is not None and self.takes_block_m_hint:
            kwargs[BLOCK_M_HINT] = int(num_tokens_for_block_m)
        return KernelCall(self.KERNEL, (y[:num_tokens], l1, l2, self.buffer), kwargs)

    def extra_kernel_kwargs(self) -> dict[str, Any]:
        """Keyword arguments this variant's kernel takes besides the common ones (called once loaded)."""
        return {}

    def loaded(self) -> KernelWeights:
        """This layer's kernel-layout weights; ``LayerInputError`` before ``load`` (or after ``close``)."""
        if self.weights is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        return self.weights

    def pdl_enabled(self) -> bool:
        """Is DeepGEMM's programmatic-dependent-launch switch on in this process (``deep_gemm.set_pdl``)?

        DeepGEMM then launches the mega kernel as a PDL secondary of whatever ran before it. With it on, the
        staging (or fused router + staging) launch is a PDL secondary of the kernel before it (it waits before its
        first load), and the mega kernel is one only if it waits too (:attr:`KERNEL_WAITS_FOR_GRID_DEPENDENCY`),
        else it is launched with the switch off. Off unless the process turned it on (SGLang does by default:
        ``SGLANG_DEEPGEMM_PDL``).
        """
        get = getattr(self.dg, "get_pdl", None)
        return bool(get()) if callable(get) else False

    # ---------------------------------------------------------------- device parts
    def _get_buffer(self) -> Any:
        def build() -> Any:
            fn_name = next(n for n in self.BUFFER_FNS if has_attr(self.dg, n))
            args, kwargs = self.buffer_arguments(self.config, self.group)
            return resolve_attr(self.dg, fn_name)(*args, **kwargs)

        buf, self._buffer_lease = BUFFERS.acquire(self.buffer_cache_key(self.config, self.group), build)
        self._buffer_lease.attach(self)
        return buf

    def close(self) -> None:
        """Drop this layer's weights, output and its hold on the shared symmetric buffer (destroyed with the last
        layer of its shape). The layer cannot run afterwards; garbage collection does the same."""
        self.weights = None
        self.y = None
        self.buffer = None
        lease = getattr(self, "_buffer_lease", None)
        if lease is not None:
            lease.release()

    def load(self, experts: CheckpointExperts) -> None:
        if experts.num_experts != self.config.num_local_experts:
            raise LayerInputError(
                f"{self.key}: got {experts.num_experts} experts, this rank holds {self.config.num_local_experts}"
            )
        chunk = int(self.config.options.get("load_chunk_experts", LOAD_CHUNK_EXPERTS))
        self.weights = self.WEIGHTS.to_kernel(experts, device=self.device, chunk_experts=chunk)
        self._check_signature()

    @property
    def takes_block_m_hint(self) -> bool:
        """Does this build's kernel take ``num_tokens_for_block_m`` (every EP rank picks one BLOCK_M)?"""
        return BLOCK_M_HINT in self._kernel_parameters()

    def _kernel_parameters(self) -> tuple[str, ...]:
        if self._params is None:
            try:
                self._params = tuple(inspect.signature(resolve_attr(self.dg, self.KERNEL)).parameters)
            except (TypeError, ValueError):  # a C++ binding without a signature: take the declared call only
                self._params = ()
        return self._params

    def _check_signature(self) -> None:
        fn = resolve_attr(self.dg, self.KERNEL)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return
        call = self.kernel_call(1)
        unknown = [
            k for k in call.kwargs if k not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values())
        ]
        if unknown:
            provided_by = declared_entry_points(self.SPEC, LIBRARY).provided_by
            raise BackendUnavailableError(
                f"{self.key}: deep_gemm.{self.KERNEL} of this build takes no {', '.join(unknown)}.",
                fix=f"install {provided_by}.",
            )

    def _tokens(self, hidden_states: torch.Tensor) -> int:
        t = int(hidden_states.shape[0])
        if t > self.config.max_tokens_per_rank:
            raise LayerInputError(f"{t} tokens exceed max_tokens_per_rank={self.config.max_tokens_per_rank}")
        return t

    def _run_kernel(self, t: int, num_tokens_for_block_m: int | None, pdl: bool) -> torch.Tensor:
        call = self.kernel_call(t, num_tokens_for_block_m)
        with _pdl_off(self.dg) if pdl and not self.KERNEL_WAITS_FOR_GRID_DEPENDENCY else contextlib.nullcontext():
            resolve_attr(self.dg, call.function)(*call.args, **call.kwargs)
        return call.args[0]

    def forward(
        self,
        hidden_states: torch.Tensor,
        topk_ids: torch.Tensor,
        topk_weights: torch.Tensor,
        num_tokens_for_block_m: int | None = None,
    ) -> torch.Tensor:
        t = self._tokens(hidden_states)
        pdl = self.pdl_enabled()
        # with the switch on, staging is a PDL secondary of the kernel before it (it waits before its first load:
        # safe by contract); the kernel is one only if it waits too (_run_kernel), else DeepGEMM's switch is off
        # for its launch (restored after), so its dispatch loads cannot race the staging stores
        self.STAGING.stage_to_buffer(self.buffer, hidden_states, topk_ids, topk_weights, pdl=pdl)
        return self._run_kernel(t, num_tokens_for_block_m, pdl)

    def routing_path(
        self, hidden_states: torch.Tensor, router_logits: torch.Tensor, bias: torch.Tensor | None = None
    ) -> RoutingPath:
        return fused_routing_path(self.config.group, self.STAGING, hidden_states, router_logits, bias)

    def forward_logits(
        self,
        hidden_states: torch.Tensor,
        router_logits: torch.Tensor,
        *,
        bias: torch.Tensor | None = None,
        token_ids: torch.Tensor | None = None,
        hash_table: torch.Tensor | None = None,
        num_tokens_for_block_m: int | None = None,
    ) -> torch.Tensor:
        """Route and stage in one launch (:mod:`moe_oracle.kernels.router_triton`) where :meth:`routing_path` is
        ``FUSED``, then the kernel; else ``route()`` + :meth:`forward`. Both give the same bytes."""
        g = self.config.group
        if self.routing_path(hidden_states, router_logits, bias) is not RoutingPath.FUSED:
            ids, w = route(g, router_logits, bias=bias, token_ids=token_ids, hash_table=hash_table)
            return self.forward(hidden_states, ids, w, num_tokens_for_block_m)
        if g.routing.correction_bias and bias is None:
            route(g, router_logits)  # raises route()'s error: the group needs its e_score_correction_bias
        from moe_oracle.kernels.router_triton import route_and_stage

        t = self._tokens(hidden_states)
        pdl = self.pdl_enabled()
        buf = self.buffer
        route_and_stage(g.routing, g.top_k, router_logits, hidden_states, buf.x[:t], buf.x_sf[:t], buf.topk_idx,
                        buf.topk_weights, bias=None if bias is None else bias.contiguous(),
                        recipe=str(self.STAGING.triton_recipe),
                        pad_to=int(buf.topk_idx.shape[0]) if self.STAGING.pad_rows else t,
                        pdl=pdl)  # fmt: skip
        return self._run_kernel(t, num_tokens_for_block_m, pdl)
