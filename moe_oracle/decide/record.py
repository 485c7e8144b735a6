"""Decision records: the JSON a decision prints, its fingerprint, and replay.

A record carries its own inputs (the parsed model description, the deployment, the software
profile with library versions, engine, override, advisories, workload) and a fingerprint over
them and the oracle version, so ``--replay FILE`` can rebuild the same inputs, decide again and
say whether the decision is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moe_oracle.cost.model import Workload
from moe_oracle.decide.advisories import MAX_ADVISORIES, Advisory, AdvisorySet, bundled_advisories
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.decide.selection import Decision, Override
from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.inputs import check_workload_points
from moe_oracle.jsonfile import read_json_object
from moe_oracle.model.adapters._view import json_type, show
from moe_oracle.model.types import ModelDescription
from moe_oracle.rules import Engine
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment
from moe_oracle.spec.device import DEVICES, DeviceSpec
from moe_oracle.validation import one_line
from moe_oracle.version import __version__

RECORD_SCHEMA = 1
_CONVERSION_KEYS = frozenset(f.name for f in fields(ConversionOptions))


def _inputs(decision: Decision) -> dict[str, Any]:
    """The inputs a record carries and its fingerprint covers: every one from the decision's own question (the
    advisories too: the set the decision was made under, so no caller can fingerprint another set)."""
    return {
        "model": decision.model.model_dump(mode="json"),
        # speculative recorded only when on, so records written before the flag existed keep their fingerprint
        "deployment": decision.deployment.model_dump(
            mode="json", exclude=set() if decision.deployment.speculative == "mtp" else {"speculative"}
        ),
        "software": decision.software.model_dump(mode="json"),
        "engine": decision.engine.value,
        "override": None if decision.override is None else str(decision.override),
        "allow_fallback": decision.allow_fallback,
        "advisories": [a.model_dump(mode="json") for a in decision.question.advisories],
        "workload": {
            "label": decision.workload.label,
            "points": [list(p) for p in decision.workload.points],
            # only when given: records (and their fingerprints) of balanced routing are unchanged
            **({"skew": decision.workload.skew} if decision.workload.skew else {}),
        },
        "conversion": {
            "enabled": decision.conversion.enabled,
            "allow_lossy": decision.conversion.allow_lossy,
            # recorded only when given, so records written before the flag existed keep their fingerprint
            **(
                {"allow_low_precision_activations": True} if decision.conversion.allow_low_precision_activations else {}
            ),
        },
    }


def canonical(obj: object) -> str:
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


def decision_fingerprint(decision: Decision) -> str:
    """The fingerprint of ``decision``'s record (:func:`decision_to_json`), without building the record: the one
    definition every front end (CLI, :mod:`moe_oracle.api`, both engine plug-ins) shows."""
    return fingerprint(_inputs(decision))


def decision_to_json(decision: Decision, *, software_origin: str = "") -> dict[str, Any]:
    """The ``select --json`` document (see docs/cli.md for the contract). A decision made without some bundled
    advisory (a replayed older record, or an API caller that dropped them) carries ``bundled_advisories_missing``."""
    inputs = _inputs(decision)
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
        "advisory_notes": list(decision.advisory_notes()),
        "fingerprint": fingerprint(inputs),
        "inputs": inputs,
        **_missing(decision),
    }


def _missing(decision: Decision) -> dict[str, Any]:
    missing = decision.question.missing_bundled
    return {"bundled_advisories_missing": list(missing)} if missing else {}


_FIX_RECORD = "pass a file written by select --json [--brief] (or plan --json)"


#: The JSON types of the fields a reader of a record sees (``None`` allowed where the decision may have none).
_VISIBLE_TYPES: dict[str, tuple[type, ...]] = {
    "schema": (int,),
    "oracle_version": (str,),
    "model": (str,),
    "device": (str,),
    "engine": (str,),
    "override": (str, type(None)),
    "chosen": (dict, type(None)),
    "accuracy_class": (str, type(None)),
    "fallback": (dict, str, type(None)),
    "candidates": (list,),
    "layer_groups": (list,),
    "software": (dict,),
    "workload": (dict, type(None)),
    "warnings": (list,),
    "fingerprint": (str,),
}
_TYPE_NAMES = {int: "integer", str: "string", dict: "object", list: "array", type(None): "null"}


def _expected(types: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES[t] for t in types)


def _check_visible(data: dict[str, Any]) -> None:
    """Refuse (exit 2) a record whose top-level fields have the wrong JSON type; the values are checked
    against the replay in :func:`compare_replay`."""
    for key, types in _VISIBLE_TYPES.items():
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], types)):
            raise BadInputError(
                f"decision record {key} = {show(data[key])} is invalid: a JSON {json_type(data[key])}, "
                f"expected {_expected(types)}",
                fix=f"{_FIX_RECORD}, unedited",
            )
    if data.get("schema", RECORD_SCHEMA) != RECORD_SCHEMA:
        raise BadInputError(
            f"decision record schema {data['schema']} is not {RECORD_SCHEMA}, the schema this moe-oracle reads",
            fix=f"replay it with the moe-oracle that wrote it (oracle_version {show(data.get('oracle_version'))})",
        )
    for index, group in enumerate(data.get("layer_groups", [])):
        if not isinstance(group, dict):
            raise BadInputError(
                f"decision record layer_groups[{index}] = {show(group)} is invalid: a JSON {json_type(group)}, "
                "expected an object",
                fix=f"{_FIX_RECORD}, unedited",
            )
    software = data.get("software", {})
    for key, types in (("profile", (str,)), ("origin", (str,)), ("libraries", (dict,))):
        if key in software and not isinstance(software[key], types):
            raise BadInputError(
                f"decision record software.{key} = {show(software[key])} is invalid: a JSON "
                f"{json_type(software[key])}, expected {_expected(types)}",
                fix=f"{_FIX_RECORD}, unedited",
            )


#: The fields a brief record keeps (``select --json --brief``): what was asked (``inputs``, with which
#: ``--replay`` decides again), what was decided per layer group, the fit's verdict and the fingerprint.
BRIEF_FIELDS = (
    "schema",
    "oracle_version",
    "model",
    "device",
    "engine",
    "override",
    "chosen",
    "accuracy_class",
    "fallback",
    "software",
    "workload",
    "warnings",
    "fingerprint",
    "inputs",
)


def brief_record(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (a ``select --json`` record) cut to a few KB for a bug report: its inputs and fingerprint (so
    ``select --replay`` and ``plan --replay`` take it as they take the full record), each layer group's name,
    layers and choice, and the fit's verdict; the candidates and their reasons are left out (the replay prints
    them again)."""
    out = {key: doc[key] for key in BRIEF_FIELDS if key in doc}
    out["layer_groups"] = [
        {key: g[key] for key in ("name", "layers", "chosen") if key in g}
        for g in doc.get("layer_groups", [])
        if isinstance(g, dict)
    ]
    fit = doc.get("fit")
    if isinstance(fit, dict):
        out["fit"] = {key: fit[key] for key in ("verdict", "needed_bytes", "kv_cache_bytes") if key in fit}
    out["brief"] = True
    return out


