"""The vLLM plug-in's decision for one config, from plain values: :func:`resolve` (tested without vLLM).

A :class:`~moe_oracle.engines.vllm.snapshot.VllmSnapshot` in, an :class:`Outcome` out (the mutations to make,
the table to log, or the refusal). The question goes through the one door (:mod:`moe_oracle.answers`), so the
bundled advisories are in force and the fingerprint is ``select``'s definition. The layer that touches vLLM
objects is :mod:`moe_oracle.engines.vllm.plugin`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict

from moe_oracle.engines.vllm.snapshot import ENV_DEVICE, ENV_SWITCH, VllmSnapshot, _layout, snapshot_inputs
from moe_oracle.releases import vllm as release
from moe_oracle.rules.variant_key import VariantKey

#: The flag vocabulary of the engine release these plans and hooks are written for.
F = release.flags

if TYPE_CHECKING:
    from moe_oracle.cost.model import Workload
    from moe_oracle.decide.question import ConversionOptions
    from moe_oracle.decide.selection import Candidate
    from moe_oracle.rules import Engine


class _DecideContext(TypedDict):
    """What every ``decide`` call of one resolution shares (the engine and its workload and conversions)."""

    engine: Engine
    workload: Workload
    conversion: ConversionOptions


@dataclass
class Outcome:
    """What the plug-in does with one config.

    ``action``: ``set`` (mutations below), ``keep`` (the requested value stands, validated or
    auto left alone), ``refuse`` (raise ``ValueError(error)``), ``skip`` (not ours to judge).
    """

    action: str
    requested: str
    moe_backend: str | None = None
    all2all_backend: str | None = None
    env_defaults: dict[str, str] = field(default_factory=dict)
    table: list[str] = field(default_factory=list)
    error: str | None = None
    fingerprint: str | None = None
    #: the new ``additional_config`` with the plan (groups served by moe-oracle's runtime), or None
    additional_config: dict[str, Any] | None = None
    #: log level of the table: INFO for the process that owns the server, DEBUG for the others,
    #: WARNING when the plug-in leaves vLLM alone because of its version
    level: int = logging.INFO

    def mutations(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.moe_backend is not None:
            out["kernel_config.moe_backend"] = self.moe_backend
        if self.additional_config is not None:
            from moe_oracle.engines.vllm.shipped import KEY, planned_groups

            served = [g["name"] for g in planned_groups(self.additional_config) if g.get("layer_plan")]
            out[f"additional_config.{KEY}.plan"] = "moe-oracle runtime for layer group(s) " + ", ".join(served)
        if self.all2all_backend is not None:
            out["parallel_config.all2all_backend"] = self.all2all_backend
        for k, v in self.env_defaults.items():
            out[f"os.environ.setdefault({k})"] = v
        return out


def _with_vllm_defaults(env: dict[str, str]) -> dict[str, str]:
    out = dict(F.ENGINE_ENV)
    out.update({k: v for k, v in env.items() if v is not None})
    # vLLM reads booleans as "1"/"true"
    for key in F.ENGINE_ENV:
        value = out[key].strip().lower()
        out[key] = "1" if value in ("1", "true") else "0"
    return out


def _level(snap: VllmSnapshot) -> int:
    """INFO in the one process that owns the server, DEBUG in every other process that builds a config.

    ``vllm serve`` with several API servers (vLLM 0.33 defaults their count to the DP size) builds the
    config first in the parent with ``_api_process_rank = -1`` (``entrypoints/cli/serve.py:309-313``), then
    once in each API-server process with ranks ``0..count-1``
    (``entrypoints/launchers/api_server/entry.py:56-58``); with one API server the only config has rank 0.
    A ``--headless`` node of a multi-node server builds its own with its ``--data-parallel-start-rank`` > 0.
    """
    owner = snap.api_process_rank == -1 or snap.api_process_count <= 1
    return logging.INFO if owner and snap.dp_rank == 0 else logging.DEBUG


def resolve(snap: VllmSnapshot) -> Outcome:
    """The plug-in's decision for one config, from plain values (the unit-tested core)."""
    from moe_oracle.engines.vllm.shipped import read_request
    from moe_oracle.engines.vllm.snapshot import check_env
    from moe_oracle.errors import BadInputError

    requested = (snap.moe_backend or "auto").strip().lower().replace("-", "_")
    head = f"moe-oracle: {snap.architecture} --moe-backend {requested}"
    if not F.supported(snap.vllm_version):
        line = (
            f"{head}: moe-oracle's vLLM rules cover vLLM {F.SUPPORTED}, this is vLLM {snap.vllm_version}; "
            "the plug-in leaves vLLM alone"
        )
        return Outcome("skip", requested, table=[line], level=logging.WARNING)
    try:
        check_env(snap.env)
        request = read_request(snap.additional_config, snap.env)
    except BadInputError as exc:
        return Outcome("refuse", requested, error=f"{exc.one_line()} [moe-oracle]", table=[f"{head}: refused"])
    hooked = release.gates.served_architecture(snap.architecture) or snap.architecture in F.HOOKED_ARCHITECTURES
    if not request.explicit and requested not in F.MOE_BACKENDS and not hooked:
        line = (
            f"{head}: vLLM {release.VERSION} does not build {snap.architecture}'s MoE as the RoutedExperts "
            "moe-oracle serves"
        )
        return Outcome("skip", requested, table=[line], level=logging.DEBUG)
    if request.explicit and requested in F.MOE_BACKENDS:
        return Outcome(
            "refuse",
            requested,
            error=(
                f"--moe-backend {requested} and additional_config moe_oracle.backend={request.backend} both choose "
                "the MoE backend. Fix: drop --moe-backend (moe-oracle's runtime serves the layers) or drop the "
                "moe_oracle backend [moe-oracle]"
            ),
            table=[f"{head}: refused (two backends requested)"],
        )
    if requested != "auto" and requested not in F.MOE_BACKENDS and not request.explicit:
        line = f"{head}: not a fused mega-MoE backend moe-oracle judges; left to vLLM"
        return Outcome("skip", requested, table=[line], level=_level(snap))
    out = _decide(replace(snap, env=_with_vllm_defaults(snap.env)), requested, request, head)
    if out.level == logging.INFO:
        out.level = _level(snap)
    return out


