"""The DeepGEMM builds that exist (December 2026): how each is recognised, and the limits its own source asserts.

Every DeepGEMM variant's entry-point check names :data:`BUILDS`; a scenario passes when a build present in
the software profile exports the variant's kernel and meets that build's limits. A build's limits are only
those stricter than the variant's own checks (which hold for every build). Facts and their files:
https://github.com/deepseek-ai/DeepGEMM/pull/323, https://github.com/deepseek-ai/DeepGEMM/pull/409, and the
sources named per build below
(release wheels read from PyPI; branch and pull-request sources from public index copies, so their limits
are marked as read from unreleased source by :class:`~moe_oracle.rules.build.Provenance`).

Order matters: the probe recognises a library as the first build whose marks it shows, so builds whose
marks are unique entry points come before those told apart by distribution and version.
"""

from __future__ import annotations

from moe_oracle.rules import LayerScenario, ReasonCode, Scenario, Scope
from moe_oracle.rules import checks as c
from moe_oracle.rules.build import BuildSpec, Provenance
from moe_oracle.rules.check import Check, Finding

LIBRARY = "deep_gemm"

_SM100 = frozenset(
    {
        "fp8_fp4_mega_moe",
        "bf16_mega_moe",
        "SymmBuffer",
        "get_symm_buffer_for_mega_moe",
        "transform_weights_for_mega_moe",
        "get_block_m_for_mega_moe",
        "per_token_cast_to_fp8",
        "per_token_cast_to_fp4",
    }
)
_SM90_FP8 = frozenset({"fp8_mega_moe", "get_symm_buffer_for_sm90_mega_moe", "transform_weights_for_mega_moe_sm90"})
_NON_FUSED = (
    "No fused SM90 kernel of this build fits; leave --moe-backend unset (non-fused MoE), or another --software build."
)


def _inter_at_most_4096(source: str) -> Check:
    return c.expert_width_at_most(
        4096,
        why="intermediate_hidden / 64 <= 64: one bit per 64-wide L1 N-block in a uint64 mask",
        remediation="Use DeepGEMM nv_dev (PR #383), which has no intermediate-size cap, or leave "
        "--moe-backend unset (non-fused MoE).",
        sources=(source,),
    )


def _pr411_hidden_ok(sc: Scenario | LayerScenario) -> bool:
    h = sc.group.hidden_size
    return h % 512 == 0 and (h <= 8192 or h % 1024 == 0)


def _pr411_hidden_message(sc: Scenario | LayerScenario) -> str:
    h = sc.group.hidden_size
    return f"hidden_size={h}: PR #411 needs hidden % 512 == 0 and (hidden <= 8192 or hidden % 1024 == 0)"


_PR411_SRC = "huangzhilin-hzl/DeepGEMM index copies @84cb3854, @008e9db9 csrc/apis/sm90_mega.hpp (PR #411)"

PR440 = BuildSpec(
    name="deepgemm-pr440",
    url="https://github.com/deepseek-ai/DeepGEMM/pull/440",
    library=LIBRARY,
    title="DeepGEMM PR #440 (fused SM90 FP8 mega-MoE, over nv_dev)",
    provenance=Provenance.OPEN_PR,
    ref="deepseek-ai/DeepGEMM PR #440 (zkyue, opened 2026-09-13); index copy @187288bb: csrc/apis/sm90_fused_mega.hpp, "
    "deep_gemm/mega/__init__.py",
    symbols=_SM100 | _SM90_FP8 | {"SM90FusedSymmBuffer", "fp4_fp4_mega_moe"},
    marks=("SM90FusedSymmBuffer",),
    params={"get_symm_buffer_for_sm90_mega_moe": ("fused",), "fp8_mega_moe": ("num_tokens_bound",)},
    token_alignment={"sm90": 128},
    note="fp8_mega_moe on a default (non-fused) buffer runs nv_dev's PR #383 kernels, which moe-oracle's "
    "sm90_fp8xfp8 layer allocates. The fused path (get_symm_buffer_for_sm90_mega_moe(fused=True), "
    "_C.sm90_fused_fp8_mega_moe) needs intermediate <= 4096 and shrinks the buffer only from 1024 tokens per rank "
    "(ring pool): 3023 -> 700 MiB on the V4-Flash shape and 5083 -> 1113 MiB on V4-Pro at 8192 tokens, 8 x H100 EP8 "
    "(PR description). The 857 MiB figure (6828 -> 857 MiB, 288 experts top-8, 8192 tokens) is from "
    "sgl-project/DeepGEMM#88, not #440; no 4000 MiB baseline was found in either.",
)

