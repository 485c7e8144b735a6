"""Shared helpers for the model-description tests (a uniquely named module, imported by the tests)."""

from __future__ import annotations

import json
from pathlib import Path

from moe_oracle.errors import BadInputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"


#: Qwen1.5-MoE-A2.7B's values (families §2.2; no verbatim config found): the Qwen2-MoE rule's test config, and the
#: model the real-SGLang harness parses (the attention keys are for SGLang's config loader).
QWEN15_MOE_A2_7B: dict = {
    "architectures": ["Qwen2MoeForCausalLM"],
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "norm_topk_prob": False,
    "decoder_sparse_step": 1,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
    "max_position_embeddings": 8192,
    "hidden_act": "silu",
}


def load_dir(folder: Path) -> tuple[dict, dict | None]:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    quant_path = folder / "hf_quant_config.json"
    quant = json.loads(quant_path.read_text(encoding="utf-8")) if quant_path.exists() else None
    return config, quant


def preset(name: str) -> tuple[dict, dict | None]:
    """``(config, hf_quant_config)`` of a bundled preset folder, e.g. ``deepseek-ai--DeepSeek-V4-Flash``."""
    return load_dir(PRESETS / name)


def fixture(name: str) -> tuple[dict, dict | None]:
    return load_dir(FIXTURES / name)


def assert_one_line(error: BaseException, *needles: str) -> str:
    """The error is a BadInputError whose message is one line and mentions every needle."""
    assert isinstance(error, BadInputError), type(error)
    text = str(error)
    assert "\n" not in text and "\r" not in text, text
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    return text
