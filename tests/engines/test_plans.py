"""Launch plans: contents per example, replicas across domains, refusals and the CLI (plan, serve)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from moe_oracle.answers.replicas import replica_deployment
from moe_oracle.errors import BadInputError, OverrideRefusedError
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.launch.model import LaunchPlan
from moe_oracle.rules import Engine
from tests.cli.runner import cli

V4 = "deepseek-ai/DeepSeek-V4-Flash"
GLM = "zai-org/GLM-5-FP8"


def plan(
    model: str, engine: str, software: str | None = None, override: str | None = None, **flags: object
) -> LaunchPlan:
    return build_plan(
        PlanRequest(
            model=model,
            flags=DeploymentFlags(**flags),  # type: ignore[arg-type]
            engine=Engine(engine),
            software=software,
            override=override,
        )
    )


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def derived(p: LaunchPlan, key: str) -> int:
    return next(d.value for d in p.derived if d.key == key)


# --- vLLM ------------------------------------------------------------------------------------


def test_vllm_dsv4_b200_runs_deep_gemm_mega_moe() -> None:
    p = plan(V4, "vllm", device="b200", dp=8, ep=8)
    assert p.backend == "deep_gemm_mega_moe" and p.variant == "sm100_fp8xfp4"
    assert p.argv[:3] == ["vllm", "serve", V4]
    assert flag(p.argv, "--moe-backend") == "deep_gemm_mega_moe"
    assert flag(p.argv, "--data-parallel-size") == "8" and flag(p.argv, "--tensor-parallel-size") == "1"
    assert "--enable-expert-parallel" in p.argv and "--all2all-backend" not in p.argv
    assert p.env == {}
    assert derived(p, "deepgemm_num_max_tokens_per_rank") == 9600
    assert derived(p, "deepgemm_symm_buffer_bytes") == 4_996_874_624
    assert all(g["chosen"] == "deep_gemm_mega_moe:sm100_fp8xfp4" for g in p.groups if g.get("built") is not False)
    assert p.fingerprint.startswith("sha256:")


def test_vllm_dsv4_mi355x_runs_aiter_with_mori() -> None:
    p = plan(V4, "vllm", device="mi355x", dp=8, ep=8)
    assert p.backend == "aiter_mega_moe"
    assert flag(p.argv, "--moe-backend") == "aiter_mega_moe"
    assert flag(p.argv, "--all2all-backend") == "mori_high_throughput"
    assert p.env == {"VLLM_ROCM_USE_AITER": "1", "VLLM_ROCM_USE_AITER_MOE": "1", "MORI_SHMEM_HEAP_SIZE": "8G"}
    assert derived(p, "aiter_max_tok_per_rank") == 8192
    assert derived(p, "mori_shmem_heap_bytes") == 8 << 30


def test_vllm_heap_grows_with_tokens_and_keeps_a_larger_user_value() -> None:
    p = plan(V4, "vllm", device="mi355x", dp=8, ep=8, max_num_batched_tokens=16384)
    assert p.env["MORI_SHMEM_HEAP_SIZE"] == "10G"  # the InferenceX value at 16384 batched tokens
    kept = build_plan(
        PlanRequest(V4, DeploymentFlags(device="mi355x", dp=8, ep=8), Engine.VLLM, env={"MORI_SHMEM_HEAP_SIZE": "40G"})
    )
    assert kept.env["MORI_SHMEM_HEAP_SIZE"] == "40G"
    assert any("40G from your environment is kept" in n for n in kept.notes)


def test_vllm_h200_serves_v4_and_glm_through_moe_oracles_runtime() -> None:
    """The plug-in route: no --moe-backend (vLLM's native mega path is SM100-only), the variant pinned for it."""
    import json

    for p, variant in (
        (plan(V4, "vllm", device="h200", dp=8, ep=8), "deep_gemm_mega_moe:sm90_fp8xfp4"),
        (plan(GLM, "vllm", device="h200", dp=8, ep=8), "deep_gemm_mega_moe:sm90_fp8xfp8"),
    ):
        assert p.fused and "--moe-backend" not in p.argv
        assert json.loads(flag(p.argv, "--additional-config")) == {"moe_oracle": {"backend": variant}}
        assert flag(p.argv, "--data-parallel-size") == "8" and "--enable-expert-parallel" in p.argv
        assert any("moe-oracle's runtime serves layer group(s)" in n for n in p.notes)
        assert any(d.key.startswith("deepgemm_") for d in p.derived)
    # the wheel alone has no SM90 mega kernel: vLLM's default command, every rejection with its fix
    bare = plan(V4, "vllm", device="h200", dp=8, ep=8, software="vllm-0.33.0")
    assert not bare.fused and bare.default_command_reason and "KERNEL_MISSING" in bare.default_command_reason
    assert all(r["reasons"] and r["reasons"][0]["fix"] for r in bare.rejected)


def test_vllm_two_h200_nodes_refuse_dp16_and_keep_it_without_fused_backend() -> None:
    p = plan(V4, "vllm", device="h200", nodes=2, dp=16, ep=16, software="vllm-0.33.0")
    rep = p.replicas
    assert rep is not None and not rep.adopted and rep.count == 2
    assert rep.layout.label() == "DP8+EP8" and rep.requested.label() == "DP16+EP16"
    assert any("EP_EXCEEDS_DOMAIN" in r for r in rep.refused_reasons)
    assert rep.why_not and "KERNEL_MISSING" in rep.why_not[0]  # replicas fix the domain, not the kernel
    # the requested layout is planned as multi-node data parallel
    assert [(c.node_rank, c.replica) for c in p.commands] == [(0, 0), (1, 0)]
    head, other = p.commands[0].argv, p.commands[1].argv
    assert flag(head, "--data-parallel-size") == "16" and flag(head, "--data-parallel-size-local") == "8"
    assert flag(head, "--data-parallel-address") == "${HEAD_NODE_IP}" and "--headless" not in head
    assert flag(other, "--data-parallel-start-rank") == "8" and "--headless" in other
    assert "HEAD_NODE_IP" in p.placeholders


def test_two_b200_nodes_adopt_two_dp8_ep8_replicas() -> None:
    p = plan(V4, "vllm", device="b200", nodes=2, dp=16, ep=16)
    rep = p.replicas
    assert rep is not None and rep.adopted and rep.count == 2
    assert p.backend == "deep_gemm_mega_moe"
    assert [c.replica for c in p.commands] == [0, 1]
    for c in p.commands:
        assert flag(list(c.argv), "--data-parallel-size") == "8"
        assert "--data-parallel-address" not in c.argv  # independent servers
    assert "router" in rep.router_hint.lower() and "two DP8+EP8" in rep.router_hint
    assert any("EP_EXCEEDS_DOMAIN" in r for r in rep.refused_reasons)
    assert rep.refused_fingerprint.startswith("sha256:") and rep.refused_fingerprint != p.fingerprint


def test_override_refused_only_for_the_domain_gets_the_replica_plan() -> None:
    p = plan(V4, "vllm", device="b200", nodes=2, dp=16, ep=16, override="deep_gemm_mega_moe")
    assert p.replicas is not None and p.replicas.adopted and p.override == "deep_gemm_mega_moe"


def test_override_refused_raises() -> None:
    with pytest.raises(OverrideRefusedError):
        plan(GLM, "vllm", device="h200", dp=8, ep=8, override="aiter_mega_moe")
    with pytest.raises(OverrideRefusedError):
        plan(V4, "vllm", device="h200", nodes=2, dp=16, ep=16, override="deep_gemm_mega_moe", software="vllm-0.33.0")
    # through moe-oracle's runtime GLM on Hopper is no longer refused
    assert plan(GLM, "vllm", device="h200", dp=8, ep=8, override="deep_gemm_mega_moe").fused


def test_vllm_ep_must_span_tp_times_dp() -> None:
    with pytest.raises(BadInputError, match="expert-parallel group"):
        plan(V4, "vllm", device="b200", dp=8, ep=4)


def test_replica_deployment_arithmetic() -> None:
    from moe_oracle.inputs import build_deployment

    dep, _ = build_deployment(DeploymentFlags(device="h200", nodes=4, dp=32, ep=32))
    rep = replica_deployment(dep)
    assert not isinstance(rep, str)
    one, count = rep
    assert count == 4 and one.parallel.dp == 8 and one.parallel.ep == 8 and one.topology.nodes == 1
    dep, _ = build_deployment(DeploymentFlags(device="h200", nodes=2, tp=2, dp=8, ep=8))
    assert isinstance(replica_deployment(dep), str)  # ep != tp*dp


# --- SGLang ----------------------------------------------------------------------------------


def test_sglang_dsv4_b200_megamoe_with_token_cap() -> None:
    p = plan(V4, "sglang", device="b200", dp=8, ep=8)
    assert p.argv[:3] == ["python3", "-m", "sglang.launch_server"]
    assert flag(p.argv, "--model-path") == V4
    assert flag(p.argv, "--tp-size") == "8" and flag(p.argv, "--attn-dp-size") == "8"
    assert flag(p.argv, "--ep-size") == "8" and flag(p.argv, "--moe-a2a-backend") == "megamoe"
    assert flag(p.argv, "--chunked-prefill-size") == "65536"
    assert "--enable-dp-attention" not in p.argv  # deprecated in 0.5.23
    # per-rank chunk 65536 // 8 = 8192, rounded up to sgl-deep-gemm 0.2.3.post2's alignment 1920 -> 9600
    assert p.env == {"SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK": "9600"}
    # ring = full pool (T >= 6144) = align(8*9600*6 + 32*239, 1920) = align(468448, 1920) = 468480
    assert derived(p, "deepgemm_ring_tokens") == 468480
    # SGLang's start-up check divides the per-rank chunk by attn_dp_size again: 8192 // 8 = 1024
    assert any("enforces only >= 1024" in n for n in p.notes)
    # DeepGEMM's in-kernel shared expert (FP8 block-128 shared expert on SM100 fp8xfp4)
    assert "shared" in " ".join(n for n in p.notes if "in-kernel shared expert" in n)


def test_sglang_dsv4_h200_megamoe_through_sglang_fp4_dequant() -> None:
    p = plan(V4, "sglang", device="h200", dp=8, ep=8)
    assert p.backend == "deep_gemm_mega_moe" and p.variant == "sm90_fp8xfp8"
    assert p.env["SGLANG_DSV4_FP4_DEQUANT"] == "1"
    assert any(n.startswith("Unverified:") and "14 binades" in n for n in p.notes)


def test_sglang_nvfp4_b200_runs_deepgemm_nvfp4() -> None:
    # SGLang's own release (sgl-deep-gemm 0.2.3.post2 has nvfp4_mega_moe) is the default profile's DeepGEMM on B200
    # (issue 29 D3: PR #323's front end, which lacks it, is installed only for an SM90 FP4 kernel)
    default = plan("nvidia/DeepSeek-V4-Flash-NVFP4", "sglang", device="b200", dp=8, ep=8)
    assert (default.backend, default.variant) == ("deep_gemm_mega_moe", "sm100_nvfp4")
    assert default.software == "sglang-0.5.23+moe-oracle"
    p = plan("nvidia/DeepSeek-V4-Flash-NVFP4", "sglang", "sglang-0.5.23", device="b200", dp=8, ep=8, speculative="mtp")
    # the NVFP4 layers take nvfp4xnvfp4, the checkpoint's MXFP4 MTP layer (built with --speculative mtp) fp8xfp4
    assert p.backend == "deep_gemm_mega_moe" and "sm100_nvfp4" in (p.variant or "").split(",")
    assert any("nvfp4_mega_moe" in n for n in p.notes)
    buffers = [d for d in p.derived if d.key == "deepgemm_symm_buffer_bytes"]
    assert {d.inputs["mma_type"] for d in buffers} == {"nvfp4xnvfp4", "fp8xfp4"}


def test_sglang_glm_h200_runs_sm90_fp8() -> None:
    p = plan(GLM, "sglang", device="h200", dp=8, ep=8)
    assert p.backend == "deep_gemm_mega_moe" and p.variant == "sm90_fp8xfp8"
    assert flag(p.argv, "--moe-a2a-backend") == "megamoe"
    # SGLang's own --mem-fraction-static formula holds the weights only with --chunked-prefill-size 8192 (1024 per
    # rank, cap 1920): SM90 (sgl-deep-gemm 0.2.3.post2) full pool = align(8*1920*8 + 32*239, 1920) = 130560
    assert flag(p.argv, "--chunked-prefill-size") == "8192"
    assert derived(p, "deepgemm_pool_tokens") == 130560
    assert any("silently runs SGLang's fused MoE" in n for n in p.notes)  # GLM-5 has a fallback


def test_sglang_mi355x_routes_megamoe_to_aiter() -> None:
    p = plan(V4, "sglang", device="mi355x", dp=8, ep=8)
    assert p.backend == "aiter_mega_moe" and flag(p.argv, "--moe-a2a-backend") == "megamoe"
    assert p.env == {
        "SGLANG_USE_AITER": "1",
        "SGLANG_AMD_USE_FLYDSL_MEGA_MOE": "1",
        "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR": "8192",
        "MORI_SHMEM_HEAP_SIZE": "8G",
    }
    # every derived value that names an environment variable is in the printed environment
    assert all(d.env in p.env for d in p.derived if d.env)
    assert any(n.startswith("Unverified:") and "SGLANG_USE_AITER" in n for n in p.notes)


def test_sglang_dsv4_h200_default_and_two_nodes() -> None:
    p = plan(V4, "sglang", device="h200", dp=8, ep=8, software="none")
    assert not p.fused and "--moe-a2a-backend" not in p.argv and p.env == {}
    two = plan(V4, "sglang", device="h200", nodes=2, dp=16, ep=16, software="none")
    assert [flag(list(c.argv), "--node-rank") for c in two.commands] == ["0", "1"]
    assert flag(two.argv, "--dist-init-addr") == "${HEAD_NODE_IP}:5000"


def test_sglang_glm_two_h200_nodes_adopt_replicas() -> None:
    p = plan(GLM, "sglang", device="h200", nodes=2, dp=16, ep=16)
    assert p.replicas is not None and p.replicas.adopted and p.backend == "deep_gemm_mega_moe"
    assert [flag(list(c.argv), "--tp-size") for c in p.commands] == ["8", "8"]
    assert "sglang-router" in p.replicas.router_hint
    # a router on another host must reach the replicas: SGLang listens on 127.0.0.1 by default
    assert all(flag(list(c.argv), "--host") == "0.0.0.0" for c in p.commands)
    assert "--port 8000" in p.replicas.router_hint


def test_software_all_changes_the_mi355x_vllm_plan() -> None:
    p = plan(V4, "vllm", software="all", device="mi355x", dp=8, ep=8)
    assert not p.fused
    row = next(r for r in p.rejected if r["candidate"] == "aiter_mega_moe:gfx950_a8w4")
    assert "KNOWN_BAD" in row["codes"]


def test_plan_json_document() -> None:
    doc = plan(V4, "vllm", device="mi355x", dp=8, ep=8).to_json()
    assert doc["schema"] == 1 and doc["engine"] == "vllm" and doc["engine_version"] == "0.33.0"
    assert doc["argv"][0] == "vllm" and doc["env"]["MORI_SHMEM_HEAP_SIZE"] == "8G"
    assert doc["fingerprint"] == doc["decision"]["fingerprint"]
    keys = {d["key"] for d in doc["derived"]}
    assert {"aiter_max_tok_per_rank", "mori_shmem_heap_bytes"} <= keys
    for d in doc["derived"]:
        assert d["inputs"] and d["formula"] and d["source"]
    assert doc["commands"][0]["shell"].startswith("VLLM_ROCM_USE_AITER=1")
    json.dumps(doc)


def test_every_plan_stays_inside_the_checked_vocabulary() -> None:
    from moe_oracle.launch.examples import ENGINES, EXAMPLES
    from moe_oracle.releases import sglang as sglang_release
    from moe_oracle.releases import vllm as vllm_release

    for ex in EXAMPLES:
        for engine in ENGINES:
            for software in (None, "all"):
                p = build_plan(ex.request(engine, software))
                vocab = vllm_release.flags if engine is Engine.VLLM else sglang_release.flags
                for cmd in p.commands:
                    vocab.check_argv(cmd.argv)
                    assert set(cmd.env_dict) <= set(vocab.EMITTED_ENV)


# --- CLI: exit codes, JSON, serve ------------------------------------------------------------


def test_cli_plan_text_and_json() -> None:
    r = cli("plan", V4, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm")
    assert r.code == 0, r.err
    assert "vllm serve deepseek-ai/DeepSeek-V4-Flash" in r.out and "--moe-backend deep_gemm_mega_moe" in r.out
    assert "DeepGEMM symmetric buffer per rank" in r.out and "formula:" in r.out and "inputs:" in r.out
    j = cli("plan", V4, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "sglang", "--json")
    assert j.code == 0 and json.loads(j.out)["backend"] == "deep_gemm_mega_moe"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (
            [
                "plan",
                GLM,
                "--device",
                "h200",
                "--dp",
                "8",
                "--ep",
                "8",
                "--engine",
                "vllm",
                "--moe-backend",
                "aiter_mega_moe",
            ],
            3,
        ),
        (["plan", V4, "--device", "b200", "--dp", "8", "--ep", "4", "--engine", "vllm"], 2),
        (["plan", V4, "--device", "b200", "--dp", "8", "--ep", "8"], 2),  # no --engine
        (["plan", V4, "--dp", "8", "--ep", "8", "--engine", "vllm"], 2),  # no --device
        (["plan", V4, "--device", "b200", "--engine", "vllm", "--moe-backend", "nope"], 2),
    ],
)
def test_cli_plan_refusals(args: list[str], code: int) -> None:
    r = cli(*args)
    assert r.code == code, (r.out, r.err)
    assert r.err.startswith("error: ") and len(r.err.strip().splitlines()) == 1