PR411 = BuildSpec(
    name="deepgemm-pr411",
    url="https://github.com/deepseek-ai/DeepGEMM/pull/411",
    library=LIBRARY,
    title="DeepGEMM PR #411 (SM90 FP8 x MXFP4 unified persistent kernel)",
    provenance=Provenance.OPEN_PR,
    ref="deepseek-ai/DeepGEMM PR #411 (huangzhilin-hzl, opened 2026-08-20); huangzhilin-hzl/DeepGEMM index copies "
    "@22590417, @14a265af (deep_gemm/mega/__init__.py), @84cb3854, @008e9db9 (csrc/apis/sm90_mega.hpp)",
    symbols=_SM90_FP8 | {"fp8_mxfp4_mega_moe", "transform_weights_for_fp8_mxfp4_mega_moe_sm90"},
    marks=("fp8_mxfp4_mega_moe",),
    token_alignment={"sm90": 128},
    limits={
        "fp8_mxfp4_mega_moe": (
            c.scenario_predicate(
                ReasonCode.SHAPE_UNSUPPORTED,
                _pr411_hidden_ok,
                rule="hidden % 512 == 0 and (hidden <= 8192 or hidden % 1024 == 0)",
                message=_pr411_hidden_message,
                remediation=_NON_FUSED,
                sources=(_PR411_SRC,),
                scope=Scope.LAYER,
            ),
            c.multiple_of(
                "moe_intermediate_size", 256, why="PR #411 host check", remediation=_NON_FUSED, sources=(_PR411_SRC,)
            ),
            c.ep_at_most(64, why="kSM90MegaMoEMaxRanks: 64 dispatch threads", sources=(_PR411_SRC,)),
        ),
    },
    note="Weights stay MXFP4: the loader rebases each K32 UE8M0 exponent into a bounded relative scale plus one "
    "FP32 secondary scale per expert, and the kernel decodes E2M1 to E4M3 in shared memory. moe-oracle has no "
    "variant for fp8_mxfp4_mega_moe (the rebased scales are not modelled); MXFP4 checkpoints run sm90_fp8xfp4 "
    "(PR #323) or sm90_fp8xfp8 after the exact load-time conversion. BLOCK_M is fixed at 64; the buffer size depends "
    "on the SM count. Its fp8_mega_moe (front end @22590417) is PR #383's; no limits of its own were read for it.",
)

#: The SM90 symmetric buffer of PR #323 (both kernels): every TMA row a multiple of 16 bytes
_PR323_BUFFER_SRC = (
    "DeepGEMM PR #323 8ddf7f96 csrc/apis/sm90_mega.hpp:218-221 (layout::Data(hidden / 32), "
    "layout::Data(intermediate_hidden * 4 / 64)), asserted at deep_gemm/include/deep_gemm/layout/mega_moe.cuh:331; "
    "seen on the H200 (benchmarks/results/h200/2026-12-01/family_sweep.log, GLM-4.5-Air)"
)
_PR323_BUFFER = (
    c.multiple_of(
        "hidden_size",
        512,
        why="the SM90 buffer's input scale row is hidden/32 bytes, a TMA row that must be a multiple of 16 bytes",
        remediation="No fused SM90 kernel of PR #323 for this hidden size; use a non-fused backend.",
        sources=(_PR323_BUFFER_SRC,),
    ),
    c.multiple_of(
        "moe_intermediate_size",
        256,
        why="the SM90 buffer's L2 activation scale row is intermediate/16 bytes, a TMA row that must be a multiple "
        "of 16 bytes",
        remediation="No fused SM90 kernel of PR #323 for this expert width; use a non-fused backend (the engine's "
        "own fused MoE).",
        sources=(_PR323_BUFFER_SRC,),
    ),
)


