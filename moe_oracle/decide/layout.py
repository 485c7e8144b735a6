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

from collections.abc import Callable
from dataclasses import dataclass, replace

from moe_oracle.decide.fit import GIB, MIN_CONTEXT, Fit, measure_fit
from moe_oracle.decide.memory_share import (
    VLLM_DEFAULT_UTILIZATION,
    VLLM_MAX_PROPOSED_UTILIZATION,
    EngineMemorySettings,
    sglang_default_settings,
    vllm_serve_batch_defaults,
)
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
    _check_proposable(model, topo.nodes, topo.gpus_per_node, world)
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
    settings = fitting_settings(model, deployment, engine) if not fit.fits and memory_fraction is None else None
    if fit.fits:
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


#: The largest layout size a flag takes (spec/deployment.py ``Count``: 1..2^16).
_MAX_RANKS = 1 << 16


def _check_proposable(model: ModelDescription, nodes: int, gpus_per_node: int, world: int) -> None:
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
    if world > experts:
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
) -> tuple[str, Fit] | None:
    """The smallest pure DP+EP layout (doubling the GPUs from the given world size) on the same device whose
    fit holds (with the engine settings given, or ones :func:`fitting_settings` finds), as flags with its fit;
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
        extra = ""
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
                fit, extra = prop.fit, " " + settings_flags(engine, prop.settings)
        if fit.fits and not fit.reasons:
            flags = f"--dp {gpus} --ep {gpus}" + (f" --nodes {nodes}" if nodes > 1 else "") + extra
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
    fixes = []
    dropped = ""
    for words, free in _without_given(settings) if prop is None else ():  # the values given do not fit
        prop = fitting_settings(model, deployment, engine, given=free, buffer_for=buffer_for, **kw)  # type: ignore[arg-type]
        if prop is not None:
            dropped = f"without {words}, "
            break
    if prop is not None:
        fixes.append(
            f"engine settings: {dropped}{settings_flags(engine, prop.settings)} fit this layout, "
            f"{prop.fit.kv_bytes / GIB:.1f} GiB of KV cache per rank"
        )
    bigger = smallest_fitting(model, deployment, engine, buffer_bytes=buffer_bytes, settings=settings, **kw)  # type: ignore[arg-type]
    if bigger is not None:
        flags, big_fit = bigger
        fixes.append(
            f"more GPUs: {flags} (tp 1) on {deployment.device.name} fits, {big_fit.kv_bytes / GIB:.1f} GiB of "
            "KV cache per rank"
        )
    for other in _smaller_checkpoints(model):
        small = measure_fit(other, deployment, engine, buffer_bytes=buffer_bytes, settings=settings)
        if small.fits:
            fixes.append(
                f"a smaller format: {other.model} ({other.main_group.weight_quant.label()} experts) fits this layout"
            )
            break
    fix = "; or ".join(fixes) if fixes else f"no layout of up to {MAX_SEARCH_GPUS} {deployment.device.name} GPUs fits"
    reasons = tuple(replace(r, remediation=fix) for r in fit.reasons)
    return replace(fit, reasons=reasons)


def _without_given(settings: EngineMemorySettings) -> list[tuple[str, EngineMemorySettings]]:
    """The given settings with the values the user gave left out, the fewest first: the budget, the fraction,
    both (each with the words naming what was left out), for a fix that says what to drop."""
    budget = settings.max_num_batched_tokens
    fraction = settings.fraction
    out = []
    if budget is not None:
        out.append((f"--max-num-batched-tokens {budget}", replace(settings, max_num_batched_tokens=None)))
    if fraction is not None:
        out.append((f"--memory-fraction {fraction:g}", replace(settings, fraction=None)))
    if budget is not None and fraction is not None:
        both = replace(settings, fraction=None, max_num_batched_tokens=None)
        out.append((f"--memory-fraction {fraction:g} and --max-num-batched-tokens {budget}", both))
    return out


def settings_flags(engine: Engine, s: EngineMemorySettings) -> str:
    """The engine flags of ``s`` as moe-oracle's plans write them (SGLang's or vLLM's spelling)."""
    if engine is Engine.SGLANG:
        words = []
        if s.chunked_prefill_size is not None:
            words.append(f"--chunked-prefill-size {s.chunked_prefill_size}")
        if s.cuda_graph_max_bs is not None:
            words.append(f"--cuda-graph-max-bs-decode {s.cuda_graph_max_bs}")
        if s.fraction is not None:
            words.append(f"--mem-fraction-static {s.fraction:g}")
        return " ".join(words)
    words = [] if s.max_num_batched_tokens is None else [f"--max-num-batched-tokens {s.max_num_batched_tokens}"]
    if s.fraction is not None:
        words.append(f"--gpu-memory-utilization {s.fraction:g}")
    return " ".join(words)


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
    buffers, detail = _buffers(buffer_for, given)
    kw = dict(conversions=conversions, mtp_built=mtp_built)
    fit = measure_fit(model, deployment, engine, buffer_bytes=buffers, buffer_detail=detail, settings=given, **kw)  # type: ignore[arg-type]
    if fit.fits:
        return fit, given, None
    prop = fitting_settings(model, deployment, engine, given=given, buffer_for=buffer_for, at_given=fit, **kw)  # type: ignore[arg-type]
    if prop is not None:
        return prop.fit, prop.settings, prop.why
    failed = _with_fix(model, deployment, engine, fit, given, None, buffer_bytes=buffers, buffer_for=buffer_for, **kw)  # type: ignore[arg-type]
    return failed, given, None


