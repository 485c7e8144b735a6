"""The README's first lines and its Python example stay true."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block and text.index("```bash") < 40
    lines = block.group(1).strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("pip install . && moe-oracle select ")
    assert lines[1].endswith("python -m pytest -q -n auto")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    # #32: the second command needs PyPI only (an unreachable extra index makes pip retry for minutes); it is
    # exactly CI's install, and the README's prose names the CPU wheel index as an addition where it is reachable
    install = lines[1].split(" && ")[0].replace("pip install", "python3 -m pip install --quiet")
    assert "--extra-index-url" not in lines[1] and "--index-url" not in lines[1]
    assert install in ci and "python3 -m pytest -q -n auto" in ci
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text  # named, as an option


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks
    for code in blocks:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        assert float(p.stdout.strip().splitlines()[-1]) < 3e-3


def test_readme_compare_example_is_current():
    """Every ``$ moe-oracle compare ...`` example in the README prints exactly what is shown."""
    import shlex

    from click.testing import CliRunner

    from moe_oracle.cli.app import cli

    blocks = re.findall(r"```text\n\$ (moe-oracle compare [^\n]*)\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README shows a compare example"
    for command, shown in blocks:
        result = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert result.exit_code == 0, result.output
        assert result.output == shown, f"README example is stale; regenerate the output of: {command}"


def test_readme_unknown_architecture_example_is_two_commands(tmp_path):
    """#32 Done when: from the README to a working plan for an unknown MoE architecture in two commands. The
    README's example runs literally in a directory holding ``./foo-moe/config.json`` (Qwen3-MoE's keys under an
    invented architecture): the first exits 2 with the line shown, the second is that line's fix and plans."""
    import json
    import os
    import shlex

    text = README.read_text(encoding="utf-8")
    block = re.search(r"```text\n(\$ moe-oracle plan \./foo-moe .*?)```", text, re.S)
    assert block, "the README shows the unknown-architecture example"
    lines = block.group(1).splitlines()
    commands = [i for i, line in enumerate(lines) if line.startswith("$ ")]
    assert len(commands) == 2
    qwen = README.parent / "tests" / "fixtures" / "models" / "Qwen--Qwen3-235B-A22B-FP8" / "config.json"
    config = json.loads(qwen.read_text(encoding="utf-8"))
    config.update(architectures=["FooMoeForCausalLM"], model_type="foo_moe")
    (tmp_path / "foo-moe").mkdir()
    (tmp_path / "foo-moe" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    # MOE_ORACLE_DEFAULTS empty: no site defaults file (not even one at the XDG place) changes the answers
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOE_ORACLE")} | {
        "COLUMNS": "120",
        "MOE_ORACLE_DEFAULTS": "",
    }

    def run(command: str) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-m", "moe_oracle", *shlex.split(command)[1:]]
        return subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False)

    first, second = lines[commands[0]][2:], lines[commands[1]][2:]
    refused = run(first)
    assert refused.returncode == 2 and refused.stderr.strip() == lines[commands[0] + 1], refused.stderr
    assert refused.stderr.strip().endswith(" " + second)  # the second command is the printed fix
    planned = run(second)
    assert planned.returncode == 0, planned.stderr[-2000:]
    from tests.operator.test_docs_memory import unmatched

    shown = lines[commands[1] + 1 :]
    assert unmatched(shown, planned.stdout.splitlines()) is None, shown  # every line shown, in order
