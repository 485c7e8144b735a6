"""Named builds of a kernel library, as data: how each one is recognised and what its host code allows.

A library such as DeepGEMM exists in several builds at once (a release wheel, a development branch,
open pull requests, engine-vendored copies). They export different entry points and, for the same
entry point, assert different limits (token alignment, hidden-size multiples, rank caps). A
:class:`BuildSpec` states one build once: its provenance (a release, or a branch or pull request whose
limits were read from unreleased source), how a probe recognises it without launching a kernel (the
distribution, the version, entry points present or absent, parameters of a Python signature), and the
extra :class:`~moe_oracle.rules.check.Check` s each of its entry points needs.

A variant's entry-point check names the builds that provide its kernel
(``checks.entry_points(..., builds=...)``); a scenario passes when one build present in the software
profile exports the kernel and meets its limits. Torch-free and import-free.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum

from moe_oracle.rules.check import Check, Finding, Reason
from moe_oracle.software.types import LibraryBuild


class Provenance(str, Enum):
    """Where a build's limits were read: a release, or source that no release contains yet."""

    RELEASE = "release"
    BRANCH = "branch"
    OPEN_PR = "open-pr"

    @property
    def caveat(self) -> str:
        """How a message qualifies a limit read from this kind of source."""
        return _CAVEAT[self]


_CAVEAT = {
    Provenance.RELEASE: "a release; limits read from its published files",
    Provenance.BRANCH: "a development branch, in no release; limits read from the branch's source",
    Provenance.OPEN_PR: "an unmerged pull request, in no release; limits read from the PR's source",
}


