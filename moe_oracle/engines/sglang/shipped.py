"""What moe-oracle's SGLang plug-in reads from the environment: the operator's request in, the shipped plan out.

SGLang 0.5.23 has no per-plug-in config field (vLLM has ``additional_config``), so both travel as
environment variables, which every process SGLang starts inherits (the scheduler processes are
started after ``ServerArgs.check_server_args`` runs in the launching process, ``entrypoints/engine.py``):

``MOE_ORACLE_SGLANG_BACKEND`` (the operator's, optional)
    ``auto`` (default: moe-oracle's runtime serves the layer groups the decision gives it),
    ``sglang`` (moe-oracle serves no layer), an explicit ``backend:variant`` or ``emulation:<variant>``
    (validated in the launching process before any weight loads, refused with every reason, never
    replaced), or a JSON object of per-layer-group pins (``{"moe": "B:V", "mtp": "sglang"}``).
``MOE_ORACLE_SGLANG_PLAN`` (written by the plug-in in the launching process)
    the decision fingerprint and, per layer group, its layers and the
    :class:`~moe_oracle.engines.layer_plan.LayerPlan` (``null``: SGLang's own MoE). A scheduler
    process builds moe-oracle layers only from it.

Torch-free and SGLang-free.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moe_oracle.engines.layer_plan import LayerPlan
from moe_oracle.engines.vllm.shipped import _backend_value, _group_pins, check_plan, plan_for_layer
from moe_oracle.errors import BadInputError
from moe_oracle.errors import excerpt as shown

ENV_BACKEND = "MOE_ORACLE_SGLANG_BACKEND"
ENV_PLAN = "MOE_ORACLE_SGLANG_PLAN"
OWN = "sglang"
_FIX = f"{ENV_BACKEND}=auto (or a backend:variant, emulation:<variant>, {OWN}, or a JSON object of per-group pins)"


@dataclass(frozen=True)
class Request:
    """The operator's choice: ``backend`` (``auto``, ``sglang`` or ``backend:variant``; ``pinned`` with ``groups``)."""

    backend: str = "auto"
    emulate: bool = False
    groups: Mapping[str, str] | None = None

    @property
    def explicit(self) -> bool:
        return self.groups is not None or self.backend not in ("auto", OWN)

    def for_group(self, name: str) -> str | None:
        return self.backend if self.groups is None else self.groups.get(name)

    def label(self) -> str:
        mark = "emulation:" if self.emulate else ""
        if self.groups is None:
            return f"{ENV_BACKEND}={mark}{self.backend.removeprefix('*:')}"
        return f"{ENV_BACKEND}={{" + ", ".join(f"{k}={v}" for k, v in self.groups.items()) + "}"


def read_request(env: Mapping[str, str]) -> Request:
    """``MOE_ORACLE_SGLANG_BACKEND`` checked; :class:`BadInputError` (one line: value, rule, fix) otherwise."""
    raw = env.get(ENV_BACKEND)
    if raw is None:
        return Request()
    text = raw.strip()
    if text.startswith("{"):
        from moe_oracle.jsonfile import parse_json_env

        pins = parse_json_env(ENV_BACKEND, text, fix=_FIX)
        if not isinstance(pins, dict):
            raise BadInputError(f"{ENV_BACKEND}={shown(raw)} must be a JSON object of pins", fix=_FIX)
        groups, emulate = _group_pins(pins, ENV_BACKEND, OWN, _FIX)
        return Request("pinned", emulate, groups)
    backend, emulate = _backend_value(raw, ENV_BACKEND, OWN, _FIX)
    return Request(backend, emulate)


def ship(groups: list[dict[str, Any]], fingerprint: str | None) -> str:
    """The plan as the value of ``MOE_ORACLE_SGLANG_PLAN``."""
    return json.dumps({"version": 1, "fingerprint": fingerprint, "groups": groups}, separators=(",", ":"))


def shipped_plan(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The plan the launching process wrote (checked for shape), or None when there is none."""
    raw = env.get(ENV_PLAN)
    if not raw:
        return None
    from moe_oracle.jsonfile import parse_json_env

    fix = f"unset {ENV_PLAN}: the plug-in writes it in the launching process."
    try:
        plan = parse_json_env(ENV_PLAN, raw, fix=fix)
    except BadInputError as exc:
        raise BadInputError(
            f"{ENV_PLAN}={shown(raw)} is not a plan moe-oracle's plug-in wrote ({exc.message})", fix=fix
        ) from None
    check_plan(plan)
    return plan


def serves_any(plan: Mapping[str, Any] | None) -> bool:
    """Does the plan give any layer group to moe-oracle's runtime?"""
    return plan is not None and any(g.get("layer_plan") for g in plan.get("groups", ()))


def plan_for(plan: Mapping[str, Any], layer_index: int) -> LayerPlan | None:
    """The :class:`LayerPlan` for decoder layer ``layer_index`` (None: SGLang's own MoE serves it)."""
    from moe_oracle.engines.vllm.shipped import KEY

    return plan_for_layer({KEY: {"plan": plan}}, layer_index)