def _decide(snap: VllmSnapshot, requested: str, request: Any, head: str) -> Outcome:
    from moe_oracle.answers.door import answer
    from moe_oracle.cost.model import Workload
    from moe_oracle.decide.question import ConversionOptions, Question
    from moe_oracle.errors import BadInputError
    from moe_oracle.rules import Engine

    if snap.arch is None:
        if requested == "auto" and not request.explicit:
            return Outcome(
                "keep", requested, table=[f"{head}: platform {snap.platform} has no GPU moe-oracle models; auto kept"]
            )
        return Outcome(
            "refuse",
            requested,
            error=(
                f"{request.backend if request.explicit else '--moe-backend ' + requested} cannot run on platform "
                f"{snap.platform}: the fused mega-MoE kernels need an NVIDIA SM90/SM10x GPU or an MI355X. Fix: run on "
                f"such a GPU, or name one with {ENV_DEVICE} for a dry check [moe-oracle]"
            ),
            table=[f"{head}: refused, platform {snap.platform} has no fused mega-MoE kernel"],
        )
    try:
        description, deployment, software = snapshot_inputs(snap)
    except BadInputError as exc:
        return Outcome(
            "keep" if requested == "auto" and not request.explicit else "refuse",
            requested,
            error=f"moe-oracle cannot describe this config ({exc.one_line()})",
            table=[f"{head}: moe-oracle cannot describe this config ({exc.one_line()}); left to vLLM"],
        )
    if request.emulate:  # the numerics twin needs no kernel library: judge those with the 'all' profile
        from moe_oracle.engines.vllm.shipped import emulation_software

        software = emulation_software(software)
    blockers = []
    if snap.lora:
        blockers.append("LoRA is enabled and vLLM rejects every mega-MoE backend with LoRA")
    if snap.pcp > 1:
        blockers.append(f"prefill context parallel size {snap.pcp}: vLLM's DSv4.1 PCP path refuses mega-MoE backends")
    substituted = substituted_experts(snap.hf_config)
    if substituted:
        blockers.append(
            f"the config declares expert substitution ({substituted}): vLLM {release.SERIES} then builds "
            "SubstitutedRoutedExperts "
            "(fused_moe/layer.py:398-412), which the plug-in's replacement of RoutedExperts by exact class name does "
            "not reach"
        )
    source = "" if snap.device_source == "platform" else f" [device from {snap.device_source}]"
    where = (
        f"vLLM {snap.vllm_version}; {deployment.device.name} {deployment.device.arch.value}{source}; {_layout(snap)}; "
        f"{snap.max_num_batched_tokens} tokens/rank, {snap.max_num_seqs} seqs; "
        f"domain {deployment.topology.domain_size}; software {software.name}"
    )
    # the workload the engine runs: decode steps of up to max_num_seqs tokens per DP rank and prefill chunks of
    # max_num_batched_tokens, equally weighted
    ctx = _DecideContext(
        engine=Engine.VLLM,
        workload=Workload.default(deployment.parallel.tokens_per_rank, decode_tokens=snap.max_num_seqs),
        conversion=ConversionOptions(enabled=request.convert, allow_lossy=request.allow_lossy),
    )
    question = Question.of(description, deployment, software, **ctx)
    decision = answer(question).decision
    stale = _stale_plan(request, decision, head)
    if stale is not None:
        return stale
    if request.explicit:
        out = _explicit_plugin(snap, request, decision, blockers, head, where)
    elif requested == "auto":
        out = _auto(snap, request, decision, deployment, blockers, head, where)
    else:
        out = _explicit_native(snap, requested, decision, question, blockers, head, where)
    out.table = [*out.table, *(f"  note: {n}" for n in snap.notes)]
    return out


