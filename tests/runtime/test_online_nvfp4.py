"""The FP8 block -> NVFP4 requantization (SGLang's online NVFP4) and the twin accuracy the decision quotes."""

from __future__ import annotations

import torch

from moe_oracle.model.resolve import resolve_model
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import default_scale, random_masters, scaled_group
from moe_oracle.runtime.format_conversion import fp8_block_to_nvfp4
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32, NVFP4, quantize_experts


def test_fp8_to_nvfp4_twin_accuracy_matches_the_quoted_numbers() -> None:
    """FP8_TO_NVFP4_TWIN quotes calc_diff 2.8e-2 (converted) vs 2.1e-3 (as stored) for this exact setup."""
    base = resolve_model("zai-org/GLM-5-FP8").main_group
    group = scaled_group(base, default_scale(base))
    gen = torch.Generator().manual_seed(0)
    w13, w2 = random_masters(group, gen)
    x = torch.randn(64, group.hidden_size, generator=gen).to(torch.bfloat16)
    logits = torch.randn(64, group.num_experts, generator=gen)
    ids, w = route(group, logits, bias=0.1 * torch.randn(group.num_experts, generator=gen))
    master = reference_moe(x, ids, w, (w13.float(), w2.float()), group.activation)
    fp8 = quantize_experts(w13, w2, FP8_BLOCK_FP32)
    nvfp4, report = fp8_block_to_nvfp4(fp8)
    assert nvfp4.quant == NVFP4 and nvfp4.w13_global is not None and report.changed_elements > 0
    assert not report.lossless
    config = LayerConfig(group=group, max_tokens_per_rank=64, device="cpu")
    stored = calc_diff(build_layer("emulation:sm90_fp8xfp8", config, fp8)(x, ids, w).float(), master)
    converted = calc_diff(build_layer("emulation:sm100_nvfp4", config, nvfp4)(x, ids, w).float(), master)
    assert round(stored, 4) == 0.0021 and round(converted, 3) == 0.028


def test_fp8_to_nvfp4_refuses_other_formats() -> None:
    w13 = torch.randn(2, 256, 128).bfloat16()
    w2 = torch.randn(2, 128, 128).bfloat16()
    try:
        fp8_block_to_nvfp4(quantize_experts(w13, w2, NVFP4))
    except ValueError as exc:
        assert "expected FP8 block experts" in str(exc)
    else:
        raise AssertionError("converted NVFP4 experts again")
