"""One question, one answer: select, plan and compare decide with the same flags and defaults (issue 20)."""

from __future__ import annotations

import json

import pytest

from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def _select(*flags: str) -> dict:
    r = cli("select", FLASH, *flags, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def _plan(*flags: str) -> dict:
    r = cli("plan", FLASH, *flags, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.parametrize(
    "flags",
    [
        ("--device", "h200", "--engine", "vllm"),
        ("--device", "mi355x", "--dp", "8", "--ep", "8", "--engine", "vllm"),
        ("--device", "mi355x", "--dp", "8", "--ep", "8", "--engine", "vllm", "--software", "all"),
        ("--device", "b200", "--dp", "8", "--ep", "8", "--engine", "sglang", "--workload", "decode"),
    ],
)
def test_select_and_plan_give_one_fingerprint(flags):
    sel, plan = _select(*flags), _plan(*flags)
    assert sel["fingerprint"] == plan["fingerprint"]
    assert sel["software"]["profile"] == plan["software"]["profile"]


def test_a_bare_device_is_given_a_layout_and_its_reason():
    plan = _plan("--device", "h200", "--engine", "vllm")
    assert plan["layout"]["dp"] == 8 and plan["layout"]["ep"] == 8
    assert "layout chosen by moe-oracle" in plan["layout_chosen"]
    assert (
        "--data-parallel-size" in plan["argv"] and plan["argv"][plan["argv"].index("--data-parallel-size") + 1] == "8"
    )
    assert plan["fit"]["verdict"] == "FITS"


def test_plan_refuses_a_deployment_that_cannot_hold_its_weights():
    r = cli("plan", "deepseek-ai/DeepSeek-V4-Pro", "--device", "h100", "--dp", "8", "--ep", "8", "--engine", "vllm")
    assert r.code == 7 and r.out == ""
    assert "[DEPLOYMENT_MEMORY_EXCEEDED]" in r.err and "--dp 32 --ep 32 --nodes 4" in r.err


def test_select_refuses_a_deployment_that_cannot_load():
    r = cli("select", "zai-org/GLM-5", "--device", "h200", "--dp", "8", "--ep", "8", "--json")
    assert r.code == 7
    doc = json.loads(r.out)
    assert doc["exit_code"] == 7 and "[DEPLOYMENT_MEMORY_EXCEEDED]" in doc["message"]


def test_select_and_plan_give_one_fit_and_one_exit_code_for_a_deployment_that_does_not_fit():
    """Same bytes (the plan's symmetric buffers counted in select too), same line, same exit code 7."""
    flags = ("deepseek-ai/DeepSeek-V4-Pro", "--device", "h100", "--dp", "8", "--ep", "8", "--engine", "sglang")
    sel, plan = cli("select", *flags), cli("plan", *flags)
    assert sel.code == plan.code == 7
    line = next(x for x in sel.err.splitlines() if x.startswith("error: "))
    assert line == plan.err.strip().splitlines()[-1]
    assert "needs" in line and "one rank needs" in sel.out  # the fit table printed before the refusal


def test_select_and_plan_agree_on_a_fit_their_buffers_included():
    flags = ("deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang")
    sel = json.loads(cli("select", *flags, "--json").out)
    plan = json.loads(cli("plan", *flags, "--json").out)
    assert sel["fit"] == plan["fit"] and sel["fingerprint"] == plan["fingerprint"]
    assert any(i["label"] == "symmetric buffers / heaps" for i in sel["fit"]["per_rank"])


def test_compare_columns_are_the_plans():
    r = cli("compare", FLASH, "--vs", "--engine vllm", "--vs", "--engine sglang", "--json", "--", "--device", "h200")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    for column, engine in zip(doc["columns"], ("vllm", "sglang"), strict=True):
        plan = _plan("--device", "h200", "--engine", engine)
        assert column["plan"]["fingerprint"] == plan["fingerprint"]
    assert len(doc["table"]["fingerprint"]) == 2


def test_compare_needs_two_columns():
    r = cli("compare", FLASH, "--vs", "--engine vllm", "--", "--device", "h200")
    assert r.code == 2 and "two or more" in r.err


def test_compare_shows_a_column_that_does_not_fit():
    r = cli(
        "compare", "deepseek-ai/DeepSeek-V4-Pro", "--vs", "--device h100", "--vs", "--device b300",
        "--", "--engine", "vllm", "--dp", "8", "--ep", "8",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "DOES NOT FIT" in r.out and "[DEPLOYMENT_MEMORY_EXCEEDED]" in r.out


def test_plan_all_reasons_lists_every_reason_with_its_fix():
    args = ("plan", "deepseek-ai/DeepSeek-V4-Flash", "--device", "h200", "--engine", "vllm")
    short = cli(*args)
    full = cli(*args, "--all-reasons")
    assert short.code == 0 and full.code == 0, (short.err, full.err)
    assert "ARCH_UNSUPPORTED only (built for another GPU)" in short.out
    assert "ARCH_UNSUPPORTED only" not in full.out
    # a4w4's second and third reasons, each with its fix, appear only in the full trail
    assert "(also: EP_SIZE_UNSUPPORTED, KERNEL_MISSING)" in short.out
    assert "    [EP_SIZE_UNSUPPORTED] ep=8; a4w4 runs only through the inter-node backend" in full.out
    assert "    [KERNEL_MISSING]" in full.out and ". Fix: " in full.out
    assert full.out.split("## Launch")[1] == short.out.split("## Launch")[1]  # the plan itself is the same
