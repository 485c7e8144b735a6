"""The plug-in's entry in ``VllmConfig.additional_config["moe_oracle"]``: the operator's request in, the plan out.

``additional_config`` is vLLM's dict for plug-ins (``--additional-config``, a JSON object); vLLM
pickles the whole ``VllmConfig`` to every engine-core and worker process, so what the config hook
writes here in process 0 is what every layer reads at construction
(https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/plugins/__init__.py; vLLM 0.33
``config/vllm.py:429``). Operator keys (all optional):

``backend``
    ``auto`` (default: moe-oracle ranks its runtime variants next to vLLM's own backends),
    ``vllm`` (moe-oracle serves no layer; vLLM's ``--moe-backend`` alone decides), or an explicit
    variant ``backend:variant`` served through moe-oracle's runtime (validated before any weight
    loads, refused with every reason, never replaced). ``emulation:<variant>`` builds the variant's
    numerics twin instead of the kernel (checking a deployment on a machine without its GPU).
    A JSON object pins each layer group's own choice, ``{"moe": "B:V", "mtp": "vllm"}``: every layer
    group the launch builds is named, each with a variant or ``vllm`` (vLLM's own MoE for that group).
    ``MOE_ORACLE_VLLM_BACKEND`` sets the same from the environment (for scripts; a string, or the
    JSON object); the config wins.
``allow_lossy_conversion``, ``convert``
    as ``moe-oracle select --allow-lossy-conversion`` / ``--no-convert``.
``plan``
    written by the config hook: the decision fingerprint and, per layer group, the layers and the
    :class:`~moe_oracle.engines.vllm.bridge.LayerPlan` (``None``: vLLM's own MoE serves the group).
    One passed in is checked for shape and must carry the fingerprint of the decision the hook
    reaches (it is then replaced by the hook's own); anything else is refused.

Every value is checked before the config is accepted; a refusal is one line naming the key and a
bounded copy of the value (:func:`moe_oracle.errors.excerpt`).
Torch-free: the config hook runs where vLLM builds its config, which may be a process without a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moe_oracle.engines.layer_plan import LayerPlan
from moe_oracle.errors import BadInputError
from moe_oracle.errors import excerpt as shown
from moe_oracle.rules.variant_key import ANY_BACKEND, VariantKey

KEY = "moe_oracle"
ENV_BACKEND = "MOE_ORACLE_VLLM_BACKEND"
_KNOWN = ("backend", "allow_lossy_conversion", "convert", "plan")
_GROUP = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_FIX = '--additional-config \'{"moe_oracle": {"backend": "auto"}}\' (or a backend:variant, or vllm)'


@dataclass(frozen=True)
class Request:
    """What the operator asked of the plug-in.

    ``backend``: ``auto``, ``vllm`` or ``backend:variant`` (``*:variant`` for ``emulation:<variant>``);
    ``groups``: the per-layer-group pins (``{name: "backend:variant" | "vllm"}``), or None for one
    choice for every group (``backend``); ``source``: where the choice came from (for messages).
    """

    backend: str = "auto"
    emulate: bool = False
    allow_lossy: bool = False
    convert: bool = True
    groups: Mapping[str, str] | None = None
    source: str = f"additional_config['{KEY}']['backend']"
    #: the ``plan`` passed in (already checked for shape), or None
    plan: Mapping[str, Any] | None = None

    @property
    def explicit(self) -> bool:
        return self.groups is not None or self.backend not in ("auto", "vllm")

    def for_group(self, name: str) -> str | None:
        """This group's pin (``backend:variant`` or ``vllm``); None when the map does not name it."""
        if self.groups is None:
            return self.backend
        return self.groups.get(name)

    def label(self) -> str:
        """The request as the operator wrote it, for the table and refusals."""

        def spelled(pin: str) -> str:
            if not self.emulate or pin == "vllm":
                return pin
            return f"emulation:{pin[2:] if pin.startswith('*:') else pin}"

        if self.groups is None:
            return f"moe_oracle.backend={spelled(self.backend)}"
        return f"moe_oracle.backend={{{', '.join(f'{k}={spelled(v)}' for k, v in self.groups.items())}}}"


