"""The distribution installs both ways and registers its backends through entry points.

Builds a wheel, installs it into a fresh virtual environment (dependencies from the package
index), and runs the installed CLI; then the same with an editable install. Marked slow: it
needs the network to PyPI, as CI has.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "deep_gemm_mega_moe:sm90_fp8xfp8",
    "deep_gemm_mega_moe:sm90_fp8xfp4",
    "deep_gemm_mega_moe:sm100_fp8xfp4",
    "deep_gemm_mega_moe:sm100_fp8xfp8",
    "deep_gemm_mega_moe:sm100_nvfp4",
    "deep_gemm_mega_moe:sm100_bf16",
    "flashinfer_megamoe:sm100_mxfp8xmxfp8",
    "flashinfer_megamoe:sm100_nvfp4xnvfp4",
    "aiter_mega_moe:gfx950_a8w4",
    "aiter_mega_moe:gfx950_a4w4",
}

pytestmark = pytest.mark.slow


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, **kw)  # type: ignore[call-overload]
    assert p.returncode == 0, f"{cmd}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin" / "python"


def _check_installed(py: Path, bindir: Path, cwd: Path) -> None:
    out = _run([str(bindir / "moe-oracle"), "list", "backends", "--json"], cwd=cwd).stdout
    assert {f"{r['backend']}:{r['variant']}" for r in json.loads(out)} == EXPECTED
    out = _run(
        [
            str(bindir / "moe-oracle"),
            "select",
            "deepseek-ai/DeepSeek-V4-Flash",
            "--device",
            "b200",
            "--dp",
            "8",
            "--ep",
            "8",
            "--json",
        ],
        cwd=cwd,
    ).stdout
    assert json.loads(out)["chosen"] == {"backend": "deep_gemm_mega_moe", "variant": "sm100_fp8xfp4"}
    _run(
        [str(py), "-c", "import moe_oracle_backends.cuda_sm90.fp8xfp8.config, moe_oracle_backends.rocm_mi355"], cwd=cwd
    )


def test_wheel_installs_into_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)])
    (wheel,) = dist.glob("moe_oracle-*.whl")
    py = _fresh_venv(tmp_path / "venv")
    _run([str(py), "-m", "pip", "install", "--quiet", str(wheel)])
    # run outside the checkout so the source tree cannot shadow the installed package
    _check_installed(py, py.parent, tmp_path)
    names = _run([sys.executable, "-m", "zipfile", "-l", str(wheel)]).stdout
    assert "moe_oracle/presets/deepseek-ai--DeepSeek-V4-Flash/config.json" in names
    assert "moe_oracle/data/advisories.json" in names
    assert "moe_oracle_backends/cuda_sm100/fp8xfp4/config.py" in names
    assert "tests/" not in names


def test_editable_install_registers_the_backends(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(
        ROOT, src, ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "dist", ".venv", "__pycache__")
    )
    py = _fresh_venv(tmp_path / "venv")
    _run([str(py), "-m", "pip", "install", "--quiet", "-e", str(src)])
    _check_installed(py, py.parent, tmp_path)
