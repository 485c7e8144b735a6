"""Loading model sources: presets, directories, files, the Hugging Face cache, and bad files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from moe_oracle.errors import ModelConfigError, UnknownModelError
from moe_oracle.model.adapters import describe_config, describe_model
from moe_oracle.model.loader import MAX_CONFIG_BYTES, RawModelConfig, load_model_source, parse_json_bytes
from tests.model.model_test_helpers import FIXTURES, assert_one_line, preset


def write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def test_directory_with_hf_quant_config(tmp_path):
    config, quant = preset("nvidia--GLM-5.1-NVFP4")
    write(tmp_path / "config.json", json.dumps(config))
    write(tmp_path / "hf_quant_config.json", json.dumps(quant))
    raw = load_model_source(str(tmp_path))
    assert isinstance(raw, RawModelConfig)
    assert raw.hf_quant_config == quant and raw.config == config
    assert raw.origin == f"directory {tmp_path.resolve()}"
    assert describe_model(str(tmp_path)).main_group.weight_quant.label() == "nvfp4 g16 e4m3"


def test_config_file_path_reads_sibling_hf_quant_config(tmp_path):
    config, quant = preset("nvidia--GLM-5.1-NVFP4")
    file = write(tmp_path / "config.json", json.dumps(config))
    write(tmp_path / "hf_quant_config.json", json.dumps(quant))
    raw = load_model_source(str(file))
    assert raw.origin.startswith("file ") and raw.hf_quant_config == quant
    other = write(tmp_path / "renamed.json", json.dumps(config))
    assert load_model_source(str(other)).hf_quant_config is None


def test_directory_without_config_json(tmp_path):
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert_one_line(info.value, str(tmp_path), "no config.json", "Fix:")


def test_unknown_model_lists_presets_and_directory_hint():
    with pytest.raises(UnknownModelError) as info:
        load_model_source("no-such-org/no-such-model")
    assert_one_line(info.value, "'no-such-org/no-such-model'", "deepseek-ai/DeepSeek-V4-Flash", "directory")


@pytest.mark.parametrize("source", ["", "   ", None, 42, "a\x00b"])
def test_empty_or_non_string_source(source):
    with pytest.raises(UnknownModelError) as info:
        load_model_source(source)
    assert_one_line(info.value)


# -- the Hugging Face cache -------------------------------------------------------------------


def hub_cache(tmp_path, repo_id: str, *, with_quant: bool = True):
    """A real Hugging Face cache layout (models--org--name/refs/main + snapshots/<rev>/...)."""
    cache = tmp_path / "hf-cache"
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    rev = "0123456789abcdef0123456789abcdef01234567"
    write(repo / "refs" / "main", rev)
    config, quant = preset("nvidia--DeepSeek-V4-Flash-NVFP4")
    write(repo / "snapshots" / rev / "config.json", json.dumps(config))
    if with_quant:
        write(repo / "snapshots" / rev / "hf_quant_config.json", json.dumps(quant))
    return cache


@pytest.mark.parametrize("hub_installed", [True, False])
def test_hub_id_from_the_real_local_cache(monkeypatch, tmp_path, hub_installed):
    """The cache is read as plain files: the ``hub`` extra is not needed (#32: a cached id after ``pip install .``)."""
    if hub_installed:
        pytest.importorskip("huggingface_hub")
    else:
        monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # the optional dependency is absent
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache(tmp_path, "someone/V4-copy")))
    raw = load_model_source("someone/V4-copy")
    assert raw.model_id == "someone/V4-copy" and raw.origin.startswith("hub-cache ")
    assert raw.hf_quant_config is not None
    assert describe_config(raw.config, raw.hf_quant_config).main_group.weight_format.value == "nvfp4"


@pytest.mark.parametrize("target", ["dangling", "/dev/zero"])
@pytest.mark.parametrize("where", ["hub-cache", "directory"])
def test_an_unreadable_hf_quant_config_is_refused_not_skipped(monkeypatch, tmp_path, target, where):
    """Ignoring it would read an NVFP4 checkpoint as BF16 (and choose sm100_bf16)."""
    cache = hub_cache(tmp_path, "someone/V4-copy", with_quant=False)
    snapshot = next((cache / "models--someone--V4-copy" / "snapshots").iterdir())
    link = snapshot / "hf_quant_config.json"
    link.symlink_to(tmp_path / "gone.json" if target == "dangling" else target)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(ModelConfigError) as info:
        load_model_source("someone/V4-copy" if where == "hub-cache" else str(snapshot))
    assert_one_line(info.value, "hf_quant_config.json")
    assert "not a weight or index file" not in info.value.one_line()
    assert "download it again" in info.value.one_line()


def test_hub_id_not_cached_is_unknown_without_network(monkeypatch, tmp_path):
    cache = hub_cache(tmp_path, "someone/other")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(UnknownModelError) as info:
        load_model_source("someone/V4-copy")
    assert_one_line(info.value, "someone/V4-copy")
    assert str(cache) in info.value.one_line()  # where it looked


def test_the_cache_is_found_as_huggingface_hub_finds_it(monkeypatch, tmp_path):
    cache = hub_cache(tmp_path, "someone/V4-copy")
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    cache.rename(tmp_path / "home" / "hub")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert load_model_source("someone/V4-copy").origin.startswith("hub-cache ")


def test_a_download_without_huggingface_hub_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(UnknownModelError) as info:
        load_model_source("someone/V4-copy", allow_network=True)
    assert_one_line(info.value, "moe-oracle[hub]")


