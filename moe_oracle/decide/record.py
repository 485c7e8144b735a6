"""Decision records: the JSON a decision prints, its fingerprint, and replay.

A record carries its own inputs (the parsed model description, the deployment, the software
profile with library versions, engine, override, advisories, workload) and a fingerprint over
them and the oracle version, so ``--replay FILE`` can rebuild the same inputs, decide again and
say whether the decision is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moe_oracle import __version__
from moe_oracle.cost.model import Workload
from moe_oracle.decide.advisories import Advisory
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.decide.selection import Decision, Override
from moe_oracle.errors import BadInputError
from moe_oracle.inputs import check_workload_points
from moe_oracle.jsonfile import read_json_object
from moe_oracle.model.adapters._view import json_type, show
from moe_oracle.model.types import ModelDescription
from moe_oracle.rules import Engine
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment
from moe_oracle.validation import one_line

RECORD_SCHEMA = 1
_CONVERSION_KEYS = frozenset(f.name for f in fields(ConversionOptions))


def _inputs(decision: Decision, advisories: tuple[Advisory, ...]) -> dict[str, Any]:
    return {
        "model": decision.model.model_dump(mode="json"),
        "deployment": decision.deployment.model_dump(mode="json"),
        "software": decision.software.model_dump(mode="json"),
        "engine": decision.engine.value,
        "override": None if decision.override is None else str(decision.override),
        "allow_fallback": decision.allow_fallback,
        "advisories": [a.model_dump(mode="json") for a in advisories],
        "workload": {"label": decision.workload.label, "points": [list(p) for p in decision.workload.points]},
        "conversion": {
            "enabled": decision.conversion.enabled,
            "allow_lossy": decision.conversion.allow_lossy,
            # recorded only when given, so records written before the flag existed keep their fingerprint
            **(
                {"allow_low_precision_activations": True} if decision.conversion.allow_low_precision_activations else {}
            ),
        },
    }


def canonical(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces; sets as sorted lists)."""

    def norm(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [norm(v) for v in x]
        if isinstance(x, (set, frozenset)):
            return sorted(norm(v) for v in x)
        return x

    return json.dumps(norm(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def fingerprint(inputs: dict[str, Any], oracle_version: str = __version__) -> str:
    digest = hashlib.sha256(canonical({"oracle_version": oracle_version, "inputs": inputs}).encode()).hexdigest()
    return f"sha256:{digest[:32]}"


def decision_to_json(
    decision: Decision, advisories: tuple[Advisory, ...] = (), software_origin: str = ""
) -> dict[str, Any]:
    """The ``select --json`` document (see docs/cli.md for the contract)."""
    inputs = _inputs(decision, advisories)
    main = decision.main.to_json()
    return {
        "schema": RECORD_SCHEMA,
        "oracle_version": __version__,
        "model": decision.model.model,
        "device": decision.deployment.device.name,
        "engine": decision.engine.value,
        "override": inputs["override"],
        "chosen": main["chosen"],
        "accuracy_class": main["accuracy_class"],
        "fallback": main["fallback"],
        "candidates": main["candidates"],
        "layer_groups": [g.to_json() for g in decision.groups],
        "software": {
            "profile": decision.software.name,
            "origin": software_origin,
            "libraries": {
                name: {"present": lib.present, "dist": lib.dist, "version": lib.version, "error": lib.error}
                for name, lib in sorted(decision.software.libraries.items())
            },
        },
        "workload": inputs["workload"],
        "warnings": list(decision.warnings),
        "fingerprint": fingerprint(inputs),
        "inputs": inputs,
    }


_FIX_RECORD = "pass a file written by select --json"


def load_record(path: str | Path) -> dict[str, Any]:
    """A decision record read through the hardened reader (:mod:`moe_oracle.jsonfile`)."""
    data = read_json_object(path, what="decision record", fix=_FIX_RECORD)
    if not isinstance(data.get("inputs"), dict):
        raise BadInputError(f"{path} is not a decision record (no 'inputs' object)", fix=_FIX_RECORD)
    return data


def _invalid(key: str, value: Any, expected: str) -> BadInputError:
    return BadInputError(
        f"decision record inputs.{key} = {show(value)} is invalid: {expected}",
        fix=f"{_FIX_RECORD}, unedited",
    )


def _object(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    if not isinstance(value, dict):
        raise _invalid(key, value, f"a JSON {json_type(value)}, expected an object")
    return value


def _flag(raw: dict[str, Any], key: str, where: str | None = None) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise _invalid(where or key, value, f"a JSON {json_type(value)}, expected true or false")
    return value


def _validated(key: str, model: type[Any], value: Any) -> Any:
    if not isinstance(value, dict):
        raise _invalid(key, value, f"a JSON {json_type(value)}, expected an object")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise BadInputError(
            f"decision record inputs.{key} is invalid: {one_line(exc, key)}", fix=f"{_FIX_RECORD}, unedited"
        ) from None


def _workload(raw: Any, deployment: Deployment) -> Workload | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _invalid("workload", raw, f"a JSON {json_type(raw)}, expected an object with points")
    points = raw.get("points")
    label = raw.get("label", "custom")
    if not isinstance(label, str):
        raise _invalid("workload.label", label, f"a JSON {json_type(label)}, expected a string")
    if not isinstance(points, list) or not all(isinstance(p, list) and len(p) == 2 for p in points):
        raise _invalid("workload.points", points, "expected an array of [tokens, weight] pairs (like --workload)")
    try:
        return Workload(check_workload_points(points, deployment.parallel.tokens_per_rank), label)
    except ValueError as exc:
        raise _invalid("workload.points", points, str(exc)) from None


def replay_inputs(record: dict[str, Any]) -> dict[str, Any]:
    """Typed inputs rebuilt from a record, as keyword arguments for :func:`selection.decide`.

    Every field is validated like the command-line value it stands for: a wrong type, an unknown
    engine, a malformed override or a workload point ``--workload`` would refuse is one line
    (exit 2), never a traceback or a decision on nonsense.
    """
    raw = record["inputs"]
    deployment = _validated("deployment", Deployment, raw.get("deployment"))
    engine = raw.get("engine", Engine.NONE.value)
    if not isinstance(engine, str) or engine not in {e.value for e in Engine}:
        raise _invalid("engine", engine, "expected one of " + ", ".join(e.value for e in Engine) + " (like --engine)")
    override = raw.get("override")
    if override is not None and (not isinstance(override, str) or not override.strip()):
        raise _invalid("override", override, "expected null or a NAME[:VARIANT] string (like --moe-backend)")
    advisories = raw.get("advisories", [])
    if not isinstance(advisories, list):
        raise _invalid("advisories", advisories, f"a JSON {json_type(advisories)}, expected an array")
    conversion = raw.get("conversion", {})
    if not isinstance(conversion, dict) or set(conversion) - _CONVERSION_KEYS:
        raise _invalid("conversion", conversion, "expected an object with " + ", ".join(sorted(_CONVERSION_KEYS)))
    return {
        "model": _validated("model", ModelDescription, raw.get("model")),
        "deployment": deployment,
        "software": _validated("software", SoftwareProfile, raw.get("software")),
        "engine": Engine(engine),
        "override": Override.parse(override) if override else None,
        "allow_fallback": _flag(raw, "allow_fallback"),
        "advisories": tuple(_validated(f"advisories[{i}]", Advisory, a) for i, a in enumerate(advisories)),
        "workload": _workload(raw.get("workload"), deployment),
        "conversion": ConversionOptions(
            **{k: _flag(conversion, k, f"conversion.{k}") for k in sorted(_CONVERSION_KEYS) if k in conversion}
        ),
    }