def substituted_experts(hf_config: dict[str, Any]) -> str:
    """The config key that declares expert substitution (``approximate_experts``, in the config or its
    ``text_config``, or ``compression_config.transform_config.expert_substitution``), or "" (vLLM 0.33
    ``fused_moe/expert_substitution.py:107-137``)."""
    for cfg, where in ((hf_config.get("text_config"), "text_config.approximate_experts"), (hf_config, "")):
        if isinstance(cfg, dict) and cfg.get("approximate_experts") is not None:
            return where or "approximate_experts"
    compression = hf_config.get("compression_config")
    transform = compression.get("transform_config") if isinstance(compression, dict) else None
    if isinstance(transform, dict) and transform.get("expert_substitution") is not None:
        return "compression_config.transform_config.expert_substitution"
    return ""


def _stale_plan(request: Any, decision: Any, head: str) -> Outcome | None:
    """A ``plan`` passed in (checked for shape by :func:`read_request`) must be the one this decision writes."""
    from moe_oracle.engines.vllm.shipped import KEY
    from moe_oracle.errors import excerpt as shown

    if request.plan is None:
        return None
    theirs, ours = request.plan.get("fingerprint"), _fingerprint(decision)
    if theirs == ours:
        return None
    return Outcome(
        "refuse",
        "auto",
        error=(
            f"additional_config['{KEY}']['plan'] carries decision fingerprint {shown(theirs)}; this config decides "
            f"{ours}. Fix: drop the plan key: the plug-in's config hook writes it [moe-oracle]"
        ),
        table=[f"{head}: refused (a plan written for another decision)"],
    )


def _fingerprint(decision: Any) -> str:
    from moe_oracle.decide.record import decision_fingerprint

    return decision_fingerprint(decision)


def _ship(snap: VllmSnapshot, routes: list[Any], fingerprint: str) -> dict[str, Any]:
    from moe_oracle.engines.vllm.shipped import ship

    return ship(snap.additional_config, [r.to_json() for r in routes], fingerprint)


