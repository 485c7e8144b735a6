"""Planning never imports torch, vLLM or SGLang (python -X importtime)."""

from __future__ import annotations

from tests.cli.runner import cli, imported_modules

HEAVY = ("torch", "vllm", "sglang", "triton", "transformers")


def _heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in HEAVY)


def test_plan_imports_no_engine_or_torch() -> None:
    r = cli(
        "plan",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--device",
        "mi355x",
        "--dp",
        "8",
        "--ep",
        "8",
        "--engine",
        "vllm",
        importtime=True,
    )
    assert r.code == 0
    mods = imported_modules(r.err)
    # modules loaded through importlib.import_module (the lazy CLI group, the engine plan module) are not
    # timed by -X importtime; their own imports are
    assert "moe_oracle.launch.build" in mods and "moe_oracle.releases" in mods
    assert not _heavy(mods), _heavy(mods)


def test_plan_leaves_no_engine_or_torch_in_sys_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\n"
        "from moe_oracle.cli.app import main\n"
        "for engine in ('vllm', 'sglang'):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(['plan', 'deepseek-ai/DeepSeek-V4-Flash', '--device', 'mi355x', '--dp', '8', '--ep', '8',"
        " '--engine', engine]) == 0\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_serve_dry_run_and_sglang_plan_import_no_engine() -> None:
    for args in (
        ("serve", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang", "--dry-run"),
        ("plan", "--examples", "/nonexistent-never-written", "--check"),
    ):
        r = cli(*args, importtime=True)
        assert r.code in (0, 6), r.err  # 6: --check found stale files
        assert not _heavy(imported_modules(r.err))


def test_plugin_module_imports_no_vllm_at_module_level() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import moe_oracle.engines.vllm.plugin as p; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vllm', 'torch', 'sglang')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
