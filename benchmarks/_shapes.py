"""Expert shapes of the MoE families the benchmarks measure, as data (config values, with their source).

Each entry is one routed-expert layer group at its full shape: hidden size H, expert width I, experts E,
top-k. Routing for a measurement is the family's own scoring on random logits with no correction bias
(every expert equally likely). ``group(name, quant)`` builds the :class:`MoELayerGroup`;
``fused_vs_nonfused.py`` takes the DeepSeek-V4 and GLM-5 shapes from their bundled presets instead, the
probes of the kernels' configurations take every calibrated shape (:data:`CALIBRATED`) from here.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from moe_oracle.model.types import ModelDescription, MoELayerGroup, QuantSpec, Routing, Scoring


@dataclass(frozen=True)
class Shape:
    model: str
    hidden: int
    inter: int
    experts: int
    top_k: int
    scoring: Scoring
    source: str


#: shared/reference/families-2026-12.md §5 (Hub configs; MiniMax-M2 from M2.5/M2.7, GLM-4.5-Air from models.md)
SHAPES: dict[str, Shape] = {
    "qwen3-30b-a3b": Shape("Qwen/Qwen3-30B-A3B", 2048, 768, 128, 8, Scoring.SOFTMAX, "Hub config.json"),
    "qwen3-235b-a22b": Shape("Qwen/Qwen3-235B-A22B-FP8", 4096, 1536, 128, 8, Scoring.SOFTMAX, "Hub config.json"),
    "qwen3-next-80b-a3b": Shape("Qwen/Qwen3-Next-80B-A3B-Instruct", 2048, 512, 512, 10, Scoring.SOFTMAX, "Hub"),
    "minimax-m2": Shape("MiniMaxAI/MiniMax-M2", 3072, 1536, 256, 8, Scoring.SIGMOID, "M2.5/M2.7 config.json"),
    "glm-4.5-air": Shape("zai-org/GLM-4.5-Air", 4096, 1408, 128, 8, Scoring.SIGMOID, "models.md"),
    "kimi-k2": Shape("moonshotai/Kimi-K2-Instruct", 7168, 2048, 384, 8, Scoring.SIGMOID, "Hub config.json"),
    # the other shapes of the package calibration (moe_oracle/data/calibration.json)
    "deepseek-v4-flash": Shape("deepseek-ai/DeepSeek-V4-Flash", 4096, 2048, 256, 6, Scoring.SQRTSOFTPLUS, "preset"),
    "glm-5": Shape("zai-org/GLM-5-FP8", 6144, 2048, 256, 8, Scoring.SIGMOID, "preset"),
    "laguna-xs.2": Shape("poolside/Laguna-XS.2-FP8", 2048, 512, 256, 8, Scoring.SIGMOID, "tests/fixtures config.json"),
    "mimo-v2-flash": Shape("XiaomiMiMo/MiMo-V2-Flash", 4096, 2048, 256, 8, Scoring.SIGMOID, "tests/fixtures config"),
    "hunyuan-a13b": Shape("tencent/Hunyuan-A13B", 4096, 3072, 64, 8, Scoring.SOFTMAX, "tune: manual expert shape"),
    "qwen2-57b-a14b": Shape("Qwen/Qwen2-57B-A14B", 3584, 2560, 64, 8, Scoring.SOFTMAX, "tune: manual expert shape"),
    "ernie-4.5-300b-a47b": Shape("baidu/ERNIE-4.5-300B-A47B", 8192, 3584, 64, 8, Scoring.SOFTMAX, "tune: manual"),
    # a family not calibrated before, measured fresh (2026-12-02) for the FP8 kernel's 512-expert regime
    "qwen3.5-397b-a17b": Shape("Qwen/Qwen3.5-397B-A17B", 4096, 1024, 512, 10, Scoring.SOFTMAX, "tests/fixtures config"),
    # families not calibrated before, predicted (2026-12-03) before they were measured: the near-tie band's test
    "deepseek-v3": Shape("deepseek-ai/DeepSeek-V3", 7168, 2048, 256, 8, Scoring.SIGMOID, "Hub config.json (V3, R1)"),
    "glm-4.5": Shape("zai-org/GLM-4.5", 5120, 1536, 160, 8, Scoring.SIGMOID, "models.md (GLM-4.5/4.6/4.7)"),
    "ernie-4.5-21b-a3b": Shape("baidu/ERNIE-4.5-21B-A3B", 2560, 1536, 64, 6, Scoring.SOFTMAX, "families-2026-12.md"),
    # a hidden-size probe (2026-12-03): DeepSeek-V3's, GLM-5's and MiMo-V2-Flash's other dimensions (I 2048, 256
    # experts, top-8) at other H; at BLOCK_M 128 the FP8 kernel combines H 3072 and 5120 in 4 chunks (like 4096 and
    # 6144) and H 3584 in 7 (like 7168; ``kSplitMNNumChunks`` in ``sm90_fp8_mega_moe.cuh``); not families
    "probe-h3072": Shape("probe: H 3072, I 2048, E 256, top-8", 3072, 2048, 256, 8, Scoring.SIGMOID, "synthetic"),
    "probe-h3584": Shape("probe: H 3584, I 2048, E 256, top-8", 3584, 2048, 256, 8, Scoring.SIGMOID, "synthetic"),
    "probe-h5120": Shape("probe: H 5120, I 2048, E 256, top-8", 5120, 2048, 256, 8, Scoring.SIGMOID, "synthetic"),
    # H 2048 at the same I, E and top-k: whether a power-of-two H (like 4096) runs faster per unit of work; H 3840 or
    # 4352 cannot test it, the FP8 kernel's combine needs H a multiple of 1024 (or of 3584) at BLOCK_M 128
    "probe-h2048": Shape("probe: H 2048, I 2048, E 256, top-8", 2048, 2048, 256, 8, Scoring.SIGMOID, "synthetic"),
    # an expert-count probe (2026-12-03, later): Laguna-XS.2's dimensions (H 2048, I 512, top-8) at other E, for the
    # psum layout's scheduler walk over every local expert and the fused kernel's at small T
    "probe-e64": Shape("probe: H 2048, I 512, E 64, top-8", 2048, 512, 64, 8, Scoring.SIGMOID, "synthetic"),
    "probe-e128": Shape("probe: H 2048, I 512, E 128, top-8", 2048, 512, 128, 8, Scoring.SIGMOID, "synthetic"),
    "probe-e512": Shape("probe: H 2048, I 512, E 512, top-8", 2048, 512, 512, 8, Scoring.SIGMOID, "synthetic"),
    "probe-e1024": Shape("probe: H 2048, I 512, E 1024, top-8", 2048, 512, 1024, 8, Scoring.SIGMOID, "synthetic"),
    # MiMo-V2-Flash's dimensions (H 4096, I 2048, top-8) at 64 and 512 experts: the same walks where each SM runs
    # two or more tiles per GEMM at T = 1
    "probe-e64-h4096": Shape("probe: H 4096, I 2048, E 64, top-8", 4096, 2048, 64, 8, Scoring.SIGMOID, "synthetic"),
    "probe-e512-h4096": Shape("probe: H 4096, I 2048, E 512, top-8", 4096, 2048, 512, 8, Scoring.SIGMOID, "synthetic"),
}
#: shapes predicted before they were measured (``cost_model_predict.py``, 2026-12-03); measured since and in the package
#: calibration too, but not in the configuration probes' committed runs, which :data:`CALIBRATED` drives
PREDICTED = ("deepseek-v3", "glm-4.5", "ernie-4.5-21b-a3b")
#: the thirteen shapes measured on the H200 before 2026-12-03 (GLM-4.5-Air is refused by the build); the committed runs
#: of the configuration probes predate Qwen3.5-397B-A17B and cover the other twelve
CALIBRATED = tuple(
    name for name in SHAPES if name != "glm-4.5-air" and name not in PREDICTED and not name.startswith("probe-")
)


def group(name: str, quant: QuantSpec) -> MoELayerGroup:
    s = SHAPES[name]
    return MoELayerGroup(
        name="moe",
        layers=(0,),
        hidden_size=s.hidden,
        moe_intermediate_size=s.inter,
        num_experts=s.experts,
        top_k=s.top_k,
        weight_quant=quant,
        routing=Routing(scoring=s.scoring, renormalize=True),
    )


def model(name: str, quant: QuantSpec) -> ModelDescription:
    s = SHAPES[name]
    return ModelDescription(
        model=f"{s.model} (expert shape)",
        architecture="",
        model_type="",
        family=name,
        layer_groups=(group(name, quant),),
    )


def shape_names(ap: argparse.ArgumentParser, text: str) -> list[str]:
    """``text`` as comma-separated names of :data:`SHAPES`; an unknown one is ``ap.error`` (one line, exit 2)."""
    names = text.split(",")
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        ap.error(f"unknown shape {', '.join(map(repr, unknown))}: one of {', '.join(SHAPES)}")
    return names


def token_counts(ap: argparse.ArgumentParser, text: str) -> list[int]:
    """``--tokens`` as comma-separated integers; anything else is ``ap.error`` (one line, exit 2)."""
    try:
        return [int(t) for t in text.split(",")]
    except ValueError:
        ap.error(f"--tokens {text!r}: comma-separated integers (e.g. 1,8,64)")
