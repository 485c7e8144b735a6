"""Known-bad advisories: combinations published or shown to give wrong results.

Each entry names a backend (and optionally a variant, engine and version range, library
version range or marker entry point, model pattern, arch, EP range). A scenario that matches
every stated field is rejected with ``KNOWN_BAD`` and the advisory's link, by every selection
path. The data lives in ``data/advisories.json``; ``--advisories FILE`` adds a site file.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.jsonfile import parse_json_object, read_json_object
from moe_oracle.rules import Reason, ReasonCode, Scenario, VariantSpec
from moe_oracle.validation import one_line

#: Most advisories one file (or one record) may hold: a site list is a handful; beyond this it is not a list
#: of advisories but a denial of service (every candidate of every scenario is checked against each).
MAX_ADVISORIES = 256
#: Longest identifier, title, link or evidence text, and most entries of a list field (docs/advisories.md).
MAX_NAME = 128
MAX_TEXT = 4096
MAX_ITEMS = 64
_Name = Field(min_length=1, max_length=MAX_NAME)


class Advisory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = _Name
    title: str = Field(min_length=1, max_length=MAX_TEXT)
    link: str = Field(min_length=1, max_length=MAX_TEXT)
    evidence: str = Field(default="", max_length=MAX_TEXT)
    backend: str = _Name
    variant: str | None = Field(default=None, max_length=MAX_NAME)
    engine: str | None = Field(default=None, max_length=MAX_NAME)
    engine_versions: str | None = Field(default=None, max_length=MAX_NAME)
    library: str | None = Field(default=None, max_length=MAX_NAME)
    library_versions: str | None = Field(default=None, max_length=MAX_NAME)
    library_symbols: tuple[str, ...] = Field(default=(), max_length=MAX_ITEMS)
    models: tuple[str, ...] = Field(default=(), max_length=MAX_ITEMS)
    archs: tuple[str, ...] = Field(default=(), max_length=MAX_ITEMS)
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
        return Version(version) in _specifier_set(spec)
    except InvalidVersion:
        return True


@lru_cache(maxsize=1024)
def _specifier_set(spec: str) -> SpecifierSet:
    return SpecifierSet(spec)


class AdvisorySet(tuple[Advisory, ...]):
    """The advisories in force, indexed by backend: a candidate is checked against the advisories of its own
    backend only, so the cost of matching grows with the advisories that can match, not with all of them."""

    by_backend: dict[str, list[Advisory]]

    def __new__(cls, advisories: Iterable[Advisory] = ()) -> AdvisorySet:
        self = super().__new__(cls, advisories)
        self.by_backend = {}
        for adv in self:
            self.by_backend.setdefault(adv.backend, []).append(adv)
        return self

    def for_backend(self, backend: str) -> Sequence[Advisory]:
        return self.by_backend.get(backend, ())


def advisories_for(advisories: Sequence[Advisory], backend: str) -> Sequence[Advisory]:
    """The advisories that name ``backend`` (all of them when ``advisories`` is not an :class:`AdvisorySet`)."""
    return advisories.for_backend(backend) if isinstance(advisories, AdvisorySet) else advisories


class AdvisoryFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: int = Field(alias="schema")
    advisories: tuple[Advisory, ...] = Field(max_length=MAX_ADVISORIES)


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


def load_advisories(extra: str | Path | None = None) -> AdvisorySet:
    """The bundled advisories plus those of an optional site file (at most :data:`MAX_ADVISORIES`)."""
    found = bundled_advisories()
    if extra is not None:
        data = read_json_object(extra, what="advisory file", fix=_FIX_SCHEMA)
        advisories = data.get("advisories")
        if isinstance(advisories, list) and len(advisories) > MAX_ADVISORIES:
            raise BadInputError(
                f"advisory file {excerpt(str(extra))} holds {len(advisories)} advisories, more than the "
                f"{MAX_ADVISORIES} accepted",
                fix=f"keep the advisories that apply to your site; {_FIX_SCHEMA}",
            )
        found = found + _validate(data, str(extra))
    return AdvisorySet(found)


def nearby(advisories: Sequence[Advisory], spec: VariantSpec, arch: str, engine: str | None = None) -> list[Advisory]:
    """The advisories about ``spec`` on ``arch`` (and about ``engine``, or no engine, when one is named) that do
    not reject it here (another library or engine version, EP size or model): an operator who changes the
    software should know they exist. One that applied would have rejected ``spec`` (KNOWN_BAD)."""
    return [
        adv
        for adv in advisories_for(advisories, spec.backend)
        if adv.backend == spec.backend
        and (not adv.variant or adv.variant == spec.variant)
        and (not adv.archs or arch in adv.archs)
        and (engine in (None, "none") or not adv.engine or adv.engine == engine)
    ]


def nearby_note(adv: Advisory, spec: VariantSpec) -> str:
    """One line saying that ``adv`` concerns ``spec`` under which software, and that it does not apply here."""
    when = ", ".join(
        part
        for part in (
            f"{adv.library} {adv.library_versions}" if adv.library and adv.library_versions else adv.library or "",
            f"{adv.engine} {adv.engine_versions or ''}".strip() if adv.engine else "",
            f"EP >= {adv.min_ep}" if adv.min_ep else "",
            f"EP <= {adv.max_ep}" if adv.max_ep else "",
        )
        if part
    )
    return (
        f"advisory {adv.id} ({adv.title}; {adv.link}) concerns {spec.key}"
        + (f" with {when}" if when else "")
        + "; it does not apply to this deployment's software, re-check with the software you install"
    )


def nearby_advisories(
    advisories: Sequence[Advisory], spec: VariantSpec, arch: str, engine: str | None = None
) -> list[str]:
    """:func:`nearby_note` of each of :func:`nearby`."""
    return [nearby_note(adv, spec) for adv in nearby(advisories, spec, arch, engine)]