def _backend_value(raw: Any, where: str, own: str = "vllm", fix: str = _FIX) -> tuple[str, bool]:
    """One backend spelling -> (normalized, emulate); BadInputError for anything else. ``own`` is the word that
    leaves the MoE to the engine (``vllm``, ``sglang``)."""
    if not isinstance(raw, str) or not raw.strip():
        raise BadInputError(f"{where} = {shown(raw)} must be a non-empty string", fix=fix)
    text = raw.strip().lower().replace("-", "_")
    if text in ("auto", own):
        return text, False
    key = VariantKey.parse(
        raw,
        subject=f"{where} = {shown(raw)}",
        require_variant=True,
        fix=f"use backend:variant (e.g. deep_gemm_mega_moe:sm90_fp8xfp4), emulation:<variant>, auto or {own}.",
    )
    # emulation:<variant> pins '*:<variant>': the backend is resolved from the registry
    return f"{key.backend or ANY_BACKEND}:{key.variant}", key.emulated


def _group_pins(raw: Mapping[Any, Any], where: str, own: str = "vllm", fix: str = _FIX) -> tuple[dict[str, str], bool]:
    """A per-layer-group map -> ({group: pin}, emulate)."""
    if not raw:
        raise BadInputError(f"{where} = {{}} names no layer group", fix=fix)
    pins: dict[str, str] = {}
    modes = set()
    for name, value in raw.items():
        if not isinstance(name, str) or not _GROUP.fullmatch(name):
            raise BadInputError(f"{where} has a layer-group name {shown(name)} that is not a name", fix=fix)
        text, emulate = _backend_value(value, f"{where}[{name!r}]", own, fix)
        if text == "auto":
            raise BadInputError(
                f"{where}[{name!r}] = 'auto': a layer-group pin is a variant or '{own}'",
                fix=f"pin a variant or '{own}' for the group, or pass backend 'auto' for the whole model.",
            )
        if text != own:
            modes.add(emulate)
        pins[name] = text
    if len(modes) > 1:
        raise BadInputError(
            f"{where} mixes emulation: and kernel variants", fix="use emulation: for every pinned group or for none."
        )
    return pins, modes == {True}


def _backend_from_env(env: Mapping[str, str]) -> Any:
    """``MOE_ORACLE_VLLM_BACKEND``: a backend string, or a JSON object of per-group pins."""
    raw = env.get(ENV_BACKEND)
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("{"):
        from moe_oracle.jsonfile import parse_json_env

        return parse_json_env(ENV_BACKEND, text, fix=_FIX)
    return raw


