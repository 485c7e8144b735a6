"""Known-bad advisories: combinations published or shown to give wrong results.

Each entry names a backend (and optionally a variant, engine and version range, library
version range or marker entry point, model pattern, arch, EP range). A scenario that matches
every stated field is rejected with ``KNOWN_BAD`` and the advisory's link, by every selection
path. The data lives in ``data/advisories.json``; ``--advisories FILE`` adds a site file.
"""

from __future__ import annotations

import fnmatch
from functools import lru_cache
from importlib import resources
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from moe_oracle.errors import BadInputError
from moe_oracle.jsonfile import parse_json_object, read_json_object
from moe_oracle.rules import Reason, ReasonCode, Scenario, VariantSpec
from moe_oracle.validation import one_line


class Advisory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    link: str = Field(min_length=1)
    evidence: str = ""
    backend: str
    variant: str | None = None
    engine: str | None = None
    engine_versions: str | None = None
    library: str | None = None
    library_versions: str | None = None
    library_symbols: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()
    min_ep: int | None = Field(default=None, gt=0)
    max_ep: int | None = Field(default=None, gt=0)

    @field_validator("engine_versions", "library_versions")
    @classmethod
    def _specifier(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SpecifierSet(value)
            except InvalidSpecifier as exc:
                raise ValueError(f"invalid version specifier {value!r}: {exc}") from exc
        return value

    def matches(self, spec: VariantSpec, sc: Scenario, engine_version: str | None) -> bool:
        if spec.backend != self.backend or (self.variant and spec.variant != self.variant):
            return False
        if self.engine and sc.engine.value != self.engine:
            return False
        if self.engine_versions and not _in(engine_version, self.engine_versions):
            return False
        if self.library:
            lib = sc.software.library(self.library)
            if lib is None:
                return False
            if self.library_versions and not _in(lib.version, self.library_versions):
                return False
            if any(not lib.has(s) for s in self.library_symbols):
                return False
        if self.models and not any(
            fnmatch.fnmatch(name.lower(), pat.lower())
            for pat in self.models
            for name in (sc.architecture, sc.model_type)
        ):
            return False
        if self.archs and sc.deployment.device.arch.value not in self.archs:
            return False
        if self.min_ep is not None and sc.ep < self.min_ep:
            return False
        return not (self.max_ep is not None and sc.ep > self.max_ep)

    def reason(self) -> Reason:
        return Reason(
            code=ReasonCode.KNOWN_BAD,
            message=f"{self.id}: {self.title}",
            remediation=f"See {self.link}; choose another backend or a library version outside the advisory.",
            rule="no matching known-bad advisory",
            sources=(self.link,),
        )


def _in(version: str | None, spec: str) -> bool:
    """True when ``version`` is inside ``spec``; an unknown version matches (fail safe)."""
    if version is None:
        return True
    try:
        return Version(version) in SpecifierSet(spec)
    except InvalidVersion:
        return True


class AdvisoryFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: int = Field(alias="schema")
    advisories: tuple[Advisory, ...]


_FIX_SCHEMA = "see docs/advisories.md for the schema"


def _validate(data: dict, origin: str) -> tuple[Advisory, ...]:
    try:
        return AdvisoryFile.model_validate(data).advisories
    except ValidationError as exc:
        raise BadInputError(one_line(exc, f"advisory file {origin} is invalid"), fix=_FIX_SCHEMA) from None


@lru_cache(maxsize=1)
def bundled_advisories() -> tuple[Advisory, ...]:
    data = resources.files("moe_oracle.data").joinpath("advisories.json").read_bytes()
    return _validate(parse_json_object(data, where="data/advisories.json"), "data/advisories.json")


def load_advisories(extra: str | Path | None = None) -> tuple[Advisory, ...]:
    """The bundled advisories plus those of an optional site file."""
    found = bundled_advisories()
    if extra is not None:
        data = read_json_object(extra, what="advisory file", fix=_FIX_SCHEMA)
        found = found + _validate(data, str(extra))
    return found
