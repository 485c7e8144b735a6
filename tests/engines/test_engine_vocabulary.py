"""Every flag, value and environment variable a plan or the plug-in emits exists in the engine version.

Static checks read the release wheels (vllm 0.33.0, sglang 0.5.23) without importing them, and
skip when the wheels are not downloaded (CI). ``test_real_vllm.py`` checks the same names against
the installed vLLM (its argument parser and ``vllm.envs``).
"""

from __future__ import annotations

import ast
import re

import pytest

from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from moe_oracle.releases.types import ModelClass
from tests.engines.wheels import Wheel, wheel_or_skip

_ADD_ARGUMENT = re.compile(r"add_argument\(\s*((?:\"-[^\"]*\"\s*,\s*)+)")


def _argparse_flags(source: str) -> set[str]:
    found: set[str] = set()
    for m in _ADD_ARGUMENT.finditer(source):
        found.update(re.findall(r"\"(-[^\"]*)\"", m.group(1)))
    return found


def _literal(source: str, name: str) -> set[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    raise AssertionError(f"{name} not found")


@pytest.fixture(scope="module")
def vllm_wheel() -> Wheel:
    return wheel_or_skip("vllm", vllm_release.VERSION)


@pytest.fixture(scope="module")
def sglang_wheel() -> Wheel:
    return wheel_or_skip("sglang", sglang_release.VERSION)


# --- vLLM 0.33.0 -----------------------------------------------------------------------------


def test_vllm_wheel_version(vllm_wheel: Wheel) -> None:
    assert re.search(r"version = '0\.33\.0'|__version__ = version = '0\.33\.0'", vllm_wheel.text("vllm/_version.py"))


def test_vllm_serve_flags_exist(vllm_wheel: Wheel) -> None:
    flags = _argparse_flags(vllm_wheel.text("vllm/engine/arg_utils.py"))
    flags |= _argparse_flags(vllm_wheel.text("vllm/entrypoints/common/cli_args.py"))
    missing = [f for f in vllm_release.flags.SERVE_FLAGS if f not in flags]
    assert not missing, missing
    missing = [
        f for f in (*vllm_release.flags.DECISION_INPUTS, vllm_release.flags.PLUGIN_CONFIG_FLAG) if f not in flags
    ]
    assert not missing, f"serve's refused decision inputs not in vLLM 0.33.0: {missing}"


def test_vllm_backend_values_are_literal_members(vllm_wheel: Wheel) -> None:
    moe = _literal(vllm_wheel.text("vllm/config/kernel.py"), "MoEBackend")
    assert set(vllm_release.flags.MOE_BACKENDS) <= moe
    a2a = _literal(vllm_wheel.text("vllm/config/parallel.py"), "All2AllBackend")
    assert set(vllm_release.flags.ALL2ALL_BACKENDS) <= a2a and vllm_release.flags.DEFAULT_ALL2ALL in a2a
    assert set(vllm_release.flags.ALL2ALL_CHOICES) == a2a  # what --all2all-backend accepts with --engine vllm
    assert f'all2all_backend: All2AllBackend = "{vllm_release.flags.DEFAULT_ALL2ALL}"' in vllm_wheel.text(
        "vllm/config/parallel.py"
    )


def test_vllm_environment_variables_exist(vllm_wheel: Wheel) -> None:
    envs = set(re.findall(r"^\s*\"([A-Z][A-Z0-9_]+)\"\s*:", vllm_wheel.text("vllm/envs.py"), re.MULTILINE))
    missing = [k for k in vllm_release.flags.ENGINE_ENV if k not in envs]
    assert not missing, missing
    # library variables vLLM sets or reads by name
    for name, where in vllm_release.flags.LIBRARY_ENV.items():
        path = where.split(" ", 1)[0]
        assert name in vllm_wheel.text(path), (name, path)
    assert set(vllm_release.flags.EMITTED_ENV) <= set(vllm_release.flags.ENGINE_ENV) | set(
        vllm_release.flags.LIBRARY_ENV
    )


def test_vllm_hooked_architectures_exist(vllm_wheel: Wheel) -> None:
    config_map = vllm_wheel.text("vllm/model_executor/models/config.py")
    for arch in (*vllm_release.flags.DSV4_ARCHITECTURES, "GlmMoeDsaForCausalLM", "Glm5NextForCausalLM"):
        assert f'"{arch}":' in config_map, arch
    registry = vllm_wheel.text("vllm/model_executor/models/registry.py")
    for arch in vllm_release.flags.HOOKED_ARCHITECTURES:
        assert f'"{arch}"' in registry, arch
    hook = vllm_wheel.text("vllm/config/vllm.py")
    assert "MODELS_CONFIG_MAP.get(architecture" in hook and "cls.verify_and_update_config(self)" in hook


# --- SGLang 0.5.23 ---------------------------------------------------------------------------


def _sglang_cli_flags(wheel: Wheel) -> set[str]:
    flags = _argparse_flags(wheel.text("sglang/srt/server_args.py"))
    for name in wheel.glob("sglang/srt/arg_groups/fields/"):
        tree = ast.parse(wheel.text(name))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            ann = node.annotation
            if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"):
                continue
            meta = ann.slice.elts[1] if isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) > 1 else None
            cli_name = "--" + node.target.id.replace("_", "-")
            aliases: list[str] = []
            if isinstance(meta, ast.Call):
                kw = {k.arg: k.value for k in meta.keywords}
                if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value is True:
                    continue
                if isinstance(kw.get("cli_name"), ast.Constant):
                    cli_name = kw["cli_name"].value
                if isinstance(kw.get("aliases"), ast.List):
                    aliases = [e.value for e in kw["aliases"].elts if isinstance(e, ast.Constant)]
            flags.add(cli_name)
            flags.update(aliases)
    return flags


