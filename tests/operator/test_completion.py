"""#32 item 11: shell completion works as documented (click's completion, with device names), and a bare
moe-oracle prints its help."""

from __future__ import annotations

from tests.cli.runner import cli


def test_bash_completion_script_and_completions():
    script = cli(env={"_MOE_ORACLE_COMPLETE": "bash_source"})
    assert script.code == 0 and "_moe_oracle_completion" in script.out
    commands = cli(env={"_MOE_ORACLE_COMPLETE": "bash_complete", "COMP_WORDS": "moe-oracle pl", "COMP_CWORD": "1"})
    assert "plan" in commands.out.split()[0].split(",") or "plan" in commands.out
    devices = cli(
        env={"_MOE_ORACLE_COMPLETE": "bash_complete", "COMP_WORDS": "moe-oracle plan --device gb", "COMP_CWORD": "3"}
    )
    assert "gb200" in devices.out and "h200" not in devices.out


def test_bare_moe_oracle_prints_help():
    r = cli()
    assert r.code == 0 and "Usage: moe-oracle" in r.out and r.err == ""
