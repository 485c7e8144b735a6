"""The adoption path of docs/api.md on the real SGLang 0.5.23: its server-argument check, called with SGLang's own
``ServerArgs`` (parsed by ``prepare_server_args`` from a launch command's flags, under SGLang's platform override for
the target GPU), refuses what ``moe_oracle.check`` refuses and accepts what it accepts.

Run by ``tests/engines/run_real_sglang.sh``; the function is taken from docs/api.md itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

sglang = pytest.importorskip("sglang")

import moe_oracle  # noqa: E402
from tests.api.test_docs_api import blocks  # noqa: E402
from tests.engines.test_real_sglang import FACTS  # noqa: E402

V4 = str(Path(__file__).resolve().parents[2] / "moe_oracle" / "presets" / "deepseek-ai--DeepSeek-V4-Flash")


def _adoption() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    code = [b for b in blocks() if "def check_mega_moe_server_args" in b]
    assert len(code) == 1, "docs/api.md lost its SGLang adoption example"
    # the block ends with a stand-in call; the function and its table come before it
    source = code[0].split("\nserver_args = NS(")[0]
    exec(compile("import moe_oracle\n" + source, "docs/api.md (SGLang adoption)", "exec"), namespace)
    return namespace


def _server_args(arch: str, *flags: str) -> Any:
    from sglang.srt.runtime_context import override_platform
    from sglang.srt.server_args import prepare_server_args

    argv = ["--model-path", V4, "--tp-size", "8", "--attn-dp-size", "8", "--ep-size", "8", *flags]
    with override_platform(**FACTS[arch]):
        server_args = prepare_server_args(argv)
    assert type(server_args).__name__ == "ServerArgs"
    return server_args


def test_sglang_adoption_accepts_megamoe_on_b200_as_check_does() -> None:
    server_args = _server_args("sm100", "--moe-a2a-backend", "megamoe", "--chunked-prefill-size", "16384")
    verdict = _adoption()["check_mega_moe_server_args"](server_args, device="b200", software="sglang-0.5.23")
    direct = moe_oracle.check(
        V4, device="b200", software="sglang-0.5.23", backend="deep_gemm_mega_moe", engine="sglang",
        tp_size=8, attn_dp_size=8, ep_size=8, max_num_batched_tokens=2048,
    )  # fmt: skip
    assert verdict.eligible and direct.eligible and verdict.fingerprint == direct.fingerprint


def test_sglang_adoption_on_mi355x_judges_aiter_as_check_does() -> None:
    """SGLang's megamoe on MI355X is AITER MegaMoEV2 (DeepGEMM's verdict there is ARCH_UNSUPPORTED only): the
    function picks aiter_mega_moe's verdict; with SGLang's default chunk (8192 for the server, 1024 per rank)."""
    server_args = _server_args("gfx950", "--moe-a2a-backend", "megamoe")
    verdict = _adoption()["check_mega_moe_server_args"](server_args, device="mi355x", software="all")
    direct = moe_oracle.check(
        V4, device="mi355x", software="all", backend="aiter_mega_moe", engine="sglang",
        tp_size=8, attn_dp_size=8, ep_size=8, max_num_batched_tokens=1024,
    )  # fmt: skip
    assert verdict.eligible and direct.eligible and verdict.fingerprint == direct.fingerprint


def test_sglang_adoption_refuses_with_checks_one_line() -> None:
    """Without DeepGEMM (software ``none``) megamoe cannot run on a B200: ValueError, as check_server_args raises,
    with the line ``select --moe-backend deep_gemm_mega_moe`` exits 3 with (the architecture's own backend's)."""
    server_args = _server_args("sm100", "--moe-a2a-backend", "megamoe")
    with pytest.raises(ValueError) as refused:
        _adoption()["check_mega_moe_server_args"](server_args, device="b200", software="none")
    direct = moe_oracle.check(
        V4, device="b200", software="none", backend="deep_gemm_mega_moe", engine="sglang",
        tp_size=8, attn_dp_size=8, ep_size=8, max_num_batched_tokens=1024,
    )  # fmt: skip
    assert not direct.eligible and str(refused.value) == direct.refusal
    assert moe_oracle.ReasonCode.ARCH_UNSUPPORTED not in direct.codes[:1]


def test_sglang_adoption_leaves_other_paths_alone() -> None:
    server_args = _server_args("sm90")
    assert server_args.moe_a2a_backend in (None, "none")
    assert _adoption()["check_mega_moe_server_args"](server_args, device="h200") is None
