"""Input staging for this variant: AITER ``MegaMoEV2(quant='a8w4').forward(x_bf16, wts, topk_ids)``:
BF16 x (the kernel quantizes to MXFP8 itself, ``per_1x32_mx_quant(fp8)``), fp32 weights, int32 ids.
``quantize_like_kernel`` gives the payload the kernel makes (``forward_prequant`` input).

Eager torch reference, bit-exact to ``moe_oracle.numerics`` (see ``moe_oracle.runtime.staging``).
"""

from __future__ import annotations

from typing import Any

import torch

from moe_oracle.runtime.recipe import ActQuant
from moe_oracle.runtime.staging import stage_inputs, stage_into

ACT = ActQuant.MXFP8
VENDOR = "aiter"
SCALE_LAYOUT = "bytes"
QUANTIZE_ON_HOST = False
IDS_DTYPE = torch.int32


def stage(
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
        ACT,
        vendor=VENDOR,
        scale_layout=SCALE_LAYOUT,
        quantize=QUANTIZE_ON_HOST,
        is_padding=is_padding,
        routed_scaling_factor=routed_scaling_factor,
        ids_dtype=IDS_DTYPE,
    )


def quantize_like_kernel(hidden_states: torch.Tensor) -> dict[str, torch.Tensor]:
    """The activation payload the kernel consumes (quantized here even when the kernel does it itself)."""
    empty_ids = torch.zeros((hidden_states.shape[0], 1), dtype=torch.int64, device=hidden_states.device)
    staged = stage_inputs(
        hidden_states, empty_ids, empty_ids.float(), ACT, vendor=VENDOR, scale_layout=SCALE_LAYOUT, quantize=True
    )
    return {k: v for k, v in staged.items() if k.startswith("x")}


def stage_to_buffer(
    buffer: Any,
    hidden_states: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    *,
    is_padding: torch.Tensor | None = None,
    routed_scaling_factor: float = 1.0,
) -> int:
    """Stage into ``buffer``'s views (``x``, ``x_sf``, ..., ``topk_idx``, ``topk_weights``); returns T."""
    staged = stage(
        hidden_states, topk_ids, topk_weights, is_padding=is_padding, routed_scaling_factor=routed_scaling_factor
    )
    stage_into(buffer, staged)
    return int(hidden_states.shape[0])