def _pr323_fp8_compiles(sc: Scenario | LayerScenario) -> Finding | None:
    """The SM90 FP8 kernel's combine-stage and pipeline assertions at every configuration the deployment's calls
    reach (``moe_oracle_backends._sm90_fp8_kernel``: the host heuristics and the kernel's static assertions)."""
    from moe_oracle_backends import _sm90_fp8_kernel as k

    g = sc.group
    lim = k.first_failure(
        hidden=g.hidden_size,
        inter=g.moe_intermediate_size,
        num_experts=g.num_experts,
        top_k=g.top_k,
        num_ranks=max(sc.ep, 1),
        max_tokens=max(sc.tokens_per_rank, 1),
    )
    if lim is None:
        return None
    return Finding(
        f"hidden_size={g.hidden_size}: from {lim.first_failing_tokens} tokens per rank "
        f"({lim.config.tokens_per_expert:g} per expert, EP{sc.ep}) the kernel is compiled with {lim.config.label()} "
        f"and fails {'; '.join(lim.failed)}; this deployment reaches {sc.tokens_per_rank} tokens per rank"
    )


_PR323_COMPILE_SRC = (
    "DeepGEMM PR #323 8ddf7f96 csrc/jit_kernels/heuristics/sm90_mega_moe.hpp:45-141,521-598 (the configuration per "
    "call) and deep_gemm/include/deep_gemm/impls/sm90_fp8_mega_moe.cuh:309-345,2166-2187 (its static assertions); "
    "seen on the H200: H 8192 fails to compile at 64+ tokens per expert with 'Hidden is too large', H 2560 "
    "(4 chunks of 1280 bytes) with the chunk-multiple assertion (tests/runtime/test_gpu_kernel_limits.py)"
)
_PR323_FP8_COMPILES = Check(
    ReasonCode.SHAPE_UNSUPPORTED,
    test=_pr323_fp8_compiles,
    rule="every call up to the per-rank token budget compiles: at the block configuration picked for its tokens per "
    "expert, 3 x combine warps x 2 x hidden / combine chunks <= the shared memory before the barriers, and each "
    "combine chunk (2 x hidden / chunks bytes) a multiple of 512 bytes",
    remediation="Lower the per-rank token budget below the first failing count (--max-num-batched-tokens), use "
    "deep_gemm_mega_moe:sm90_fp8xfp4 (its combine adapts its chunks), or leave --moe-backend unset (non-fused MoE).",
    sources=(_PR323_COMPILE_SRC,),
    scope=Scope.LAYER,
)

PR323 = BuildSpec(
    name="deepgemm-pr323",
    url="https://github.com/deepseek-ai/DeepGEMM/pull/323",
    library=LIBRARY,
    title="DeepGEMM PR #323 (SM90 FP8 x MXFP4 and FP8 x FP8, sgl_deep_gemm front end)",
    provenance=Provenance.OPEN_PR,
    ref="deepseek-ai/DeepGEMM refs/pull/323/head 8ddf7f96: csrc/apis/sm90_mega.hpp, sgl_deep_gemm/__init__.py "
    "(the build measured on the H200, docs/performance.md)",
    # sgl_deep_gemm/__init__.py exports neither get_block_m_for_mega_moe nor nvfp4_mega_moe (nor does the tree)
    symbols=(_SM100 - {"get_block_m_for_mega_moe"})
    | _SM90_FP8
    | {"_C.fp8_fp4_mega_moe_sm90", "transform_weights_for_mega_moe_sm90_fp4", "mega_moe_pre_dispatch_sm90"},
    marks=("_C.fp8_fp4_mega_moe_sm90",),
    token_alignment={"sm90": 384, "sm100": 384},
    limits={
        "fp8_mega_moe": (
            *_PR323_BUFFER,
            _inter_at_most_4096("DeepGEMM PR #323 8ddf7f96 csrc/apis/sm90_mega.hpp:351-352"),
            _PR323_FP8_COMPILES,
        ),
        "_C.fp8_fp4_mega_moe_sm90": _PR323_BUFFER,
    },
    note="Its fp8_mega_moe host check needs hidden % 128 only (sm90_mega.hpp:351), but the SM90 symmetric buffer both "
    "kernels share lays out TMA rows of hidden/32 and intermediate/16 bytes that must be 16-byte multiples "
    "(sm90_mega.hpp:218-221, asserted at layout/mega_moe.cuh:331): hidden % 512 and intermediate % 256. Seen on the "
    "H200: GLM-4.5-Air's intermediate 1408 stops at that assertion when the buffer is made. Installs as dist "
    "sgl-deep-gemm, version 0.0.0.",
)