def test_sglang_launch_flags_exist(sglang_wheel: Wheel) -> None:
    flags = _sglang_cli_flags(sglang_wheel)
    missing = [f for f in sglang_release.flags.LAUNCH_FLAGS if f not in flags]
    assert not missing, missing
    missing = [f for f in sglang_release.flags.DECISION_INPUTS if f not in flags]
    missing += [p for p in sglang_release.flags.DECISION_INPUT_PREFIXES if not any(f.startswith(p) for f in flags)]
    assert not missing, f"serve's refused decision inputs not in SGLang 0.5.23: {missing}"
    assert "sglang/launch_server.py" in sglang_wheel.names


def test_sglang_dp_attention_flag_is_deprecated(sglang_wheel: Wheel) -> None:
    src = sglang_wheel.text("sglang/srt/server_args.py")
    at = src.index('"--enable-dp-attention"')
    assert "DeprecatedStoreTrueAction" in src[at : at + 300] and "--attn-dp-size" in src[at : at + 300]


def test_sglang_megamoe_is_an_a2a_backend(sglang_wheel: Wheel) -> None:
    src = sglang_wheel.text("sglang/srt/arg_groups/fields/exec_.py")
    at = src.index("moe_a2a_backend: A[")
    assert '"megamoe"' in src[at : at + 600]


def test_sglang_runner_values_and_nvfp4_rule(sglang_wheel: Wheel) -> None:
    choices = _literal(sglang_wheel.text("sglang/srt/arg_groups/choices.py"), "MOE_RUNNER_BACKEND_CHOICES")
    assert set(sglang_release.flags.MOE_RUNNER_BACKENDS) <= choices
    modelopt = sglang_wheel.text("sglang/srt/layers/quantization/modelopt_quant.py").splitlines()
    rule = "\n".join(modelopt[2376:2387])
    assert "use_marlin_fallback = moe_runner_backend.is_marlin()" in rule and "is_blackwell" in rule
    dsv4 = sglang_wheel.text("sglang/srt/arg_groups/model_overrides/deepseek_v4.py").splitlines()
    assert 'overrides["moe_runner_backend"] = "flashinfer_trtllm_routed"' in "\n".join(dsv4[65:74])


def test_sglang_speculative_rule(sglang_wheel: Wheel) -> None:
    lines = sglang_wheel.text("sglang/srt/managers/scheduler.py").splitlines()
    assert "def maybe_init_draft_worker" in lines[1034] and "spec_algorithm.is_none()" in lines[1035]
    assert "self.draft_worker = DraftWorkerClass(" in lines[1063]


