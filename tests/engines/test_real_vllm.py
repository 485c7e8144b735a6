"""The plug-in and the plans against the real vLLM 0.33.0 package (skipped where vLLM is not installed).

Run with ``tests/engines/run_real_vllm.sh`` (a separate virtual environment with vllm==0.33.0 and
moe-oracle installed, so vLLM loads the plug-in through its ``vllm.general_plugins`` entry point).
On a machine without a GPU, vLLM builds its config for the CPU platform
(``VLLM_TARGET_DEVICE=cpu``) and ``MOE_ORACLE_VLLM_DEVICE`` tells the plug-in which GPU to
decide for; nothing loads weights (``--load-format dummy``, no model construction).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")

from moe_oracle.engines.vllm import plugin as P  # noqa: E402
from moe_oracle.releases import vllm as vllm_release  # noqa: E402

PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"
V4 = str(PRESETS / "deepseek-ai--DeepSeek-V4-Flash")
GLM = str(PRESETS / "zai-org--GLM-5-FP8")
_TOUCHED = (P.ENV_DEVICE, P.ENV_SWITCH, "VLLM_ROCM_USE_AITER", "MORI_SHMEM_HEAP_SIZE")


def _gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


@pytest.fixture(autouse=True)
def clean_env() -> Iterator[None]:
    if not _gpu():
        os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    saved = {k: os.environ.get(k) for k in _TOUCHED}
    for k in _TOUCHED:
        os.environ.pop(k, None)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def table() -> Iterator[list[str]]:
    """The plug-in's log lines. ``create_engine_config`` applies vLLM's logging config (dictConfig, which
    drops handlers of ``vllm.*`` loggers) unless it is already active: apply it first."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.logger import configure_logging_if_needed

    configure_logging_if_needed(EngineArgs(model=V4).create_logging_config())
    h = _Lines()
    log = logging.getLogger(P.LOGGER_NAME)
    log.addHandler(h)
    yield h.lines
    log.removeHandler(h)


def build(model: str, moe_backend: str | None = None, **kw: object) -> object:
    from vllm.engine.arg_utils import EngineArgs

    args = {
        "model": model,
        "load_format": "dummy",
        "skip_tokenizer_init": True,
        "tensor_parallel_size": 1,
        "data_parallel_size": 8,
        "enable_expert_parallel": True,
        "max_num_batched_tokens": 8192,
        **kw,
    }
    if moe_backend:
        args["moe_backend"] = moe_backend
    return EngineArgs(**args).create_engine_config()


def test_vllm_version_and_plugin_entry_point() -> None:
    from importlib.metadata import entry_points

    assert vllm.__version__ == vllm_release.VERSION
    names = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
    assert names.get("moe_oracle") == "moe_oracle.engines.vllm.plugin:register"


