"""Declarations of the SM90 non-fused FP8 paths the oracle ranks against the fused kernels (docs/performance.md).

Each is implemented by :class:`~.layer.GroupedGemmMoE` (DeepGEMM's grouped GEMMs around moe-oracle's
Triton glue) and ranked only where it was measured (``moe_oracle/data/calibration.json``).
"""

from __future__ import annotations

from moe_oracle.model.types import WeightFormat
from moe_oracle.rules import Engine
from moe_oracle.rules.nonfused import NonFusedPath

_RUNTIME = "moe_oracle_backends.cuda_sm90.nonfused.layer:GroupedGemmMoE"

#: SGLang's non-fused SM90 FP8 MoE runs DeepGEMM's contiguous grouped GEMM with per-row expert
#: indices (the m_indices layout); the psum layout is the faster DeepGEMM option no engine uses yet.
PATHS: tuple[NonFusedPath, ...] = (
    NonFusedPath(
        "deepgemm_fp8_psum",
        "non-fused FP8: quantize + permute, DeepGEMM m_grouped_fp8_gemm_nt_contiguous (psum layout) x2, "
        "SwiGLU + requantize, unpermute",
        "sm90",
        (WeightFormat.FP8_BLOCK,),
        (Engine.NONE,),
        runtime=_RUNTIME,
    ),
    NonFusedPath(
        "deepgemm_fp8_m_indices",
        "non-fused FP8: quantize + permute, DeepGEMM m_grouped_fp8_gemm_nt_contiguous (m_indices layout) x2, "
        "SwiGLU + requantize, unpermute",
        "sm90",
        (WeightFormat.FP8_BLOCK,),
        (Engine.NONE, Engine.SGLANG),
        runtime=_RUNTIME,
        layout="m_indices",
    ),
)
