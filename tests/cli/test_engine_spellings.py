"""The engines' own layout spellings are accepted (pasted from a serve command); conflicts are exit 2."""

from __future__ import annotations

import json

import pytest

from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def _layout(*args):
    r = cli("select", FLASH, "--device", "b200", *args, "--json")
    assert r.code == 0, r.err
    p = json.loads(r.out)["inputs"]["deployment"]["parallel"]
    return p["tp"], p["dp"], p["ep"], p["pp"], json.loads(r.out)["fingerprint"]


@pytest.mark.parametrize(
    ("engine_args", "native"),
    [
        (["--data-parallel-size", "8", "--enable-expert-parallel"], ["--dp", "8", "--ep", "8"]),
        (["-dp", "8", "--enable-expert-parallel"], ["--dp", "8", "--ep", "8"]),
        (["-tp", "2", "-dp", "4", "--enable-expert-parallel"], ["--tp", "2", "--dp", "4", "--ep", "8"]),
        (["--tensor-parallel-size", "8"], ["--tp", "8"]),
        (["--tensor-parallel-size", "4", "--pipeline-parallel-size", "2"], ["--tp", "4", "--pp", "2"]),
        (["--tp-size", "8", "--attn-dp-size", "8", "--ep-size", "8"], ["--dp", "8", "--ep", "8"]),
        (["--tp-size", "8", "--dp-size", "4", "--ep-size", "8"], ["--tp", "2", "--dp", "4", "--ep", "8"]),
        (["--tp-size", "8"], ["--tp", "8"]),
        (["--dp", "8", "--data-parallel-size", "8"], ["--dp", "8"]),  # the same value twice is no conflict
    ],
)
def test_engine_spellings_mean_the_native_flags(engine_args, native):
    assert _layout(*engine_args) == _layout(*native)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--dp", "4", "--data-parallel-size", "8"], "--data-parallel-size 8 contradicts --dp 4"),
        (["--tp", "2", "-tp", "4"], "--tensor-parallel-size 4 contradicts --tp 2"),
        (
            ["--ep", "4", "--dp", "8", "--enable-expert-parallel"],
            "--enable-expert-parallel (tp*dp) 8 contradicts --ep 4",
        ),
        (["--ep-size", "8", "--ep", "4", "--dp", "8"], "--ep-size 8 contradicts --ep 4"),
        (["--tp-size", "8", "--attn-dp-size", "3"], "--tp-size 8 is not a multiple of the attention DP size 3"),
        (["-tp", "4", "--tp-size", "8"], "--tp-size 8 contradicts --tensor-parallel-size 4"),
    ],
)
def test_a_conflict_between_spellings_is_exit_2(args, needle):
    r = cli("select", FLASH, "--device", "b200", *args)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and needle in r.err, r.err


def test_plan_accepts_a_pasted_vllm_layout():
    pasted = cli("plan", FLASH, "--device", "b200", "--engine", "vllm", "-dp", "8", "--enable-expert-parallel")
    native = cli("plan", FLASH, "--device", "b200", "--engine", "vllm", "--dp", "8", "--ep", "8")
    assert pasted.code == native.code == 0, pasted.err
    assert pasted.out == native.out
