"""Shared helpers for the model-description tests (a uniquely named module, imported by the tests)."""

from __future__ import annotations

import json
from pathlib import Path

from moe_oracle.errors import BadInputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"


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
