"""Checkpoint-format expert weights: quantize BF16/FP32 masters, dequantize exactly, convert losslessly.

Formats (:class:`~moe_oracle.runtime.interface.CheckpointExperts`, per expert ``e``):

========== =============================== ======================================================
format     values                          scales
========== =============================== ======================================================
bf16       ``w13 [E, 2I, H]`` bf16          none
fp8_block  ``[E, 2I, H]`` float8_e4m3fn     ``[E, 2I/bm, H/bn]`` fp32 (or UE8M0 bytes uint8)
mxfp8      ``[E, 2I, H]`` float8_e4m3fn     ``[E, 2I, H/32]`` UE8M0 bytes (uint8)
mxfp4      ``[E, 2I, H/2]`` uint8 (E2M1x2)  ``[E, 2I, H/32]`` UE8M0 bytes (uint8)
nvfp4      ``[E, 2I, H/2]`` uint8 (E2M1x2)  ``[E, 2I, H/16]`` float8_e4m3fn + ``w13_global [E]``
                                            fp32 (``weight_scale_2``); same for w2 plus
                                            ``w2_input_scale [E]`` (static L2 input scale)
========== =============================== ======================================================

Quantization uses the bit-exact quantizers of :mod:`moe_oracle.numerics` (DeepGEMM conventions
unless ``convention="aiter"``); dequantization multiplies in fp32 exactly as the vendors'
``cast_back_*`` helpers do.
"""

from __future__ import annotations

from dataclasses import replace

import torch

import moe_oracle.numerics as N
from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.numerics.fp4 import MxConvention
from moe_oracle.numerics.fp8 import ScaleFormat as Fp8ScaleFormat
from moe_oracle.runtime.interface import CheckpointExperts

BF16 = QuantSpec(format=WeightFormat.BF16)
FP8_BLOCK_FP32 = QuantSpec(format=WeightFormat.FP8_BLOCK, block=(128, 128), scale_format=ScaleFormat.FP32)
FP8_BLOCK_UE8M0 = QuantSpec(format=WeightFormat.FP8_BLOCK, block=(128, 128), scale_format=ScaleFormat.UE8M0)
MXFP4 = QuantSpec(format=WeightFormat.MXFP4, block=(1, 32), scale_format=ScaleFormat.UE8M0)
MXFP8 = QuantSpec(format=WeightFormat.MXFP8, block=(1, 32), scale_format=ScaleFormat.UE8M0)
NVFP4 = QuantSpec(format=WeightFormat.NVFP4, block=(1, 16), scale_format=ScaleFormat.E4M3, global_scale=True)

#: 6 * 448: the NVFP4 global scale is ``amax / NVFP4_GLOBAL_DIV`` (ModelOpt ``weight_scale_2``).
NVFP4_GLOBAL_DIV = 6.0 * 448.0


def scale_to_fp32(scale: torch.Tensor) -> torch.Tensor:
    """Stored scale -> fp32: UE8M0 bytes (uint8/int8/e8m0fnu), packed int32, E4M3 or float."""
    if scale.dtype == N.FP8_E4M3_DTYPE:
        return scale.float()
    if scale.dtype == torch.int32:
        return N.unpack_int32_to_ue8m0(scale)
    if scale.dtype in (torch.uint8, torch.int8) or scale.dtype == getattr(torch, "float8_e8m0fnu", None):
        return N.ue8m0_bytes_to_fp32(scale)
    if scale.dtype.is_floating_point:
        return scale.float()
    raise TypeError(f"unsupported scale dtype {scale.dtype}")


def ue8m0_bytes(scale: torch.Tensor) -> torch.Tensor:
    """Scale -> UE8M0 bytes (uint8); fp32 scales must be powers of two."""
    if scale.dtype == torch.uint8:
        return scale
    if scale.dtype == torch.int8 or scale.dtype == getattr(torch, "float8_e8m0fnu", None):
        return scale.view(torch.uint8)
    if scale.dtype == torch.int32:
        return N.unpack_int32_to_ue8m0_bytes(scale)
    return N.fp32_to_ue8m0_bytes(scale.float())


_E2M1_PAIR_LUT: dict[torch.device, torch.Tensor] = {}


