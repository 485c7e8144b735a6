"""The plug-ins' off switches (``MOE_ORACLE_VLLM_PLUGIN=0``, ``MOE_ORACLE_SGLANG_PLUGIN=0``) seen from a plan.

A plan whose layers moe-oracle's runtime serves relies on the engine's moe-oracle plug-in; exported in the
shell that runs the plan, the switch turns the plug-in off and the engine no longer runs what the plan
decided. The switch is the operator's choice and is kept: ``plan`` and ``serve`` say so on stderr (and in the
JSON's ``warnings``), never silently.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moe_oracle.launch.model import LaunchPlan

#: engine -> its plug-in's switch variable (the plug-ins read the same names: engines/*/plugin.py ENV_SWITCH)
SWITCHES = {"vllm": "MOE_ORACLE_VLLM_PLUGIN", "sglang": "MOE_ORACLE_SGLANG_PLUGIN"}
#: the spellings both plug-ins read as off (engines/vllm/snapshot.py SWITCH_OFF, engines/sglang/plugin.py _OFF)
OFF = ("0", "false", "off", "no")


def plugin_groups(plan: LaunchPlan) -> list[str]:
    """The layer groups of ``plan`` (a :class:`~moe_oracle.launch.model.LaunchPlan`) moe-oracle's plug-in serves,
    from the request the plan hands it: vLLM's ``--additional-config {"moe_oracle": {"backend": ...}}``, SGLang's
    ``MOE_ORACLE_SGLANG_BACKEND`` (with ``SGLANG_PLUGINS`` naming the plug-in); a pin to the engine's own name is
    the engine's."""
    from moe_oracle.releases import sglang, vllm

    sglang_flags, vllm_flags = sglang.flags, vllm.flags

    argv, env = list(plan.argv), plan.env
    request: object = None
    if plan.engine == "vllm":
        for word, value in itertools.pairwise(argv):
            if word == vllm_flags.PLUGIN_CONFIG_FLAG:
                config = _json(value)
                section = config.get(vllm_flags.PLUGIN_CONFIG_KEY) if isinstance(config, dict) else None
                request = section.get("backend") if isinstance(section, dict) else None
    elif env.get("SGLANG_PLUGINS") == sglang_flags.PLUGIN_NAME:
        text = env.get("MOE_ORACLE_SGLANG_BACKEND", "")
        request = _json(text) if text.startswith("{") else text
    names = [g["name"] for g in plan.groups if g.get("chosen")]
    if isinstance(request, str) and request:
        return names
    if isinstance(request, dict):
        return [name for name, pin in request.items() if pin != plan.engine]
    return []


def _json(text: str) -> object:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def plugin_off_note(plan: LaunchPlan, environ: Mapping[str, str]) -> str | None:
    """The warning for a plan that relies on the plug-in while ``environ`` switches it off, else None."""
    name = SWITCHES.get(plan.engine)
    value = environ.get(name or "", None)
    if name is None or value is None or value.strip().lower() not in OFF:
        return None
    groups = plugin_groups(plan)
    if not groups:
        return None
    served = "layer group(s) " + ", ".join(groups)
    own = "vLLM" if plan.engine == "vllm" else "SGLang"
    consequence = (
        f"{own} will not run moe-oracle's runtime for them, and what it runs instead is not this plan's decision"
    )
    return (
        f"{name}={value} is exported in this shell: moe-oracle's {own} plug-in is off, so it will not serve "
        f"{served} as this plan says ({consequence}); unset {name} to run the plan, or keep it on purpose"
    )
