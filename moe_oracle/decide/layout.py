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

import math
from dataclasses import dataclass, replace

from moe_oracle.decide.fit import GIB, Fit, measure_fit
from moe_oracle.decide.memory_share import (
    EngineMemorySettings,
)
from moe_oracle.decide.settings_search import (
    BufferFor,
    SettingsProposal,
    buffers_of,
    fitting_settings,
)
from moe_oracle.errors import Fix, FixKind, render_fixes
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
    experts = math.gcd(*(g.num_experts for g in model.layer_groups))
    replicated = False
    if 1 < world <= _MAX_RANKS:
        proposed, _ = build_deployment(replace(flags, tp=1, dp=world, ep=world, pp=1))
        replicated = splits_into_replicas(proposed, experts)
    _check_proposable(model, topo.nodes, topo.gpus_per_node, world, replicated)
    chosen = replace(flags, tp=1, dp=world, ep=world, pp=1)
    deployment, _ = build_deployment(chosen)
    fit = measure_fit(model, deployment, engine, memory_fraction=memory_fraction)
    where = f"{topo.nodes} node(s) x {topo.gpus_per_node} {probe.device.name}"
    domain = topo.effective_domain
    split = (
        f"; it spans {world // domain} NVLink/XGMI domains of {domain}, so the plan serves replicas inside each "
        "domain where a fused backend needs it (their EP dividing the routed experts)"
        if world > domain
        else f", inside one {domain}-GPU NVLink/XGMI domain (every fused mega-MoE kernel needs EP inside one)"
    )
    settings = fitting_settings(model, deployment, engine) if not fit.fits and memory_fraction is None else None
    if world > domain:  # the replicas are fitted, not this layout: the memory fit below is theirs
        mem = ""
    elif fit.fits and not fit.weighed_all:
        mem = "; its routed experts fit in memory (the other weights are not weighed: the memory fit below)"
    elif fit.fits:
        # no figure here: the plan's Memory line and fit table give the one KV size, with the buffers counted
        mem = "; the weights fit in memory (the KV cache left per rank: the memory fit below)"
    elif settings is not None:
        mem = (
            "; the engine's default settings do not fit its memory, smaller ones it accepts do (chosen below, with "
            "the symmetric buffers counted)"
        )
    else:
        mem = f"; it does not fit in memory ({fit.reasons[0].message})"
    why = (
        f"layout chosen by moe-oracle (no --tp/--dp/--ep given): --dp {world} --ep {world} over the {world} GPUs "
        f"of {where}: attention data parallel, experts spread over all ranks{split}{mem}"
    )
    return LayoutProposal(chosen, why)


def replica_size(dep: Deployment, experts: int | None = None) -> int:
    """The GPUs of one replica: the NVLink/XGMI domain, or where a routed-expert count ``experts`` is given, the
    largest group inside the domain that tiles it in whole nodes and divides the experts (every fused kernel
    needs EP inside one domain and the experts divided evenly; EP beyond the expert count leaves ranks without
    an expert): GB200 NVL72 (72 GPUs in 4-GPU trays) and 256 experts give 8, nine replicas per rack."""
    topo, par = dep.topology, dep.parallel
    domain = topo.effective_domain
    if experts is None:
        return domain
    for size in range(domain, 0, -1):
        if domain % size or size % topo.gpus_per_node or size % par.tp or experts % size:
            continue
        return size
    return domain


def splits_into_replicas(deployment: Deployment, experts: int) -> bool:
    """Whether the plan's replica step serves ``deployment`` as replicas inside one domain whose EP divides the
    ``experts`` (its EP crosses the domain and such a replica tiles it): then an EP beyond the expert count is
    never served, and the layout as given is not refused for it."""
    par, topo = deployment.parallel, deployment.topology
    if par.ep <= topo.effective_domain or par.ep != par.tp * par.dp or par.pp != 1:
        return False
    size = replica_size(deployment, experts)
    return experts % size == 0 and size <= experts and (par.tp * par.dp) % size == 0 and size >= topo.gpus_per_node


#: The largest layout size a flag takes (spec/deployment.py ``Count``: 1..2^16).
_MAX_RANKS = 1 << 16