SGL_025 = BuildSpec(
    name="sgl-deep-gemm-0.2.5",
    url="https://pypi.org/project/sgl-deep-gemm/0.2.5/",
    library=LIBRARY,
    title="sgl-deep-gemm 0.2.5 (SM90 FP8 x FP8; SM100 fp8xfp4, fp8xfp8, mxf4, nvfp4, bf16)",
    provenance=Provenance.RELEASE,
    ref="PyPI sgl-deep-gemm 0.2.5 wheel (2026-10): deep_gemm/__init__.py:356-450, "
    "include/deep_gemm/layout/sm90_mega_moe.cuh:13, include/deep_gemm/impls/sm90_fp8_mega_moe.cuh:192, and the "
    "sm90_mega.hpp:39-45 assertions compiled into _C.so",
    symbols=_SM100 | _SM90_FP8 | {"mega_moe_pre_dispatch_sm90", "nvfp4_mega_moe"},
    dists=("sgl-deep-gemm",),
    version="==0.2.5",
    params={"fp8_mega_moe": ("num_tokens_bound",)},
    token_alignment={"sm90": 128, "sm100": 1920},
    limits={
        "fp8_mega_moe": (
            c.multiple_of(
                "hidden_size",
                512,
                why="sgl-deep-gemm 0.2.5 get_symm_buffer_size_for_sm90_mega_moe (sm90_mega.hpp:45)",
                remediation="Use DeepGEMM nv_dev (PR #383, hidden % 256), or leave --moe-backend "
                "unset (non-fused MoE).",
                sources=("sgl-deep-gemm 0.2.5 _C.so: sm90_mega.hpp:45 hidden % 512 == 0",),
            ),
            c.multiple_of(
                "moe_intermediate_size",
                256,
                why="sgl-deep-gemm 0.2.5 get_symm_buffer_size_for_sm90_mega_moe (sm90_mega.hpp:45)",
                remediation="Use DeepGEMM nv_dev (PR #383, intermediate % 128), or leave "
                "--moe-backend unset (non-fused MoE).",
                sources=("sgl-deep-gemm 0.2.5 _C.so: sm90_mega.hpp:45 intermediate_hidden % 256 == 0",),
            ),
            _inter_at_most_4096("sgl-deep-gemm 0.2.5 _C.so: sm90_mega.hpp:43"),
            c.ep_at_most(
                32,
                why="sgl-deep-gemm 0.2.5 SM90 kernel: one count flag per lane (sm90_fp8_mega_moe.cuh:192)",
                sources=("sgl-deep-gemm 0.2.5 include/deep_gemm/impls/sm90_fp8_mega_moe.cuh:192",),
            ),
        ),
    },
    note="fp8_mega_moe gains num_tokens_bound (the recognising signature). Its SM90SymmBuffer always uses torch "
    "symmetric memory, also on one rank; no SM90 FP8 x FP4 kernel. Its _C registers TORCH_LIBRARY ops built "
    "against one torch (it loads under torch 2.14.1, not 2.13 or 2.11).",
)

_SGL0232_BUFFER_SRC = (
    "sgl-deep-gemm 0.2.3.post2 _C: get_symm_buffer_size_for_sm90_mega_moe raises 'num_bytes % 16 == 0 or not "
    "require_tma_alignment' (deep_gemm/layout/mega_moe.cuh:405) for hidden 2304 / 2816 / 3840 and intermediate "
    "896 / 1408, accepts hidden 2048 / 2560 / 3072 / 4096 with intermediate 768 / 1280 / 1536 (called on the CPU "
    "machine with SGLang 0.5.23's pinned wheel; tests/engines/test_real_sglang.py)"
)