def _buffers(buffer_for: BufferFor | None, settings: EngineMemorySettings) -> tuple[int, str]:
    """The symmetric buffers (bytes per rank, detail) the plan sizes for ``settings``; none without a sizer."""
    return buffer_for(settings) if buffer_for is not None else (0, "")


#: SGLang decode CUDA-graph batch sizes the settings search tries (at most SGLang's default for the GPU).
SGLANG_GRAPH_BATCHES = (512, 256, 128, 64, 32)
#: The smallest per-rank prefill chunk the settings search proposes to SGLang (tokens).
MIN_PREFILL_PER_RANK = 256
#: vLLM utilizations the settings search tries at each per-rank budget: vLLM's default (None: not written),
#: then higher ones up to the stated ceiling.
VLLM_UTILIZATIONS = (None, VLLM_MAX_PROPOSED_UTILIZATION)

#: ``settings -> (symmetric bytes per rank, detail)`` for one candidate of engine settings (the plan's buffers).
BufferFor = Callable[[EngineMemorySettings], tuple[int, str]]


@dataclass(frozen=True)
class SettingsProposal:
    """Engine settings the fit chose because the engine's defaults do not fit (``why``: one sentence)."""

    settings: EngineMemorySettings
    fit: Fit
    why: str


def budget_deployment(deployment: Deployment, settings: EngineMemorySettings) -> Deployment:
    """``deployment`` at the per-rank token budget ``settings`` imply (vLLM's ``--max-num-batched-tokens``: it
    sizes the DeepGEMM symmetric buffer and the activation reserve); unchanged when they imply none."""
    budget = settings.max_num_batched_tokens
    par = deployment.parallel
    if budget is None or budget == par.max_num_batched_tokens:
        return deployment
    return deployment.model_copy(update={"parallel": par.model_copy(update={"max_num_batched_tokens": budget})})


def _halvings(start: int, minimum: int) -> list[int]:
    """``start``, ``start/2``, ... while at least ``minimum`` (the per-rank budgets the search tries, largest first)."""
    out = []
    while start >= minimum:
        out.append(start)
        start //= 2
    return out


def _axes(deployment: Deployment, engine: Engine, given: EngineMemorySettings) -> tuple[list, list, Callable]:
    """The engine's two settings axes, each in the order preferred, and how one pair becomes settings: SGLang
    (``--chunked-prefill-size``, ``--cuda-graph-max-bs-decode``), vLLM (``--max-num-batched-tokens``,
    ``--gpu-memory-utilization``). A value given is the only value of its axis (judged as given)."""
    par = deployment.parallel
    if engine is Engine.SGLANG:
        _, default_bs = sglang_default_settings(deployment.device.memory_gib * 1024, par.tp * par.dp)
        batches = [b for b in SGLANG_GRAPH_BATCHES if b <= default_bs]
        if given.chunked_prefill_size is not None:
            chunks = [given.chunked_prefill_size]
        else:
            chunks = [t * par.dp for t in _halvings(par.tokens_per_rank, MIN_PREFILL_PER_RANK)]
        batches = [given.cuda_graph_max_bs] if given.cuda_graph_max_bs is not None else batches
        return chunks, batches, lambda c, b: replace(given, chunked_prefill_size=c, cuda_graph_max_bs=b, chosen=True)
    _, min_budget = vllm_serve_batch_defaults(deployment.device.name)
    # the smallest budget vLLM accepts is max_num_seqs: the one given, else vLLM's default for the device
    min_budget = given.max_num_seqs if given.max_num_seqs is not None else min_budget
    if given.max_num_batched_tokens is not None:
        budgets = [given.max_num_batched_tokens]
    else:
        budgets = _halvings(par.tokens_per_rank, min_budget) or [par.tokens_per_rank]
    fractions = [given.fraction] if given.fraction is not None else list(VLLM_UTILIZATIONS)

    def make(budget: int, fraction: float | None) -> EngineMemorySettings:
        lowered = budget if budget != par.max_num_batched_tokens or given.max_num_batched_tokens else None
        return replace(given, max_num_batched_tokens=lowered, fraction=fraction, chosen=True)

    return budgets, fractions, make


