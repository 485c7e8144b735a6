"""Each engine release lives in one folder (``moe_oracle/releases/<engine>_<version>/``), and only there.

- The folder is self-contained: it imports no other release folder and not the registry above it; nothing
  outside ``moe_oracle/releases/`` names it (code asks :mod:`moe_oracle.releases` for the engine's release).
- Its parts agree: the folder's name, ``version.py``'s ``VERSION``, the source tag, the gates, the speculative
  launch and the ``--software`` names are one release.
- Its version is spelled there: no string of code elsewhere in ``moe_oracle/`` writes a release's version
  (``0.33.0``, ``0.33``, ``0.5.23``) or its tag URL; they are built from the release's constants. The exceptions
  are the modules below the releases' floor (``tests/test_layering.py``), which cannot import them: the family
  reader's facts as that release runs them (:data:`BELOW_THE_RELEASES`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from moe_oracle import releases
from moe_oracle.releases import RELEASES
from moe_oracle.releases.types import Release
from moe_oracle.rules import Engine

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "moe_oracle"
RELEASES_DIR = PACKAGE / "releases"
FOLDERS = sorted(p.name for p in RELEASES_DIR.iterdir() if p.is_dir() and (p / "__init__.py").exists())

#: Modules under the releases' floor that state a release's facts in their own words (they cannot import a
#: release): what a family's config means as that engine release reads it, with its source.
BELOW_THE_RELEASES: dict[str, str] = {
    "moe_oracle/model/adapters/families.py": "family rules as vLLM 0.33 / SGLang 0.5.23 run each family",
    "moe_oracle/model/footprint.py": "the modeling files a footprint entry was read from",
}
#: (module, release) pairs where one release's folder names another release on purpose.
CROSS_REFERENCES: dict[tuple[str, str], str] = {
    ("moe_oracle/releases/vllm_0_33/gates.py", "sglang-0.5.23"): "a fix that sends a vLLM user to SGLang names the "
    "SGLang release it was checked against",
}


def _folder_of(release: Release) -> str:
    return next(f for f in FOLDERS if getattr(releases, release.engine.value).__name__.endswith(f".{f}"))


def _imports(path: Path) -> set[str]:
    """Modules ``path`` imports (``from a import b`` gives ``a.b`` as well as ``a``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of ``path`` but its docstrings (the pieces of an f-string count)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _spellings(release: Release) -> re.Pattern[str]:
    """The version as text writes it (``0.33.0``, its series ``0.33``), and the tag of its source URLs."""
    series = release.version.rsplit(".", 1)[0] if release.version.endswith(".0") else release.version
    versions = {re.escape(release.version), re.escape(series)}
    return re.compile(r"(?<![\d.])(?:" + "|".join(sorted(versions, key=len, reverse=True)) + r")(?![\d])")


def test_every_engine_has_a_release_and_every_folder_is_registered() -> None:
    assert set(RELEASES) == {Engine.VLLM, Engine.SGLANG}
    assert sorted(_folder_of(r) for r in RELEASES.values()) == FOLDERS


@pytest.mark.parametrize("release", RELEASES.values(), ids=lambda r: r.name)
def test_the_parts_of_a_release_agree(release: Release) -> None:
    folder = _folder_of(release)
    module = getattr(releases, release.engine.value)
    assert folder == f"{release.engine.value}_{release.version.replace('.', '_')}".removesuffix("_0")
    assert module.version.VERSION == release.version == module.VERSION
    assert f"/v{release.version}/" in release.source and release.source == module.version.SOURCE
    assert (release.gates.engine, release.gates.version) == (release.engine.value, release.version)
    assert all(s.engine == release.engine.value and s.version == release.version for s in release.gates.supports)
    assert release.speculative.engine is release.engine
    # the release, the release with the plug-in, then the plug-in profile with one DeepGEMM build in place of the
    # release's (releases/defaults.py: what a chosen variant needs on a device)
    names = list(release.profiles)
    assert names[:2] == [release.name, release.plugin_profile]
    assert all(n.startswith(release.plugin_profile + "+") for n in names[2:])
    assert all(factory().name == name for name, factory in release.profiles.items())


def test_a_release_folder_imports_no_other_release_and_not_the_registry() -> None:
    problems = []
    for folder in FOLDERS:
        others = [f"moe_oracle.releases.{f}" for f in FOLDERS if f != folder]
        for path in sorted((RELEASES_DIR / folder).rglob("*.py")):
            for name in _imports(path):
                if name == "moe_oracle.releases" or any(name == o or name.startswith(o + ".") for o in others):
                    problems.append(f"{path.relative_to(ROOT)} imports {name}")
                if name in (f"moe_oracle.releases.{a}" for a in ("sglang", "vllm", "RELEASES", "release")):
                    problems.append(f"{path.relative_to(ROOT)} imports {name} (the registry)")
    assert not problems, "\n".join(problems)


def test_nothing_outside_the_releases_names_a_release_folder() -> None:
    problems = []
    inside = {RELEASES_DIR / f for f in FOLDERS} | {RELEASES_DIR / "__init__.py"}
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path == p or p in path.parents for p in inside):
            continue
        for name in _imports(path):
            if any(name == f"moe_oracle.releases.{f}" or name.startswith(f"moe_oracle.releases.{f}.") for f in FOLDERS):
                problems.append(f"{path.relative_to(ROOT)} imports {name}: ask moe_oracle.releases for the release")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("release", RELEASES.values(), ids=lambda r: r.name)
def test_a_release_is_spelled_only_in_its_folder(release: Release) -> None:
    spelled = _spellings(release)
    folder = RELEASES_DIR / _folder_of(release)
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        if folder in path.parents or where in BELOW_THE_RELEASES or (where, release.name) in CROSS_REFERENCES:
            continue
        for line, text in _code_strings(path):
            if spelled.search(text):
                problems.append(f"{where}:{line}: {text[:100]!r}")
    assert not problems, (
        f"{release.name} spelled outside {folder.relative_to(ROOT)} (build it from the release's VERSION, SERIES, "
        "NAME or SOURCE):\n" + "\n".join(problems)
    )


def test_the_exceptions_are_below_the_releases_and_still_needed() -> None:
    for where in BELOW_THE_RELEASES:
        assert where.startswith("moe_oracle/model/"), where
        strings = [t for _, t in _code_strings(ROOT / where)]
        assert any(_spellings(r).search(t) for r in RELEASES.values() for t in strings), f"{where}: drop it"


def test_the_checker_sees_a_spelled_version() -> None:
    vllm = RELEASES[Engine.VLLM]
    assert _spellings(vllm).search("vLLM 0.33 builds") and _spellings(vllm).search("vllm-0.33.0")
    assert not _spellings(vllm).search("0.335") and not _spellings(vllm).search("10.33")
