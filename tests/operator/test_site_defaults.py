"""#32 item 11: the site defaults file (device, engine, software, advisories) and its clear errors."""

from __future__ import annotations

import pytest

from tests.cli.runner import cli

FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def test_site_defaults_set_device_and_engine_and_flags_win(tmp_path):
    site = tmp_path / "defaults.toml"
    site.write_text('device = "h200"\nengine = "vllm"\n')
    r = cli("plan", FLASH, "--dp", "8", "--ep", "8", env={"MOE_ORACLE_DEFAULTS": str(site)})
    assert r.code == 0, r.err
    assert "on 8 x h200 (sm90) with vLLM 0.33.0" in r.out
    r = cli("plan", FLASH, "--dp", "8", "--ep", "8", "--engine", "sglang", env={"MOE_ORACLE_DEFAULTS": str(site)})
    assert r.code == 0 and "with SGLang 0.5.23" in r.out


def test_the_xdg_place_is_read(tmp_path):
    (tmp_path / "moe-oracle").mkdir()
    (tmp_path / "moe-oracle" / "defaults.toml").write_text('device = "b200"\n')
    r = cli("select", FLASH, "--dp", "8", "--ep", "8", env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert r.code == 0 and "on 8 x b200" in r.out


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('device = "h2000"\n', "device = 'h2000' is not a known device"),
        ("gpus = 8\n", "unknown key 'gpus'"),
        ("device = 8\n", "device = '8' is not a known device"),
        ("device = \n", "is not key = "),
        ('device = "h200"\ndevice = "b200"\n', "device is set twice"),
        ('engine = "trt"\n', "engine = 'trt' is not an engine"),
        ('advisories = "nowhere.json"\n', "no such file"),
    ],
)
def test_a_bad_site_file_is_one_line(tmp_path, text, needle):
    site = tmp_path / "defaults.toml"
    site.write_text(text)
    r = cli("select", FLASH, "--dp", "8", "--ep", "8", env={"MOE_ORACLE_DEFAULTS": str(site)})
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and str(site) in r.err and needle in r.err and "Fix: " in r.err
