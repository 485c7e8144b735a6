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
from dataclasses import dataclass, replace

from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.asked import AskedQuestion, QuestionOptions, ResolvedQuestion
from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.inputs import DeploymentFlags
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

    def nodes(self, device: DeviceSpec, gpus_per_node: int | None = None) -> int:
        return -(-self.gpus // (gpus_per_node or device.gpus_per_node))

    def flags(self, device: DeviceSpec, base: DeploymentFlags | None = None) -> DeploymentFlags:
        """The deployment flags of this layout on ``device``; the rest (node size, domain, step budget, all2all,
        EPLB, speculative decoding) from ``base``, the matrix's own flags."""
        base = base or DeploymentFlags(device=device.name)
        nodes = self.nodes(device, base.gpus_per_node)
        return replace(base, device=device.name, nodes=nodes, tp=self.tp, dp=self.dp, ep=self.ep, pp=1)

    def select_args(self, device: DeviceSpec, gpus_per_node: int | None = None) -> list[str]:
        """The ``select`` layout flags for this layout on ``device`` (defaults left out)."""
        args = ["--device", device.name]
        nodes = self.nodes(device, gpus_per_node)
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


@dataclass(frozen=True)
class ScenarioSpec:
    """One column of the matrix: the question one ``moe-oracle select`` call answers (:attr:`question`), on a
    topology of the matrix."""

    model_source: str
    topology: TopologySpec
    question: ResolvedQuestion

    @property
    def model(self) -> ModelDescription:
        return self.question.asked.model

    @property
    def device(self) -> DeviceSpec:
        return self.question.deployment.device

    @property
    def engine(self) -> Engine:
        return self.question.asked.engine

    @property
    def software(self) -> SoftwareProfile:
        return self.question.software

    @property
    def deployment(self) -> Deployment:
        return self.question.deployment

    @property
    def env(self) -> dict[str, str]:
        return self.question.asked.options.env

    @property
    def id(self) -> str:
        return "|".join((self.model.model, self.device.name, self.topology.name, self.engine.value, self.software.name))

    def select_args(self) -> list[str]:
        """Arguments of the ``moe-oracle select`` call that decides this scenario (defaults left out)."""
        asked = self.question.asked
        args = ["select", self.model_source, *self.topology.select_args(self.device, asked.flags.gpus_per_node)]
        if self.engine is not Engine.NONE:
            args += ["--engine", self.engine.value]
        if asked.software is not None:
            args += ["--software", asked.software]
        return args + question_args(asked)

    def select_command(self) -> str:
        return "moe-oracle " + shlex.join(self.select_args())


def question_args(asked: AskedQuestion) -> list[str]:
    """The flags besides model, device, layout, engine and software that ask ``asked`` (defaults left out)."""
    flags, opts = asked.flags, asked.options
    default_flags, default_opts = DeploymentFlags(device=flags.device), QuestionOptions()
    args: list[str] = []
    for flag, value, default in (
        ("--gpus-per-node", flags.gpus_per_node, default_flags.gpus_per_node),
        ("--domain-size", flags.domain_size, default_flags.domain_size),
        ("--max-num-batched-tokens", flags.max_num_batched_tokens, default_flags.max_num_batched_tokens),
        ("--all2all-backend", flags.all2all_backend, default_flags.all2all_backend),
        ("--speculative", flags.speculative, default_flags.speculative),
        ("--workload", opts.workload, default_opts.workload),
        ("--decode-tokens", opts.decode_tokens, default_opts.decode_tokens),
        ("--memory-fraction", opts.memory_fraction, default_opts.memory_fraction),
        ("--advisories", opts.advisories_file, default_opts.advisories_file),
    ):
        if value != default:
            args += [flag, str(value)]
    for flag, on in (
        ("--eplb", flags.eplb),
        ("--no-convert", not opts.conversion.enabled),
        ("--allow-lossy-conversion", opts.conversion.allow_lossy),
        ("--allow-low-precision-activations", opts.conversion.allow_low_precision_activations),
    ):
        if on:
            args.append(flag)
    for key, value in sorted(opts.env.items()):
        args += ["--env", f"{key}={value}"]
    return args


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


def _resolved(
    models: Sequence[str] | Sequence[tuple[str, ModelDescription]] | None,
) -> list[tuple[str, ModelDescription]]:
    """``models`` as (source, description) pairs: resolved pairs as given, sources each read once (none: every
    bundled preset)."""
    pairs = [m for m in models or () if not isinstance(m, str)]
    if models and len(pairs) == len(models):
        return pairs
    return load_models([m for m in models or () if isinstance(m, str)])


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
    base: DeploymentFlags | None = None,
    options: QuestionOptions | None = None,
) -> list[ScenarioSpec]:
    """Every scenario of the cross product, ordered device, model, topology, engine, software.

    ``models`` are sources (preset ids, paths) or already resolved (source, description) pairs;
    ``formats`` keeps models whose main layer group has one of these weight formats. ``software`` None is
    ``select``'s default for each engine (its release profile for vllm/sglang, ``all`` for none). ``base``
    and ``options``: the rest of the question (``select``'s flags, same defaults), the same in every scenario;
    ``env`` and ``advisories_file`` replace theirs.
    """
    loaded = _resolved(models)
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
    for device_name in devices or DEFAULT_DEVICES:
        key = device_name.strip().lower()
        if key == "local":
            raise BadInputError(
                "--devices local: the matrix judges catalogue devices",
                fix="name the device (moe-oracle list devices), or use moe-oracle select --device local.",
            )
        if key not in DEVICES:
            raise BadInputError(
                f"--devices {device_name!r} is not a known device", fix=f"use one of: {', '.join(DEVICES)}."
            )
        device_specs.append(DEVICES[key])
    device_specs = list({d.name: d for d in device_specs}.values())
    opts = options or QuestionOptions()
    if env is not None:
        opts = replace(opts, env=dict(env))
    if advisories_file is not None:
        opts = replace(opts, advisories_file=advisories_file)
    advisories = load_advisories(opts.advisories_file)
    names: list[str | None] = list(dict.fromkeys(software)) if software else [None]
    out: list[ScenarioSpec] = []
    for device in device_specs:
        for source, desc in loaded:
            for topo in topos:
                flags = topo.flags(device, base)
                for engine in engs:
                    for name in names:
                        asked = AskedQuestion(desc, flags, engine, name, opts)
                        out.append(ScenarioSpec(source, topo, asked.resolve(advisories)))
    return out
