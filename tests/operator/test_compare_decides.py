"""#32 item 6: compare decides: the engine's default path has a cost where a non-fused path was measured, bases
are marked (unverifiable sources say so), and the last rows name the faster column per point with the margin."""

from __future__ import annotations

import json

from tests.cli.runner import cli


def test_compare_names_the_faster_column_and_marks_bases():
    r = cli(
        "compare",
        "zai-org/GLM-5-FP8",
        "--vs",
        "--engine vllm --software vllm-0.33.0",
        "--vs",
        "--engine sglang",
        "--json",
        "--",
        "--device",
        "h200",
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    table = doc["table"]
    assert table["chosen path (main group)"][0] == "non-fused (engine default)"
    assert "us (measured EP1, outside vllm (a stand-in))" in table["cost, T=32 tokens/rank"][0]  # no "not measured"
    faster = table["faster at T=32"][0]
    assert faster.startswith(("[1] by ", "[2] by ")) and "x over" in faster and "(indicative*)" in faster
    assert any(n.startswith("(indicative*)") for n in doc["notes"])


def test_an_unverifiable_basis_says_so():
    r = cli(
        "compare",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--vs",
        "--engine vllm",
        "--vs",
        "--engine sglang",
        "--json",
        "--",
        "--device",
        "h200",
    )
    assert r.code == 0, r.err
    table = json.loads(r.out)["table"]
    assert "not verifiable" in table["cost, T=32 tokens/rank"][0]
    assert "indicative" in table["faster at T=32"][0]


def test_compare_help_has_no_restructuredtext():
    r = cli("compare", "--help")
    assert r.code == 0 and "``" not in r.out
