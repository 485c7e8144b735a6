"""Output for terminals: the terminal's width, no trailing spaces, no broken identifiers, NO_COLOR, progress."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time

import pytest

from moe_oracle.cli.progress import progress
from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"
SELECT = ["select", FLASH, "--device", "h200", "--dp", "8", "--ep", "8", "--software", "vllm-0.33.0"]
COLOR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|9[0-7])(?:;[0-9;]*)?m")
IDENTIFIERS = ("deep_gemm_mega_moe:sm90_fp8xfp8", "deep_gemm_mega_moe:sm90_fp8xfp4", "QUANT_UNSUPPORTED")


def _on_a_terminal(args, columns, env=None):
    """Run the CLI with stdout and stderr on a real pseudo-terminal of ``columns`` columns."""
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    full_env.update(env or {})
    p = subprocess.Popen([sys.executable, "-m", "moe_oracle", *args], stdout=slave, stderr=slave, env=full_env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert p.wait(timeout=120) == 0
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals")
@pytest.mark.parametrize("columns", [80, 100, 160])
def test_width_is_the_terminals(columns):
    out = _on_a_terminal(SELECT, columns, {"NO_COLOR": "1"})
    assert not COLOR.search(out)  # NO_COLOR keeps working (bold is not a colour)
    out = _on_a_terminal(SELECT, columns)
    assert COLOR.search(out)
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    lines = out.splitlines()
    if columns >= 100:  # narrower, a table whose words cannot fit is printed at the width it needs
        assert max(len(line) for line in lines) <= columns
    if columns >= 160:
        assert max(len(line) for line in lines) > 120  # not a fixed 120
    assert all(line == line.rstrip() for line in lines)
    for ident in IDENTIFIERS:
        assert ident in out  # never broken mid-word


def test_piped_output_has_no_trailing_spaces_and_keeps_identifiers():
    r = cli(*SELECT)
    assert r.code == 0, r.err
    assert all(line == line.rstrip() for line in r.out.splitlines())
    for ident in IDENTIFIERS:
        assert ident in r.out
    wide = cli(*SELECT, env={"COLUMNS": "200"})
    assert max(len(x) for x in wide.out.splitlines()) > 120


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_and_erases_itself():
    stream = _Terminal()
    with progress("matrix: deciding 144 scenarios", stream, delay=0.0):
        time.sleep(0.5)
    text = stream.getvalue()
    assert "matrix: deciding 144 scenarios" in text and text.endswith("\r\x1b[K")


def test_progress_is_silent_when_not_a_terminal_or_quick():
    piped = io.StringIO()
    with progress("x", piped, delay=0.0):
        time.sleep(0.3)
    assert piped.getvalue() == ""
    quick = _Terminal()
    with progress("x", quick, delay=5.0):
        pass
    assert quick.getvalue() == ""


def test_short_output_option(tmp_path):
    target = tmp_path / "m.json"
    r = cli("matrix", "--devices", "h200", "--format", "json", "-o", str(target))
    assert r.code == 0, r.err
    assert json.loads(target.read_text())["cells"]


def test_replay_difference_is_a_per_group_diff(tmp_path):
    r = cli("select", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--json")
    doc = json.loads(r.out)
    doc["layer_groups"][0]["chosen"] = {"backend": "aiter_mega_moe", "variant": "gfx950_a8w4"}
    doc["fingerprint"] = "sha256:0"
    f = tmp_path / "rec.json"
    f.write_text(json.dumps(doc))
    r = cli("select", "--replay", str(f))
    assert r.code == 5
    lines = r.err.splitlines()
    assert lines[0] == "replay: decision differs from the record"
    assert "  fingerprint: the record's 'sha256:0' does not match its own inputs" in r.err  # edited by hand
    assert "  layer group moe (layers 3-42): aiter_mega_moe:gfx950_a8w4 -> deep_gemm_mega_moe:sm100_fp8xfp4" in lines
    assert "  layer group mtp: deep_gemm_mega_moe:sm100_fp8xfp4 (unchanged)" in lines
    assert "{" not in r.err and "[" not in r.err  # no Python reprs
