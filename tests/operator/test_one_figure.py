"""#32 item 5: one figure for each quantity: the plan's layout line, Memory line and fit table give one KV size."""

from __future__ import annotations

import re

import pytest

from tests.cli.runner import cli

QWEN = "tests/fixtures/models/Qwen--Qwen3-235B-A22B-FP8"
KV = re.compile(r"([0-9.]+) GiB (?:of )?KV cache")


@pytest.mark.parametrize(
    "args",
    [
        ["deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--engine", "vllm"],
        [QWEN, "--device", "h100", "--nodes", "2", "--engine", "vllm"],
    ],
)
def test_layout_memory_line_and_fit_table_give_one_kv_size(args):
    r = cli("plan", *args, env={"COLUMNS": "400"})
    assert r.code == 0, r.err
    summary, _, rest = r.out.partition("## Decision")
    # the prerequisites' stock alternative is another plan (the engine release alone): its own KV size
    summary = "\n".join(line for line in summary.splitlines() if not line.startswith("- stock alternative"))
    table = re.search(r"KV cache \(what remains\)\s+([0-9.]+) GiB", rest)
    assert table is not None
    figures = [float(x) for x in KV.findall(summary)]
    assert figures, summary
    assert all(abs(x - float(table.group(1))) < 0.06 for x in figures), (figures, table.group(1))
