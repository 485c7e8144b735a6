"""``select`` and ``plan`` answer for the same deployment with the same verdict (issue 32 item 1): the same software
profile in the header (the ``+pr323`` / ``+sgl-deep-gemm`` replacement defaults on SM90 included), the same replica
count where EP crosses a domain, and both fit or both refuse with the same exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

import moe_oracle
from moe_oracle.errors import OracleError

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.name.replace("--", "/", 1) for p in (ROOT / "moe_oracle" / "presets").iterdir() if p.is_dir())
LAYOUTS: dict[str, dict[str, int]] = {
    "default": {},
    "two-nodes": {"nodes": 2},
    "dp16ep16": {"dp": 16, "ep": 16, "nodes": 2},
}


def _answer(call, model: str, **kw):  # type: ignore[no-untyped-def]
    try:
        return call(model, **kw).to_dict(), None
    except OracleError as exc:
        selection = getattr(exc, "selection", None)
        return (selection.to_dict() if selection is not None else None), exc.exit_code


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("device", ["h100", "h200", "b200"])
def test_select_and_plan_agree(engine: str, device: str) -> None:
    problems = []
    for model in PRESETS:
        for name, layout in LAYOUTS.items():
            kw = {"device": device, "engine": engine, **layout}
            sel, sel_code = _answer(moe_oracle.select, model, **kw)
            plan, plan_code = _answer(moe_oracle.plan, model, **kw)
            where = f"{model} {device} {engine} {name}"
            if sel_code != plan_code:
                problems.append(f"{where}: select exits {sel_code}, plan {plan_code}")
                continue
            if sel is None or plan is None or plan_code is not None:
                continue
            if sel["software"]["profile"] != plan["software"]["profile"]:
                problems.append(f"{where}: select {sel['software']['profile']}, plan {plan['software']['profile']}")
            plan_reps = plan["replicas"]["count"] if plan.get("replicas") and plan["replicas"]["adopted"] else 1
            sel_reps = sel["replicas"]["count"] if sel.get("replicas") else 1
            if sel_reps != plan_reps:
                problems.append(f"{where}: select {sel_reps} replica(s), plan {plan_reps}")
    assert not problems, "\n".join(problems)