def test_cli_serve_dry_run_prints_plan_and_command() -> None:
    r = cli(
        "serve",
        V4,
        "--device",
        "b200",
        "--dp",
        "8",
        "--ep",
        "8",
        "--engine",
        "vllm",
        "--dry-run",
        "--",
        "--seed",
        "7",
    )
    assert r.code == 0, r.err
    assert "## Launch" in r.out
    last = r.out.strip().splitlines()[-1]
    assert last.startswith("dry run: would exec") and last.endswith("--moe-backend deep_gemm_mega_moe --seed 7")


def test_cli_serve_missing_engine_is_exit_4(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path)}
    r = cli("serve", V4, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm", env=env)
    assert r.code == 4
    assert r.err.strip().splitlines()[-1].startswith("error: cannot start vllm: 'vllm' is not on PATH")


def _fake_engine(tmp_path: Path, name: str) -> Path:
    script = tmp_path / name
    record = tmp_path / "record.json"
    body = (
        "import json, os, sys\n"
        "env = {k: v for k, v in os.environ.items() if k.startswith(('VLLM_', 'MORI', 'SGLANG_'))}\n"
        f"json.dump({{'argv': sys.argv, 'env': env}}, open({str(record)!r}, 'w'))\n"
    )
    script.write_text(f"#!{sys.executable}\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return record


def test_cli_serve_execs_the_engine_with_plan_env(tmp_path: Path) -> None:
    record = _fake_engine(tmp_path, "vllm")
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = cli(
        "serve", V4, "--device", "mi355x", "--dp", "8", "--ep", "8", "--engine", "vllm", "--", "--port", "9000", env=env
    )
    assert r.code == 0, r.err
    got = json.loads(record.read_text())
    assert got["argv"][1:3] == ["serve", V4] and got["argv"][-2:] == ["--port", "9000"]
    assert "--all2all-backend" in got["argv"]
    assert got["env"]["MORI_SHMEM_HEAP_SIZE"] == "8G" and got["env"]["VLLM_ROCM_USE_AITER"] == "1"


def test_cli_serve_fills_placeholders_and_picks_the_node(tmp_path: Path) -> None:
    record = _fake_engine(tmp_path, "python3")
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}
    args = ["serve", V4, "--device", "h200", "--nodes", "2", "--dp", "16", "--ep", "16", "--engine", "sglang"]
    args += ["--software", "none"]  # no fused backend: one two-node server, not replicas
    missing = cli(*args, "--node-rank", "1", env=env)
    assert missing.code == 2 and "HEAD_NODE_IP is not set" in missing.err
    r = cli(*args, "--node-rank", "1", env={**env, "HEAD_NODE_IP": "10.1.2.3"})
    assert r.code == 0, r.err
    got = json.loads(record.read_text())["argv"]
    assert got[got.index("--dist-init-addr") + 1] == "10.1.2.3:5000" and got[got.index("--node-rank") + 1] == "1"
    bad = cli(*args, "--node-rank", "5", env=env)
    assert bad.code == 2 and "no process for replica 0, node rank 5" in bad.err


def test_sglang_nvfp4_on_h200_takes_the_marlin_runner() -> None:
    for model in ("nvidia/DeepSeek-V4-Flash-NVFP4", "nvidia/GLM-5.1-NVFP4"):
        p = plan(model, "sglang", device="h200", dp=8, ep=8)
        assert flag(list(p.commands[0].argv), "--moe-runner-backend") == "marlin"
        assert any("modelopt_quant.py:2377-2386" in n for n in p.notes)
    # on B200 the default profile is SGLang's own sgl-deep-gemm, whose nvfp4_mega_moe runs the NVFP4 checkpoint
    # (megamoe, no Marlin runner)
    b200 = plan("nvidia/GLM-5.1-NVFP4", "sglang", device="b200", dp=8, ep=8)
    assert (b200.backend, b200.variant) == ("deep_gemm_mega_moe", "sm100_nvfp4")
    assert flag(list(b200.argv), "--moe-runner-backend") != "marlin"
    assert "--moe-runner-backend" not in plan("zai-org/GLM-5-FP8", "sglang", device="h200", dp=8, ep=8).argv


def test_sglang_every_multi_node_command_listens_beyond_localhost() -> None:
    for model, device in (("nvidia/GLM-5.1-NVFP4", "h200"), ("zai-org/GLM-5-FP8", "h200")):
        p = plan(model, "sglang", device=device, nodes=2, dp=16, ep=16)
        assert len(p.commands) == 2
        for cmd in p.commands:
            assert flag(list(cmd.argv), "--host") == "0.0.0.0", (model, cmd.where)
    single = plan("zai-org/GLM-5-FP8", "sglang", device="h200", dp=8, ep=8)
    assert "--host" not in single.commands[0].argv


# --- SGLang through moe-oracle's plug-in -------------------------------------------------------


def test_sglang_h200_serves_dsv4_pro_mxfp4_through_the_plugin() -> None:
    """Issue 23: SGLang alone reaches the SM90 mega kernel only after dequantizing MXFP4 to FP8 (twice the expert
    bytes); moe-oracle's plug-in runs sm90_fp8xfp4 on the MXFP4 experts. The launch loads the plug-in
    (SGLANG_PLUGINS), pins the variant, and sets no --moe-a2a-backend (SGLang's router and shared experts stay)."""
    p = build_plan(
        PlanRequest(
            model="deepseek-ai/DeepSeek-V4-Pro",
            flags=DeploymentFlags(device="h200", dp=8, ep=8, max_num_batched_tokens=1024),
            engine=Engine.SGLANG,
            memory_fraction=0.93,
        )
    )
    assert (p.backend, p.variant) == ("deep_gemm_mega_moe", "sm90_fp8xfp4")
    assert p.software.startswith("sglang-0.5.23+moe-oracle")
    assert p.env == {"SGLANG_PLUGINS": "moe_oracle", "MOE_ORACLE_SGLANG_BACKEND": "deep_gemm_mega_moe:sm90_fp8xfp4"}
    assert "--moe-a2a-backend" not in p.argv
    assert flag(p.argv, "--mem-fraction-static") == "0.93" and flag(p.argv, "--ep-size") == "8"
    assert derived(p, "deepgemm_num_max_tokens_per_rank") == 1152
    assert any("moe-oracle's runtime serves layer group(s)" in n for n in p.notes)
    assert any("PR #323" in n for n in p.notes)


def test_sglang_alone_keeps_its_own_megamoe_command() -> None:
    p = plan(GLM, "sglang", device="h200", dp=8, ep=8, software="sglang-0.5.23")
    assert flag(p.argv, "--moe-a2a-backend") == "megamoe" and "SGLANG_PLUGINS" not in p.env