def test_hub_download_failure_is_one_line(tmp_path):
    pytest.importorskip("huggingface_hub")
    code = (
        "from moe_oracle.model.loader import load_model_source\n"
        "from moe_oracle.errors import UnknownModelError\n"
        "try:\n"
        "    load_model_source('someone/V4-copy', allow_network=True)\n"
        "except UnknownModelError as e:\n"
        "    print(e.one_line())\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60).stdout
    assert "someone/V4-copy" in out and out.count("\n") == 1


def test_without_huggingface_hub_a_hub_id_is_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # the optional dependency is absent
    with pytest.raises(UnknownModelError):
        load_model_source("someone/not-a-preset")


# -- malformed files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ('{"hidden_size": 4096, "num_hidden_la', ["not valid JSON", "truncated"]),
        ('{"a": 1,}', ["not valid JSON", "line 1"]),
        ("[1, 2, 3]", ["array", "expected a JSON object"]),
        ('"config"', ["str value", "expected a JSON object"]),
        ("42", ["int value"]),
        ("null", ["NoneType value"]),
        ('{"routed_scaling_factor": NaN}', ["NaN", "not valid JSON"]),
        ('{"swiglu_limit": Infinity}', ["Infinity"]),
        ('{"swiglu_limit": -Infinity}', ["-Infinity"]),
        ("", ["empty"]),
        ("   \n", ["empty"]),
        ("[" * 100_000 + "]" * 100_000, ["nested too deeply"]),
        ('{"n": ' + "9" * 5000 + "}", ["integer with 5000 digits"]),
        ('{"n": 1e999}', ["1e999", "overflows to infinity"]),
        ('{"a": ' * 65 + "1" + "}" * 65, ["nested too deeply", "64 levels"]),
    ],
)
def test_malformed_json_files(tmp_path, content, needles):
    file = write(tmp_path / "config.json", content)
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert_one_line(info.value, str(file), *needles)


def test_non_utf8_file(tmp_path):
    write(tmp_path / "config.json", b'{"model_type": "\xff\xfe"}')
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert_one_line(info.value, "not UTF-8", "0xff", "offset 16")


def test_utf8_bom_is_accepted(tmp_path):
    config, _ = preset("zai-org--GLM-5")
    write(tmp_path / "config.json", b"\xef\xbb\xbf" + json.dumps(config).encode())
    assert load_model_source(str(tmp_path)).config == config


def test_duplicate_keys_are_refused(tmp_path):
    write(tmp_path / "config.json", '{"a": 1, "b": {"a": 2, "a": 3}}')
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert_one_line(info.value, "key 'a' twice")


def test_malformed_hf_quant_config_is_not_ignored(tmp_path):
    config, _ = preset("zai-org--GLM-5")
    write(tmp_path / "config.json", json.dumps(config))
    write(tmp_path / "hf_quant_config.json", '{"quantization": ')
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert_one_line(info.value, "hf_quant_config.json", "not valid JSON")


def test_100_mb_file_is_rejected_without_reading_it(tmp_path, monkeypatch):
    big = tmp_path / "config.json"
    with open(big, "wb") as handle:  # sparse: no 100 MB written
        handle.truncate(100 * 1024 * 1024)
    assert big.stat().st_size == 100 * 1024 * 1024 > MAX_CONFIG_BYTES

    import builtins

    real_open = builtins.open
    opened = []

    def spy_open(file, *args, **kwargs):
        opened.append(os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    start = time.perf_counter()
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    elapsed = time.perf_counter() - start
    monkeypatch.undo()
    assert elapsed < 1.0
    assert str(big) not in opened  # rejected from its size alone
    assert_one_line(info.value, "104857600 bytes", "over the 16777216-byte limit")


def test_parse_json_bytes_bounds_in_memory_data():
    with pytest.raises(ModelConfigError) as info:
        parse_json_bytes(b" " * (MAX_CONFIG_BYTES + 1), where="blob")
    assert_one_line(info.value, "blob", "over the")


def test_not_a_regular_file(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(fifo))
    assert_one_line(info.value, "not a regular file")


def test_reconstructed_fixtures_load_through_directories():
    for folder in sorted(FIXTURES.iterdir()):
        if folder.is_dir():
            assert load_model_source(str(folder)).config


def test_path_objects_are_accepted():
    raw = load_model_source(FIXTURES / "zai-org--GLM-5.2")
    assert raw.origin.startswith("directory ") and raw.config["model_type"] == "glm_moe_dsa"


# -- hostile paths: every one refused in well under a second, never read, never silently skipped ----


def _nvfp4_dir(tmp_path):
    config, quant = preset("nvidia--GLM-5.1-NVFP4")
    write(tmp_path / "config.json", json.dumps(config))
    return quant


def test_dangling_hf_quant_config_link_is_an_error_not_bf16(tmp_path):
    _nvfp4_dir(tmp_path)
    os.symlink(tmp_path / "gone.json", tmp_path / "hf_quant_config.json")
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert_one_line(info.value, "hf_quant_config.json", "broken symbolic link", "gone.json")


def test_link_to_dev_zero_is_not_read(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    _nvfp4_dir(tmp_path)
    os.symlink("/dev/zero", tmp_path / "hf_quant_config.json")
    start = time.perf_counter()
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert time.perf_counter() - start < 1.0
    assert_one_line(info.value, "character device", "not a regular file")


def test_fifo_hf_quant_config_does_not_block(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    _nvfp4_dir(tmp_path)
    os.mkfifo(tmp_path / "hf_quant_config.json")  # no writer: a blocking open would hang forever
    start = time.perf_counter()
    with pytest.raises(ModelConfigError) as info:
        load_model_source(str(tmp_path))
    assert time.perf_counter() - start < 1.0
    assert_one_line(info.value, "FIFO", "not a regular file")


def test_name_too_long_is_reported_as_such():
    with pytest.raises(UnknownModelError) as info:
        load_model_source("x" * 5000)
    assert_one_line(info.value, "name too long for the file system")
