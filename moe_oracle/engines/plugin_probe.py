"""Is moe-oracle's plug-in there? What the engine's own plug-in loader would find in this environment.

``moe-oracle probe --engine vllm|sglang`` (issue #29 item 5; D8: without the plug-in installed in the engine's
environment vLLM silently accepts ``--additional-config '{"moe_oracle": ...}'`` and SGLang ignores
``SGLANG_PLUGINS=moe_oracle``). It reads the entry points as the engine's loader does, without importing the engine:

* vLLM 0.33: ``importlib.metadata.entry_points(group="vllm.general_plugins")``, filtered by ``VLLM_PLUGINS`` (unset:
  every plug-in; else a comma-separated allow-list, ``vllm/envs.py:1170-1174``; ``vllm/plugins/__init__.py:36-74``);
* SGLang 0.5.23: ``entry_points(group="sglang.srt.plugins")``, filtered by ``SGLANG_PLUGINS`` (empty or unset: every
  plug-in; ``srt/plugins/__init__.py:35-86``).

The entry point's target module is located (``importlib.util.find_spec``), not run. moe-oracle's own switch
(``MOE_ORACLE_VLLM_PLUGIN`` / ``MOE_ORACLE_SGLANG_PLUGIN`` = 0) and the engine's version (its distribution metadata)
are read too. Imports neither torch nor an engine.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata

from moe_oracle.releases import sglang, vllm
from moe_oracle.rules import Engine

NAME = "moe_oracle"
_OFF = ("0", "false", "off", "no")


@dataclass(frozen=True)
class EngineLoader:
    """How one engine release discovers general plug-ins."""

    title: str
    dist: str
    version: str
    group: str
    allow_env: str
    switch_env: str
    backend_env: str
    source: str


LOADERS: dict[Engine, EngineLoader] = {
    Engine.VLLM: EngineLoader(
        "vLLM",
        "vllm",
        vllm.VERSION,
        "vllm.general_plugins",
        "VLLM_PLUGINS",
        "MOE_ORACLE_VLLM_PLUGIN",
        "MOE_ORACLE_VLLM_BACKEND",
        "vllm/plugins/__init__.py:36-74, vllm/envs.py:1170-1174",
    ),
    Engine.SGLANG: EngineLoader(
        "SGLang",
        "sglang",
        sglang.VERSION,
        "sglang.srt.plugins",
        "SGLANG_PLUGINS",
        "MOE_ORACLE_SGLANG_PLUGIN",
        "MOE_ORACLE_SGLANG_BACKEND",
        "sglang/srt/plugins/__init__.py:35-86",
    ),
}


@dataclass
class PluginProbe:
    """The answer: ``loads`` is what the engine would do at start; ``problems`` say why not, each with its fix."""

    engine: str
    group: str
    engine_version: str | None
    entry_point: str | None
    dist: str | None
    target_found: bool
    allowed_by: str
    switch: str
    backend: str
    profile: str
    problems: list[str] = field(default_factory=list)

    @property
    def loads(self) -> bool:
        return not self.problems

    def line(self) -> str:
        """One line: what the engine would load, or why it would not."""
        head = f"moe-oracle plug-in for {self.engine} {self.engine_version or '(not installed)'}"
        if self.loads:
            return (
                f"{head}: the engine would load {self.entry_point} (group {self.group}, dist {self.dist}); "
                f"{self.backend}; software profile: {self.profile}"
            )
        return f"{head}: NOT loaded: " + "; ".join(self.problems)

    def to_json(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "group": self.group,
            "entry_point": self.entry_point,
            "dist": self.dist,
            "target_found": self.target_found,
            "allowed_by": self.allowed_by,
            "switch": self.switch,
            "backend": self.backend,
            "software_profile": self.profile,
            "loads": self.loads,
            "problems": list(self.problems),
        }


def _allowed(engine: Engine, loader: EngineLoader, env: Mapping[str, str]) -> tuple[bool, str]:
    """Would the engine's allow-list let ``moe_oracle`` through, and what decided it."""
    raw = env.get(loader.allow_env)
    if engine is Engine.VLLM:
        if raw is None:
            return True, f"{loader.allow_env} unset (every plug-in loads)"
        names = raw.split(",")  # vLLM does not strip: 'a, moe_oracle' does not name moe_oracle
    else:
        if not raw:
            return True, f"{loader.allow_env} {'empty' if raw == '' else 'unset'} (every plug-in loads)"
        names = [x.strip() for x in raw.split(",") if x.strip()]
    return NAME in names, f"{loader.allow_env}={raw}"