def load_record(path: str | Path) -> dict[str, Any]:
    """A decision record read through the hardened reader (:mod:`moe_oracle.jsonfile`), its top-level fields
    of the documented types."""
    data = read_json_object(path, what="decision record", fix=_FIX_RECORD)
    if "inputs" not in data and isinstance(data.get("decision"), dict) and "launch" not in data:
        data = data["decision"]  # a plan --json document: its decision is the record
    if not isinstance(data.get("inputs"), dict):
        raise BadInputError(f"{excerpt(str(path))} is not a decision record (no 'inputs' object)", fix=_FIX_RECORD)
    _check_visible(data)
    return data


def record_origin(record: dict[str, Any]) -> str:
    """How the recorded software profile was chosen (``software.origin``), ``""`` when absent."""
    origin = record.get("software", {}).get("origin", "")
    return origin if isinstance(origin, str) else ""


def device_note(device: DeviceSpec) -> str | None:
    """Refuse (exit 2) a recorded device that carries a catalogue name with other properties; a note for a
    device that is not in the catalogue, or for one an earlier catalogue described (:func:`catalogue_device`)."""
    return catalogue_device(device)[1]


def catalogue_device(device: DeviceSpec) -> tuple[DeviceSpec, str | None]:
    """The device a replay decides on, and the note it prints: a custom device (not in the catalogue) as
    recorded; a catalogue device as today's catalogue has it, with a note when the record carries an earlier
    catalogue's figures (``memory_gib`` 141.0 for h200 before the driver's totals: the record is old, not
    edited). Any other difference from the catalogue is refused (exit 2): the record claims a catalogue name with
    properties the catalogue never had."""
    from moe_oracle.spec.device_memory import EARLIER_MEMORY_GIB

    known = DEVICES.get(device.name)
    if known is None:
        return device, (
            f"device {device.name!r} is a custom device, not in the catalogue: arch {device.arch.value}, "
            f"{device.memory_gib:g} GiB, as recorded"
        )
    differ = {
        name: f"{name} {_fact(getattr(device, name))} (the catalogue's: {_fact(getattr(known, name))})"
        for name in _DEVICE_FACTS
        # a fact the record does not state (written before the catalogue had it) is not a contradiction
        if getattr(device, name) is not None and getattr(device, name) != getattr(known, name)
    }
    if not differ:
        return device, None
    if set(differ) == {"memory_gib"} and device.memory_gib in EARLIER_MEMORY_GIB.get(device.name, ()):
        return known, (
            f"the record was written with an earlier device catalogue: {device.name} memory_gib "
            f"{device.memory_gib:g} (today's catalogue: {known.memory_gib:g} GiB, the total the driver reports); "
            "decided again with today's figure"
        )
    raise BadInputError(
        f"decision record inputs.deployment.device {device.name!r} is not the catalogue's {device.name}: "
        + "; ".join(differ.values()),
        fix=f"{_FIX_RECORD}, unedited (a device that is not the catalogue's needs a name of its own)",
    )


