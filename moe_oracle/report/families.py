"""``docs/families.md``: every MoE family of the reference, read (or refused by name) and judged per device.

Rows are the real public configs of ``tests/fixtures/models`` (verbatim copies, provenance in that folder's
``PROVENANCE.md``) plus the families the reader refuses by name; columns are devices at DP8 + EP8 on one node
with every known kernel build (software ``all``, no engine). A cell is the oracle's choice for the main layer
group, or the reason codes of each fused variant built for that device's architecture. Each cell comes from the
same ``decide()`` call as ``moe-oracle select``. The page exists only in a source checkout (the fixtures are
test data, not shipped).
"""

from __future__ import annotations

from pathlib import Path

from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from moe_oracle.report.markdown import generated_header, md_cell, md_table

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "models"
PRESETS = Path(__file__).resolve().parents[1] / "presets"
DEVICES = ("h200", "b200", "mi355x")

#: (family label, fixture folder) in display order.
ROWS: tuple[tuple[str, str], ...] = (
    ("Qwen3-MoE", "Qwen--Qwen3-30B-A3B"),
    ("Qwen3-MoE", "Qwen--Qwen3-30B-A3B-FP8"),
    ("Qwen3-MoE", "Qwen--Qwen3-235B-A22B-FP8"),
    ("Qwen3-MoE", "nvidia--Qwen3-235B-A22B-NVFP4"),
    ("Qwen3-VL-MoE", "Qwen--Qwen3-VL-30B-A3B-Instruct"),
    ("Qwen3-Next", "Qwen--Qwen3-Next-80B-A3B-Thinking"),
    ("Qwen3.5-MoE", "Qwen--Qwen3.5-397B-A17B"),
    ("Qwen3.5-MoE", "nvidia--Qwen3.5-397B-A17B-NVFP4"),
    ("Mixtral", "mistralai--Mixtral-8x7B-v0.1"),
    ("gpt-oss", "openai--gpt-oss-20b"),
    ("gpt-oss", "openai--gpt-oss-120b"),
    ("Llama-4", "meta-llama--Llama-4-Scout-17B-16E-Instruct"),
    ("Llama-4", "meta-llama--Llama-4-Maverick-17B-128E-Instruct"),
    ("MiniMax-M2", "MiniMaxAI--MiniMax-M2.5"),
    ("GLM-4.5-Air (reconstructed config)", "reconstructed--GLM-4.5-Air"),
    ("Kimi-K2", "moonshotai--Kimi-K2-Instruct"),
    ("Kimi-K2.5 INT4", "moonshotai--Kimi-K2.5"),
    ("Kimi-K3 (latent MoE, SiTU)", "moonshotai--Kimi-K3"),
    ("Gemma-4 (GELU experts)", "google--gemma-4-26B-A4B"),
    ("Nemotron-H (ReLU² experts)", "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
    ("MiniMax-M3 (swigluoai)", "MiniMaxAI--MiniMax-M3"),
    ("MiMo-V2", "XiaomiMiMo--MiMo-V2-Flash"),
    ("Laguna", "poolside--Laguna-XS.2-FP8"),
    ("DeepSeek-V4 (bundled preset)", "preset:deepseek-ai--DeepSeek-V4-Flash"),
    ("DeepSeek-V4.1 (reconstructed config)", "reconstructed--DeepSeek-V4.1-Flash"),
    ("GLM-5.x (bundled preset)", "preset:zai-org--GLM-5-FP8"),
    ("GLM-4.7-Flash (trimmed config)", "trimmed--GLM-4.7-Flash"),
)


def _path(folder: str) -> Path:
    """A row's config folder: a fixture, or a bundled preset (``preset:<folder>``)."""
    return PRESETS / folder.removeprefix("preset:") if folder.startswith("preset:") else FIXTURES / folder


def available() -> bool:
    """Whether the fixtures the page is built from are here (a source checkout)."""
    return all((_path(folder) / "config.json").is_file() for _, folder in ROWS)


def _cell(decision) -> str:
    """The choice for the main group, or each same-architecture variant's reason codes."""
    from moe_oracle.rules import ReasonCode

    g = decision.groups[0]
    if g.chosen is not None:
        conv = f" (after {g.chosen.conversion.label})" if g.chosen.conversion else ""
        return f"★ {g.chosen.spec.variant}{conv}"
    parts = []
    for cand in g.candidates:
        codes = list(dict.fromkeys(r.code.value for r in cand.failures))
        if codes and ReasonCode.ARCH_UNSUPPORTED.value not in codes:
            parts.append(f"{cand.spec.variant}: {', '.join(codes)}")
    return "✗ " + "; ".join(parts) if parts else "no fused variant for this device"


def render_families(command: str) -> str:
    from moe_oracle.decide.advisories import load_advisories
    from moe_oracle.decide.selection import decide
    from moe_oracle.errors import BadInputError
    from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
    from moe_oracle.model.adapters import describe_config, describe_model
    from moe_oracle.model.adapters.catalog import ARCHITECTURES, MODEL_TYPES
    from moe_oracle.model.adapters.families import REFUSED, WRAPPED_LANGUAGE_MODELS
    from moe_oracle.model.spans import layer_span

    advisories = load_advisories()
    software = resolve_software("all", "catalogue")[0]
    deployments = {d: build_deployment(DeploymentFlags(device=d, dp=8, ep=8), {})[0] for d in DEVICES}
    lines = generated_header(command, "MoE families x devices: what the oracle reads and decides")
    lines += [
        "Every MoE family of the project's family reference, from a real public config (`tests/fixtures/models`, "
        "provenance in its `PROVENANCE.md`), judged at DP8 + EP8 on one node with every known kernel build "
        "(`--software all`, no engine). A cell is the oracle's choice (★) for the main layer group, or each fused "
        "variant of that device's architecture with the reason codes that refuse it (`docs/reason-codes.md`). "
        "Reproduce a cell with `moe-oracle select tests/fixtures/models/<folder> --device <device> --dp 8 --ep 8 "
        "--all-reasons` (`preset:` rows: `moe_oracle/presets/<folder>`).",
        "",
    ]
    header = ["family", "config", "main group", *DEVICES]
    rows = []
    for label, folder in ROWS:
        desc = describe_model(str(_path(folder)))
        g = desc.main_group
        traits = [g.weight_quant.label(), g.activation.label()]
        traits += ["expert bias"] if g.expert_bias else []
        traits += ["weight on input"] if g.routing.weight_on_input else []
        if g.num_shared_experts:
            traits.append(f"shared {g.shared_intermediate_size}" + (" gated" if g.shared_expert_gate else ""))
        shape = (
            f"{len(g.layers)} layers ({layer_span(g.layers)}), H{g.hidden_size} I{g.moe_intermediate_size} "
            f"E{g.num_experts} top{g.top_k}, " + ", ".join(traits)
        )
        cells = []
        for device in DEVICES:
            dep = deployments[device]
            decision = decide(desc, dep, software, advisories=advisories)
            cells.append(_cell(decision))
        rows.append([label, f"`{folder}`", shape, *cells])
    lines += md_table(header, rows)
    described = {describe_model(str(_path(folder))).family for _, folder in ROWS}
    lines += [
        "",
        "## Read by name, no public config in the fixtures",
        "",
        f"Each is read by the rule of its family (its names, as vLLM {vllm_release.SERIES} / SGLang "
        f"{sglang_release.VERSION} register them, in "
        "`moe_oracle/model/adapters/families.py`); a test checks the names and key spellings on a minimal config.",
        "",
    ]
    names_of: dict[str, list[str]] = {}
    rules_of = {}
    for table in (ARCHITECTURES, MODEL_TYPES):
        for name, rules in table.items():
            names_of.setdefault(rules.family, []).append(name)
            rules_of[rules.family] = rules
    for family, names in names_of.items():
        if family not in described:
            implied = rules_of[family].implied
            text = f": {md_cell(implied[0])}" if implied else ""
            lines.append(f"- **{family}** ({', '.join(f'`{name}`' for name in names)}){text}")
    wrappers = ", ".join(f"`{name}`" for name in WRAPPED_LANGUAGE_MODELS)
    lines += [
        f"- read through the wrapped language model's identity (`text_config` / `language_config`): {wrappers}",
        "",
        "## Refused by name",
        "",
    ]
    for refusal in REFUSED:
        try:
            describe_config({"architectures": [refusal.names[0]]}, model_id=refusal.family)
        except BadInputError as exc:
            fix = md_cell(exc.fix or "")
            lines.append(f"- **{refusal.family}** (`{refusal.names[0]}`): {md_cell(exc.message)} Fix: {fix}")
    return "\n".join(lines) + "\n"


__all__ = ["available", "render_families"]
