"""Every fix a refusal prints is judged before it is printed (issue 32 item 1).

A refusal carries its alternatives typed (:class:`moe_oracle.errors.Fix`: the flags each sets, the given flags it
drops), made where the refusal is decided: the memory fit's engine settings, more GPUs and smaller formats
(:mod:`moe_oracle.decide.layout`), the engine's own layout checks (:mod:`moe_oracle.releases.layout_checks`), EP
beyond the routed experts (:func:`moe_oracle.decide.asked.check_ep_experts`), the decode batch, step budget and
context flags (:mod:`moe_oracle.decide.engine_flags`). Each alternative that sets or drops
flags is re-planned as an operator would run it (the refused request with those flags), and printed with what that
plan really gives, or with the refusal it still meets; one that meets the same refusal again is dropped (it would
send the operator in a circle). An alternative without flags (another checkpoint, a change by hand) is named as it
is. The engine release's own route (``--software <release>``, no plug-in, no kernel build) is tried too, on the
requested layout and on the first alternative's, and named when it plans. Engine settings the plan chooses by
itself (SGLang's ``--chunked-prefill-size``, ``--cuda-graph-max-bs-decode``) are left out of the flags shown:
``plan`` chooses them again.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from moe_oracle.errors import ExitCode, Fix, FixKind, OracleError
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
#: Flags of the request's options rather than its deployment (the decode batch, the context served).
_REQUEST_INT_FLAGS = {
    "--max-num-seqs": "max_num_seqs",
    "--decode-tokens": "decode_tokens",
    "--max-model-len": "max_model_len",
}
_LAYOUT = ("tp", "dp", "ep", "pp")
_FRACTION_FLAGS = ("--memory-fraction", "--gpu-memory-utilization", "--mem-fraction-static")
#: Engine settings ``plan`` chooses itself when the defaults do not fit (not moe-oracle flags).
_CHOSEN_BY_PLAN = ("--chunked-prefill-size", "--cuda-graph-max-bs-decode")
_DEFAULT_BUDGET: int = DeploymentFlags.max_num_batched_tokens  # the dataclass default (class attribute)
_STOCK = {engine: profile.split("+", 1)[0] for engine, profile in ENGINE_RELEASE_PROFILE.items()}

Pairs = tuple[tuple[str, str], ...]


def judging() -> bool:
    """True inside a judged re-plan."""
    return _JUDGING.get()


def _setting(name: str) -> str:
    return "--memory-fraction" if name in _FRACTION_FLAGS else name


def _apply(
    req: Any, flags: Sequence[tuple[str, str]], dropped: Sequence[tuple[str, str]] = (), model: str | None = None
) -> tuple[Any, Pairs, Pairs] | None:
    """``req`` with ``flags`` applied, the given settings ``dropped`` left out (the plan then chooses them) and
    ``model`` served instead (a FORMAT fix), with the flags and the dropped settings as ``plan`` takes them; None
    when a flag is not one ``plan`` takes (the alternative is then named as it is)."""
    deploy: dict[str, int] = {}
    update: dict[str, Any] = {} if model is None else {"model": model, "description": None, "checkpoint": None}
    shown: list[tuple[str, str]] = []
    shown_dropped: list[tuple[str, str]] = []
    set_again = {_setting(name) for name, _ in flags}
    for name, value in dropped:
        if _setting(name) in set_again:
            continue  # the alternative gives it another value
        if name in _FRACTION_FLAGS:
            update["memory_fraction"] = None
        elif name == "--max-num-batched-tokens":
            update["budget_given"] = False
            deploy["max_num_batched_tokens"] = _DEFAULT_BUDGET
        elif name == "--max-model-len":
            update["max_model_len"] = None
        else:
            return None
        shown_dropped.append((name, value))
    for name, value in flags:
        if name in _CHOSEN_BY_PLAN:
            continue
        try:
            if name in _INT_FLAGS:
                deploy[_INT_FLAGS[name]] = int(value)
                if name == "--max-num-batched-tokens":
                    update["budget_given"] = True
            elif name in _FRACTION_FLAGS:
                update["memory_fraction"] = float(value)
            elif name == "--software":
                update["software"] = value
            elif name in _REQUEST_INT_FLAGS:
                update[_REQUEST_INT_FLAGS[name]] = int(value)
                if name == "--max-num-seqs" and req.decode_tokens == req.max_num_seqs:
                    update["decode_tokens"] = int(value)  # the decode batch follows --max-num-seqs unless typed
            else:
                return None
        except ValueError:
            return None
        shown.append((_setting(name), value))
    if not shown and not shown_dropped and model is None:
        return None
    if any(k in deploy for k in _LAYOUT):
        # a layout in a fix is whole: what it leaves out is 1 (``more GPUs: --dp 32 --ep 32 (tp 1)``)
        deploy = {**dict.fromkeys(_LAYOUT, 1), **deploy}
        update["layout_why"] = None
    flags_obj = dataclasses.replace(req.flags, **deploy)
    new = dataclasses.replace(req, flags=flags_obj, settings=None, settings_why=None, **update)
    return new, tuple(shown), tuple(shown_dropped)


def _outcome(plan: Any) -> str:
    """What a plan that succeeded gives, in a few words."""
    path = f"{plan.backend}:{plan.variant}" if plan.backend else "the engine's own MoE path"
    kv = getattr(plan.fit, "kv_bytes", None)
    kv_text = f", {kv / 2**30:.1f} GiB of KV cache per rank" if kv is not None else ""
    where = f"{plan.replicas.count} x {plan.layout.label()}" if plan.replicas and plan.replicas.adopted else ""
    return f"plans {where or plan.layout.label()} with {path}{kv_text}"


def _short(exc: OracleError) -> str:
    text = exc.message
    return text if len(text) <= 160 else text[:157] + "..."


def judged_fixes(req: Any, exc: OracleError, build: Callable[[Any], Any]) -> tuple[Fix, ...] | None:
    """The typed fixes of ``exc`` (a refusal of ``req``), each re-planned by ``build`` (``build_plan``) and named
    with what it gives or still lacks, and the engine release's own route added where it plans; None when ``exc``
    carries no typed fix."""
    if not exc.fixes:
        return None
    token = _JUDGING.set(True)
    try:
        kept: list[Fix] = []
        first_flags: Pairs | None = None
        own_path = False
        for fix in exc.fixes:
            applied = _apply(req, fix.flags, fix.dropped, fix.model) if fix.flags or fix.dropped or fix.model else None
            if applied is None:
                kept.append(fix)
                continue
            new_req, flags, dropped = applied
            first_flags = first_flags if first_flags is not None else flags
            try:
                plan = build(new_req)
            except OracleError as again:
                if type(again) is type(exc) and _short(again) == _short(exc):
                    continue  # the same refusal again: no way out
                further = _completed(req, fix, again, build)
                if further is not None:  # what it still lacks, taken from the refusal it meets (--nodes N)
                    kept.append(further)
                    continue
                kept.append(Fix(fix.kind, f"is refused too ({_short(again)})", flags, dropped, fix.model, fix.lead))
                continue
            kept.append(Fix(fix.kind, _outcome(plan), flags, dropped, fix.model, fix.lead))
            own_path = own_path or (plan.backend is None and fix.model is None)
        stock = _STOCK.get(req.engine.value)
        # a memory refusal considers the engine release's own route (another footprint: no plug-in, no kernel build);
        # already named when a plan above runs the engine's path
        if stock and req.software is None and not own_path and exc.exit_code is ExitCode.DOES_NOT_FIT:
            kept += _stock_route(req, stock, first_flags or (), build)
    finally:
        _JUDGING.reset(token)
    return tuple(kept) or (
        Fix(FixKind.MANUAL, "no alternative moe-oracle knows plans this model on these GPUs (each was re-planned)"),
    )


def _completed(req: Any, fix: Fix, again: OracleError, build: Callable[[Any], Any]) -> Fix | None:
    """``fix`` completed with the flags of the first typed fix of the refusal it meets (``tp*dp*pp ... exceeds the
    8 GPUs``: ``--nodes 64``), when that plans; None otherwise (one step only)."""
    named = {_setting(name) for name, _ in fix.flags}
    for more in again.fixes:
        extra = [pair for pair in more.flags if _setting(pair[0]) not in named]
        if not extra or more.dropped:
            continue
        planned = _planned(req, build, [*fix.flags, *extra], fix.dropped, fix.model)
        if planned is not None:
            plan, flags, dropped = planned
            return Fix(fix.kind, _outcome(plan), flags, dropped, fix.model, fix.lead)
    return None


def _stock_route(req: Any, stock: str, first_flags: Pairs, build: Callable[[Any], Any]) -> list[Fix]:
    """The engine release's own route (no plug-in), on the requested layout, else on the first alternative's."""
    for flags in ((), first_flags):
        planned = _planned(req, build, [*[f for f in flags if f[0] != "--software"], ("--software", stock)])
        if planned is not None:
            plan, shown, _ = planned
            lead = "the engine's own route, without moe-oracle's plug-in"
            return [Fix(FixKind.PROFILE, _outcome(plan), shown, lead=lead)]
    return []


def _planned(
    req: Any,
    build: Callable[[Any], Any],
    flags: Sequence[tuple[str, str]],
    dropped: Sequence[tuple[str, str]] = (),
    model: str | None = None,
) -> tuple[Any, Pairs, Pairs] | None:
    """The plan of ``req`` with ``flags`` applied (:func:`_apply`), and the flags as shown; None where a flag is
    not one ``plan`` takes or the re-plan is refused."""
    applied = _apply(req, flags, dropped, model)
    if applied is None:
        return None
    new_req, shown, shown_dropped = applied
    try:
        return build(new_req), shown, shown_dropped
    except OracleError:
        return None
