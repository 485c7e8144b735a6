"""Regression tests for the reproducers of issue 30 (hostile inputs, round 4), one test per reproducer.

Each runs the real entry point (``main``) in this process, as a user types the command.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import moe_oracle.presets
from moe_oracle.cli.app import main

PRESETS = Path(moe_oracle.presets.__file__).parent

FLASH = "deepseek-ai/DeepSeek-V4-Flash"
COMPARE = ["compare", FLASH, "--vs", "--engine vllm", "--vs", "--engine sglang"]


def run(*args: str, env_path: str | None = None) -> tuple[int, str, str]:
    import os

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("PATH")
    if env_path is not None:
        os.environ["PATH"] = env_path
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        if saved is not None:
            os.environ["PATH"] = saved
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


# --- internal errors -------------------------------------------------------------------------------------------


def test_memory_fraction_nan_is_bad_input():
    for value in ("nan", "NaN", "+nan"):
        code, _out, err = run("select", FLASH, "--device", "h200", "--memory-fraction", value)
        assert code == 2 and "--memory-fraction" in one_line(err) and "finite" in err, err


def test_all2all_backend_without_value_is_bad_input():
    code, _, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--all2all-backend", "--eplb")
    assert code == 2 and "--all2all-backend takes a value" in one_line(err)


def test_compare_points_twice_is_refused():
    code, _, err = run(*COMPARE, "--points", "32,32", "--", "--device", "h200")
    assert code == 2 and "32 more than once" in one_line(err) and "--points 32" in err
    code, out, _ = run(*COMPARE, "--points", "32,32", "--json", "--", "--device", "h200")
    assert code == 2 and json.loads(out)["exit_code"] == 2


def test_compare_points_non_ascii_digits_refused():
    for points in ("\uff13\uff12", "\u0663\u0662", "32,\u0968"):
        code, _, err = run(*COMPARE, "--points", points, "--", "--device", "h200")
        assert code == 2 and "digits 0-9" in one_line(err), err


# --- silent contradictions -------------------------------------------------------------------------------------


def test_serve_dry_run_swallowed_never_starts_the_engine():
    code, out, err = run("serve", FLASH, "--device", "h200", "--engine", "sglang", "--all2all-backend", "--dry-run")
    assert code == 2 and "--dry-run" in one_line(err) and not out


def test_compare_refused_override_shows_why_in_its_column():
    args = ["compare", FLASH, "--vs", "--engine vllm --moe-backend aiter_mega_moe", "--vs", "--engine sglang"]
    code, out, err = run(*args, "--points", "32", "--", "--device", "h200")
    assert code == 0, err
    assert "OVERRIDE REFUSED (see [1] below)" in out and "[1]: --moe-backend aiter_mega_moe cannot run" in out
    code, out, err = run(*args, "--points", "32", "--json", "--", "--device", "h200")
    doc = json.loads(out)
    assert code == 0 and doc["columns"][0]["refused"] == "OVERRIDE REFUSED" and doc["columns"][1]["plan"]


def test_compare_output_flags_inside_vs_refused():
    for column in ("--engine vllm --json", "--engine vllm --examples docs/plans", "--engine vllm --check"):
        code, _, err = run("compare", FLASH, "--vs", column, "--vs", "--engine sglang", "--", "--device", "h200")
        assert code == 2 and "a column cannot take" in one_line(err), err
    code, _, err = run(*COMPARE, "--", "--device", "h200", "--json")
    assert code == 2 and "shared flags" in one_line(err)


def test_compare_vs_help_json_is_one_error_document():
    code, out, err = run(
        "compare", FLASH, "--vs", "--help", "--vs", "--engine sglang", "--json", "--", "--device", "h200"
    )
    assert code == 2 and json.loads(out)["exit_code"] == 2 and "help" in one_line(err)


# --- serve: engine arguments after --, one JSON document, the plug-in switch -------------------------------------


def _serve(engine: str, *extra: str, json_out: bool = False) -> tuple[int, str, str]:
    args = ["serve", FLASH, "--device", "h200", "--engine", engine, "--dry-run", *(["--json"] if json_out else [])]
    return run(*args, "--", *extra)


def test_serve_refuses_every_engine_decision_input_from_the_vocabulary():
    from moe_oracle.releases import sglang, vllm

    sglang_flags, vllm_flags = sglang.flags, vllm.flags

    for engine, table in (("vllm", vllm_flags.DECISION_INPUTS), ("sglang", sglang_flags.DECISION_INPUTS)):
        for flag in table:
            code, _, err = _serve(engine, flag, "2")
            assert code == 2, (engine, flag, err)
            assert "after --" in err.splitlines()[-1] and "Fix:" in err, (engine, flag, err)


def test_serve_refuses_the_reproducers_with_the_moe_oracle_flag():
    cases = {
        ("sglang", "--dp-size", "2"): "--dp",
        ("sglang", "--quantization", "fp8"): "config.json",
        ("sglang", "--speculative-algorithm", "EAGLE"): "--speculative",
        ("sglang", "--mem-fraction-static", "0.99"): "--memory-fraction",
        ("vllm", "--quantization", "mxfp4"): "config.json",
        ("vllm", "--enable-eplb"): "--eplb",
        ("vllm", "--speculative-config", '{"method": "mtp"}'): "--speculative",
        ("vllm", "--speculative-config.method=mtp"): "--speculative",
        ("vllm", "--no-enable-eplb"): "--eplb",
    }
    for (engine, *extra), use in cases.items():
        code, _, err = _serve(engine, *extra)
        line = err.splitlines()[-1]
        assert code == 2 and line.startswith("error: engine argument") and use in line.split("Fix:")[1], line


def test_serve_refuses_a_moe_oracle_key_in_additional_config_when_the_plan_has_none():
    # DeepSeek-V4-Flash on 8 x B200 with vLLM: vLLM's own path, so the plan writes no --additional-config
    base = ["serve", FLASH, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--dry-run", "--"]
    code, _, err = run(*base, "--additional-config", '{"moe_oracle": {"backend": "auto"}}')
    assert code == 2 and "plug-in" in err and "--moe-backend" in err, err
    code, _, err = run(*base, "--additional-config", '{"other": 1}')
    assert code in (0, 7), err  # another key is the engine's business


def test_serve_dry_run_after_the_separator_is_refused():
    code, _, err = run("serve", FLASH, "--device", "h200", "--engine", "vllm", "--", "--dry-run")
    assert code == 2 and "put --dry-run before --" in err.splitlines()[-1]


def test_serve_json_failure_after_the_plan_is_one_document():
    code, out, _ = _serve("sglang", "--dp-size", "2", json_out=True)
    doc = json.loads(out)
    assert code == 2 and doc["exit_code"] == 2 and doc["plan"]["engine"] == "sglang"
    code, out, _ = run("serve", FLASH, "--device", "h200", "--engine", "vllm", "--json", env_path="/nonexistent")
    doc = json.loads(out)
    assert code == 4 and doc["exit_code"] == 4 and doc["plan"]["engine"] == "vllm"


def test_plan_examples_check_json_is_one_document(tmp_path):
    code, out, _ = run("plan", "--examples", str(tmp_path), "--check", "--json")
    doc = json.loads(out)
    assert code == 6 and doc["check"] is True and doc["stale"]


def test_matrix_format_json_failure_is_one_document():
    for spelled in (["--format", "json"], ["--format=json"]):
        code, out, err = run("matrix", *spelled, "--devices", "nope")
        assert code == 2 and json.loads(out)["exit_code"] == 2 and one_line(err)


def test_plugin_switch_off_is_said_by_plan_and_serve(monkeypatch):
    monkeypatch.setenv("MOE_ORACLE_VLLM_PLUGIN", "0")
    code, out, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--json")
    assert code == 0 and any("MOE_ORACLE_VLLM_PLUGIN=0" in w for w in json.loads(out)["warnings"])
    code, _, err = _serve("vllm")
    assert code == 0 and "warning: MOE_ORACLE_VLLM_PLUGIN=0 is exported" in err
    monkeypatch.setenv("MOE_ORACLE_SGLANG_PLUGIN", "off")
    pro = ["deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--dp", "8", "--ep", "8"]
    code, _, err = run("plan", *pro, "--max-num-batched-tokens", "1024", "--engine", "sglang")
    assert code == 0 and "warning: MOE_ORACLE_SGLANG_PLUGIN=off is exported" in err, err


def test_sglang_plugin_logs_a_line_when_switched_off(monkeypatch, caplog):
    from moe_oracle.engines.sglang import plugin

    monkeypatch.setenv(plugin.ENV_SWITCH, "0")
    with caplog.at_level("WARNING", logger=plugin.LOGGER_NAME):
        plugin.register()  # returns before importing SGLang
    assert any("off (MOE_ORACLE_SGLANG_PLUGIN=0)" in r.getMessage() for r in caplog.records)


# --- model inputs, layouts --------------------------------------------------------------------------------------


def _glm_with(tmp_path, **changes):
    config = json.loads((PRESETS / "zai-org--GLM-5-FP8" / "config.json").read_text())
    config.update(changes)
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def test_hostile_vocab_size_is_refused_with_the_key(tmp_path):
    for value in (-1, 1e308, 256.5, True, None):
        code, _, err = run(
            "select", _glm_with(tmp_path, vocab_size=value), "--device", "h200", "--dp", "8", "--ep", "8"
        )
        assert code == 2 and "vocab_size" in one_line(err) and json.dumps(value) in err, err


def test_hostile_tie_word_embeddings_is_refused_with_the_key(tmp_path):
    for value in (256, "yes"):
        path = _glm_with(tmp_path, tie_word_embeddings=value)
        code, _, err = run("select", path, "--device", "h200", "--dp", "8", "--ep", "8")
        assert code == 2 and "tie_word_embeddings" in one_line(err) and "true or false" in err, err


def test_ep_larger_than_the_routed_experts_is_refused_with_a_layout_that_works():
    code, _, err = run("select", FLASH, "--device", "h200", "--nodes", "64", "--dp", "512", "--ep", "512")
    assert code == 2 and "--ep 512 is more than the 256 routed experts" in one_line(err)
    fix = one_line(err).split("Fix: ")[1].split(" plans ")[0].split()  # judged: the layout, then what it plans
    assert fix == ["--dp", "256", "--ep", "256", "--nodes", "32"], err
    assert run("select", FLASH, "--device", "h200", *fix)[0] == 0, fix


def test_a_proposed_layout_never_names_a_dp_nobody_typed():
    code, _, err = run("select", FLASH, "--device", "h200", "--nodes", "65536", "--gpus-per-node", "65536")
    assert code == 2 and "--dp 4294967296" not in err and "--nodes 65536 x --gpus-per-node 65536" in one_line(err)
    # #32 item 4: a proposed layout over more GPUs than experts that the plan serves as replicas inside one domain
    # (each EP dividing the experts) is answered, not refused: select names the replicas plan runs
    code, out, err = run("select", FLASH, "--device", "h200", "--nodes", "64")
    assert code == 0 and "replicas of DP8+EP8" in out, err
    code, _, err = run("select", FLASH, "--device", "gb200", "--nodes", "75")  # 300 GPUs: no replica tiling
    assert code == 2 and "--dp 300" not in err and "256 routed experts" in one_line(err)


# --- plug-in environment readers -------------------------------------------------------------------------------


def test_plugin_env_readers_refuse_deep_json_and_huge_numbers_in_one_line():
    from moe_oracle.engines.sglang.shipped import read_request, shipped_plan
    from moe_oracle.engines.vllm.shipped import read_request as vllm_request
    from moe_oracle.engines.vllm.snapshot import check_env
    from moe_oracle.errors import BadInputError

    deep = "{" + '"a":[' * 400 + "1" + "]" * 400 + "}"  # ~2 kB
    readers = {
        "MOE_ORACLE_SGLANG_BACKEND": lambda v: read_request({"MOE_ORACLE_SGLANG_BACKEND": v}),
        "MOE_ORACLE_SGLANG_PLAN": lambda v: shipped_plan({"MOE_ORACLE_SGLANG_PLAN": v}),
        "MOE_ORACLE_VLLM_BACKEND": lambda v: vllm_request({}, {"MOE_ORACLE_VLLM_BACKEND": v}),
        "MOE_ORACLE_DOMAIN_SIZE": lambda v: check_env({"MOE_ORACLE_DOMAIN_SIZE": v}),
    }
    for name, read in readers.items():
        for value in (deep, "9" * 5000, "\u0663"):
            try:
                read(value)
            except BadInputError as exc:
                line = exc.one_line()
                assert name in line and "\n" not in line and len(line) < 1500, line
            else:
                assert name != "MOE_ORACLE_DOMAIN_SIZE" and value != deep, (name, value[:20])


def test_vllm_explicit_backend_is_validated_whatever_the_domain_variable_says():
    from moe_oracle.engines.vllm.plugin import resolve
    from moe_oracle.engines.vllm.snapshot import VllmSnapshot

    config = json.loads((PRESETS / "deepseek-ai--DeepSeek-V4-Flash" / "config.json").read_text())
    snap = VllmSnapshot(
        architecture="DeepseekV4ForCausalLM",
        hf_config=config,
        model=FLASH,
        additional_config={"moe_oracle": {"backend": "no_such_backend"}},
        env={"MOE_ORACLE_DOMAIN_SIZE": "9" * 5000},
    )
    out = resolve(snap)
    assert out.action == "refuse" and "MOE_ORACLE_DOMAIN_SIZE" in out.error, out


# --- the module entry ---------------------------------------------------------------------------------------


def test_python_m_does_not_import_the_working_directory(tmp_path):
    import subprocess
    import sys

    for name in ("json", "click", "shlex"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('imported {name}.py from the working directory')\n")
    done = subprocess.run(
        [sys.executable, "-m", "moe_oracle", "list", "devices"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "h200" in done.stdout, done.stderr


# --- engine settings: memory share, decode batch, all2all ------------------------------------------------------


def test_select_default_engine_honours_memory_fraction():
    code, out, err = run("select", FLASH, "--device", "h200", "--memory-fraction", "0.5")
    assert code == 0 and "engine share 0.5:" in out, (err, out[-600:])


def test_max_num_seqs_reaches_the_engine_command():
    def argv(engine: str, *more: str) -> list[str]:
        code, out, err = run("plan", FLASH, "--device", "h200", "--engine", engine, *more, "--json")
        assert code == 0, err
        return json.loads(out)["commands"][0]["argv"]

    vllm = argv("vllm", "--max-num-seqs", "64")
    assert vllm[vllm.index("--max-num-seqs") + 1] == "64"
    sglang = argv("sglang", "--max-num-seqs", "64")  # server-wide: 64 per rank x attention DP 8
    assert sglang[sglang.index("--max-running-requests") + 1] == "512"
    assert "--max-num-seqs" not in argv("vllm") and "--max-running-requests" not in argv("sglang")


def test_huge_max_num_seqs_is_refused_not_clamped():
    code, _, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--max-num-seqs", "99999999999999999999")
    assert code == 2 and "--max-num-seqs" in one_line(err)
    code, _, err = run("select", FLASH, "--device", "h200", "--max-num-seqs", "9999")
    assert code == 2 and "--max-num-seqs 9999 is more than the per-rank step budget" in one_line(err)


def test_vllm_budget_below_max_num_seqs_is_refused_with_the_rule():
    code, _, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--max-num-batched-tokens", "1")
    assert code == 2 and "scheduler.py#L331-L335" in one_line(err) and "--max-num-batched-tokens 1024" in err
    args = ["plan", FLASH, "--device", "h200", "--engine", "vllm", "--max-num-batched-tokens", "64", "--max-num-seqs"]
    assert run(*args, "128")[0] == 2 and run(*args, "64")[0] == 0


def test_all2all_backend_is_validated_per_engine():
    code, _, err = run("plan", FLASH, "--device", "h200", "--engine", "sglang", "--all2all-backend", "banana")
    assert code == 2 and "SGLang 0.5.23 has no --all2all-backend" in one_line(err)
    code, _, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--all2all-backend", "banana")
    assert code == 2 and "mori_high_throughput" in one_line(err)
    code, _, err = run("select", FLASH, "--device", "h200", "--all2all-backend", "banana")
    assert code == 2, err
    code, out, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--all2all-backend", "naive")
    assert code == 0 and "--all2all-backend naive" in out, err


# --- replay: the CLI's rules, and records of an earlier catalogue -----------------------------------------------


def _record_file(tmp_path, edit) -> str:
    import copy

    from moe_oracle.decide.record import fingerprint

    code, out, err = run("select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", "--json")
    assert code == 0, err
    doc = copy.deepcopy(json.loads(out))
    edit(doc["inputs"])
    doc["fingerprint"] = fingerprint(doc["inputs"], doc["oracle_version"])  # as the writer computed it
    path = tmp_path / "record.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_replay_refuses_a_domain_larger_than_the_devices(tmp_path):
    path = _record_file(tmp_path, lambda i: i["deployment"]["topology"].update(domain_size=16, gpus_per_node=16))
    code, _, err = run("select", "--replay", path)
    assert code == 2 and "inputs.deployment.topology.domain_size" in one_line(err) and "8 GPUs" in err


def test_replay_refuses_an_env_the_cli_refuses(tmp_path):
    path = _record_file(tmp_path, lambda i: i["deployment"]["env"].update(MORI_SHMEM_HEAP_SIZE="1e99"))
    code, _, err = run("select", "--replay", path)
    assert code == 2 and "MORI_SHMEM_HEAP_SIZE='1e99' is not a size" in one_line(err)


def _earlier_catalogue(inputs):
    inputs["deployment"]["device"]["memory_gib"] = 141.0  # the h200 figure before the driver's totals


def test_replay_of_an_earlier_catalogue_is_decided_again_with_a_note(tmp_path):
    code, _, err = run("select", "--replay", _record_file(tmp_path, _earlier_catalogue))
    assert code in (0, 5), err
    assert "earlier device catalogue: h200 memory_gib 141 (today's catalogue: 139.8 GiB" in err
    assert "not the catalogue's" not in err and "unedited" not in err


def test_replay_of_an_earlier_catalogue_still_meets_the_rule_its_broken_field_breaks(tmp_path):
    """The field checks come before the catalogue: the older reproducers (tests/cli/test_hostile_inputs.py
    test_corrupted_record_fields_are_refused) keep their rule on a record of the earlier catalogue."""
    cases = {
        ("engine", "trtllm"): "inputs.engine",
        ("override", 5): "inputs.override = 5",
        ("allow_fallback", "yes"): "inputs.allow_fallback",
    }
    for (key, value), needle in cases.items():

        def edit(inputs, key=key, value=value):
            _earlier_catalogue(inputs)
            inputs[key] = value

        code, _, err = run("select", "--replay", _record_file(tmp_path, edit))
        assert code == 2 and needle in one_line(err), err


def test_replay_still_refuses_a_device_no_catalogue_had(tmp_path):
    path = _record_file(tmp_path, lambda i: i["deployment"]["device"].update(memory_gib=140.5))
    code, _, err = run("select", "--replay", path)
    assert code == 2 and "memory_gib 140.5 (the catalogue's: 139.8)" in one_line(err)


def test_matrix_json_lists_each_advisory_once(tmp_path):
    from moe_oracle.decide.advisories import MAX_ADVISORIES, MAX_TEXT

    title = "t" * MAX_TEXT
    advisories = [
        {"id": f"SITE-{i}", "title": title, "link": "https://example.org", "backend": "deep_gemm_mega_moe"}
        for i in range(MAX_ADVISORIES)
    ]
    path = tmp_path / "advisories.json"
    path.write_text(json.dumps({"schema": 1, "advisories": advisories}))
    args = ["matrix", "--models", FLASH, "--devices", "h200", "--topologies", "dp8ep8", "--format", "json"]
    code, out, err = run(*args, "--advisories", str(path))
    assert code == 0, err
    doc = json.loads(out)
    assert sorted(doc["advisories"]) == sorted(a["id"] for a in advisories)
    assert out.count(title) == MAX_ADVISORIES  # each title once, in the top-level list
    refs = [r for c in doc["cells"] for r in c["reasons"] if r["code"] == "KNOWN_BAD"]
    assert refs and all(r["advisory"] in doc["advisories"] for r in refs)
    assert len(out) < 3 * path.stat().st_size
