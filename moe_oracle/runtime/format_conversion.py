"""MXFP4 experts -> FP8 E4M3 with power-of-two 128x128 block scales (the "FP8 conversion" of V4).

Each 32-group is dequantized exactly (``e2m1 * 2**e``) and each 128x128 block is requantized to E4M3
under one power-of-two FP32 scale ``s = 2**ceil(log2(amax / 448))`` (the smallest power of two that
keeps the block's largest magnitude within E4M3; ``s = 1`` for an all-zero block). The scale being
a power of two, every element whose ``value / s`` has an E4M3 code is kept exactly; elements can
only change when the block's group exponents span more than E4M3's range (an E2M1 value ``m 2**e``
needs ``e - log2 s >= -8`` for its subnormal E4M3 code), which :class:`ConversionReport` lists
block by block. Scales are returned as fp32 (UE8M0-representable; ``scale_format="ue8m0"`` gives
the bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

import moe_oracle.numerics as N
from moe_oracle.model.types import WeightFormat
from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32, FP8_BLOCK_UE8M0, NVFP4, dequantize_range, quantize_experts

BLOCK = 128


@dataclass
class ConversionReport:
    """Blocks whose values did not survive the conversion exactly: ``(matrix, expert, block_row, block_col)``."""

    lossy_blocks: list[tuple[str, int, int, int]] = field(default_factory=list)
    changed_elements: int = 0
    total_blocks: int = 0

    @property
    def lossless(self) -> bool:
        return not self.lossy_blocks and self.changed_elements == 0


def _requant_blocks(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """fp32 ``[n, N, K]`` -> (e4m3 values, fp32 pow2 scales ``[n, N/128, K/128]``, changed-element mask)."""
    n, rows, cols = w.shape
    if rows % BLOCK or cols % BLOCK:
        raise ValueError(f"FP8 128x128 blocks need N ({rows}) and K ({cols}) multiples of {BLOCK}")
    tiles = w.reshape(n, rows // BLOCK, BLOCK, cols // BLOCK, BLOCK)
    amax = tiles.abs().amax(dim=(2, 4))
    scale = N.ceil_to_ue8m0(amax / N.FP8_E4M3_MAX)
    scale = torch.where(amax == 0, torch.ones_like(scale), scale)
    s = scale.reshape(n, rows // BLOCK, 1, cols // BLOCK, 1)
    q = (tiles / s).to(N.FP8_E4M3_DTYPE)
    changed = (q.float() * s) != tiles
    return q.reshape(n, rows, cols), scale, changed


def mxfp4_to_fp8_block(
    experts: CheckpointExperts, *, scale_format: str = "fp32", chunk_experts: int = 8
) -> tuple[CheckpointExperts, ConversionReport]:
    """Convert MXFP4 experts to FP8 128x128 blocks; the report lists every block that is not exact."""
    if experts.quant.format is not WeightFormat.MXFP4:
        raise ValueError(f"expected MXFP4 experts, got {experts.quant.label()}")
    report = ConversionReport()
    outs: dict[str, list[torch.Tensor]] = {"w13": [], "w2": [], "w13_s": [], "w2_s": []}
    for start in range(0, experts.num_experts, chunk_experts):
        stop = min(experts.num_experts, start + chunk_experts)
        w13, w2 = dequantize_range(experts, start, stop)
        for name, w in (("w13", w13), ("w2", w2)):
            q, s, changed = _requant_blocks(w)
            outs[name].append(q)
            outs[f"{name}_s"].append(s)
            per_block = changed.any(dim=(2, 4))
            report.total_blocks += per_block.numel()
            report.changed_elements += int(changed.sum())
            for e, br, bc in torch.nonzero(per_block).tolist():
                report.lossy_blocks.append((name, experts.first_expert + start + e, br, bc))
    w13_s, w2_s = torch.cat(outs["w13_s"]), torch.cat(outs["w2_s"])
    quant = FP8_BLOCK_FP32
    if scale_format == "ue8m0":
        w13_s, w2_s, quant = N.fp32_to_ue8m0_bytes(w13_s), N.fp32_to_ue8m0_bytes(w2_s), FP8_BLOCK_UE8M0
    elif scale_format != "fp32":
        raise ValueError(f"scale_format must be 'fp32' or 'ue8m0', got {scale_format!r}")
    out = CheckpointExperts(
        quant, torch.cat(outs["w13"]), torch.cat(outs["w2"]), w13_s, w2_s, first_expert=experts.first_expert
    )
    return out, report


def bf16_to_fp8_block(
    experts: CheckpointExperts, *, chunk_experts: int = 8
) -> tuple[CheckpointExperts, ConversionReport]:
    """Quantize BF16 experts to FP8 E4M3 with FP32 128x128 block scales (``amax / 448``, as DeepGEMM's
    ``per_block_cast_to_fp8``). Lossy by nature: the report counts every element that changed."""
    if experts.quant.format is not WeightFormat.BF16:
        raise ValueError(f"expected BF16 experts, got {experts.quant.label()}")
    report = ConversionReport()
    outs: dict[str, list[torch.Tensor]] = {"w13": [], "w2": [], "w13_s": [], "w2_s": []}
    for start in range(0, experts.num_experts, chunk_experts):
        stop = min(experts.num_experts, start + chunk_experts)
        for name, w in (("w13", experts.w13[start:stop]), ("w2", experts.w2[start:stop])):
            for mat in w:  # one expert's matrix at a time: quantize_fp8_block is 2-D
                q, s = N.quantize_fp8_block(mat, (BLOCK, BLOCK), "fp32")
                back = N.dequantize_fp8_block(q, s, (BLOCK, BLOCK))
                outs[name].append(q.unsqueeze(0))
                outs[f"{name}_s"].append(s.unsqueeze(0))
                report.total_blocks += s.numel()
                report.changed_elements += int((back != mat.float()).sum())
    out = CheckpointExperts(
        FP8_BLOCK_FP32,
        torch.cat(outs["w13"]),
        torch.cat(outs["w2"]),
        torch.cat(outs["w13_s"]),
        torch.cat(outs["w2_s"]),
        first_expert=experts.first_expert,
    )
    return out, report


def fp8_block_to_nvfp4(
    experts: CheckpointExperts, *, chunk_experts: int = 8
) -> tuple[CheckpointExperts, ConversionReport]:
    """Requantize FP8 block experts to NVFP4 (E2M1, E4M3 per 16, per-expert FP32 global scale ``amax / 2688``),
    what SGLang's online NVFP4 quantization does at load (``--quantization modelopt_fp4`` on an FP8 checkpoint).
    Lossy by nature (4-bit values): the report counts every element that changed."""
    if experts.quant.format is not WeightFormat.FP8_BLOCK:
        raise ValueError(f"expected FP8 block experts, got {experts.quant.label()}")
    parts = [
        dequantize_range(experts, start, min(experts.num_experts, start + chunk_experts))
        for start in range(0, experts.num_experts, chunk_experts)
    ]
    w13, w2 = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    out = replace(quantize_experts(w13, w2, NVFP4), first_expert=experts.first_expert)
    back13, back2 = dequantize_range(out, 0, out.num_experts)
    report = ConversionReport(total_blocks=out.w13.shape[0])
    report.changed_elements = int((back13 != w13).sum()) + int((back2 != w2).sum())
    return out, report
