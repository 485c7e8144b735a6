"""The engine-settings search: when a layout does not fit at the engine's defaults, the settings that make it fit
(vLLM's per-rank token budget and memory utilization; SGLang's prefill chunk and decode CUDA-graph batch), tried
in order, each with the fit it gives and one sentence on why.
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
from moe_oracle.model.types import ModelDescription
from moe_oracle.rules import Conversion, Engine
from moe_oracle.spec.deployment import Deployment

#: SGLang decode CUDA-graph batch sizes the settings search tries (at most SGLang's default for the GPU).
SGLANG_GRAPH_BATCHES = (512, 256, 128, 64, 32)
#: The smallest per-rank prefill chunk the settings search proposes to SGLang (tokens).
MIN_PREFILL_PER_RANK = 256
#: vLLM utilizations the settings search tries at each per-rank budget: vLLM's default (None: not written),
#: then higher ones up to the stated ceiling.
VLLM_UTILIZATIONS = (None, VLLM_MAX_PROPOSED_UTILIZATION)

#: ``settings -> (symmetric bytes per rank, detail)`` for one candidate of engine settings (the plan's buffers).
BufferFor = Callable[[EngineMemorySettings], tuple[int, str]]


def buffers_of(buffer_for: BufferFor | None, settings: EngineMemorySettings) -> tuple[int, str]:
    """The symmetric buffers (bytes per rank, detail) the plan sizes for ``settings``; none without a sizer."""
    return buffer_for(settings) if buffer_for is not None else (0, "")


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
        return replace(
            given,
            max_num_batched_tokens=lowered,
            fraction=fraction,
            chosen=True,
            fraction_chosen=given.fraction is None and fraction is not None,
        )

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
        buffers, detail = buffers_of(buffer_for, cand)
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
        buffer_bytes=buffers_of(buffer_for, given)[0],
        mtp_built=mtp_built,
        settings=given,
    )
    return SettingsProposal(cand, fit, settings_reason(engine, deployment, cand, fit.share.fraction, default))