@functools.lru_cache(maxsize=256)
def _version_in(version: str, spec: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def _dist_name(lib: LibraryBuild) -> str:
    """The distribution part of a probed ``dist`` (``"vllm (vendored vllm.third_party.deep_gemm)"`` -> ``vllm``)."""
    return (lib.dist or "").split(" ", 1)[0].lower().replace("_", "-")


@dataclass(frozen=True)
class BuildSpec:
    """One build of ``library``.

    ``name`` is stable (a ``--software`` profile of that name describes the build alone); ``ref`` says
    which source the facts were read from (repository, ref, commit). ``symbols``: the entry points it
    exports (names from the library's catalogue). Recognition (all given conditions must hold):
    ``import_paths`` (the provider it was imported from), ``dists`` (distribution names),
    ``version`` (a PEP 440 specifier), ``marks`` (entry points present), ``lacks`` (entry points
    absent) and ``params`` (entry point -> parameter names its Python signature has).
    ``limits``: entry point -> the extra checks a scenario must pass for this build to run it.
    ``token_alignment``: what the build's ``get_token_alignment_*`` returns (tokens; by arch name).
    ``url``: the public page a user obtains the build from (a PyPI release, a branch, a pull request).
    """

    name: str
    library: str
    title: str
    provenance: Provenance
    ref: str
    symbols: frozenset[str]
    marks: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    params: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    dists: tuple[str, ...] = ()
    version: str | None = None
    import_paths: tuple[str, ...] = ()
    limits: Mapping[str, tuple[Check, ...]] = field(default_factory=dict, compare=False)
    token_alignment: Mapping[str, int] = field(default_factory=dict)
    note: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        unknown = sorted((set(self.marks) | set(self.params) | set(self.limits)) - self.symbols)
        if unknown:
            raise ValueError(f"build {self.name}: {', '.join(unknown)} not among its symbols")
        if self.version is not None:
            from packaging.specifiers import SpecifierSet

            SpecifierSet(self.version)  # a bad declaration fails at import

    @property
    def label(self) -> str:
        """``title`` with its provenance, for messages."""
        return f"{self.title} ({self.provenance.caveat})"

    @property
    def released(self) -> bool:
        return self.provenance is Provenance.RELEASE

    def to_json(self) -> dict[str, object]:
        """What a decision record says of a build that serves a choice."""
        return {"name": self.name, "title": self.title, "provenance": self.provenance.value, "url": self.url}

    @property
    def alignment_text(self) -> str:
        """``token_alignment`` as text (``sm90 128, sm100 1920``; ``-`` when not declared)."""
        return ", ".join(f"{arch} {n}" for arch, n in self.token_alignment.items()) or "-"

    @property
    def recognised_by(self) -> str:
        """The recognition conditions as text (``dist sgl-deep-gemm; version ==0.2.5; f(p, ...)``)."""
        seen = [
            f"dist {' | '.join(self.dists)}" if self.dists else "",
            f"version {self.version}" if self.version else "",
        ]
        seen += [f"imported as {p}" for p in self.import_paths] + [f"has {m}" for m in self.marks]
        seen += [f"{s}({', '.join(p)}, ...)" for s, p in self.params.items()] + [f"no {m}" for m in self.lacks]
        return "; ".join(s for s in seen if s)

    def recognises(self, lib: LibraryBuild) -> bool:
        """Whether the probed ``lib`` is this build (import path, distribution, version, entry points, signatures)."""
        if not lib.present or lib.name != self.library:
            return False
        if self.import_paths and lib.import_path not in self.import_paths:
            return False
        if self.dists and _dist_name(lib) not in self.dists:
            return False
        if self.version is not None and (lib.version is None or not _version_in(lib.version, self.version)):
            return False
        if any(not lib.has(s) for s in self.marks) or any(lib.has(s) for s in self.lacks):
            return False
        return all(set(want) <= set(lib.params.get(s, ())) for s, want in self.params.items())

    def exports(self, needed: Iterable[str], any_of: Iterable[str] = ()) -> bool:
        options = tuple(any_of)
        return set(needed) <= self.symbols and (not options or any(s in self.symbols for s in options))

    def limit_reasons(self, entry_points: Iterable[str], scenario: object) -> list[Reason]:
        """The limits of ``entry_points`` in this build that ``scenario`` (a Scenario or LayerScenario) breaks."""
        out = []
        for ep in entry_points:
            for check in self.limits.get(ep, ()):
                reason = check.evaluate(scenario)  # type: ignore[arg-type]
                if reason is not None:
                    out.append(reason)
        return out


def builds_present(lib: LibraryBuild, builds: Iterable[BuildSpec]) -> list[BuildSpec]:
    """The declared ``builds`` that ``lib`` stands for: those its profile entry names (``lib.builds``), else
    the first one that recognises the probed library (declaration order, most specific first)."""
    declared = tuple(b for b in builds if b.library == lib.name)
    if lib.builds:
        return [b for b in declared if b.name in lib.builds]
    hit = next((b for b in declared if b.recognises(lib)), None)
    return [hit] if hit is not None else []


def _exporting(
    lib: LibraryBuild, builds: Iterable[BuildSpec], all_of: tuple[str, ...], any_of: tuple[str, ...]
) -> list[BuildSpec]:
    """The declared ``builds`` ``lib`` stands for that can provide the entry points (before their limits)."""
    present = builds_present(lib, builds)
    if lib.builds:  # a described profile: only the builds that export the kernel are candidates
        present = [b for b in present if b.exports(all_of, any_of)]
    return present


def limits_finding(candidates: Iterable[BuildSpec], all_of: tuple[str, ...], scenario: object) -> Finding | None:
    """None when no candidate is given or one meets its limits for ``all_of``; else, per candidate, the first
    limit it breaks (the finding carries that limit's code and remediation)."""
    failures: list[tuple[BuildSpec, Reason]] = []
    for build in candidates:
        reasons = build.limit_reasons(all_of, scenario)
        if not reasons:
            return None
        failures.append((build, reasons[0]))
    if not failures:
        return None
    text = "; ".join(f"{b.label} runs {all_of[0]} only with {r.rule}: {r.message}" for b, r in failures)
    first = failures[0][1]
    return Finding(text, remediation=first.remediation, code=first.code)


def build_finding(
    lib: LibraryBuild,
    builds: Iterable[BuildSpec],
    all_of: tuple[str, ...],
    any_of: tuple[str, ...],
    scenario: object,
) -> Finding | None:
    """None when a build ``lib`` stands for exports the entry points and meets their limits (or no declared
    build is recognised: the entry points alone decide); else the limits each candidate build breaks."""
    return limits_finding(_exporting(lib, builds, all_of, any_of), all_of, scenario)


def serving_builds(variant: object, scenario: object) -> tuple[BuildSpec, ...]:
    """The declared builds of ``scenario``'s software profile through which ``variant``'s entry-point checks pass:
    each exports the kernel and meets its limits for the scenario (declaration order, no repeats). Empty when
    the checks name no builds or the profile's library is no declared build (its entry points alone decided)."""
    out: dict[str, BuildSpec] = {}
    for check in getattr(variant, "checks", ()):
        data = check.data
        builds = tuple(b for b in data.get("builds", ()) if isinstance(b, BuildSpec))
        lib = scenario.software.libraries.get(data.get("library")) if builds else None  # type: ignore[attr-defined]
        if lib is None or not lib.present:
            continue
        all_of, any_of = tuple(data.get("all_of", ())), tuple(data.get("any_of", ()))
        for b in _exporting(lib, builds, all_of, any_of):
            if not b.limit_reasons(all_of, scenario):
                out.setdefault(b.name, b)
    return tuple(out.values())


def builds_named_by(variants: Iterable[object]) -> Iterator[BuildSpec]:
    """The builds the variants' entry-point checks name (``checks.entry_points(..., builds=...)``), in order,
    with repeats (anything without checks is passed over)."""
    for variant in variants:
        for check in getattr(variant, "checks", ()):
            yield from (b for b in check.data.get("builds", ()) if isinstance(b, BuildSpec))