def probe_plugin(engine: Engine, env: Mapping[str, str]) -> PluginProbe:
    """What ``engine``'s plug-in loader would do with moe-oracle's entry point in this environment."""
    loader = LOADERS[engine]
    problems: list[str] = []
    try:
        version: str | None = metadata.version(loader.dist)
    except metadata.PackageNotFoundError:
        version = None
        problems.append(
            f"{loader.title} is not installed in this Python environment (importlib.metadata finds no "
            f"'{loader.dist}' distribution). Fix: run this with the Python of the environment {loader.title} "
            f"runs in (e.g. that venv's bin/moe-oracle)"
        )
    if version is not None and version != loader.version:
        problems.append(
            f"{loader.title} {version} is installed; moe-oracle's plug-in covers {loader.title} {loader.version} "
            f"and stays inactive on another release. Fix: pip install '{loader.dist}=={loader.version}'"
        )
    ours = [ep for ep in metadata.entry_points(group=loader.group) if ep.name == NAME]
    ep = ours[0] if ours else None
    if ep is None:
        problems.append(
            f"no '{NAME}' entry point in the group {loader.group} of this environment: {loader.title} would start "
            f"without moe-oracle and ignore its settings. Fix: pip install moe-oracle into the environment "
            f"{loader.title} runs in"
        )
    target_found = False
    if ep is not None:
        module = ep.value.split(":")[0].strip()
        try:
            target_found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            target_found = False
        if not target_found:
            problems.append(
                f"the entry point names {ep.value}, whose module is not importable here (a stale or broken "
                "install). Fix: reinstall moe-oracle into this environment"
            )
    allowed, allowed_by = _allowed(engine, loader, env)
    if not allowed:
        problems.append(
            f"{allowed_by} does not name '{NAME}', so {loader.title} skips the plug-in ({loader.source}). "
            f"Fix: add {NAME} to {loader.allow_env}"
        )
    switch = env.get(loader.switch_env, "1")
    if switch.strip().lower() in _OFF:
        problems.append(f"{loader.switch_env}={switch} turns the plug-in off. Fix: unset {loader.switch_env}")
    backend = env.get(loader.backend_env)
    backend_text = f"{loader.backend_env}={backend}" if backend else f"{loader.backend_env} unset (auto)"
    if engine is Engine.VLLM:
        backend_text += " (--additional-config moe_oracle.backend takes precedence)"
    return PluginProbe(
        engine=loader.title,
        group=loader.group,
        engine_version=version,
        entry_point=f"{ep.name} = {ep.value}" if ep is not None else None,
        dist=(ep.dist.name if ep is not None and ep.dist is not None else None),
        target_found=target_found,
        allowed_by=allowed_by,
        switch=f"{loader.switch_env}={switch}",
        backend=backend_text,
        profile="installed (the kernel libraries of this environment, as `moe-oracle probe` lists them; the "
        "plug-in decides with them at start)",
        problems=problems,
    )


def probe_command(engine: Engine) -> str:
    """The one-line check a plan prints for the operator to run in the engine's environment."""
    return f"moe-oracle probe --engine {engine.value}"


_SILENT = {
    Engine.VLLM: "vLLM accepts --additional-config '{\"moe_oracle\": ...}' silently and serves every layer itself",
    Engine.SGLANG: "SGLang ignores SGLANG_PLUGINS=moe_oracle and MOE_ORACLE_SGLANG_BACKEND and serves every layer "
    "itself",
}


def probe_note(engine: Engine) -> str:
    """The plan's note: the one-line check to run in the engine's environment before launching."""
    return (
        f"Check that the plug-in is there first, with the Python {LOADERS[engine].title} runs in: "
        f"{probe_command(engine)} (exit 0: {LOADERS[engine].title} would load moe-oracle's entry point, named in "
        f"the line it prints; exit 2 names what is missing). Without it {_SILENT[engine]}; with it the plug-in logs "
        "one INFO line at start naming what it serves."
    )


def own_version() -> str:
    try:
        return metadata.version("moe-oracle")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def start_line(engine: Engine, engine_version: str, serves: str) -> str:
    """The one INFO line each plug-in logs when its engine loads it: what it is and what it serves."""
    loader = LOADERS[engine]
    return (
        f"moe-oracle {own_version()} plug-in loaded by {loader.title} {engine_version} (entry point {NAME} in "
        f"{loader.group}; off with {loader.switch_env}=0): {serves}"
    )
