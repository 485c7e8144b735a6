"""FP8 E4M3 quantization with per-token groups or 2-D blocks, bit-identical to DeepGEMM.

Reference: deepseek-ai/DeepGEMM ``deep_gemm/utils/math.py`` (``per_token_cast_to_fp8``,
``per_block_cast_to_fp8``, ``ceil_to_ue8m0``, ``pack_ue8m0_to_int``) read at commit
54e22612409371d6364144b69086735beb54e98b, and the ``cast_back_from_fp8`` helper of the
vllm-project/DeepGEMM fork (commit 51655f217b8b3b3875e59677bb5e8901f235826d).

Algorithm (per group of ``group_size`` consecutive elements of a row, or per block):
    1. the row is zero-padded to a multiple of the group size (in ``x.dtype``);
    2. ``amax = max |x|`` in fp32, clamped to at least ``1e-4`` (the fp32 value of 1e-4);
    3. ``scale = amax / 448`` (fp32); with ``scale_format="ue8m0"`` the scale is then rounded up
       to a power of two by ``ceil_to_ue8m0``;
    4. ``values = (x * (1 / scale)).to(torch.float8_e4m3fn)``: the reciprocal is an fp32 tensor,
       the product is computed in the promoted dtype (fp32 for bf16/fp16/fp32 inputs), and the cast
       is torch's round-to-nearest-even conversion.
    The padding is sliced off the values; the scales cover the padded groups.

Special values (all are properties of the steps above, i.e. of DeepGEMM's code, not choices made
here):
    * all-zero group: amax is clamped to 1e-4, scale = fp32(1e-4) / 448 (fp32 format) or 2**-22
      (ue8m0), values are +0 (and -0 for -0.0 inputs: the sign of zero is kept, code 0x80);
    * tiny groups (amax < 1e-4) use the clamped scale, so their values are < 448 in magnitude and
      may be E4M3 subnormals or flush to zero;
    * NaN anywhere in a group: fp32 format -> scale NaN, every value NaN; ue8m0 format -> scale
      2**127 (``ceil_to_ue8m0`` of NaN), the NaN elements stay NaN, finite ones become 0;
    * +-inf in a group: fp32 format -> scale inf, 1/scale = 0, so finite elements become 0 and the
      infinite ones NaN (inf * 0); ue8m0 format -> scale 2**127, finite elements become 0 and the
      infinite ones are cast from +-inf: torch 2.13 saturates that to +-448 (code 0x7E/0xFE),
      older releases (checked: 2.11) give NaN (0x7F) for |v| > 464 and for inf.  The result is
      whatever the installed torch's cast does, exactly as for DeepGEMM;
    * the E4M3 cast of finite values above 448 follows the same torch rule (never reached for
      finite inputs with a ue8m0 scale; an fp32 scale gives |x * (1/scale)| <= 448 * (1 + 2**-22),
      which rounds to 448).

Dequantization multiplies ``values.float()`` by the group's scale in fp32 (``cast_back_from_fp8``).

Devices: the functions run the same torch expressions as DeepGEMM, so they reproduce DeepGEMM on
whichever device they run.  Results can differ *between* devices in two ways, identically for
DeepGEMM: (1) on CUDA torch evaluates ``tensor / python_scalar`` as a product with the fp32
reciprocal (measured on an H200 with torch 2.11: ~55% of random fp32 values differ by one ulp from
the CPU's true division), so fp32-format scales ``amax / 448`` may differ by one ulp, and the
elements with them; UE8M0 scales are not affected (the round-up to a power of two absorbs it);
(2) a NaN created by an operation has the device's sign and payload (x86: 0xFFC00000, NVIDIA:
0x7FFFFFFF), so a NaN element may be E4M3 code 0xFF on CPU and 0x7F on CUDA.
"""

from __future__ import annotations

from typing import Literal

import torch

from .formats import (
    DEEPGEMM_AMAX_FLOOR,
    DEEPGEMM_FP8_BLOCK,
    FLOAT8_E8M0_DTYPE,
    FP8_E4M3_DTYPE,
    FP8_E4M3_MAX,
)
from .ue8m0 import (
    ceil_to_ue8m0,
    pack_ue8m0_to_int32,
    ue8m0_bytes_to_fp32,
    unpack_int32_to_ue8m0,
)

