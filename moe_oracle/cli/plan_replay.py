"""``plan --replay FILE``: plan again from a saved decision record (``select --json [--brief]``, or a
``plan --json`` document, whose ``decision`` is that record), and say whether the decision is the recorded one.

The record's inputs become the plan's question: the model as described, the deployment's flags, the software
profile by name, the engine, the override, the workload and the conversion options. The record must name an
engine a plan launches (vLLM or SGLang); its fingerprint is compared with the plan's (exit 5 when they differ).
"""

from __future__ import annotations

from typing import Any

from moe_oracle.errors import BadInputError

_WORKLOAD_WORDS = ("mixed", "decode", "prefill")


def _workload_spec(raw: Any) -> str:
    """The ``--workload`` spelling of a record's workload (the keyword its label starts with, else T:w,...)."""
    if not isinstance(raw, dict):
        return "mixed"
    label = str(raw.get("label", ""))
    for word in _WORKLOAD_WORDS:
        if label.startswith(word):
            return word
    points = raw.get("points") or []
    return ",".join(f"{int(t)}:{w:g}" for t, w in points)


def request_from_record(record: dict[str, Any]) -> Any:
    """The :class:`~moe_oracle.launch.build.PlanRequest` of a record's inputs (exit 2 when it cannot be planned)."""
    from moe_oracle.decide.question import ConversionOptions
    from moe_oracle.decide.record import replay_inputs
    from moe_oracle.inputs import DeploymentFlags
    from moe_oracle.launch.build import PlanRequest
    from moe_oracle.rules import Engine

    if not isinstance(record.get("inputs"), dict):
        raise BadInputError(
            "the file is not a decision record (no inputs)", fix="pass select --json [--brief] or plan --json output"
        )
    inputs = replay_inputs(record)
    engine: Engine = inputs["engine"]
    if engine not in (Engine.VLLM, Engine.SGLANG):
        raise BadInputError(
            f"the record decided for engine {engine.value}; a plan launches vLLM or SGLang",
            fix="record the decision with --engine vllm or --engine sglang (select ... --engine vllm --json --brief)",
        )
    dep = inputs["deployment"]
    par, topo = dep.parallel, dep.topology
    flags = DeploymentFlags(
        device=dep.device.name,
        gpus_per_node=topo.gpus_per_node,
        nodes=topo.nodes,
        domain_size=topo.domain_size,
        tp=par.tp,
        dp=par.dp,
        ep=par.ep,
        pp=par.pp,
        max_num_batched_tokens=par.max_num_batched_tokens,
        all2all_backend=par.all2all_backend,
        eplb=par.eplb,
        speculative=getattr(dep, "speculative", "none") or "none",
    )
    conv = record["inputs"].get("conversion") or {}
    description = inputs["model"]
    return PlanRequest(
        model=description.model,
        flags=flags,
        engine=engine,
        software=inputs["software"].name,
        override=record["inputs"].get("override"),
        allow_fallback=bool(record["inputs"].get("allow_fallback", False)),
        env=dict(dep.env),
        conversion=ConversionOptions(
            enabled=bool(conv.get("enabled", True)),
            allow_lossy=bool(conv.get("allow_lossy", False)),
            allow_low_precision_activations=bool(conv.get("allow_low_precision_activations", False)),
        ),
        workload=_workload_spec(record["inputs"].get("workload")),
        description=description,
    )
