"""SGLang general plug-in: choose, validate and serve moe-oracle's runtime where SGLang has no fused path.

Registered under the ``sglang.srt.plugins`` entry point (``moe_oracle = ...plugin:register``).
SGLang 0.5.23 calls :func:`register` in every process it starts (``load_plugins()``:
``launch_server.py:79``, ``entrypoints/engine.py:286, 1159``, ``managers/scheduler.py:6323``,
``managers/data_parallel_controller.py:960``), and applies the hooks registered there right after
(``plugins/__init__.py:104-141``). Every hook goes through ``sglang.srt.plugins.hook_registry.HookRegistry``;
nothing else of SGLang is touched:

* ``ServerArgs.check_server_args`` (an ``AFTER`` hook; it runs in the launching process before any
  scheduler process starts or any weight loads, ``entrypoints/engine.py:1163``): the same decision as
  ``moe-oracle select --engine sglang``; an explicit ``MOE_ORACLE_SGLANG_BACKEND`` is validated and refused
  with every reason (one line per layer group, ``ValueError``); one table is logged; the plan is written to
  ``MOE_ORACLE_SGLANG_PLAN``, which the scheduler processes inherit;
* ``sglang.srt.layers.moe.fused_moe_triton.layer.FusedMoE`` (a class ``REPLACE``), only in a process whose
  inherited plan gives a layer group to moe-oracle: :class:`~moe_oracle.engines.sglang.layer.MoEOracleFusedMoE`,
  which builds SGLang's own layer and, for the planned layers, serves the forward through ``MegaMoELayer``.
  A process without such a plan registers no class hook: every layer is SGLang's own class;
* ``ModelRunner.load_model`` (a ``BEFORE`` hook, same processes): one line at INFO naming the plan this
  scheduler process builds its layers from (fingerprint, layer groups and what serves each), logged after
  SGLang has configured the scheduler's logging (``run_scheduler_process`` calls ``load_plugins()`` before
  that, ``managers/scheduler.py:6322-6342``) and before any layer is built (``model_runner.py:1270-1275``).

``MOE_ORACLE_SGLANG_PLUGIN=0`` turns the plug-in off; ``MOE_ORACLE_SGLANG_DEVICE=<catalogue name>`` names the
device for a dry check on a machine without it (a real GPU always wins). The pure core is :func:`resolve`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moe_oracle.engines.sglang.shipped import ENV_PLAN, OWN, Request, read_request, serves_any, ship, shipped_plan
from moe_oracle.rules.variant_key import VariantKey

if TYPE_CHECKING:
    from moe_oracle.decide.candidates import Candidate
    from moe_oracle.decide.selection import Decision, GroupDecision

LOGGER_NAME = "sglang.plugins.moe_oracle"
logger = logging.getLogger(LOGGER_NAME)
ENV_SWITCH = "MOE_ORACLE_SGLANG_PLUGIN"
ENV_DEVICE = "MOE_ORACLE_SGLANG_DEVICE"
SERVER_ARGS_HOOK = "sglang.srt.server_args.ServerArgs.check_server_args"
FUSED_MOE = "sglang.srt.layers.moe.fused_moe_triton.layer.FusedMoE"
LOAD_MODEL = "sglang.srt.model_executor.model_runner.ModelRunner.load_model"
_OFF = ("0", "false", "off", "no")
#: SGLang's ``--chunked-prefill-size`` when neither the operator nor its resolution sets one
DEFAULT_CHUNK = 8192


@dataclass(frozen=True)
class SglangArgs:
    """The ``ServerArgs`` fields the decision reads (plain values: :func:`resolve` is tested without SGLang)."""

    model_path: str
    tp_size: int = 1
    attn_dp_size: int = 1
    ep_size: int = 1
    pp_size: int = 1
    #: each attention-DP rank's prefill chunk in tokens: SGLang's resolved ``chunked_prefill_size``, already
    #: divided by ``attn_dp_size`` (``arg_groups/parallel_hook.py:327-333``); None: SGLang's default 8192
    prefill_tokens_per_rank: int | None = None
    enable_eplb: bool = False
    moe_a2a_backend: str | None = None
    speculative: bool = False
    device: str | None = None  # a catalogue name; None: this machine's GPU
    #: the kernel builds the decision judges: ``installed`` (probed: what the real hook uses) or a named software
    #: profile (a declared build, for a dry check without the libraries)
    software: str = "installed"


@dataclass
class Outcome:
    """``action``: ``plan`` (ship ``plan_env``), ``keep`` (nothing for moe-oracle to serve), ``refuse`` (``error``)."""

    action: str
    table: list[str] = field(default_factory=list)
    error: str | None = None
    plan_env: str | None = None


def launch_decision(args: SglangArgs, request: Request) -> Any:
    """The decision the hook makes for ``args``: the question ``moe-oracle plan`` asks for the same layout and
    per-rank token budget (same deployment and workload), judged with the installed software."""
    from moe_oracle.answers.door import answer
    from moe_oracle.cost.model import Workload
    from moe_oracle.decide.question import Question
    from moe_oracle.engines.vllm.shipped import emulation_software
    from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.rules import Engine
    from moe_oracle.software.types import LibraryBuild

    description = resolve_model(args.model_path)
    dp = max(1, args.attn_dp_size)
    per_rank = args.prefill_tokens_per_rank or DEFAULT_CHUNK
    flags = DeploymentFlags(
        device=args.device or "local",
        tp=max(1, args.tp_size // dp),
        dp=dp,
        ep=args.ep_size,
        pp=args.pp_size,
        eplb=args.enable_eplb,
        max_num_batched_tokens=per_rank,
        speculative="mtp" if args.speculative else "none",
    )
    deployment, _ = build_deployment(flags, {})
    software, _ = resolve_software(args.software, "local")
    if request.emulate:  # the numerics twin needs no kernel library
        software = emulation_software(software)
    libraries = dict(software.libraries)
    libraries["moe_oracle"] = LibraryBuild(name="moe_oracle", dist="moe-oracle (SGLang plug-in, running)")
    software = software.model_copy(update={"libraries": libraries})
    workload = Workload.default(deployment.parallel.tokens_per_rank)
    return answer(Question.of(description, deployment, software, engine=Engine.SGLANG, workload=workload)).decision


def _fingerprint(decision: Decision) -> str:
    from moe_oracle.decide.record import decision_fingerprint

    return decision_fingerprint(decision)


def _refusal(decision: Decision, gd: GroupDecision, pin: str) -> tuple[Candidate | None, list[str]]:
    """The candidate ``pin`` names that moe-oracle's route serves for ``gd``, or the reasons none does."""
    from moe_oracle.engines.routes import route_reasons
    from moe_oracle.model.spans import layer_span
    from moe_oracle.rules.engine import MOE_ORACLE_ROUTE

    key = VariantKey.parse(pin, subject=pin)
    pool = [c for c in (*gd.candidates, *gd.conversions) if key.matches(c.spec)]
    where = f"layer group '{gd.group.name}' (layers {layer_span(gd.group.layers)})"
    if not pool:
        known = ", ".join(c.spec.key for c in gd.candidates)
        return None, [f"{where}: {pin} names no registered variant. Fix: pin one of {known}, or '{OWN}'"]
    best = None
    for c in pool:
        reasons = route_reasons(decision, gd, c, MOE_ORACLE_ROUTE)
        if not reasons and c.eligible:
            return c, []
        if reasons and (best is None or len(reasons) < len(best[1])):
            best = (c, reasons)
    c, reasons = best if best is not None else (pool[0], [])
    first = reasons[0] if reasons else None
    if first is None:
        return None, [f"{where}: {c.spec.key} is not eligible here. Fix: pin another variant, or '{OWN}'"]
    return None, [f"{where}: {c.spec.key} [{first.code.value}] {first.message}. Fix: {first.remediation}"]


