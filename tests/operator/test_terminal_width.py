"""#32 item 9: plan prose wraps to the terminal's width (COLUMNS), its commands stay whole and pasteable; the
text matrix honours COLUMNS, to a file too."""

from __future__ import annotations

import shlex

from tests.cli.runner import cli


def test_plan_wraps_prose_and_keeps_commands_whole(tmp_path):
    args = ["plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--engine", "vllm"]
    wide = cli(*args, env={"COLUMNS": "1000"})
    narrow = cli(*args, env={"COLUMNS": "80"})
    assert wide.code == narrow.code == 0
    long_lines = [line for line in narrow.out.splitlines() if len(line) > 80]
    # only a command's own words (one flag a line) or a single unbreakable word may pass 80 columns
    assert all(" " not in line.strip() or line.startswith("    --") for line in long_lines), long_lines
    command = lambda text: text.split("## Launch\n", 1)[1].split("\n\n", 1)[0]  # noqa: E731
    assert command(narrow.out) == command(wide.out)
    pasted = command(narrow.out).split("\n", 1)[1].replace("\\\n", " ")
    assert shlex.split(pasted)[:3] == ["vllm", "serve", "deepseek-ai/DeepSeek-V4-Pro"]


def test_text_matrix_to_a_file_honours_columns(tmp_path):
    out = tmp_path / "m.txt"
    r = cli(
        "matrix", "--devices", "h100", "--models", "deepseek-ai/DeepSeek-V4-Pro", "-o", str(out), env={"COLUMNS": "80"}
    )
    assert r.code == 0, r.err
    assert max(len(line) for line in out.read_text().splitlines()) <= 80
