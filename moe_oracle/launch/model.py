"""The engine-neutral launch plan: what to run, where, with which environment, and why.

A :class:`LaunchPlan` is built by :func:`moe_oracle.launch.build.build_plan` from one oracle
decision (or two, when the requested expert-parallel group crosses an NVLink/XGMI domain and
replicas are proposed). Engines fill in the commands (``moe_oracle.engines.<engine>.plan``);
everything else (layouts, derived quantities, reasons) is shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moe_oracle.errors import ExitCode, OracleError
from moe_oracle.launch.derived import Derived
from moe_oracle.shell import shell_assign, shell_quote
from moe_oracle.spec.deployment import Deployment

PLAN_SCHEMA = 1


class EngineLaunchError(OracleError):
    """The engine binary a plan names cannot be started."""

    exit_code = ExitCode.ENGINE_FAILED


@dataclass(frozen=True)
class Layout:
    """One server's (or the requested) parallel layout, in the oracle's terms."""

    tp: int
    dp: int
    ep: int
    pp: int
    nodes: int
    gpus_per_node: int
    domain_size: int
    max_num_batched_tokens: int
    all2all_backend: str | None
    eplb: bool

    @classmethod
    def of(cls, dep: Deployment) -> Layout:
        par, topo = dep.parallel, dep.topology
        return cls(
            tp=par.tp,
            dp=par.dp,
            ep=par.ep,
            pp=par.pp,
            nodes=topo.nodes,
            gpus_per_node=topo.gpus_per_node,
            domain_size=topo.domain_size,
            max_num_batched_tokens=par.max_num_batched_tokens,
            all2all_backend=par.all2all_backend,
            eplb=par.eplb,
        )

    @property
    def ranks(self) -> int:
        return self.tp * self.dp * self.pp

    def label(self) -> str:
        parts = []
        if self.tp > 1:
            parts.append(f"TP{self.tp}")
        parts.append(f"DP{self.dp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        return "+".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "tp": self.tp,
            "dp": self.dp,
            "ep": self.ep,
            "pp": self.pp,
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "domain_size": self.domain_size,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "all2all_backend": self.all2all_backend,
            "eplb": self.eplb,
            "label": self.label(),
        }


@dataclass(frozen=True)
class Command:
    """One process to start: on which replica and node, with which argv and environment.

    ``placeholder_words`` are the argv indexes holding a placeholder moe-oracle emitted (``${HEAD_NODE_IP}``,
    listed in the plan's ``placeholders``): the only words whose ``${NAME}`` the printed command leaves
    expandable and ``serve`` fills from the environment. Every other word is printed shell-quoted as is.
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    replica: int = 0
    node_rank: int = 0
    where: str = "node 0"
    placeholder_words: tuple[int, ...] = ()

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    def _word(self, index: int) -> str:
        return shell_quote(self.argv[index], placeholders=index in self.placeholder_words)

    def shell(self, *, width: int = 100) -> str:
        """A copy-pasteable shell command: ``KEY=VALUE ... argv`` with one flag per line, every word
        shell-quoted (see :mod:`moe_oracle.shell`)."""
        lines: list[str] = []
        prefix = " ".join(shell_assign(k, v) for k, v in self.env)
        index = 0
        # keep "python3 -m sglang.launch_server" / "vllm serve MODEL" together on the first line
        while index < len(self.argv) and not self.argv[index].startswith("--"):
            index += 1
        first = " ".join(self._word(i) for i in range(index))
        if prefix:
            first = f"{prefix} \\\n  {first}" if len(prefix) + len(first) > width else f"{prefix} {first}"
        lines.append(first)
        while index < len(self.argv):
            start = index
            index += 1
            while index < len(self.argv) and not self.argv[index].startswith("--"):
                index += 1
            lines.append("    " + " ".join(self._word(i) for i in range(start, index)))
        return " \\\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "replica": self.replica,
            "node_rank": self.node_rank,
            "where": self.where,
            "argv": list(self.argv),
            "env": dict(self.env),
            "shell": self.shell(),
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
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
            "fit": None if self.fit is None else self.fit.to_json(),
            "layout_chosen": self.layout_why,
            "settings_chosen": self.settings_why,
            "decision": self.decision,
        }
