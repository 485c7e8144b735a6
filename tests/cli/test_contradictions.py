"""Each silent contradiction of issue 22 gets its check: a value that the command would otherwise contradict
without a word is refused in one line, warned about, or made consistent."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"
SERVE = ["serve", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dry-run"]


def _one_line_exit_2(r, *needles):
    assert r.code == 2, (r.code, r.err)
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
    for needle in needles:
        assert needle in r.err, (needle, r.err)


def test_gpus_per_node_never_widens_the_nvlink_domain():
    """--gpus-per-node 16 on b200 used to set a 16-GPU domain that --domain-size 16 refuses."""
    r = cli("select", FLASH, "--device", "b200", "--gpus-per-node", "16", "--dp", "16", "--ep", "16", "--json")
    assert r.code == 0, r.err
    topology = json.loads(r.out)["inputs"]["deployment"]["topology"]
    assert topology == {"gpus_per_node": 16, "nodes": 1, "domain_size": 8}
    assert "--gpus-per-node 16 is more than one b200 NVLink/XGMI domain (8 GPUs)" in r.err
    _one_line_exit_2(cli("select", FLASH, "--device", "b200", "--domain-size", "16"), "--domain-size 16")


@pytest.mark.parametrize(
    "extra",
    [
        ["--tensor_parallel_size", "4"],
        ["--tensor-parallel", "4"],
        ["--data_parallel_size=2"],
        ["--data-parallel-si", "2"],
        ["--moe_backend", "triton"],
        ["--all2all_backend", "naive"],
    ],
)
def test_engine_arguments_spelled_otherwise_cannot_override_the_plan(extra):
    _one_line_exit_2(cli(*SERVE, "--", *extra), "overrides what the plan decided")


def test_engine_arguments_that_add_to_the_plan_pass():
    # (--max_num_seqs was here: it is the decode batch the decision weighs, so issue 30 refuses it after --;
    # moe-oracle's own --max-num-seqs reaches the engine instead; --max-model-len likewise, issue 32: the memory
    # fit counts the context served, so moe-oracle's --max-model-len carries it)
    r = cli(*SERVE, "--", "--seed", "7", "--served_model_name", "flash")
    assert r.code == 0, r.err
    assert "--seed 7 --served_model_name flash" in r.out


def test_env_that_changes_the_decision_reaches_the_engine():
    env = "VLLM_DISABLE_DSV4_MEGAMOE_SHARED_EXPERT_FUSION=1"
    plan = cli("plan", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--env", env, "--json")
    assert plan.code == 0, plan.err
    doc = json.loads(plan.out)
    assert all(c["env"].get("VLLM_DISABLE_DSV4_MEGAMOE_SHARED_EXPERT_FUSION") == "1" for c in doc["commands"])
    assert env in doc["commands"][0]["shell"]
    serve = cli(*SERVE, "--env", env)
    line = next(x for x in serve.out.splitlines() if x.startswith("dry run: would exec"))
    assert env in shlex.split(line.split("): ", 1)[1])


@pytest.mark.parametrize("value", [" ", ",,,", " , "])
def test_a_matrix_list_that_names_nothing_is_refused(value):
    _one_line_exit_2(cli("matrix", "--models", value), "--models", "names nothing")


@pytest.mark.parametrize(
    ("value", "needle"),
    [("banana", "is not a size"), ("99999999999999999999T", "more than one mi355x GPU's memory"), ("8 G B", "")],
)
def test_an_unreadable_or_impossible_mori_heap_is_refused(value, needle):
    r = cli("select", FLASH, "--device", "mi355x", env={"MORI_SHMEM_HEAP_SIZE": value})
    _one_line_exit_2(r, "MORI_SHMEM_HEAP_SIZE", needle)


def test_a_readable_mori_heap_is_kept():
    r = cli("select", FLASH, "--device", "mi355x", "--env", "MORI_SHMEM_HEAP_SIZE=16G")
    assert r.code == 0, r.err
