"""Library builds: each DeepGEMM build is recognised from what a probe sees, and its own limits decide.

The probe evidence below is what ``moe_oracle.software.probe`` records for each build (distribution,
version, entry points, Python signatures), as read from the builds' sources (``moe-oracle list builds``).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from moe_oracle.cli.app import cli
from moe_oracle.releases.profiles import NAMED_PROFILES, named_profile, profile_names
from moe_oracle.rules import LayerScenario, ReasonCode
from moe_oracle.rules.build import Provenance, builds_present
from moe_oracle.software.catalog import known_builds, known_libraries
from moe_oracle.software.probe import probe_library
from moe_oracle.software.types import LibraryBuild, LibrarySpec
from tests.oracle.helpers import GLM5_FP8, V4_FLASH, chosen, manual, run

SM90_FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
_FP8_SIG = ("y", "l1_weights", "l2_weights", "sym_buffer", "recipe", "activation", "activation_clamp", "fast_math")

#: (what the probe records, the build it is)
EVIDENCE = [
    (
        dict(dist="sgl-deep-gemm", version="0.0.0", symbols={"fp8_mega_moe", "_C.fp8_fp4_mega_moe_sm90"}),
        "deepgemm-pr323",
    ),
    (
        dict(
            dist="sgl-deep-gemm",
            version="0.2.5",
            symbols={"fp8_mega_moe", "get_symm_buffer_for_sm90_mega_moe"},
            params={"fp8_mega_moe": (*_FP8_SIG, "num_tokens_bound")},
        ),
        "sgl-deep-gemm-0.2.5",
    ),
    (
        dict(dist="sgl-deep-gemm", version="0.2.3.post2", symbols={"fp8_mega_moe"}, params={"fp8_mega_moe": _FP8_SIG}),
        "sgl-deep-gemm-0.2.3.post2",
    ),
    (dict(dist="deep_gemm", version="2.6.1", symbols={"fp8_mega_moe", "fp4_fp4_mega_moe"}), "deepgemm-nv_dev"),
    (
        dict(
            dist="deep_gemm",
            version="2.6.1",
            symbols={"fp8_mega_moe", "fp4_fp4_mega_moe", "SM90FusedSymmBuffer", "get_symm_buffer_for_sm90_mega_moe"},
            params={
                "fp8_mega_moe": (*_FP8_SIG, "num_tokens_bound"),
                "get_symm_buffer_for_sm90_mega_moe": ("group", "num_experts", "fused"),
            },
        ),
        "deepgemm-pr440",
    ),
    (dict(dist="deep_gemm", version="2.6.1", symbols={"fp8_mega_moe", "fp8_mxfp4_mega_moe"}), "deepgemm-pr411"),
    (
        dict(dist="tokenspeed-deepgemm", version="2.8.2.post20261020", symbols={"fp8_fp4_mega_moe", "bf16_mega_moe"}),
        "deepgemm-2.8.2",
    ),
    (
        dict(
            dist="vllm (vendored vllm.third_party.deep_gemm)",
            version="2.8.1",
            import_path="vllm.third_party.deep_gemm",
            symbols={"fp8_fp4_mega_moe", "nvfp4_mega_moe"},
        ),
        "vllm-deepgemm-2.8.1",
    ),
]


def _lib(**seen) -> LibraryBuild:
    seen["symbols"] = frozenset(seen["symbols"])
    return LibraryBuild(name="deep_gemm", **seen)


@pytest.mark.parametrize(("seen", "name"), EVIDENCE, ids=[n for _, n in EVIDENCE])
def test_each_build_is_recognised_from_the_probe_evidence(seen, name):
    (build,) = builds_present(_lib(**seen), known_builds().values())
    assert build.name == name


def test_an_unknown_build_is_not_guessed():
    assert (
        builds_present(_lib(dist="deep_gemm", version="2.6.1", symbols={"fp8_fp4_mega_moe"}), known_builds().values())
        == []
    )
    # 0.2.5's signature without its version: not 0.2.5 (a later wheel may change the limits)
    seen = dict(EVIDENCE[1][0], version="0.2.6")
    assert [b.name for b in builds_present(_lib(**seen), known_builds().values())] == []


def test_every_build_is_declared_with_probe_visible_entry_points_and_a_profile():
    catalogue = known_libraries()
    builds = known_builds()
    assert {
        "deepgemm-pr323",
        "deepgemm-pr411",
        "deepgemm-pr440",
        "deepgemm-nv_dev",
        "sgl-deep-gemm-0.2.5",
        "sgl-deep-gemm-0.2.3.post2",
        "deepgemm-2.8.2",
        "vllm-deepgemm-2.8.1",
    } <= set(builds)
    for b in builds.values():
        assert b.symbols <= set(catalogue[b.library].symbols), b.name  # the probe resolves exactly these
        assert b.ref and b.title
        profile = named_profile(b.name)
        assert profile is not None and profile.libraries[b.library].builds == {b.name}
        assert b.name in profile_names() and b.name not in NAMED_PROFILES
    unreleased = {n for n, b in builds.items() if b.provenance is not Provenance.RELEASE}
    assert unreleased == {"deepgemm-pr323", "deepgemm-pr411", "deepgemm-pr440", "deepgemm-nv_dev"}


def test_the_probe_records_python_signatures_without_calling_anything():
    spec = LibrarySpec(name="json", symbols={"dumps": "serialize", "decoder.JSONDecoder": "a class"})
    lib = probe_library("json", spec)
    assert lib.symbols == {"dumps", "decoder.JSONDecoder"}
    assert "obj" in lib.params["dumps"] and "strict" in lib.params["decoder.JSONDecoder"]


def _glm_like(inter: int):
    return manual(hidden=6144, inter=inter, experts=256, top_k=8, fmt="fp8_block", architecture="GlmMoeDsaForCausalLM")


def test_a_release_limit_refuses_with_its_code_and_says_it_is_a_release():
    d = run(_glm_like(4608), "h200", dp=8, ep=8, software="sgl-deep-gemm-0.2.5")
    c = next(c for c in d.groups[0].candidates if c.spec.key == SM90_FP8)
    (r,) = [r for r in c.failures if r.code is ReasonCode.EXPERT_WIDTH_EXCEEDS]
    assert "sgl-deep-gemm 0.2.5" in r.message and "a release" in r.message
    assert "moe_intermediate_size=4608 exceeds 4096" in r.message
    assert "nv_dev" in r.remediation


def test_a_pull_request_limit_says_it_was_read_from_unreleased_source():
    d = run(_glm_like(4608), "h200", dp=8, ep=8, software="deepgemm-pr323")
    c = next(c for c in d.groups[0].candidates if c.spec.key == SM90_FP8)
    (r,) = [r for r in c.failures if r.code is ReasonCode.EXPERT_WIDTH_EXCEEDS]
    assert "DeepGEMM PR #323" in r.message and "unmerged pull request, in no release" in r.message


def test_under_all_one_build_that_fits_is_enough():
    assert chosen(run(_glm_like(4608), "h200", dp=8, ep=8, software="all")) == SM90_FP8  # nv_dev has no cap
    assert chosen(run(_glm_like(4608), "h200", dp=8, ep=8, software="deepgemm-nv_dev")) == SM90_FP8


def test_real_models_keep_their_choice_on_every_build_that_has_the_kernel():
    for sw in ("all", "deepgemm-pr323", "deepgemm-nv_dev", "deepgemm-pr440", "sgl-deep-gemm-0.2.5", "sglang-0.5.23"):
        assert chosen(run(GLM5_FP8, "h200", dp=8, ep=8, software=sw)) == SM90_FP8, sw
    every = chosen(run(V4_FLASH, "h200", dp=8, ep=8, software="all"))
    assert chosen(run(V4_FLASH, "h200", dp=8, ep=8, software="deepgemm-pr323")) == every
    # no SM90 FP8 x MXFP4 kernel in 0.2.5: the exact MXFP4 -> FP8 conversion serves V4-Flash's experts
    d = run(V4_FLASH, "h200", dp=8, ep=8, software="sgl-deep-gemm-0.2.5")
    assert chosen(d) is None or chosen(d).startswith(SM90_FP8)


def test_build_rank_cap_is_a_layer_limit():
    (limit,) = [c for c in known_builds()["sgl-deep-gemm-0.2.5"].limits["fp8_mega_moe"] if "ep <=" in c.rule]
    group = _glm_like(2048).layer_groups[0]
    assert limit.evaluate(LayerScenario(group, ep=32)) is None
    r = limit.evaluate(LayerScenario(group, ep=64))
    assert r is not None and r.code is ReasonCode.EP_EXCEEDS_DOMAIN and "ep=64 exceeds 32" in r.message


def test_list_builds_json():
    out = CliRunner().invoke(cli, ["list", "builds", "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["build"]: r for r in json.loads(out.output)}
    assert rows["deepgemm-pr411"]["provenance"] == "open-pr"
    assert "ep <= 64" in rows["deepgemm-pr411"]["limits beyond the variants' checks"]
    assert rows["sgl-deep-gemm-0.2.5"]["token alignment"] == "sm90 128, sm100 1920"
    assert "num_tokens_bound" in rows["sgl-deep-gemm-0.2.5"]["recognised by"]


def test_a_probed_library_is_judged_by_the_build_it_is_recognised_as():
    """What `--software installed` sees (no build names, only evidence): recognised, then held to its limits."""
    from moe_oracle.decide.selection import decide
    from moe_oracle.inputs import DeploymentFlags, build_deployment
    from moe_oracle.software.types import SoftwareProfile

    seen = dict(EVIDENCE[1][0])
    seen["symbols"] = set(known_builds()["sgl-deep-gemm-0.2.5"].symbols)
    installed = SoftwareProfile(
        name="installed",
        libraries={"torch": named_profile("all").libraries["torch"], "deep_gemm": _lib(**seen)},
    )
    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))
    fits, wide = (decide(_glm_like(i), dep, installed).groups[0] for i in (2048, 4608))
    assert fits.chosen is not None and fits.chosen.spec.key == SM90_FP8
    c = next(c for c in wide.candidates if c.spec.key == SM90_FP8)
    assert [r.code for r in c.failures] == [ReasonCode.EXPERT_WIDTH_EXCEEDS]
    assert "sgl-deep-gemm 0.2.5" in c.failures[0].message
