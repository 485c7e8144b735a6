"""The plug-in's entry in ``VllmConfig.additional_config["moe_oracle"]``: the operator's request in, the plan out.

``additional_config`` is vLLM's dict for plug-ins (``--additional-config``, a JSON object); vLLM
pickles the whole ``VllmConfig`` to every engine-core and worker process, so what the config hook
writes here in process 0 is what every layer reads at construction (vllm-0.33.md §8; vLLM 0.33
``config/vllm.py:429``). Operator keys (all optional):

``backend``
    ``auto`` (default: moe-oracle ranks its runtime variants next to vLLM's own backends),
    ``vllm`` (moe-oracle serves no layer; vLLM's ``--moe-backend`` alone decides), or an explicit
    variant ``backend:variant`` served through moe-oracle's runtime (validated before any weight
    loads, refused with every reason, never replaced). ``emulation:<variant>`` builds the variant's
    numerics twin instead of the kernel (checking a deployment on a machine without its GPU).
    ``MOE_ORACLE_VLLM_BACKEND`` sets the same from the environment (for scripts); the config wins.
``allow_lossy_conversion``, ``convert``
    as ``moe-oracle select --allow-lossy-conversion`` / ``--no-convert``.

The hook adds ``plan``: the decision fingerprint and, per layer group, the layers and the
:class:`~moe_oracle.engines.vllm.bridge.LayerPlan` (``None``: vLLM's own MoE serves the group).
Torch-free: the config hook runs where vLLM builds its config, which may be a process without a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import MoELayerGroup

KEY = "moe_oracle"
ENV_BACKEND = "MOE_ORACLE_VLLM_BACKEND"
_KNOWN = ("backend", "allow_lossy_conversion", "convert", "plan")
_FIX = '--additional-config \'{"moe_oracle": {"backend": "auto"}}\' (or a backend:variant, or vllm)'


@dataclass(frozen=True)
class LayerPlan:
    """What one layer group runs through moe-oracle, as the config hook ships it to every worker.

    ``variant``: ``backend:variant``; ``emulate``: build the numerics twin instead of the kernel
    (checking a deployment on a machine without its GPU); ``convert_from``: the checkpoint format of
    a load-time conversion to the variant's format; ``max_tokens_per_rank``: the per-rank token
    budget vLLM schedules (it sizes the one symmetric buffer of this shape).
    """

    group: MoELayerGroup
    variant: str
    max_tokens_per_rank: int
    emulate: bool = False
    convert_from: str | None = None
    allow_lossy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group.model_dump(mode="json"),
            "variant": self.variant,
            "max_tokens_per_rank": self.max_tokens_per_rank,
            "emulate": self.emulate,
            "convert_from": self.convert_from,
            "allow_lossy": self.allow_lossy,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LayerPlan:
        return cls(
            group=MoELayerGroup.model_validate(data["group"]),
            variant=str(data["variant"]),
            max_tokens_per_rank=int(data["max_tokens_per_rank"]),
            emulate=bool(data.get("emulate", False)),
            convert_from=data.get("convert_from"),
            allow_lossy=bool(data.get("allow_lossy", False)),
        )


@dataclass(frozen=True)
class Request:
    """What the operator asked of the plug-in (``backend`` normalized: ``auto``, ``vllm`` or ``backend:variant``)."""

    backend: str = "auto"
    emulate: bool = False
    allow_lossy: bool = False
    convert: bool = True

    @property
    def explicit(self) -> bool:
        return self.backend not in ("auto", "vllm")


def read_request(additional_config: Any, env: Mapping[str, str]) -> Request:
    """The operator's request from ``additional_config[KEY]`` (then ``MOE_ORACLE_VLLM_BACKEND``).

    Raises :class:`BadInputError` (one line: value, rule, fix) for anything it cannot read.
    """
    entry: Any = {}
    if isinstance(additional_config, Mapping):
        entry = additional_config.get(KEY, {})
    elif additional_config not in (None, ""):
        raise BadInputError(
            f"--additional-config {additional_config!r} is not a JSON object (vLLM keeps a non-JSON value as a string)",
            fix=f"pass a JSON object, e.g. {_FIX}.",
        )
    if not isinstance(entry, Mapping):
        raise BadInputError(f"additional_config['{KEY}'] = {entry!r} must be a JSON object", fix=f"use {_FIX}.")
    unknown = sorted(set(entry) - set(_KNOWN))
    if unknown:
        raise BadInputError(
            f"additional_config['{KEY}'] has unknown key(s) {', '.join(map(repr, unknown))}",
            fix=f"use only {', '.join(_KNOWN[:3])}.",
        )
    raw = entry.get("backend", env.get(ENV_BACKEND, "auto"))
    if not isinstance(raw, str) or not raw.strip():
        raise BadInputError(f"additional_config['{KEY}']['backend'] = {raw!r} must be a non-empty string", fix=_FIX)
    flags = {}
    for name in ("allow_lossy_conversion", "convert"):
        value = entry.get(name)
        if value is not None and not isinstance(value, bool):
            raise BadInputError(f"additional_config['{KEY}']['{name}'] = {value!r} must be true or false", fix=_FIX)
        flags[name] = value
    text = raw.strip().lower().replace("-", "_")
    emulate = text.startswith("emulation:")
    if emulate:
        text = text.split(":", 1)[1]
    if emulate and ":" not in text:
        text = f"*:{text}"  # emulation:<variant>: the backend is resolved from the registry
    if not emulate and text not in ("auto", "vllm") and ":" not in text:
        raise BadInputError(
            f"additional_config['{KEY}']['backend'] = {raw!r} names no variant",
            fix="use backend:variant (e.g. deep_gemm_mega_moe:sm90_fp8xfp4), emulation:<variant>, auto or vllm.",
        )
    return Request(
        backend=text,
        emulate=emulate,
        allow_lossy=bool(flags["allow_lossy_conversion"]),
        convert=flags["convert"] is not False,
    )


#: the kernel libraries of the ``all`` profile; an ``emulation:`` request builds the variant's numerics twin
#: (torch code), which needs none of them
KERNEL_LIBRARIES = ("deep_gemm", "aiter", "mori", "flydsl")


def emulation_software(software: Any) -> Any:
    """The profile an ``emulation:<variant>`` request is judged with: ``software`` (the probed one) with
    the kernel libraries of the ``all`` profile, so a machine without the kernel library (a CPU dry check)
    is not refused for it; every other library and every other rule stays as probed."""
    from moe_oracle.software.profiles import named_profile

    every = named_profile("all")
    assert every is not None
    libraries = dict(software.libraries)
    libraries.update({n: every.libraries[n] for n in KERNEL_LIBRARIES if n in every.libraries})
    return software.model_copy(
        update={
            "name": f"{software.name}, kernel libraries from 'all' (emulation)",
            "description": f"{software.description} Emulation: {', '.join(KERNEL_LIBRARIES)} as in 'all'.".strip(),
            "libraries": libraries,
        }
    )


def ship(additional_config: Any, groups: list[dict[str, Any]], fingerprint: str | None) -> dict[str, Any]:
    """``additional_config`` with the plan written under ``[KEY]["plan"]`` (a new dict; input untouched)."""
    out = dict(additional_config) if isinstance(additional_config, Mapping) else {}
    entry = dict(out.get(KEY) or {})
    entry["plan"] = {"version": 1, "fingerprint": fingerprint, "groups": groups}
    out[KEY] = entry
    return out


def planned_groups(additional_config: Any) -> list[dict[str, Any]]:
    entry = additional_config.get(KEY) if isinstance(additional_config, Mapping) else None
    plan = entry.get("plan") if isinstance(entry, Mapping) else None
    groups = plan.get("groups") if isinstance(plan, Mapping) else None
    return list(groups) if isinstance(groups, list) else []


def plan_for_layer(additional_config: Any, layer_index: int) -> LayerPlan | None:
    """The :class:`LayerPlan` of the group that holds decoder layer ``layer_index``, or None (vLLM's own MoE)."""
    for group in planned_groups(additional_config):
        if layer_index in group.get("layers", ()) and group.get("layer_plan"):
            return LayerPlan.from_json(group["layer_plan"])
    return None
