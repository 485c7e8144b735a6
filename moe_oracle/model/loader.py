"""Find and read a model's ``config.json`` (and ``hf_quant_config.json``) as plain JSON.

A model source is, in this order:

1. an existing local path: a checkpoint directory holding ``config.json`` (and optionally
   ``hf_quant_config.json``), or the path of a config file itself (a sibling
   ``hf_quant_config.json`` is read too when the file is named ``config.json``);
2. a bundled preset, addressed by its Hub id, case-insensitively
   (``deepseek-ai/DeepSeek-V4-Flash``; see :func:`list_presets`);
3. a Hub id found in the local Hugging Face cache (``huggingface_hub.try_to_load_from_cache``,
   only when ``huggingface_hub`` is installed), and only with ``allow_network=True`` a download.

Only JSON is read: nothing from a model repository is executed (no ``trust_remote_code``, no
``transformers``). Files are bounded (:data:`MAX_CONFIG_BYTES`, checked before reading the
whole file), must be UTF-8, must hold one JSON object, and may not use the ``NaN`` /
``Infinity`` literals. Every failure is a one-line :class:`ModelConfigError` or
:class:`UnknownModelError`.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from moe_oracle.errors import ModelConfigError, UnknownModelError

#: Largest config file read; a real ``config.json`` is a few kB, GLM-5-FP8's is 36 kB.
MAX_CONFIG_BYTES = 16 * 1024 * 1024

CONFIG_NAME = "config.json"
HF_QUANT_NAME = "hf_quant_config.json"

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


@dataclass(frozen=True)
class RawModelConfig:
    """A model's parsed config files and where they came from."""

    config: dict
    hf_quant_config: dict | None
    model_id: str
    origin: str


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


class _NonJsonConstant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _reject_constant(name: str) -> Any:
    raise _NonJsonConstant(name)


