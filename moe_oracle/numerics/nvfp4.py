"""NVFP4: E2M1 elements with one E4M3 ("UE4M3") scale per 16 elements, optional fp32 global scale.

Upstream deepseek-ai/DeepGEMM (main at 54e22612409371d6364144b69086735beb54e98b) has no NVFP4
helper; the DeepGEMM forks that ship one disagree, so two of them are implemented as named
conventions.  Both use DeepGEMM's ``_quantize_to_fp4_e2m1`` element rounding (nearest, ties
towards zero, no negative zero, NaN -> code 0, saturation to 6; see ``fp4.py``) and pack element
2i into the low nibble.

``convention="deepgemm"`` — the ``deep_gemm/utils/math.py`` one: sgl-project/DeepGEMM
``per_token_cast_to_nvfp4(x, gran_k=16, use_packed_ue4m3=False)`` read at commit
1c99f424dec75011e18967e99753da050e92c1b4.  No global scale (implicitly 1):
    * ``sf = (amax_fp32 / 6).to(float8_e4m3fn)`` (torch's round-to-nearest-even cast, **no
      clamp**: an all-zero block gets scale 0, a block with amax/6 below 2**-10 rounds to scale
      0, amax/6 above 448 is whatever torch's cast does: saturation to 448 in torch >= 2.13, NaN
      for >= 480 in older releases);
    * ``inv = 1 / sf.float()`` where ``sf > 0`` else 0 (so a zero or NaN scale zeroes the block);
    * codes of ``x.float() * inv``.
    K must be a multiple of 16; scales are returned as ``float8_e4m3fn`` (the fork returns the
    same values as fp32 via ``.float()``, or four bytes per int32 with ``use_packed_ue4m3``).

``convention="deepgemm_nvfp4"`` — the ``deep_gemm/utils/nvfp4.py`` one: vllm-project/DeepGEMM
``per_token_cast_to_nvfp4(x, global_scale=1.0)`` / ``cast_back_from_nvfp4`` read at commit
592a15611cc8cf30ed8cb0ca1977d65700868db9.  With a positive finite global (dequantization) scale
``g`` (typically tensor_amax / (6 * 448) = amax / 2688):
    * ``sf = (amax_fp32 / (6 * g)).clamp(2**-9, 448).to(float8_e4m3fn)`` (``6 * g`` is formed
      in Python float64 and rounded to fp32 by torch);
    * codes of ``x.float() / (sf.float() * g)`` (a true division, not a reciprocal product);
    * an all-zero block gets scale 2**-9 (code 0x01) and zero codes; NaN amax gives a NaN scale
      (0x7F) and zero codes; the clamp keeps overflow at 448.
    The fork requires K % 64 == 0 (it always packs four scales per int32); here K % 16 == 0 is
    enough unless ``packed_scales``.

A third variant seen in another DeepGEMM fork's math.py (``per_token_cast_to_nvfp4(x)`` with
``.clamp_min(2**-9)`` and ``x * sf.float().reciprocal()``) is equal to "deepgemm_nvfp4" with
``g = 1`` except that it does not clamp at 448 and multiplies by the reciprocal instead of
dividing (a 1-ulp difference in the scaled value that can flip a tie); it is not implemented.

``quantize_nvfp4(x, global_scale=None)`` picks "deepgemm" when no global scale is given and
"deepgemm_nvfp4" otherwise; pass ``convention`` to force one.

Dequantization (``cast_back_from_nvfp4``): ``e2m1_value * (sf.float() * g)`` with the product
``sf * g`` formed first, in fp32; without a global scale ``e2m1_value * sf.float()``.

Devices: ``amax / 6.0`` and ``amax / (6 * g)`` are tensor / Python-scalar divisions, which torch
evaluates on CUDA as a product with the fp32 reciprocal; the E4M3 scale can therefore differ by one
step between CPU and CUDA when the quotient sits on a rounding tie (the same holds for the vendor
helpers on each device).  NaN codes/payloads are the device's, as in ``fp8.py``.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from .formats import (
    E2M1_MAX,
    FP8_E4M3_DTYPE,
    NVFP4_BLOCK,
    NVFP4_SCALE_MAX,
    NVFP4_SCALE_MIN,
)
from .fp4 import e2m1_to_float, float_to_e2m1, pack_e2m1, unpack_e2m1
from .fp8 import _check_float_input

NvFp4Convention = Literal["deepgemm", "deepgemm_nvfp4"]


def _check_global_scale(global_scale: float) -> float:
    g = float(global_scale)
    if not (g > 0 and math.isfinite(g)):
        raise ValueError(f"global_scale must be a positive finite number, got {global_scale}")
    return g


def quantize_nvfp4(
    x: torch.Tensor,
    global_scale: float | None = None,
    *,
    convention: NvFp4Convention | None = None,
    packed_scales: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize to NVFP4 along the last dim (blocks of 16).

    Args:
        x: (..., K) floating tensor, K a multiple of 16 (of 64 when ``packed_scales``).
        global_scale: per-tensor fp32 *dequantization* scale g (``x ~= e2m1 * sf * g``), a Python
            number; None means "no global scale" (convention "deepgemm").
        convention: "deepgemm" (math.py, no global scale) or "deepgemm_nvfp4" (nvfp4.py,
            ``global_scale`` defaults to 1.0); None chooses by whether ``global_scale`` is given.
        packed_scales: return the E4M3 scale bytes four per int32 (first block in the least
            significant byte), the layout the DeepGEMM kernels read.

    Returns:
        ``(packed_fp4, scales)``: packed_fp4 ``uint8`` (..., K / 2), element 2i in the low
        nibble; scales ``float8_e4m3fn`` (..., K / 16), or int32 (..., K / 64) when
        ``packed_scales``.
    """
    _check_float_input(x)
    if convention is None:
        convention = "deepgemm" if global_scale is None else "deepgemm_nvfp4"
    lead, k = x.shape[:-1], x.shape[-1]
    if k % NVFP4_BLOCK:
        raise ValueError(f"K ({k}) must be a multiple of {NVFP4_BLOCK}")
    if packed_scales and k % (4 * NVFP4_BLOCK):
        raise ValueError(f"packed scales need K ({k}) to be a multiple of {4 * NVFP4_BLOCK}")
    rows = x.reshape(-1, k)
    m = rows.shape[0]
    blocks = rows.view(m, k // NVFP4_BLOCK, NVFP4_BLOCK)
    if convention == "deepgemm":
        if global_scale is not None:
            raise ValueError("convention='deepgemm' (math.py) takes no global scale; use 'deepgemm_nvfp4'")
        sf = (blocks.abs().float().amax(dim=2) / E2M1_MAX).to(FP8_E4M3_DTYPE)
        sf_f = sf.float()
        inv = torch.where(sf_f > 0, 1.0 / sf_f, torch.zeros_like(sf_f))
        codes = float_to_e2m1(blocks.float() * inv.unsqueeze(2), "deepgemm")
    elif convention == "deepgemm_nvfp4":
        g = _check_global_scale(1.0 if global_scale is None else global_scale)
        fblocks = blocks.float()
        sf = (fblocks.abs().amax(dim=2) / (E2M1_MAX * g)).clamp(NVFP4_SCALE_MIN, NVFP4_SCALE_MAX)
        sf = sf.to(FP8_E4M3_DTYPE)
        codes = float_to_e2m1(fblocks / (sf.float().unsqueeze(2) * g), "deepgemm")
    else:
        raise ValueError(f"convention must be 'deepgemm' or 'deepgemm_nvfp4', got {convention!r}")
    fp4 = pack_e2m1(codes.view(m, k)).reshape(*lead, k // 2)
    sf = sf.reshape(*lead, k // NVFP4_BLOCK).contiguous()
    if packed_scales:
        return fp4, sf.view(torch.int32)
    return fp4, sf


def nvfp4_scales_to_fp32(scales: torch.Tensor) -> torch.Tensor:
    """E4M3 block scales (float8_e4m3fn, uint8 bytes, or int32 with four bytes each) -> fp32."""
    if scales.dtype == FP8_E4M3_DTYPE:
        return scales.float()
    if scales.dtype in (torch.uint8, torch.int32):
        return scales.contiguous().view(torch.uint8).view(FP8_E4M3_DTYPE).float()
    if scales.dtype.is_floating_point:
        return scales.float()
    raise TypeError(f"unsupported NVFP4 scale dtype {scales.dtype}")


def dequantize_nvfp4(
    packed_fp4: torch.Tensor,
    scales: torch.Tensor,
    global_scale: float | None = None,
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Inverse of ``quantize_nvfp4``: ``e2m1_value * (sf * g)`` per block of 16, in fp32.

    Args:
        packed_fp4: (..., K / 2) uint8 / int8 / float4_e2m1fn_x2.
        scales: (..., K / 16) float8_e4m3fn (or fp32 values, uint8 bytes), or (..., K / 64) int32.
        global_scale: the g used to quantize (None for convention "deepgemm").
        out_dtype: dtype of the result.

    Returns:
        (..., K) tensor of ``out_dtype``.
    """
    values = e2m1_to_float(unpack_e2m1(packed_fp4))
    k = values.shape[-1]
    sf = nvfp4_scales_to_fp32(scales)
    if global_scale is not None:
        sf = sf * _check_global_scale(global_scale)
    if sf.shape[-1] * NVFP4_BLOCK != k:
        raise ValueError(f"need {k // NVFP4_BLOCK} scales per row for K={k}; got {sf.shape[-1]}")
    return (values * sf.repeat_interleave(NVFP4_BLOCK, dim=-1)).to(out_dtype)
