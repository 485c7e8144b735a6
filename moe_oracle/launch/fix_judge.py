"""Every fix a plan's memory refusal prints is judged before it is printed (issue 32 item 1).

A refusal's fix names alternatives (``more GPUs: --dp 32 --ep 32 --nodes 4 ...``; ``engine settings: ...``; ``a
smaller format: ...``), joined by ``; or ``. Each alternative that carries flags is re-planned as an operator would
run it (the refused request with those flags), and printed with what that plan really gives, or with the refusal
it still meets; one that meets the same refusal again is dropped (it would send the operator in a circle). The
engine release's own route (``--software <release>``, no plug-in, no kernel build) is tried too, on the requested
layout and on the first alternative's, and named when it plans. Engine settings the plan chooses by itself
(SGLang's ``--chunked-prefill-size``, ``--cuda-graph-max-bs-decode``) are left out of the flags shown: ``plan``
chooses them again.
"""

from __future__ import annotations

import contextvars
import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from moe_oracle.errors import OracleError
from moe_oracle.inputs import ENGINE_RELEASE_PROFILE, DeploymentFlags

#: Inside a judged re-plan, refusals are raised as they are (no judging of the judge's own re-plans).
_JUDGING: contextvars.ContextVar[bool] = contextvars.ContextVar("moe_oracle_fix_judging", default=False)

_INT_FLAGS = {
    "--tp": "tp",
    "--dp": "dp",
    "--ep": "ep",
    "--pp": "pp",
    "--nodes": "nodes",
    "--gpus-per-node": "gpus_per_node",
    "--max-num-batched-tokens": "max_num_batched_tokens",
}
_LAYOUT = ("tp", "dp", "ep", "pp")
_FRACTION_FLAGS = ("--memory-fraction", "--gpu-memory-utilization", "--mem-fraction-static")
#: Engine settings ``plan`` chooses itself when the defaults do not fit (not moe-oracle flags).
_CHOSEN_BY_PLAN = ("--chunked-prefill-size", "--cuda-graph-max-bs-decode")
_FLAG = re.compile(r"(--[a-z][a-z0-9-]*)[ =]([^\s;,()]+)")
#: ``engine settings: without --memory-fraction 0.5 and --max-num-batched-tokens 8192, ...``: settings the user gave
#: that the alternative drops (see :func:`moe_oracle.decide.layout._without_given`).
_WITHOUT = re.compile(r"^without (.*?), ")
_DEFAULT_BUDGET: int = DeploymentFlags.max_num_batched_tokens  # the dataclass default (class attribute)
_STOCK = {engine: profile.split("+", 1)[0] for engine, profile in ENGINE_RELEASE_PROFILE.items()}


def judging() -> bool:
    """True inside a judged re-plan."""
    return _JUDGING.get()


def _apply(req: Any, flags: list[tuple[str, str]], dropped: Sequence[tuple[str, str]] = ()) -> tuple[Any, str] | None:
    """``req`` with ``flags`` applied and the given settings ``dropped`` left out (the plan then chooses them), and
    the flags as ``plan`` takes them; None when a flag is not one ``plan`` takes (the alternative is then left as it
    is)."""
    deploy: dict[str, int] = {}
    update: dict[str, Any] = {}
    shown: list[str] = []

    def setting(name: str) -> str:
        return "--memory-fraction" if name in _FRACTION_FLAGS else name

    set_again = {setting(name) for name, _ in flags}
    for name, value in dropped:
        if setting(name) in set_again:
            continue  # the alternative gives it another value
        if name in _FRACTION_FLAGS:
            update["memory_fraction"] = None
        elif name == "--max-num-batched-tokens":
            update["budget_given"] = False
            deploy["max_num_batched_tokens"] = _DEFAULT_BUDGET
        else:
            return None
        shown.append(f"without {name} {value}")
    for name, value in flags:
        if name in _CHOSEN_BY_PLAN:
            continue
        try:
            if name in _INT_FLAGS:
                deploy[_INT_FLAGS[name]] = int(value)
                if name == "--max-num-batched-tokens":
                    update["budget_given"] = True
                shown.append(f"{name} {value}")
            elif name in _FRACTION_FLAGS:
                update["memory_fraction"] = float(value)
                shown.append(f"--memory-fraction {value}")
            elif name == "--software":
                update["software"] = value
                shown.append(f"--software {value}")
            else:
                return None
        except ValueError:
            return None
    if not shown:
        return None
    if any(k in deploy for k in _LAYOUT):
        # a layout in a fix is whole: what it leaves out is 1 (``more GPUs: --dp 32 --ep 32 (tp 1)``)
        deploy = {**dict.fromkeys(_LAYOUT, 1), **deploy}
        update["layout_why"] = None
    flags_obj = dataclasses.replace(req.flags, **deploy)
    return dataclasses.replace(req, flags=flags_obj, settings=None, settings_why=None, **update), " ".join(shown)


