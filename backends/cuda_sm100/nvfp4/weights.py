"""``deep_gemm_mega_moe:sm100_nvfp4`` weights: NVFP4 experts for ``nvfp4_mega_moe``.

Values: packed E2M1 int8 ``[E, 2I, H/2]`` (L1 rows interleaved by 8) and ``[E, H, I/2]``. Scales: the
E4M3 bytes of each 16-group packed four per int32 along K, ``[E, N, K/64]`` MN-major, L1 rows
interleaved, both UTCCP-transposed (vLLM 0.33 §2.4; vllm-project/DeepGEMM
``deep_gemm/mega/nvfp4.py``: "four scale bytes are packed into each int32. Use
``transform_weights_for_mega_moe`` on both weight pairs").

Global scales (vLLM ``_record_global_scale``): ``l1_alpha[e]`` = the expert's ``w13_global``
(w1 and w3 share one); ``l2_activation_scale`` = max over experts of ``w2_input_scale`` (one static
L2 input scale per layer); ``l2_alpha[e] = w2_global[e] * l2_activation_scale``. The inverse keeps
``w2_global`` and ``w2_input_scale`` in ``extras`` so it is exact.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from moe_oracle_backends.cuda_sm100._runtime import (
    allocate_sm100,
    sm100_l1_scale,
    sm100_l1_scale_inverse,
    sm100_l2_scale,
    sm100_l2_scale_inverse,
)

from moe_oracle.model.types import WeightFormat
from moe_oracle.numerics import FP8_E4M3_DTYPE
from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import (
    Chunk,
    Interleaved,
    KernelLayout,
    KernelWeights,
    deinterleave_gate_up,
)
from moe_oracle.runtime.quantize import NVFP4


def _e4m3_bytes(t: torch.Tensor) -> torch.Tensor:
    if t.dtype == FP8_E4M3_DTYPE:
        return t.view(torch.uint8)
    if t.dtype == torch.uint8:
        return t
    raise TypeError(f"NVFP4 block scales must be float8_e4m3fn or uint8 bytes, got {t.dtype}")


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    if experts.quant.format is not WeightFormat.NVFP4:
        raise ValueError(f"sm100_nvfp4 takes NVFP4 experts, got {experts.quant.label()}")
    e = experts.num_experts
    ones = torch.ones(e, dtype=torch.float32, device=experts.w13.device)
    w13_scale, w2_scale = experts.scales()
    return CheckpointExperts(
        NVFP4,
        experts.w13.view(torch.uint8),
        experts.w2.view(torch.uint8),
        _e4m3_bytes(w13_scale).view(FP8_E4M3_DTYPE),
        _e4m3_bytes(w2_scale).view(FP8_E4M3_DTYPE),
        w13_global=ones if experts.w13_global is None else experts.w13_global.float().reshape(e),
        w2_global=ones if experts.w2_global is None else experts.w2_global.float().reshape(e),
        w2_input_scale=ones if experts.w2_input_scale is None else experts.w2_input_scale.float().reshape(e),
        first_expert=experts.first_expert,
    )


def l2_activation_scale(experts: CheckpointExperts) -> float:
    """The layer's static L2 input scale: max of ``w2_input_scale`` (1.0 when absent)."""
    if experts.w2_input_scale is None:
        return 1.0
    return float(experts.w2_input_scale.float().max())


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    kw = allocate_sm100(e, hidden, inter, value_dtype=torch.int8, values_per_elem=2, scale_group=16, device=device)
    for name in ("l1_alpha", "l2_alpha", "w2_global", "w2_input_scale"):
        kw.extras[name] = torch.empty(e, dtype=torch.float32, device=device)
    return kw


def _chunk(experts: CheckpointExperts, start: int, stop: int, l2_scale: float) -> Chunk:
    w13_scale, w2_scale = experts.scales()
    w13_global, w2_globals, w2_input_scale = experts.nvfp4_scales()
    w2_global = w2_globals[start:stop]
    return {
        "w13": Interleaved(experts.w13[start:stop]),
        "w2": experts.w2[start:stop].view(torch.int8),
        "w13_sf": sm100_l1_scale(_e4m3_bytes(w13_scale[start:stop])),
        "w2_sf": sm100_l2_scale(_e4m3_bytes(w2_scale[start:stop])),
        "l1_alpha": w13_global[start:stop],
        "l2_alpha": w2_global * l2_scale,
        "w2_global": w2_global,
        "w2_input_scale": w2_input_scale[start:stop],
    }


def chunk(experts: CheckpointExperts, start: int, stop: int) -> Chunk:
    return _chunk(experts, start, stop, l2_activation_scale(experts))


def _prepare(experts: CheckpointExperts, dst: KernelWeights) -> Callable[[CheckpointExperts, int, int], Chunk]:
    """The layer's L2 activation scale, computed once: kept in ``dst.extras`` and bound into the chunks."""
    scale = l2_activation_scale(experts)
    dst.extras["l2_activation_scale"] = scale
    return lambda ex, a, b: _chunk(ex, a, b, scale)


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    w13_sf, w2_sf = kw.scales()
    return CheckpointExperts(
        NVFP4,
        deinterleave_gate_up(kw.w13.view(torch.uint8)),
        kw.w2.view(torch.uint8).clone(),
        sm100_l1_scale_inverse(w13_sf).view(FP8_E4M3_DTYPE),
        sm100_l2_scale_inverse(w2_sf).view(FP8_E4M3_DTYPE),
        w13_global=kw.extras["l1_alpha"].clone(),
        w2_global=kw.extras["w2_global"].clone(),
        w2_input_scale=kw.extras["w2_input_scale"].clone(),
    )


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel, prepare=_prepare)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    """Through DeepGEMM's ``transform_weights_for_mega_moe`` on int32-packed MN-major scales (SM100 builds)."""
    import deep_gemm
    from moe_oracle_backends.cuda_sm100._runtime import pack_bytes_i32

    from moe_oracle.runtime.layouts import mn_major

    experts = canonical(experts)
    w13_scale, w2_scale = experts.scales()
    s1 = mn_major(pack_bytes_i32(w13_scale.view(torch.uint8)))
    s2 = mn_major(pack_bytes_i32(w2_scale.view(torch.uint8)))
    (w1, s1), (w2, s2) = deep_gemm.transform_weights_for_mega_moe(
        (experts.w13.view(torch.int8), s1), (experts.w2.view(torch.int8), s2)
    )
    return KernelWeights(w1, w2, s1, s2)
