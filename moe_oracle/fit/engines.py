"""The engines a plan launches, and their own layout rules."""

from __future__ import annotations

import importlib
from typing import Any

from moe_oracle.errors import BadInputError
from moe_oracle.inputs import ENGINE_RELEASE_PROFILE
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

#: The engine release each plan targets by default (a named software profile).
RELEASE_PROFILE = {Engine(name): profile for name, profile in ENGINE_RELEASE_PROFILE.items()}
PLAN_ENGINES = (Engine.VLLM, Engine.SGLANG)


def engine_module(engine: Engine) -> Any:
    if engine not in PLAN_ENGINES:
        raise BadInputError(f"--engine {engine.value} has no launch plan", fix="use --engine vllm or --engine sglang.")
    return importlib.import_module(f"moe_oracle.engines.{engine.value}.plan")


def check_engine_layout(engine: Engine, deployment: Deployment) -> None:
    """The engine's own layout rules (vLLM: EP is every TP x DP rank or none), for every command alike: a layout
    the engine cannot launch is exit 2 for ``select --engine vllm`` as for ``plan``. No rules for ``none``."""
    if engine in PLAN_ENGINES:
        engine_module(engine).check_layout(deployment)