def resolve(args: SglangArgs, env: Mapping[str, str]) -> Outcome:
    """The plug-in's decision for one launch, from plain values; never raises (a refusal is an Outcome)."""
    from moe_oracle.engines.routes import GroupRoute, group_routes, layer_plan
    from moe_oracle.engines.vllm.table import decision_table
    from moe_oracle.errors import OracleError
    from moe_oracle.rules.engine import MOE_ORACLE_ROUTE

    head = f"moe-oracle (SGLang plug-in): {args.model_path}"
    try:
        request = read_request(env)
    except OracleError as exc:
        return Outcome("refuse", [f"{head}: refused"], error=f"{exc.one_line()} [moe-oracle]")
    if request.backend == OWN and request.groups is None:
        return Outcome("keep", [f"{head}: {request.label()}: SGLang's own MoE serves every layer"])
    try:
        decision = launch_decision(args, request)
    except OracleError as exc:
        if request.explicit:
            return Outcome("refuse", [f"{head}: refused"], error=f"{request.label()}: {exc.one_line()} [moe-oracle]")
        return Outcome("keep", [f"{head}: cannot judge this launch ({exc.one_line()}); SGLang's own MoE serves it"])
    names = [gd.group.name for gd in decision.groups]
    if request.groups is not None and set(request.groups) != set(names):
        return Outcome(
            "refuse",
            [f"{head}: refused"],
            error=f"{request.label()} must pin exactly the layer groups this launch builds ({', '.join(names)}). "
            f"Fix: name each once, with a variant or '{OWN}' [moe-oracle]",
        )
    if request.explicit and args.moe_a2a_backend not in (None, "none"):
        return Outcome(
            "refuse",
            [f"{head}: refused (two backends requested)"],
            error=f"--moe-a2a-backend {args.moe_a2a_backend} and {request.label()} both choose the MoE path. Fix: "
            f"drop --moe-a2a-backend (moe-oracle's runtime serves the layers) or set {request.label().split('=')[0]}"
            f"={OWN} [moe-oracle]",
        )
    if request.explicit:
        routes, lines = [], []
        for gd in decision.groups:
            pin = request.for_group(gd.group.name) or OWN
            if pin == OWN:
                routes.append(GroupRoute(gd.group.name, gd.group.layers, None, None, None, "pinned", engine=OWN))
                continue
            chosen, why = _refusal(decision, gd, pin)
            lines += why
            if chosen is not None:
                plan = layer_plan(decision, gd, chosen, emulate=request.emulate)
                routes.append(
                    GroupRoute(gd.group.name, gd.group.layers, MOE_ORACLE_ROUTE, chosen.key, plan, "pinned", engine=OWN)
                )
        if lines:
            return Outcome(
                "refuse",
                [f"{head}, {request.label()}: REFUSED", *(f"  {line}" for line in lines)],
                error=f"{request.label()} cannot run on this deployment:\n" + "\n".join(lines),
            )
        headline = f"{head}, {request.label()} validated"
    else:
        routes = group_routes(decision, emulate=request.emulate)
        if args.moe_a2a_backend not in (None, "none"):  # the operator chose SGLang's own path for every layer
            routes = [r if r.route != MOE_ORACLE_ROUTE else GroupRoute(r.name, r.layers, None, None, None, "", OWN)
                      for r in routes]  # fmt: skip
        headline = f"{head}, auto"
    table = decision_table(decision, headline, routes, engine_title="SGLang")
    served = [r for r in routes if r.route == MOE_ORACLE_ROUTE]
    if not served:
        return Outcome("keep", [*table, "  moe-oracle's runtime serves no layer group; SGLang builds every layer"])
    fingerprint = _fingerprint(decision)
    table.append(f"  {ENV_PLAN} written for the scheduler processes; decision fingerprint {fingerprint}")
    return Outcome("plan", table, plan_env=ship([r.to_json() for r in routes], fingerprint))


