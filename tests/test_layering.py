"""The floors of ``moe_oracle/``: no import runs back up, and no two modules import each other.

Read from the source (``ast``), every ``import`` counts, also one inside a function: a lazy import
that goes up a floor or closes a circle is still a dependency a reader has to follow. Imports by
string (``importlib``, entry points) are not seen here; they are how the core reaches the backends.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "moe_oracle"

#: Bottom to top. A module may import its own floor and the floors below, never one above. The key is
#: the first name under ``moe_oracle`` (a sub-package or a top-level module); ``""`` is the package itself,
#: the front door above everything (nothing imports it; ``__version__`` lives in ``moe_oracle.version``).
FLOORS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset(members.split(" ")))
    for name, members in (
        (
            "vocabulary",
            "data errors hardware jsonfile model numerics output presets rules shell software spec terminal_text "
            "validation version",
        ),
        ("declarations and inputs", "cost inputs registry releases"),
        ("decision", "decide"),
        ("uses of the decision", "answers engines fit kernels launch probe_report report runtime tune"),
        ("command line", "__main__ api cli"),
        # the package itself: its public names (moe_oracle.select, ...) are loaded by name on first use
        ("front door", ""),
    )
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the ``moe_oracle`` modules it imports (a name imported from a package counts as its
    submodule when it is one)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("moe_oracle") and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def _key(module: str) -> str:
    """The first name under ``moe_oracle`` (``""`` for the package itself)."""
    return module.split(".")[1] if "." in module else ""


def _floor(module: str) -> int:
    key = _key(module)
    for i, (_, members) in enumerate(FLOORS):
        if key in members:
            return i
    raise AssertionError(f"{module}: not on any floor of tests/test_layering.py FLOORS; add '{key}' to one")


def test_every_module_is_on_a_floor():
    for module in _modules():
        _floor(module)


def test_no_import_runs_up_a_floor():
    graph = _imports(_modules())
    upward = [
        f"{m} ({FLOORS[_floor(m)][0]}) imports {t} ({FLOORS[_floor(t)][0]})"
        for m, targets in sorted(graph.items())
        for t in sorted(targets)
        if _floor(t) > _floor(m)
    ]
    assert not upward, "imports that run up a floor:\n" + "\n".join(upward)


def test_vocabulary_never_imports_the_decision_or_its_uses():
    graph = _imports(_modules())
    above = ("decide", "engines", "releases", "cli", "report", "runtime", "launch", "api", "fit", "answers")
    for m, targets in graph.items():
        if _key(m) in ("rules", "spec", "model", "numerics"):
            bad = sorted(t for t in targets if _key(t) in above)
            assert not bad, f"{m} imports {bad}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    cycles = _cycles(_imports(_modules()))
    assert not cycles, "modules that import each other (directly or around a circle): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_checker_sees_a_circle_and_an_upward_import():
    graph = {"moe_oracle.cost.a": {"moe_oracle.cost.b"}, "moe_oracle.cost.b": {"moe_oracle.cost.a"}}
    assert _cycles(graph) == [["moe_oracle.cost.a", "moe_oracle.cost.b"]]
    assert _floor("moe_oracle.decide.selection") > _floor("moe_oracle.rules.variant")
    assert "moe_oracle.cost.active_experts" in _imports(_modules())["moe_oracle.cost.model"]