def test_auto_resolves_deep_gemm_mega_moe_on_b200(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "b200"
    cfg = build(V4)
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP

    entry = MODELS_CONFIG_MAP["DeepseekV4ForCausalLM"]
    assert entry._moe_oracle_wrapped and entry._moe_oracle_base.__name__ == "DeepseekV4ForCausalLMConfig"
    assert cfg.kernel_config.moe_backend == "deep_gemm_mega_moe"
    assert cfg.parallel_config.all2all_backend == vllm_release.flags.DEFAULT_ALL2ALL
    # the existing entry's behaviour is kept: DSv4's quant_method rewrite still happened
    assert cfg.model_config.hf_config.quantization_config["quant_method"] == "deepseek_v4_fp8"
    assert table[0].startswith("moe-oracle: DeepseekV4ForCausalLM --moe-backend auto -> deep_gemm_mega_moe")
    assert any(line.startswith("  set kernel_config.moe_backend = deep_gemm_mega_moe") for line in table)
    from moe_oracle.registry import load_registry

    # one rejection line per registered variant but the chosen one (every other variant is rejected on a B200)
    assert sum(1 for line in table if line.startswith("    ") and "[" in line) == len(load_registry().variants) - 1


def _aiter_installed() -> bool:
    from moe_oracle.software.probe import probe_library

    return probe_library("aiter").present


#: the config hook judges the kernel libraries installed here (snapshot software="installed"); AITER is ROCm-only
needs_aiter = pytest.mark.skipif(
    not _aiter_installed(), reason="aiter is not installed: the hook judges the installed kernel libraries"
)


@needs_aiter
def test_auto_resolves_aiter_on_mi355x_with_mori(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "mi355x"
    os.environ["VLLM_ROCM_USE_AITER"] = "1"
    cfg = build(V4)
    assert cfg.kernel_config.moe_backend == "aiter_mega_moe"
    assert cfg.parallel_config.all2all_backend == "mori_high_throughput"
    assert os.environ["MORI_SHMEM_HEAP_SIZE"] == "8G"


@needs_aiter
def test_auto_without_aiter_switch_keeps_vllm_default(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "mi355x"
    cfg = build(V4)
    assert cfg.kernel_config.moe_backend == "auto"
    assert "MORI_SHMEM_HEAP_SIZE" not in os.environ
    assert table[-1].startswith("  kept auto:") and "VLLM_ROCM_USE_AITER" in table[-1]


def test_explicit_deep_gemm_on_h200_is_refused_before_any_weight_loads(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "h200"
    with pytest.raises(ValueError, match="deep_gemm_mega_moe cannot run on this deployment") as err:
        build(V4, "deep_gemm_mega_moe")
    assert "ARCH_UNSUPPORTED" in str(err.value) and P.ENV_SWITCH in str(err.value)
    assert "REFUSED" in table[0]


def test_explicit_deep_gemm_on_glm_is_refused(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "b200"
    with pytest.raises(ValueError, match="ENGINE_UNSUPPORTED"):
        build(GLM, "deep_gemm_mega_moe")
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP

    entry = MODELS_CONFIG_MAP["GlmMoeDsaForCausalLM"]
    assert entry._moe_oracle_base.__name__ == "GlmMoeDsaForCausalLM"  # vLLM's own entry kept underneath


def test_glm_auto_stays_auto(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "b200"
    cfg = build(GLM)
    assert cfg.kernel_config.moe_backend == "auto"
    assert any("GlmMoeDsaForCausalLM --moe-backend auto -> auto kept" in line for line in table)


def test_explicit_valid_value_passes_validation(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "b200"
    cfg = build(V4, "deep_gemm_mega_moe")
    assert cfg.kernel_config.moe_backend == "deep_gemm_mega_moe"
    assert "validated" in table[0]


def test_plugin_switched_off(table: list[str]) -> None:
    os.environ[P.ENV_DEVICE] = "b200"
    os.environ[P.ENV_SWITCH] = "0"
    cfg = build(V4)
    assert cfg.kernel_config.moe_backend == "auto" and table == []


def test_unmodelled_platform_refuses_explicit_mega_backend(table: list[str]) -> None:
    if _gpu():
        pytest.skip("needs a platform without a GPU")
    with pytest.raises(ValueError, match="cannot run on platform"):
        build(V4, "deep_gemm_mega_moe")
    assert build(V4).kernel_config.moe_backend == "auto"


# --- the plans' vocabulary against the installed vLLM ----------------------------------------


def test_every_example_plan_parses_with_vllm_serve_parser() -> None:
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from moe_oracle.launch.build import build_plan
    from moe_oracle.launch.examples import EXAMPLES
    from moe_oracle.rules import Engine

    parser = make_arg_parser(FlexibleArgumentParser())
    seen_flags: set[str] = set()
    for ex in EXAMPLES:
        for software in (None, "all"):
            plan = build_plan(ex.request(Engine.VLLM, software))
            for cmd in plan.commands:
                argv = [a.replace("${HEAD_NODE_IP}", "10.0.0.1") for a in cmd.argv]
                assert argv[:2] == ["vllm", "serve"]
                args = parser.parse_args(argv[2:])
                assert args.model_tag == ex.model
                if plan.backend and "--moe-backend" in argv:  # vLLM's own code path
                    assert args.moe_backend == plan.backend
                elif plan.backend:  # moe-oracle's runtime: the variant goes through --additional-config
                    assert args.moe_backend == "auto"
                    pins = args.additional_config["moe_oracle"]["backend"]
                    pins = pins.values() if isinstance(pins, dict) else [pins]
                    assert all(p == "vllm" or p.startswith(plan.backend + ":") for p in pins), pins
                seen_flags.update(a for a in argv if a.startswith("--"))
    assert seen_flags <= set(vllm_release.flags.SERVE_FLAGS)


def test_environment_names_and_literals_in_installed_vllm() -> None:
    import typing

    import vllm.envs as envs
    from vllm.config.kernel import MoEBackend
    from vllm.config.parallel import All2AllBackend

    assert set(vllm_release.flags.ENGINE_ENV) <= set(envs.environment_variables)
    assert set(vllm_release.flags.MOE_BACKENDS) <= set(typing.get_args(MoEBackend))
    assert set(vllm_release.flags.ALL2ALL_BACKENDS) <= set(typing.get_args(All2AllBackend))
    import vllm.distributed.device_communicators.all2all as a2a

    assert "MORI_SHMEM_HEAP_SIZE" in Path(a2a.__file__).read_text()