def _check_proposable(
    model: ModelDescription, nodes: int, gpus_per_node: int, world: int, replicated: bool = False
) -> None:
    """DP+EP over every GPU given must be a layout the flags could spell: at most 2^16 ranks and no more
    expert-parallel ranks than routed experts (exit 2, naming the flags that were typed, not a --dp nobody typed)."""
    from moe_oracle.errors import DeploymentError

    if world > _MAX_RANKS:
        raise DeploymentError(
            f"--nodes {nodes} x --gpus-per-node {gpus_per_node} = {world:,} GPUs: with no --tp/--dp/--ep given, "
            f"moe-oracle proposes DP+EP over every GPU, and a layout spans at most {_MAX_RANKS:,} ranks",
            fix="give fewer --nodes or --gpus-per-node, or the layout itself (--dp N --ep N)",
        )
    experts = min(g.num_experts for g in model.layer_groups)
    if world > experts and not replicated:
        ep = max(d for d in range(1, experts + 1) if experts % d == 0 and d <= world)
        raise DeploymentError(
            f"{nodes} node(s) x {gpus_per_node} GPUs = {world} GPUs, more than the {experts} routed experts of "
            f"{model.model}: with no --tp/--dp/--ep given, moe-oracle proposes EP over every GPU, and ranks past the "
            "expert count would hold no expert",
            fix=f"give the layout: e.g. --dp {ep} --ep {ep} --nodes {-(-ep // gpus_per_node)} (more GPUs: serve "
            "replicas of it), or fewer --nodes",
        )


def smallest_fitting(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    buffer_bytes: int = 0,
    mtp_built: bool | None = None,
    settings: EngineMemorySettings | None = None,
) -> tuple[tuple[tuple[str, str], ...], Fit] | None:
    """The smallest pure DP+EP layout (doubling the GPUs from the given world size) on the same device whose
    fit holds (with the engine settings given, or ones :func:`fitting_settings` finds), as ``(flag, value)`` pairs
    with its fit;
    None when none up to :data:`MAX_SEARCH_GPUS` does."""
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
        kw = dict(conversions=conversions, mtp_built=mtp_built)
        fit = measure_fit(model, candidate, engine, buffer_bytes=buffer_bytes, settings=settings, **kw)  # type: ignore[arg-type]
        extra: tuple[tuple[str, str], ...] = ()
        if not fit.fits:
            prop = fitting_settings(
                model,
                candidate,
                engine,
                given=settings,
                buffer_for=lambda s: (buffer_bytes, ""),
                **kw,  # type: ignore[arg-type]
            )
            if prop is not None:
                fit, extra = prop.fit, settings_pairs(engine, prop.settings)
        if fit.fits and not fit.reasons:
            flags = (("--dp", str(gpus)), ("--ep", str(gpus)), *((("--nodes", str(nodes)),) if nodes > 1 else ()))
            return (*flags, *extra), fit
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
    mtp_built: bool | None = None,
    memory_fraction: float | None = None,
    settings: EngineMemorySettings | None = None,
    buffer_for: BufferFor | None = None,
) -> Fit:
    """:func:`measure_fit`, with a failing verdict's fix naming what exists, in this order: engine settings the
    engine accepts that make it fit (:func:`fitting_settings`), the smallest DP+EP layout on this device that
    fits (exact flags), and bundled checkpoints of the same model stored in a smaller format that fit this
    layout."""
    settings = settings or EngineMemorySettings()
    if memory_fraction is not None:
        settings = replace(settings, fraction=memory_fraction)
    fit = measure_fit(
        model,
        deployment,
        engine,
        conversions=conversions,
        mtp_built=mtp_built,
        buffer_bytes=buffer_bytes,
        buffer_detail=buffer_detail,
        settings=settings,
    )
    if fit.fits:
        return fit
    prop = fitting_settings(
        model,
        deployment,
        engine,
        conversions=conversions,
        mtp_built=mtp_built,
        given=settings,
        buffer_for=buffer_for,
        at_given=fit,
    )
    return _with_fix(
        model,
        deployment,
        engine,
        fit,
        settings,
        prop,
        conversions=conversions,
        mtp_built=mtp_built,
        buffer_bytes=buffer_bytes,
        buffer_for=buffer_for,
    )


