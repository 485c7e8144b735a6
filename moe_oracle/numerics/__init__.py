"""Bit-exact reference quantizers for the formats of MoE kernels (pure torch, any device).

Every quantizer reproduces a named vendor function byte for byte (DeepGEMM's
``deep_gemm/utils/math.py``, AITER's torch references) or the OCP MX v1.0 rule; the module
docstrings name the file, function and commit each one follows, and how special values (NaN, inf,
signed zero, all-zero groups) come out.  Shapes: the group/block dim is always the last dim;
scales are dequantization multipliers (``x ~= value * scale``).

Modules: ``formats`` (constants, code tables), ``ue8m0`` (power-of-two scales, packing, MX scale
rules), ``fp8`` (per-token and 2-D block FP8), ``fp4`` (E2M1 codes, MXFP4), ``nvfp4``, ``mxfp8``.
"""

from __future__ import annotations

from .formats import (
    E2M1_MAX,
    E2M1_VALUES,
    FP8_E4M3_DTYPE,
    FP8_E4M3_MAX,
    MX_BLOCK,
    NVFP4_BLOCK,
    UE8M0_BIAS,
    UE8M0_NAN,
)
from .fp4 import (
    dequantize_mxfp4,
    e2m1_to_float,
    float_to_e2m1,
    pack_e2m1,
    quantize_mxfp4,
    unpack_e2m1,
)
from .fp8 import dequantize_fp8, dequantize_fp8_block, quantize_fp8, quantize_fp8_block
from .mxfp8 import dequantize_mxfp8, quantize_mxfp8
from .nvfp4 import dequantize_nvfp4, quantize_nvfp4
from .ue8m0 import (
    ceil_to_ue8m0,
    fp32_to_ue8m0_bytes,
    mx_scale_bytes,
    pack_ue8m0_to_int32,
    ue8m0_bytes_to_fp32,
    unpack_int32_to_ue8m0,
    unpack_int32_to_ue8m0_bytes,
)

__all__ = [
    "E2M1_MAX",
    "E2M1_VALUES",
    "FP8_E4M3_DTYPE",
    "FP8_E4M3_MAX",
    "MX_BLOCK",
    "NVFP4_BLOCK",
    "UE8M0_BIAS",
    "UE8M0_NAN",
    "ceil_to_ue8m0",
    "dequantize_fp8",
    "dequantize_fp8_block",
    "dequantize_mxfp4",
    "dequantize_mxfp8",
    "dequantize_nvfp4",
    "e2m1_to_float",
    "float_to_e2m1",
    "fp32_to_ue8m0_bytes",
    "mx_scale_bytes",
    "pack_e2m1",
    "pack_ue8m0_to_int32",
    "quantize_fp8",
    "quantize_fp8_block",
    "quantize_mxfp4",
    "quantize_mxfp8",
    "quantize_nvfp4",
    "ue8m0_bytes_to_fp32",
    "unpack_e2m1",
    "unpack_int32_to_ue8m0",
    "unpack_int32_to_ue8m0_bytes",
]
