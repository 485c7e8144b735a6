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
    assert lines[1].endswith("python -m pytest -q")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    # #32: the second command needs PyPI only (an unreachable extra index makes pip retry for minutes); it is
    # exactly CI's install, and the README's prose names the CPU wheel index as an addition where it is reachable
    install = lines[1].split(" && ")[0].replace("pip install", "python3 -m pip install --quiet")
    assert "--extra-index-url" not in lines[1] and "--index-url" not in lines[1]
    assert install in ci and "python3 -m pytest -q" in ci
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
