"""What SGLang 0.5.23 adds to the kernels' rules (``shared/reference/kernels.md`` §5).

``--moe-a2a-backend megamoe`` forces ``ep_size = tp_size``; on SM90 it runs DeepGEMM
``fp8_mega_moe`` with FP8 block-128 experts, on SM100 ``fp8_fp4_mega_moe``; on ROCm
``SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1`` routes it to AITER MegaMoEV2 (a8w4, intranode only).
"""

from __future__ import annotations

from moe_oracle.engines.gates import EngineProfile, EngineSupport
from moe_oracle.rules import ReasonCode
from moe_oracle.rules import checks as c

VERSION = "0.5.23"
_SRC = "kernels.md §5 (sglang 0.5.23 wheel: layers/moe/mega_moe.py, mega_moe_sm90, arg_groups)"

_EP_SPANS_TP = c.scenario_predicate(
    ReasonCode.EP_SIZE_UNSUPPORTED,
    lambda sc: sc.deployment.parallel.ep == sc.deployment.parallel.moe_group_size,
    rule="ep == tp * dp (megamoe forces ep_size = tp_size)",
    message=lambda sc: (
        f"ep={sc.deployment.parallel.ep} but SGLang's megamoe sets ep_size to tp_size="
        f"{sc.deployment.parallel.moe_group_size}"
    ),
    remediation="Use --ep equal to tp*dp (SGLang --tp N --ep-size N).",
    sources=(_SRC + ": _A2A_EP_SPANNING_BACKENDS",),
)

_DEEP_GEMM = EngineSupport(
    engine="sglang",
    version=VERSION,
    backend="deep_gemm_mega_moe",
    variants=("sm90_fp8xfp8", "sm100_fp8xfp4"),
    unsupported="SGLang 0.5.23's megamoe runs FP8 block-128 experts on SM90 (fp8_mega_moe) and mma_type "
    "fp8xfp4 on SM100; its sgl-deep-gemm 0.2.3.post2 has no SM90 FP4 kernel",
    remediation="Use the variant matching the checkpoint, or --engine none to judge the kernel alone.",
    checks=(_EP_SPANS_TP,),
    sources=(_SRC,),
)

_AITER = EngineSupport(
    engine="sglang",
    version=VERSION,
    backend="aiter_mega_moe",
    variants=("gfx950_a8w4",),
    unsupported="SGLang's FlyDSL mega path quantizes a8w4 intranode only",
    remediation="Use gfx950_a8w4 with EP <= 8.",
    checks=(
        _EP_SPANS_TP,
        c.scenario_predicate(
            ReasonCode.EPLB_UNSUPPORTED,
            lambda sc: not sc.deployment.parallel.eplb,
            rule="no EPLB",
            message=lambda sc: "EPLB is enabled; SGLang's AITER MegaMoEv2 adapter rejects it",
            remediation="Drop EPLB.",
            sources=("kernels.md §5 (sglang PR #35619)",),
        ),
    ),
    sources=(_SRC,),
)

PROFILE = EngineProfile(
    engine="sglang", version=VERSION, supports=(_DEEP_GEMM, _AITER), moe_backend_flag="--moe-a2a-backend"
)