def _explicit_plugin(snap, request, decision, blockers, head, where) -> Outcome:
    """``additional_config moe_oracle.backend``: each layer group through its pinned variant (one for every group,
    or a per-group map; ``vllm`` leaves a group to vLLM's own MoE), or refused with every reason."""
    from moe_oracle.engines.vllm.routes import GroupRoute, layer_plan, plugin_reasons, refusal_lines
    from moe_oracle.rules.engine import MOE_ORACLE_ROUTE

    def matcher(pin: str) -> Callable[[Candidate], bool]:
        key = VariantKey.parse(pin, subject=pin)
        return lambda c: key.matches(c.spec)

    fingerprint = _fingerprint(decision)
    label = request.label()
    names = [gd.group.name for gd in decision.groups]
    problem = None
    if request.groups is not None:
        unknown = [n for n in request.groups if n not in names]
        missing = [n for n in names if n not in request.groups]
        if unknown or missing:
            problem = (
                f"{request.source} pins layer group(s) {', '.join(map(repr, unknown or missing))} "
                + ("that this launch does not build" if unknown else "without a choice for the others")
                + f"; the launch builds {', '.join(names)}. Fix: name each of them once, with a variant or 'vllm'"
            )
    for pin in dict.fromkeys(request.for_group(n) for n in names):
        if (
            problem is None
            and pin not in (None, "vllm")
            and not any(matcher(pin)(c) for gd in decision.groups for c in gd.candidates)
        ):
            problem = f"{request.source} = {pin} names no registered variant. Fix: use one of " + ", ".join(
                c.spec.key for c in decision.main.candidates
            )
    if problem is not None:
        return Outcome("refuse", "auto", error=f"{problem} [moe-oracle]", table=[f"{head}: REFUSED, {label}"])
    routes, lines = [], []
    for gd in decision.groups:
        pin = request.for_group(gd.group.name)
        if pin == "vllm":
            routes.append(GroupRoute(gd.group.name, gd.group.layers, None, None, None, "pinned to vLLM's own MoE"))
            continue
        matches = matcher(pin)
        pool = [c for c in (*gd.candidates, *gd.conversions) if matches(c) and c.eligible]
        ok = next((c for c in pool if not plugin_reasons(decision, gd, c)), None)
        if ok is None:
            lines += refusal_lines(replace(decision, groups=(gd,)), matches)
            continue
        plan = layer_plan(decision, gd, ok, emulate=request.emulate, allow_lossy=request.allow_lossy)
        routes.append(GroupRoute(gd.group.name, gd.group.layers, MOE_ORACLE_ROUTE, ok.key, plan, "explicit request"))
    lines += blockers
    if lines:
        table = [f"{head}, {label}: REFUSED ({where})", *(f"  {line}" for line in lines)]
        error = f"{label} cannot run on this deployment: " + " | ".join(lines) + f" [moe-oracle; {ENV_SWITCH}=0 off]"
        return Outcome("refuse", "auto", error=error, table=table, fingerprint=fingerprint)
    from moe_oracle.engines.vllm.table import decision_table

    out = Outcome("set", "auto", fingerprint=fingerprint, additional_config=_ship(snap, routes, fingerprint))
    out.table = decision_table(decision, f"{head}, {label} validated ({where})", routes)
    out.table += [f"  set {k} = {v}" for k, v in out.mutations().items()] + [f"  decision fingerprint {fingerprint}"]
    return out


def _auto(snap, request, decision, deployment, blockers, head, where) -> Outcome:
    from moe_oracle.answers.replicas import global_choice
    from moe_oracle.engines.vllm.routes import group_routes
    from moe_oracle.engines.vllm.table import decision_table
    from moe_oracle.rules.engine import ENGINE_ROUTE, MOE_ORACLE_ROUTE

    fingerprint = _fingerprint(decision)
    routes = group_routes(decision)
    backend, _variant, why = global_choice(decision)
    native = backend is not None and backend in F.MOE_BACKENDS and all(r.route == ENGINE_ROUTE for r in routes)
    if native and backend is not None and not blockers:
        out = Outcome("set", "auto", moe_backend=backend, fingerprint=fingerprint)
        _native_extras(out, backend, snap, decision, deployment)
        out.table = decision_table(decision, f"{head} -> {backend} ({where})", routes)
    else:
        plugin = [r for r in routes if r.route == MOE_ORACLE_ROUTE]
        if request.backend == "vllm" or blockers or not plugin:
            reason = "; ".join(blockers) or (
                "additional_config moe_oracle.backend=vllm" if request.backend == "vllm" else why
            )
            table = decision_table(decision, f"{head} -> auto kept ({where})", routes)
            table.append(f"  kept auto: {reason or 'no layer group has an eligible fused backend'}")
            return Outcome("keep", "auto", table=table, fingerprint=fingerprint)
        served = [r if r.route == MOE_ORACLE_ROUTE else replace(r, route=None, plan=None) for r in routes]
        out = Outcome("set", "auto", fingerprint=fingerprint, additional_config=_ship(snap, served, fingerprint))
        out.table = decision_table(decision, f"{head} -> moe-oracle runtime ({where})", served)
        for r in served:
            if r.route is None:
                out.table.append(f"  layer group {r.name}: vLLM's own MoE ({r.why})")
    out.table += [f"  set {k} = {v}" for k, v in out.mutations().items()] + [f"  decision fingerprint {fingerprint}"]
    return out


