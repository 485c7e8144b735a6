"""Capability declaration of ``aiter_mega_moe:gfx950_a4w4``.

Newer AITER ``MegaMoEV2(quant="a4w4")`` runs only through ``MegaMoEInterNodeBackend`` at
world size 16 on gfx950 (two MI355X nodes); MXFP4 weights and activations.
"""

from __future__ import annotations

from moe_oracle_backends.rocm_mi355._common import BACKEND, common_checks
from moe_oracle_backends.rocm_mi355.heap import SIZING

from moe_oracle.rules import ReasonCode, VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Staging

_NEWER = (
    "https://github.com/ROCm/aiter/blob/03447f9f/aiter/ops/flydsl/kernels/mega_moe/mega_moe_v2.py"
    " (a4w4 only for world_size == 16)"
)

VARIANT = VariantSpec(
    backend=BACKEND,
    variant="gfx950_a4w4",
    target="rocm_mi355",
    summary="MI355X MXFP4 x MXFP4 MegaMoEV2, EP16 over two nodes",
    weights="mxfp4 g32 ue8m0",
    activations="MXFP4 (E2M1, UE8M0 per 32), quantized in kernel",
    kernel="aiter.ops.flydsl.kernels.mega_moe.MegaMoEV2(quant='a4w4')",
    recipe=Recipe(ActQuant.MXFP4, ActQuant.MXFP4, weight_before_l2=False),
    checks=(
        *common_checks(),
        c.ep_size_in((16,), why="a4w4 runs only through the inter-node backend at world size 16", sources=(_NEWER,)),
        c.scenario_predicate(
            ReasonCode.EP_SIZE_UNSUPPORTED,
            lambda sc: sc.deployment.topology.nodes == 2,
            rule="nodes == 2",
            message=lambda sc: f"{sc.deployment.topology.nodes} node(s); a4w4 is EP16 across two 8-GPU nodes",
            remediation="Deploy on two MI355X nodes with --ep 16, or use gfx950_a8w4 within one node.",
            sources=(_NEWER,),
        ),
        c.entry_points(
            "aiter",
            all_of=("MegaMoEInterNodeBackend",),
            provided_by="an aiter newer than v0.1.20 with MegaMoEInterNodeBackend",
            sources=(_NEWER,),
        ),
    ),
    sources=(_NEWER,),
    sizing=SIZING,
    runtime="moe_oracle_backends.rocm_mi355.a4w4.backend:AiterA4W4MegaMoE",
    layout="moe_oracle_backends.rocm_mi355.a4w4.weights",
    numerics="aiter",
    staging=Staging("bytes", quantize_on_host=False, ids_dtype="int32"),
    priority=20,
)