def args_from_server_args(server_args: Any, env: Mapping[str, str]) -> SglangArgs:
    """The fields :func:`resolve` reads, as SGLang resolved them.

    Read through ``resolving_view`` (``arg_groups/model_override_base.py:120``), the view SGLang's own
    ``check_server_args`` reads (``arg_groups/validation_hook.py:175``): every launcher resolves the record
    before checking it (``entrypoints/engine.py:1153-1165``, ``launch_server.py:29``), and resolution writes
    declarations, never the raw fields. So ``chunked_prefill_size`` here is each rank's chunk (divided by
    ``attn_dp_size`` once, ``parallel_hook.py:327-333``; SGLang's default when the operator set none), and
    ``ep_size``/``attn_dp_size`` are what SGLang runs with, not what was typed.
    """
    from sglang.srt.arg_groups.model_override_base import resolving_view

    cfg = resolving_view(server_args)
    attn_dp = getattr(cfg, "attn_dp_size", None) or 1
    if getattr(cfg, "enable_dp_attention", False) and attn_dp == 1:
        attn_dp = getattr(cfg, "dp_size", 1) or 1
    chunk = getattr(cfg, "chunked_prefill_size", None)
    return SglangArgs(
        model_path=str(cfg.model_path),
        tp_size=int(cfg.tp_size),
        attn_dp_size=int(attn_dp),
        ep_size=int(getattr(cfg, "ep_size", 1) or 1),
        pp_size=int(getattr(cfg, "pp_size", 1) or 1),
        prefill_tokens_per_rank=int(chunk) if isinstance(chunk, int) and chunk > 0 else None,
        enable_eplb=bool(getattr(cfg, "enable_eplb", False)),
        moe_a2a_backend=getattr(cfg, "moe_a2a_backend", None),
        speculative=getattr(cfg, "speculative_algorithm", None) not in (None, "", "none", "NONE"),
        device=env.get(ENV_DEVICE) or None,
    )


