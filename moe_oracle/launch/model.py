"""The engine-neutral launch plan: what to run, where, with which environment, and why.

(:class:`~moe_oracle.fit.server.Layout` and :class:`~moe_oracle.fit.server.Command`, one server's layout and
process, live with the fit, which sizes a server without a launch plan; they are imported here for the plan.)

A :class:`LaunchPlan` is built by :func:`moe_oracle.launch.build.build_plan` from one oracle
decision (or two, when the requested expert-parallel group crosses an NVLink/XGMI domain and
replicas are proposed). Engines fill in the commands (``moe_oracle.engines.<engine>.plan``);
everything else (layouts, derived quantities, reasons) is shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moe_oracle.errors import ExitCode, OracleError
from moe_oracle.fit.derived import Derived
from moe_oracle.fit.server import Command, Layout

PLAN_SCHEMA = 1


class EngineLaunchError(OracleError):
    """The engine binary a plan names cannot be started."""

    exit_code = ExitCode.ENGINE_FAILED


@dataclass
class ReplicaPlan:
    """Replicas that each keep expert parallelism inside one NVLink/XGMI domain."""

    count: int
    layout: Layout
    requested: Layout
    router_hint: str
    refused_reasons: list[str]
    refused_fingerprint: str
    adopted: bool
    why_not: list[str] = field(default_factory=list)
    #: Why the requested layout is split (it crosses the domain, or its EP exceeds or does not divide the experts).
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "why": self.why,
            "count": self.count,
            "adopted": self.adopted,
            "layout": self.layout.to_json(),
            "requested_layout": self.requested.to_json(),
            "router_hint": self.router_hint,
            "refused_reasons": list(self.refused_reasons),
            "refused_fingerprint": self.refused_fingerprint,
            "why_not": list(self.why_not),
        }


@dataclass
class LaunchPlan:
    engine: str
    engine_version: str
    model: str
    architecture: str
    device: str
    arch: str
    software: str
    software_origin: str
    requested: Layout
    layout: Layout
    backend: str | None
    variant: str | None
    groups: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    commands: list[Command]
    derived: list[Derived]
    replicas: ReplicaPlan | None
    notes: list[str]
    warnings: list[str]
    placeholders: dict[str, str]
    fingerprint: str
    override: str | None
    decision: dict[str, Any]
    default_command_reason: str | None = None
    fit: Any = None  # moe_oracle.decide.fit.Fit (the memory verdict per rank)
    layout_why: str | None = None  # set when the oracle chose the layout (no layout flag given)
    settings_why: str | None = None  # set when the oracle chose engine memory settings (the defaults do not fit)
    decision_obj: Any = None  # the Decision behind ``decision`` (not serialized)
    #: What to install beyond the engine release, how the path was validated, the stock alternative
    #: (:mod:`moe_oracle.launch.prerequisites`; printed first).
    prerequisites: list[str] = field(default_factory=list)

    @property
    def fused(self) -> bool:
        return self.backend is not None

    @property
    def argv(self) -> list[str]:
        return list(self.commands[0].argv)

    @property
    def env(self) -> dict[str, str]:
        return self.commands[0].env_dict

    def command_for(self, replica: int = 0, node_rank: int = 0) -> Command:
        for cmd in self.commands:
            if cmd.replica == replica and cmd.node_rank == node_rank:
                return cmd
        have = ", ".join(f"--replica {c.replica} --node-rank {c.node_rank}" for c in self.commands)
        from moe_oracle.errors import BadInputError

        raise BadInputError(
            f"the plan has no process for replica {replica}, node rank {node_rank}", fix=f"use one of: {have}."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": PLAN_SCHEMA,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "model": self.model,
            "architecture": self.architecture,
            "device": self.device,
            "arch": self.arch,
            "software": {"profile": self.software, "origin": self.software_origin},
            "override": self.override,
            "fused": self.fused,
            "backend": self.backend,
            "variant": self.variant,
            "requested_layout": self.requested.to_json(),
            "layout": self.layout.to_json(),
            "layer_groups": self.groups,
            "rejected": self.rejected,
            "argv": self.argv,
            "env": self.env,
            "commands": [c.to_json() for c in self.commands],
            "placeholders": dict(self.placeholders),
            "derived": [d.to_json() for d in self.derived],
            "replicas": None if self.replicas is None else self.replicas.to_json(),
            "default_command_reason": self.default_command_reason,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "fingerprint": self.fingerprint,
            "prerequisites": list(self.prerequisites),
            "fit": None if self.fit is None else self.fit.to_json(),
            "layout_chosen": self.layout_why,
            "settings_chosen": self.settings_why,
            "decision": self.decision,
        }
