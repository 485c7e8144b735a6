"""``aiter_mega_moe:gfx950_a8w4`` weights: MXFP4 experts in AITER's a16w4 shuffled layout.

The layout does not depend on the activation format (a8w4): see ``backends/rocm_mi355/_runtime.py``.
"""

from __future__ import annotations

from moe_oracle_backends.rocm_mi355._runtime import (
    LAYOUT,
    allocate,
    canonical,
    chunk,
    from_kernel,
    to_kernel,
    transform_into,
    vendor_transform,
)

__all__ = ["LAYOUT", "allocate", "canonical", "chunk", "from_kernel", "to_kernel", "transform_into", "vendor_transform"]
