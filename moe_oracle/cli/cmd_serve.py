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
import sys
from typing import Any

import click

from moe_oracle.cli.cmd_plan import emit, plan_options, request_from
from moe_oracle.errors import BadInputError

_PLACEHOLDER = re.compile(r"\$\{([A-Z0-9_]+)\}")


def _fill(argv: list[str], env: dict[str, str], placeholders: dict[str, str]) -> list[str]:
    out = []
    for arg in argv:
        for name in _PLACEHOLDER.findall(arg):
            value = env.get(name)
            if not value:
                what = placeholders.get(name, "a value the plan needs")
                raise BadInputError(f"{name} is not set ({what})", fix=f"export {name}=<value> and run serve again.")
            arg = arg.replace("${" + name + "}", value)
        out.append(arg)
    return out


@click.command("serve", context_settings={"ignore_unknown_options": False})
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
    --engine vllm -- --max-model-len 8192``.
    """
    from moe_oracle.plan.build import build_plan
    from moe_oracle.plan.model import EngineLaunchError

    dry_run = kw.pop("dry_run")
    replica = kw.pop("replica")
    node_rank = kw.pop("node_rank")
    as_json = kw.pop("as_json")
    extra = list(kw.pop("engine_args"))
    plan_obj = build_plan(request_from(model, kw))
    cmd = plan_obj.command_for(replica, node_rank)
    emit(plan_obj, as_json)
    env = dict(os.environ)
    env.update(cmd.env_dict)
    argv = list(cmd.argv) + extra
    if dry_run:
        words = [f"{k}={v}" for k, v in cmd.env] + argv
        click.echo(f"dry run: would exec (replica {replica}, node rank {node_rank}): {' '.join(words)}")
        return
    argv = _fill(argv, env, plan_obj.placeholders)
    binary = shutil.which(argv[0], path=env.get("PATH"))
    if binary is None:
        raise EngineLaunchError(
            f"cannot start {plan_obj.engine}: {argv[0]!r} is not on PATH",
            fix=f"install {plan_obj.engine}=={plan_obj.engine_version} in this environment (pip install "
            f"'moe-oracle[{plan_obj.engine}]'), activate its environment, or run the printed command yourself.",
        )
    click.echo(f"exec: {' '.join(argv)}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(binary, argv, env)
    except OSError as exc:
        raise EngineLaunchError(f"cannot start {plan_obj.engine}: exec {binary} failed: {exc}") from None
