"""The layout step: propose a parallel layout for the GPUs given, and the smallest one that fits.

With no layout flag (``--tp``, ``--dp``, ``--ep``, ``--pp`` or an engine's spelling of them), the
oracle proposes one for the GPUs it was given (``--gpus-per-node`` x ``--nodes``, one node when
``--nodes`` is absent): attention data parallelism with expert parallelism over every GPU
(``--dp N --ep N``), the layout every fused mega-MoE kernel is built for. Where the GPUs span more
than one NVLink/XGMI domain, the plan's replica step splits it into one replica per domain. When
the model's weights do not fit even there, no layout is invented: the answer is the memory verdict
with the number of GPUs that would hold it. Explicit flags are judged as given.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from moe_oracle.decide.fit import Fit, measure_fit
from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.types import ModelDescription
from moe_oracle.rules import Conversion, Engine
from moe_oracle.spec.deployment import Deployment

#: The largest EP group the "layouts that fit" search tries.
MAX_SEARCH_GPUS = 512


@dataclass(frozen=True)
class LayoutProposal:
    """A layout the oracle chose (``flags``) and why, in one sentence."""

    flags: DeploymentFlags
    why: str

    @property
    def label(self) -> str:
        f = self.flags
        return f"--dp {f.dp} --ep {f.ep}" + (f" --nodes {f.nodes}" if f.nodes > 1 else "")


def propose_layout(
    model: ModelDescription, flags: DeploymentFlags, engine: Engine, *, memory_fraction: float | None = None
) -> LayoutProposal:
    """DP + EP over every GPU given; the reason names the node size, the domain and the memory fit."""
    probe, _ = build_deployment(flags)
    topo = probe.topology
    world = topo.world_size
    chosen = replace(flags, tp=1, dp=world, ep=world, pp=1)
    deployment, _ = build_deployment(chosen)
    fit = measure_fit(model, deployment, engine, memory_fraction=memory_fraction)
    where = f"{topo.nodes} node(s) x {topo.gpus_per_node} {probe.device.name}"
    domain = topo.effective_domain
    split = (
        f"; it spans {world // domain} NVLink/XGMI domains of {domain}, so the plan serves one DP{domain}+EP{domain} "
        "replica per domain where a fused backend needs it"
        if world > domain
        else f", inside one {domain}-GPU NVLink/XGMI domain (every fused mega-MoE kernel needs EP inside one)"
    )
    mem = (
        f"; {fit.needed_bytes / (1 << 30):.1f} GiB of weights and reserve per rank leave "
        f"{fit.kv_bytes / (1 << 30):.1f} GiB of KV cache"
        if fit.fits
        else f"; it does not fit in memory ({fit.reasons[0].message})"
    )
    why = (
        f"layout chosen by moe-oracle (no --tp/--dp/--ep given): --dp {world} --ep {world} over the {world} GPUs "
        f"of {where}: attention data parallel, experts spread over all ranks{split}{mem}"
    )
    return LayoutProposal(chosen, why)


def smallest_fitting(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    buffer_bytes: int = 0,
    mtp_built: bool = False,
    memory_fraction: float | None = None,
) -> tuple[str, Fit] | None:
    """The smallest pure DP+EP layout (doubling the GPUs from the given world size) on the same device whose
    fit holds, as flags with its fit; None when none up to :data:`MAX_SEARCH_GPUS` does."""
    topo, par = deployment.topology, deployment.parallel
    gpus = max(topo.world_size, par.tp * par.dp * par.pp)
    while gpus <= MAX_SEARCH_GPUS:
        nodes = -(-gpus // topo.gpus_per_node)
        candidate = deployment.model_copy(
            update={
                "topology": topo.model_copy(update={"nodes": nodes}),
                "parallel": par.model_copy(update={"tp": 1, "dp": gpus, "ep": gpus, "pp": 1}),
            }
        )
        fit = measure_fit(
            model,
            candidate,
            engine,
            conversions=conversions,
            buffer_bytes=buffer_bytes,
            mtp_built=mtp_built,
            memory_fraction=memory_fraction,
        )
        if fit.fits and not fit.reasons:
            flags = f"--dp {gpus} --ep {gpus}" + (f" --nodes {nodes}" if nodes > 1 else "")
            return flags, fit
        gpus *= 2
    return None


def _smaller_checkpoints(model: ModelDescription) -> list[ModelDescription]:
    """Bundled presets of the same architecture and MoE shape whose routed experts are stored smaller."""
    from moe_oracle.model.adapters import describe_model, list_presets

    main = model.main_group
    size = main.expert_weight_bytes()
    out = []
    for preset in list_presets():
        other = describe_model(preset)
        g = other.main_group
        same = (other.architecture, g.hidden_size, g.moe_intermediate_size, g.num_experts) == (
            model.architecture,
            main.hidden_size,
            main.moe_intermediate_size,
            main.num_experts,
        )
        if same and g.expert_weight_bytes() < size:
            out.append(other)
    return sorted(out, key=lambda d: d.main_group.expert_weight_bytes())


def fit_with_fix(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    buffer_bytes: int = 0,
    buffer_detail: str = "",
    mtp_built: bool = False,
    memory_fraction: float | None = None,
) -> Fit:
    """:func:`measure_fit`, with a failing verdict's fix naming what exists: the smallest DP+EP layout on
    this device that fits (exact flags), and bundled checkpoints of the same model stored in a smaller format
    that fit this layout."""
    kw = dict(conversions=conversions, buffer_bytes=buffer_bytes, mtp_built=mtp_built, memory_fraction=memory_fraction)
    fit = measure_fit(model, deployment, engine, buffer_detail=buffer_detail, **kw)  # type: ignore[arg-type]
    if fit.fits:
        return fit
    fixes = []
    bigger = smallest_fitting(model, deployment, engine, **kw)  # type: ignore[arg-type]
    if bigger is not None:
        flags, big_fit = bigger
        fixes.append(
            f"more GPUs: {flags} (tp 1) on {deployment.device.name} fits, {big_fit.kv_bytes / (1 << 30):.1f} GiB of "
            "KV cache per rank"
        )
    for other in _smaller_checkpoints(model):
        small = measure_fit(other, deployment, engine, buffer_bytes=buffer_bytes, memory_fraction=memory_fraction)
        if small.fits:
            fixes.append(
                f"a smaller format: {other.model} ({other.main_group.weight_quant.label()} experts) fits this layout"
            )
            break
    fix = "; or ".join(fixes) if fixes else f"no layout of up to {MAX_SEARCH_GPUS} {deployment.device.name} GPUs fits"
    reasons = tuple(replace(r, remediation=fix) for r in fit.reasons)
    return replace(fit, reasons=reasons)