def canonical_mxfp4(experts: CheckpointExperts, who: str) -> CheckpointExperts:
    """MXFP4 experts as uint8 values and UE8M0 scale bytes (whatever dtypes the checkpoint used).

    Raises ``ValueError`` naming ``who`` (the kernel) when the experts are not MXFP4.
    """
    if experts.quant.format is not WeightFormat.MXFP4:
        raise ValueError(f"{who} takes MXFP4 experts, got {experts.quant.label()}")
    w13_scale, w2_scale = experts.scales()
    return CheckpointExperts(
        MXFP4,
        experts.w13.view(torch.uint8),
        experts.w2.view(torch.uint8),
        ue8m0_bytes(w13_scale),
        ue8m0_bytes(w2_scale),
        first_expert=experts.first_expert,
    )


def _e2m1_pairs(device: torch.device) -> torch.Tensor:
    """``[256, 2]`` fp32: the two E2M1 values (low nibble first) of every packed byte."""
    lut = _E2M1_PAIR_LUT.get(device)
    if lut is None:
        codes = N.unpack_e2m1(torch.arange(256, dtype=torch.uint8))
        lut = N.e2m1_to_float(codes).reshape(256, 2).to(device)
        _E2M1_PAIR_LUT[device] = lut
    return lut


def _e2m1_values(packed: torch.Tensor) -> torch.Tensor:
    """Packed E2M1 bytes ``[..., K/2]`` -> fp32 ``[..., K]`` (same values as ``numerics.e2m1_to_float``)."""
    b = packed.view(torch.uint8) if packed.dtype != torch.uint8 else packed
    vals = torch.nn.functional.embedding(b.to(torch.int64), _e2m1_pairs(b.device))
    return vals.reshape(*b.shape[:-1], b.shape[-1] * 2)