ScaleFormat = Literal["fp32", "ue8m0"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _check_float_input(x: torch.Tensor, name: str = "x") -> None:
    if not x.dtype.is_floating_point or x.dtype.itemsize < 2:
        raise TypeError(f"{name} must be a bf16/fp16/fp32/fp64 tensor, got {x.dtype}")
    if x.dim() < 1:
        raise ValueError(f"{name} must have at least one dimension")


def _check_scale_format(scale_format: str) -> None:
    if scale_format not in ("fp32", "ue8m0"):
        raise ValueError(f"scale_format must be 'fp32' or 'ue8m0', got {scale_format!r}")


def _pad_last(x: torch.Tensor, size: int) -> torch.Tensor:
    """Zero-pad the last dim of ``x`` to ``size`` (no copy when already that size)."""
    if x.shape[-1] == size:
        return x
    return torch.nn.functional.pad(x, (0, size - x.shape[-1]), value=0.0)


def scales_to_fp32(scales: torch.Tensor) -> torch.Tensor:
    """Normalize stored scales to fp32: int32 = packed UE8M0, uint8 / float8_e8m0fnu = UE8M0 bytes."""
    if scales.dtype == torch.int32:
        return unpack_int32_to_ue8m0(scales)
    if scales.dtype == torch.uint8 or (FLOAT8_E8M0_DTYPE is not None and scales.dtype == FLOAT8_E8M0_DTYPE):
        return ue8m0_bytes_to_fp32(scales)
    if scales.dtype.is_floating_point:
        return scales.float()
    raise TypeError(f"unsupported scale dtype {scales.dtype}")


def expand_group_scales(sf: torch.Tensor, k: int, group_size: int) -> torch.Tensor:
    """Repeat fp32 group scales (..., G) to one per element (..., k); extra (padding) scales are ignored."""
    groups = _ceil_div(k, group_size)
    if sf.shape[-1] < groups:
        raise ValueError(f"K={k}, group_size={group_size} needs {groups} scales per row, got {sf.shape[-1]}")
    return sf[..., :groups].repeat_interleave(group_size, dim=-1)[..., :k]


def quantize_fp8(
    x: torch.Tensor,
    group_size: int = DEEPGEMM_FP8_BLOCK,
    scale_format: ScaleFormat = "fp32",
    packed: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token (per-row) group quantization to FP8 E4M3 along the last dim.

    Identical bytes and scales to DeepGEMM
    ``per_token_cast_to_fp8(x, use_ue8m0=(scale_format == "ue8m0"), gran_k=group_size,
    use_packed_ue8m0=packed)`` for 2-D ``x``; leading dims are flattened for other ranks.

    Args:
        x: (..., K) bf16/fp16/fp32 (fp64 accepted) tensor on any device.
        group_size: elements per scale along K (128 for DeepGEMM's 1x128 activations, 32 for MXFP8).
        scale_format: "fp32" (scale = amax / 448) or "ue8m0" (rounded up to a power of two).
        packed: return the UE8M0 scales packed four per int32 (requires ``scale_format="ue8m0"``).
            When the group count is not a multiple of 4 the scales are padded with 1.0 first (as
            the DeepGEMM forks do; upstream DeepGEMM asserts instead).

    Returns:
        ``(values, scales)``: values ``torch.float8_e4m3fn`` of shape (..., K); scales fp32 of
        shape (..., ceil(K / group_size)) (dequantization multipliers), or int32 of shape
        (..., ceil(ceil(K / group_size) / 4)) when ``packed``.
    """
    _check_float_input(x)
    _check_scale_format(scale_format)
    if group_size < 1:
        raise ValueError(f"group_size must be positive, got {group_size}")
    if packed and scale_format != "ue8m0":
        raise ValueError("packed scales require scale_format='ue8m0'")
    lead, k = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, k)
    groups = _ceil_div(k, group_size)
    grouped = _pad_last(rows, groups * group_size).view(rows.shape[0], groups, group_size)
    amax = grouped.abs().float().amax(dim=2).clamp(min=DEEPGEMM_AMAX_FLOOR)
    scale = amax / FP8_E4M3_MAX
    if scale_format == "ue8m0":
        scale = ceil_to_ue8m0(scale)
    q = (grouped * (1.0 / scale).unsqueeze(2)).to(FP8_E4M3_DTYPE)
    values = q.view(rows.shape[0], groups * group_size)[:, :k].reshape(*lead, k).contiguous()
    scale = scale.reshape(*lead, groups)
    if packed:
        return values, pack_ue8m0_to_int32(scale, pad_value=1.0)
    return values, scale


def dequantize_fp8(
    values: torch.Tensor,
    scales: torch.Tensor,
    group_size: int = DEEPGEMM_FP8_BLOCK,
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Inverse of ``quantize_fp8``: ``values.float() * scale`` per group, in fp32.

    Args:
        values: (..., K) ``float8_e4m3fn`` tensor.
        scales: (..., G) fp32 scales, (..., G') int32 packed UE8M0, or (..., G) uint8 /
            ``float8_e8m0fnu`` UE8M0 bytes; only the first ceil(K / group_size) are used.
        group_size: elements per scale.
        out_dtype: dtype of the result (the product is formed in fp32, then cast).

    Returns:
        (..., K) tensor of ``out_dtype``.
    """
    per_elem = expand_group_scales(scales_to_fp32(scales), values.shape[-1], group_size)
    return (values.float() * per_elem).to(out_dtype)


def _as_block(block: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(block, int):
        block = (block, block)
    bm, bn = block
    if bm < 1 or bn < 1:
        raise ValueError(f"block sizes must be positive, got {block}")
    return bm, bn


def quantize_fp8_block(
    x: torch.Tensor,
    block: int | tuple[int, int] = (DEEPGEMM_FP8_BLOCK, DEEPGEMM_FP8_BLOCK),
    scale_format: ScaleFormat = "fp32",
) -> tuple[torch.Tensor, torch.Tensor]:
    """2-D block quantization to FP8 E4M3 (one scale per ``block[0] x block[1]`` tile).

    Identical to DeepGEMM ``per_block_cast_to_fp8(x, use_ue8m0=(scale_format == "ue8m0"),
    gran_k=b)`` for square blocks ``(b, b)``; rectangular blocks generalize it.  ``x`` is
    zero-padded to whole blocks (the padding only affects the amax through the clamp, never the
    result), the per-block amax is clamped to 1e-4, ``scale = amax / 448`` (optionally rounded up
    to a power of two), ``values = (x * (1 / scale)).to(float8_e4m3fn)``.

    Args:
        x: (M, N) floating tensor.
        block: (rows, cols) of a tile, or one int for a square tile.
        scale_format: "fp32" or "ue8m0".

    Returns:
        ``(values, scales)``: values (M, N) ``float8_e4m3fn``; scales fp32 of shape
        (ceil(M / rows), ceil(N / cols)).
    """
    _check_float_input(x)
    _check_scale_format(scale_format)
    if x.dim() != 2:
        raise ValueError(f"quantize_fp8_block expects a 2-D tensor, got shape {tuple(x.shape)}")
    bm, bn = _as_block(block)
    m, n = x.shape
    gm, gn = _ceil_div(m, bm), _ceil_div(n, bn)
    padded = x
    if (gm * bm, gn * bn) != (m, n):
        padded = torch.nn.functional.pad(x, (0, gn * bn - n, 0, gm * bm - m), value=0.0)
    tiles = padded.view(gm, bm, gn, bn)
    amax = tiles.abs().float().amax(dim=(1, 3), keepdim=True).clamp(min=DEEPGEMM_AMAX_FLOOR)
    scale = amax / FP8_E4M3_MAX
    if scale_format == "ue8m0":
        scale = ceil_to_ue8m0(scale)
    q = (tiles * (1.0 / scale)).to(FP8_E4M3_DTYPE)
    values = q.view(gm * bm, gn * bn)[:m, :n].contiguous()
    return values, scale.view(gm, gn)


def dequantize_fp8_block(
    values: torch.Tensor,
    scales: torch.Tensor,
    block: int | tuple[int, int] = (DEEPGEMM_FP8_BLOCK, DEEPGEMM_FP8_BLOCK),
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Inverse of ``quantize_fp8_block``: ``values.float() * scale`` of each tile, in fp32.

    Args:
        values: (M, N) ``float8_e4m3fn``.
        scales: (ceil(M / rows), ceil(N / cols)) fp32 (or UE8M0 bytes) scales.
        block: the tile shape used to quantize.
        out_dtype: dtype of the result.

    Returns:
        (M, N) tensor of ``out_dtype``.
    """
    bm, bn = _as_block(block)
    m, n = values.shape
    sf = scales_to_fp32(scales)
    per_elem = sf.repeat_interleave(bm, dim=0).repeat_interleave(bn, dim=1)[:m, :n]
    return (values.float() * per_elem).to(out_dtype)
