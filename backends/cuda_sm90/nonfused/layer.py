"""The non-fused FP8 MoE behind the same interface: Triton glue around two grouped GEMMs.

This is the path the oracle ranks against the fused kernels (declared in ``.config``): quantize
and permute, ``m_grouped_fp8_gemm_nt_contiguous`` for W13, SwiGLU with requantization,
``m_grouped_fp8_gemm_nt_contiguous`` for W2, unpermute and weighted sum (docs/performance.md). Two grouped
layouts, same rows and kernels:

- ``psum``: one end offset per expert; DeepGEMM's scheduler visits only the real 128-row blocks;
- ``m_indices``: the expert of every row, ``-1`` on padding rows (what the engines' DeepGEMM paths
  pass); a CUDA graph needs a fixed row count, so the data-independent bound is launched
  (:func:`rows_bound`) and all-padding tail blocks still stream weights.

Weights are the checkpoint's FP8 block-128 experts as stored (``[E, N, K]`` E4M3 with ``[E, N/128,
K/128]`` FP32 scales, the SM90 grouped GEMM's own layout; UE8M0 scale bytes are widened to FP32
exactly). Every buffer is preallocated for ``max_tokens_per_rank``; ``forward`` launches a fixed
sequence with no host synchronization and no allocation (graph capturable). ``gemm="torch"``
replaces the grouped GEMM by a dequantize-and-matmul reference (any device, Triton's interpreter
included; it synchronizes): the glue kernels are tested with it on CPUs.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from moe_oracle.cost.grouped_gemm import rows_bound
from moe_oracle.model.types import WeightFormat
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, LayerConfig, MegaMoELayer
from moe_oracle.runtime.vendor import require_attrs, require_cuda_arch, require_module

Layout = Literal["psum", "m_indices"]
GemmImpl = Literal["deep_gemm", "torch"]
GEMM_FN = "m_grouped_fp8_gemm_nt_contiguous"
__all__ = ["GroupedGemmMoE", "grouped_gemm_torch", "rows_bound"]
ALIGN_FN = "get_mk_alignment_for_contiguous_layout"


def grouped_gemm_torch(
    a: torch.Tensor, sfa: torch.Tensor, w: torch.Tensor, wsf: torch.Tensor, out: torch.Tensor, m_indices: torch.Tensor
) -> None:
    """Reference grouped GEMM: ``out[r] = bf16(deq(a[r]) @ deq(w[m_indices[r]]).T)`` for rows with an expert.

    ``a [M, K]`` E4M3 with ``sfa [M, K/128]`` FP32; ``w [E, N, K]`` E4M3 with ``wsf [E, N/128, K/128]``.
    """
    from moe_oracle.numerics import dequantize_fp8, dequantize_fp8_block

    ad = dequantize_fp8(a, sfa, 128)
    for e in torch.unique(m_indices[m_indices >= 0]).tolist():
        rows = torch.nonzero(m_indices == e, as_tuple=True)[0]
        out[rows] = (ad[rows] @ dequantize_fp8_block(w[e], wsf[e]).t()).to(out.dtype)


class GroupedGemmMoE(MegaMoELayer):
    """Non-fused FP8 MoE of one layer group on one rank (``nonfused:deepgemm_fp8_<layout>``)."""

    key = "nonfused:deepgemm_fp8"

    def __init__(self, config: LayerConfig, *, layout: Layout = "psum", gemm: GemmImpl = "deep_gemm") -> None:
        super().__init__(config)
        if layout not in ("psum", "m_indices"):
            raise LayerInputError(f"unknown grouped layout {layout!r}; use psum or m_indices")
        self.layout = layout
        self.gemm = gemm
        self.key = f"nonfused:deepgemm_fp8_{layout}" + ("" if gemm == "deep_gemm" else f"[{gemm} gemm]")
        g = config.group
        q = g.weight_quant
        if q.format is not WeightFormat.FP8_BLOCK or q.block != (128, 128):
            raise LayerInputError(
                f"{self.key}: routed experts are {q.label()}; this path runs FP8 block-128 experts",
                fix="convert the experts to FP8 block-128 at load (moe_oracle.runtime.format_conversion), or use a "
                "fused backend",
            )
        if config.ep_size != 1:
            raise LayerInputError(
                f"{self.key}: runs one rank's experts (ep_size={config.ep_size}); wrap it with runtime.ep.ep_moe for EP"
            )
        if gemm == "deep_gemm":
            fix = "install a DeepGEMM build for SM90 (deep_gemm with m_grouped_fp8_gemm_nt_contiguous)"
            self.dg: Any = require_module("deep_gemm", key=self.key, fix=fix)
            require_attrs(self.dg, key=self.key, all_of=(GEMM_FN, ALIGN_FN), fix=fix)
            self.device = require_cuda_arch(key=self.key, majors=(9,), device=config.device, fix="run on SM90")
            self.align = int(getattr(self.dg, ALIGN_FN)())
        elif gemm == "torch":
            self.dg = None
            self.device = torch.device(config.device)
            self.align = 128
        else:
            raise LayerInputError(f"unknown grouped GEMM {gemm!r}; use deep_gemm or torch")
        self._allocate()
        self.w13: torch.Tensor | None = None

    def rows(self, tokens: int) -> int:
        g = self.config.group
        return rows_bound(tokens, g.top_k, self.config.num_local_experts, self.align)

    def _allocate(self) -> None:
        g, cfg, dev = self.config.group, self.config, self.device
        e, k, h, i = cfg.num_local_experts, g.top_k, g.hidden_size, g.moe_intermediate_size
        r = self.rows(cfg.max_tokens_per_rank)
        i32 = dict(dtype=torch.int32, device=dev)
        self.counts = torch.zeros(e, **i32)
        self.starts = torch.zeros(e, **i32)
        self.ends = torch.zeros(e, **i32)
        self.slot_pos = torch.zeros(cfg.max_tokens_per_rank * k, **i32)
        self.row_of_slot = torch.zeros(cfg.max_tokens_per_rank * k, **i32)
        self.m_indices = torch.full((r,), -1, **i32)
        fp8 = torch.float8_e4m3fn
        self.a1 = torch.empty(r, h, dtype=fp8, device=dev)
        self.sf1 = torch.empty(r * (h // 128), dtype=torch.float32, device=dev)
        self.h1 = torch.empty(r, 2 * i, dtype=torch.bfloat16, device=dev)
        self.a2 = torch.empty(r, i, dtype=fp8, device=dev)
        self.sf2 = torch.empty(r * (i // 128), dtype=torch.float32, device=dev)
        self.h2 = torch.empty(r, h, dtype=torch.bfloat16, device=dev)
        self.y = torch.empty(cfg.max_tokens_per_rank, h, dtype=torch.bfloat16, device=dev)

    def buffer_bytes(self) -> int:
        """Bytes of the preallocated activation buffers (what this path adds beyond the weights)."""
        bufs: tuple[torch.Tensor, ...] = (self.counts, self.starts, self.ends, self.slot_pos, self.row_of_slot)
        bufs += (self.m_indices, self.a1, self.sf1, self.h1, self.a2, self.sf2, self.h2, self.y)
        return sum(t.numel() * t.element_size() for t in bufs)

    def load(self, experts: CheckpointExperts) -> None:
        if experts.num_experts != self.config.num_local_experts:
            raise LayerInputError(
                f"{self.key}: got {experts.num_experts} experts, this rank holds {self.config.num_local_experts}"
            )
        if experts.quant.format is not WeightFormat.FP8_BLOCK or experts.w13_scale is None or experts.w2_scale is None:
            raise LayerInputError(f"{self.key}: needs FP8 block-128 experts with scales, got {experts.quant.label()}")
        self.w13 = experts.w13.to(self.device).view(torch.float8_e4m3fn).contiguous()
        self.w2 = experts.w2.to(self.device).view(torch.float8_e4m3fn).contiguous()
        self.w13_sf = _fp32_scales(experts.w13_scale).to(self.device).contiguous()
        self.w2_sf = _fp32_scales(experts.w2_scale).to(self.device).contiguous()

    def _grouped_gemm(self, a, sf_flat, rows, w, wsf, out) -> None:
        k = a.shape[1]
        sfa = sf_flat[: rows * (k // 128)].view(k // 128, rows).t()  # MN-major, stride (1, rows)
        if self.dg is None:
            grouped_gemm_torch(a[:rows], sfa, w, wsf, out[:rows], self.m_indices[:rows])
            return
        psum = self.layout == "psum"
        layout = self.ends if psum else self.m_indices[:rows]
        getattr(self.dg, GEMM_FN)(
            (a[:rows], sfa), (w, wsf), out[:rows], layout, use_psum_layout=psum, disable_ue8m0_cast=True
        )

    def forward(self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        from moe_oracle.kernels import grouped_triton as K

        if self.w13 is None:
            raise LayerInputError(f"{self.key}: call load(experts) before forward")
        t = int(hidden_states.shape[0])
        if t > self.config.max_tokens_per_rank:
            raise LayerInputError(f"{t} tokens exceed max_tokens_per_rank={self.config.max_tokens_per_rank}")
        rows = self.rows(t)
        act = self.config.group.activation
        first = self.config.first_local_expert
        self.counts.zero_()
        self.m_indices[:rows].fill_(-1)
        K.count_routes(topk_ids, self.counts, self.slot_pos, first_expert=first)
        K.expert_layout(self.counts, self.starts, self.ends, align=self.align)
        K.quantize_scatter(
            hidden_states, topk_ids, self.slot_pos, self.starts, self.a1, self.sf1, self.row_of_slot,
            self.m_indices, rows=rows, first_expert=first,
        )  # fmt: skip
        self._grouped_gemm(self.a1, self.sf1, rows, self.w13, self.w13_sf, self.h1)
        K.swiglu_quantize(
            self.h1[:rows], self.m_indices, self.a2, self.sf2, rows=rows,
            clamp=None if act.clamp is None else float(act.clamp), alpha=act.alpha, beta=act.beta,
        )  # fmt: skip
        self._grouped_gemm(self.a2, self.sf2, rows, self.w2, self.w2_sf, self.h2)
        y = self.y[:t]
        K.combine(self.h2, self.row_of_slot, topk_weights, y)
        return y

    def staged_input(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """The FP8 input this path computes on, dequantized (for the FP32 reference)."""
        return fp8_g128_roundtrip(hidden_states)


def fp8_g128_roundtrip(x: torch.Tensor) -> torch.Tensor:
    """``x`` quantized to E4M3 with FP32 scales per 128 channels and dequantized (FP32): the SM90 staged input."""
    from moe_oracle.numerics import dequantize_fp8, quantize_fp8

    q, s = quantize_fp8(x, 128, "fp32")
    return dequantize_fp8(q, s, 128)


def _fp32_scales(scale: torch.Tensor) -> torch.Tensor:
    from moe_oracle.numerics.fp8 import scales_to_fp32

    return scales_to_fp32(scale)  # UE8M0 bytes widen exactly (2^(e - 127))
