"""#32 item 7: an unknown architecture gets one short line naming it, the nearest families that read its config,
and a fix that works: the user's command with the manual flags and ``--checkpoint`` (two commands to a plan)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.cli.runner import cli

QWEN = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "Qwen--Qwen3-235B-A22B-FP8"


@pytest.fixture
def foo_checkpoint(tmp_path):
    config = json.loads((QWEN / "config.json").read_text())
    config.update(architectures=["FooMoeForCausalLM"], model_type="foo_moe")
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


@pytest.mark.parametrize("command", ["plan", "select"])
def test_unknown_architecture_error_is_short_and_its_fix_runs(foo_checkpoint, command):
    args = [command, foo_checkpoint, "--device", "h200", "--engine", "vllm"]
    first = cli(*args)
    assert first.code == 2
    line = first.err.strip()
    assert line.count("\n") == 0 and len(line) < 800, line
    message, _, fix = line.partition(" Fix: ")
    assert "FooMoeForCausalLM" in message and "foo_moe" in message and "Qwen3MoeForCausalLM" in message
    assert "supported architectures" not in message  # not the whole catalogue
    command_line = fix[fix.index("moe-oracle ") :]
    words = shlex.split(command_line)[1:]
    assert ("--checkpoint" in words) == (command == "plan")
    second = cli(*words)
    assert second.code == 0, second.err
    if command == "plan":
        assert f"vllm serve {foo_checkpoint}" in second.out
        assert "--hidden-size 4096" in command_line and "--num-experts 128" in command_line


def test_a_manual_plan_without_checkpoint_names_the_flag():
    r = cli(
        "plan",
        *("--hidden-size", "4096", "--moe-intermediate-size", "1536", "--num-experts", "128", "--top-k", "8"),
        *("--weight-format", "fp8_block"),
        *("--device", "h200", "--engine", "vllm"),
    )
    assert r.code == 2 and "--checkpoint" in r.err
