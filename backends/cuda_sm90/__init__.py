"""NVIDIA SM90 (Hopper: H100, H200) DeepGEMM mega-MoE variants."""

from __future__ import annotations

from moe_oracle.rules import VariantSpec
from moe_oracle.rules.nonfused import NonFusedPath


def variants() -> tuple[VariantSpec | NonFusedPath, ...]:
    """Entry point of the ``moe_oracle.backends`` group: this target's declarations (fused and non-fused)."""
    from .fp8xfp4.config import VARIANT as FP8XFP4
    from .fp8xfp8.config import VARIANT as FP8XFP8
    from .nonfused.config import PATHS

    return (FP8XFP8, FP8XFP4, *PATHS)