def _explicit_native(snap, requested, decision, question, blockers, head, where):
    """An explicit ``--moe-backend deep_gemm_mega_moe`` / ``aiter_mega_moe``: vLLM's own path must run it."""
    from moe_oracle.answers.door import answer
    from moe_oracle.decide.selection import Override
    from moe_oracle.engines.vllm.routes import candidate_route, refusal_lines
    from moe_oracle.engines.vllm.table import decision_table
    from moe_oracle.errors import OverrideRefusedError
    from moe_oracle.rules.engine import ENGINE_ROUTE, MOE_ORACLE_ROUTE

    fingerprint = _fingerprint(decision)
    try:
        chosen = answer(question, override=Override(requested)).decision
    except OverrideRefusedError:
        chosen = None
    routes = [candidate_route(chosen, gd, gd.chosen) for gd in chosen.groups if gd.chosen is not None] if chosen else []
    if chosen is None or blockers or any(r != ENGINE_ROUTE for r in routes):
        lines = refusal_lines(decision, lambda c: c.spec.backend == requested, ENGINE_ROUTE) + blockers
        if chosen is not None and any(r == MOE_ORACLE_ROUTE for r in routes):
            keys = sorted({gd.chosen.spec.key for gd in chosen.groups if gd.chosen is not None})
            hint = (
                f"vLLM's own {requested} path cannot run this deployment, moe-oracle's runtime can: drop "
                f'--moe-backend and pass --additional-config \'{{"moe_oracle": {{"backend": "{keys[0]}"}}}}\''
            )
            lines = [hint] if not lines else [*lines, hint]
        table = decision_table(decision, f"{head}: REFUSED ({where})")
        error = f"--moe-backend {requested} cannot run on this deployment: " + " | ".join(lines)
        return Outcome(
            "refuse", requested, error=f"{error} [moe-oracle; {ENV_SWITCH}=0 off]", table=table, fingerprint=fingerprint
        )
    out = Outcome("keep", requested, fingerprint=fingerprint)
    _native_extras(out, requested, snap, chosen, question.deployment)
    out.table = decision_table(chosen, f"{head} validated: {requested} ({where})")
    out.table += [f"  set {k} = {v}" for k, v in out.mutations().items()] + [f"  decision fingerprint {fingerprint}"]
    return out


def _native_extras(out: Outcome, backend: str, snap: VllmSnapshot, decision: Any, deployment: Any) -> None:
    """AITER on vLLM: MoRI all2all and the symmetric-heap default the kernel needs."""
    if backend != "aiter_mega_moe":
        return
    from moe_oracle.fit.resources import aiter_capacities, derive_aiter_mtpr, derive_mori_heap
    from moe_oracle.fit.server import distinct_shapes
    from moe_oracle.spec.units import format_size

    if deployment.parallel.all2all_backend not in F.ALL2ALL_BACKENDS:
        out.all2all_backend = "mori_high_throughput"
    shapes = distinct_shapes(decision)
    mtpr = derive_aiter_mtpr(snap.max_num_batched_tokens, "max_num_batched_tokens", engine="vllm")
    ep = deployment.parallel.ep
    heap = derive_mori_heap(
        runtimes=[(s, aiter_capacities(mtpr.value, s.experts // ep, engine="vllm")) for s in shapes], ep=ep
    )
    out.env_defaults["MORI_SHMEM_HEAP_SIZE"] = format_size(heap.value)
    out.action = "set"
