"""What one engine release is, as moe-oracle knows it: the value each release folder declares once.

:class:`Release` gathers a release's parts (version, source tag, gates, model-class table, speculative-decoding
launch, software profiles, the fallback it runs); :mod:`moe_oracle.releases` maps each engine to its release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from moe_oracle.model.types import MoELayerGroup
from moe_oracle.rules import Engine
from moe_oracle.rules.engine import EngineProfile
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.device import DeviceSpec


@dataclass(frozen=True)
class ModelClass:
    """One engine version's MoE block for a set of architectures.

    ``source`` is ``file:line`` of the mega call (``mega``) or of the block that has none;
    ``entry`` the line(s) where the architectures reach the block.
    """

    architectures: tuple[str, ...]
    block: str
    mega: bool
    source: str
    entry: str
    rocm: bool = False
    oot: bool = False
    blocker: str = ""
    note: str = ""


@dataclass(frozen=True)
class ModelClassTable:
    """One engine version's model classes, and how its messages say a block has no mega path.

    ``engine`` is the engine's name as the messages spell it (``vllm``, ``sglang``); ``no_mega`` the clause
    that follows a block's name and source when the block never reaches the mega path; ``unlisted``: the
    architectures moe-oracle's model reader reads that no row lists, each with what is known of it (the release
    has no model class for it, or one whose MoE block is not judged yet; ``{arch}`` names it). Neither claims a
    mega path; the sentence is the reason (``tests/model/test_family_facts.py`` keeps the reader, the rows and
    this list in agreement).
    """

    engine: str
    rows: tuple[ModelClass, ...]
    no_mega: str
    unlisted: Mapping[str, str] = field(default_factory=dict)

    def find(self, architecture: str) -> ModelClass | None:
        """The row that lists ``architecture``, or None."""
        return next((row for row in self.rows if architecture in row.architectures), None)

    def calls_mega(self, architecture: str, *, rocm: bool = False) -> bool:
        """Whether the MoE block for ``architecture`` calls the mega path (on ROCm: its AITER diversion)."""
        row = self.find(architecture)
        return row is not None and row.mega and (row.rocm or not rocm)

    def not_listed(self, architecture: str, title: str | None = None) -> str:
        """Why no row lists ``architecture``: its :attr:`unlisted` sentence, else that moe-oracle does not know it
        (``title``: the engine as the sentence names it, default :attr:`engine`)."""
        known = self.unlisted.get(architecture)
        if known is not None:
            return known.format(arch=architecture)
        name = architecture or "this architecture"
        return f"{name} is not in moe-oracle's table of {title or self.engine} model classes"

    def why_no_mega(self, architecture: str, *, rocm: bool = False) -> str:
        """One sentence: why the block for ``architecture`` does not take the mega path (empty when it does)."""
        if self.calls_mega(architecture, rocm=rocm):
            return ""
        row = self.find(architecture)
        if row is None:
            return self.not_listed(architecture)
        if row.mega and rocm:
            return f"{row.block} calls the mega path only on CUDA ({row.source}); on ROCm it has no AITER diversion"
        return f"{row.block} ({row.source}) {self.no_mega}"


@dataclass(frozen=True)
class SpeculativeLaunch:
    """How one engine version builds the MTP layers: the flags that switch it on, and the source of that rule."""

    engine: Engine
    argv: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Release:
    """Everything moe-oracle knows about one engine release, from its folder under ``moe_oracle/releases/``.

    ``version``: the release (``0.33.0``); ``source``: its package directory at the release tag, the base of
    every citation of its code; ``gates``: what it adds on top of the kernels' rules; ``model_classes``: the MoE
    block it builds per architecture; ``speculative``: the flags that make it build MTP/draft layers;
    ``profiles``: the ``--software`` profiles it ships, by name, in the order ``moe-oracle list`` prints them
    (:attr:`name` and :attr:`plugin_profile`);
    ``fallback``: what it serves a layer group with when no fused mega-MoE backend is chosen.
    """

    engine: Engine
    version: str
    source: str
    gates: EngineProfile
    model_classes: ModelClassTable
    speculative: SpeculativeLaunch
    profiles: Mapping[str, Callable[[], SoftwareProfile]]
    fallback: Callable[[MoELayerGroup, DeviceSpec], str]

    @property
    def name(self) -> str:
        """The release as ``--software`` names it (``vllm-0.33.0``): the profile of what its wheel ships."""
        return f"{self.engine.value}-{self.version}"

    @property
    def plugin_profile(self) -> str:
        """The profile a plan for this engine assumes: the release with moe-oracle's plug-in."""
        return f"{self.name}+moe-oracle"


#: What moe-oracle's plug-in serves in each engine's release (architecture -> served), as each release folder
#: declares it when it loads (:mod:`moe_oracle.releases` loads them all): one engine's fix can send an operator to
#: the other engine without its folder naming the other's.
_PLUGIN_COVERAGE: dict[Engine, Callable[[str], bool]] = {}


def declare_plugin_coverage(engine: Engine, serves: Callable[[str], bool]) -> None:
    """Called once by ``engine``'s release folder: which architectures' MoE its plug-in route serves."""
    _PLUGIN_COVERAGE[engine] = serves


def plugin_serves_in(engine: Engine, architecture: str) -> bool:
    """Whether moe-oracle's plug-in serves ``architecture``'s MoE in ``engine``'s release (False when no release
    of ``engine`` is loaded)."""
    serves = _PLUGIN_COVERAGE.get(engine)
    return serves is not None and serves(architecture)
