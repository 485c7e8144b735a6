"""Every write path with a full, read-only, missing or closed target, or a stream that is not UTF-8: its
exit code and one line, never a traceback (issue 22, "Readers and writers that still crash")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moe_oracle.output import OutputError, write_text_file
from tests.cli.runner import cli

SELECT = ["select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8"]
MATRIX = ["matrix", "--models", "zai-org/GLM-5-FP8", "--devices", "h200"]
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def _shell(command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m moe_oracle`` under a shell redirection (``> /dev/full``, ``2>&-``)."""
    full = {k: v for k, v in os.environ.items() if k not in ("MOE_ORACLE_DEBUG", "PYTHONIOENCODING")}
    full.update(env or {})
    return subprocess.run(
        ["bash", "-c", f"{sys.executable} -m moe_oracle {command}"],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def _one_error_line(err: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err


@needs_dev_full
@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_stdout_on_a_full_device_is_exit_2_one_line(extra):
    done = _shell(" ".join(SELECT + extra) + " > /dev/full")
    assert done.returncode == 2, done.stderr
    _one_error_line(done.stderr)
    assert "cannot write the output" in done.stderr and "No space left" in done.stderr


def test_closed_stderr_keeps_the_exit_code():
    assert _shell("select nope 2>&-").returncode == 2
    assert _shell(" ".join(SELECT) + " 2>&- > /dev/null").returncode == 0


def test_closed_stdout_is_one_line_and_exit_2():
    done = _shell(" ".join(SELECT) + " >&-")
    assert done.returncode == 2
    _one_error_line(done.stderr)
    assert "standard output is closed" in done.stderr
    assert _shell(" ".join(SELECT) + " >&- 2>&-").returncode == 2


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_stream_that_is_not_utf8_escapes_the_glyphs(encoding):
    done = _shell(" ".join(MATRIX), env={"PYTHONIOENCODING": encoding})
    assert done.returncode == 0, done.stderr
    assert "\\u2605" in done.stdout  # the legend's star, escaped rather than a crash


def test_a_lone_surrogate_in_a_config_prints_on_one_line(tmp_path):
    config = json.loads(
        (Path(__file__).parents[2] / "moe_oracle/presets/zai-org--GLM-5-FP8/config.json").read_text("utf-8")
    )
    config["architectures"] = ["GlmMoeDsaForCausalLM\ud800"]
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    done = cli("select", str(tmp_path), "--device", "h200", "--dp", "8", "--ep", "8")
    assert done.code in (0, 2), done.err
    header = done.out.splitlines()[0] if done.code == 0 else done.err
    assert "\\ud800" in header and "Traceback" not in done.err


@pytest.mark.parametrize(
    "args",
    [
        ["matrix", "--docs", "/dev/full"],
        ["matrix", "--docs", "/proc/moe-oracle-x"],
        ["plan", "--examples", "/proc/moe-oracle-x"],
        [*MATRIX, "-o", "/proc/moe-oracle-x"],
        [*MATRIX, "-o", "/dev/full"],
        [*MATRIX, "-o", "/tmp/" + "a" * 300],
    ],
    ids=["docs-dev-full", "docs-proc", "examples-proc", "output-proc", "output-dev-full", "output-long-name"],
)
def test_output_file_targets_are_exit_2_one_line(args):
    if "/dev/full" in args and not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    done = cli(*args)
    assert done.code == 2, done.err
    _one_error_line(done.err)
    assert "cannot write" in done.err or "not a directory" in done.err


@pytest.mark.parametrize(
    "args",
    [["model", "a" * 300 + ".json"], ["accuracy", "zai-org/GLM-5-FP8", "--weights", "/tmp/" + "a" * 300]],
    ids=["model", "accuracy-weights"],
)
def test_a_name_over_the_file_system_limit_is_exit_2(args):
    done = cli(*args)
    assert done.code == 2, done.err
    _one_error_line(done.err)
    assert "too long" in done.err and len(done.err) < 400


def test_write_text_file_replaces_atomically_and_keeps_the_mode(tmp_path):
    target = tmp_path / "x.md"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    write_text_file(target, "new\n", "--docs")
    assert target.read_text(encoding="utf-8") == "new\n" and (target.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["x.md"]
    with pytest.raises(OutputError, match=r"--docs .*: cannot write"):
        write_text_file(tmp_path / "missing" / "x.md", "x", "--docs")