def _times_group_scale(values: torch.Tensor, sf: torch.Tensor, group: int) -> torch.Tensor:
    k = values.shape[-1]
    g = values.reshape(*values.shape[:-1], k // group, group) * sf[..., : k // group].unsqueeze(-1)
    return g.reshape(values.shape)


def dequantize_matrix(
    values: torch.Tensor,
    scale: torch.Tensor | None,
    quant: QuantSpec,
    global_scale: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """Weights ``[..., N, K]`` (``K/2`` packed bytes for FP4) -> fp32 ``[..., N, K]``.

    Bit-identical to the :mod:`moe_oracle.numerics` dequantizers (one fp32 product per element;
    NVFP4 multiplies by ``sf * g`` formed first, as ``dequantize_nvfp4`` does). ``global_scale``
    (NVFP4) is a float or a tensor broadcasting over the leading dims (``[E, 1, 1]``).
    """
    fmt = quant.format
    if fmt is WeightFormat.BF16:
        return values.float()
    if scale is None:
        raise ValueError(f"{fmt.value} weights need scales")
    if fmt is WeightFormat.FP8_BLOCK:
        bm, bn = quant.tile
        n, k = values.shape[-2], values.shape[-1]
        sf = scale_to_fp32(scale).repeat_interleave(bm, dim=-2)[..., :n, :].repeat_interleave(bn, dim=-1)
        return values.float() * sf[..., :k]
    if fmt is WeightFormat.FP8_CHANNEL:
        return values.float() * scale_to_fp32(scale).unsqueeze(-1)
    if fmt is WeightFormat.MXFP8:
        return _times_group_scale(values.float(), scale_to_fp32(scale), quant.tile[1])
    if fmt is WeightFormat.MXFP4:
        return _times_group_scale(_e2m1_values(values), scale_to_fp32(scale), quant.tile[1])
    if fmt is WeightFormat.NVFP4:
        sf = scale.float() if scale.dtype == N.FP8_E4M3_DTYPE else scale.view(N.FP8_E4M3_DTYPE).float()
        if global_scale is not None:
            sf = sf * global_scale
        return _times_group_scale(_e2m1_values(values), sf, N.NVFP4_BLOCK)
    raise ValueError(f"unsupported weight format {fmt.value}")


def _globals(t: torch.Tensor | None, start: int, stop: int) -> torch.Tensor | None:
    return None if t is None else t.reshape(-1)[start:stop].float().reshape(-1, 1, 1)


def dequantize_range(experts: CheckpointExperts, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Experts ``[start, stop)`` as fp32 ``([n, 2I, H], [n, H, I])``."""
    q = experts.quant
    w13 = dequantize_matrix(
        experts.w13[start:stop],
        None if experts.w13_scale is None else experts.w13_scale[start:stop],
        q,
        _globals(experts.w13_global, start, stop),
    )
    w2 = dequantize_matrix(
        experts.w2[start:stop],
        None if experts.w2_scale is None else experts.w2_scale[start:stop],
        q,
        _globals(experts.w2_global, start, stop),
    )
    return w13, w2


def dequantize_expert(experts: CheckpointExperts, e: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Expert ``e`` (local index) as fp32 ``(w13 [2I, H], w2 [H, I])``."""
    w13, w2 = dequantize_range(experts, e, e + 1)
    return w13[0], w2[0]


def dequantize_experts(experts: CheckpointExperts) -> tuple[torch.Tensor, torch.Tensor]:
    """All experts as fp32 ``([E, 2I, H], [E, H, I])`` (a full fp32 copy: small layers only)."""
    return dequantize_range(experts, 0, experts.num_experts)


def _quantize_matrix(
    w: torch.Tensor, quant: QuantSpec, convention: MxConvention
) -> tuple[torch.Tensor, torch.Tensor | None]:
    fmt = quant.format
    if fmt is WeightFormat.BF16:
        return w.to(torch.bfloat16), None
    if fmt is WeightFormat.FP8_BLOCK:
        fmt_scale: Fp8ScaleFormat = "ue8m0" if quant.scale_format is ScaleFormat.UE8M0 else "fp32"
        vals, sf = N.quantize_fp8_block(w, block=quant.tile, scale_format=fmt_scale)
        return vals, (N.fp32_to_ue8m0_bytes(sf) if fmt_scale == "ue8m0" else sf)
    if fmt is WeightFormat.MXFP8:
        vals, sf = N.quantize_mxfp8(w, quant.tile[1], convention=convention)
        return vals, N.fp32_to_ue8m0_bytes(sf)
    if fmt is WeightFormat.MXFP4:
        vals, sf = N.quantize_mxfp4(w, quant.tile[1], convention=convention)
        return vals, N.fp32_to_ue8m0_bytes(sf)
    raise ValueError(f"cannot quantize to {fmt.value} here")


def quantize_experts(
    w13: torch.Tensor,
    w2: torch.Tensor,
    quant: QuantSpec,
    *,
    convention: MxConvention = "deepgemm",
    w2_input_scale: torch.Tensor | float | None = None,
    chunk_experts: int = 8,
) -> CheckpointExperts:
    """Quantize master weights ``w13 [E, 2I, H]``, ``w2 [E, H, I]`` to ``quant``'s checkpoint format.

    ``convention`` picks the MX rounding convention ("deepgemm" or "aiter"). NVFP4 gets one global
    scale per expert and matrix (``amax / 2688``, w1 and w3 sharing one, as ModelOpt exports them)
    and ``w2_input_scale`` (a scalar or ``[E]``; default 1.0: calibrate it on the SwiGLU output).
    """
    e = w13.shape[0]
    if quant.format is WeightFormat.NVFP4:
        return _quantize_nvfp4(w13, w2, w2_input_scale)
    outs: dict[str, list[torch.Tensor]] = {"w13": [], "w2": [], "w13_scale": [], "w2_scale": []}
    for start in range(0, e, chunk_experts):
        stop = min(e, start + chunk_experts)
        for name, src in (("w13", w13), ("w2", w2)):
            sf: torch.Tensor | None
            if quant.format is WeightFormat.FP8_BLOCK:  # 2-D blocks: one matrix at a time
                parts = [_quantize_matrix(src[i].float(), quant, convention) for i in range(start, stop)]
                vals = torch.stack([p[0] for p in parts])
                sf = torch.stack([p[1] for p in parts if p[1] is not None])
            else:
                vals, sf = _quantize_matrix(src[start:stop].float(), quant, convention)
            outs[name].append(vals)
            if sf is not None:
                outs[f"{name}_scale"].append(sf)
    cat = {k: (torch.cat(v) if v else None) for k, v in outs.items() if k.endswith("_scale")}
    return CheckpointExperts(quant, torch.cat(outs["w13"]), torch.cat(outs["w2"]), cat["w13_scale"], cat["w2_scale"])


def _quantize_nvfp4(
    w13: torch.Tensor, w2: torch.Tensor, w2_input_scale: torch.Tensor | float | None
) -> CheckpointExperts:
    e = w13.shape[0]
    out: dict[str, list[torch.Tensor]] = {k: [] for k in ("w13", "w2", "w13_scale", "w2_scale")}
    g13: list[float] = []
    g2: list[float] = []
    for i in range(e):
        for name, src, gl in (("w13", w13[i].float(), g13), ("w2", w2[i].float(), g2)):
            amax = float(src.abs().amax().clamp(min=1e-12))
            g = float(torch.tensor(amax / NVFP4_GLOBAL_DIV, dtype=torch.float32))
            vals, sf = N.quantize_nvfp4(src, global_scale=g)
            out[name].append(vals)
            out[f"{name}_scale"].append(sf)
            gl.append(g)
    if w2_input_scale is None:
        w2_input_scale = 1.0
    if not isinstance(w2_input_scale, torch.Tensor):
        w2_input_scale = torch.full((e,), float(w2_input_scale), dtype=torch.float32)
    return CheckpointExperts(
        NVFP4,
        torch.stack(out["w13"]),
        torch.stack(out["w2"]),
        torch.stack(out["w13_scale"]),
        torch.stack(out["w2_scale"]),
        w13_global=torch.tensor(g13, dtype=torch.float32),
        w2_global=torch.tensor(g2, dtype=torch.float32),
        w2_input_scale=w2_input_scale.float().reshape(e),
    )


def fp8_block_to_mxfp8(experts: CheckpointExperts) -> CheckpointExperts:
    """FP8 128x128 blocks with power-of-two scales -> MXFP8 (1x32 UE8M0), an exact re-layout.

    Each 1x32 group takes its block's scale (vLLM ``_pack_scale`` ``repeat_interleave``); the
    E4M3 values are unchanged. Non power-of-two (fp32) block scales raise ``ValueError``: those
    checkpoints need a requantization, which is not lossless.
    """
    q = experts.quant
    if q.format is not WeightFormat.FP8_BLOCK:
        raise ValueError(f"expected fp8_block experts, got {q.format.value}")
    bm, bn = q.tile
    w13_scale, w2_scale = experts.scales()
    if bn % 32:
        raise ValueError(f"block K ({bn}) must be a multiple of 32 for a 1x32 re-layout")

    def relayout(values: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        n, k = values.shape[-2], values.shape[-1]
        sf = ue8m0_bytes(scale)  # raises on non power-of-two fp32 scales
        sf = sf.repeat_interleave(bm, dim=-2)[..., :n, :].repeat_interleave(bn // 32, dim=-1)
        return sf[..., : k // 32].contiguous()

    return CheckpointExperts(
        MXFP8,
        experts.w13,
        experts.w2,
        relayout(experts.w13, w13_scale),
        relayout(experts.w2, w2_scale),
        first_expert=experts.first_expert,
    )


def with_scale_fp32(experts: CheckpointExperts) -> CheckpointExperts:
    """Same experts with fp32 scales (UE8M0 bytes decoded exactly); other formats unchanged."""
    if experts.quant.format not in (WeightFormat.FP8_BLOCK, WeightFormat.MXFP4, WeightFormat.MXFP8):
        return experts
    return replace(
        experts,
        w13_scale=None if experts.w13_scale is None else scale_to_fp32(experts.w13_scale),
        w2_scale=None if experts.w2_scale is None else scale_to_fp32(experts.w2_scale),
    )


def experts_to(experts: CheckpointExperts, device: torch.device | str) -> CheckpointExperts:
    """Move every tensor of ``experts`` to ``device``."""

    def mv(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t.to(device)

    return replace(
        experts,
        w13=experts.w13.to(device),
        w2=experts.w2.to(device),
        w13_scale=mv(experts.w13_scale),
        w2_scale=mv(experts.w2_scale),
        w13_global=mv(experts.w13_global),
        w2_global=mv(experts.w2_global),
        w2_input_scale=mv(experts.w2_input_scale),
    )


def select_experts(experts: CheckpointExperts, start: int, stop: int) -> CheckpointExperts:
    """Experts ``[start, stop)`` (views)."""

    def sl(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t[start:stop]

    return replace(
        experts,
        w13=experts.w13[start:stop],
        w2=experts.w2[start:stop],
        w13_scale=sl(experts.w13_scale),
        w2_scale=sl(experts.w2_scale),
        w13_global=sl(experts.w13_global),
        w2_global=sl(experts.w2_global),
        w2_input_scale=sl(experts.w2_input_scale),
        first_expert=experts.first_expert + start,
    )