def _with_fix(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    fit: Fit,
    settings: EngineMemorySettings,
    prop: SettingsProposal | None,
    *,
    conversions: dict[str, Conversion | None] | None,
    mtp_built: bool | None,
    buffer_bytes: int,
    buffer_for: BufferFor | None,
) -> Fit:
    """``fit`` (failing at ``settings``) with its fix; ``prop``: what :func:`fitting_settings` found for
    ``settings`` (already searched by the caller)."""
    kw = dict(conversions=conversions, mtp_built=mtp_built)
    fixes: list[Fix] = []
    dropped: tuple[tuple[str, str], ...] = ()
    for left_out, free in _without_given(settings) if prop is None else ():  # the values given do not fit
        prop = fitting_settings(model, deployment, engine, given=free, buffer_for=buffer_for, **kw)  # type: ignore[arg-type]
        if prop is not None:
            dropped = left_out
            break
    if prop is not None:
        fixes.append(
            Fix(
                FixKind.FIT,
                f"fit this layout, {prop.fit.kv_bytes / GIB:.1f} GiB of KV cache per rank",
                flags=settings_pairs(engine, prop.settings),
                dropped=dropped,
                lead="engine settings",
            )
        )
    bigger = smallest_fitting(model, deployment, engine, buffer_bytes=buffer_bytes, settings=settings, **kw)  # type: ignore[arg-type]
    if bigger is not None:
        flags, big_fit = bigger
        fixes.append(
            Fix(
                FixKind.LAYOUT,
                f"(tp 1) on {deployment.device.name} fits, {big_fit.kv_bytes / GIB:.1f} GiB of KV cache per rank",
                flags=flags,
                lead="more GPUs",
            )
        )
    for other in _smaller_checkpoints(model):
        small = measure_fit(other, deployment, engine, buffer_bytes=buffer_bytes, settings=settings)
        if small.fits:
            label = other.main_group.weight_quant.label()
            fixes.append(
                Fix(FixKind.FORMAT, f"({label} experts) fits this layout", model=other.model, lead="a smaller format")
            )
            break
    if not fixes:
        fixes.append(Fix(FixKind.MANUAL, f"no layout of up to {MAX_SEARCH_GPUS} {deployment.device.name} GPUs fits"))
    fix = render_fixes(fixes)
    reasons = tuple(replace(r, remediation=fix) for r in fit.reasons)
    return replace(fit, reasons=reasons, fixes=tuple(fixes))


def _without_given(settings: EngineMemorySettings) -> list[tuple[tuple[tuple[str, str], ...], EngineMemorySettings]]:
    """The given settings with the values the user gave left out, the fewest first: the budget, the fraction,
    both (each with the ``(flag, value)`` pairs left out), for a fix that says what to drop."""
    budget = settings.max_num_batched_tokens
    fraction = settings.fraction
    out: list[tuple[tuple[tuple[str, str], ...], EngineMemorySettings]] = []
    if budget is not None:
        out.append(((("--max-num-batched-tokens", str(budget)),), replace(settings, max_num_batched_tokens=None)))
    if fraction is not None:
        out.append(((("--memory-fraction", f"{fraction:g}"),), replace(settings, fraction=None)))
    if budget is not None and fraction is not None:
        both = replace(settings, fraction=None, max_num_batched_tokens=None)
        out.append(((("--memory-fraction", f"{fraction:g}"), ("--max-num-batched-tokens", str(budget))), both))
    return out


def settings_pairs(engine: Engine, s: EngineMemorySettings) -> tuple[tuple[str, str], ...]:
    """The engine flags of ``s`` as ``(flag, value)`` pairs, as moe-oracle's plans write them (SGLang's or vLLM's
    spelling)."""
    if engine is Engine.SGLANG:
        pairs = []
        if s.chunked_prefill_size is not None:
            pairs.append(("--chunked-prefill-size", str(s.chunked_prefill_size)))
        if s.cuda_graph_max_bs is not None:
            pairs.append(("--cuda-graph-max-bs-decode", str(s.cuda_graph_max_bs)))
        if s.fraction is not None:
            pairs.append(("--mem-fraction-static", f"{s.fraction:g}"))
        return tuple(pairs)
    pairs = [] if s.max_num_batched_tokens is None else [("--max-num-batched-tokens", str(s.max_num_batched_tokens))]
    if s.fraction is not None:
        pairs.append(("--gpu-memory-utilization", f"{s.fraction:g}"))
    return tuple(pairs)


def settings_flags(engine: Engine, s: EngineMemorySettings) -> str:
    """The engine flags of ``s`` as moe-oracle's plans write them (SGLang's or vLLM's spelling)."""
    return " ".join(f"{name} {value}" for name, value in settings_pairs(engine, s))


def settle_fit(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    mtp_built: bool | None = None,
    given: EngineMemorySettings | None = None,
    buffer_for: BufferFor | None = None,
) -> tuple[Fit, EngineMemorySettings, str | None]:
    """The one fit of a decided deployment, as every command computes it: at the engine settings given (their
    defaults where absent) when that fits; else at the first settings the engine accepts that fit (adopted, with
    the reason); else the failing verdict with its fix (:func:`fit_with_fix`)."""
    given = given or EngineMemorySettings()
    buffers, detail = buffers_of(buffer_for, given)
    kw = dict(conversions=conversions, mtp_built=mtp_built)
    fit = measure_fit(model, deployment, engine, buffer_bytes=buffers, buffer_detail=detail, settings=given, **kw)  # type: ignore[arg-type]
    if fit.fits:
        return fit, given, None
    prop = fitting_settings(model, deployment, engine, given=given, buffer_for=buffer_for, at_given=fit, **kw)  # type: ignore[arg-type]
    if prop is not None:
        return prop.fit, prop.settings, prop.why
    failed = _with_fix(model, deployment, engine, fit, given, None, buffer_bytes=buffers, buffer_for=buffer_for, **kw)  # type: ignore[arg-type]
    return failed, given, None