def test_sglang_environment_variables_exist_with_their_defaults(sglang_wheel: Wheel) -> None:
    src = sglang_wheel.text("sglang/srt/environ.py")
    table = dict(re.findall(r"^\s+(SGLANG_[A-Z0-9_]+) = (Env\w+\([^)]*\))", src, re.MULTILINE))
    for name, default in sglang_release.flags.ENGINE_ENV.items():
        assert name in table, name
        literal = table[name]
        expected = {"0": "False", "1": "True"}.get(default, default) if literal.startswith("EnvBool") else default
        assert f"({expected})" in literal, (name, literal)
    mega = sglang_wheel.text("sglang/srt/arg_groups/mega_moe_hook.py")
    assert "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK" in mega and "chunked_prefill_size" in mega
    assert set(sglang_release.flags.EMITTED_ENV) <= set(sglang_release.flags.ENGINE_ENV) | set(
        sglang_release.flags.LIBRARY_ENV
    ) | set(sglang_release.flags.PLUGIN_ENV)


# --- per model class (releases/<release>/model_classes.py) -------------------------------------------

_CITE = re.compile(r"((?:model_executor/)?models/[\w/]+\.py):(\d+)")
_SGLANG_MEGA_CALL = re.compile(r"forward_mega_moe|run_mega_routed_experts|_use_mega_moe|should_use_mega_moe")


def _cited(text: str) -> tuple[str, int]:
    m = _CITE.search(text)
    assert m, text
    return m.group(1), int(m.group(2))


def _window(lines: list[str], line: int, before: int = 3, after: int = 3) -> str:
    return "\n".join(lines[max(0, line - 1 - before) : line + after])


def _carriers(table: tuple[ModelClass, ...], row: ModelClass) -> set[str]:
    """Names that show a cited entry line reaches ``row.block``: the block, an architecture built on it, its model."""
    names = {row.block, *row.architectures, row.block.removesuffix("SparseMoeBlock") + "Model", "FusedMoEFactory("}
    names |= {a for r in table if r.block == row.block for a in r.architectures}
    return names


@pytest.mark.parametrize("row", sglang_release.model_classes.SGLANG, ids=lambda r: r.architectures[0])
def test_sglang_model_class_rows_match_the_wheel(sglang_wheel: Wheel, row: ModelClass) -> None:
    path, line = _cited(row.source)
    text = sglang_wheel.text(f"sglang/srt/{path}")
    lines = text.splitlines()
    if row.mega:
        assert _SGLANG_MEGA_CALL.search(_window(lines, line, 0, 8)), (path, line)
    else:
        assert f"class {row.block}(" in lines[line - 1], (path, line, lines[line - 1])
        assert not _SGLANG_MEGA_CALL.search(text), f"{path} calls the mega path"
    epath, eline = _cited(row.entry)
    window = _window(sglang_wheel.text(f"sglang/srt/{epath}").splitlines(), eline)
    assert any(name in window for name in _carriers(sglang_release.model_classes.SGLANG, row)), (epath, eline, window)


@pytest.mark.parametrize("row", vllm_release.model_classes.VLLM, ids=lambda r: r.architectures[0])
def test_vllm_model_class_rows_match_the_wheel(vllm_wheel: Wheel, row: ModelClass) -> None:
    path, line = _cited(row.source)
    lines = vllm_wheel.text(f"vllm/{path}").splitlines()
    if row.mega:
        assert "use_native_mega_moe" in lines[line - 1], (path, line)
    elif row.oot:
        assert "FusedMoEFactory(" in lines[line - 1], (path, line, lines[line - 1])
        call = "\n".join(lines[line - 1 : line + 30]).split("\n        )", 1)[0]
        assert "routed_experts_cls" not in call, (path, line)
    else:
        assert "routed_experts_cls=" in lines[line - 1] and row.block in lines[line - 1], (path, line)
    epath, eline = _cited(row.entry)
    window = _window(vllm_wheel.text(f"vllm/{epath}").splitlines(), eline)
    assert any(name in window for name in _carriers(vllm_release.model_classes.VLLM, row)), (epath, eline, window)
    registry = vllm_wheel.text("vllm/model_executor/models/registry.py")
    for arch in row.architectures:
        assert f'"{arch}"' in registry, arch
