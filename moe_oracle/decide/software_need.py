"""The default software of an engine, chosen by what the decision needs on the device.

An engine release ships one DeepGEMM build, and the engine loads one ``deep_gemm`` module. The default software
of ``--engine vllm``/``sglang`` is that release with moe-oracle's plug-in, plus a replacement build only where a
chosen variant needs one on this device (``releases.defaults.default_software`` lists the candidates per
engine and architecture): a replacement is taken when, with it, a layer group runs a variant the software before
it does not run, through the replacement build. Every derived size and install note then follows the one build the
chosen profile lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from moe_oracle.decide.selection import Decision
from moe_oracle.errors import OverrideRefusedError
from moe_oracle.releases.defaults import SoftwareOption
from moe_oracle.releases.profiles import named_profile
from moe_oracle.software.types import SoftwareProfile

Outcome = Decision | OverrideRefusedError


def _chosen(outcome: Outcome) -> dict[str, str]:
    if isinstance(outcome, OverrideRefusedError):
        return {}
    return {g.group.name: g.chosen.label for g in outcome.groups if g.chosen is not None}


def _gains(outcome: Outcome, before: Outcome, build: str) -> list[str]:
    """The layer groups ``outcome`` serves with another variant than ``before``, through ``build``, as
    ``variant (layer group name)``."""
    if isinstance(outcome, OverrideRefusedError):
        return []
    had = _chosen(before)
    return [
        f"{g.chosen.label} (layer group {g.group.name})"
        for g in outcome.groups
        if g.chosen is not None
        and had.get(g.group.name) != g.chosen.label
        and build in {b.name for b in g.chosen.builds}
    ]


def choose_default(
    options: Sequence[SoftwareOption], decide_under: Callable[[SoftwareProfile], Decision], engine: str, device: str
) -> tuple[SoftwareProfile, str]:
    """The profile among ``options`` (the release with the plug-in first) the default takes, and why (the origin
    line a plan and a record print). ``decide_under`` decides the question under a profile; an override that a
    profile refuses counts as choosing nothing there."""
    first = _profile(options[0].profile)
    if len(options) == 1:
        return first, f"default for --engine {engine}"
    profile, origin = first, f"default for --engine {engine} on {device}: the release's own DeepGEMM"
    current = _outcome(decide_under, first)
    for option in options[1:]:
        if option.replaces is None:
            continue
        candidate = _profile(option.profile)
        outcome = _outcome(decide_under, candidate)
        gains = _gains(outcome, current, option.replaces)
        if gains:
            profile, current = candidate, outcome
            origin = f"default for --engine {engine} on {device}: {option.replaces} for {', '.join(gains)}"
    return profile, origin


def _outcome(decide_under: Callable[[SoftwareProfile], Decision], profile: SoftwareProfile) -> Outcome:
    try:
        return decide_under(profile)
    except OverrideRefusedError as exc:
        return exc


def _profile(name: str) -> SoftwareProfile:
    profile = named_profile(name)
    if profile is None:  # a declaration error of releases.defaults, not an input
        raise ValueError(f"default software option {name!r} is not a named profile")
    return profile
