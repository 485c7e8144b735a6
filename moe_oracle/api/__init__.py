"""The public Python API: ``moe_oracle.select``, ``moe_oracle.check`` and ``moe_oracle.plan``.

Each takes the model (a bundled preset id, a Hugging Face id in the local cache, a local directory or
``config.json``, a manual description's JSON file, or an already read
:class:`~moe_oracle.model.types.ModelDescription`) and the options of the matching command as keywords: the
long flag with underscores (``dp=8, ep=8, engine="vllm", software="all", workload="decode",
moe_backend="deep_gemm_mega_moe", speculative="mtp", env={"VLLM_...": "1"}``), with the CLI's defaults and
validation (:mod:`moe_oracle.api.keywords` reads them from the CLI's option table). The answers are the CLI's:
``moe_oracle.select(...).to_dict()`` is ``moe-oracle select ... --json``, fingerprint included. Failures are the
CLI's typed errors (:mod:`moe_oracle.errors`: ``.code``, ``.exit_code``, ``.fix``). See ``docs/api.md``.

Engine plug-ins, which read their question from the engine's configuration, ask a typed
:class:`~moe_oracle.decide.question.Question` through :func:`answer` and :func:`judge` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from moe_oracle.answers.door import answer, judge, select_asked, selection_of
from moe_oracle.answers.results import AdvisoryHit, Group, GroupVerdict, Plan, Rejected, Selection, Verdict
from moe_oracle.cost.held_out import HeldOutError
from moe_oracle.cost.near_tie import NearTie
from moe_oracle.errors import (
    BadInputError,
    DeploymentDoesNotFitError,
    DeploymentError,
    EngineLayoutError,
    OverrideRefusedError,
)

if TYPE_CHECKING:
    import click

    from moe_oracle.decide.asked import AskedQuestion

__all__ = [
    "AdvisoryHit",
    "Group",
    "GroupVerdict",
    "HeldOutError",
    "NearTie",
    "Plan",
    "Rejected",
    "Selection",
    "Verdict",
    "answer",
    "check",
    "judge",
    "plan",
    "select",
    "select_asked",
    "selection_of",
]


def asked_of(
    command: click.Command, call: str, model: Any, given: Mapping[str, Any], *, engine: str | None = None
) -> AskedQuestion:
    """The question ``command`` asks for ``model`` and the keywords ``given`` (its flags with underscores)."""
    from moe_oracle.api.keywords import parsed
    from moe_oracle.cli.options import asked_from
    from moe_oracle.model.types import ModelDescription
    from moe_oracle.rules import Engine

    description = model if isinstance(model, ModelDescription) else None
    if model is not None and description is None and not isinstance(model, str):
        raise BadInputError(
            f"{call}(model={type(model).__name__}) is not a model",
            fix="pass a preset id, a Hugging Face id, a directory, a config.json path or a ModelDescription",
        )
    with parsed(command, call, given) as kw:
        chosen = engine if engine is not None else kw.pop("engine")
        kw.pop("engine", None)
        if chosen is None:
            raise BadInputError(f"{call}() needs engine", fix='pass engine="vllm" or engine="sglang"')
        try:
            parsed_engine = Engine(chosen)
        except ValueError:
            raise BadInputError(
                f"{call}(engine={chosen!r}) is not an engine", fix=f"use one of: {', '.join(e.value for e in Engine)}"
            ) from None
        return asked_from(None if description else model, kw, command.name or call, parsed_engine, description)


def select(model: Any = None, *, device: str, **deployment: Any) -> Selection:
    """``moe-oracle select MODEL --device DEVICE ...``: the backend of every layer group, with every rejection,
    the memory fit and the advisories. Raises :class:`OverrideRefusedError` (exit code 3) when ``moe_backend``
    cannot run, :class:`DeploymentDoesNotFitError` (7, with ``.selection``) when the deployment does not fit,
    :class:`BadInputError` (2) for a bad keyword or value."""
    from moe_oracle.cli.cmd_select import select as command

    asked = asked_of(command, "moe_oracle.select", model, {"device": device, **deployment})
    source = model if isinstance(model, str) else None
    try:
        return select_asked(asked, source)
    except (DeploymentDoesNotFitError, DeploymentError, EngineLayoutError) as exc:
        from moe_oracle.launch.build import judge_select

        raise judge_select(source, asked, exc) from None  # its fixes judged as the CLI's select judges them


def check(model: Any = None, *, device: str, backend: str, **deployment: Any) -> Verdict:
    """Can ``backend`` (``NAME`` or ``NAME:VARIANT``) run every layer group of this deployment? Every reason when
    not: what an engine calls to validate ``--moe-backend`` before any weight loads. The same question as
    ``select(..., moe_backend=backend)``; a verdict, not an exception, whichever the answer (an unknown backend
    name is :class:`BadInputError`). ``.fit`` is the fit of the decision judged."""
    from moe_oracle.cli.cmd_select import select as command

    for taken in ("moe_backend", "allow_fallback"):
        if taken in deployment:
            raise BadInputError(f"moe_oracle.check() takes the backend as backend=, not {taken}=", fix=f"drop {taken}=")
    if not isinstance(backend, str):
        raise BadInputError(
            f"moe_oracle.check(backend={type(backend).__name__}) is not a backend name",
            fix="pass NAME or NAME:VARIANT, e.g. backend='aiter_mega_moe'",
        )
    from moe_oracle.decide.selection import Override

    wanted = Override.parse(backend)
    source = model if isinstance(model, str) else None
    given = {"device": device, **deployment}
    automatic = _fitted(asked_of(command, "moe_oracle.check", model, given), source)
    try:
        asked = asked_of(command, "moe_oracle.check", model, {**given, "moe_backend": str(wanted)})
        chosen: Selection | None = _fitted(asked, source)
        refusal: str | None = None
        trail: tuple[str, ...] = ()
    except OverrideRefusedError as exc:
        chosen, refusal, trail = None, exc.one_line(), exc.trail
    from moe_oracle.answers.door import verdict_of

    return verdict_of(wanted, automatic, chosen, refusal, trail)


def _fitted(asked: AskedQuestion, source: str | None) -> Selection:
    """:func:`select_asked`, keeping the selection of a deployment that does not fit (the verdict says so)."""
    try:
        return select_asked(asked, source)
    except DeploymentDoesNotFitError as exc:
        return exc.selection  # type: ignore[attr-defined]


def plan(model: Any = None, *, device: str, engine: str, **deployment: Any) -> Plan:
    """``moe-oracle plan MODEL --device DEVICE --engine ENGINE ...``: the serve command(s) and environment, the
    derived sizes, the memory fit and the decision they launch (``select``'s, same fingerprint). Raises as
    :func:`select` does."""
    from moe_oracle.cli.cmd_plan import plan as command
    from moe_oracle.launch.build import PlanRequest, build_plan

    asked = asked_of(command, "moe_oracle.plan", model, {"device": device, **deployment}, engine=engine)
    from moe_oracle.launch.prerequisites import with_prerequisites

    request = PlanRequest.of(model if isinstance(model, str) else None, asked)
    return Plan(with_prerequisites(build_plan(request), request))  # the CLI's plan: prerequisites first
