"""#32 item 2: the plan's first lines say what to install beyond the engine release, how the path was validated,
and the stock alternative with its path, its fit and the flag that plans it."""

from __future__ import annotations

from tests.cli.runner import cli


def test_prerequisites_come_first_with_the_stock_alternative():
    r = cli("plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--engine", "vllm", env={"COLUMNS": "1000"})
    assert r.code == 0, r.err
    head = r.out.split("\n\n", 2)[1]  # right after the headline
    assert head.startswith("## Before you start")
    lines = [line.removeprefix("- ") for line in head.splitlines()[1:]]
    assert "plug-in (entry point vllm.general_plugins)" in lines[0]
    assert lines[1].startswith("kernel build (not in any release): DeepGEMM PR #323")
    assert "https://github.com/deepseek-ai/DeepGEMM/pull/323" in lines[1]
    assert lines[2].startswith("validated: ")
    stock = lines[3]
    assert "`--software vllm-0.33.0`" in stock and "non-fused" in stock and "memory: FITS" in stock
    # the stock line is what `plan --software vllm-0.33.0` answers
    alone = cli(
        "plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--engine", "vllm", "--software", "vllm-0.33.0"
    )
    assert alone.code == 0 and "Fused backend: none eligible" in alone.out
    assert "## Before you start\n- nothing to install beyond vLLM 0.33.0" in alone.out


def test_prerequisites_are_in_the_json():
    import json

    r = cli("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "h200", "--engine", "vllm", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["prerequisites"] and any(p.startswith("stock alternative") for p in doc["prerequisites"])


def test_brief_record_is_small_and_both_replays_take_it(tmp_path):
    """#32 item 11: select --json --brief writes a few KB that select --replay and plan --replay accept."""
    r = cli(
        "select",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--device",
        "h200",
        "--dp",
        "8",
        "--ep",
        "8",
        "--engine",
        "vllm",
        "--json",
        "--brief",
    )
    assert r.code == 0, r.err
    assert len(r.out) < 10_000
    record = tmp_path / "record.json"
    record.write_text(r.out)
    again = cli("select", "--replay", str(record))
    assert again.code == 0 and "identical decision" in again.err
    planned = cli("plan", "--replay", str(record))
    assert planned.code == 0 and "identical decision" in planned.err, planned.err
    assert "vllm serve deepseek-ai/DeepSeek-V4-Flash" in planned.out
