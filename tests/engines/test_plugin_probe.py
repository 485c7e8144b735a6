"""``moe-oracle probe --engine``: would the engine load moe-oracle's plug-in here (issue #29 item 5, D8)?"""

from __future__ import annotations

import json

from moe_oracle.engines.plugin_probe import LOADERS, probe_note, probe_plugin, start_line
from moe_oracle.rules import Engine
from tests.cli.runner import cli


def test_this_environment_has_the_entry_points_but_no_engine() -> None:
    """The test environment installs moe-oracle (both entry points) and neither engine: not loaded, and why."""
    for engine in (Engine.VLLM, Engine.SGLANG):
        found = probe_plugin(engine, {})
        assert found.entry_point is not None and found.entry_point.startswith("moe_oracle = moe_oracle.engines.")
        assert found.target_found and found.group == LOADERS[engine].group
        assert not found.loads and found.engine_version is None
        assert "is not installed in this Python environment" in found.line()


def test_the_engines_allow_lists_as_each_engine_reads_them() -> None:
    sgl = {
        "": True,
        "moe_oracle": True,
        "other, moe_oracle": True,
        "other": False,
    }
    for raw, allowed in sgl.items():
        found = probe_plugin(Engine.SGLANG, {"SGLANG_PLUGINS": raw})
        assert any("does not name 'moe_oracle'" in p for p in found.problems) == (not allowed), raw
    vllm = {"moe_oracle": True, "a,moe_oracle": True, "a, moe_oracle": False, "": False}  # vLLM does not strip
    for raw, allowed in vllm.items():
        found = probe_plugin(Engine.VLLM, {"VLLM_PLUGINS": raw})
        assert any("does not name 'moe_oracle'" in p for p in found.problems) == (not allowed), raw
    off = probe_plugin(Engine.SGLANG, {"MOE_ORACLE_SGLANG_PLUGIN": "0"})
    assert any("MOE_ORACLE_SGLANG_PLUGIN=0 turns the plug-in off" in p for p in off.problems)


def test_cli_exits_2_with_one_line_and_json() -> None:
    out = cli("probe", "--engine", "sglang")
    assert out.code == 2 and len(out.out.strip().splitlines()) == 1 and "NOT loaded" in out.out
    out = cli("probe", "--engine", "vllm", "--json")
    data = json.loads(out.out)
    assert out.code == 2 and data["group"] == "vllm.general_plugins" and data["loads"] is False


def test_plans_that_rely_on_the_plugin_print_the_check() -> None:
    from moe_oracle.inputs import DeploymentFlags
    from moe_oracle.launch.build import PlanRequest, build_plan

    for engine in (Engine.SGLANG, Engine.VLLM):
        p = build_plan(
            PlanRequest(
                model="tests/fixtures/models/Qwen--Qwen3-30B-A3B",
                flags=DeploymentFlags(device="h200" if engine is Engine.VLLM else "b200", dp=8, ep=8),
                engine=engine,
            )
        )
        env = dict(p.commands[0].env)
        argv = " ".join(p.commands[0].argv)
        if "SGLANG_PLUGINS" in env or "moe_oracle" in argv:
            assert probe_note(engine) in p.notes
    assert "moe-oracle probe --engine sglang" in probe_note(Engine.SGLANG)
    assert start_line(Engine.SGLANG, "0.5.23", "x").startswith("moe-oracle ")
