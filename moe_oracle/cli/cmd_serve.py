"""``moe-oracle serve``: print the launch plan, then exec the engine with its argv and environment.

``--dry-run`` prints only. Extra engine arguments go after ``--`` and are appended to the
plan's argv. A plan spanning several nodes or replicas has one process per node: pick it with
``--replica`` and ``--node-rank``; ``${HEAD_NODE_IP}``-style placeholders are filled from the
environment. A missing engine binary is a one-line error with exit code 4.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

import click

from moe_oracle.cli.cmd_plan import emit, plan_options, request_from
from moe_oracle.cli.command import command
from moe_oracle.errors import BadInputError, OracleError, excerpt
from moe_oracle.shell import shell_assign, shell_join

_PLACEHOLDER = re.compile(r"\$\{([A-Z0-9_]+)\}")


def _fill(argv: list[str], marked: tuple[int, ...], env: dict[str, str], placeholders: dict[str, str]) -> list[str]:
    """``argv`` with each placeholder moe-oracle emitted (in the words at ``marked`` only) filled from ``env``;
    a ``${...}`` anywhere else (a model directory's name, an engine argument) is left as it is."""
    out = list(argv)
    for index in marked:
        arg = out[index]
        for name in _PLACEHOLDER.findall(arg):
            value = env.get(name)
            if not value:
                what = placeholders.get(name, "a value the plan needs")
                raise BadInputError(f"{name} is not set ({what})", fix=f"export {name}=<value> and run serve again.")
            arg = arg.replace("${" + name + "}", value)
        out[index] = arg
    return out


#: Spellings of one engine setting (vLLM and SGLang), so ``-dp 4`` is seen to override ``--data-parallel-size 8``.
_SYNONYMS = (
    ("--tensor-parallel-size", "-tp", "--tp-size", "--tp"),
    ("--data-parallel-size", "-dp", "--dp-size", "--dp"),
    ("--pipeline-parallel-size", "-pp", "--pp-size"),
    ("--expert-parallel-size", "--ep-size", "--ep"),
    ("--enable-expert-parallel", "--no-enable-expert-parallel", "-ep"),
)
_CANONICAL = {name: group[0] for group in _SYNONYMS for name in group}


def _flag(token: str) -> str | None:
    """The option ``token`` names, as the engines' parsers read it: ``--tensor_parallel_size`` is
    ``--tensor-parallel-size`` (vLLM's parser turns underscores into dashes), ``--speculative-config.method``
    is ``--speculative-config`` (vLLM's dotted JSON keys), synonyms are one name."""
    if not token.startswith("-") or token in ("-", "--") or token[1:2].isdigit():
        return None
    name = token.split("=", 1)[0]
    dashes = len(name) - len(name.lstrip("-"))
    name = name[:dashes] + name[dashes:].replace("_", "-").split(".", 1)[0]
    return _CANONICAL.get(name, name)


def _meant(name: str, guarded: set[str] | dict[str, str]) -> str | None:
    """The guarded option ``name`` stands for: itself, its ``--no-`` form's option, or the one it abbreviates
    (argparse accepts a unique prefix of a long option, so ``--tensor-parallel 4`` is ``--tensor-parallel-size 4``)."""
    if name in guarded:
        return name
    if name.startswith("--no-") and "--" + name[5:] in guarded:
        return "--" + name[5:]
    if not name.startswith("--") or len(name) < 4:
        return None
    longer = sorted(flag for flag in guarded if flag.startswith(name))
    return longer[0] if longer else None


def _decision_inputs(engine: str) -> tuple[dict[str, str], dict[str, str]]:
    """The engine's flags (and flag prefixes) that set a decision input -> the moe-oracle flag to use instead,
    from the engine's vocabulary (``moe_oracle/releases/<release>/flags.py``), canonical spellings included."""
    from moe_oracle.releases import sglang, vllm

    sglang_flags, vllm_flags = sglang.flags, vllm.flags

    vocabulary = vllm_flags if engine == "vllm" else sglang_flags
    table = dict(vocabulary.DECISION_INPUTS)
    table.update({_CANONICAL[name]: use for name, use in vocabulary.DECISION_INPUTS.items() if name in _CANONICAL})
    return table, dict(getattr(vocabulary, "DECISION_INPUT_PREFIXES", {}))


def _refuse_overrides(planned: list[str], extra: list[str], engine: str) -> None:
    """Engine arguments after ``--`` may add to the plan, never change what it decided or what it decided with
    (exit 2): a flag the plan emitted, or one of the engine's decision inputs (its flags.py ``DECISION_INPUTS``),
    is refused with the moe-oracle flag to use instead."""
    from moe_oracle.releases import vllm

    vllm_flags = vllm.flags

    inputs, prefixes = _decision_inputs(engine)
    decided = {_flag(t) for t in planned} - {None}
    guarded = {flag: inputs.get(flag, "") for flag in decided if flag and flag.startswith("--")} | inputs
    for index, token in enumerate(extra):
        spelled = _flag(token)
        if spelled is None:
            continue
        value = token.partition("=")[2] or (extra[index + 1] if index + 1 < len(extra) else "")
        shown = f"{token.split('=', 1)[0]} {value}".strip() if not value.startswith("-") else token
        if spelled == "--dry-run":
            raise BadInputError(
                "--dry-run after -- is an engine argument (neither engine takes it), and the engine would start",
                fix="put --dry-run before -- (moe-oracle serve MODEL ... --dry-run -- ENGINE ARGS)",
            )
        if spelled == vllm_flags.PLUGIN_CONFIG_FLAG and engine == "vllm" and spelled not in decided:
            if vllm_flags.PLUGIN_CONFIG_KEY in token.partition("=")[2] + token.partition(".")[2] + value:
                raise BadInputError(
                    f"engine argument {excerpt(shown)} after -- configures moe-oracle's plug-in, which the plan "
                    "decided without it",
                    fix="choose the backend with moe-oracle's --moe-backend NAME[:VARIANT] (the plan writes the "
                    f"plug-in's config); other {spelled} keys are fine after --",
                )
            continue
        name = _meant(spelled, guarded)
        use = guarded.get(name, "") if name else next((u for p, u in prefixes.items() if spelled.startswith(p)), None)
        if name is None and use is None:
            continue
        if name == vllm_flags.PLUGIN_CONFIG_FLAG:
            use = "--moe-backend NAME[:VARIANT]"
        mine = name and next((f"{t} {planned[i + 1]}" for i, t in enumerate(planned[:-1]) if _flag(t) == name), None)
        what = (
            f"overrides what the plan decided ({excerpt(mine)})"
            if mine
            else "overrides what the plan decided with (an input of its decision)"
        )
        if not use:
            instead = (
                "change the moe-oracle flag instead (--tp, --dp, --ep, --pp, --moe-backend NAME, --all2all-backend)"
            )
        elif use.startswith("-"):
            instead = f"use moe-oracle's {use} instead (before --)"
        else:
            instead = f"let the plan decide it: {use}"
        raise BadInputError(
            f"engine argument {excerpt(shown)} after -- {what}: the command would run something the plan did not "
            "decide",
            fix=f"{instead}, so that the decision and the command agree",
        )


def _check_module(binary: str, argv: list[str], env: dict[str, str], plan_obj: Any) -> None:
    """For a ``python -m PKG.MOD`` launch, check that interpreter can import PKG before exec (exit 4 if not).

    Without this, a missing engine surfaces as the interpreter's own "No module named ..." after
    exec, with its exit code 1 (the code reserved for internal errors).
    """
    from moe_oracle.launch.model import EngineLaunchError

    if len(argv) < 3 or argv[1] != "-m":
        return
    package = argv[2].split(".")[0]
    probe = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({package!r}) else 3)"
    try:
        done = subprocess.run([binary, "-c", probe], env=env, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineLaunchError(f"cannot start {plan_obj.engine}: {binary} did not answer: {exc}") from None
    if done.returncode != 0:
        raise EngineLaunchError(
            f"cannot start {plan_obj.engine}: {binary} has no module {package!r} ({' '.join(argv[:3])} would fail)",
            fix=f"install {plan_obj.engine}=={plan_obj.engine_version} for that interpreter (pip install "
            f"'moe-oracle[{plan_obj.engine}]'), activate its environment, or run the printed command yourself.",
        )


@command("serve", context_settings={"ignore_unknown_options": False})
@click.argument("model", required=False)
@plan_options
@click.option("--dry-run", is_flag=True, help="Print the plan and the exact command; do not start the engine.")
@click.option("--replica", type=click.IntRange(min=0), default=0, show_default=True, help="Replica to start.")
@click.option("--node-rank", type=click.IntRange(min=0), default=0, show_default=True, help="This node's rank.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON before starting.")
@click.argument("engine_args", nargs=-1, type=click.UNPROCESSED)
def serve(model: str | None, **kw: Any) -> None:
    """Print the plan for MODEL, then start the engine (exec) with the plan's argv and environment.

    Extra engine arguments follow ``--``, e.g. ``moe-oracle serve M --device b200 --dp 8 --ep 8
    --engine vllm -- --served-model-name my-model``.
    """
    from moe_oracle.launch.build import build_plan
    from moe_oracle.launch.model import EngineLaunchError

    dry_run = kw.pop("dry_run")
    replica = kw.pop("replica")
    node_rank = kw.pop("node_rank")
    as_json = kw.pop("as_json")
    extra = list(kw.pop("engine_args"))
    all_reasons = kw.pop("all_reasons", False)
    from moe_oracle.launch.prerequisites import with_prerequisites

    plan_obj = with_prerequisites(build_plan(request_from(model, kw)), None)  # no second plan before a start
    cmd = plan_obj.command_for(replica, node_rank)
    if not as_json:
        emit(plan_obj, as_json, all_reasons=all_reasons)
    try:
        binary, argv, env = _launch(plan_obj, cmd, extra, replica, node_rank, dry_run=dry_run, as_json=as_json)
    except OracleError as exc:
        # with --json the one document on stdout is the error, carrying the plan it refers to
        exc.document = {"plan": plan_obj.to_json()}
        raise
    if as_json:
        emit(plan_obj, as_json, all_reasons=all_reasons)
    if binary is None:
        return  # the dry run: printed, never started
    click.echo(f"exec: {shell_join(argv)}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(binary, argv, env)
    except OSError as exc:
        error = EngineLaunchError(f"cannot start {plan_obj.engine}: exec {binary} failed: {exc}")
        error.document_written = as_json  # the plan document is out: stdout stays that one document
        raise error from None


def _launch(
    plan_obj: Any, cmd: Any, extra: list[str], replica: int, node_rank: int, *, dry_run: bool, as_json: bool
) -> tuple[str | None, list[str], dict[str, str]]:
    """Every check before exec (engine arguments, placeholders, the binary and its module): the binary, argv and
    environment to exec, or ``None`` for the binary after a dry run's line was printed."""
    from moe_oracle.launch.model import EngineLaunchError

    _refuse_overrides(list(cmd.argv), extra, plan_obj.engine)
    env = dict(os.environ)
    env.update(cmd.env_dict)
    argv = list(cmd.argv) + extra
    marked = cmd.placeholder_words
    if dry_run:
        words = " ".join([*(shell_assign(k, v) for k, v in cmd.env), shell_join(argv, placeholder_words=marked)])
        # with --json, stdout is the plan document alone; the human line goes to stderr
        click.echo(f"dry run: would exec (replica {replica}, node rank {node_rank}): {words}", err=as_json)
        return None, argv, env
    argv = _fill(argv, marked, env, plan_obj.placeholders)
    binary = shutil.which(argv[0], path=env.get("PATH"))
    if binary is None:
        raise EngineLaunchError(
            f"cannot start {plan_obj.engine}: {argv[0]!r} is not on PATH",
            fix=f"install {plan_obj.engine}=={plan_obj.engine_version} in this environment (pip install "
            f"'moe-oracle[{plan_obj.engine}]'), activate its environment, or run the printed command yourself.",
        )
    _check_module(binary, argv, env, plan_obj)
    return binary, argv, env
