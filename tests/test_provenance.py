"""Every source the package cites resolves for a user: a public URL or a page under docs/ (issue 20).

The project's own reference notes (``shared/reference/*.md``, ``seeds/``) do not ship, so neither the generated
docs, the README, nor what the commands print may cite them; a cited ``docs/<page>`` must exist.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from moe_oracle import releases
from tests.cli.runner import cli
from tests.engines.wheels import find_wheel

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = re.compile(
    r"shared/reference|seeds/\d|\b(?:vllm-0\.33|kernels|h200|field-2026-12|families-2026-12|users|models)\.md\b"
)
DOCS_PAGE = re.compile(r"\bdocs/([\w./-]+\.(?:md|html))")
URL = re.compile(r"https?://[^\s)\"'`<>,;|\\]+")
CHECKS = json.loads((ROOT / "tests" / "provenance_checks.json").read_text(encoding="utf-8"))
#: Release wheel of each prefix that is checked file by file: (prefix, dist, version, path inside the wheel).
WHEEL_PREFIXES = tuple(
    (f"{base}/", r.engine.value, r.version, f"{r.engine.value}/")
    for r in releases.RELEASES.values()
    for base in (r.source, r.source.replace("/blob/", "/tree/"))
)


def _shipped_texts() -> dict[str, str]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "docs").rglob("*.html"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files}


def _problems(name: str, text: str) -> list[str]:
    out = [f"{name}: cites {m.group(0)!r}" for m in INTERNAL.finditer(text)]
    out += [
        f"{name}: cites missing docs/{m.group(1)}"
        for m in DOCS_PAGE.finditer(text)
        if not (ROOT / "docs" / m.group(1)).exists()
    ]
    return out


def test_docs_and_readme_cite_only_what_ships():
    problems = [p for name, text in _shipped_texts().items() for p in _problems(name, text)]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize(
    "args",
    [
        ("select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "h200", "--engine", "vllm", "--all-reasons"),
        ("select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "mi355x", "--engine", "vllm", "--json"),
        ("select", "zai-org/GLM-5-FP8", "--device", "b200", "--dp", "8", "--ep", "8", "--json"),
        ("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "h200", "--engine", "vllm", "--json"),
        ("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "mi355x", "--engine", "sglang", "--json"),
        (
            "plan",
            "zai-org/GLM-5-FP8",
            "--device",
            "h200",
            "--nodes",
            "2",
            "--dp",
            "16",
            "--ep",
            "16",
            "--engine",
            "vllm",
        ),
        ("list", "builds"),
    ],
)
def test_command_output_cites_only_what_ships(args):
    r = cli(*args)
    assert r.code == 0, r.err
    problems = _problems(" ".join(args), r.out + r.err)
    assert not problems, "\n".join(problems[:20])


def _published_urls() -> dict[str, str]:
    """Every URL in what ships or is printed from: the package and backends (code and data), docs/, the README
    and the benchmarks; URL -> one file that cites it."""
    roots = [ROOT / "moe_oracle", ROOT / "backends", ROOT / "docs", ROOT / "benchmarks"]
    files = [ROOT / "README.md"] + [
        p for r in roots for p in sorted(r.rglob("*")) if p.suffix in (".py", ".json", ".md", ".html", ".sh")
    ]
    found: dict[str, str] = {}
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in URL.finditer(text):
            url = m.group(0).rstrip(".:")
            found.setdefault(url, str(path.relative_to(ROOT)))
        for url in _release_citations(path, text):
            found.setdefault(url, str(path.relative_to(ROOT)))
    return found


#: A citation built on a release's source tag in an f-string: ``f"{SOURCE}/<path>#L<a>-L<b>"``.
_TAGGED = re.compile(r"\{([\w.]+)\}(/[^\s\"'`)<>,;|\\{}]*)")


def _release_citations(path: Path, text: str) -> list[str]:
    """The URLs ``path``'s f-strings cite through a release's ``SOURCE`` (its package directory at the release
    tag), resolved: inside a release folder ``SOURCE`` is that release's; elsewhere the name says which
    (``vllm_release.SOURCE``, ``SGLANG_SRC``, or ``release.SOURCE`` with the module's ``... import vllm as
    release``); ``SOURCE_TREE`` / ``VLLM_TREE`` are the same directories as trees."""
    if path.suffix != ".py":
        return []
    by_name = {"vllm": releases.vllm.RELEASE, "sglang": releases.sglang.RELEASE}
    folders = {r.__name__.rsplit(".", 1)[-1]: r.RELEASE for r in (releases.vllm, releases.sglang)}
    parts = path.relative_to(ROOT).parts
    own = folders.get(parts[2]) if parts[:2] == ("moe_oracle", "releases") and len(parts) > 3 else None
    imported = re.search(r"from moe_oracle\.releases import (\w+) as release\b", text)
    out = []
    for m in _TAGGED.finditer(text):
        name = m.group(1)
        tree = name.endswith("_TREE")
        name = name.replace("SOURCE_TREE", "SOURCE").replace("_TREE", "_SRC")
        engine = {"VLLM_SRC": "vllm", "vllm_release.SOURCE": "vllm", "SGLANG_SRC": "sglang"}.get(name)
        engine = engine or ("sglang" if name == "sglang_release.SOURCE" else None)
        release = by_name[engine] if engine else None
        if release is None and name in ("SOURCE", "release.SOURCE"):
            release = own or (by_name.get(imported.group(1)) if imported else None)
        if release is not None and not m.group(2).endswith("/"):  # not a docstring's f"{SOURCE}/<path>"
            base = release.source.replace("/blob/", "/tree/") if tree else release.source
            out.append((base + m.group(2)).rstrip(".:"))
    return out


def test_every_published_url_was_checked():
    """A URL moe-oracle prints or writes is listed in tests/provenance_checks.json with how it was checked, or
    lies under a prefix whose files are checked against the release wheels (below)."""
    listed = {entry["url"] for entry in CHECKS["urls"]}
    prefixes = tuple(entry["prefix"] for entry in CHECKS["prefixes"])
    unchecked = [
        f"{url} (in {where})"
        for url, where in _published_urls().items()
        if url not in listed and not url.startswith(prefixes)
    ]
    assert not unchecked, "record how each was checked in tests/provenance_checks.json:\n" + "\n".join(unchecked)


def test_no_checked_url_is_stale():
    """Every URL of the record is still cited (a removed citation leaves the record too)."""
    published = _published_urls()
    assert not [e["url"] for e in CHECKS["urls"] if e["url"] not in published]


def _wheel(dist: str, version: str) -> zipfile.ZipFile | None:
    path = find_wheel(dist, version)
    return zipfile.ZipFile(path) if path else None


@pytest.mark.parametrize("prefix,dist,version,inside", WHEEL_PREFIXES)
def test_release_source_citations_resolve_in_the_wheel(prefix: str, dist: str, version: str, inside: str):
    """Each cited file of an engine release is in that release's wheel, and each #L anchor within the file."""
    wheel = _wheel(dist, version)
    if wheel is None:
        pytest.skip(f"{dist}-{version} wheel not present (pip download {dist}=={version} --no-deps)")
    names = set(wheel.namelist())
    cited = [url for url in _published_urls() if url.startswith(prefix)]
    assert cited or "tree" in prefix
    problems = []
    for url in cited:
        path, _, anchor = url[len(prefix) :].partition("#")
        member = inside + path.rstrip("/")
        if "/tree/" in prefix or "." not in member.rsplit("/", 1)[-1]:  # a directory (or the base of f-strings)
            if not any(n.startswith(member + "/") for n in names):
                problems.append(f"{url}: no directory {member} in the {dist} {version} wheel")
            continue
        if member not in names:
            problems.append(f"{url}: no file {member} in the {dist} {version} wheel")
            continue
        lines = wheel.read(member).decode("utf-8", errors="replace").count("\n") + 1
        for number in re.findall(r"L(\d+)", anchor):
            if int(number) > lines:
                problems.append(f"{url}: line {number} past the end of {member} ({lines} lines)")
    assert not problems, "\n".join(problems)
