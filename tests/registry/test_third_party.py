"""A third-party backend package, installed as a user would: tests/fixtures/toy_backend.

The fixture follows docs/adding-a-backend.md: its own pyproject.toml with a ``moe_oracle.backends``
entry point returning a ``BackendPackage`` (one variant and the ``toy_kernels`` library it calls). It is
pip-installed (no index, no build isolation) into a throwaway virtual environment that sees this
interpreter's packages, and every command runs in that environment, so entry points, the probe and the
profiles resolve exactly as on a user's machine.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a virtual environment and a pip install (about 5 s), then ~12 CLI runs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "toy_backend"
KEY = "toy_mega_moe:sm90_toy_bf16"
#: The select flags after the model (a deployment that cannot hold its weights is refused with exit 7).
SELECT_FLAGS = ("--device", "h200", "--dp", "8", "--ep", "8", "--json")


class Env:
    """A virtual environment with the toy backend installed; ``run`` executes its interpreter."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.python = root / "bin" / "python"

    def run(
        self, *args: str, code: int = 0, extra_path: Path | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        if extra_path is not None:
            env["PYTHONPATH"] = str(extra_path)
        p = subprocess.run(
            [str(self.python), *args], capture_output=True, text=True, env=env, cwd=cwd or self.root, timeout=300
        )
        assert p.returncode == code, f"{args}: rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        return p

    def cli(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "moe_oracle", *args, code=code)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Env:
    tmp = tmp_path_factory.mktemp("toy")
    src = tmp / "src"
    shutil.copytree(FIXTURE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    root = tmp / "venv"
    venv.EnvBuilder(with_pip=False, clear=True).create(root)
    env = Env(root)
    # The environment sees this interpreter's packages (moe-oracle, torch, pip, setuptools), as a
    # --system-site-packages venv would in CI, where they are installed system-wide.
    purelib = env.run("-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    parents = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in dict.fromkeys(parents))
    Path(purelib, "_moe_oracle_test_parent.pth").write_text(lines)
    env.run("-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", str(src))
    return env


@pytest.fixture(scope="module")
def glm5_20(toy: Env, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GLM-5's BF16 experts (1.5 TB) do not fit 8 H200s and the toy caps EP at 8: a 20-layer BF16 GLM-5 (a manual
    description) that fits."""
    doc = json.loads(toy.cli("model", "zai-org/GLM-5", "--json").stdout)
    main = doc["layer_groups"][0]
    main["layers"] = main["layers"][:20]
    doc["layer_groups"] = [main]
    model = tmp_path_factory.mktemp("glm5") / "glm5-20-layers.json"
    model.write_text(json.dumps(doc))
    return model


def test_list_backends_and_probe(toy: Env) -> None:
    rows = json.loads(toy.cli("list", "backends", "--json").stdout)
    keys = [f"{r['backend']}:{r['variant']}" for r in rows]
    assert KEY in keys and len(keys) == 11
    assert "failed to load" not in toy.cli("list", "backends").stderr
    probe = json.loads(toy.cli("probe", "--json").stdout)
    lib = probe["libraries"]["toy_kernels"]
    assert lib["present"] and lib["version"] == "1.2.0" and lib["entry_points"] == ["mega_moe"]
    assert lib["dist"] == "moe-oracle-toy-backend"


@pytest.mark.parametrize("software", ["installed", "all"])
def test_select_chooses_the_toy_where_its_library_is(toy: Env, glm5_20: Path, software: str) -> None:
    select = ("select", str(glm5_20), *SELECT_FLAGS)
    out = json.loads(toy.cli(*select, "--software", software).stdout)
    assert out["chosen"] == {"backend": "toy_mega_moe", "variant": "sm90_toy_bf16"}
    assert (
        out["chosen"]
        == json.loads(toy.cli(*select, "--software", software, "--moe-backend", "toy_mega_moe").stdout)["chosen"]
    )


def test_select_without_its_library_names_its_package(toy: Env, glm5_20: Path) -> None:
    text = toy.cli("select", str(glm5_20), *SELECT_FLAGS[:-1], "--software", "none", "--all-reasons").stdout
    assert "toy_kernels is not present in software profile 'none'" in " ".join(text.split())
    assert "Install moe-oracle-toy-backend" in " ".join(text.split())


def test_matrix_judges_the_toy(toy: Env) -> None:
    out = json.loads(
        toy.cli(
            "matrix",
            "--models",
            "zai-org/GLM-5",
            "--devices",
            "h200,b200",
            "--topologies",
            "dp8ep8",
            "--format",
            "json",
        ).stdout
    )
    cells = {(c["device"], c["key"]): c for c in out["cells"]}
    # supported, but GLM-5's BF16 weights (1.5 TB) do not fit 8 x H200, so nothing is the oracle's choice there
    assert cells[("h200", KEY)]["verdict"] == "supported" and not cells[("h200", KEY)]["chosen"]
    assert cells[("h200", KEY)]["memory_fit"] == "DOES NOT FIT"
    assert cells[("b200", KEY)]["verdict"] == "rejected" and cells[("b200", KEY)]["code"] == "ARCH_UNSUPPORTED"
    assert out["broken_entry_points"] == []


def test_plan_names_the_toy_and_serves_it_through_the_moe_oracle_route(toy: Env, glm5_20: Path) -> None:
    args = ("plan", str(glm5_20), "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm")
    text = toy.cli(*args).stdout  # the engine's default profile does not ship the toy library
    assert f"{KEY}: [KERNEL_MISSING] toy_kernels is not present in software profile" in text
    # the toy declares what vllm-0.33.0 ships of its library (an old build)
    text = toy.cli(*args, "--software", "vllm-0.33.0").stdout
    assert f"{KEY}: [LIBRARY_VERSION] toy_kernels 0.9 does not satisfy >=1.0" in text
    # with its library present, moe-oracle's runtime serves it inside vLLM
    text = toy.cli(*args, "--software", "all").stdout
    assert "Fused backend: toy_mega_moe (sm90_toy_bf16) for every MoE layer group." in text
    assert f'"backend":"{KEY}"' in text


TWIN = """
import torch
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters, scaled_group
from moe_oracle.model.resolve import resolve_model
from moe_oracle.runtime.quantize import BF16, quantize_experts

g = scaled_group(resolve_model("zai-org/GLM-5").main_group, 512 / 6144)
gen = torch.Generator().manual_seed(0)
ex = quantize_experts(*random_masters(g, gen), BF16)
x = torch.randn(16, g.hidden_size, generator=gen).bfloat16()
ids, w = route(g, torch.randn(16, g.num_experts, generator=gen), bias=torch.zeros(g.num_experts))
cfg = LayerConfig(group=g, max_tokens_per_rank=16, device="cpu")
twin = build_layer("emulation:sm90_toy_bf16", cfg, ex)
real = build_layer("toy_mega_moe:sm90_toy_bf16", cfg, ex)
ref = reference_moe(x, ids, w, ex, g.activation)
print(twin.key, calc_diff(twin(x, ids, w).float(), ref), calc_diff(real(x, ids, w).float(), twin(x, ids, w).float()))
"""


def test_build_layer_builds_its_twin_and_its_kernel(toy: Env) -> None:
    key, twin_vs_ref, real_vs_twin = toy.run("-c", TWIN).stdout.split()
    assert key == "emulation:sm90_toy_bf16"
    assert 0 < float(twin_vs_ref) < 2e-5  # the BF16 tolerance class of tests/conformance
    assert float(real_vs_twin) < 1e-5  # the toy kernel is the recipe the twin reproduces


def test_missing_layout_module_is_one_line_naming_its_package(toy: Env) -> None:
    code = (
        "import sys\n"
        "sys.modules['toy_moe_backend.sm90_bf16.weights'] = None\n"
        "from moe_oracle.runtime import LayerConfig, build_layer\n"
        "from moe_oracle.runtime.errors import BackendUnavailableError\n"
        "from moe_oracle.model.resolve import resolve_model\n"
        "cfg = LayerConfig(group=resolve_model('zai-org/GLM-5').main_group, max_tokens_per_rank=8, device='cpu')\n"
        "try:\n"
        "    build_layer('emulation:sm90_toy_bf16', cfg)\n"
        "except BackendUnavailableError as exc:\n"
        "    print(exc)\n"
    )
    msg = toy.run("-c", code).stdout.strip()
    assert "\n" not in msg and "toy_moe_backend.sm90_bf16.weights does not import" in msg
    assert msg.endswith("Fix: reinstall moe-oracle-toy-backend (pip install moe-oracle-toy-backend).")


def test_a_duplicate_key_names_both_packages(toy: Env, tmp_path: Path) -> None:
    """A second distribution registering the toy's package again: one line naming both, exit 1."""
    dist = tmp_path / "toy_again-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-again\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[moe_oracle.backends]\nagain = toy_moe_backend:package\n")
    p = toy.run("-m", "moe_oracle", "list", "backends", code=1, extra_path=tmp_path)
    err = p.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"variant key {KEY} is declared twice" in err
    assert "moe-oracle-toy-backend (toy = toy_moe_backend:package)" in err and "toy-again (again =" in err


def test_generated_docs_keep_to_moe_oracles_own_backends(toy: Env, tmp_path: Path) -> None:
    """The capability docs judge only moe-oracle's variants: an installed plug-in never makes them stale.

    (docs/cli.md runs real commands, which do see installed plug-ins.)"""
    toy.cli("matrix", "--docs", str(tmp_path))
    docs = FIXTURE.parents[2] / "docs"
    for name in ("capability-matrix.md", "capability-matrix.html", "variants.md", "reason-codes.md"):
        assert (tmp_path / name).read_text(encoding="utf-8") == (docs / name).read_text(encoding="utf-8"), name


def test_the_conformance_suite_covers_the_toy(toy: Env) -> None:
    """tests/conformance, run where the toy is installed: its declaration, layout round trip and twin pass."""
    root = FIXTURE.parents[2]
    p = toy.run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance", "-k", "toy_mega_moe", cwd=root)
    summary = p.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, p.stdout[-2000:]
    assert int(summary.split(" passed")[0].split()[-1]) >= 10, summary  # every conformance test ran for it
