"""Where and how a model is served: device, topology, parallelism and environment.

Rank arithmetic follows vLLM's model: attention runs with ``tp`` x ``dp`` ranks per pipeline
stage; the MoE layers run over an expert-parallel group of ``ep`` ranks taken from those, and
each expert is sharded over the remaining ``moe_tp = tp * dp / ep`` ranks. ``ep == 1`` means
no expert parallelism.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from moe_oracle.errors import Fix, FixKind
from moe_oracle.spec.device import DeviceSpec

Count = Annotated[int, Field(gt=0, le=1 << 16)]


class LayoutError(ValueError):
    """A parallel layout that cannot exist, with the flags that fix it (``fix``; ``fixes``: the same typed)."""

    def __init__(self, message: str, *, fix: str, fixes: tuple[Fix, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.fixes = fixes


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Topology(_Frozen):
    """Physical layout. ``domain_size`` is the NVLink/XGMI domain in GPUs (8 for HGX and
    MI355X platforms, 72 for GB200/GB300 NVL72): ranks inside one domain reach each other's
    memory directly, which every fused mega-MoE kernel needs for its dispatch and combine."""

    gpus_per_node: Count = 8
    nodes: Count = 1
    domain_size: Count = 8

    def gpus_label(self, device: str) -> str:
        """The GPUs in one spelling for every command: ``8 x b200`` on one node, ``2 x 8 x b200`` on several."""
        return f"{self.nodes} x {self.gpus_per_node} x {device}" if self.nodes > 1 else f"{self.world_size} x {device}"

    @property
    def world_size(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def effective_domain(self) -> int:
        """GPUs that actually share one NVLink/XGMI domain in this deployment."""
        return min(self.domain_size, self.world_size)


class Parallelism(_Frozen):
    """Parallel layout. ``max_num_batched_tokens`` is the engine's per-step token budget
    (per DP rank), which bounds the tokens one rank feeds the MoE layer in one step."""

    tp: Count = 1
    dp: Count = 1
    ep: Count = 1
    pp: Count = 1
    max_num_batched_tokens: Annotated[int, Field(gt=0, le=1 << 24)] = 8192
    all2all_backend: str | None = Field(default=None, min_length=1, max_length=64)
    eplb: bool = False

    @model_validator(mode="after")
    def _ep_fits(self) -> Parallelism:
        group = self.tp * self.dp
        if group % self.ep:
            fix, fixes = _ep_fix(self.tp, self.dp, self.ep)
            raise LayoutError(
                f"--ep {self.ep} must divide tp*dp = {self.tp}*{self.dp} = {group}: the expert-parallel group is "
                "taken from the tp x dp ranks of one pipeline stage",
                fix=fix,
                fixes=fixes,
            )
        return self

    @property
    def moe_group_size(self) -> int:
        """Ranks that hold one copy of the MoE layer (tp * dp)."""
        return self.tp * self.dp

    @property
    def moe_tp(self) -> int:
        """Ranks each expert is sharded over (1 under pure expert parallelism)."""
        return self.moe_group_size // self.ep

    @property
    def tokens_per_rank(self) -> int:
        """Most tokens one rank feeds a MoE layer per step (the per-DP-rank budget)."""
        return self.max_num_batched_tokens


def _ep_fix(tp: int, dp: int, ep: int) -> tuple[str, tuple[Fix, ...]]:
    """The layout change that makes ``ep`` divide ``tp * dp``, in flags, and typed (each layout whole)."""
    group = tp * dp

    def layout(d: int, e: int, words: str = "") -> Fix:
        return Fix(
            FixKind.LAYOUT, words, flags=(*((("--tp", str(tp)),) if tp > 1 else ()), ("--dp", str(d)), ("--ep", str(e)))
        )

    if ep > group and ep % tp == 0:
        fixes = (layout(ep // tp, ep), layout(dp, group))
        return f"for EP over {ep} ranks use --dp {ep // tp} (tp*dp = {ep}), or --ep {group}", fixes
    divisors = [str(d) for d in range(1, group + 1) if group % d == 0]
    shown = ", ".join(divisors[:12]) + (", ..." if len(divisors) > 12 else "")
    fixes = (layout(dp, group, "(pure EP)"), Fix(FixKind.MANUAL, f"--ep another divisor of {group} ({shown})"))
    return f"use --ep {group} (pure EP) or another divisor of {group} ({shown})", fixes


#: ``--speculative``: ``none`` (the engines' default: no draft layers are built) or ``mtp`` (the model's own
#: multi-token-prediction layers draft tokens, so the engine builds them).
Speculative = Literal["none", "mtp"]
SPECULATIVE_CHOICES: tuple[Speculative, ...] = get_args(Speculative)


class Deployment(_Frozen):
    """Everything about the cluster a capability decision depends on.

    ``speculative`` is the launch's speculative decoding: layer groups built only under it (MTP, draft)
    take part in an engine's decision and sizing only when it is ``mtp``.
    """

    device: DeviceSpec
    topology: Topology
    parallel: Parallelism
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables that matter.")
    speculative: Speculative = "none"

    @model_validator(mode="after")
    def _fits(self) -> Deployment:
        need = self.parallel.tp * self.parallel.dp * self.parallel.pp
        world = self.topology.world_size
        if need > world:
            nodes = -(-need // self.topology.gpus_per_node)
            raise LayoutError(
                f"tp*dp*pp = {self.parallel.tp}*{self.parallel.dp}*{self.parallel.pp} = {need} ranks "
                f"exceeds the {world} GPUs of {self.topology.nodes} node(s) x {self.topology.gpus_per_node}",
                fix=f"lower the parallel sizes or use --nodes {nodes}",
                fixes=(
                    Fix(FixKind.MANUAL, "lower the parallel sizes"),
                    Fix(FixKind.FLAG, flags=(("--nodes", str(nodes)),)),
                ),
            )
        return self

    @property
    def ep_group_size(self) -> int:
        return self.parallel.ep

    @property
    def ranks_used(self) -> int:
        return self.parallel.tp * self.parallel.dp * self.parallel.pp
