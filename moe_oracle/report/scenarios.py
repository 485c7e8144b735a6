"""The matrix's scenarios: model x device x topology x engine x software.

A topology is named by its parallel layout and GPU count; the node count follows from the
device's GPUs per node, so ``dp8ep8`` is one 8-GPU HGX node but two 4-GPU GB200 trays (both
inside one NVLink domain), and ``ep16x2`` is two HGX nodes (EP crosses the 8-GPU domain) but
four GB200 trays inside the NVL72 domain. Every scenario carries the ``moe-oracle select``
command line that reproduces it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.types import ModelDescription, WeightFormat
from moe_oracle.rules import Engine
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment
from moe_oracle.spec.device import DEVICES, DeviceSpec


@dataclass(frozen=True)
class TopologySpec:
    """A parallel layout over ``gpus`` GPUs; nodes follow from the device's GPUs per node."""

    name: str
    gpus: int
    tp: int
    dp: int
    ep: int
    summary: str

    def nodes(self, device: DeviceSpec) -> int:
        return -(-self.gpus // device.gpus_per_node)

    def flags(self, device: DeviceSpec) -> DeploymentFlags:
        return DeploymentFlags(device=device.name, nodes=self.nodes(device), tp=self.tp, dp=self.dp, ep=self.ep)

    def select_args(self, device: DeviceSpec) -> list[str]:
        """The ``select`` deployment flags for this layout on ``device`` (defaults left out)."""
        args = ["--device", device.name]
        nodes = self.nodes(device)
        if nodes != 1:
            args += ["--nodes", str(nodes)]
        for flag, value in (("--tp", self.tp), ("--dp", self.dp), ("--ep", self.ep)):
            if value != 1:
                args += [flag, str(value)]
        return args


#: The topologies of the default matrix, in display order.
TOPOLOGIES: dict[str, TopologySpec] = {
    t.name: t
    for t in (
        TopologySpec(
            "dp8ep8",
            8,
            tp=1,
            dp=8,
            ep=8,
            summary="DP8 attention + EP8 experts on 8 GPUs: one node (gb200/gb300: two 4-GPU trays, one NVL72 domain)",
        ),
        TopologySpec("tp8", 8, tp=8, dp=1, ep=1, summary="TP8 on 8 GPUs, no expert parallelism: one node"),
        TopologySpec(
            "ep16x2",
            16,
            tp=1,
            dp=16,
            ep=16,
            summary="DP16 + EP16 on 16 GPUs: two nodes, so EP crosses the 8-GPU domain "
            "(gb200/gb300: four trays in one NVL72 domain)",
        ),
    )
}

#: Devices of the default matrix, in display order.
DEFAULT_DEVICES: tuple[str, ...] = ("h100", "h200", "b200", "b300", "gb200", "mi300x", "mi325x", "mi355x")
DEFAULT_ENGINES: tuple[str, ...] = ("none",)
DEFAULT_SOFTWARE: tuple[str, ...] = ("all",)


@dataclass(frozen=True)
class ScenarioSpec:
    """One column of the matrix: the inputs of one :func:`~moe_oracle.decide.selection.decide` call."""

    model_source: str
    model: ModelDescription
    device: DeviceSpec
    topology: TopologySpec
    engine: Engine
    software: SoftwareProfile
    deployment: Deployment
    env: dict[str, str] = field(default_factory=dict)
    advisories_file: str | None = None

    @property
    def id(self) -> str:
        return "|".join((self.model.model, self.device.name, self.topology.name, self.engine.value, self.software.name))

    def select_args(self) -> list[str]:
        """Arguments of the ``moe-oracle select`` call that decides this scenario."""
        args = ["select", self.model_source, *self.topology.select_args(self.device)]
        if self.engine is not Engine.NONE:
            args += ["--engine", self.engine.value]
        args += ["--software", self.software.name]
        for key, value in sorted(self.env.items()):
            args += ["--env", f"{key}={value}"]
        if self.advisories_file:
            args += ["--advisories", self.advisories_file]
        return args

    def select_command(self) -> str:
        return "moe-oracle " + shlex.join(self.select_args())


def split_list(value: str | Sequence[str] | None, flag: str = "the list") -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None -> None (the default). A value given but naming nothing
    (``" "``, ``",,,"``) is refused (exit 2): it would silently mean "everything"."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [p for v in value for p in v.split(",")]
    out = list(dict.fromkeys(p.strip() for p in items if p.strip()))
    if not out:
        raise BadInputError(
            f"{flag} {excerpt(value if isinstance(value, str) else ','.join(value))} names nothing",
            fix=f"give a comma list, or leave {flag} out for every default",
        )
    return out


def _choice(values: Sequence[str], known: Sequence[str], flag: str) -> list[str]:
    bad = [v for v in values if v not in known]
    if bad:
        raise BadInputError(f"{flag} {', '.join(map(repr, bad))}: unknown", fix=f"use one of: {', '.join(known)}.")
    return list(values)


def load_models(sources: Sequence[str] | None) -> list[tuple[str, ModelDescription]]:
    """(source, description) of each model, each config parsed once; default: every bundled preset."""
    from moe_oracle.model.loader import list_presets
    from moe_oracle.model.resolve import resolve_model

    picked = list(sources) if sources else list_presets()
    seen: dict[str, tuple[str, ModelDescription]] = {}
    for src in picked:
        desc = resolve_model(src)
        seen.setdefault(desc.model, (src, desc))
    return list(seen.values())


def build_scenarios(
    *,
    models: Sequence[str] | Sequence[tuple[str, ModelDescription]] | None = None,
    devices: Sequence[str] | None = None,
    topologies: Sequence[str] | None = None,
    engines: Sequence[str] | None = None,
    software: Sequence[str] | None = None,
    formats: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    advisories_file: str | None = None,
) -> list[ScenarioSpec]:
    """Every scenario of the cross product, ordered device, model, topology, engine, software.

    ``models`` are sources (preset ids, paths) or already resolved (source, description) pairs;
    ``formats`` keeps models whose main layer group has one of these weight formats.
    """
    resolved = bool(models) and not isinstance(models[0], str)  # type: ignore[index]
    loaded = list(models) if resolved else load_models(models)  # type: ignore[arg-type]
    if formats:
        wanted = _choice(formats, [f.value for f in WeightFormat], "--formats")
        loaded = [(s, d) for s, d in loaded if d.main_group.weight_format.value in wanted]
        if not loaded:
            raise BadInputError(
                f"--formats {','.join(wanted)}: no selected model's main layer group has these weights",
                fix="list the models' formats with moe-oracle model MODEL, or drop --formats.",
            )
    topos = [TOPOLOGIES[t] for t in _choice(topologies or list(TOPOLOGIES), list(TOPOLOGIES), "--topologies")]
    engs = [Engine(e) for e in _choice(engines or DEFAULT_ENGINES, [e.value for e in Engine], "--engine")]
    device_specs = []
    for name in devices or DEFAULT_DEVICES:
        if name.strip().lower() == "local":
            raise BadInputError(
                "--devices local: the matrix judges catalogue devices",
                fix="name the device (moe-oracle list devices), or use moe-oracle select --device local.",
            )
        if name.strip().lower() not in DEVICES:
            raise BadInputError(f"--devices {name!r} is not a known device", fix=f"use one of: {', '.join(DEVICES)}.")
        device_specs.append(DEVICES[name.strip().lower()])
    device_specs = list({d.name: d for d in device_specs}.values())
    profiles: dict[str, SoftwareProfile] = {}
    for name in software or DEFAULT_SOFTWARE:
        profiles[name] = resolve_software(name, "catalogue")[0]
    env = dict(env or {})
    out: list[ScenarioSpec] = []
    for device in device_specs:
        for source, desc in loaded:
            for topo in topos:
                deployment, _ = build_deployment(topo.flags(device), env)
                for engine in engs:
                    for profile in profiles.values():
                        out.append(
                            ScenarioSpec(source, desc, device, topo, engine, profile, deployment, env, advisories_file)
                        )
    return out
