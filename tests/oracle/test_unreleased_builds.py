"""A choice only unreleased kernel builds serve says which build and where to get it; its validation is the
validation of the build that serves it (issue 20)."""

from __future__ import annotations

import json

from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.rules import Engine
from tests.cli.runner import cli

#: Mixtral-8x7B's expert width (14336) in block FP8: above the 4096 cap of PR #323 and sgl-deep-gemm
MIXTRAL_FP8 = (
    "--hidden-size", "4096", "--moe-intermediate-size", "14336", "--num-experts", "8", "--top-k", "2",
    "--weight-format", "fp8_block", "--device", "h200", "--dp", "8", "--ep", "8",
)  # fmt: skip
SM90_FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def _select(*flags: str) -> tuple[str, dict]:
    text, doc = cli("select", *flags), cli("select", *flags, "--json")
    assert text.code == 0 and doc.code == 0, text.err + doc.err
    return " ".join(text.out.split()), json.loads(doc.out)


def _chosen(doc: dict) -> dict:
    key = doc["chosen"]["backend"] + ":" + doc["chosen"]["variant"]
    return next(c for c in doc["candidates"] if f"{c['backend']}:{c['variant']}" == key)


def test_mixtral_width_fp8_names_the_unreleased_builds_and_is_not_validated_on_hardware():
    text, doc = _select(*MIXTRAL_FP8, "--software", "all")
    chosen = _chosen(doc)
    assert f"{chosen['backend']}:{chosen['variant']}" == SM90_FP8
    names = [b["name"] for b in chosen["builds"]]
    assert set(names) == {"deepgemm-nv_dev", "deepgemm-pr440", "deepgemm-pr411"}  # PR #323 refuses the width
    assert all(b["provenance"] in ("branch", "open-pr") and b["url"].startswith("https://") for b in chosen["builds"])
    note = chosen["unreleased_build"]
    assert note.startswith("needs an unreleased build: DeepGEMM nv_dev")  # the branch first, then the PRs
    for url in ("tree/nv_dev", "pull/440", "pull/411"):
        assert f"https://github.com/deepseek-ai/DeepGEMM/{url}" in note
    assert doc["layer_groups"][0]["unreleased_build"] == note
    assert chosen["validation"] == "source-only"
    assert chosen["validated"].startswith("read from source only") and "deepgemm-pr323" in chosen["validated"]
    assert "validated: read from source only (never run by moe-oracle) with DeepGEMM PR #440" in text
    assert "needs an unreleased build: DeepGEMM nv_dev" in text and "pull/440" in text
    assert "validated: ran on hardware" not in text


def test_a_release_serving_the_choice_says_nothing_of_unreleased_builds():
    flags = [f if f != "14336" else "2048" for f in MIXTRAL_FP8]
    text, doc = _select(*flags, "--software", "sgl-deep-gemm-0.2.5")
    chosen = _chosen(doc)
    assert f"{chosen['backend']}:{chosen['variant']}" == SM90_FP8
    assert [b["name"] for b in chosen["builds"]] == ["sgl-deep-gemm-0.2.5"]
    assert chosen["unreleased_build"] is None and "unreleased" not in text
    assert chosen["validation"] == "source-only" and "sgl-deep-gemm 0.2.5" in chosen["validated"]


def test_the_validated_build_keeps_its_validation_and_the_v4_flash_h200_plan_names_pr323():
    p = build_plan(
        PlanRequest(
            model=FLASH,
            flags=DeploymentFlags(device="h200", dp=8, ep=8),
            engine=Engine("vllm"),
        )
    )
    group = p.groups[0]
    assert group["validation"].startswith("ran on hardware through moe-oracle's runtime")
    assert group["unreleased_build"].startswith("needs an unreleased build: DeepGEMM PR #323")
    assert "https://github.com/deepseek-ai/DeepGEMM/pull/323" in group["unreleased_build"]
    note = next(n for n in p.notes if n.startswith("This plan needs an unreleased build"))
    assert "DeepGEMM PR #323" in note and "https://github.com/deepseek-ai/DeepGEMM/pull/323" in note
    assert "vendored 2.8.1" in note


def test_matrix_json_carries_the_build_a_cell_needs():
    r = cli(
        "matrix",
        "--format",
        "json",
        "--models",
        FLASH,
        "--devices",
        "h200",
        "--topologies",
        "dp8ep8",
        "--engine",
        "vllm",
    )
    assert r.code == 0, r.err
    cells = [c for c in json.loads(r.out)["cells"] if c["chosen"] and c["target"] == "cuda_sm90"]
    assert cells
    for cell in cells:
        main = cell["groups"][0]
        assert main["unreleased_build"].startswith("needs an unreleased build: DeepGEMM PR #323")
        assert main["validated"].startswith("ran on hardware")