def after_check_server_args(result: Any, server_args: Any, *args: Any, **kwargs: Any) -> None:
    """``AFTER`` hook on ``ServerArgs.check_server_args``: decide, refuse (``ValueError``) or ship the plan."""
    out = resolve(args_from_server_args(server_args, os.environ), os.environ)
    for line in out.table:
        logger.info("%s", line)
    if out.action == "refuse":
        raise ValueError(f"moe-oracle: {out.error}")
    if out.plan_env is not None:
        os.environ[ENV_PLAN] = out.plan_env  # inherited by the scheduler processes started after this
    else:
        os.environ.pop(ENV_PLAN, None)
    return None


def register() -> None:
    """The entry point: register the hooks through SGLang's ``HookRegistry`` (see the module docstring)."""
    switch = os.environ.get(ENV_SWITCH, "1")
    if switch.strip().lower() in _OFF:
        # at WARNING: logged even before SGLang configures its logging (the last-resort handler writes it)
        logger.warning(
            "moe-oracle (SGLang plug-in): off (%s=%s): SGLang serves every MoE layer with its own code; a moe-oracle "
            "plan for this server is not applied (unset %s to apply it)",
            ENV_SWITCH,
            switch,
            ENV_SWITCH,
        )
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    HookRegistry.register(SERVER_ARGS_HOOK, after_check_server_args, HookType.AFTER)
    plan = shipped_plan(os.environ)
    if plan is not None and serves_any(plan):
        from moe_oracle.engines.sglang.layer import MoEOracleFusedMoE

        HookRegistry.register(FUSED_MOE, MoEOracleFusedMoE, HookType.REPLACE)
        HookRegistry.register(LOAD_MODEL, _announce(plan), HookType.BEFORE)
    logger.info("%s", start_text(plan, os.environ))


def start_text(plan: Mapping[str, Any] | None, env: Mapping[str, str]) -> str:
    """The plug-in's INFO line at start (:func:`moe_oracle.engines.plugin_probe.start_line`): in a process with an
    inherited plan, the layer groups it serves; in the launching process, the request it will decide."""
    from importlib import metadata

    from moe_oracle.engines.plugin_probe import start_line
    from moe_oracle.rules import Engine

    if serves_any(plan):
        assert plan is not None
        serves = received_line(plan).split(": ", 1)[1]
    elif plan is not None:
        serves = f"plan {plan['fingerprint']} gives moe-oracle no layer group; SGLang's own MoE builds every layer"
    else:
        request = env.get("MOE_ORACLE_SGLANG_BACKEND") or "auto"
        serves = (
            f"decides MOE_ORACLE_SGLANG_BACKEND={request} at check_server_args (before any weight loads) and ships "
            f"the plan to the scheduler processes ({ENV_PLAN})"
        )
    try:
        version = metadata.version("sglang")
    except metadata.PackageNotFoundError:
        version = "(version unknown)"
    return start_line(Engine.SGLANG, version, serves)


def received_line(plan: Mapping[str, Any]) -> str:
    """The line a scheduler process logs for the plan it inherited: fingerprint and what serves each layer group."""
    from moe_oracle.model.spans import layer_span

    groups = ", ".join(
        f"{g['name']} (layers {layer_span(g['layers'])}): {g['variant'] if g.get('layer_plan') else OWN}"
        for g in plan["groups"]
    )
    return f"moe-oracle (SGLang plug-in): this process builds its MoE layers from plan {plan['fingerprint']}: {groups}"


def _announce(plan: Mapping[str, Any]) -> Any:
    """The ``BEFORE`` hook on ``ModelRunner.load_model``: log :func:`received_line` once per process."""
    done: list[bool] = []

    def before_load_model(*args: Any, **kwargs: Any) -> None:
        if not done:
            done.append(True)
            logger.info("%s", received_line(plan))

    return before_load_model
