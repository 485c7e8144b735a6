"""Every environment variable the plug-ins read, fuzzed by construction (issue 30).

The variables are the ``ENV_*`` names the plug-in modules declare, so a reader added tomorrow must be added to
:data:`READERS` (the first test fails otherwise). Each reader gets deeply nested JSON (arrays and objects, up to
thousands of levels), numbers of thousands of digits, non-ASCII digits and random JSON: it either accepts the
value or gives one :class:`BadInputError` line naming the variable; a plug-in's ``resolve`` never raises and refuses
with one line. Derandomized, in process, well under a second per example.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moe_oracle.presets
from moe_oracle.engines.sglang import plugin as sglang_plugin
from moe_oracle.engines.sglang import shipped as sglang_shipped
from moe_oracle.engines.vllm import shipped as vllm_shipped
from moe_oracle.engines.vllm import snapshot as vllm_snapshot
from moe_oracle.errors import BadInputError

FUZZ = settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODULES = (sglang_plugin, sglang_shipped, vllm_shipped, vllm_snapshot)
FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def _flash_config() -> dict:
    from pathlib import Path

    path = Path(moe_oracle.presets.__file__).parent / "deepseek-ai--DeepSeek-V4-Flash" / "config.json"
    return json.loads(path.read_text())


def _vllm(name: str, value: str) -> None:
    from moe_oracle.engines.vllm.plugin import resolve

    snap = vllm_snapshot.VllmSnapshot(
        architecture="DeepseekV4ForCausalLM", hf_config=_flash_config(), model=FLASH, env={name: value}
    )
    out = resolve(snap)  # never raises
    if out.action == "refuse":
        assert name in out.error and "\n" not in out.error and len(out.error) < 2000, out.error


def _sglang(name: str, value: str) -> None:
    args = sglang_plugin.SglangArgs(model_path=FLASH, device=value if name.endswith("_DEVICE") else None)
    out = sglang_plugin.resolve(args, {name: value})  # never raises
    if out.action == "refuse":
        assert "\n" not in out.error and len(out.error) < 2000, out.error


#: variable -> how its reader is called (each raises BadInputError at most)
READERS = {
    "MOE_ORACLE_VLLM_BACKEND": lambda v: (
        vllm_shipped.read_request({}, {"MOE_ORACLE_VLLM_BACKEND": v}),
        _vllm("MOE_ORACLE_VLLM_BACKEND", v),
    ),
    "MOE_ORACLE_DOMAIN_SIZE": lambda v: (
        vllm_snapshot.check_env({"MOE_ORACLE_DOMAIN_SIZE": v}),
        _vllm("MOE_ORACLE_DOMAIN_SIZE", v),
    ),
    "MOE_ORACLE_VLLM_DEVICE": lambda v: vllm_snapshot.check_env({"MOE_ORACLE_VLLM_DEVICE": v}),
    "MOE_ORACLE_VLLM_PLUGIN": lambda v: vllm_snapshot.check_env({"MOE_ORACLE_VLLM_PLUGIN": v}),
    "MOE_ORACLE_SGLANG_BACKEND": lambda v: (
        sglang_shipped.read_request({"MOE_ORACLE_SGLANG_BACKEND": v}),
        _sglang("MOE_ORACLE_SGLANG_BACKEND", v),
    ),
    "MOE_ORACLE_SGLANG_PLAN": lambda v: sglang_shipped.shipped_plan({"MOE_ORACLE_SGLANG_PLAN": v}),
    "MOE_ORACLE_SGLANG_DEVICE": lambda v: _sglang("MOE_ORACLE_SGLANG_DEVICE", v),
    # read only as the off switch by register(), before SGLang is imported: any other value leaves it on
    "MOE_ORACLE_SGLANG_PLUGIN": lambda v: None,
}


def test_every_declared_plugin_variable_has_a_fuzzed_reader():
    declared = {
        value
        for module in MODULES
        for name, value in vars(module).items()
        if name.startswith("ENV_") and isinstance(value, str)
    }
    assert declared and declared <= set(READERS), sorted(declared - set(READERS))


def _nested(depth: int, kind: str) -> str:
    opener, closer = {"array": ("[", "]"), "object": ('{"a":', "}"), "mixed": ('{"a":[', "]}")}[kind]
    return "{" + '"g":' + opener * depth + "1" + closer * depth + "}"


scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=12
)
values = st.one_of(
    st.builds(_nested, st.integers(1, 3000), st.sampled_from(["array", "object", "mixed"])),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.sampled_from(["\u0663", "\uff18", "8\u0663", " 8 ", "-8", "0", "", "{", "{}", '{"moe": null}', "auto"]),
    json_values.map(json.dumps),
)


@FUZZ
@given(name=st.sampled_from(sorted(READERS)), value=values)
def test_plugin_environment_readers_give_one_line_or_accept(name, value):
    try:
        READERS[name](value)
    except BadInputError as exc:
        line = exc.one_line()
        assert name in line and "\n" not in line and len(line) < 2000, line
