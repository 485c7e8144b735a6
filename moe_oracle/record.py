"""Decision records: the JSON a decision prints, its fingerprint, and replay.

A record carries its own inputs (the parsed model description, the deployment, the software
profile with library versions, engine, override, advisories, workload) and a fingerprint over
them and the oracle version, so ``--replay FILE`` can rebuild the same inputs, decide again and
say whether the decision is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moe_oracle import __version__
from moe_oracle.advisories import Advisory
from moe_oracle.cost.model import Workload
from moe_oracle.errors import BadInputError
from moe_oracle.model.types import ModelDescription
from moe_oracle.question import ConversionOptions
from moe_oracle.rules import Engine
from moe_oracle.selection import Decision, Override
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment

RECORD_SCHEMA = 1
MAX_RECORD_BYTES = 16 << 20


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
        "conversion": {"enabled": decision.conversion.enabled, "allow_lossy": decision.conversion.allow_lossy},
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


def load_record(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        if p.stat().st_size > MAX_RECORD_BYTES:
            raise BadInputError(f"decision record {p} is larger than {MAX_RECORD_BYTES >> 20} MiB")
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(
            f"cannot read decision record {p}: {exc}", fix="pass a file written by select --json"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict):
        raise BadInputError(
            f"{p} is not a decision record (no 'inputs' object)", fix="pass a file written by select --json"
        )
    return data


def replay_inputs(record: dict[str, Any]) -> dict[str, Any]:
    """Typed inputs rebuilt from a record, as keyword arguments for :func:`selection.decide`."""
    raw = record["inputs"]
    try:
        workload = raw.get("workload") or {}
        return {
            "model": ModelDescription.model_validate(raw["model"]),
            "deployment": Deployment.model_validate(raw["deployment"]),
            "software": SoftwareProfile.model_validate(raw["software"]),
            "engine": Engine(raw["engine"]),
            "override": Override.parse(raw["override"]) if raw.get("override") else None,
            "allow_fallback": bool(raw.get("allow_fallback", False)),
            "advisories": tuple(Advisory.model_validate(a) for a in raw.get("advisories", [])),
            "workload": Workload(
                tuple((int(t), float(w)) for t, w in workload["points"]), workload.get("label", "custom")
            )
            if workload
            else None,
            "conversion": ConversionOptions(**raw.get("conversion", {})),
        }
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInputError(f"decision record inputs are invalid: {first}") from None