def parse_json_bytes(data: bytes, *, where: str) -> dict:
    """Parse one JSON object from ``data`` (UTF-8, optional BOM), strictly."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ModelConfigError(
            f"{where} is {len(data)} bytes, over the {MAX_CONFIG_BYTES}-byte limit for a config file",
            fix="pass the model's config.json, not a weight or index file",
        )
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelConfigError(
            f"{where} is not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})",
            fix="save the config as UTF-8 JSON",
        ) from None
    if not text.strip():
        raise ModelConfigError(f"{where} is empty; expected a JSON object", fix="pass the model's config.json")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except _NonJsonConstant as exc:
        raise ModelConfigError(
            f"{where} contains the literal {exc.name}, which is not valid JSON (NaN and Infinity are not allowed)",
            fix="replace it with a finite number or null",
        ) from None
    except json.JSONDecodeError as exc:
        ended = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        truncated = " (the file looks truncated)" if ended else ""
        raise ModelConfigError(
            f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}){truncated}",
            fix="re-download or repair the file",
        ) from None
    except RecursionError:
        raise ModelConfigError(f"{where} is nested too deeply to be a config file") from None
    except ValueError as exc:  # e.g. an integer literal with thousands of digits
        raise ModelConfigError(f"{where} is not a usable JSON document: {' '.join(str(exc).split())}") from None
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else f"a {type(value).__name__} value"
        raise ModelConfigError(
            f"{where} holds {kind} at the top level; expected a JSON object",
            fix="pass the model's config.json",
        )
    return value


def read_json_file(path: Path) -> dict:
    """Read one bounded JSON object from ``path``; the size is checked before the file is read."""
    where = str(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise ModelConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelConfigError(f"{where} is not a regular file", fix="pass a config.json file or its directory")
    if info.st_size > MAX_CONFIG_BYTES:
        raise ModelConfigError(
            f"{where} is {info.st_size} bytes, over the {MAX_CONFIG_BYTES}-byte limit for a config file",
            fix="pass the model's config.json, not a weight or index file",
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ModelConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
    return parse_json_bytes(data, where=where)


# ---------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------


def _preset_root() -> Any:
    return resources.files("moe_oracle.presets")


def _preset_dirs() -> dict[str, Any]:
    """Lower-cased Hub id -> preset folder (``org--name``)."""
    found = {}
    for entry in _preset_root().iterdir():
        if entry.is_dir() and "--" in entry.name and entry.joinpath(CONFIG_NAME).is_file():
            org, _, name = entry.name.partition("--")
            found[f"{org}/{name}".lower()] = entry
    return found


def list_presets() -> list[str]:
    """Hub ids of the bundled presets (e.g. ``deepseek-ai/DeepSeek-V4-Flash``), sorted."""
    ids = []
    for entry in _preset_dirs().values():
        org, _, name = entry.name.partition("--")
        ids.append(f"{org}/{name}")
    return sorted(ids, key=str.lower)


def _load_preset(entry: Any) -> RawModelConfig:
    org, _, name = entry.name.partition("--")
    model_id = f"{org}/{name}"
    config = parse_json_bytes(entry.joinpath(CONFIG_NAME).read_bytes(), where=f"preset {model_id} {CONFIG_NAME}")
    quant = None
    quant_file = entry.joinpath(HF_QUANT_NAME)
    if quant_file.is_file():
        quant = parse_json_bytes(quant_file.read_bytes(), where=f"preset {model_id} {HF_QUANT_NAME}")
    return RawModelConfig(config, quant, model_id, "preset")


# ---------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------


def _load_directory(path: Path, model_id: str) -> RawModelConfig:
    config_path = path / CONFIG_NAME
    if not config_path.exists():
        raise ModelConfigError(
            f"directory {path} has no {CONFIG_NAME}",
            fix="pass a Hugging Face checkpoint directory (the one holding config.json) or a preset id",
        )
    config = read_json_file(config_path)
    quant_path = path / HF_QUANT_NAME
    quant = read_json_file(quant_path) if quant_path.exists() else None
    return RawModelConfig(config, quant, model_id, f"directory {path.resolve()}")


def _load_file(path: Path, model_id: str) -> RawModelConfig:
    config = read_json_file(path)
    quant = None
    sibling = path.with_name(HF_QUANT_NAME)
    if path.name == CONFIG_NAME and sibling.exists():
        quant = read_json_file(sibling)
    return RawModelConfig(config, quant, model_id, f"file {path.resolve()}")


def _from_hub_cache(repo_id: str, *, allow_network: bool) -> RawModelConfig | None:
    try:
        import huggingface_hub
    except ImportError:
        return None
    # HF_HUB_CACHE is read at call time (huggingface_hub reads it once at import).
    cache_dir = os.environ.get("HF_HUB_CACHE") or None
    try:
        cached = huggingface_hub.try_to_load_from_cache(repo_id, CONFIG_NAME, cache_dir=cache_dir)
    except Exception:
        cached = None
    if isinstance(cached, (str, os.PathLike)):
        config_path = Path(cached)
        quant = None
        try:
            quant_cached = huggingface_hub.try_to_load_from_cache(repo_id, HF_QUANT_NAME, cache_dir=cache_dir)
        except Exception:
            quant_cached = None
        if isinstance(quant_cached, (str, os.PathLike)):
            quant = read_json_file(Path(quant_cached))
        return RawModelConfig(read_json_file(config_path), quant, repo_id, f"hub-cache {config_path.parent}")
    if not allow_network:
        return None
    try:
        downloaded = huggingface_hub.hf_hub_download(repo_id, CONFIG_NAME)
    except Exception as exc:
        raise UnknownModelError(
            f"cannot download {CONFIG_NAME} of {repo_id} from the Hugging Face Hub: "
            f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
            fix="check the id and your network or token, or pass a local directory",
        ) from None
    quant = None
    try:
        quant_downloaded = huggingface_hub.hf_hub_download(repo_id, HF_QUANT_NAME)
    except Exception:
        quant_downloaded = None
    if quant_downloaded is not None:
        quant = read_json_file(Path(quant_downloaded))
    return RawModelConfig(read_json_file(Path(downloaded)), quant, repo_id, "hub-download")


def load_model_source(source: str, *, allow_network: bool = False) -> RawModelConfig:
    """Resolve ``source`` (local path, preset id or cached Hub id) and read its config files."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or not source.strip():
        raise UnknownModelError(
            f"model source {source!r} is empty or not a string",
            fix="pass a preset id (" + ", ".join(list_presets()) + ") or a checkpoint directory",
        )
    if "\x00" in source:
        raise UnknownModelError(f"model source {source!r} contains a NUL byte")
    path = Path(source).expanduser()
    try:
        exists = path.exists()
    except OSError:  # e.g. a name too long for the filesystem
        exists = False
    if exists:
        if path.is_dir():
            return _load_directory(path, source)
        return _load_file(path, source)

    preset = _preset_dirs().get(source.strip().lower())
    if preset is not None:
        return _load_preset(preset)

    if _HUB_ID.match(source):
        found = _from_hub_cache(source, allow_network=allow_network)
        if found is not None:
            return found

    raise UnknownModelError(
        f"unknown model {source!r}: not an existing file or directory, not a bundled preset"
        + (", not in the local Hugging Face cache" if _HUB_ID.match(source) else "")
        + "; presets: "
        + ", ".join(list_presets()),
        fix="pass a local checkpoint directory holding config.json (e.g. the snapshot folder of a "
        "downloaded model), a path to config.json, or one of the preset ids",
    )
