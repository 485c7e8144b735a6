"""Launch advisories: hazards a plan avoids by setting an engine's own switch (the variant stays eligible).

The known-bad advisories (:mod:`moe_oracle.decide.advisories`) reject a variant; a launch advisory names a hazard of
an engine release with a kernel build that the engine's own switch removes: the plan sets that switch in its
environment and says why, with the source. Same shape and stable ids as the known-bad ones; the data lives in
``data/launch_advisories.json``.

MOA-2026-002 (DeepGEMM PR #447): the SM90 FP8 and SM100 NVFP4 mega kernels never wait on the grid dependency, and
SGLang 0.5.23 launches DeepGEMM with PDL on by default, so SGLang plans that run them set ``SGLANG_DEEPGEMM_PDL=0``.
moe-oracle's own runtime never launches such a kernel as a PDL secondary
(``backends/_deep_gemm_layer.py``: ``KERNEL_WAITS_FOR_GRID_DEPENDENCY``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from importlib import resources

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

from moe_oracle.jsonfile import parse_json_object


class LaunchAdvisory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=128)
    title: str = Field(min_length=1, max_length=4096)
    link: str = Field(min_length=1, max_length=4096)
    evidence: str = Field(default="", max_length=4096)
    backend: str = Field(min_length=1, max_length=128)
    variants: tuple[str, ...] = Field(min_length=1, max_length=64)
    engine: str = Field(min_length=1, max_length=128)
    engine_versions: str | None = Field(default=None, max_length=128)
    #: the kernel build that removes the hazard (none installed: the advisory applies to every build)
    fixed_by: str = Field(min_length=1, max_length=4096)
    #: why the engine exposes the hazard by default, with its source lines
    engine_default: str = Field(min_length=1, max_length=4096)
    #: the engine's own switch the plan sets
    env: dict[str, str] = Field(min_length=1)

    def applies(self, engine: str, engine_version: str, keys: Iterable[tuple[str, str]]) -> bool:
        """Does it concern ``engine`` at ``engine_version`` running any ``(backend, variant)`` of ``keys``?"""
        if engine != self.engine:
            return False
        if self.engine_versions:
            try:
                if Version(engine_version) not in SpecifierSet(self.engine_versions):
                    return False
            except InvalidVersion:
                pass
        return any(b == self.backend and v in self.variants for b, v in keys)

    def note(self) -> str:
        """The plan's note: the hazard, its source, what the plan sets and until when (``launch advisory ...``: it
        changes the launch, not the decision, unlike the known-bad advisories noted as ``advisory ...``)."""
        switch = " ".join(f"{k}={v}" for k, v in self.env.items())
        return (
            f"launch advisory {self.id}: {self.title} ({self.link}; {self.evidence}). {self.engine_default}. "
            f"The plan sets {switch} (the engine's own switch) until a build with {self.fixed_by} is installed."
        )


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: int = Field(alias="schema")
    advisories: tuple[LaunchAdvisory, ...] = Field(max_length=256)


@lru_cache(maxsize=1)
def bundled_launch_advisories() -> tuple[LaunchAdvisory, ...]:
    data = resources.files("moe_oracle.data").joinpath("launch_advisories.json").read_bytes()
    return _File.model_validate(parse_json_object(data, where="data/launch_advisories.json")).advisories


def launch_advisories(engine: str, engine_version: str, keys: Iterable[tuple[str, str]]) -> list[LaunchAdvisory]:
    """The bundled launch advisories for a plan of ``engine`` running the ``(backend, variant)`` pairs ``keys``."""
    pairs = list(keys)
    return [a for a in bundled_launch_advisories() if a.applies(engine, engine_version, pairs)]