SGL_0232 = BuildSpec(
    name="sgl-deep-gemm-0.2.3.post2",
    url="https://pypi.org/project/sgl-deep-gemm/0.2.3.post2/",
    library=LIBRARY,
    title="sgl-deep-gemm 0.2.3.post2 (pinned by SGLang 0.5.23)",
    provenance=Provenance.RELEASE,
    ref="PyPI sgl-deep-gemm 0.2.3.post2 wheel: deep_gemm/__init__.py:365-379, deep_gemm/mega/__init__.py, and the "
    "assertions compiled into _C.so",
    symbols=_SM100 | _SM90_FP8 | {"mega_moe_pre_dispatch_sm90", "nvfp4_mega_moe"},
    dists=("sgl-deep-gemm",),
    version="==0.2.3.post2",
    token_alignment={"sm90": 1920, "sm100": 1920},
    limits={
        "fp8_mega_moe": (
            c.multiple_of(
                "hidden_size",
                512,
                why="the SM90 buffer's input scale row is hidden/32 bytes, a TMA row that must be a multiple of 16 "
                "bytes",
                remediation="No fused SM90 kernel of SGLang 0.5.23's sgl-deep-gemm for this hidden size; use the "
                "engine's own fused MoE (leave --moe-a2a-backend unset).",
                sources=(_SGL0232_BUFFER_SRC,),
            ),
            c.multiple_of(
                "moe_intermediate_size",
                256,
                why="the SM90 buffer's L2 activation scale row is intermediate/16 bytes, a TMA row that must be a "
                "multiple of 16 bytes",
                remediation="No fused SM90 kernel of SGLang 0.5.23's sgl-deep-gemm for this expert width; use the "
                "engine's own fused MoE (leave --moe-a2a-backend unset).",
                sources=(_SGL0232_BUFFER_SRC,),
            ),
            _inter_at_most_4096("sgl-deep-gemm 0.2.3.post2 _C.so: 'intermediate_hidden / 64 <= 64'"),
        )
    },
    note="Its SM90 buffer is aligned to the SM100 token alignment (1920): its _C has no "
    "get_token_alignment_for_sm90_mega_moe. Its get_symm_buffer_size_for_sm90_mega_moe asserts TMA-aligned rows "
    "(hidden % 512, intermediate % 256), as PR #323's buffer does: seen on its _C for Qwen1.5-MoE's 1408 and "
    "GLM-4.5-Air's shape.",
)

NV_DEV = BuildSpec(
    name="deepgemm-nv_dev",
    url="https://github.com/deepseek-ai/DeepGEMM/tree/nv_dev",
    library=LIBRARY,
    title="DeepGEMM nv_dev (PR #383 SM90 FP8 x FP8, PR #409 SM100 NVFP4 x NVFP4)",
    provenance=Provenance.BRANCH,
    ref="deepseek-ai/DeepGEMM nv_dev head 572557e (2026-09-08), index copy aganhui/DeepGEMM @572557e7 "
    "csrc/apis/sm90_mega.hpp, deep_gemm/mega/__init__.py; PR #409 from index copy @794783af "
    "csrc/apis/nvfp4_mega_moe.hpp",
    symbols=_SM100 | _SM90_FP8 | {"fp4_fp4_mega_moe"},
    marks=("fp8_mega_moe", "fp4_fp4_mega_moe"),
    token_alignment={"sm90": 128, "sm100": 384},
    limits={
        "fp4_fp4_mega_moe": (
            c.multiple_of(
                "hidden_size",
                512,
                why="nvfp4_mega_moe.hpp (PR #409)",
                remediation="Use vLLM's DeepGEMM fork (nvfp4_mega_moe), or leave --moe-backend unset (non-fused MoE).",
                sources=("deepseek-ai/DeepGEMM index copy @794783af csrc/apis/nvfp4_mega_moe.hpp",),
            ),
            c.multiple_of(
                "moe_intermediate_size",
                512,
                why="nvfp4_mega_moe.hpp (PR #409)",
                remediation="Use vLLM's DeepGEMM fork (nvfp4_mega_moe), or leave --moe-backend unset (non-fused MoE).",
                sources=("deepseek-ai/DeepGEMM index copy @794783af csrc/apis/nvfp4_mega_moe.hpp",),
            ),
        ),
    },
    note="No release contains nv_dev's SM90 kernels (2.8.2 has none). fp8_mega_moe runs split L1/L2 kernels with no "
    "intermediate cap: sm90_mega.hpp @572557e7 asserts only recipe (128,128,128), swiglu, hidden % 256 and "
    "intermediate % 128 (the variant's own checks), and csrc/jit_kernels/impls/sm90_fp8_mega_moe.hpp launches "
    "Linear1 then Linear2 as two kernels (launch_with_phase), so no uint64 L2-arrival mask over L1 N-blocks bounds "
    "intermediate / 64 as in PR #323 and sgl-deep-gemm; no mega_moe_pre_dispatch_sm90. "
    "PR #409's fp4_fp4_mega_moe (SymmBuffer mma_type 'fp4xfp4', "
    "fused BF16 shared experts with x_bf16, recipe (1,1,16), even SM count, top-k + 1 <= 32) is not the front end "
    "moe-oracle's sm100_nvfp4 layer calls (vLLM's fork: nvfp4_mega_moe, NVFP4SymmBuffer). "
    "https://github.com/deepseek-ai/DeepGEMM/pull/409 (its description) gives "
    "hidden and intermediate % 256 for #409; the #409 source read asserts % 512, which is declared here.",
)

