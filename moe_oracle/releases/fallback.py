"""What serves a layer group when no fused mega-MoE backend is chosen: the engine release's own MoE, or (with
``--engine none``) the non-fused layout that really runs."""

from __future__ import annotations

from moe_oracle.model.types import MoELayerGroup
from moe_oracle.releases import RELEASES
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment
from moe_oracle.spec.device import DeviceSpec, Vendor


def fallback_path(
    engine: Engine, group: MoELayerGroup, device: DeviceSpec, deployment: Deployment | None = None
) -> str:
    """What serves a layer group when no fused mega-MoE backend is chosen; with ``deployment``, the text
    describes the layout that really runs (TP-sharded experts with an all-reduce, all-to-all inside one
    NVLink/XGMI domain, or across nodes over RDMA)."""
    release = RELEASES.get(engine)
    if release is not None:
        return release.fallback(group, device)
    fmt = group.weight_quant.label()
    comm = "XGMI" if device.vendor is Vendor.AMD else "NVLink"
    act = "SwiGLU" if group.activation.plain else group.activation.label()
    if group.expert_bias:
        act += " with expert biases"
    if deployment is None:
        return (
            f"non-fused MoE: all-to-all dispatch over {comm}, grouped GEMMs on {fmt} experts, {act}, combine "
            "(separate launches)"
        )
    par, topo = deployment.parallel, deployment.topology
    shard = f", each expert TP-sharded over {par.moe_tp} ranks with an all-reduce" if par.moe_tp > 1 else ""
    if par.ep == 1:
        if par.moe_tp == 1:
            return f"non-fused MoE on one GPU: grouped GEMMs on {fmt} experts, {act} (separate launches)"
        return (
            f"non-fused MoE: experts TP-sharded over {par.moe_tp} ranks, grouped GEMMs on {fmt} experts, {act}, "
            f"all-reduce of the outputs over {comm} (separate launches)"
        )
    if par.ep > topo.effective_domain:
        return (
            f"non-fused MoE: all-to-all dispatch over EP{par.ep} across {topo.nodes} nodes (inter-node RDMA between "
            f"{comm} domains of {topo.effective_domain}){shard}, grouped GEMMs on {fmt} experts, {act}, combine "
            "(separate launches)"
        )
    return (
        f"non-fused MoE: all-to-all dispatch over {comm}{shard}, grouped GEMMs on {fmt} experts, {act}, combine "
        "(separate launches)"
    )
