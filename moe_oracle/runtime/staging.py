"""Eager torch activation staging fused with the top-k repack (the reference for the Triton path).

``stage_inputs`` quantizes the hidden states as the variant's kernel expects them in its input
buffers (see :mod:`moe_oracle.runtime.actquant`, bit-exact to :mod:`moe_oracle.numerics`) and
repacks the routing: ids to int64 (int32 for AITER) with ``-1`` on masked slots and padding rows,
weights to fp32 with ``0`` there, optionally times a routed scaling factor (vLLM 0.33 §2.8
``prepare_megamoe_inputs``; DeepGEMM ``mega_moe_pre_dispatch_sm90(..., routed_scaling_factor)``).

Scale layouts (``x_sf``):

=========== ================================================================================
``fp32``    ``[T, H/128]`` fp32 (SM90 ``buf.x_sf``)
``ue8m0``   ``[T, H/128]`` int32, four UE8M0 bytes per int32, group ``4j`` in the low byte
            (SM100 ``buf.x_sf``; ``per_token_cast_to_fp8(x, True, 32, use_packed_ue8m0=True)``)
``e4m3``    ``[T, H/64]`` int32, four E4M3 block-scale bytes per int32, plus ``x_scales [T]``
            fp32 per-token scales (SM100 NVFP4 ``buf.x_sf`` / ``buf.x_scales``)
``bytes``   ``[T, H/32]`` uint8 E8M0 (AITER ``per_1x32_mx_quant``)
=========== ================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

import moe_oracle.numerics as N
from moe_oracle.rules.recipe import ActQuant
from moe_oracle.rules.variant import ScaleLayout
from moe_oracle.runtime.actquant import Vendor, stage_input

if TYPE_CHECKING:
    from moe_oracle.rules import VariantSpec


def repack_topk(
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    *,
    is_padding: torch.Tensor | None = None,
    routed_scaling_factor: float = 1.0,
    ids_dtype: torch.dtype = torch.int64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """ids -> ``ids_dtype`` with ``-1`` on negative ids and padding rows; weights fp32 (0 there) * rsf."""
    ids = topk_ids.to(torch.int64)
    masked = ids < 0
    if is_padding is not None:
        masked = masked | is_padding.to(torch.bool).reshape(-1, 1)
    ids = ids.masked_fill(masked, -1).to(ids_dtype)
    w = topk_weights.float()
    if routed_scaling_factor != 1.0:
        w = w * float(routed_scaling_factor)
    w = w.masked_fill(masked, 0.0)
    return ids, w


def _layout_scale(sf: torch.Tensor, layout: ScaleLayout) -> torch.Tensor:
    if layout == "fp32":
        return sf.float()
    if layout == "ue8m0":
        return N.pack_ue8m0_to_int32(sf)
    if layout == "e4m3":
        return sf.view(torch.uint8).contiguous().view(torch.int32)
    if layout == "bytes":
        return N.fp32_to_ue8m0_bytes(sf, check=False)
    raise ValueError(f"unknown scale layout {layout!r}")


def stage_inputs(
    hidden_states: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    act: ActQuant,
    *,
    vendor: Vendor = "deepgemm",
    scale_layout: ScaleLayout = "none",
    quantize: bool = True,
    is_padding: torch.Tensor | None = None,
    routed_scaling_factor: float = 1.0,
    ids_dtype: torch.dtype = torch.int64,
) -> dict[str, torch.Tensor]:
    """Kernel-ready inputs: ``x`` (+ ``x_sf``, ``x_scales``), ``topk_idx``, ``topk_weights``.

    ``quantize=False`` passes the BF16 hidden states through (kernels that quantize inside: AITER).
    """
    if hidden_states.dim() != 2:
        raise ValueError(f"hidden_states must be [T, H], got {tuple(hidden_states.shape)}")
    ids, w = repack_topk(
        topk_ids,
        topk_weights,
        is_padding=is_padding,
        routed_scaling_factor=routed_scaling_factor,
        ids_dtype=ids_dtype,
    )
    out: dict[str, torch.Tensor] = {"topk_idx": ids, "topk_weights": w}
    if not quantize or act is ActQuant.BF16:
        out["x"] = hidden_states.to(torch.bfloat16).contiguous()
        return out
    staged = stage_input(hidden_states, act, vendor)
    out["x"] = staged["x"]
    if "x_sf" in staged:
        out["x_sf"] = _layout_scale(staged["x_sf"], scale_layout)
    if "x_scale" in staged:
        out["x_scales"] = staged["x_scale"]
    return out


def stage_into(
    buffer: Any, staged: dict[str, torch.Tensor], num_tokens: int | None = None, *, pad_rows: bool = True
) -> None:
    """Copy staged tensors into the first ``T`` rows of the buffer's views (``buffer.x``, ``.x_sf``, ...)
    and, with ``pad_rows``, mark rows ``[T, capacity)`` of ``topk_idx``/``topk_weights`` as padding (-1 / 0).

    Views may have any strides (MN-major scale views included); nothing is allocated.
    """
    t = staged["x"].shape[0] if num_tokens is None else num_tokens
    for name, value in staged.items():
        view = getattr(buffer, name, None)
        if view is None:
            raise AttributeError(f"the kernel buffer has no '{name}' view")
        target = view[:t]
        if value.dtype != target.dtype and value.element_size() == target.element_size():
            value = value.view(target.dtype)
        target.copy_(value)
    if not pad_rows:
        return
    # rows past T: no token (id -1, weight 0), for kernels that read the whole capacity
    if "topk_idx" in staged and hasattr(buffer, "topk_idx"):
        buffer.topk_idx[t:].fill_(-1)
    if "topk_weights" in staged and hasattr(buffer, "topk_weights"):
        buffer.topk_weights[t:].fill_(0)


def _triton_stage() -> Any:
    try:
        from moe_oracle.kernels.staging_triton import stage
    except Exception:  # no Triton (CPU builds): the eager path serves
        return None
    return stage


@dataclass(frozen=True)
class StagingSpec:
    """How one variant's kernel wants its inputs staged (built from its ``VariantSpec.staging``
    by :meth:`declared`; the DeepGEMM kernel classes stage with it).

    ``triton_recipe`` names the fused Triton kernel (:mod:`moe_oracle.kernels.staging_triton`) that
    writes the same bytes straight into the kernel's buffer views on a GPU, with no allocation and
    no host sync (so a forward is CUDA-graph capturable); the eager torch path is the reference and
    the fallback (CPU tensors, a padding mask, shapes the Triton kernel does not tile).
    """

    act: ActQuant
    scale_layout: ScaleLayout
    vendor: Vendor = "deepgemm"
    quantize_on_host: bool = True
    ids_dtype: torch.dtype = torch.int64
    triton_recipe: str | None = None
    pad_rows: bool = True

    @classmethod
    def declared(cls, spec: VariantSpec) -> StagingSpec:
        """The staging ``spec`` (a ``VariantSpec``) declares: its ``staging``, ``recipe.l1_input`` and ``numerics``."""
        st = spec.staging
        if st is None:
            raise ValueError(f"{spec.key} declares no staging (VariantSpec.staging)")
        return cls(
            spec.recipe.l1_input,
            st.scale_layout,
            vendor=spec.numerics,
            quantize_on_host=st.quantize_on_host,
            ids_dtype=getattr(torch, st.ids_dtype),
            triton_recipe=st.triton_recipe,
            pad_rows=st.pad_rows,
        )

    def stage(
        self,
        hidden_states: torch.Tensor,
        topk_ids: torch.Tensor,
        topk_weights: torch.Tensor,
        *,
        is_padding: torch.Tensor | None = None,
        routed_scaling_factor: float = 1.0,
    ) -> dict[str, torch.Tensor]:
        """Kernel-ready ``x`` (+ scales), ``topk_idx`` and ``topk_weights`` for ``[T, H]`` hidden states."""
        return stage_inputs(
            hidden_states,
            topk_ids,
            topk_weights,
            self.act,
            vendor=self.vendor,
            scale_layout=self.scale_layout,
            quantize=self.quantize_on_host,
            is_padding=is_padding,
            routed_scaling_factor=routed_scaling_factor,
            ids_dtype=self.ids_dtype,
        )

    def quantize_like_kernel(self, hidden_states: torch.Tensor) -> dict[str, torch.Tensor]:
        """The activation payload the kernel consumes (quantized here even when the kernel does it itself)."""
        empty = torch.zeros((hidden_states.shape[0], 1), dtype=torch.int64, device=hidden_states.device)
        staged = stage_inputs(
            hidden_states, empty, empty.float(), self.act, vendor=self.vendor, scale_layout=self.scale_layout
        )
        return {k: v for k, v in staged.items() if k.startswith("x")}

    def uses_triton(self, hidden_states: torch.Tensor, is_padding: torch.Tensor | None = None) -> bool:
        return (
            self.triton_recipe is not None
            and is_padding is None
            and hidden_states.is_cuda
            and hidden_states.shape[-1] % 512 == 0
            and _triton_stage() is not None
        )

    def stage_to_buffer(
        self,
        buffer: Any,
        hidden_states: torch.Tensor,
        topk_ids: torch.Tensor,
        topk_weights: torch.Tensor,
        *,
        is_padding: torch.Tensor | None = None,
        routed_scaling_factor: float = 1.0,
        pdl: bool = False,
    ) -> int:
        """Stage into ``buffer``'s views (``x``, ``x_sf``, ..., ``topk_idx``, ``topk_weights``); returns T.

        ``pdl``: the Triton launch is a programmatic dependent launch (see
        :mod:`moe_oracle.kernels.staging_triton`); the eager path ignores it.
        """
        t = int(hidden_states.shape[0])
        if self.uses_triton(hidden_states, is_padding):
            _triton_stage()(
                hidden_states,
                topk_ids,
                topk_weights,
                buffer.x[:t],
                buffer.x_sf[:t],
                buffer.topk_idx,
                buffer.topk_weights,
                recipe=self.triton_recipe,
                routed_scaling_factor=routed_scaling_factor,
                pad_to=int(buffer.topk_idx.shape[0]) if self.pad_rows else t,
                pdl=pdl,
            )
            return t
        staged = self.stage(
            hidden_states, topk_ids, topk_weights, is_padding=is_padding, routed_scaling_factor=routed_scaling_factor
        )
        stage_into(buffer, staged, t, pad_rows=self.pad_rows)
        return t
