"""NVIDIA SM90 (Hopper: H100, H200) DeepGEMM mega-MoE variants."""

from __future__ import annotations

from moe_oracle.rules import VariantSpec


def variants() -> tuple[VariantSpec, ...]:
    """Entry point of the ``moe_oracle.backends`` group: this target's declarations."""
    from moe_oracle_backends.cuda_sm90.fp8xfp4.config import VARIANT as FP8XFP4
    from moe_oracle_backends.cuda_sm90.fp8xfp8.config import VARIANT as FP8XFP8

    return (FP8XFP8, FP8XFP4)
