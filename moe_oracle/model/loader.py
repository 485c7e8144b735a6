"""Find and read a model's ``config.json`` (and ``hf_quant_config.json``) as plain JSON.

A model source is, in this order:

1. an existing local path: a checkpoint directory holding ``config.json`` (and optionally
   ``hf_quant_config.json``), or the path of a config file itself (a sibling
   ``hf_quant_config.json`` is read too when the file is named ``config.json``);
2. a bundled preset, addressed by its Hub id, case-insensitively
   (``deepseek-ai/DeepSeek-V4-Flash``; see :func:`list_presets`);
3. a Hub id found in the local Hugging Face cache (its ``main`` revision, read as plain files:
   no optional package needed; :func:`hub_cache_dir`), and only with ``allow_network=True`` a
   download (that needs the ``hub`` extra, ``huggingface_hub``).

Only JSON is read: nothing from a model repository is executed (no ``trust_remote_code``, no
``transformers``). Files are bounded (:data:`MAX_CONFIG_BYTES`, checked before reading the
whole file), must be UTF-8, must hold one JSON object, and may not use the ``NaN`` /
``Infinity`` literals. Every failure is a one-line :class:`ModelConfigError` or
:class:`UnknownModelError`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from moe_oracle.errors import ModelConfigError, UnknownModelError, excerpt
from moe_oracle.jsonfile import MAX_JSON_BYTES, exists_or_dangling, parse_json_object, path_problem, read_json_object
from moe_oracle.shell import shell_quote

#: Largest config file read; a real ``config.json`` is a few kB, GLM-5-FP8's is 36 kB.
MAX_CONFIG_BYTES = MAX_JSON_BYTES

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
# JSON (the hardened reader of moe_oracle.jsonfile, with config-file wording)
# ---------------------------------------------------------------------------------------------

_FIX_CONFIG = "pass the model's config.json, not a weight or index file"


def parse_json_bytes(data: bytes, *, where: str) -> dict:
    """Parse one JSON object from ``data`` (UTF-8, optional BOM), strictly (see :mod:`moe_oracle.jsonfile`)."""
    return parse_json_object(data, where=where, error=ModelConfigError, fix=_FIX_CONFIG)


def read_json_file(path: Path) -> dict:
    """Read one bounded JSON object from a regular file; the size is checked before the file is read."""
    return read_json_object(path, error=ModelConfigError, fix=_FIX_CONFIG)


#: The fix for an unreadable ``hf_quant_config.json`` (it decides the expert format: never skipped).
_FIX_QUANT = f"restore the checkpoint's {HF_QUANT_NAME} (download it again), or remove it if the checkpoint has none"


def _optional(path: Path) -> dict | None:
    """``path`` (an ``hf_quant_config.json``) read when it exists or is a (possibly broken) link: a dangling
    link or a device is an error, not an absent file (it decides the expert format)."""
    if not exists_or_dangling(path):
        return None
    return read_json_object(path, error=ModelConfigError, fix=_FIX_QUANT)


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
    if not exists_or_dangling(config_path):
        raise ModelConfigError(
            f"directory {path} has no {CONFIG_NAME}",
            fix="pass a Hugging Face checkpoint directory (the one holding config.json) or a preset id",
        )
    config = read_json_file(config_path)
    quant = _optional(path / HF_QUANT_NAME)
    return RawModelConfig(config, quant, model_id, f"directory {path.resolve()}")


def _load_file(path: Path, model_id: str) -> RawModelConfig:
    config = read_json_file(path)
    quant = None
    if path.name == CONFIG_NAME:
        quant = _optional(path.with_name(HF_QUANT_NAME))
    return RawModelConfig(config, quant, model_id, f"file {path.resolve()}")


def hub_cache_dir() -> Path:
    """The local Hugging Face cache, as ``huggingface_hub`` finds it (read at call time): ``HF_HUB_CACHE``, else
    the legacy ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, ``HF_HOME`` defaulting to
    ``$XDG_CACHE_HOME/huggingface`` (``~/.cache/huggingface``)."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def _cached_snapshot(repo_id: str) -> Path | None:
    """The snapshot folder of ``repo_id``'s ``main`` revision in the local cache (the layout ``huggingface_hub``
    writes: ``models--ORG--NAME/refs/main`` holds the revision, ``snapshots/<revision>/`` the files), read as plain
    files so that no optional package is needed; None when it is not cached."""
    repo = hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    ref = repo / "refs" / "main"
    try:
        revision = ref.read_text(encoding="utf-8").strip() if ref.is_file() else ""
    except (OSError, UnicodeDecodeError):
        revision = ""
    if revision and re.fullmatch(r"[0-9a-fA-F]{6,64}", revision):
        snapshot = repo / "snapshots" / revision
        if exists_or_dangling(snapshot / CONFIG_NAME):
            return snapshot
    return None


def _from_hub_cache(repo_id: str, *, allow_network: bool) -> RawModelConfig | None:
    snapshot = _cached_snapshot(repo_id)
    if snapshot is not None:
        # the snapshot's own entries: an unreadable hf_quant_config.json is refused, never skipped (an NVFP4
        # checkpoint would silently read as BF16)
        quant = _optional(snapshot / HF_QUANT_NAME)
        return RawModelConfig(read_json_file(snapshot / CONFIG_NAME), quant, repo_id, f"hub-cache {snapshot}")
    if not allow_network:
        return None
    try:
        import huggingface_hub
    except ImportError:
        raise UnknownModelError(
            f"{repo_id} is not in the local Hugging Face cache ({hub_cache_dir()}) and downloading it needs "
            "huggingface_hub, which is not installed",
            fix="pip install 'moe-oracle[hub]' (or huggingface_hub), or pass a local checkpoint directory",
        ) from None
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
            f"model source {excerpt(source)} is empty or not a string",
            fix="pass a preset id (" + ", ".join(list_presets()) + ") or a checkpoint directory",
        )
    if "\x00" in source:
        raise UnknownModelError(f"model source {excerpt(source)} contains a NUL byte")
    path = Path(source).expanduser()
    problem = path_problem(path)
    if problem is not None and problem != "does not exist":
        raise UnknownModelError(
            f"model source {excerpt(source)} {problem}", fix="pass an existing checkpoint directory"
        )
    if problem is None:
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
        f"unknown model {excerpt(source)}: not an existing file or directory, not a bundled preset"
        + (f", not in the local Hugging Face cache ({hub_cache_dir()})" if _HUB_ID.match(source) else "")
        + "; presets: "
        + ", ".join(list_presets()),
        fix="pass a local checkpoint directory holding config.json (e.g. the snapshot folder of a "
        "downloaded model), a path to config.json, or one of the preset ids"
        + (
            "; a Hub id is read from that cache only, offline (fill it with: huggingface-cli download "
            + shell_quote(source)
            + " config.json, from the hub extra)"
            if _HUB_ID.match(source)
            else ""
        ),
    )
