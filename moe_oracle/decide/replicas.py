"""Domain-sized replicas: the layout a plan serves when the requested expert-parallel group crosses an
NVLink/XGMI domain (several replicas behind a router, each with its EP inside one domain)."""

from __future__ import annotations

from moe_oracle.spec.deployment import Deployment, Parallelism, Topology

__all__ = ["replica_deployment"]


def replica_deployment(dep: Deployment, experts: int | None = None) -> tuple[Deployment, int] | str:
    """One replica of ``dep`` (:func:`moe_oracle.decide.layout.replica_size` GPUs: the domain, or with a routed-expert
    count the largest group inside it that tiles it in whole nodes and divides the experts) and how many of them
    cover its ranks, or why not."""
    from moe_oracle.decide.layout import replica_size

    par, topo = dep.parallel, dep.topology
    domain = replica_size(dep, experts)
    group = par.tp * par.dp
    if par.ep != group:
        return f"ep={par.ep} is not tp*dp={group} (replicas are planned for pure expert parallelism)"
    if par.pp != 1:
        return "pipeline parallelism is on (each replica would need its own pipeline)"
    if domain < topo.gpus_per_node:
        return f"the {domain}-GPU domain is smaller than a {topo.gpus_per_node}-GPU node"
    if domain % par.tp or group % domain:
        return f"tp={par.tp} and tp*dp={group} do not split into {domain}-GPU replicas"
    if domain >= group:
        return f"one {domain}-GPU replica is the requested layout itself"
    dp_r = domain // par.tp
    count = group // domain
    nodes_r = -(-domain // topo.gpus_per_node)
    replica = Deployment(
        device=dep.device,
        topology=Topology(gpus_per_node=topo.gpus_per_node, nodes=nodes_r, domain_size=topo.domain_size),
        parallel=Parallelism(
            tp=par.tp,
            dp=dp_r,
            ep=par.tp * dp_r,
            pp=1,
            max_num_batched_tokens=par.max_num_batched_tokens,
            all2all_backend=par.all2all_backend,
            eplb=par.eplb,
        ),
        env=dict(dep.env),
        speculative=dep.speculative,
    )
    return replica, count
