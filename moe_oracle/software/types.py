"""What a kernel-library build offers, as data.

A :class:`SoftwareProfile` says which libraries are present, in which version, and which
mega-MoE entry points (attribute paths such as ``fp8_mega_moe`` or ``_C.fp8_fp4_mega_moe_sm90``)
they export. The ``installed`` profile is probed from this machine; named profiles describe
what an engine release ships. Backends check entry points, never ``import`` a library.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_serializer


class LibraryBuild(BaseModel):
    """One kernel library as found (or described).

    ``name`` is the logical library (``deep_gemm``, ``aiter``, ``mori``, ``flydsl``, ``torch``,
    ``vllm``, ``sglang``, ``flashinfer``); ``dist`` the distribution providing it
    (``sgl-deep-gemm``, ``vllm (vendored deep_gemm)``); ``symbols`` the entry points present.
    ``params``: for probed entry points that are Python functions, their parameter names (how builds
    that share a name are told apart). ``builds``: the named builds a described profile entry stands
    for (:class:`~moe_oracle.rules.build.BuildSpec` names); empty for a probed library, whose build is
    recognised from the rest. A failed import keeps ``present=False`` and the error text.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    present: bool = True
    dist: str | None = None
    version: str | None = None
    import_path: str | None = None
    symbols: frozenset[str] = frozenset()
    params: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    builds: frozenset[str] = frozenset()
    error: str | None = None
    note: str | None = None

    @field_serializer("symbols", "builds")
    def _sorted_names(self, names: frozenset[str]) -> list[str]:
        return sorted(names)  # stable JSON, whatever the hash seed

    def has(self, symbol: str) -> bool:
        return self.present and symbol in self.symbols


class SoftwareProfile(BaseModel):
    """A set of library builds under one name (``installed``, ``vllm-0.33.0``, ``all``...)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    libraries: dict[str, LibraryBuild] = Field(default_factory=dict)

    def library(self, name: str) -> LibraryBuild | None:
        lib = self.libraries.get(name)
        return lib if lib is not None and lib.present else None

    def has(self, library: str, symbol: str) -> bool:
        lib = self.library(library)
        return lib is not None and lib.has(symbol)

    def version(self, library: str) -> str | None:
        lib = self.library(library)
        return lib.version if lib else None

    def only_build(self, library: str) -> str | None:
        """The name of the one declared build ``library`` stands for here (the build an engine loads: it imports
        one module of that name); None when the library is absent or stands for none or several (``all``)."""
        lib = self.library(library)
        return next(iter(lib.builds)) if lib is not None and len(lib.builds) == 1 else None


class LibrarySpec(BaseModel):
    """What a backend package declares about a kernel library it calls, so the probe and the named
    profiles know it (see ``docs/adding-a-backend.md``).

    ``providers``: import paths the library is found under, in preference order (default: ``name``);
    ``symbols``: the entry points that matter (attribute path relative to the top module -> meaning),
    the probe resolves exactly these; ``symbol_paths``: where an entry point lives when it is not a
    top-level attribute (the probe imports that submodule only when the top level lacks it);
    ``profiles``: the library's entry in named software profiles (``vllm-0.33.0``...). The ``all``
    profile lists it with every declared symbol unless ``profiles["all"]`` says otherwise.
    Declaring the library imports nothing; only ``--software installed`` imports it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    providers: tuple[str, ...] = ()
    symbols: dict[str, str] = Field(default_factory=dict)
    symbol_paths: dict[str, str] = Field(default_factory=dict)
    profiles: dict[str, LibraryBuild] = Field(default_factory=dict)
    dist: str | None = None

    @property
    def import_paths(self) -> tuple[str, ...]:
        return self.providers or (self.name,)

    def profile_entry(self, profile: str) -> LibraryBuild | None:
        """This library's entry in the named ``profile`` (None: that profile does not ship it)."""
        entry = self.profiles.get(profile)
        if entry is None and profile == "all":
            entry = LibraryBuild(name=self.name, dist=self.dist, symbols=frozenset(self.symbols))
        if entry is not None and entry.name != self.name:
            raise ValueError(f"profile {profile!r} entry of library {self.name!r} is named {entry.name!r}")
        return entry
