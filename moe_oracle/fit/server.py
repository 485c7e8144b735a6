"""One planned server as an engine writes it: its layout, its commands, and what its plan module is handed.

The engine plan modules (``moe_oracle.engines.<engine>.plan``) build :class:`EngineParts` (commands, derived sizes,
notes) from a :class:`PlanContext`; the memory fit (:mod:`moe_oracle.fit.settle`) asks them for the symmetric
buffers of each candidate of engine settings, and the launch plan (:mod:`moe_oracle.launch`) for the commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moe_oracle.decide.memory_share import EngineMemorySettings
from moe_oracle.decide.selection import Decision
from moe_oracle.fit.derived import Derived, Shape
from moe_oracle.model.types import ModelDescription
from moe_oracle.shell import shell_assign, shell_quote
from moe_oracle.spec.deployment import Deployment


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
class PlanContext:
    """What an engine needs to write its commands for one server (one replica)."""

    model_arg: str
    description: ModelDescription
    decision: Decision
    deployment: Deployment
    replicas: int
    backend: str | None
    variant: str | None
    user_env: dict[str, str]
    #: The engine flags the memory fit settled on (given, or chosen because the defaults do not fit).
    memory: EngineMemorySettings = field(default_factory=EngineMemorySettings)

    @property
    def memory_fraction(self) -> float | None:
        """The memory share to pass on the engine's command line (None: the engine picks its own)."""
        return self.memory.fraction


@dataclass
class EngineParts:
    commands: list[Command]
    derived: list[Derived]
    notes: list[str]
    placeholders: dict[str, str]
    version: str


def distinct_shapes(decision: Decision) -> list[Shape]:
    """One entry per distinct MoE shape among the layer groups (equal shapes share one buffer)."""
    found: dict[tuple[int, int, int, int, int], list[str]] = {}
    for g in decision.groups:
        grp = g.group
        key = (grp.num_experts, grp.top_k, grp.hidden_size, grp.moe_intermediate_size, grp.num_shared_experts)
        found.setdefault(key, []).append(grp.name)
    return [Shape(e, k, h, i, s, tuple(names)) for (e, k, h, i, s), names in found.items()]


def per_rank_total(derived: list[Derived], hbm_gib: float) -> Derived | None:
    """Sum of the symmetric buffers one rank allocates, against its HBM."""
    parts = [d for d in derived if d.key in ("deepgemm_symm_buffer_bytes", "mori_shmem_heap_bytes")]
    if not parts:
        return None
    total = sum(d.value for d in parts)
    return Derived(
        key="symm_buffer_total_bytes",
        label="Symmetric memory per rank (all buffers / heaps above)",
        value=total,
        unit="bytes",
        formula=" + ".join(str(d.value) for d in parts) + f" = {total} ({total / (hbm_gib * (1 << 30)):.1%} of HBM)",
        inputs={"buffers": len(parts), "hbm_gib": hbm_gib},
        source="one buffer per distinct (E, top-k, H, I) shape: the engines cache buffers by shape; the HBM "
        "share is what the KV cache and weights no longer get",
    )
