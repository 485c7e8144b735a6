"""Activation quantization at each :class:`~moe_oracle.rules.recipe.ActQuant` point, per vendor.

Two places quantize activations and they follow different rules:

* **Staging** (the dispatched hidden states, L1 input): done on the host side by the caller
  (DeepGEMM) or at the top of the kernel (AITER). Bit-exact to :mod:`moe_oracle.numerics`:
  ``FP8_G128_FP32`` = ``quantize_fp8(x, 128, "fp32")`` (DeepGEMM ``per_token_cast_to_fp8``,
  use_ue8m0=False); ``MXFP8`` = ``quantize_fp8(x, 32, "ue8m0")`` (DeepGEMM) or
  ``quantize_mxfp8(x, convention="aiter")`` (AITER ``per_1x32_mx_quant(fp8)``, RoundUp);
  ``MXFP4`` = ``quantize_mxfp4(x, convention="aiter")``; ``NVFP4`` = per-token global scale
  ``g_t = max(amax_t, 1e-12) / 2688`` (vLLM ``prepare_megamoe_nvfp4_inputs``) and the
  ``deepgemm_nvfp4`` convention of ``quantize_nvfp4`` row by row (vectorized here, byte-identical).
* **Intermediate** (SwiGLU output, L2 input): inside the kernel's L1 epilogue. DeepGEMM SM90 and
  SM100 compute one power-of-two scale per group as ``2**ceil(log2(amax * fp32(1/448)))`` (no amax
  floor; an all-zero group gets scale 0 and zero values): ``sm90_fp8_mega_moe_get_e4m3_sf_and_sf_inv``
  and ``common/math.cuh::get_e4m3_sf_and_sf_inv``. The SM90 group is 64 channels (32 when the
  kernel picks BLOCK_N 64 for FP8xFP4), SM100 32. AITER's epilogue uses the same rule (its
  ``0x3B124925`` = fp32(1/448) multiply, RoundUp). NVFP4 uses the static ``l2_activation_scale``
  ``s``: ``sf = e4m3(clamp(amax / (6 s), 2**-9, 448))`` per 16 (``quantize_nvfp4`` with
  ``global_scale=s``). ``fp8_scale="exact"`` switches the FP8 intermediate to the FP32
  ``max(amax, 1e-4) / 448`` scale of the PR #323 test reference (docs/performance.md's "emul ref").

Each function returns the dequantized fp32 tensor (what the next GEMM effectively multiplies);
``stage_*`` return the payloads.
"""

from __future__ import annotations

from typing import Literal

import torch

import moe_oracle.numerics as N
from moe_oracle.rules.recipe import ActQuant
from moe_oracle.rules.variant import Numerics as Vendor

Fp8ScaleRule = Literal["kernel", "exact"]

NVFP4_TOKEN_AMAX_FLOOR = 1e-12
NVFP4_TOKEN_DIV = 6.0 * 448.0


# --------------------------------------------------------------------------------------------
# NVFP4 with a per-row global scale
# --------------------------------------------------------------------------------------------
def nvfp4_token_scale(x: torch.Tensor) -> torch.Tensor:
    """Per-token fp32 dequantization scale ``max(amax, 1e-12) / 2688`` of ``[T, H]``."""
    return x.float().abs().amax(dim=-1).clamp(min=NVFP4_TOKEN_AMAX_FLOOR) / NVFP4_TOKEN_DIV


