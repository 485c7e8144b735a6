"""FP8 E4M3 group quantization as a Triton device function, shared by every kernel that quantizes activations.

:func:`quantize_groups` takes fp32 values whose last axis is one scale group and returns the E4M3
values, the fp32 scale and (for MXFP8) the UE8M0 exponent byte. The arithmetic is the one
:func:`moe_oracle.numerics.quantize_fp8` / :func:`quantize_mxfp8` run on a GPU, bit for bit:

- amax floored at 1e-4; ``scale = amax * fp32(1/448)`` (torch on CUDA divides by a Python scalar as a
  multiplication by its fp32 reciprocal; DeepGEMM's reference computes ``amax / 448`` that way);
- MXFP8: the scale rounded up to a power of two, exponent clamped to [1, 254];
- ``q = x * (1 / scale)`` with ``1 / scale`` an IEEE division (``div_rn``, not the approximate fast
  path), cast to E4M3 with round-to-nearest-even and saturation as the hardware cast does.
"""

from __future__ import annotations

import triton
import triton.language as tl

INV_FP8_MAX = tl.constexpr(1.0 / 448.0)
AMAX_FLOOR = tl.constexpr(1e-4)


@triton.jit
def quantize_groups(xg, UE8M0: tl.constexpr):
    """``xg`` fp32 ``[..., G]`` -> (E4M3 ``[..., G]``, fp32 scale ``[...]``, UE8M0 exponent int32 ``[...]``).

    The exponent is the scale's biased exponent field; with ``UE8M0`` the scale is first rounded up
    to a power of two (so ``scale == 2 ** (exp - 127)`` exactly).
    """
    amax = tl.maximum(tl.max(tl.abs(xg), axis=-1), AMAX_FLOOR)
    scale = amax * INV_FP8_MAX
    bits = scale.to(tl.int32, bitcast=True)
    exp = (bits >> 23) & 0xFF
    if UE8M0:
        exp = tl.minimum(tl.maximum(exp + ((bits & 0x7FFFFF) != 0).to(tl.int32), 1), 254)
        scale = (exp << 23).to(tl.float32, bitcast=True)
    inv = tl.div_rn(tl.full(scale.shape, 1.0, tl.float32), scale)
    q = (xg * tl.expand_dims(inv, -1)).to(tl.float8e4nv)
    return q, scale, exp