def read_request(additional_config: Any, env: Mapping[str, str]) -> Request:
    """The operator's request from ``additional_config[KEY]`` (then ``MOE_ORACLE_VLLM_BACKEND``).

    Raises :class:`BadInputError` (one line: key, shortened value, rule, fix) for anything it cannot read.
    """
    entry: Any = {}
    if isinstance(additional_config, Mapping):
        entry = additional_config.get(KEY, {})
    elif additional_config not in (None, ""):
        raise BadInputError(
            f"--additional-config {shown(additional_config)} is not a JSON object (vLLM keeps a non-JSON value as a "
            "string)",
            fix=f"pass a JSON object, e.g. {_FIX}.",
        )
    if not isinstance(entry, Mapping):
        raise BadInputError(f"additional_config['{KEY}'] = {shown(entry)} must be a JSON object", fix=f"use {_FIX}.")
    unknown = sorted(set(entry) - set(_KNOWN), key=str)
    if unknown:
        raise BadInputError(
            f"additional_config['{KEY}'] has unknown key(s) {', '.join(shown(k) for k in unknown[:5])}",
            fix=f"use only {', '.join(_KNOWN[:3])}.",
        )
    if "backend" in entry:
        raw, where = entry["backend"], f"additional_config['{KEY}']['backend']"
    else:
        raw, where = _backend_from_env(env), ENV_BACKEND
        if raw is None:
            raw, where = "auto", f"additional_config['{KEY}']['backend']"
    flags = {}
    for name in ("allow_lossy_conversion", "convert"):
        value = entry.get(name)
        if value is not None and not isinstance(value, bool):
            raise BadInputError(
                f"additional_config['{KEY}']['{name}'] = {shown(value)} must be true or false", fix=_FIX
            )
        flags[name] = value
    groups = None
    if isinstance(raw, Mapping):
        groups, emulate = _group_pins(raw, where)
        text = "pinned"
    else:
        text, emulate = _backend_value(raw, where)
    plan = entry.get("plan")
    if plan is not None:
        check_plan(plan)
    return Request(
        backend=text,
        emulate=emulate,
        allow_lossy=bool(flags["allow_lossy_conversion"]),
        convert=flags["convert"] is not False,
        groups=groups,
        source=where,
        plan=plan,
    )


_PLAN = f"additional_config['{KEY}']['plan']"
_PLAN_FIX = "drop the plan key: the plug-in's config hook writes it."


def check_plan(plan: Any) -> list[tuple[dict[str, Any], LayerPlan | None]]:
    """Every group of a shipped plan with its parsed :class:`LayerPlan`; BadInputError (one line) for a plan
    of another shape (what a worker would otherwise fail on much later)."""
    from pydantic import ValidationError

    if not isinstance(plan, Mapping) or plan.get("version") != 1 or not isinstance(plan.get("groups"), list):
        raise BadInputError(
            f"{_PLAN} = {shown(plan)} is not a plan the plug-in wrote (version 1, groups)", fix=_PLAN_FIX
        )
    out: list[tuple[dict[str, Any], LayerPlan | None]] = []
    for i, group in enumerate(plan["groups"]):
        where = f"{_PLAN}['groups'][{i}]"
        layers = group.get("layers") if isinstance(group, Mapping) else None
        if not isinstance(layers, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in layers):
            raise BadInputError(f"{where} = {shown(group)} has no list of layer indices", fix=_PLAN_FIX)
        raw = group.get("layer_plan")
        if raw is None:
            out.append((dict(group), None))
            continue
        try:
            if not isinstance(raw, Mapping):
                raise TypeError("not an object")
            layer_plan = LayerPlan.from_json(raw)
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else type(exc).__name__
            raise BadInputError(
                f"{where}['layer_plan'] = {shown(raw)} cannot be read ({what})", fix=_PLAN_FIX
            ) from None
        out.append((dict(group), layer_plan))
    return out


#: the kernel libraries of the ``all`` profile; an ``emulation:`` request builds the variant's numerics twin
#: (torch code), which needs none of them
KERNEL_LIBRARIES = ("deep_gemm", "aiter", "mori", "flydsl")


def emulation_software(software: Any) -> Any:
    """The profile an ``emulation:<variant>`` request is judged with: ``software`` (the probed one) with
    the kernel libraries of the ``all`` profile, so a machine without the kernel library (a CPU dry check)
    is not refused for it; every other library and every other rule stays as probed."""
    from moe_oracle.releases.profiles import named_profile

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
    """The :class:`LayerPlan` of the group that holds decoder layer ``layer_index``, or None (vLLM's own MoE).

    A plan of another shape raises :class:`BadInputError` (one line), never a ``KeyError`` in a worker.
    """
    entry = additional_config.get(KEY) if isinstance(additional_config, Mapping) else None
    plan = entry.get("plan") if isinstance(entry, Mapping) else None
    if plan is None:
        return None
    for group, layer_plan in check_plan(plan):
        if layer_index in group["layers"]:
            return layer_plan
    return None