def quantize_nvfp4_rows(x: torch.Tensor, row_scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``quantize_nvfp4(x[t], global_scale=row_scale[t])`` for every row at once (bytes identical).

    Returns packed E2M1 ``uint8 [T, H/2]`` and E4M3 block scales ``[T, H/16]``.
    """
    t, h = x.shape
    if h % N.NVFP4_BLOCK:
        raise ValueError(f"H ({h}) must be a multiple of {N.NVFP4_BLOCK}")
    g = row_scale.float().reshape(t, 1)
    blocks = x.float().reshape(t, h // N.NVFP4_BLOCK, N.NVFP4_BLOCK)
    sf = (blocks.abs().amax(dim=2) / (N.E2M1_MAX * g)).clamp(2.0**-9, N.FP8_E4M3_MAX).to(N.FP8_E4M3_DTYPE)
    codes = N.float_to_e2m1(blocks / (sf.float() * g).unsqueeze(2), "deepgemm")
    return N.pack_e2m1(codes.reshape(t, h)), sf


def dequantize_nvfp4_rows(packed: torch.Tensor, sf: torch.Tensor, row_scale: torch.Tensor) -> torch.Tensor:
    values = N.e2m1_to_float(N.unpack_e2m1(packed))
    t, _h = values.shape
    per_block = sf.float() * row_scale.float().reshape(t, 1)
    return values * per_block.repeat_interleave(N.NVFP4_BLOCK, dim=-1)


# --------------------------------------------------------------------------------------------
# In-kernel power-of-two FP8 scale
# --------------------------------------------------------------------------------------------
_INV_448 = 1.0 / 448.0


def kernel_pow2_scale(amax: torch.Tensor, inv_max: float = _INV_448) -> torch.Tensor:
    """``2**ceil(log2(amax * fp32(inv_max)))`` from the fp32 bit fields (``fast_log2_ceil``).

    amax = 0 gives exponent -127, i.e. the scale bits 0 (0.0), exactly as the kernels compute it.
    """
    scaled = amax.float() * torch.tensor(inv_max, dtype=torch.float32, device=amax.device)
    bits = scaled.contiguous().view(torch.int32)
    exp = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    return (exp.clamp(0, 254) << 23).view(torch.float32)


def _grouped(x: torch.Tensor, group: int) -> torch.Tensor:
    t, k = x.shape
    if k % group:
        raise ValueError(f"K ({k}) must be a multiple of the group ({group})")
    return x.reshape(t, k // group, group)


def fake_quant_fp8_kernel(x: torch.Tensor, group: int) -> torch.Tensor:
    """Kernel-side E4M3 quantization with a power-of-two scale per ``group``: dequantized fp32."""
    g = _grouped(x.float(), group)
    sf = kernel_pow2_scale(g.abs().amax(dim=2))
    bits = sf.view(torch.int32)
    inv = torch.where(bits == 0, torch.full_like(bits, 254 << 23), (254 << 23) - bits).view(torch.float32)
    q = (g * inv.unsqueeze(2)).to(N.FP8_E4M3_DTYPE).float()
    return (q * sf.unsqueeze(2)).reshape(x.shape)


def fake_quant_fp8_exact(x: torch.Tensor, group: int) -> torch.Tensor:
    """E4M3 with FP32 ``max(amax, 1e-4) / 448`` per group (the PR #323 test reference)."""
    g = _grouped(x.float(), group)
    sf = g.abs().amax(dim=2).clamp(min=1e-4) / N.FP8_E4M3_MAX
    q = (g / sf.unsqueeze(2)).to(N.FP8_E4M3_DTYPE).float()
    return (q * sf.unsqueeze(2)).reshape(x.shape)


# --------------------------------------------------------------------------------------------
# Staging (L1 input) and the emulation's view of it
# --------------------------------------------------------------------------------------------
def stage_input(x: torch.Tensor, act: ActQuant, vendor: Vendor = "deepgemm") -> dict[str, torch.Tensor]:
    """Quantize hidden states ``[T, H]`` (bf16) as the kernel's staging expects them.

    Keys: ``x`` (values) and, by format, ``x_sf`` (fp32 per 128 for SM90; UE8M0 fp32 scales for
    MX formats; E4M3 block scales for NVFP4) and ``x_scale`` (NVFP4 per-token fp32).
    """
    if act is ActQuant.BF16:
        return {"x": x.to(torch.bfloat16)}
    if act is ActQuant.FP8_G128_FP32:
        v, sf = N.quantize_fp8(x, 128, "fp32")
        return {"x": v, "x_sf": sf}
    if act is ActQuant.FP8_G64_FP32:
        v, sf = N.quantize_fp8(x, 64, "fp32")
        return {"x": v, "x_sf": sf}
    if act is ActQuant.MXFP8:
        if vendor == "aiter":
            v, sf = N.quantize_mxfp8(x, 32, convention="aiter")
        else:
            v, sf = N.quantize_fp8(x, 32, "ue8m0")
        return {"x": v, "x_sf": sf}
    if act is ActQuant.MXFP4:
        v, sf = N.quantize_mxfp4(x, 32, "aiter" if vendor == "aiter" else "deepgemm")
        return {"x": v, "x_sf": sf}
    if act is ActQuant.NVFP4:
        g = nvfp4_token_scale(x)
        v, sf = quantize_nvfp4_rows(x, g)
        return {"x": v, "x_sf": sf, "x_scale": g}
    raise ValueError(f"unknown activation quantization {act}")


def dequantize_staged(staged: dict[str, torch.Tensor], act: ActQuant) -> torch.Tensor:
    """fp32 values of :func:`stage_input`'s payload."""
    x = staged["x"]
    if act is ActQuant.BF16:
        return x.float()
    if act is ActQuant.FP8_G128_FP32:
        return N.dequantize_fp8(x, staged["x_sf"], 128)
    if act is ActQuant.FP8_G64_FP32:
        return N.dequantize_fp8(x, staged["x_sf"], 64)
    if act is ActQuant.MXFP8:
        return N.dequantize_mxfp8(x, staged["x_sf"], 32)
    if act is ActQuant.MXFP4:
        return N.dequantize_mxfp4(x, staged["x_sf"], 32)
    if act is ActQuant.NVFP4:
        return dequantize_nvfp4_rows(x, staged["x_sf"], staged["x_scale"])
    raise ValueError(f"unknown activation quantization {act}")


def fake_quant_input(x: torch.Tensor, act: ActQuant, vendor: Vendor = "deepgemm") -> torch.Tensor:
    """Hidden states as the L1 GEMM sees them (fp32), bit-exact to the staging."""
    return dequantize_staged(stage_input(x, act, vendor), act)


def fake_quant_intermediate(
    a: torch.Tensor,
    act: ActQuant,
    vendor: Vendor = "deepgemm",
    *,
    l2_activation_scale: float | None = None,
    fp8_scale: Fp8ScaleRule = "kernel",
) -> torch.Tensor:
    """The SwiGLU output ``[M, I]`` (fp32) as the L2 GEMM sees it."""
    if act is ActQuant.BF16:
        return a.to(torch.bfloat16).float()
    if act in (ActQuant.FP8_G128_FP32, ActQuant.FP8_G64_FP32, ActQuant.MXFP8):
        group = {ActQuant.FP8_G128_FP32: 128, ActQuant.FP8_G64_FP32: 64, ActQuant.MXFP8: 32}[act]
        if fp8_scale == "exact":
            return fake_quant_fp8_exact(a, group)
        return fake_quant_fp8_kernel(a, group)
    if act is ActQuant.MXFP4:
        v, sf = N.quantize_mxfp4(a.float(), 32, "aiter" if vendor == "aiter" else "deepgemm")
        return N.dequantize_mxfp4(v, sf, 32)
    if act is ActQuant.NVFP4:
        s = 1.0 if l2_activation_scale is None else float(l2_activation_scale)
        v, sf = N.quantize_nvfp4(a.float(), global_scale=s)
        return N.dequantize_nvfp4(v, sf, global_scale=s)
    raise ValueError(f"unknown activation quantization {act}")
