"""Generate ``docs/``: the report's pages (capability matrix, variants, reason codes) and the CLI page.

Run ``moe-oracle matrix --docs docs`` (or ``python -m moe_oracle.cli.docs [DIR]``). The CLI page
runs the CLI, so the set of files is assembled here, above the report; see
:mod:`moe_oracle.report.docs` for what the pages cover. Tests fail when a committed file differs
from what this module generates.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from moe_oracle.output import ensure_directory, write_text_file
from moe_oracle.report.docs import DOCS_COMMAND, REPORT_FILES, generate_report_docs

CLI_MD = "cli.md"
FILES = (*REPORT_FILES, CLI_MD)


def generate_docs(*, machine: bool = True) -> dict[str, str]:
    """File name -> generated text, for every file under ``docs/`` this module owns (:data:`FILES`);
    ``machine=False`` leaves out the machine-dependent outputs of the CLI page (see :func:`comparable`)."""
    from moe_oracle.cli.examples import render_cli

    return {**generate_report_docs(), CLI_MD: render_cli(DOCS_COMMAND, machine=machine)}


def comparable(text: str) -> str:
    """A generated page as the staleness check compares it (machine-dependent outputs reduced to commands)."""
    from moe_oracle.cli.examples import comparable as reduce

    return reduce(text)


def write_docs(directory: str | Path, generate: Callable[[], dict[str, str]] = generate_docs) -> list[Path]:
    out = ensure_directory(directory, "--docs")
    return [write_text_file(out / name, text, "--docs") for name, text in generate().items()]


def stale(directory: str | Path) -> list[str]:
    """Names of the generated files under ``directory`` that are missing or out of date."""
    out = Path(directory)
    bad = []
    for name, text in generate_docs(machine=False).items():
        path = out / name
        if not path.is_file() or comparable(path.read_text(encoding="utf-8")) != comparable(text):
            bad.append(name)
    return bad


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print("usage: python -m moe_oracle.cli.docs [DIR]   (default: docs)")
        return 0 if args and args[0] in ("-h", "--help") else 2
    for path in write_docs(args[0] if args else "docs"):
        print(f"wrote {path}", file=sys.stderr)
    return 0


__all__ = ["CLI_MD", "FILES", "comparable", "generate_docs", "stale", "write_docs"]

if __name__ == "__main__":
    raise SystemExit(main())
