"""Capability declaration of ``aiter_mega_moe:gfx950_a8w4``.

AITER ``MegaMoEV2(quant="a8w4")``: MXFP4 weights, MXFP8 activations quantized inside the
kernel, intranode dispatch/combine over XGMI (1 <= world_size <= 8), one node.
"""

from __future__ import annotations

from moe_oracle_backends.rocm_mi355._common import AITER_SRC, BACKEND, common_checks
from moe_oracle_backends.rocm_mi355.heap import SIZING

from moe_oracle.rules import VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Staging

VARIANT = VariantSpec(
    backend=BACKEND,
    variant="gfx950_a8w4",
    target="rocm_mi355",
    summary="MI355X MXFP8 x MXFP4 MegaMoEV2, intranode",
    weights="mxfp4 g32 ue8m0",
    activations="MXFP8 (E4M3, UE8M0 per 32), quantized in kernel",
    kernel="aiter.ops.flydsl.kernels.mega_moe.MegaMoEV2(quant='a8w4')",
    recipe=Recipe(ActQuant.MXFP8, ActQuant.MXFP8, weight_before_l2=False),
    checks=(
        *common_checks(),
        c.ep_in_domain(
            8,
            scope="intranode dispatch/combine op, world_size <= 8",
            sources=(AITER_SRC + ": flydsl_dispatch_combine_intranode_op.py",),
        ),
    ),
    sources=(
        AITER_SRC,
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/models/deepseek_v4/amd/mega_moe.py",
    ),
    sizing=SIZING,
    runtime="moe_oracle_backends.rocm_mi355.a8w4.backend:AiterA8W4MegaMoE",
    layout="moe_oracle_backends.rocm_mi355.a8w4.weights",
    numerics="aiter",
    staging=Staging("bytes", quantize_on_host=False, ids_dtype="int32"),
    priority=10,
)