def _candidates(deployment: Deployment, engine: Engine, given: EngineMemorySettings) -> list[EngineMemorySettings]:
    """Settings the engine itself accepts, in the order preferred (:func:`_axes`: the largest per-rank budget
    first, then SGLang's largest decode CUDA-graph batch or vLLM's lowest utilization; a smaller budget shrinks
    SGLang's reserve and vLLM's symmetric buffer and activation reserve), the given settings left out. SGLang
    with a fraction given is judged as given (its formula no longer applies); vLLM's search stops at
    :data:`VLLM_MAX_PROPOSED_UTILIZATION` and at ``max_num_seqs``, the smallest budget vLLM accepts."""
    if engine not in (Engine.SGLANG, Engine.VLLM) or (engine is Engine.SGLANG and given.fraction is not None):
        return []
    first, second, make = _axes(deployment, engine, given)
    return [c for c in (make(a, b) for a in first for b in second) if c != replace(given, chosen=True)]


def settings_reason(
    engine: Engine, deployment: Deployment, chosen: EngineMemorySettings, chosen_share: float, default: Fit
) -> str:
    """Why the engine settings ``chosen`` were proposed: the share the engine's defaults give (``default``, the
    failing fit) and the one these give, both by the engine's own rule."""
    par = deployment.parallel
    short = f"{default.needed_bytes / GIB:.1f} GiB of weights and buffers against {default.usable_bytes / GIB:.1f}"
    if engine is Engine.SGLANG:
        what = (
            f"--chunked-prefill-size {chosen.chunked_prefill_size} ({(chosen.chunked_prefill_size or 0) // par.dp} "
            f"tokens per attention-DP rank) --cuda-graph-max-bs-decode {chosen.cuda_graph_max_bs}"
        )
        basis = (
            f"at SGLang's defaults for this layout its own formula gives --mem-fraction-static "
            f"{default.share.fraction:g} ({short}); for these settings it gives {chosen_share:g} (SGLang picks it "
            "itself: no fraction is forced)"
        )
    else:
        budget = chosen.max_num_batched_tokens or par.max_num_batched_tokens
        what = f"--max-num-batched-tokens {budget} (tokens per DP rank) --gpu-memory-utilization " + (
            f"{chosen.fraction:g}" if chosen.fraction is not None else f"{VLLM_DEFAULT_UTILIZATION:g} (vLLM's default)"
        )
        smaller = (
            f"; the budget {budget} instead of {par.max_num_batched_tokens} sizes the DeepGEMM symmetric buffer "
            "and the activation reserve smaller"
            if budget < par.max_num_batched_tokens
            else ""
        )
        basis = (
            f"at {par.max_num_batched_tokens} tokens per rank and {default.share.fraction:g} it does not fit "
            f"({short}){smaller}; the largest budget that holds the model's whole context is preferred, then the "
            f"largest that holds at least {MIN_CONTEXT:,} tokens; moe-oracle proposes at most "
            f"{VLLM_MAX_PROPOSED_UTILIZATION:g}"
        )
    return f"engine settings chosen by moe-oracle: {what}, because {basis}"


def fitting_settings(
    model: ModelDescription,
    deployment: Deployment,
    engine: Engine,
    *,
    conversions: dict[str, Conversion | None] | None = None,
    mtp_built: bool | None = None,
    given: EngineMemorySettings | None = None,
    buffer_for: BufferFor | None = None,
    at_given: Fit | None = None,
) -> SettingsProposal | None:
    """The first engine settings (:func:`_candidates`) under which the deployment fits with its whole context
    or at least :data:`~moe_oracle.decide.fit.MIN_CONTEXT` tokens; None when the given settings already fit or
    none does. ``at_given``: the fit at ``given`` when the caller has measured it already."""
    given = given or EngineMemorySettings()
    shorter: tuple[EngineMemorySettings, Fit] | None = None
    for cand in _candidates(deployment, engine, given):
        buffers, detail = _buffers(buffer_for, cand)
        fit = measure_fit(
            model,
            budget_deployment(deployment, cand),
            engine,
            conversions=conversions,
            buffer_bytes=buffers,
            buffer_detail=detail,
            mtp_built=mtp_built,
            settings=cand,
        )
        if fit.fits and not fit.reasons:  # the model's whole context: take it
            shorter = (cand, fit)
            break
        if fit.fits and shorter is None:  # a shorter context: kept unless a later candidate holds the whole
            shorter = (cand, fit)
    if shorter is None:
        return None
    cand, fit = shorter
    default = at_given or measure_fit(
        model,
        deployment,
        engine,
        conversions=conversions,
        buffer_bytes=_buffers(buffer_for, given)[0],
        mtp_built=mtp_built,
        settings=given,
    )
    return SettingsProposal(cand, fit, settings_reason(engine, deployment, cand, fit.share.fraction, default))