def _outcome(plan: Any) -> str:
    """What a plan that succeeded gives, in a few words."""
    path = f"{plan.backend}:{plan.variant}" if plan.backend else "the engine's own MoE path"
    kv = getattr(plan.fit, "kv_bytes", None)
    kv_text = f", {kv / 2**30:.1f} GiB of KV cache per rank" if kv is not None else ""
    where = f"{plan.replicas.count} x {plan.layout.label()}" if plan.replicas and plan.replicas.adopted else ""
    return f"plans {where or plan.layout.label()} with {path}{kv_text}"


def _lead(label: str) -> str:
    return "" if label == "use" else f"{label}: "


def _short(exc: OracleError) -> str:
    text = exc.message
    return text if len(text) <= 160 else text[:157] + "..."


def _alternatives(fix: str) -> list[tuple[str, str, str]]:
    """``(text, label, rest)`` of each alternative of ``fix``: ``label: rest`` parts joined by ``; or ``, or the
    layouts of a ``use A, or B, or C (...)`` fix (label ``use``)."""
    if fix.startswith("use ") and ", or " in fix:
        body = fix[4:].split(" (", 1)[0]
        return [(f"use {a}", "use", a) for a in body.split(", or ") if a.strip()]
    out = []
    for alt in (a for a in fix.split("; or ") if a.strip()):
        label, _, rest = alt.partition(": ")
        out.append((alt, label, rest))
    return out


def judged_fix(req: Any, exc: OracleError, build: Callable[[Any], Any]) -> str | None:
    """The fix of ``exc`` (a refusal of ``req``) with each alternative judged by ``build`` (``build_plan``), and the
    engine release's own route added where it plans; None when nothing changes."""
    fix = getattr(exc, "fix", None) or ""
    token = _JUDGING.set(True)
    try:
        kept: list[str] = []
        first_flags: list[tuple[str, str]] | None = None
        own_path = False
        for alt, label, rest in _alternatives(fix):
            without = _WITHOUT.match(rest)
            dropped = _FLAG.findall(without.group(1)) if without else []
            flags = _FLAG.findall(rest[without.end() :] if without else rest)
            applied = _apply(req, flags, dropped) if flags or dropped else None
            if applied is None:
                kept.append(alt)
                continue
            first_flags = first_flags if first_flags is not None else flags
            new_req, shown = applied
            try:
                plan = build(new_req)
            except OracleError as again:
                if type(again) is type(exc) and _short(again) == _short(exc):
                    continue  # the same refusal again: no way out
                kept.append(f"{_lead(label)}{shown} is refused too ({_short(again)})")
                continue
            kept.append(f"{_lead(label)}{shown} {_outcome(plan)}")
            own_path = own_path or plan.backend is None
        stock = _STOCK.get(req.engine.value)
        if stock and req.software is None and not own_path:  # already named when a plan above runs the engine's path
            for flags in ([], first_flags or []):
                applied = _apply(req, [*flags, ("--software", stock)])
                if applied is None:
                    continue
                new_req, shown = applied
                try:
                    plan = build(new_req)
                except OracleError:
                    continue
                line = f"the engine's own route, without moe-oracle's plug-in: {shown} {_outcome(plan)}"
                kept.append(line)
                break
    finally:
        _JUDGING.reset(token)
    judged = "; or ".join(kept)
    if judged == fix:
        return None
    return judged or "no alternative moe-oracle knows plans this model on these GPUs (each was re-planned)"
