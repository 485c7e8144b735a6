"""Building decision inputs for tests the way the CLI does (real presets, real declarations)."""

from __future__ import annotations

from pathlib import Path

from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.selection import Decision, Override, decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import Activation, ModelDescription, MoELayerGroup, QuantSpec, Routing
from moe_oracle.rules import Engine

V4_FLASH = "deepseek-ai/DeepSeek-V4-Flash"
V4_PRO = "deepseek-ai/DeepSeek-V4-Pro"
V4_FLASH_NVFP4 = "nvidia/DeepSeek-V4-Flash-NVFP4"
GLM5 = "zai-org/GLM-5"
GLM5_FP8 = "zai-org/GLM-5-FP8"
GLM51_NVFP4 = "nvidia/GLM-5.1-NVFP4"
#: the sweeps of 2026-12-03's expert-count and H 2048 probes, run with ``DG_PRINT_CONFIGS=1``: the configurations
#: DeepGEMM printed for both grouped GEMMs and the FP8 mega kernel
PROBE_PRINTOUTS = tuple(
    Path(__file__).resolve().parents[2] / "benchmarks/results/h200/2026-12-03" / d / f"call{n}_sweep.txt"
    for d in ("probe_experts", "probe/h2048")
    for n in (1, 2)
)


def run(
    model: str | ModelDescription,
    device: str,
    *,
    engine: str = "none",
    software: str | None = None,
    override: str | None = None,
    allow_fallback: bool = False,
    env: dict[str, str] | None = None,
    advisories_file: str | None = None,
    **flags: object,
) -> Decision:
    desc = resolve_model(model) if isinstance(model, str) else model
    deployment, _ = build_deployment(DeploymentFlags(device=device, **flags), env)  # type: ignore[arg-type]
    sw, _ = resolve_software(software, device)
    return decide(
        desc,
        deployment,
        sw,
        engine=Engine(engine),
        override=Override.parse(override) if override else None,
        allow_fallback=allow_fallback,
        advisories=load_advisories(advisories_file),
    )


def chosen(decision: Decision, group: int = 0) -> str | None:
    g = decision.groups[group]
    return g.chosen.spec.key if g.chosen else None


def codes(decision: Decision, key: str, group: int = 0) -> list[str]:
    for c in decision.groups[group].candidates:
        if c.spec.key == key:
            return [r.code.value for r in c.failures]
    raise KeyError(key)


def manual(
    *,
    hidden: int = 4096,
    inter: int = 2048,
    experts: int = 256,
    top_k: int = 6,
    fmt: str = "mxfp4",
    activation: Activation | None = None,
    scoring: str = "sqrtsoftplus",
    renormalize: bool = True,
    architecture: str = "DeepseekV4ForCausalLM",
) -> ModelDescription:
    """A manual description (what `moe-oracle model --json` prints), for shapes no preset has."""
    quant = {
        "mxfp4": QuantSpec(format="mxfp4", block=(1, 32), scale_format="ue8m0"),
        "fp8_block": QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32"),
        "nvfp4": QuantSpec(format="nvfp4", block=(1, 16), scale_format="e4m3", global_scale=True),
        "bf16": QuantSpec(format="bf16"),
    }[fmt]
    group = MoELayerGroup(
        name="moe",
        layers=tuple(range(4)),
        hidden_size=hidden,
        moe_intermediate_size=inter,
        num_experts=experts,
        top_k=top_k,
        weight_quant=quant,
        activation=activation or Activation(clamp=10.0),
        routing=Routing(scoring=scoring, correction_bias=True, renormalize=renormalize),
    )
    return ModelDescription(
        model="manual/test", architecture=architecture, model_type="manual", family="manual", layer_groups=(group,)
    )
