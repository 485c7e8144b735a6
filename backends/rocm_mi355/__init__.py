"""AMD MI355X (gfx950) AITER MegaMoEV2 variants (FlyDSL kernels, MoRI symmetric heap)."""

from __future__ import annotations

from moe_oracle.rules import VariantSpec


def variants() -> tuple[VariantSpec, ...]:
    """Entry point of the ``moe_oracle.backends`` group: this target's declarations."""
    from moe_oracle_backends.rocm_mi355.a4w4.config import VARIANT as A4W4
    from moe_oracle_backends.rocm_mi355.a8w4.config import VARIANT as A8W4

    return (A8W4, A4W4)
