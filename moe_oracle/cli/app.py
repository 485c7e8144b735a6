"""CLI entry: the command group and the one place errors become exit codes.

Every failure prints one line, ``error: <message>``, to stderr and exits with a documented
code (see :class:`moe_oracle.errors.ExitCode`); tracebacks only with ``MOE_ORACLE_DEBUG=1``.
"""

from __future__ import annotations

import os
import sys
from typing import ClassVar

import click

from moe_oracle import __version__
from moe_oracle.errors import ExitCode, OracleError


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

    Exit codes: 0 success, 2 bad input, 3 --moe-backend override refused, 5 replay differs,
    1 internal error.
    """


def main(argv: list[str] | None = None) -> int:
    try:
        # standalone_mode=False: click returns ctx.exit() codes instead of calling sys.exit
        code = cli.main(args=argv, prog_name="moe-oracle", standalone_mode=False)
    except OracleError as exc:
        _fail(exc.one_line())
        return int(exc.exit_code)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.exceptions.Abort:
        _fail("aborted")
        return int(ExitCode.BAD_INPUT)
    except click.ClickException as exc:
        hint = ""
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            hint = f" (see: {ctx.command_path} --help)"
        _fail(" ".join(exc.format_message().split()) + hint)
        return int(ExitCode.BAD_INPUT)
    except BrokenPipeError:
        return int(ExitCode.OK)
    except Exception as exc:
        if os.environ.get("MOE_ORACLE_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set MOE_ORACLE_DEBUG=1 for a traceback and report it)")
        return int(ExitCode.INTERNAL)
    return int(code) if isinstance(code, int) else int(ExitCode.OK)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.stderr.flush()