def _fact(value: object) -> str:
    return str(getattr(value, "value", value))


#: The device properties a decision reads; the topology defaults (GPUs per node, domain) may differ.
_DEVICE_FACTS = ("arch", "memory_gib", "sm_count", "hbm_tb_s", "fp8_tflops")


def covers(recorded: object, now: object) -> bool:
    """Whether every value ``recorded`` shows is what the replay shows (keys only the replay has are
    additions of a newer format and are not differences)."""
    if isinstance(recorded, dict):
        return isinstance(now, dict) and all(k in now and covers(v, now[k]) for k, v in recorded.items())
    if isinstance(recorded, list):
        return isinstance(now, list) and len(recorded) == len(now) and all(map(covers, recorded, now))
    return type(recorded) is type(now) and recorded == now


def first_difference(recorded: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place (``candidates[0].eligible``) where ``now`` does not show what ``recorded`` shows, with
    both values there; ``None`` when :func:`covers` holds."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key, value in recorded.items():
            if key not in now:
                return (f"{path}.{key}".lstrip("."), value, "(absent)")
            found = first_difference(value, now[key], f"{path}.{key}")
            if found:
                return (found[0].lstrip("."), found[1], found[2])
        return None
    if isinstance(recorded, list) and isinstance(now, list) and len(recorded) == len(now):
        for index, (a, b) in enumerate(zip(recorded, now, strict=True)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if covers(recorded, now) else (path, recorded, now)


@dataclass
class ReplayVerdict:
    """A replay compared with its record: ``identical`` (exit 0) or not (exit 5), and why, line by line."""

    identical: bool
    edited: bool  #: the record's fingerprint does not match its own inputs
    format_changed: bool  #: same decision, but the replay's fingerprint differs (fields added since)
    fields: list[str]  #: visible top-level fields whose recorded value the replay does not show


def compare_replay(record: dict[str, Any], doc: dict[str, Any]) -> ReplayVerdict:
    """Check every field a reader of ``record`` sees against ``doc``, the decision its inputs give now.

    The record's fingerprint must match its own inputs (else it was edited after it was written); each
    visible field (``chosen``, ``device``, ``candidates``, ``layer_groups``, ...) must show what the replay
    shows. A replay whose fingerprint differs only because the record format gained fields is identical,
    with ``format_changed`` set.
    """
    version = record.get("oracle_version")
    edited = not isinstance(version, str) or fingerprint(record["inputs"], version) != record.get("fingerprint")
    skip = {"fingerprint", "inputs", "oracle_version"}
    fields = [key for key in doc if key not in skip and key in record and not covers(record[key], doc[key])]
    identical = not edited and not fields
    return ReplayVerdict(identical, edited, identical and doc["fingerprint"] != record.get("fingerprint"), fields)


def _invalid(key: str, value: object, expected: str) -> BadInputError:
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
    skew = raw.get("skew", 0.0)
    if isinstance(skew, bool) or not isinstance(skew, (int, float)) or not 0.0 <= skew <= 4.0:
        raise _invalid("workload.skew", skew, "expected a number in 0..4 (like --workload ...@skew=S)")
    try:
        return Workload(check_workload_points(points, deployment.parallel.tokens_per_rank), label, float(skew))
    except ValueError as exc:
        raise _invalid("workload.points", points, str(exc)) from None


def replay_inputs(record: dict[str, Any], notes: list[str] | None = None) -> dict[str, Any]:
    """Typed inputs rebuilt from a record, as keyword arguments for :func:`selection.decide`.

    Every field is validated like the command-line value it stands for: a wrong type, an unknown
    engine, a malformed override or a workload point ``--workload`` would refuse is one line
    (exit 2), never a traceback or a decision on nonsense. Then, in this order, the deployment against
    today's catalogue (:func:`catalogue_device`: a record of an earlier catalogue is re-decided, its note
    appended to ``notes``) and the rules the CLI applies to the same flags (:func:`_cli_rules`): the field
    checks come first, so a record of an earlier catalogue still meets the rule its broken field breaks.
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
    if len(advisories) > MAX_ADVISORIES + len(bundled_advisories()):
        raise _invalid(
            "advisories",
            f"{len(advisories)} entries",
            f"at most the bundled advisories and {MAX_ADVISORIES} of a site file (like --advisories)",
        )
    conversion = raw.get("conversion", {})
    if not isinstance(conversion, dict) or set(conversion) - _CONVERSION_KEYS:
        raise _invalid("conversion", conversion, "expected an object with " + ", ".join(sorted(_CONVERSION_KEYS)))
    inputs = {
        "model": _validated("model", ModelDescription, raw.get("model")),
        "software": _validated("software", SoftwareProfile, raw.get("software")),
        "engine": Engine(engine),
        "override": Override.parse(override) if override else None,
        "allow_fallback": _flag(raw, "allow_fallback"),
        "advisories": AdvisorySet(_validated(f"advisories[{i}]", Advisory, a) for i, a in enumerate(advisories)),
        "workload": _workload(raw.get("workload"), deployment),
        "conversion": ConversionOptions(
            **{k: _flag(conversion, k, f"conversion.{k}") for k in sorted(_CONVERSION_KEYS) if k in conversion}
        ),
    }
    device, note = catalogue_device(deployment.device)
    if note is not None and notes is not None:
        notes.append(note)
    deployment = deployment.model_copy(update={"device": device})
    _cli_rules(inputs["model"], deployment, inputs["engine"], custom=device.name not in DEVICES)
    return {"deployment": deployment, **inputs}


def _cli_rules(model: ModelDescription, deployment: Deployment, engine: Engine, *, custom: bool) -> None:
    """The rules ``select`` applies to the flags a record's deployment stands for (exit 2, the CLI's line with
    the record's field named): the domain no larger than the device's real one (a catalogue device's),
    ``MORI_SHMEM_HEAP_SIZE`` a size one GPU holds, EP no larger than the routed experts, an all2all backend
    the engine takes."""
    from moe_oracle.decide.asked import check_ep_experts
    from moe_oracle.decide.engine_flags import check_all2all
    from moe_oracle.inputs import check_domain_size, check_heap_size

    checks = [
        (
            "topology.domain_size",
            lambda: None if custom else check_domain_size(deployment.topology.domain_size, deployment.device),
        ),
        ("env", lambda: check_heap_size(deployment.env, deployment.device)),
        ("parallel.ep", lambda: check_ep_experts(model, deployment)),
        ("parallel.all2all_backend", lambda: check_all2all(engine, deployment.parallel.all2all_backend)),
    ]
    for where, check in checks:
        try:
            check()
        except BadInputError as exc:
            raise BadInputError(
                f"decision record inputs.deployment.{where}: {exc.message}",
                fix=f"{exc.fix or 'correct it'} (the record stands for those flags: decide anew with them corrected)",
            ) from None
