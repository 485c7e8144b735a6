"""Untrusted inputs and contradictions through the real CLI: exit 2 with one line, fast, never 1 or a hang."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    """A real decision record (select --json) to corrupt."""
    r = cli("select", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def _one_line_exit_2(r, *needles):
    assert r.code == 2, (r.code, r.out, r.err)
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
    for needle in needles:
        assert needle in r.err, (needle, r.err)


@pytest.mark.parametrize(
    ("path", "value", "needles"),
    [
        (("override",), 5, ["inputs.override = 5", "--moe-backend"]),
        (("software",), "x", ["inputs.software", "expected an object"]),
        (("model", "layer_groups"), 1.5, ["inputs.model is invalid", "layer_groups"]),
        (("engine",), "trtllm", ["inputs.engine", "--engine"]),
        (("engine",), [], ["inputs.engine = []", "--engine"]),  # found by the fuzz: once an internal error
        (("allow_fallback",), "yes", ["inputs.allow_fallback", "true or false"]),
        (("workload", "points"), [[-5, 1.0]], ["tokens -5", "1 <= T <= 8192"]),
        (("workload", "points"), [[32, 0]], ["weight 0", "finite weight"]),
        (("workload", "points"), [], ["no points"]),
        (("workload", "points"), [[10**12, 1]], ["tokens 1000000000000"]),
        (("workload", "points"), [[32, 1e300]], ["finite weight"]),
        (("workload", "points"), 7, ["[tokens, weight] pairs"]),
        (("conversion",), {"enabled": 1}, ["conversion.enabled", "true or false"]),
        (("advisories",), {"id": "x"}, ["inputs.advisories", "expected an array"]),
    ],
)
def test_corrupted_record_fields_are_refused(tmp_path, record, path, value, needles):
    doc = json.loads(json.dumps(record))
    target = doc["inputs"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    f = tmp_path / "rec.json"
    f.write_text(json.dumps(doc))
    _one_line_exit_2(cli("select", "--replay", str(f)), *needles)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('"points": [[1e999, 1]]', "overflows to infinity"),
        ('"points": [[1, NaN]]', "NaN"),
        ('"points": [[1, 1]], "points": [[2, 1]]', "twice"),
    ],
)
def test_record_json_that_is_not_plain_json_is_refused(tmp_path, record, text, needle):
    body = json.dumps(record)
    body = body.replace('"points": ' + json.dumps(record["inputs"]["workload"]["points"]), text, 1)
    assert text in body
    f = tmp_path / "rec.json"
    f.write_text(body)
    _one_line_exit_2(cli("select", "--replay", str(f)), needle)


@pytest.mark.parametrize("spec", ["1:inf", "1:nan", "1:-1", "0:1", "", "1:1e999", "99999999:1"])
def test_non_finite_or_out_of_range_workloads_are_refused(spec):
    _one_line_exit_2(cli("select", FLASH, "--device", "b200", "--workload", spec), "--workload")


def _hostile_file(tmp_path, kind):
    path = tmp_path / f"{kind}.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    elif kind == "dangling":
        os.symlink(tmp_path / "gone.json", path)
    elif kind == "duplicate":
        path.write_text('{"schema": 1, "schema": 1, "advisories": []}')
    elif kind == "deep":
        path.write_text('{"schema": 1, "advisories": [], "x": ' + "[" * 200 + "]" * 200 + "}")
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX only")
@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("fifo", "FIFO"),
        ("devzero", "character device"),
        ("dangling", "broken symbolic link"),
        ("duplicate", "'schema' twice"),
        ("deep", "nested too deeply"),
    ],
)
@pytest.mark.parametrize("reader", ["advisories", "replay", "model"])
def test_every_reader_is_hardened(tmp_path, kind, needle, reader):
    path = _hostile_file(tmp_path, kind)
    if reader == "advisories":
        args = ["select", FLASH, "--device", "b200", "--advisories", str(path)]
    elif reader == "replay":
        args = ["select", "--replay", str(path)]
    else:
        args = ["model", str(path)]
    start = time.perf_counter()
    r = cli(*args)
    assert time.perf_counter() - start < 30
    _one_line_exit_2(r, needle)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--nodes", "2", "--ep", "16"], ["--ep 16 must divide", "--dp 16"]),
        (["--domain-size", "64"], ["--domain-size 64", "b200", "(8 GPUs)", "gb200"]),
        (["--domain-size", "16"], ["--domain-size 16"]),
        (["--engine", "vllm", "--software", "sglang-0.5.23"], ["contradicts --software sglang-0.5.23"]),
        (["--software", "deepgemm-pr999"], ["'deepgemm-pr999' is not a known software profile", "deepgemm-pr323"]),
        (["--no-convert", "--allow-lossy-conversion"], ["--no-convert contradicts --allow-lossy-conversion"]),
        (["--tp", "100000"], ["--tp 100000", "Fix: use --tp in 1..65536"]),
        (["--tp", "0"], ["--tp", "Fix: pass a value inside that range"]),
    ],
)
def test_contradictions_are_refused_with_the_right_fix(args, needles):
    r = cli("select", FLASH, "--device", "b200", *args)
    _one_line_exit_2(r, *needles)
    assert "value:" not in r.err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--nodes", "2", "--dp", "8", "--ep", "8"], "8 of 16 GPUs stay idle (to use them all: --dp 16 --ep 16"),
        (["--tp", "3"], "--tp 3 does not divide the 8 GPUs of a node"),
    ],
)
def test_suspicious_layouts_warn_on_one_line(args, needle):
    r = cli("select", FLASH, "--device", "b200", *args, "--json")
    assert r.code == 0, r.err
    json.loads(r.out)
    warnings = [line for line in r.err.splitlines() if line.startswith("warning: ")]
    assert any(needle in w for w in warnings), r.err


def test_replay_refuses_arguments_it_would_ignore(tmp_path, record):
    f = tmp_path / "rec.json"
    f.write_text(json.dumps(record))
    _one_line_exit_2(cli("select", FLASH, "--device", "h200", "--replay", str(f)), "MODEL", "--device", "ignored")
    assert cli("select", "--replay", str(f), "--json").code == 0


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--data-parallel-size", "4"], "'--data-parallel-size 4' after -- overrides"),
        (["-dp", "4"], "'-dp 4' after -- overrides what the plan decided ('--data-parallel-size 8')"),
        (["--moe-backend", "triton"], "'--moe-backend triton'"),
    ],
)
def test_serve_refuses_engine_args_that_override_the_plan(extra, needle):
    r = cli("serve", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dry-run", "--", *extra)
    _one_line_exit_2(r, needle)


def test_serve_accepts_engine_args_that_add_to_the_plan():
    r = cli("serve", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dry-run", "--",
            "--seed", "7")  # fmt: skip
    assert r.code == 0, r.err
    assert "--seed 7" in r.out


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="SGLang is installed here")
def test_serve_sglang_without_sglang_exits_4(tmp_path):
    env = {"PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = cli("serve", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "sglang", env=env)
    assert r.code == 4, (r.code, r.err)
    assert "has no module 'sglang'" in r.err and "No module named" not in r.err


def test_plan_examples_check_stale_exit_6(tmp_path):
    assert cli("plan", "--examples", str(tmp_path)).code == 0
    victim = sorted(p for p in tmp_path.rglob("*") if p.is_file())[0]
    victim.write_text("edited\n")
    r = cli("plan", "--examples", str(tmp_path), "--check")
    assert r.code == 6, (r.code, r.err)
    assert f"stale: {victim.relative_to(tmp_path)}" in r.out or "stale:" in r.out


def test_top_level_help_lists_every_exit_code():
    from moe_oracle.errors import ExitCode

    r = cli("--help")
    assert r.code == 0
    for code in ExitCode:
        assert any(line.split()[:1] == [str(int(code))] for line in r.out.splitlines()), (code, r.out)


@pytest.mark.parametrize(
    "args",
    [
        ["serve", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dry-run", "--json"],
        ["select", FLASH, "--device", "mi355x", "--dp", "8", "--ep", "8", "--moe-backend", "deep_gemm_mega_moe",
         "--json"],
        ["select", FLASH, "--device", "a100", "--json"],
        ["select", FLASH, "--device", "b200", "--tp", "0", "--json"],
        ["plan", FLASH, "--device", "b200", "--json"],
    ],
)  # fmt: skip
def test_json_means_exactly_one_document_on_stdout(args):
    r = cli(*args)
    doc = json.loads(r.out)  # the whole of stdout, nothing before or after
    if r.code:
        assert doc["exit_code"] == r.code and doc["error"] in r.err


@pytest.mark.parametrize("args", [["matrix"], ["select", FLASH, "--device", "b200", "--dp", "8", "--ep", "8"]])
def test_closed_stdout_exits_quietly(args):
    p = subprocess.Popen(
        [sys.executable, "-m", "moe_oracle", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()  # like `| head -1`
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "error" not in err


def test_ctrl_c_exits_130():
    import signal

    def interactive() -> None:  # a shell's background job ignores SIGINT; a terminal's process does not
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen(
        # a run that lasts well past the interrupt (the default run can end within 3 s on an idle machine)
        [sys.executable, "-m", "moe_oracle", "accuracy", FLASH, "--scale", "0.5", "--tokens", "512"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interactive,
    )
    time.sleep(3.0)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err[-500:])
    assert "Traceback" not in err
