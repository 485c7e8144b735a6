"""CLI entry: the command group and the one place errors become exit codes.

Every failure prints one line, ``error: <message>``, to stderr and exits with a documented
code (see :class:`moe_oracle.errors.ExitCode`); tracebacks only with ``MOE_ORACLE_DEBUG=1``.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import ClassVar

import click

from moe_oracle.cli.streams import discard_pending_output, is_output_failure, prepare_streams, say
from moe_oracle.errors import MAX_MESSAGE_CHARS, ExitCode, OracleError, bounded_line
from moe_oracle.version import __version__


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (keeps start-up fast)."""

    COMMANDS: ClassVar[dict[str, tuple[str, str]]] = {
        "model": ("moe_oracle.cli.cmd_model", "model"),
        "select": ("moe_oracle.cli.cmd_select", "select"),
        "matrix": ("moe_oracle.cli.cmd_matrix", "matrix"),
        "probe": ("moe_oracle.cli.cmd_probe", "probe"),
        "list": ("moe_oracle.cli.cmd_list", "list_"),
        "accuracy": ("moe_oracle.cli.cmd_accuracy", "accuracy"),
        "plan": ("moe_oracle.cli.cmd_plan", "plan"),
        "serve": ("moe_oracle.cli.cmd_serve", "serve"),
        "compare": ("moe_oracle.cli.cmd_compare", "compare"),
        "tune": ("moe_oracle.cli.cmd_tune", "tune"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (mod, _) in self.COMMANDS.items() if _exists(mod)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = self.COMMANDS.get(name)
        if target is None or not _exists(target[0]):
            return None
        import importlib

        return getattr(importlib.import_module(target[0]), target[1])


def _exists(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="moe-oracle")
def cli() -> None:
    """Decide, explain and run the fused mega-MoE backend for a model on a cluster.

    \b
    Exit codes:
      0    success
      1    internal error (a bug: please report it)
      2    bad input (one line on stderr: the value, the rule, the fix)
      3    --moe-backend override refused
      4    engine could not be started (serve)
      5    replay differs from the record (select --replay)
      6    generated files are stale (plan --examples --check)
      7    the deployment does not fit in memory (select, plan, serve)
      130  interrupted (Ctrl-C)
    """


#: The arguments of the command running now (a fix that rewrites the user's own command reads them).
_INVOKED: list[str] = []


def invoked_args() -> list[str]:
    """The command line being run, without the program name (``moe-oracle``)."""
    return list(_INVOKED)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    _INVOKED[:] = args
    as_json = _wants_json(args[: args.index("--")] if "--" in args else args)
    if prepare_streams():
        _fail(
            "standard output is closed (>&-): the result would go nowhere",
            code=ExitCode.BAD_INPUT,
            fix="redirect it instead of closing it (> FILE, or > /dev/null to discard it)",
        )
        return int(ExitCode.BAD_INPUT)
    if not args:  # a bare `moe-oracle` is asking what it can do: the help, not a usage error
        args = ["--help"]
    try:
        # standalone_mode=False: click returns ctx.exit() codes instead of calling sys.exit
        from moe_oracle.cli.site_defaults import default_map

        site = default_map() if args[:1] not in (["--help"], ["-h"], ["--version"]) else {}
        code = cli.main(args=args, prog_name="moe-oracle", standalone_mode=False, default_map=site)
        sys.stdout.flush()  # a full or read-only target fails here, inside the handlers, not at exit
    except OracleError as exc:
        _fail(exc.one_line(), as_json and not exc.document_written, exc.exit_code, exc)
        return int(exc.exit_code)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns Ctrl-C into Abort; either way: quiet, and the shells' 128 + SIGINT
        return int(ExitCode.INTERRUPTED)
    except click.ClickException as exc:
        hint = ""
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            hint = f" (see: {ctx.command_path} --help)"
        text = bounded_line(exc.format_message(), MAX_MESSAGE_CHARS)
        if "is not in the range" in text:
            text += " Fix: pass a value inside that range"
        _fail(text + hint, as_json, ExitCode.BAD_INPUT)
        return int(ExitCode.BAD_INPUT)
    except BrokenPipeError:
        return _closed_stdout()
    except Exception as exc:
        if is_output_failure(exc):
            discard_pending_output()
            _fail(
                f"cannot write the output: {getattr(exc, 'strerror', None) or exc}",
                code=ExitCode.BAD_INPUT,
                fix="write to a target with free space that you may write to (> FILE on another file system)",
            )
            return int(ExitCode.BAD_INPUT)
        if os.environ.get("MOE_ORACLE_DEBUG"):
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} (set MOE_ORACLE_DEBUG=1 for a traceback and report it)",
            as_json,
            ExitCode.INTERNAL,
        )
        return int(ExitCode.INTERNAL)
    return int(code) if isinstance(code, int) else int(ExitCode.OK)


def _wants_json(args: list[str]) -> bool:
    """``--json``, or ``--format json`` (``matrix``): stdout is then one JSON document, on failure too."""
    pairs = itertools.pairwise(args)  # (no pairs for a bare `moe-oracle`: it prints the help)
    return "--json" in args or "--format=json" in args or any(a == "--format" and b == "json" for a, b in pairs)


def _closed_stdout() -> int:
    """The reader of stdout went away (``| head``): exit quietly, and keep the interpreter's final
    flush from raising again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return int(ExitCode.OK)


def _fail(
    message: str, as_json: bool = False, code: int = 1, exc: OracleError | None = None, fix: str | None = None
) -> None:
    """``error: <message>`` on stderr; with ``--json`` also the error document on stdout, so that stdout
    is exactly one JSON document whatever happened: ``{"error", "exit_code", "kind", "message", "fix"}``.
    A closed or full stderr loses the line, never the exit code."""
    if fix:
        message = f"{message} Fix: {fix}"
    say(f"error: {message}")
    if as_json:
        import json

        doc = {
            "error": message,
            "exit_code": int(code),
            "kind": type(exc).__name__ if exc is not None else ("InternalError" if code == 1 else "UsageError"),
            "message": bounded_line(exc.message, MAX_MESSAGE_CHARS) if exc is not None else message,
            "fix": bounded_line(exc.fix, MAX_MESSAGE_CHARS) if exc is not None and exc.fix else None,
        }
        if exc is not None and exc.document:
            doc.update({k: v for k, v in exc.document.items() if k not in doc})
        if not say(json.dumps(doc, indent=2), err=False):
            discard_pending_output()