DG_282 = BuildSpec(
    name="deepgemm-2.8.2",
    url="https://pypi.org/project/deepinfer-gemm/2.8.2/",
    library=LIBRARY,
    title="DeepGEMM 2.8.2 (upstream release as repackaged on PyPI; SM100 only)",
    provenance=Provenance.RELEASE,
    ref="PyPI deepinfer-gemm 2.8.2 sdist and tokenspeed-deepgemm 2.8.2.post20261020 wheel: "
    "deep_gemm/__init__.py:84-127, deep_gemm/mega/__init__.py:18-193, csrc/apis/mega_moe.hpp:17-256, "
    "include/deep_gemm/layout/mega_moe.cuh:14-17",
    symbols=_SM100,
    version=">=2.8.2,<2.9",
    lacks=("fp8_mega_moe", "nvfp4_mega_moe", "fp4_fp4_mega_moe"),
    token_alignment={"sm100": 1920},
    limits={
        kernel: (
            c.activation(
                clamp=True,
                alpha_beta=False,
                kinds=("swiglu",),
                sources=(
                    "DeepGEMM 2.8.2 csrc/apis/mega_moe.hpp:42,178 (activation == 'swiglu'; no alpha/beta argument)",
                ),
            ),
        )
        for kernel in ("fp8_fp4_mega_moe", "bf16_mega_moe")
    },
    note="DeepSeek does not publish DeepGEMM on PyPI; these repackages carry the 26/09 release (#432). Shared experts "
    "fuse into fp8_fp4_mega_moe (num_shared_experts, shared_l1/l2_weights, from #377); no SM90 mega kernel, "
    "no NVFP4.",
)

VLLM_281 = BuildSpec(
    name="vllm-deepgemm-2.8.1",
    url="https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm",
    library=LIBRARY,
    title="DeepGEMM 2.8.1 vendored by vLLM 0.33.0 (vllm-project/DeepGEMM fork; SM100 only)",
    provenance=Provenance.RELEASE,
    ref="vllm 0.33.0 wheel: vllm/third_party/deep_gemm (commit g4ba787ec9; "
    "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py, https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm)",
    symbols=_SM100 | {"nvfp4_mega_moe", "NVFP4SymmBuffer", "fp4_fp4_mega_moe"},
    import_paths=("vllm.third_party.deep_gemm",),
    token_alignment={"sm100": 1920},
    note="include/impls has sm100_*mega_moe*.cuh only. Its token alignment is compiled into _C and assumed to be "
    "kLCMCandidateBlockM (1920).",
)

#: Recognition order (most specific marks first).
BUILDS: tuple[BuildSpec, ...] = (VLLM_281, PR440, PR411, PR323, SGL_025, SGL_0232, NV_DEV, DG_282)
