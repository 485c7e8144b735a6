"""NVIDIA SM 10.x (Blackwell data centre: B200, B300, GB200, GB300): DeepGEMM mega-MoE variants, and FlashInfer's
MegaMoE (engine-native: SGLang runs it, moe-oracle has no runtime class for it)."""

from __future__ import annotations

from moe_oracle.rules import VariantSpec


def variants() -> tuple[VariantSpec, ...]:
    """Entry point of the ``moe_oracle.backends`` group: this target's declarations."""
    from moe_oracle_backends.cuda_sm100.bf16.config import VARIANT as BF16
    from moe_oracle_backends.cuda_sm100.flashinfer_megamoe.config import VARIANTS as FLASHINFER
    from moe_oracle_backends.cuda_sm100.fp8xfp4.config import VARIANT as FP8XFP4
    from moe_oracle_backends.cuda_sm100.fp8xfp8.config import VARIANT as FP8XFP8
    from moe_oracle_backends.cuda_sm100.nvfp4.config import VARIANT as NVFP4

    return (FP8XFP4, FP8XFP8, NVFP4, BF16, *FLASHINFER)
